/* tests/integration/rados/rados_obj_test.c - cluster/rados_obj against a real Ceph cluster
 * (started by rados-obj.sh; CEPH_CONF names it). Each "daemon" is a thread with its own event loop
 * and its own RADOS client, as separate hosts would be.
 *  1. No lost update: daemons increment one counter object at once by read, compare-and-swap
 *     write, retry on -ECANCELED, notify; the final count is exact, conflicts happened, every
 *     daemon heard the others' notifies and every notify was acknowledged by every watcher.
 *  2. A daemon that stops acknowledging is named by the writer's notify (timeout, its global id);
 *     the writer fences it (blocklists its client address): its watch is lost with -EBLOCKLISTED
 *     and its compare-and-swap write fails; the others go on.
 *  3. A close with operations in flight frees the object once librados is done, without calling
 *     their callbacks.
 * Ends with "N passed, N failed". */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/rados_obj.h"
#include "common/evloop.h"

#define POOL "rbd"
#define NDAEMONS 4
#define INCREMENTS 25

static int passed, failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

/* A daemon: one loop thread, one RADOS client, one open object. */
struct daemon {
	int id;
	const char *oid;
	struct evloop *loop;
	pthread_t thread;
	rados_t cluster;
	rados_ioctx_t io;
	struct rados_obj *obj;
	int open_rc;
	bool opened;
	/* The increments. */
	int todo, done_incs, conflicts, errors;
	uint64_t version;
	int notify_errors;
	uint32_t min_acks; /* the fewest acknowledgements a notify of this daemon got */
	/* What the watch brought. */
	int changed, others_changed, lost, lost_err;
	bool silent; /* stops acknowledging (a hung daemon) */
	/* Step 2. */
	int fenced_write_rc;
	bool fenced_write_done;
	int closed;
};

static uint64_t gid_of(struct daemon *d)
{
	return rados_get_instance_id(d->cluster);
}

static void d_changed(void *arg, uint64_t notify_id, uint64_t notifier_gid)
{
	struct daemon *d = arg;

	__atomic_add_fetch(&d->changed, 1, __ATOMIC_RELAXED);
	if (notifier_gid != gid_of(d))
		__atomic_add_fetch(&d->others_changed, 1, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&d->silent, __ATOMIC_ACQUIRE))
		rados_obj_ack(d->obj, notify_id);
}

static void d_lost(void *arg, int err)
{
	struct daemon *d = arg;

	__atomic_store_n(&d->lost_err, err, __ATOMIC_RELAXED);
	__atomic_add_fetch(&d->lost, 1, __ATOMIC_RELEASE);
}

static void d_rewatched(void *arg)
{
	(void)arg;
}

static const struct rados_obj_ops d_ops = {
	.changed = d_changed, .watch_lost = d_lost, .rewatched = d_rewatched};

static void d_opened(void *arg, struct rados_obj *o, int rc)
{
	struct daemon *d = arg;

	d->obj = o;
	d->open_rc = rc;
	__atomic_store_n(&d->opened, true, __ATOMIC_RELEASE);
}

static void *d_main(void *arg)
{
	struct daemon *d = arg;

	evloop_run(d->loop);
	return NULL;
}

static int d_start(struct daemon *d, int id, const char *oid)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->id = id;
	d->oid = oid;
	d->min_acks = UINT32_MAX;
	d->loop = evloop_create();
	if (!d->loop)
		return -ENOMEM;
	rc = rados_create(&d->cluster, NULL);
	if (rc < 0)
		return rc;
	rc = rados_conf_read_file(d->cluster, NULL);
	if (rc == 0)
		rc = rados_conf_set(d->cluster, "rados_osd_op_timeout", "30");
	if (rc == 0)
		rc = rados_connect(d->cluster);
	if (rc == 0)
		rc = rados_ioctx_create(d->cluster, POOL, &d->io);
	if (rc < 0)
		return rc;
	return pthread_create(&d->thread, NULL, d_main, d) ? -EAGAIN : 0;
}

/* Runs fn(d) on d's loop. */
static void on_loop(struct daemon *d, void (*fn)(void *), void *arg)
{
	while (evloop_send_msg(d->loop, fn, arg))
		usleep(1000);
}

static void d_open_msg(void *arg)
{
	struct daemon *d = arg;
	int rc = rados_obj_open(d->loop, d->cluster, d->io, d->oid, 30, &d_ops, d, d_opened, d);

	if (rc)
		d_opened(d, NULL, rc);
}

/* Polls flag for up to ms milliseconds (the test's own threads may wait; the loops never do). */
static bool wait_flag(const int *counter, int want, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want)
			return true;
		usleep(1000);
	}
	return __atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want;
}

static bool wait_bool(const bool *b, int ms)
{
	for (int i = 0; i < ms; i++) {
		if (__atomic_load_n(b, __ATOMIC_ACQUIRE))
			return true;
		usleep(1000);
	}
	return false;
}

/* ---- the increments: read, +1, compare-and-swap, notify ---- */

static void inc_next(struct daemon *d);

static void inc_notified(void *arg, int rc, const struct rados_obj_notify_result *res)
{
	struct daemon *d = arg;

	if (rc)
		d->notify_errors++;
	if (res->nacks < d->min_acks)
		d->min_acks = res->nacks;
	d->done_incs++;
	inc_next(d);
}

static void inc_written(void *arg, int rc, uint64_t version)
{
	struct daemon *d = arg;

	if (rc == -ECANCELED) {
		d->conflicts++;
		return inc_next(d); /* somebody came first: read again */
	}
	if (rc) {
		d->errors++;
		__atomic_store_n(&d->todo, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&d->done_incs, 1000, __ATOMIC_RELEASE);
		return;
	}
	d->version = version;
	if (rados_obj_notify(d->obj, 10000, inc_notified, d)) {
		d->notify_errors++;
		d->done_incs++;
		inc_next(d);
	}
}

static void inc_read(void *arg, int rc, const void *data, size_t len, uint64_t version)
{
	struct daemon *d = arg;
	char text[32];
	long n = 0;

	if (rc) {
		d->errors++;
		__atomic_add_fetch(&d->done_incs, 1000, __ATOMIC_RELEASE);
		return;
	}
	if (len) {
		if (len >= sizeof(text)) {
			d->errors++;
			__atomic_add_fetch(&d->done_incs, 1000, __ATOMIC_RELEASE);
			return;
		}
		memcpy(text, data, len);
		text[len] = 0;
		n = strtol(text, NULL, 10);
	}
	snprintf(text, sizeof(text), "%ld", n + 1);
	if (rados_obj_write(d->obj, version, text, strlen(text), inc_written, d)) {
		d->errors++;
		__atomic_add_fetch(&d->done_incs, 1000, __ATOMIC_RELEASE);
	}
}

static void inc_next(struct daemon *d)
{
	if (d->done_incs >= d->todo) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return;
	}
	if (rados_obj_read(d->obj, inc_read, d)) {
		d->errors++;
		__atomic_add_fetch(&d->done_incs, 1000, __ATOMIC_RELEASE);
	}
}

static void inc_start(void *arg)
{
	inc_next(arg);
}

/* ---- reading the final value from the test thread (through a daemon's loop) ---- */

struct final_read {
	long value;
	int rc;
	int done;
};

static void final_cb(void *arg, int rc, const void *data, size_t len, uint64_t version)
{
	struct final_read *f = arg;
	char text[32] = "";

	(void)version;
	f->rc = rc;
	if (!rc && len < sizeof(text)) {
		memcpy(text, data, len);
		f->value = strtol(text, NULL, 10);
	}
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
}

static struct final_read final_req;
static struct daemon *final_d;

static void final_msg(void *arg)
{
	(void)arg;
	if (rados_obj_read(final_d->obj, final_cb, &final_req))
		final_cb(&final_req, -EIO, NULL, 0, 0);
}

static long read_value(struct daemon *d, int *rc)
{
	memset(&final_req, 0, sizeof(final_req));
	final_d = d;
	on_loop(d, final_msg, NULL);
	if (!wait_flag(&final_req.done, 1, 30000)) {
		*rc = -ETIMEDOUT;
		return -1;
	}
	*rc = final_req.rc;
	return final_req.value;
}

/* ---- step 2: a silent daemon, named by the notify, then fenced ---- */

struct notify_probe {
	struct daemon *d;
	int rc;
	struct rados_obj_notify_result res;
	int done;
};

static void probe_cb(void *arg, int rc, const struct rados_obj_notify_result *res)
{
	struct notify_probe *p = arg;

	p->rc = rc;
	p->res = *res;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
}

static void probe_msg(void *arg)
{
	struct notify_probe *p = arg;

	if (rados_obj_notify(p->d->obj, 3000, probe_cb, p)) {
		struct rados_obj_notify_result none = {0};

		probe_cb(p, -EIO, &none);
	}
}

static void fenced_written(void *arg, int rc, uint64_t version)
{
	struct daemon *d = arg;

	(void)version;
	d->fenced_write_rc = rc;
	__atomic_store_n(&d->fenced_write_done, true, __ATOMIC_RELEASE);
}

static void fenced_write_msg(void *arg)
{
	struct daemon *d = arg;
	int rc = rados_obj_write(d->obj, d->version ? d->version : 1, "x", 1, fenced_written, d);

	if (rc)
		fenced_written(d, rc, 0);
}

/* ---- closing ---- */

static void d_closed(void *arg)
{
	struct daemon *d = arg;

	__atomic_store_n(&d->closed, 1, __ATOMIC_RELEASE);
	evloop_stop(d->loop);
}

static void never_read(void *arg, int rc, const void *data, size_t len, uint64_t version)
{
	(void)rc;
	(void)data;
	(void)len;
	(void)version;
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

static int late_callbacks;

/* Close with reads still in flight (step 3 for one daemon, a plain close for the others). */
static void close_msg(void *arg)
{
	struct daemon *d = arg;

	if (d->id == 0)
		for (int i = 0; i < 8; i++)
			rados_obj_read(d->obj, never_read, &late_callbacks);
	rados_obj_close(d->obj, d_closed, d);
}

static void d_stop(struct daemon *d)
{
	if (d->obj) {
		on_loop(d, close_msg, d);
		check(wait_flag(&d->closed, 1, 30000), "the daemon's object closes");
	} else {
		evloop_stop(d->loop);
	}
	pthread_join(d->thread, NULL);
	rados_ioctx_destroy(d->io);
	rados_shutdown(d->cluster);
	evloop_destroy(d->loop);
}

int main(void)
{
	static struct daemon ds[NDAEMONS];
	char oid[64], what[160];
	int rc;

	if (!getenv("CEPH_CONF")) {
		fprintf(stderr, "rados_obj_test: CEPH_CONF is not set (run rados-obj.sh)\n");
		return 2;
	}
	snprintf(oid, sizeof(oid), "rados_obj_test.%d", (int)getpid());
	for (int i = 0; i < NDAEMONS; i++) {
		rc = d_start(&ds[i], i, oid);
		snprintf(what, sizeof(what), "daemon %d connects its own RADOS client (%d)", i, rc);
		check(rc == 0, what);
		if (rc)
			return 1;
	}
	for (int i = 0; i < NDAEMONS; i++) {
		on_loop(&ds[i], d_open_msg, &ds[i]);
		check(wait_bool(&ds[i].opened, 30000) && ds[i].open_rc == 0 && ds[i].obj,
		      "each daemon opens and watches the object");
	}

	/* 1. Increments from every daemon at once. */
	for (int i = 0; i < NDAEMONS; i++)
		ds[i].todo = INCREMENTS;
	for (int i = 0; i < NDAEMONS; i++)
		on_loop(&ds[i], inc_start, &ds[i]);
	bool all_done = true;
	int conflicts = 0, errors = 0, nerr = 0;
	uint32_t min_acks = UINT32_MAX;

	for (int i = 0; i < NDAEMONS; i++)
		all_done &= wait_flag(&ds[i].done_incs, INCREMENTS, 120000);
	for (int i = 0; i < NDAEMONS; i++) {
		conflicts += ds[i].conflicts;
		errors += ds[i].errors;
		nerr += ds[i].notify_errors;
		if (ds[i].min_acks < min_acks)
			min_acks = ds[i].min_acks;
	}
	check(all_done && !errors, "every daemon made its increments without an error");
	long v = read_value(&ds[0], &rc);
	snprintf(what, sizeof(what), "no lost update: the counter is %d x %d = %ld (%d conflicts retried)",
		 NDAEMONS, INCREMENTS, v, conflicts);
	check(rc == 0 && v == NDAEMONS * INCREMENTS, what);
	check(conflicts > 0, "the daemons did collide (compare-and-swap was exercised)");
	snprintf(what, sizeof(what), "every notify acknowledged by all %d watchers (fewest %u, %d errors)",
		 NDAEMONS, min_acks, nerr);
	check(nerr == 0 && min_acks == NDAEMONS, what);
	bool heard = true;

	for (int i = 0; i < NDAEMONS; i++)
		heard &= wait_flag(&ds[i].others_changed, (NDAEMONS - 1) * INCREMENTS, 10000);
	check(heard, "every daemon heard every other daemon's change");

	/* 2. Daemon 3 stops acknowledging; daemon 0's notify names it, then fences it. */
	struct daemon *hung = &ds[NDAEMONS - 1];
	static struct notify_probe probe;

	__atomic_store_n(&hung->silent, true, __ATOMIC_RELEASE);
	probe.d = &ds[0];
	on_loop(&ds[0], probe_msg, &probe);
	check(wait_flag(&probe.done, 1, 30000), "the notify with a silent watcher ends");
	snprintf(what, sizeof(what),
		 "it times out naming the silent daemon: rc %d, %u acks, %u timeouts, gid %llu (want %llu)",
		 probe.rc, probe.res.nacks, probe.res.ntimeouts,
		 (unsigned long long)probe.res.timeout_gid[0], (unsigned long long)gid_of(hung));
	check(probe.rc == -ETIMEDOUT && probe.res.nacks == NDAEMONS - 1 && probe.res.ntimeouts == 1 &&
		  probe.res.timeout_gid[0] == gid_of(hung),
	      what);
	char *addrs = NULL;

	rc = rados_getaddrs(hung->cluster, &addrs);
	check(rc == 0 && addrs, "the silent daemon's client address");
	/* The fence: what a preempting host does to a daemon that does not answer. */
	if (addrs) {
		rc = rados_blocklist_add(ds[0].cluster, addrs, 600);
		snprintf(what, sizeof(what), "daemon 0 blocklists %s (%d)", addrs, rc);
		check(rc == 0, what);
		rados_buffer_free(addrs);
	}
	/* The session breaks first (-ENOTCONN); the new watch is refused as blocklisted. */
	bool fenced = false;

	for (int i = 0; i < 600 && !fenced; i++) {
		fenced = __atomic_load_n(&hung->lost_err, __ATOMIC_ACQUIRE) == -ESHUTDOWN;
		if (!fenced)
			usleep(100000);
	}
	check(fenced, "the fenced daemon's watch is lost, finally with -EBLOCKLISTED");
	on_loop(hung, fenced_write_msg, hung);
	check(wait_bool(&hung->fenced_write_done, 60000) && hung->fenced_write_rc == -ESHUTDOWN,
	      "the fenced daemon's write fails with -EBLOCKLISTED: nothing of it lands");
	memset(&probe, 0, sizeof(probe));
	probe.d = &ds[1];
	on_loop(&ds[1], probe_msg, &probe);
	check(wait_flag(&probe.done, 1, 30000) && probe.rc == 0 &&
		  probe.res.nacks == NDAEMONS - 1,
	      "the others go on: a notify is acknowledged by the three left");

	/* 3. Close (daemon 0 with reads in flight). */
	for (int i = 0; i < NDAEMONS; i++)
		d_stop(&ds[i]);
	check(__atomic_load_n(&late_callbacks, __ATOMIC_RELAXED) == 0,
	      "a close with reads in flight calls none of their callbacks");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
