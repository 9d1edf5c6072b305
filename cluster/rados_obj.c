/* cluster/rados_obj.c - a RADOS object as a versioned, watched register (see rados_obj.h).
 *
 * Every librados call here is an asynchronous one; its completion (on a librados thread) posts a
 * message to the owner's loop, where the caller's callback runs. The watch's callbacks do the
 * same. Closing unwatches, then flushes librados's watch callbacks: once the flush completes no
 * callback of the object can run any more, and every message they posted was posted before the
 * flush's own, so the object is freed after all of them ran. */
#include "cluster/rados_obj.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"

#define RADOS_OBJ_LOG "cluster"
/* Ceph reports a fenced (blocklisted) client with ESHUTDOWN. */
#define RADOS_OBJ_EBLOCKLISTED (-ESHUTDOWN)
/* A watch that cannot be re-established is tried again after this long. */
#define RADOS_OBJ_REWATCH_US 500000

enum rados_obj_watch_state {
	RADOS_OBJ_UNWATCHED, /* open not done, or lost and not yet re-established */
	RADOS_OBJ_WATCHING,
	RADOS_OBJ_FENCED, /* this client is blocklisted: no more watches */
};

struct rados_obj {
	struct evloop *loop;
	rados_t cluster;
	rados_ioctx_t io;
	char *oid;
	uint32_t watch_timeout_s;
	const struct rados_obj_ops *ops;
	void *arg;
	enum rados_obj_watch_state watch;
	uint64_t cookie;
	bool rewatching; /* an unwatch/watch pair or its retry timer is under way */
	struct evloop_timer *rewatch_timer;
	uint32_t inflight; /* operations whose completion has not run on the loop yet */
	bool closing;
	bool keep; /* the close could not flush librados's callbacks: never freed */
	rados_obj_done_cb close_done;
	void *close_arg;
	/* The watch error, handed from librados's thread: one message at a time. */
	struct evloop_msg err_msg;
	int err_posted; /* __atomic */
	int err;
};

enum rados_obj_op_kind {
	RADOS_OBJ_OP_CREATE, /* open: create if absent, then watch */
	RADOS_OBJ_OP_WATCH,
	RADOS_OBJ_OP_UNWATCH,
	RADOS_OBJ_OP_READ,
	RADOS_OBJ_OP_WRITE,
	RADOS_OBJ_OP_NOTIFY,
	RADOS_OBJ_OP_FLUSH,
	RADOS_OBJ_OP_DIR_SET,
	RADOS_OBJ_OP_DIR_GET,
};

struct rados_obj_op {
	struct rados_obj *o;
	enum rados_obj_op_kind kind;
	rados_completion_t c;
	struct evloop_msg msg;
	union {
		rados_obj_open_cb open;
		rados_obj_read_cb read;
		rados_obj_write_cb write;
		rados_obj_notify_cb notify;
		rados_obj_get_cb get;
	} cb;
	rados_omap_iter_t iter;
	char *key;
	void *arg;
	rados_read_op_t rop;
	rados_write_op_t wop;
	char *buf;
	size_t bytes_read;
	int prval;
	char *reply;
	size_t reply_len;
	uint64_t cookie; /* the watch being set up or ended */
	bool late; /* an unwatch of a watch that came up after close: flush again after it */
};

static void rados_obj_op_done(void *arg);
static int rados_obj_watch_start(struct rados_obj *o, rados_obj_open_cb done, void *done_arg);
static void rados_obj_rewatch(struct rados_obj *o);
static void rados_obj_rewatch_after(struct rados_obj *o, uint64_t usec);

/* librados thread: hand the completion to the loop. */
static void rados_obj_complete(rados_completion_t c, void *arg)
{
	struct rados_obj_op *op = arg;

	(void)c;
	evloop_post(op->o->loop, &op->msg, rados_obj_op_done, op);
}

static struct rados_obj_op *rados_obj_op_new(struct rados_obj *o, enum rados_obj_op_kind kind)
{
	struct rados_obj_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->o = o;
	op->kind = kind;
	if (rados_aio_create_completion2(op, rados_obj_complete, &op->c) < 0) {
		free(op);
		return NULL;
	}
	return op;
}

static void rados_obj_op_free(struct rados_obj_op *op)
{
	if (op->c)
		rados_aio_release(op->c);
	if (op->rop)
		rados_release_read_op(op->rop);
	if (op->wop)
		rados_release_write_op(op->wop);
	if (op->reply)
		rados_buffer_free(op->reply);
	if (op->iter)
		rados_omap_get_end(op->iter);
	free(op->key);
	free(op->buf);
	free(op);
}

/* The op was handed to librados: its completion will come. */
static void rados_obj_op_started(struct rados_obj_op *op)
{
	op->o->inflight++;
}

static void rados_obj_free(struct rados_obj *o)
{
	rados_obj_done_cb done = o->close_done;
	void *arg = o->close_arg;

	free(o->oid);
	free(o);
	if (done)
		done(arg);
}

/* ---- the watch ---- */

struct rados_obj_notify_msg {
	struct rados_obj *o;
	uint64_t notify_id, notifier_gid;
};

static void rados_obj_notify_msg(void *arg)
{
	struct rados_obj_notify_msg *m = arg;
	struct rados_obj *o = m->o;

	/* A closing owner no longer acts on changes, nor one whose watch broke (a notify still
	 * queued then is not trusted: the writer sees a timeout); the writer sees the timeout or
	 * the unwatch. */
	if (!o->closing && o->watch == RADOS_OBJ_WATCHING)
		o->ops->changed(o->arg, m->notify_id, m->notifier_gid);
	free(m);
}

/* librados thread: a notify arrived. Without memory for the message it is not acknowledged, so
 * the writer sees this daemon as one that did not answer (the safe side of a fence). */
static void rados_obj_watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
			       void *data, size_t data_len)
{
	struct rados_obj *o = arg;
	struct rados_obj_notify_msg *m = malloc(sizeof(*m));

	(void)handle;
	(void)data;
	(void)data_len;
	if (!m)
		return;
	*m = (struct rados_obj_notify_msg){.o = o, .notify_id = notify_id,
					   .notifier_gid = notifier_id};
	if (evloop_send_msg(o->loop, rados_obj_notify_msg, m))
		free(m);
}

/* The watch broke with err: the owner is told; the watch comes back (after hold_us, a test's
 * injected outage, or at once) unless the client is fenced. */
static void rados_obj_watch_broke(struct rados_obj *o, int err, uint64_t hold_us)
{
	if (o->closing || o->watch != RADOS_OBJ_WATCHING)
		return;
	LOG_ERR(RADOS_OBJ_LOG, "%s: watch lost: %s", o->oid, strerror(-err));
	if (err == RADOS_OBJ_EBLOCKLISTED) {
		o->watch = RADOS_OBJ_FENCED;
		o->ops->watch_lost(o->arg, err);
		return;
	}
	o->watch = RADOS_OBJ_UNWATCHED;
	o->ops->watch_lost(o->arg, err);
	if (hold_us)
		return rados_obj_rewatch_after(o, hold_us);
	rados_obj_rewatch(o);
}

static void rados_obj_err_msg(void *arg)
{
	struct rados_obj *o = arg;
	int err = o->err;

	__atomic_store_n(&o->err_posted, 0, __ATOMIC_RELEASE);
	rados_obj_watch_broke(o, err, 0);
}

void rados_obj_inject_watch_error(struct rados_obj *o, int err, uint32_t hold_ms)
{
	EVLOOP_ASSERT_OWNER(o->loop);
	LOG_ERR(RADOS_OBJ_LOG, "%s: test fault: the watch breaks (%s) for %u ms", o->oid,
		strerror(-err), hold_ms);
	rados_obj_watch_broke(o, err, (uint64_t)hold_ms * 1000);
}

/* librados thread: the watch session broke. A second error before the first reached the loop
 * adds nothing: the watch is re-established once either way. */
static void rados_obj_watch_err_cb(void *arg, uint64_t cookie, int err)
{
	struct rados_obj *o = arg;

	(void)cookie;
	if (__atomic_exchange_n(&o->err_posted, 1, __ATOMIC_ACQ_REL))
		return;
	o->err = err;
	evloop_post(o->loop, &o->err_msg, rados_obj_err_msg, o);
}

static void rados_obj_rewatch_timer(void *arg)
{
	struct rados_obj *o = arg;

	o->rewatch_timer = NULL;
	o->rewatching = false;
	rados_obj_rewatch(o);
}

static void rados_obj_rewatch_after(struct rados_obj *o, uint64_t usec)
{
	o->rewatching = true;
	o->rewatch_timer = evloop_timer_add(o->loop, usec, rados_obj_rewatch_timer, o);
	if (!o->rewatch_timer) {
		/* No timer without memory: the object stays unwatched, its owner knows it is. */
		o->rewatching = false;
		LOG_ERR(RADOS_OBJ_LOG, "%s: cannot schedule a new watch: out of memory", o->oid);
	}
}

static void rados_obj_rewatch_later(struct rados_obj *o)
{
	rados_obj_rewatch_after(o, RADOS_OBJ_REWATCH_US);
}

/* Ends the broken watch (librados keeps its handle until unwatched), then watches again. */
static void rados_obj_rewatch(struct rados_obj *o)
{
	struct rados_obj_op *op;
	int rc;

	if (o->rewatching || o->closing || o->watch != RADOS_OBJ_UNWATCHED)
		return;
	op = rados_obj_op_new(o, RADOS_OBJ_OP_UNWATCH);
	if (!op)
		return rados_obj_rewatch_later(o);
	op->cookie = o->cookie;
	rc = rados_aio_unwatch(o->io, o->cookie, op->c);
	if (rc < 0) {
		rados_obj_op_free(op);
		/* Nothing to end: go straight to the new watch. */
		o->rewatching = true;
		if (rados_obj_watch_start(o, NULL, NULL))
			rados_obj_rewatch_later(o);
		return;
	}
	o->rewatching = true;
	rados_obj_op_started(op);
}

/* The watch of a new or re-opened object. done is the open's callback (NULL: a rewatch). */
static int rados_obj_watch_start(struct rados_obj *o, rados_obj_open_cb done, void *done_arg)
{
	struct rados_obj_op *op = rados_obj_op_new(o, RADOS_OBJ_OP_WATCH);
	int rc;

	if (!op)
		return -ENOMEM;
	op->cb.open = done;
	op->arg = done_arg;
	rc = rados_aio_watch2(o->io, o->oid, op->c, &op->cookie, rados_obj_watch_cb,
			      rados_obj_watch_err_cb, o->watch_timeout_s, o);
	if (rc < 0) {
		rados_obj_op_free(op);
		return rc;
	}
	rados_obj_op_started(op);
	return 0;
}

/* ---- completions, on the loop ---- */

static void rados_obj_notify_done(struct rados_obj_op *op, int rc)
{
	struct rados_obj_notify_result res = {0};
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *tos = NULL;
	size_t nacks = 0, ntos = 0;

	/* The reply is there even when the notify timed out: it names who did not answer. */
	if (op->reply && rados_decode_notify_response(op->reply, op->reply_len, &acks, &nacks, &tos,
						       &ntos) == 0) {
		res.nacks = (uint32_t)nacks;
		res.ntimeouts = (uint32_t)ntos;
		for (size_t i = 0; i < ntos && i < RADOS_OBJ_MAX_TIMEOUTS; i++)
			res.timeout_gid[i] = tos[i].notifier_id;
		rados_free_notify_response(acks, nacks, tos);
	} else if (op->reply) {
		LOG_ERR(RADOS_OBJ_LOG, "%s: notify reply of %zu bytes cannot be decoded", op->o->oid,
			op->reply_len);
		if (!rc)
			rc = -EBADMSG;
	}
	op->cb.notify(op->arg, rc, &res);
}

static void rados_obj_dir_got(struct rados_obj_op *op, int rc)
{
	char *key = NULL, *val = NULL, *copy;
	size_t len = 0;

	if (rc < 0)
		return op->cb.get(op->arg, rc, NULL);
	if (rados_omap_get_next2(op->iter, &key, &val, NULL, &len) < 0 || !key)
		return op->cb.get(op->arg, -ENOENT, NULL);
	copy = strndup(val ? val : "", len);
	if (!copy)
		return op->cb.get(op->arg, -ENOMEM, NULL);
	op->cb.get(op->arg, 0, copy);
	free(copy);
}

static void rados_obj_op_done(void *arg)
{
	struct rados_obj_op *op = arg;
	struct rados_obj *o = op->o;
	int rc = rados_aio_get_return_value(op->c);
	uint64_t version = rados_aio_get_version(op->c);

	o->inflight--;
	switch (op->kind) {
	case RADOS_OBJ_OP_CREATE:
		if (rc < 0 || o->closing) {
			if (!o->closing)
				LOG_ERR(RADOS_OBJ_LOG, "%s: cannot create: %s", o->oid, strerror(-rc));
			op->cb.open(op->arg, NULL, rc < 0 ? rc : -ECANCELED);
			o->closing = true; /* freed below: nothing of it reached the user */
			break;
		}
		rc = rados_obj_watch_start(o, op->cb.open, op->arg);
		if (rc) {
			op->cb.open(op->arg, NULL, rc);
			o->closing = true;
		}
		break;
	case RADOS_OBJ_OP_WATCH:
		o->rewatching = false;
		if (rc >= 0)
			o->cookie = op->cookie;
		if (op->cb.open) { /* the open */
			if (rc < 0) {
				LOG_ERR(RADOS_OBJ_LOG, "%s: cannot watch: %s", o->oid, strerror(-rc));
				op->cb.open(op->arg, NULL, rc);
				o->closing = true;
				break;
			}
			o->watch = RADOS_OBJ_WATCHING;
			op->cb.open(op->arg, o, 0);
			break;
		}
		if (rc >= 0 && o->closing) {
			/* Closed while the new watch was on its way: end it too. */
			struct rados_obj_op *un = rados_obj_op_new(o, RADOS_OBJ_OP_UNWATCH);

			if (un && rados_aio_unwatch(o->io, o->cookie, un->c) >= 0) {
				un->late = true;
				rados_obj_op_started(un);
			} else {
				if (un)
					rados_obj_op_free(un);
				o->keep = true; /* its callbacks may still come */
			}
			break;
		}
		if (o->closing)
			break;
		if (rc < 0) {
			if (rc == RADOS_OBJ_EBLOCKLISTED) {
				/* The loss was a fence after all: the owner learns it is final. */
				LOG_ERR(RADOS_OBJ_LOG, "%s: this client is blocklisted", o->oid);
				o->watch = RADOS_OBJ_FENCED;
				o->ops->watch_lost(o->arg, rc);
				break;
			}
			LOG_ERR(RADOS_OBJ_LOG, "%s: cannot watch again: %s", o->oid, strerror(-rc));
			rados_obj_rewatch_later(o);
			break;
		}
		o->watch = RADOS_OBJ_WATCHING;
		LOG_INFO(RADOS_OBJ_LOG, "%s: watching again", o->oid);
		o->ops->rewatched(o->arg);
		break;
	case RADOS_OBJ_OP_UNWATCH:
		if (op->late) {
			struct rados_obj_op *fl = rados_obj_op_new(o, RADOS_OBJ_OP_FLUSH);

			if (fl && rados_aio_watch_flush(o->cluster, fl->c) >= 0) {
				rados_obj_op_started(fl);
			} else {
				if (fl)
					rados_obj_op_free(fl);
				o->keep = true;
			}
			break;
		}
		/* A rewatch's first half (its result does not matter: the watch was broken). */
		if (!o->closing && o->rewatching && rados_obj_watch_start(o, NULL, NULL)) {
			o->rewatching = false;
			rados_obj_rewatch_later(o);
		}
		break;
	case RADOS_OBJ_OP_READ:
		if (o->closing)
			break;
		if (rc >= 0 && op->prval < 0)
			rc = op->prval;
		if (rc < 0)
			op->cb.read(op->arg, rc, NULL, 0, 0);
		else if (op->bytes_read > RADOS_OBJ_MAX_SIZE)
			op->cb.read(op->arg, -EFBIG, NULL, 0, 0);
		else
			op->cb.read(op->arg, 0, op->buf, op->bytes_read, version);
		break;
	case RADOS_OBJ_OP_WRITE:
		if (o->closing)
			break;
		/* The version assertion failed: somebody wrote since (ERANGE: the object is newer;
		 * EOVERFLOW: the version asked for was never reached). */
		if (rc == -ERANGE || rc == -EOVERFLOW)
			rc = -ECANCELED;
		op->cb.write(op->arg, rc < 0 ? rc : 0, rc < 0 ? 0 : version);
		break;
	case RADOS_OBJ_OP_NOTIFY:
		if (!o->closing)
			rados_obj_notify_done(op, rc < 0 ? rc : 0);
		break;
	case RADOS_OBJ_OP_DIR_SET:
		if (!o->closing)
			op->cb.write(op->arg, rc < 0 ? rc : 0, rc < 0 ? 0 : version);
		break;
	case RADOS_OBJ_OP_DIR_GET:
		if (o->closing)
			break;
		if (rc >= 0 && op->prval < 0)
			rc = op->prval;
		rados_obj_dir_got(op, rc);
		break;
	case RADOS_OBJ_OP_FLUSH:
		break;
	}
	rados_obj_op_free(op);
	if (o->closing && !o->inflight && !o->rewatch_timer) {
		if (!o->keep)
			return rados_obj_free(o);
		if (o->close_done) {
			rados_obj_done_cb done = o->close_done;

			o->close_done = NULL;
			done(o->close_arg);
		}
	}
}

/* ---- the calls ---- */

int rados_obj_open(struct evloop *loop, rados_t cluster, rados_ioctx_t io, const char *oid,
		   uint32_t watch_timeout_s, const struct rados_obj_ops *ops, void *arg,
		   rados_obj_open_cb done, void *done_arg)
{
	struct rados_obj *o;
	struct rados_obj_op *op;
	int rc;

	EVLOOP_ASSERT_OWNER(loop);
	if (!oid || !*oid || !ops || !ops->changed || !ops->watch_lost || !ops->rewatched || !done)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	*o = (struct rados_obj){.loop = loop, .cluster = cluster, .io = io,
				.watch_timeout_s = watch_timeout_s, .ops = ops, .arg = arg};
	o->oid = strdup(oid);
	op = o->oid ? rados_obj_op_new(o, RADOS_OBJ_OP_CREATE) : NULL;
	if (!op) {
		free(o->oid);
		free(o);
		return -ENOMEM;
	}
	op->cb.open = done;
	op->arg = done_arg;
	/* A watch needs the object to exist: an empty one is made if there is none (an empty
	 * object is one nobody wrote). */
	op->wop = rados_create_write_op();
	if (!op->wop) {
		rados_obj_op_free(op);
		free(o->oid);
		free(o);
		return -ENOMEM;
	}
	rados_write_op_create(op->wop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	rc = rados_aio_write_op_operate(op->wop, io, op->c, oid, NULL, 0);
	if (rc < 0) {
		rados_obj_op_free(op);
		free(o->oid);
		free(o);
		return rc;
	}
	rados_obj_op_started(op);
	return 0;
}

/* The start of a call on an open object: a new operation of `kind` for cb's arg, or NULL with
 * *rc (-ESHUTDOWN once closing, -ENOMEM). */
static struct rados_obj_op *rados_obj_begin(struct rados_obj *o, enum rados_obj_op_kind kind,
					    void *arg, int *rc)
{
	struct rados_obj_op *op;

	EVLOOP_ASSERT_OWNER(o->loop);
	*rc = o->closing ? -ESHUTDOWN : -ENOMEM;
	if (o->closing)
		return NULL;
	op = rados_obj_op_new(o, kind);
	if (op)
		op->arg = arg;
	return op;
}

/* librados took the operation (rc >= 0: its completion will come) or refused it. */
static int rados_obj_launched(struct rados_obj_op *op, int rc)
{
	if (rc < 0) {
		rados_obj_op_free(op);
		return rc;
	}
	rados_obj_op_started(op);
	return 0;
}

int rados_obj_read(struct rados_obj *o, rados_obj_read_cb cb, void *arg)
{
	int rc;
	struct rados_obj_op *op = rados_obj_begin(o, RADOS_OBJ_OP_READ, arg, &rc);

	if (!op)
		return rc;
	op->cb.read = cb;
	/* One byte more than allowed: a read that fills it found an object too large. */
	op->buf = malloc(RADOS_OBJ_MAX_SIZE + 1);
	op->rop = rados_create_read_op();
	if (!op->buf || !op->rop)
		return rados_obj_launched(op, -ENOMEM);
	rados_read_op_read(op->rop, 0, RADOS_OBJ_MAX_SIZE + 1, op->buf, &op->bytes_read, &op->prval);
	return rados_obj_launched(op, rados_aio_read_op_operate(op->rop, o->io, op->c, o->oid, 0));
}

int rados_obj_write(struct rados_obj *o, uint64_t version, const void *data, size_t len,
		    rados_obj_write_cb cb, void *arg)
{
	struct rados_obj_op *op;
	int rc;

	if (len > RADOS_OBJ_MAX_SIZE)
		return -EFBIG;
	if (!version) /* open made the object: it always has a version */
		return -EINVAL;
	op = rados_obj_begin(o, RADOS_OBJ_OP_WRITE, arg, &rc);
	if (!op)
		return rc;
	op->cb.write = cb;
	op->buf = malloc(len ? len : 1);
	op->wop = rados_create_write_op();
	if (!op->buf || !op->wop)
		return rados_obj_launched(op, -ENOMEM);
	memcpy(op->buf, data, len);
	/* The OSD checks the version and replaces the data in one operation. */
	rados_write_op_assert_version(op->wop, version);
	rados_write_op_write_full(op->wop, op->buf, len);
	return rados_obj_launched(op, rados_aio_write_op_operate(op->wop, o->io, op->c, o->oid,
								  NULL, 0));
}

int rados_obj_notify(struct rados_obj *o, uint64_t timeout_ms, rados_obj_notify_cb cb, void *arg)
{
	int rc;
	struct rados_obj_op *op = rados_obj_begin(o, RADOS_OBJ_OP_NOTIFY, arg, &rc);

	if (!op)
		return rc;
	op->cb.notify = cb;
	return rados_obj_launched(op, rados_aio_notify(o->io, o->oid, op->c, NULL, 0, timeout_ms,
						       &op->reply, &op->reply_len));
}

int rados_obj_dir_set(struct rados_obj *o, const char *key, const char *value,
		      rados_obj_write_cb cb, void *arg)
{
	int rc;
	struct rados_obj_op *op = rados_obj_begin(o, RADOS_OBJ_OP_DIR_SET, arg, &rc);
	size_t klen, vlen;

	if (!op)
		return rc;
	op->cb.write = cb;
	op->key = strdup(key);
	op->buf = strdup(value);
	op->wop = rados_create_write_op();
	if (!op->key || !op->buf || !op->wop)
		return rados_obj_launched(op, -ENOMEM);
	klen = strlen(op->key);
	vlen = strlen(op->buf);
	rados_write_op_omap_set2(op->wop, (const char *const[]){op->key},
				 (const char *const[]){op->buf}, &klen, &vlen, 1);
	return rados_obj_launched(op, rados_aio_write_op_operate(op->wop, o->io, op->c, o->oid,
								  NULL, 0));
}

int rados_obj_dir_get(struct rados_obj *o, const char *key, rados_obj_get_cb cb, void *arg)
{
	int rc;
	struct rados_obj_op *op = rados_obj_begin(o, RADOS_OBJ_OP_DIR_GET, arg, &rc);
	size_t klen;

	if (!op)
		return rc;
	op->cb.get = cb;
	op->key = strdup(key);
	op->rop = rados_create_read_op();
	if (!op->key || !op->rop)
		return rados_obj_launched(op, -ENOMEM);
	klen = strlen(op->key);
	rados_read_op_omap_get_vals_by_keys2(op->rop, (const char *const[]){op->key}, 1, &klen,
					     &op->iter, &op->prval);
	return rados_obj_launched(op, rados_aio_read_op_operate(op->rop, o->io, op->c, o->oid, 0));
}

/* The blocklist's thread: the monitor command, then a message to the loop. */
struct rados_obj_fence {
	struct evloop *loop;
	rados_t cluster;
	char *addr;
	uint32_t expire_s;
	int rc;
	void (*done)(void *arg, int rc);
	void *arg;
	pthread_t thread;
	struct evloop_msg msg;
};

static void rados_obj_fence_done(void *arg)
{
	struct rados_obj_fence *f = arg;

	pthread_join(f->thread, NULL);
	if (f->rc)
		LOG_ERR(RADOS_OBJ_LOG, "cannot blocklist %s: %s", f->addr, strerror(-f->rc));
	else
		LOG_INFO(RADOS_OBJ_LOG, "blocklisted %s for %u s", f->addr, f->expire_s);
	f->done(f->arg, f->rc);
	free(f->addr);
	free(f);
}

static void *rados_obj_fence_main(void *arg)
{
	struct rados_obj_fence *f = arg;

	f->rc = rados_blocklist_add(f->cluster, f->addr, f->expire_s);
	evloop_post(f->loop, &f->msg, rados_obj_fence_done, f);
	return NULL;
}

int rados_obj_blocklist(struct rados_obj *o, const char *addr, uint32_t expire_s,
			void (*done)(void *arg, int rc), void *arg)
{
	struct rados_obj_fence *f;

	EVLOOP_ASSERT_OWNER(o->loop);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	*f = (struct rados_obj_fence){.loop = o->loop, .cluster = o->cluster, .addr = strdup(addr),
				      .expire_s = expire_s, .done = done, .arg = arg};
	if (!f->addr || pthread_create(&f->thread, NULL, rados_obj_fence_main, f)) {
		free(f->addr);
		free(f);
		return -ENOMEM;
	}
	return 0;
}

void rados_obj_ack(struct rados_obj *o, uint64_t notify_id)
{
	int rc;

	EVLOOP_ASSERT_OWNER(o->loop);
	if (o->watch != RADOS_OBJ_WATCHING)
		return; /* the notify was for a watch that is gone: the writer counts a timeout */
	/* librados sends the acknowledgement without waiting for it. */
	rc = rados_notify_ack(o->io, o->oid, notify_id, o->cookie, NULL, 0);
	if (rc < 0)
		LOG_ERR(RADOS_OBJ_LOG, "%s: cannot acknowledge notify %llu: %s", o->oid,
			(unsigned long long)notify_id, strerror(-rc));
}

uint64_t rados_obj_gid(const struct rados_obj *o)
{
	return rados_get_instance_id(o->cluster);
}

void rados_obj_close(struct rados_obj *o, rados_obj_done_cb done, void *arg)
{
	struct rados_obj_op *op;

	EVLOOP_ASSERT_OWNER(o->loop);
	o->closing = true;
	o->close_done = done;
	o->close_arg = arg;
	if (o->rewatch_timer) {
		evloop_timer_cancel(o->rewatch_timer);
		o->rewatch_timer = NULL;
	}
	if (o->watch == RADOS_OBJ_WATCHING || o->watch == RADOS_OBJ_UNWATCHED) {
		op = rados_obj_op_new(o, RADOS_OBJ_OP_UNWATCH);
		if (op && rados_aio_unwatch(o->io, o->cookie, op->c) >= 0)
			rados_obj_op_started(op);
		else if (op)
			rados_obj_op_free(op);
	}
	/* After the flush no watch callback of ours runs; what they posted runs before it. */
	op = rados_obj_op_new(o, RADOS_OBJ_OP_FLUSH);
	if (op && rados_aio_watch_flush(o->cluster, op->c) >= 0) {
		rados_obj_op_started(op);
		return;
	}
	if (op)
		rados_obj_op_free(op);
	LOG_ERR(RADOS_OBJ_LOG, "%s: cannot flush watch callbacks: the object is kept", o->oid);
	/* Without the flush a late callback could still reach o: it is never freed (a leak, never a
	 * use after free). The caller is still told the close is done when nothing is in flight. */
	o->keep = true;
	if (!o->inflight && done) {
		o->close_done = NULL;
		done(arg);
	}
}
