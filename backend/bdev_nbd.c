/* backend/bdev_nbd.c - bdev on an NBD export through libnbd's asynchronous API: the connections
 * live on the main thread's event loop (channels post their I/O there and get completions back on
 * their eventfd), several of them when the server allows multi-conn, reconnected after a server
 * restart with the I/O in flight sent again. Completions go back through
 * bdev_io_complete_remote. */
#include "backend/bdev_internal.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BDEV_NBD_DEFAULT_CONNS 4
#define BDEV_NBD_DEFAULT_RECONNECT_S 30
#define BDEV_NBD_RETRY_MIN_US 100000ull
#define BDEV_NBD_RETRY_MAX_US 2000000ull
/* Largest single NBD_CMD_WRITE_ZEROES: the protocol's length is 32 bits. */
#define BDEV_NBD_ZERO_CHUNK (1ull << 30)
/* Zeroes written as data when the server has no WRITE_ZEROES. */
#define BDEV_NBD_ZERO_BUF (128u * 1024)

struct bdev_nbd;
struct bdev_nbd_io;

enum bdev_nbd_conn_state {
	BDEV_NBD_DOWN,	     /* no handle; a retry timer may be armed */
	BDEV_NBD_CONNECTING, /* handshake under way */
	BDEV_NBD_READY,
};

struct bdev_nbd_conn {
	struct bdev_nbd *nbd;
	unsigned int idx;
	enum bdev_nbd_conn_state state;
	struct nbd_handle *h;
	int fd;
	struct evloop_watch *watch;
	uint32_t events;
	bool closing;			/* nbd_close under way: late callbacks are ignored */
	struct bdev_nbd_io *inflight;	/* commands sent on this connection (doubly linked) */
	struct evloop_timer *retry;	/* reconnect attempt */
	uint64_t retry_us;		/* next backoff */
	bool was_ready;			/* it was up once: coming up again is a reconnection */
};

struct bdev_nbd {
	struct bdev *bdev; /* NULL until registered */
	struct evloop *loop;
	char name[BDEV_NAME_MAX + 1];
	char *uri;
	uint32_t block_size;
	uint32_t want_conns;
	uint32_t nconns; /* connections used: want_conns with multi-conn, else 1 */
	uint64_t reconnect_timeout_us;
	uint8_t uuid[BDEV_UUID_LEN];
	bool has_uuid;
	struct bdev_nbd_conn conns[BDEV_NBD_MAX_CONNECTIONS];
	unsigned int rr;
	/* What the server offered at the first handshake. */
	uint64_t size;
	bool can_flush, can_fua, can_zero, multi_conn;
	/* I/O waiting for a connection, and commands the callbacks finished (handled after the
	 * libnbd call that ran them returns: libnbd must not be re-entered from a callback). */
	struct bdev_nbd_io *wait_head, *wait_tail;
	struct bdev_nbd_io *reap_head, *reap_tail;
	uint64_t down_since_us; /* no connection ready since then (0: one is) */
	/* Connections that went down after the handshake, and came up again (main thread). */
	uint64_t disconnects, reconnects;
	struct evloop_timer *expire; /* fails waiting I/O at the reconnect timeout */
	bool reaping;
	void *zero_buf;
	/* Creation. */
	bdev_create_cb create_done;
	void *create_arg;
	struct bdev_nbd *next_pending;
};

/* Per-io context (bdev_io.driver_ctx). Owned by the channel thread until posted to the loop,
 * by the loop until finished, by the channel again when its poll takes it back. */
struct bdev_nbd_io {
	struct evloop_msg msg;
	struct bdev_io *io;
	struct bdev_nbd *nbd;
	struct bdev_nbd_io *next;		/* wait / reap list */
	struct bdev_nbd_io *in_prev, *in_next;	/* connection's inflight list */
	struct bdev_nbd_conn *conn;		/* inflight on this connection (NULL: not) */
	struct bdev_nbd_conn *sent_on;		/* where the last command went */
	void *bounce;
	size_t bounce_len;
	uint64_t done_bytes; /* zeroes / unmap: bytes of the current range done */
	uint32_t range;	     /* unmap: current range */
	bool flush_stage;    /* FUA emulated by a flush after the write */
	int cmd_err;	     /* the last command's errno (0: success) */
	int status;
};

static struct bdev_nbd *bdev_nbd_pending; /* creations not finished (main thread) */

static void bdev_nbd_conn_start(struct bdev_nbd_conn *c);
static void bdev_nbd_conn_down(struct bdev_nbd_conn *c, const char *why);
static void bdev_nbd_issue(struct bdev_nbd_io *n);
static void bdev_nbd_reap(struct bdev_nbd *nbd);
static bool bdev_nbd_any_ready(const struct bdev_nbd *nbd);
static void bdev_nbd_kick_waiters(struct bdev_nbd *nbd);

static struct bdev_nbd_io *bdev_nbd_io(struct bdev_io *io)
{
	return (struct bdev_nbd_io *)io->driver_ctx;
}

/* ---- lists ---- */

static void bdev_nbd_list_append(struct bdev_nbd_io **head, struct bdev_nbd_io **tail,
				 struct bdev_nbd_io *n)
{
	n->next = NULL;
	if (*tail)
		(*tail)->next = n;
	else
		*head = n;
	*tail = n;
}

static void bdev_nbd_inflight_add(struct bdev_nbd_conn *c, struct bdev_nbd_io *n)
{
	n->conn = c;
	n->in_prev = NULL;
	n->in_next = c->inflight;
	if (c->inflight)
		c->inflight->in_prev = n;
	c->inflight = n;
}

static void bdev_nbd_inflight_del(struct bdev_nbd_io *n)
{
	struct bdev_nbd_conn *c = n->conn;

	if (n->in_prev)
		n->in_prev->in_next = n->in_next;
	else
		c->inflight = n->in_next;
	if (n->in_next)
		n->in_next->in_prev = n->in_prev;
	n->in_prev = n->in_next = NULL;
	n->conn = NULL;
}

/* ---- completion back to the channel ---- */

/* Loop thread: hands the io back to its channel. A read through the bounce buffer is copied out
 * here, on the thread that did the I/O (the io's memory stays valid until it completes). */
static void bdev_nbd_finish(struct bdev_nbd_io *n, int status)
{
	struct bdev_io *io = n->io;

	if (n->bounce) {
		if (!status && io->type == BDEV_IO_READ)
			bdev_buf_to_iov(io->iov, io->iovcnt, n->bounce, n->bounce_len);
		free(n->bounce);
		n->bounce = NULL;
	}
	bdev_io_complete_remote(io, status);
}

/* ---- submission ---- */

/* Loop thread: an io posted by a channel. */
static void bdev_nbd_start(void *arg)
{
	struct bdev_nbd_io *n = arg;
	/* Read before the issue: an io failed at once (server down past the reconnect timeout)
	 * is completed to its channel's thread, which may free it before we return. */
	struct bdev_nbd *nbd = n->nbd;

	bdev_nbd_issue(n);
	bdev_nbd_reap(nbd);
}

/* Channel thread. Vectored transfers go through one buffer: libnbd takes flat buffers. */
static void bdev_nbd_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_nbd *nbd = ch->bdev->ctx;
	struct bdev_nbd_io *n = bdev_nbd_io(io);

	memset(n, 0, sizeof(*n));
	n->io = io;
	n->nbd = nbd;
	if ((io->type == BDEV_IO_READ || io->type == BDEV_IO_WRITE) && io->iovcnt > 1) {
		n->bounce_len = io->num_blocks * ch->bdev->block_size;
		n->bounce = malloc(n->bounce_len);
		if (!n->bounce) {
			bdev_io_complete(io, -ENOMEM);
			return;
		}
		if (io->type == BDEV_IO_WRITE)
			bdev_iov_to_buf(n->bounce, io->iov, io->iovcnt, n->bounce_len);
	}
	evloop_post(nbd->loop, &n->msg, bdev_nbd_start, n);
}

/* ---- the loop thread's side ---- */

static struct bdev_nbd_conn *bdev_nbd_pick(struct bdev_nbd *nbd)
{
	for (unsigned int i = 0; i < nbd->nconns; i++) {
		struct bdev_nbd_conn *c = &nbd->conns[(nbd->rr + i) % nbd->nconns];

		if (c->state == BDEV_NBD_READY) {
			nbd->rr = (nbd->rr + i + 1) % nbd->nconns;
			return c;
		}
	}
	return NULL;
}

/* Follows what libnbd wants to do next on the socket. */
static void bdev_nbd_conn_rearm(struct bdev_nbd_conn *c)
{
	unsigned int dir;
	uint32_t ev = 0;

	if (!c->h || !c->watch)
		return;
	dir = nbd_aio_get_direction(c->h);
	if (dir & LIBNBD_AIO_DIRECTION_READ)
		ev |= EPOLLIN;
	if (dir & LIBNBD_AIO_DIRECTION_WRITE)
		ev |= EPOLLOUT;
	if (ev != c->events && !evloop_watch_modify(c->watch, ev))
		c->events = ev;
}

/* libnbd's completion callback: runs inside a libnbd call, which must not be re-entered, so the
 * command only moves from its connection's inflight list to the reap list. */
static int bdev_nbd_cmd_done(void *user_data, int *error)
{
	struct bdev_nbd_io *n = user_data;

	/* Commands of a handle being closed are requeued by the closer. */
	if (!n->conn || n->conn->closing)
		return 1;
	n->cmd_err = *error;
	bdev_nbd_inflight_del(n);
	bdev_nbd_list_append(&n->nbd->reap_head, &n->nbd->reap_tail, n);
	return 1;
}

static void bdev_nbd_wait(struct bdev_nbd_io *n)
{
	struct bdev_nbd *nbd = n->nbd;

	if (nbd->down_since_us &&
	    evloop_now_us() - nbd->down_since_us >= nbd->reconnect_timeout_us) {
		bdev_nbd_finish(n, -EIO);
		return;
	}
	bdev_nbd_list_append(&nbd->wait_head, &nbd->wait_tail, n);
}

/* Sends the io's next command: the whole transfer, the flush after a write needing FUA, or the
 * next chunk of a zeroing / deallocation. */
static void bdev_nbd_issue(struct bdev_nbd_io *n)
{
	struct bdev_nbd *nbd = n->nbd;
	struct bdev_io *io = n->io;
	nbd_completion_callback cb = {.callback = bdev_nbd_cmd_done, .user_data = n};
	uint64_t bs = nbd->block_size, off = io->offset_blocks * bs, len = io->num_blocks * bs;
	struct bdev_nbd_conn *c = bdev_nbd_pick(nbd);
	bool fua = io->flags & BDEV_IO_F_FUA;
	uint32_t flags = fua && nbd->can_fua ? LIBNBD_CMD_FLAG_FUA : 0;
	int64_t cookie = 0;

	if (!c) {
		bdev_nbd_wait(n);
		return;
	}
	n->cmd_err = 0;
	n->sent_on = c;
	bdev_nbd_inflight_add(c, n);
	switch (io->type) {
	case BDEV_IO_READ:
		cookie = nbd_aio_pread(c->h, n->bounce ? n->bounce : io->iov[0].iov_base, len, off,
				       cb, 0);
		break;
	case BDEV_IO_WRITE:
		if (n->flush_stage)
			cookie = nbd_aio_flush(c->h, cb, 0);
		else
			cookie = nbd_aio_pwrite(c->h,
						n->bounce ? n->bounce : io->iov[0].iov_base, len,
						off, cb, flags);
		break;
	case BDEV_IO_FLUSH:
		cookie = nbd_aio_flush(c->h, cb, 0);
		break;
	case BDEV_IO_WRITE_ZEROES: {
		uint64_t left = len - n->done_bytes;

		if (n->flush_stage) {
			cookie = nbd_aio_flush(c->h, cb, 0);
		} else if (nbd->can_zero) {
			uint64_t chunk = left < BDEV_NBD_ZERO_CHUNK ? left : BDEV_NBD_ZERO_CHUNK;

			/* NO_HOLE: Write Zeroes keeps the blocks allocated (DEAC is not asked). */
			cookie = nbd_aio_zero(c->h, chunk, off + n->done_bytes, cb,
					      flags | LIBNBD_CMD_FLAG_NO_HOLE);
		} else {
			uint64_t chunk = left < BDEV_NBD_ZERO_BUF ? left : BDEV_NBD_ZERO_BUF;

			cookie = nbd_aio_pwrite(c->h, nbd->zero_buf, chunk, off + n->done_bytes,
						cb, flags);
		}
		break;
	}
	case BDEV_IO_UNMAP: {
		const struct bdev_range *r;
		uint64_t left, chunk;

		/* FUA on a server without it: a flush once every range is done. */
		if (n->flush_stage) {
			cookie = nbd_aio_flush(c->h, cb, 0);
			break;
		}
		r = &io->ranges[n->range];
		left = r->num_blocks * bs - n->done_bytes;
		chunk = left < BDEV_NBD_ZERO_CHUNK ? left : BDEV_NBD_ZERO_CHUNK;
		if (!left) {
			/* An empty range: nothing to send. */
			bdev_nbd_inflight_del(n);
			n->sent_on = NULL;
			bdev_nbd_list_append(&nbd->reap_head, &nbd->reap_tail, n);
			return;
		}
		/* Holes allowed: the server may deallocate, and the range reads back as zeroes
		 * (what deallocation promises our callers), unlike NBD_CMD_TRIM. */
		cookie = nbd_aio_zero(c->h, chunk, r->offset_blocks * bs + n->done_bytes, cb, flags);
		break;
	}
	case BDEV_IO_TYPE_COUNT:
		cookie = -1;
		break;
	}
	if (cookie < 0) {
		int err = nbd_get_errno();
		bool dead = nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h);

		bdev_nbd_inflight_del(n);
		if (dead) {
			bdev_nbd_wait(n);
			bdev_nbd_conn_down(c, nbd_get_error());
			return;
		}
		LOG_ERR(BDEV_LOG, "%s: NBD request refused: %s", nbd->name, nbd_get_error());
		bdev_nbd_finish(n, err == ENOSPC ? -ENOSPC : -EIO);
		return;
	}
	bdev_nbd_conn_rearm(c);
}

/* A command finished: next step of its io, or the io's end. */
static void bdev_nbd_advance(struct bdev_nbd_io *n)
{
	struct bdev_nbd *nbd = n->nbd;
	struct bdev_io *io = n->io;
	uint64_t bs = nbd->block_size;
	bool fua = io->flags & BDEV_IO_F_FUA;
	bool need_flush = fua && !nbd->can_fua && nbd->can_flush;

	switch (io->type) {
	case BDEV_IO_WRITE:
		if (need_flush && !n->flush_stage) {
			n->flush_stage = true;
			bdev_nbd_issue(n);
			return;
		}
		break;
	case BDEV_IO_WRITE_ZEROES:
		if (!n->flush_stage) {
			uint64_t len = io->num_blocks * bs, left = len - n->done_bytes;
			uint64_t max = nbd->can_zero ? BDEV_NBD_ZERO_CHUNK : BDEV_NBD_ZERO_BUF;

			n->done_bytes += left < max ? left : max;
			if (n->done_bytes < len) {
				bdev_nbd_issue(n);
				return;
			}
			if (need_flush) {
				n->flush_stage = true;
				bdev_nbd_issue(n);
				return;
			}
		}
		break;
	case BDEV_IO_UNMAP: {
		uint64_t len, left;

		if (n->flush_stage)
			break;
		len = io->ranges[n->range].num_blocks * bs;
		left = len - n->done_bytes;
		n->done_bytes += left < BDEV_NBD_ZERO_CHUNK ? left : BDEV_NBD_ZERO_CHUNK;
		if (n->done_bytes >= len) {
			n->range++;
			n->done_bytes = 0;
		}
		if (n->range < io->nranges) {
			bdev_nbd_issue(n);
			return;
		}
		if (need_flush) {
			n->flush_stage = true;
			bdev_nbd_issue(n);
			return;
		}
		break;
	}
	default:
		break;
	}
	bdev_nbd_finish(n, 0);
}

/* Handles the commands the callbacks finished. A command that failed because its connection
 * died is sent again once a connection is up: the server never acknowledged it. */
static void bdev_nbd_reap(struct bdev_nbd *nbd)
{
	struct bdev_nbd_io *n;

	if (nbd->reaping)
		return;
	nbd->reaping = true;
	while ((n = nbd->reap_head)) {
		struct bdev_nbd_conn *c = n->sent_on;

		nbd->reap_head = n->next;
		if (!nbd->reap_head)
			nbd->reap_tail = NULL;
		if (n->cmd_err && c &&
		    (n->cmd_err == ENOTCONN || !c->h || nbd_aio_is_dead(c->h) ||
		     nbd_aio_is_closed(c->h))) {
			bdev_nbd_wait(n);
			continue;
		}
		if (n->cmd_err) {
			LOG_ERR(BDEV_LOG, "%s: NBD command failed: %s", nbd->name,
				strerror(n->cmd_err));
			bdev_nbd_finish(n, n->cmd_err == ENOSPC ? -ENOSPC : -EIO);
			continue;
		}
		bdev_nbd_advance(n);
	}
	nbd->reaping = false;
	if (nbd->wait_head && bdev_nbd_any_ready(nbd))
		bdev_nbd_kick_waiters(nbd);
}

/* Sends what waited for a connection. */
static void bdev_nbd_kick_waiters(struct bdev_nbd *nbd)
{
	struct bdev_nbd_io *n = nbd->wait_head, *next;

	nbd->wait_head = nbd->wait_tail = NULL;
	for (; n; n = next) {
		next = n->next;
		bdev_nbd_issue(n);
	}
}

static void bdev_nbd_expire(void *arg)
{
	struct bdev_nbd *nbd = arg;
	struct bdev_nbd_io *n, *next;
	unsigned int failed = 0;

	nbd->expire = NULL;
	n = nbd->wait_head;
	nbd->wait_head = nbd->wait_tail = NULL;
	for (; n; n = next) {
		next = n->next;
		bdev_nbd_finish(n, -EIO);
		failed++;
	}
	if (failed)
		LOG_ERR(BDEV_LOG, "%s: NBD server unreachable for %" PRIu64 " s: %u I/O failed",
			nbd->name, nbd->reconnect_timeout_us / 1000000, failed);
}

static bool bdev_nbd_any_ready(const struct bdev_nbd *nbd)
{
	for (unsigned int i = 0; i < nbd->nconns; i++)
		if (nbd->conns[i].state == BDEV_NBD_READY)
			return true;
	return false;
}

static void bdev_nbd_retry(void *arg)
{
	struct bdev_nbd_conn *c = arg;

	c->retry = NULL;
	bdev_nbd_conn_start(c);
}

static void bdev_nbd_create_finish(struct bdev_nbd *nbd, int rc, const char *message);

/* Closes the connection's handle; its unfinished commands wait for another connection. Then a
 * reconnect attempt is scheduled (not during creation: a first connection that fails fails the
 * creation). */
static void bdev_nbd_conn_down(struct bdev_nbd_conn *c, const char *reason)
{
	struct bdev_nbd *nbd = c->nbd;
	struct bdev_nbd_io *n, *next;
	bool was_ready = c->state == BDEV_NBD_READY;
	char why[256];

	/* A copy: libnbd's error string (often the reason) does not survive nbd_close. */
	snprintf(why, sizeof(why), "%s", reason ? reason : "closed");

	if (c->watch) {
		evloop_watch_remove(c->watch);
		c->watch = NULL;
	}
	if (c->h) {
		c->closing = true;
		nbd_close(c->h);
		c->h = NULL;
		c->closing = false;
	}
	c->state = BDEV_NBD_DOWN;
	c->events = 0;
	n = c->inflight;
	c->inflight = NULL;
	for (; n; n = next) {
		next = n->in_next;
		n->in_prev = n->in_next = NULL;
		n->conn = NULL;
		bdev_nbd_wait(n);
	}
	/* Another connection may carry them at once. */
	if (nbd->wait_head && bdev_nbd_any_ready(nbd))
		bdev_nbd_kick_waiters(nbd);
	if (!nbd->bdev) {
		bdev_nbd_create_finish(nbd, -ECONNREFUSED, why);
		return;
	}
	if (was_ready) {
		nbd->disconnects++;
		LOG_WARN(BDEV_LOG, "%s: NBD connection %u to %s lost (%s): reconnecting",
			 nbd->name, c->idx, nbd->uri, why);
	}
	if (!bdev_nbd_any_ready(nbd) && !nbd->down_since_us) {
		nbd->down_since_us = evloop_now_us();
		if (!nbd->expire)
			nbd->expire = evloop_timer_add(nbd->loop, nbd->reconnect_timeout_us,
						       bdev_nbd_expire, nbd);
	}
	if (!c->retry) {
		c->retry = evloop_timer_add(nbd->loop, c->retry_us, bdev_nbd_retry, c);
		if (!c->retry)
			LOG_ERR(BDEV_LOG, "%s: cannot arm the NBD reconnect timer", nbd->name);
		c->retry_us = c->retry_us * 2 > BDEV_NBD_RETRY_MAX_US ? BDEV_NBD_RETRY_MAX_US
								      : c->retry_us * 2;
	}
}

static int bdev_nbd_register(struct bdev_nbd_conn *c, char *err, size_t errlen);

/* The handshake is over on connection c. */
static void bdev_nbd_conn_ready(struct bdev_nbd_conn *c)
{
	struct bdev_nbd *nbd = c->nbd;
	char err[256];
	int64_t size;

	c->state = BDEV_NBD_READY;
	c->retry_us = BDEV_NBD_RETRY_MIN_US;
	if (c->was_ready)
		nbd->reconnects++;
	c->was_ready = true;
	if (!nbd->bdev) {
		int rc = bdev_nbd_register(c, err, sizeof(err));

		bdev_nbd_create_finish(nbd, rc, rc ? err : NULL);
		if (rc)
			return;
		/* The other connections, now that the server said it allows them. */
		for (unsigned int i = 1; i < nbd->nconns; i++)
			bdev_nbd_conn_start(&nbd->conns[i]);
		return;
	}
	/* NBD tells the size only at the handshake: a server that came back bigger grows the
	 * bdev (and, through its resize callback, the namespace and the host's view). A smaller
	 * one cannot shrink it under the host: I/O past its end fails at the server. */
	size = nbd_get_size(c->h);
	if (size >= 0 && (uint64_t)size > nbd->size &&
	    (uint64_t)size / nbd->block_size > nbd->size / nbd->block_size) {
		LOG_INFO(BDEV_LOG, "%s: export grew from %" PRIu64 " to %" PRId64 " bytes",
			 nbd->name, nbd->size, size);
		nbd->size = (uint64_t)size;
		bdev_notify_resize(nbd->bdev, nbd->size / nbd->block_size);
	} else if (size >= 0 && (uint64_t)size != nbd->size) {
		LOG_WARN(BDEV_LOG, "%s: export size changed from %" PRIu64 " to %" PRId64
				   " bytes; a namespace does not shrink: it keeps its size",
			 nbd->name, nbd->size, size);
	}
	if (nbd->down_since_us) {
		LOG_INFO(BDEV_LOG, "%s: NBD server %s back after %" PRIu64 " ms", nbd->name,
			 nbd->uri, (evloop_now_us() - nbd->down_since_us) / 1000);
		nbd->down_since_us = 0;
		if (nbd->expire) {
			evloop_timer_cancel(nbd->expire);
			nbd->expire = NULL;
		}
	}
	bdev_nbd_kick_waiters(nbd);
}

/* Drives the connection after libnbd did something on it. */
static void bdev_nbd_conn_check(struct bdev_nbd_conn *c)
{
	if (!c->h)
		return;
	if (nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h)) {
		char why[256];

		snprintf(why, sizeof(why), "%s", nbd_get_error() ? nbd_get_error() : "closed");
		bdev_nbd_conn_down(c, why);
		return;
	}
	if (c->state == BDEV_NBD_CONNECTING && nbd_aio_is_ready(c->h))
		bdev_nbd_conn_ready(c);
	bdev_nbd_conn_rearm(c);
}

static void bdev_nbd_conn_event(int fd, uint32_t events, void *arg)
{
	struct bdev_nbd_conn *c = arg;
	struct bdev_nbd *nbd = c->nbd;
	int rc = 0;

	(void)fd;
	if (!c->h)
		return;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		rc = nbd_aio_notify_read(c->h);
	if (!rc && c->h && (events & EPOLLOUT) &&
	    (nbd_aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE))
		rc = nbd_aio_notify_write(c->h);
	(void)rc; /* a failure leaves the handle dead: conn_check sees it */
	/* A dead connection first: what it aborted then waits for another one. */
	bdev_nbd_conn_check(c);
	bdev_nbd_reap(nbd);
}

/* Opens a handle and starts its handshake. */
static void bdev_nbd_conn_start(struct bdev_nbd_conn *c)
{
	struct bdev_nbd *nbd = c->nbd;
	char why[256];

	c->h = nbd_create();
	if (!c->h) {
		snprintf(why, sizeof(why), "nbd_create: %s", nbd_get_error());
		goto fail;
	}
	/* The operator's URI may name a TLS key file (tls-psk-file=, tls-certificates=). */
	if (nbd_set_uri_allow_local_file(c->h, true) ||
	    nbd_set_handle_name(c->h, nbd->name) ||
	    nbd_aio_connect_uri(c->h, nbd->uri)) {
		snprintf(why, sizeof(why), "%s", nbd_get_error());
		goto fail;
	}
	c->fd = nbd_aio_get_fd(c->h);
	if (c->fd < 0) {
		snprintf(why, sizeof(why), "%s", nbd_get_error() ? nbd_get_error() : "no socket");
		goto fail;
	}
	c->state = BDEV_NBD_CONNECTING;
	c->events = EPOLLIN;
	c->watch = evloop_watch_add(nbd->loop, c->fd, EPOLLIN, bdev_nbd_conn_event, c);
	if (!c->watch) {
		snprintf(why, sizeof(why), "cannot watch the NBD socket");
		goto fail;
	}
	bdev_nbd_conn_check(c);
	return;

fail:
	bdev_nbd_conn_down(c, why);
}

static void bdev_nbd_destruct(struct bdev *bdev);
static void bdev_nbd_get_info(const struct bdev *bdev, struct bdev_info *info);

static const struct bdev_module_ops bdev_nbd_ops = {
    .module_name = "nbd",
    .product_name = "NBD disk",
    .io_ctx_size = sizeof(struct bdev_nbd_io),
    .io_types = (1u << BDEV_IO_READ) | (1u << BDEV_IO_WRITE) | (1u << BDEV_IO_FLUSH) |
		(1u << BDEV_IO_WRITE_ZEROES) | (1u << BDEV_IO_UNMAP),
    .has_write_cache = true,
    .destruct = bdev_nbd_destruct,
    .submit = bdev_nbd_submit,
    .get_info = bdev_nbd_get_info,
};

/* Reads what the server offers and registers the bdev. */
static int bdev_nbd_register(struct bdev_nbd_conn *c, char *err, size_t errlen)
{
	struct bdev_nbd *nbd = c->nbd;
	int64_t size = nbd_get_size(c->h), min_bs;
	struct bdev *b;
	int rc;

	if (size < 0) {
		snprintf(err, errlen, "cannot read the export size: %s", nbd_get_error());
		return -EIO;
	}
	if (nbd_is_read_only(c->h) == 1) {
		snprintf(err, errlen, "the export %s is read-only", nbd->uri);
		return -EROFS;
	}
	min_bs = nbd_get_block_size(c->h, LIBNBD_SIZE_MINIMUM);
	if (min_bs > 0 && (uint64_t)min_bs > nbd->block_size) {
		snprintf(err, errlen,
			 "the server's minimum block size is %" PRId64
			 " bytes, larger than block_size %u",
			 min_bs, nbd->block_size);
		return -EINVAL;
	}
	if ((uint64_t)size < nbd->block_size) {
		snprintf(err, errlen, "the export holds %" PRId64 " bytes, less than one block",
			 size);
		return -EINVAL;
	}
	nbd->size = (uint64_t)size;
	nbd->can_flush = nbd_can_flush(c->h) == 1;
	nbd->can_fua = nbd_can_fua(c->h) == 1;
	nbd->can_zero = nbd_can_zero(c->h) == 1;
	nbd->multi_conn = nbd_can_multi_conn(c->h) == 1;
	/* Without multi-conn a flush on one connection says nothing of writes on another, and
	 * the server may not even keep their caches coherent: one connection. */
	nbd->nconns = nbd->multi_conn ? nbd->want_conns : 1;
	if (!nbd->can_zero) {
		nbd->zero_buf = calloc(1, BDEV_NBD_ZERO_BUF);
		if (!nbd->zero_buf) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	rc = bdev_alloc(nbd->name, &bdev_nbd_ops, nbd->block_size, nbd->size / nbd->block_size,
			nbd->has_uuid ? nbd->uuid : NULL, &b);
	if (rc) {
		snprintf(err, errlen, "%s", rc == -EEXIST ? "a bdev of that name exists"
							  : strerror(-rc));
		return rc;
	}
	/* Without NBD_CMD_FLUSH the server has no volatile cache to flush: writes are durable
	 * when acknowledged. Without WRITE_ZEROES deallocation has no zeroing form (TRIM may
	 * leave old data): not offered; Write Zeroes then writes zeroes. */
	b->has_write_cache = nbd->can_flush;
	b->write_cache = nbd->can_flush;
	if (!nbd->can_zero)
		b->io_types &= ~(1u << BDEV_IO_UNMAP);
	b->ctx = nbd;
	rc = bdev_register(b);
	if (rc) {
		bdev_free(b);
		snprintf(err, errlen, "a bdev of that name exists");
		return rc;
	}
	nbd->bdev = b;
	LOG_INFO(BDEV_LOG,
		 "%s: NBD export %s, %" PRIu64 " bytes, flush %s, fua %s, zero %s, %u connection(s)%s",
		 nbd->name, nbd->uri, nbd->size, nbd->can_flush ? "yes" : "no",
		 nbd->can_fua ? "yes" : "no", nbd->can_zero ? "yes" : "no", nbd->nconns,
		 nbd->multi_conn ? " (multi-conn)" : "");
	return 0;
}

/* ---- lifetime ---- */

static void bdev_nbd_free(struct bdev_nbd *nbd)
{
	for (unsigned int i = 0; i < BDEV_NBD_MAX_CONNECTIONS; i++) {
		struct bdev_nbd_conn *c = &nbd->conns[i];

		if (c->retry)
			evloop_timer_cancel(c->retry);
		if (c->watch)
			evloop_watch_remove(c->watch);
		if (c->h) {
			/* Nothing is in flight (no channel is left): say goodbye, then close. */
			c->closing = true;
			if (c->state == BDEV_NBD_READY)
				nbd_aio_disconnect(c->h, 0);
			nbd_close(c->h);
		}
	}
	if (nbd->expire)
		evloop_timer_cancel(nbd->expire);
	free(nbd->zero_buf);
	free(nbd->uri);
	free(nbd);
}

static void bdev_nbd_destruct(struct bdev *bdev)
{
	bdev_nbd_free(bdev->ctx);
}

static void bdev_nbd_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_nbd *nbd = bdev->ctx;

	info->uri = nbd->uri;
	info->nbd_connections = nbd->want_conns;
	info->nbd_reconnect_timeout = (uint32_t)(nbd->reconnect_timeout_us / 1000000);
	info->nbd_multi_conn = nbd->multi_conn;
	info->nbd_disconnects = nbd->disconnects;
	info->nbd_reconnects = nbd->reconnects;
	for (unsigned int i = 0; i < nbd->nconns; i++)
		info->nbd_connected += nbd->conns[i].state == BDEV_NBD_READY;
}

/* Ends a creation: done runs once, then a failed object is freed. */
static void bdev_nbd_create_finish(struct bdev_nbd *nbd, int rc, const char *message)
{
	struct bdev_nbd **pp;
	bdev_create_cb done = nbd->create_done;
	char msg[320];

	for (pp = &bdev_nbd_pending; *pp; pp = &(*pp)->next_pending) {
		if (*pp == nbd) {
			*pp = nbd->next_pending;
			break;
		}
	}
	nbd->create_done = NULL;
	if (rc) {
		snprintf(msg, sizeof(msg), "NBD export %s: %s", nbd->uri,
			 message ? message : strerror(-rc));
		LOG_ERR(BDEV_LOG, "%s: %s", nbd->name, msg);
	}
	if (done)
		done(nbd->create_arg, rc, rc ? msg : NULL, rc ? NULL : nbd->bdev);
	if (rc) {
		/* Never registered, no I/O: freed in a deferred call, since this may run inside
		 * the handle's own event callback. */
		if (evloop_defer(nbd->loop, (evloop_fn)bdev_nbd_free, nbd)) {
			LOG_ERR(BDEV_LOG, "%s: out of memory freeing a failed creation", nbd->name);
			bdev_nbd_free(nbd);
		}
	}
}

int bdev_nbd_create(const char *name, const struct bdev_nbd_opts *opts, struct evloop *loop,
		    bdev_create_cb done, void *arg)
{
	struct bdev_nbd *nbd, *p;
	struct nbd_handle *probe;
	size_t len;

	if (!name || !opts || !opts->uri || !loop || !done)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len > BDEV_NAME_MAX)
		return -EINVAL;
	if (opts->block_size && opts->block_size != 512 && opts->block_size != 4096)
		return -EINVAL;
	if (opts->num_connections > BDEV_NBD_MAX_CONNECTIONS)
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	for (p = bdev_nbd_pending; p; p = p->next_pending)
		if (!strcmp(p->name, name))
			return -EEXIST;
	/* Refuse what libnbd cannot parse now, with a synchronous error, rather than later. */
	probe = nbd_create();
	if (!probe)
		return -ENOMEM;
	if (!nbd_supports_uri(probe)) {
		nbd_close(probe);
		return -ENOTSUP;
	}
	nbd_close(probe);
	if (strncmp(opts->uri, "nbd://", 6) && strncmp(opts->uri, "nbds://", 7) &&
	    strncmp(opts->uri, "nbd+unix://", 11) && strncmp(opts->uri, "nbds+unix://", 12) &&
	    strncmp(opts->uri, "nbd+vsock://", 12) && strncmp(opts->uri, "nbds+vsock://", 13))
		return -EINVAL;
	nbd = calloc(1, sizeof(*nbd));
	if (!nbd)
		return -ENOMEM;
	nbd->uri = strdup(opts->uri);
	if (!nbd->uri) {
		free(nbd);
		return -ENOMEM;
	}
	memcpy(nbd->name, name, len + 1);
	nbd->loop = loop;
	nbd->block_size = opts->block_size ? opts->block_size : 512;
	nbd->want_conns = opts->num_connections ? opts->num_connections : BDEV_NBD_DEFAULT_CONNS;
	nbd->nconns = 1;
	nbd->reconnect_timeout_us =
	    (uint64_t)(opts->reconnect_timeout ? opts->reconnect_timeout
					       : BDEV_NBD_DEFAULT_RECONNECT_S) * 1000000;
	if (opts->uuid) {
		memcpy(nbd->uuid, opts->uuid, BDEV_UUID_LEN);
		nbd->has_uuid = true;
	}
	for (unsigned int i = 0; i < BDEV_NBD_MAX_CONNECTIONS; i++) {
		nbd->conns[i].nbd = nbd;
		nbd->conns[i].idx = i;
		nbd->conns[i].fd = -1;
		nbd->conns[i].retry_us = BDEV_NBD_RETRY_MIN_US;
	}
	nbd->create_done = done;
	nbd->create_arg = arg;
	nbd->next_pending = bdev_nbd_pending;
	bdev_nbd_pending = nbd;
	/* Started from the loop, so done never runs inside this call. */
	if (evloop_defer(loop, (evloop_fn)bdev_nbd_conn_start, &nbd->conns[0])) {
		bdev_nbd_pending = nbd->next_pending;
		free(nbd->uri);
		free(nbd);
		return -ENOMEM;
	}
	return 0;
}

void bdev_nbd_cancel_creates(void)
{
	while (bdev_nbd_pending)
		bdev_nbd_create_finish(bdev_nbd_pending, -ECANCELED, "creation cancelled");
}
