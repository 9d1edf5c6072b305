/* app/app_shared_resv.c - a namespace on an RBD image whose reservations every daemon exporting
 * the image shares (nvmf_subsystem_add_ns "shared_reservations"): the controller's reservation
 * store (ctrlr.h, struct ctrlr_resv_store_ops) bound to one RADOS object beside the image,
 * "nvme-emu.resv.<image id>" in the image's pool, reached through the bdev's own RADOS client, so
 * that a fence of this daemon (Ceph's blocklist of that client) stops its data writes too.
 *
 * Publishing a change is a notify that waits for every other daemon's acknowledgement (sent once
 * it applied the change). A daemon that does not answer within the timeout is fenced: each daemon
 * writes its client address into the object's directory when it opens it, and the publisher
 * blocklists the address of every daemon the notify names. Only then does the command complete,
 * so no write of the fenced daemon lands after the host that preempted it was told it won.
 * A read that fails for a reason that may pass (an OSD timing out or restarting) is tried again
 * a few times within the acknowledgement window, so a daemon is not fenced for one lost read.
 * Main (admin) thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_internal.h"
#include "backend/bdev.h"
#include "cluster/rados_obj.h"
#include "common/log.h"

#define APP_SR_LOG "cluster"
/* How long the OSD keeps the watch of a daemon it lost, and how long a change waits for the
 * other daemons' acknowledgements before it fences the silent ones. */
#define APP_SR_WATCH_TIMEOUT_S 30
#define APP_SR_NOTIFY_TIMEOUT_MS 5000
/* A fence lasts this long: longer than any daemon takes to be restarted by an operator. */
#define APP_SR_BLOCKLIST_S 3600
/* A failed read is tried again after 100, 200, 400 and 800 ms: 1.5 s in all, well inside the
 * notify timeout the other daemons wait for this one's acknowledgement. */
#define APP_SR_READ_RETRIES 4
#define APP_SR_READ_RETRY_US 100000

struct app_sr {
	struct ctrlr_ns_shared *shared; /* NULL once released */
	struct evloop *loop;
	rados_t cluster;
	rados_ioctx_t io;
	struct rados_obj *obj; /* NULL until open */
	char oid[160];
	bool opening;
	/* A publish: its callback, the fences still running. */
	void (*publish_cb)(void *arg, int rc);
	void *publish_arg;
	uint32_t fences;
	int fence_rc;
	struct app_sr_op *ops; /* in flight: freed here if the object closes before they end */
	uint32_t fail_reads;   /* test fault: so many reads fail with -EIO before reaching RADOS */
	uint64_t read_retries; /* reads tried again after a failure (counted for the log) */
};

/* An operation of the store: the controller's callback, dropped once the store is released. */
struct app_sr_op {
	struct app_sr *sr;
	void (*read_cb)(void *arg, int rc, const void *data, size_t len, uint64_t version);
	void (*write_cb)(void *arg, int rc, uint64_t version);
	void *arg;
	struct evloop_timer *retry; /* a read waiting to be tried again */
	struct evloop_timer *fault; /* a read failing by the test fault */
	uint32_t tries;
	struct app_sr_op *prev, *next;
};

static struct app_sr_op *app_sr_op_new(struct app_sr *sr)
{
	struct app_sr_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->sr = sr;
	op->next = sr->ops;
	if (sr->ops)
		sr->ops->prev = op;
	sr->ops = op;
	return op;
}

static void app_sr_op_free(struct app_sr_op *op)
{
	if (op->retry)
		evloop_timer_cancel(op->retry);
	if (op->fault)
		evloop_timer_cancel(op->fault);
	if (op->prev)
		op->prev->next = op->next;
	else
		op->sr->ops = op->next;
	if (op->next)
		op->next->prev = op->prev;
	free(op);
}

/* The object is closed: rados_obj calls none of the callbacks still pending. */
static void app_sr_closed(void *arg)
{
	struct app_sr *sr = arg;

	while (sr->ops)
		app_sr_op_free(sr->ops);
	free(sr);
}

/* ---- the store ops ---- */

/* Failures a later read may not meet: the OSD or the monitor timed out, the session broke. A
 * fenced client (-EBLOCKLISTED), a missing or oversized object are final. */
static bool app_sr_read_may_pass(int rc)
{
	return rc == -ETIMEDOUT || rc == -EIO || rc == -EAGAIN || rc == -ENOTCONN ||
	       rc == -ECONNRESET || rc == -ESHUTDOWN;
}

static void app_sr_read_done(void *arg, int rc, const void *data, size_t len, uint64_t version);

static void app_sr_read_faulted(void *arg)
{
	struct app_sr_op *op = arg;

	op->fault = NULL;
	app_sr_read_done(op, -EIO, NULL, 0, 0);
}

/* Sends op's read to RADOS (or fails it, while the test fault lasts). */
static int app_sr_read_issue(struct app_sr_op *op)
{
	struct app_sr *sr = op->sr;

	if (sr->fail_reads) {
		op->fault = evloop_timer_add(sr->loop, 0, app_sr_read_faulted, op);
		if (!op->fault)
			return -ENOMEM;
		sr->fail_reads--;
		return 0;
	}
	return rados_obj_read(sr->obj, app_sr_read_done, op);
}

static void app_sr_read_retry(void *arg)
{
	struct app_sr_op *op = arg;
	int rc;

	op->retry = NULL;
	if (!op->sr->shared)
		return; /* released: the close frees op */
	rc = app_sr_read_issue(op);
	if (rc)
		app_sr_read_done(op, rc, NULL, 0, 0);
}

static void app_sr_read_done(void *arg, int rc, const void *data, size_t len, uint64_t version)
{
	struct app_sr_op *op = arg;
	struct app_sr *sr = op->sr;

	if (rc && sr->shared && app_sr_read_may_pass(rc) && op->tries < APP_SR_READ_RETRIES) {
		uint64_t us = (uint64_t)APP_SR_READ_RETRY_US << op->tries;

		op->retry = evloop_timer_add(sr->loop, us, app_sr_read_retry, op);
		if (op->retry) {
			op->tries++;
			sr->read_retries++;
			LOG_WARN(APP_SR_LOG, "%s: read failed (%s): try %u of %u in %" PRIu64 " ms "
				 "(%" PRIu64 " retries so far)", sr->oid, strerror(-rc), op->tries + 1,
				 APP_SR_READ_RETRIES + 1, us / 1000, sr->read_retries);
			return;
		}
		LOG_ERR(APP_SR_LOG, "%s: no memory to read again", sr->oid);
	}
	if (sr->shared)
		op->read_cb(op->arg, rc, data, len, version);
	app_sr_op_free(op);
}

static int app_sr_read(void *ctx, void (*cb)(void *arg, int rc, const void *data, size_t len,
					     uint64_t version),
		       void *arg)
{
	struct app_sr *sr = ctx;
	struct app_sr_op *op;
	int rc;

	if (!sr->obj)
		return -EAGAIN; /* not open yet: the record is read once it is */
	op = app_sr_op_new(sr);
	if (!op)
		return -ENOMEM;
	op->read_cb = cb;
	op->arg = arg;
	rc = app_sr_read_issue(op);
	if (rc)
		app_sr_op_free(op);
	return rc;
}

static void app_sr_write_done(void *arg, int rc, uint64_t version)
{
	struct app_sr_op *op = arg;

	if (op->sr->shared)
		op->write_cb(op->arg, rc, version);
	app_sr_op_free(op);
}

static int app_sr_write(void *ctx, uint64_t version, const void *data, size_t len,
			void (*cb)(void *arg, int rc, uint64_t version), void *arg)
{
	struct app_sr *sr = ctx;
	struct app_sr_op *op;
	int rc;

	if (!sr->obj)
		return -EAGAIN;
	op = app_sr_op_new(sr);
	if (!op)
		return -ENOMEM;
	op->write_cb = cb;
	op->arg = arg;
	rc = rados_obj_write(sr->obj, version, data, len, app_sr_write_done, op);
	if (rc)
		app_sr_op_free(op);
	return rc;
}

static void app_sr_publish_end(struct app_sr *sr, int rc)
{
	void (*cb)(void *arg, int rc) = sr->publish_cb;

	sr->publish_cb = NULL;
	if (sr->shared && cb)
		cb(sr->publish_arg, rc);
}

static void app_sr_fenced(void *arg, int rc)
{
	struct app_sr *sr = arg;

	if (rc && !sr->fence_rc)
		sr->fence_rc = rc;
	if (--sr->fences)
		return;
	if (!sr->shared) /* released meanwhile: the close waited for the fences */
		return rados_obj_close(sr->obj, app_sr_closed, sr);
	app_sr_publish_end(sr, sr->fence_rc);
}

/* The silent daemon's address, from the directory: fence it. */
static void app_sr_fence_addr(void *arg, int rc, const char *addr)
{
	struct app_sr *sr = arg;

	if (!sr->shared)
		return app_sr_fenced(sr, -ESHUTDOWN); /* the namespace is gone */
	if (!rc) {
		LOG_ERR(APP_SR_LOG, "%s: a daemon (%s) did not take the change in %u ms: fencing it",
			sr->oid, addr, APP_SR_NOTIFY_TIMEOUT_MS);
		rc = rados_obj_blocklist(sr->obj, addr, APP_SR_BLOCKLIST_S, app_sr_fenced, sr);
		if (!rc)
			return;
	}
	LOG_ERR(APP_SR_LOG, "%s: cannot fence a silent daemon: %s", sr->oid,
		rc == -ENOENT ? "it never wrote its address" : strerror(-rc));
	app_sr_fenced(sr, rc ? rc : -ESHUTDOWN);
}

static void app_sr_notified(void *arg, int rc, const struct rados_obj_notify_result *res)
{
	struct app_sr *sr = arg;

	if (rc != -ETIMEDOUT || !sr->shared)
		return app_sr_publish_end(sr, rc);
	/* Every daemon that did not answer is fenced before the change counts as taken. */
	sr->fences = 1;
	sr->fence_rc = res->ntimeouts > RADOS_OBJ_MAX_TIMEOUTS ? -E2BIG : 0;
	for (uint32_t i = 0; i < res->ntimeouts && i < RADOS_OBJ_MAX_TIMEOUTS; i++) {
		char key[40];

		snprintf(key, sizeof(key), "client.%" PRIu64, res->timeout_gid[i]);
		sr->fences++;
		rc = rados_obj_dir_get(sr->obj, key, app_sr_fence_addr, sr);
		if (rc)
			app_sr_fenced(sr, rc);
	}
	app_sr_fenced(sr, 0);
}

static int app_sr_publish(void *ctx, void (*cb)(void *arg, int rc), void *arg)
{
	struct app_sr *sr = ctx;
	int rc;

	if (!sr->obj)
		return -EAGAIN;
	if (sr->publish_cb)
		return -EBUSY; /* the controller runs one change at a time */
	sr->publish_cb = cb;
	sr->publish_arg = arg;
	rc = rados_obj_notify(sr->obj, APP_SR_NOTIFY_TIMEOUT_MS, app_sr_notified, sr);
	if (rc)
		sr->publish_cb = NULL;
	return rc;
}

static void app_sr_ack(void *ctx, uint64_t token)
{
	struct app_sr *sr = ctx;

	if (sr->obj && token)
		rados_obj_ack(sr->obj, token);
}

static void app_sr_release(void *ctx)
{
	struct app_sr *sr = ctx;

	sr->shared = NULL;
	if (sr->fences)
		return; /* a fence's thread still reports here: the last one closes */
	if (sr->obj)
		rados_obj_close(sr->obj, app_sr_closed, sr);
	else if (!sr->opening)
		free(sr);
	/* else: freed when the open ends */
}

static const struct ctrlr_resv_store_ops app_sr_store_ops = {
    .read = app_sr_read,
    .write = app_sr_write,
    .publish = app_sr_publish,
    .ack = app_sr_ack,
    .release = app_sr_release,
};

/* ---- the watch ---- */

static void app_sr_changed(void *arg, uint64_t notify_id, uint64_t notifier_gid)
{
	struct app_sr *sr = arg;

	if (!sr->shared)
		return;
	/* This daemon's own change is in effect here before it is published. */
	if (notifier_gid == rados_obj_gid(sr->obj)) {
		rados_obj_ack(sr->obj, notify_id);
		return;
	}
	ctrlr_resv_store_changed(sr->shared, notify_id);
}

static void app_sr_watch_lost(void *arg, int err)
{
	struct app_sr *sr = arg;

	if (sr->shared)
		ctrlr_resv_store_stale(sr->shared);
}

static void app_sr_rewatched(void *arg)
{
	struct app_sr *sr = arg;

	if (sr->shared)
		ctrlr_resv_store_changed(sr->shared, 0);
}

static const struct rados_obj_ops app_sr_obj_ops = {
    .changed = app_sr_changed, .watch_lost = app_sr_watch_lost, .rewatched = app_sr_rewatched};

static void app_sr_dir_written(void *arg, int rc, uint64_t version)
{
	struct app_sr *sr = arg;

	(void)version;
	if (rc && sr->shared)
		LOG_ERR(APP_SR_LOG, "%s: cannot write this daemon's address: it cannot be fenced: %s",
			sr->oid, strerror(-rc));
}

static void app_sr_opened(void *arg, struct rados_obj *o, int rc)
{
	struct app_sr *sr = arg;
	char key[40], *addrs = NULL;

	sr->opening = false;
	if (!sr->shared) { /* released while opening */
		if (o)
			rados_obj_close(o, app_sr_closed, sr);
		else
			free(sr);
		return;
	}
	if (rc) {
		/* The namespace stays stale: writes refused, reservation commands fail. */
		LOG_ERR(APP_SR_LOG, "%s: cannot open the shared reservation record: %s", sr->oid,
			strerror(-rc));
		return;
	}
	sr->obj = o;
	/* The directory entry other daemons fence this one by. rados_getaddrs reads the
	 * client's own messenger address: no round trip. */
	snprintf(key, sizeof(key), "client.%" PRIu64, rados_obj_gid(o));
	rc = rados_getaddrs(sr->cluster, &addrs);
	if (!rc && addrs) {
		rc = rados_obj_dir_set(o, key, addrs, app_sr_dir_written, sr);
		rados_buffer_free(addrs);
	}
	if (rc)
		app_sr_dir_written(sr, rc ? rc : -EINVAL, 0);
	LOG_INFO(APP_SR_LOG, "%s: reservations shared through RADOS (client %" PRIu64 ")", sr->oid,
		 rados_obj_gid(o));
	ctrlr_resv_store_changed(sr->shared, 0);
}

uint64_t app_fnv1a64(const char *text, uint64_t basis)
{
	uint64_t h = basis;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Every daemon must report the same identifiers for the namespace (a host's multipath and its
 * reservations key on them): those not given are derived from the pool and the image id, never
 * random. The UUID is of version 8 (RFC 9562: vendor-specific content), the NGUID the same 16
 * bytes, the EUI-64 the first 8. */
static void app_sr_derive_ids(struct app_ns *ns, int64_t pool_id, const char *image_id)
{
	char name[160];
	uint8_t b[16];
	uint64_t h0, h1;

	snprintf(name, sizeof(name), "nvme-emu:%" PRId64 ":%s", pool_id, image_id);
	h0 = app_fnv1a64(name, 0xcbf29ce484222325ull);
	h1 = app_fnv1a64(name, h0 ^ 0x9e3779b97f4a7c15ull);
	for (int i = 0; i < 8; i++) {
		b[i] = (uint8_t)(h0 >> (56 - 8 * i));
		b[8 + i] = (uint8_t)(h1 >> (56 - 8 * i));
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x80); /* version 8 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10 */
	if (!ns->has_uuid) {
		memcpy(ns->uuid, b, 16);
		ns->has_uuid = true;
	}
	if (!ns->has_nguid) {
		memcpy(ns->nguid, b, 16);
		ns->has_nguid = true;
	}
	if (!ns->has_eui64) {
		memcpy(ns->eui64, b, 8);
		ns->has_eui64 = true;
	}
}

int app_ns_share_resv(struct app_target *t, struct app_ns *ns, char *err)
{
	struct bdev *b = bdev_lookup(ns->bdev_name);
	struct app_sr *sr;
	char id[96];
	void *cluster, *io;
	int rc;

	if (!b) {
		snprintf(err, APP_ERR_LEN, "bdev %s not found", ns->bdev_name);
		return -ENODEV;
	}
	rc = bdev_rbd_rados(b, &cluster, &io, id, sizeof(id));
	if (rc) {
		snprintf(err, APP_ERR_LEN, "shared_reservations: bdev %s %s", ns->bdev_name,
			 rc == -ENOTSUP ? "is not an RBD bdev (bdev_rbd_create)" : strerror(-rc));
		return rc;
	}
	app_sr_derive_ids(ns, rados_ioctx_get_id(io), id);
	sr = calloc(1, sizeof(*sr));
	if (!sr) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	*sr = (struct app_sr){.shared = ns->shared, .loop = t->loop, .cluster = cluster, .io = io};
	snprintf(sr->oid, sizeof(sr->oid), "nvme-emu.resv.%s", id);
	sr->opening = true;
	rc = rados_obj_open(t->loop, cluster, io, sr->oid, APP_SR_WATCH_TIMEOUT_S, &app_sr_obj_ops,
			    sr, app_sr_opened, sr);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "shared_reservations: %s: %s", sr->oid, strerror(-rc));
		free(sr);
		return rc;
	}
	/* Stale (writes refused) until the record is read; the store is released with the
	 * namespace. */
	ctrlr_ns_shared_set_resv_store(ns->shared, &app_sr_store_ops, sr);
	ns->resv_store = sr;
	return 0;
}

int app_ns_shared_resv_lose_watch(struct app_ns *ns, uint32_t hold_ms)
{
	struct app_sr *sr = ns->resv_store;

	if (!sr || !sr->obj || !sr->shared)
		return -ENOENT;
	rados_obj_inject_watch_error(sr->obj, -ENOTCONN, hold_ms);
	return 0;
}

int app_ns_shared_resv_fail_reads(struct app_ns *ns, uint32_t count)
{
	struct app_sr *sr = ns->resv_store;

	if (!sr || !sr->obj || !sr->shared)
		return -ENOENT;
	sr->fail_reads = count;
	return 0;
}
