/* app/app_cluster_cntlid.c - controller IDs of a subsystem that spans hosts, allocated through the
 * Ceph cluster: a subsystem with a namespace of shared_reservations is one NVM subsystem exported
 * by several daemons, and a host that reaches it through two of them (multipath) refuses two
 * controllers with one CNTLID. So each daemon claims its listeners' CNTLIDs in one RADOS object
 * beside the image, "nvme-emu.cntlid.<FNV-1a 64 of the NQN, hex>" in the pool of the subsystem's
 * first shared namespace, reached through that RBD bdev's client.
 *
 * The object is a table of text lines "CNTLID OWNER", OWNER naming a listener the same way across
 * restarts ("<hostname>:<traddr as given>", or the socket path of a function given by VUID), so a daemon started again takes back the CNTLIDs it
 * had. A claim reads the table with its version, keeps the owner's CNTLID when it has one in the
 * subsystem's range, else takes the lowest one nobody holds, and writes the table back only if its
 * version is unchanged (compare-and-swap in the OSD); when another daemon wrote first, it reads
 * again. nvmf_subsystem_remove_listener releases the CNTLID the same way; stopping the daemon or
 * deleting the subsystem keeps it (a restart takes it back).
 * Main thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app_internal.h"
#include "backend/bdev.h"
#include "cluster/rados_obj.h"
#include "common/log.h"

#define APP_CC_LOG "cluster"
/* Compare-and-swap rounds lost to other daemons before a claim gives up: each loser rereads, so
 * with N daemons claiming at once the last one needs N rounds. */
#define APP_CC_MAX_TRIES 64
#define APP_CC_WATCH_TIMEOUT_S 30

struct app_cc {
	struct app_target *t;
	struct app_subsys *s;
	struct rados_obj *o;
	char oid[64];
	char owner[300];
	bool release;
	uint16_t cntlid; /* claimed, or to release */
	unsigned int tries;
	app_cc_done_fn done;
	void *arg;
};

/* The table as read: entries point into a private copy of the object's text. */
struct app_cc_entry {
	uint16_t cntlid;
	const char *owner;
};

struct app_cc_table {
	char *text;
	struct app_cc_entry *e;
	uint32_t n;
};

static void app_cc_table_free(struct app_cc_table *tb)
{
	free(tb->text);
	free(tb->e);
}

/* Parses "CNTLID OWNER\n" lines; -EBADMSG for anything else (the object is not ours to guess). */
static int app_cc_table_parse(const void *data, size_t len, struct app_cc_table *tb)
{
	char *line, *save = NULL;
	uint32_t cap = 0;

	*tb = (struct app_cc_table){0};
	tb->text = malloc(len + 1);
	if (!tb->text)
		return -ENOMEM;
	memcpy(tb->text, data, len);
	tb->text[len] = '\0';
	if (strlen(tb->text) != len)
		return -EBADMSG;
	for (line = strtok_r(tb->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' '), *end;
		unsigned long id = strtoul(line, &end, 10);

		if (!sp || end != sp || !id || id > APP_MAX_CNTLID || !sp[1])
			return -EBADMSG;
		if (tb->n == cap) {
			struct app_cc_entry *e;

			cap = cap ? 2 * cap : 16;
			e = realloc(tb->e, cap * sizeof(*e));
			if (!e)
				return -ENOMEM;
			tb->e = e;
		}
		tb->e[tb->n++] = (struct app_cc_entry){.cntlid = (uint16_t)id, .owner = sp + 1};
	}
	return 0;
}

static const struct app_cc_entry *app_cc_holder(const struct app_cc_table *tb, uint16_t id)
{
	for (uint32_t i = 0; i < tb->n; i++)
		if (tb->e[i].cntlid == id)
			return &tb->e[i];
	return NULL;
}

/* The table without the lines of `drop_owner` (NULL: none dropped) or of `drop_id` held by it,
 * plus "add_id owner" when add_id is not 0. NULL without memory. */
static char *app_cc_table_text(const struct app_cc_table *tb, const char *owner, bool drop_all,
			       uint16_t drop_id, uint16_t add_id, size_t *len)
{
	size_t cap = 32 + strlen(owner), n = 0;
	char *out;

	for (uint32_t i = 0; i < tb->n; i++)
		cap += 8 + strlen(tb->e[i].owner);
	out = malloc(cap);
	if (!out)
		return NULL;
	for (uint32_t i = 0; i < tb->n; i++) {
		bool mine = !strcmp(tb->e[i].owner, owner);

		if (mine && (drop_all || tb->e[i].cntlid == drop_id))
			continue;
		n += (size_t)snprintf(out + n, cap - n, "%u %s\n", tb->e[i].cntlid, tb->e[i].owner);
	}
	if (add_id)
		n += (size_t)snprintf(out + n, cap - n, "%u %s\n", add_id, owner);
	*len = n;
	return out;
}

/* ---- an operation's end ---- */

static void app_cc_closed(void *arg)
{
	struct app_cc *c = arg;
	struct app_target *t = c->t;

	t->cntlid_ops--;
	free(c);
	if (t->shutting_down)
		app_target_fini_step(t);
}

static void app_cc_finish(struct app_cc *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void app_cc_finish(struct app_cc *c, int rc, const char *fmt, ...)
{
	char err[APP_ERR_LEN] = "";

	if (fmt) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(err, sizeof(err), fmt, ap);
		va_end(ap);
	}
	c->s->cntlid_claims--;
	if (c->done)
		c->done(c->arg, rc, rc ? 0 : c->cntlid, rc ? err : NULL);
	if (c->o)
		rados_obj_close(c->o, app_cc_closed, c);
	else
		app_cc_closed(c);
}

/* ---- read, decide, write ---- */

static void app_cc_read(struct app_cc *c);

static void app_cc_written(void *arg, int rc, uint64_t version)
{
	struct app_cc *c = arg;

	(void)version;
	if (rc == -ECANCELED && ++c->tries < APP_CC_MAX_TRIES)
		return app_cc_read(c); /* another daemon wrote first: again on its table */
	if (rc)
		return app_cc_finish(c, rc, "%s: cannot write the CNTLID table: %s", c->oid,
				     rc == -ECANCELED ? "lost to other daemons too often"
						      : strerror(-rc));
	LOG_INFO(APP_CC_LOG, "%s: %s CNTLID %u for %s (after %u lost rounds)", c->oid,
		 c->release ? "released" : "claimed", c->cntlid, c->owner, c->tries);
	app_cc_finish(c, 0, NULL);
}

/* The lowest CNTLID of the range that no daemon holds and no listener here has; 0 if none. */
static uint16_t app_cc_free_id(const struct app_cc *c, const struct app_cc_table *tb)
{
	for (uint32_t id = c->s->min_cntlid; id <= c->s->max_cntlid; id++)
		if (!app_cc_holder(tb, (uint16_t)id) &&
		    !app_subsys_listener_by_cntlid(c->s, (uint16_t)id))
			return (uint16_t)id;
	return 0;
}

static void app_cc_read_done(void *arg, int rc, const void *data, size_t len, uint64_t version)
{
	struct app_cc *c = arg;
	struct app_cc_table tb;
	uint16_t add = 0;
	size_t out_len = 0;
	char *out;

	if (rc)
		return app_cc_finish(c, rc, "%s: cannot read the CNTLID table: %s", c->oid,
				     strerror(-rc));
	rc = app_cc_table_parse(data, len, &tb);
	if (rc) {
		app_cc_table_free(&tb);
		return app_cc_finish(c, rc, "%s: %s", c->oid,
				     rc == -EBADMSG ? "not a CNTLID table nvme-emu wrote"
						    : strerror(-rc));
	}
	if (c->release) {
		const struct app_cc_entry *e = app_cc_holder(&tb, c->cntlid);

		if (!e || strcmp(e->owner, c->owner)) {
			app_cc_table_free(&tb);
			return app_cc_finish(c, 0, NULL); /* not held by this listener: nothing */
		}
	} else {
		/* This listener's CNTLID from before (a restart), if still in the range. */
		for (uint32_t i = 0; i < tb.n && !c->cntlid; i++)
			if (!strcmp(tb.e[i].owner, c->owner) && tb.e[i].cntlid >= c->s->min_cntlid &&
			    tb.e[i].cntlid <= c->s->max_cntlid &&
			    !app_subsys_listener_by_cntlid(c->s, tb.e[i].cntlid))
				c->cntlid = tb.e[i].cntlid;
		if (c->cntlid) {
			bool only = true;

			for (uint32_t i = 0; i < tb.n; i++)
				only &= strcmp(tb.e[i].owner, c->owner) || tb.e[i].cntlid == c->cntlid;
			if (only) {
				app_cc_table_free(&tb);
				LOG_INFO(APP_CC_LOG, "%s: CNTLID %u of %s taken back", c->oid, c->cntlid,
					 c->owner);
				return app_cc_finish(c, 0, NULL);
			}
		} else {
			c->cntlid = app_cc_free_id(c, &tb);
			if (!c->cntlid) {
				app_cc_table_free(&tb);
				return app_cc_finish(c, -ENOSPC,
						     "subsystem %s: every CNTLID of %u..%u is taken "
						     "in the cluster (%s)",
						     c->s->nqn, c->s->min_cntlid, c->s->max_cntlid,
						     c->oid);
			}
		}
		add = c->cntlid;
	}
	/* A claim drops whatever else this owner held (a range that changed); a release, the
	 * one CNTLID. */
	out = app_cc_table_text(&tb, c->owner, !c->release, c->cntlid, add, &out_len);
	app_cc_table_free(&tb);
	if (!out)
		return app_cc_finish(c, -ENOMEM, "out of memory");
	rc = rados_obj_write(c->o, version, out, out_len, app_cc_written, c);
	free(out);
	if (rc)
		app_cc_finish(c, rc, "%s: cannot write the CNTLID table: %s", c->oid, strerror(-rc));
}

static void app_cc_read(struct app_cc *c)
{
	int rc;

	if (!c->release)
		c->cntlid = 0;
	rc = rados_obj_read(c->o, app_cc_read_done, c);
	if (rc)
		app_cc_finish(c, rc, "%s: cannot read the CNTLID table: %s", c->oid, strerror(-rc));
}

/* Every daemon's operation on the table is one compare-and-swap: a change notify is not
 * needed, only acknowledged (the object is watched because rados_obj always watches). */
static void app_cc_changed(void *arg, uint64_t notify_id, uint64_t notifier_gid)
{
	struct app_cc *c = arg;

	(void)notifier_gid;
	if (c->o)
		rados_obj_ack(c->o, notify_id);
}

static void app_cc_watch_lost(void *arg, int err)
{
	(void)arg;
	(void)err;
}

static void app_cc_rewatched(void *arg)
{
	(void)arg;
}

static const struct rados_obj_ops app_cc_obj_ops = {
    .changed = app_cc_changed, .watch_lost = app_cc_watch_lost, .rewatched = app_cc_rewatched};

static void app_cc_opened(void *arg, struct rados_obj *o, int rc)
{
	struct app_cc *c = arg;

	if (rc)
		return app_cc_finish(c, rc, "%s: cannot open the CNTLID table: %s", c->oid,
				     strerror(-rc));
	c->o = o;
	app_cc_read(c);
}

/* ---- the calls ---- */

bool app_subsys_cluster_cntlid(const struct app_subsys *s)
{
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (s->ns[i] && s->ns[i]->shared_resv)
			return true;
	return false;
}

static int app_cc_start(struct app_target *t, struct app_subsys *s, const char *traddr,
			bool release, uint16_t cntlid, app_cc_done_fn done, void *arg, char *err)
{
	struct app_ns *ns = NULL;
	struct app_function *fn;
	char host[128], image_id[96];
	void *cluster, *io;
	struct bdev *b;
	struct app_cc *c;
	int rc;

	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES && !ns; i++)
		if (s->ns[i] && s->ns[i]->shared_resv)
			ns = s->ns[i];
	if (!ns) {
		snprintf(err, APP_ERR_LEN, "subsystem %s has no shared namespace", s->nqn);
		return -ENOENT;
	}
	if (t->shutting_down) {
		snprintf(err, APP_ERR_LEN, "the daemon is stopping");
		return -ECANCELED;
	}
	b = bdev_lookup(ns->bdev_name);
	rc = b ? bdev_rbd_rados(b, &cluster, &io, image_id, sizeof(image_id)) : -ENODEV;
	if (rc) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: namespace %u's bdev %s: %s", s->nqn,
			 ns->nsid, ns->bdev_name, strerror(-rc));
		return rc;
	}
	if (gethostname(host, sizeof(host))) {
		rc = -errno;
		snprintf(err, APP_ERR_LEN, "gethostname: %s", strerror(-rc));
		return rc;
	}
	host[sizeof(host) - 1] = '\0';
	/* A function's VUID ("nvme-emu-0") is the same in every daemon: its socket path tells
	 * this host's listeners apart. */
	fn = app_function_find(t, traddr);
	if (fn && fn->socket_path)
		traddr = fn->socket_path;
	if (strchr(traddr, '\n') || strlen(host) + strlen(traddr) + 2 > sizeof(c->owner)) {
		snprintf(err, APP_ERR_LEN, "traddr %s cannot name a CNTLID owner in the cluster",
			 traddr);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	*c = (struct app_cc){.t = t, .s = s, .release = release, .cntlid = cntlid, .done = done,
			     .arg = arg};
	snprintf(c->oid, sizeof(c->oid), "nvme-emu.cntlid.%016" PRIx64, app_fnv1a64(s->nqn, 0xcbf29ce484222325ull));
	snprintf(c->owner, sizeof(c->owner), "%s:%s", host, traddr);
	rc = rados_obj_open(t->loop, cluster, io, c->oid, APP_CC_WATCH_TIMEOUT_S, &app_cc_obj_ops,
			    c, app_cc_opened, c);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "%s: %s", c->oid, strerror(-rc));
		free(c);
		return rc;
	}
	s->cntlid_claims++;
	t->cntlid_ops++;
	return 0;
}

int app_cluster_cntlid_claim(struct app_target *t, struct app_subsys *s, const char *traddr,
			     app_cc_done_fn done, void *arg, char *err)
{
	return app_cc_start(t, s, traddr, false, 0, done, arg, err);
}

int app_cluster_cntlid_release(struct app_target *t, struct app_subsys *s, const char *traddr,
			       uint16_t cntlid, app_cc_done_fn done, void *arg, char *err)
{
	return app_cc_start(t, s, traddr, true, cntlid, done, arg, err);
}
