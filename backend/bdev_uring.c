/* backend/bdev_uring.c - file / block device bdev through io_uring (liburing): one ring per
 * channel, its completions signalled on the channel's eventfd (io_uring_register_eventfd), the
 * file registered with the ring, submissions batched, and flush, FUA, write zeroes and
 * deallocation (fallocate) all asynchronous. Same file rules as aio (backend/bdev_file.h). */
#include "backend/bdev_file.h"
#include "backend/bdev_internal.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BDEV_URING_DEFAULT_QD 128
#define BDEV_URING_MAX_QD 4096
/* Submit at once when this many SQEs wait; fewer go out at the next issue/poll. */
#define BDEV_URING_BATCH 16

struct bdev_uring {
	struct bdev_file f;
	uint32_t queue_depth;
};

struct bdev_uring_chan {
	struct io_uring ring;
	bool fixed_file; /* f.fd is registered as fixed file 0 */
	uint32_t unsubmitted;
	uint32_t inflight;
	struct bdev_io *wait_head; /* no SQE free: waiting for completions */
	struct bdev_io *wait_tail;
	struct bdev_file_bounces bounces;
};

/* Per-io context, in bdev_io.driver_ctx. */
struct bdev_uring_io {
	struct bdev_io *wait_next;
	void *bounce;
	size_t bounce_len;
	size_t expect;	  /* bytes the transfer must move (0: not a transfer) */
	uint32_t range;	  /* UNMAP: the next range to issue */
	uint32_t pending; /* SQEs of this io still in the kernel */
	int status;	  /* first error of its SQEs */
};

static struct bdev_uring_io *bdev_uring_io(struct bdev_io *io)
{
	return (struct bdev_uring_io *)io->driver_ctx;
}

static void bdev_uring_release(struct bdev_uring_chan *c, struct bdev_io *io)
{
	struct bdev_uring_io *u = bdev_uring_io(io);

	if (u->bounce) {
		bdev_file_bounce_put(&c->bounces, u->bounce, u->bounce_len);
		u->bounce = NULL;
	}
}

static void bdev_uring_sqe_file(struct bdev_uring_chan *c, struct io_uring_sqe *sqe, int fd)
{
	if (c->fixed_file) {
		sqe->fd = 0;
		sqe->flags |= IOSQE_FIXED_FILE;
	} else {
		sqe->fd = fd;
	}
}

/* Fills the SQEs an io needs (UNMAP: one per range, fallocate with PUNCH_HOLE; FUA on a write
 * zeroes adds a linked fdatasync). Returns 0, or -EAGAIN when the ring has no room (the io then
 * waits, whole, for completions: none of its SQEs was taken). */
static int bdev_uring_prep(struct bdev_uring_chan *c, struct bdev_uring *ur, struct bdev *b,
			   struct bdev_io *io)
{
	struct bdev_uring_io *u = bdev_uring_io(io);
	uint64_t bs = b->block_size, off = io->offset_blocks * bs, len = io->num_blocks * bs;
	unsigned int need = 1, i;
	struct io_uring_sqe *sqe;
	bool fua_sync = false;

	if (io->type == BDEV_IO_UNMAP)
		need = io->nranges;
	if (io->type == BDEV_IO_WRITE_ZEROES && (io->flags & BDEV_IO_F_FUA)) {
		need = 2;
		fua_sync = true;
	}
	if (!need)
		return 0;
	/* At most queue_depth SQEs in the kernel: the CQ ring (twice the SQ) never overflows, so
	 * every completion reaches the ring and signals the eventfd. */
	if (c->inflight + c->unsubmitted + need > ur->queue_depth ||
	    io_uring_sq_space_left(&c->ring) < need)
		return -EAGAIN;
	u->pending = need;
	for (i = 0; i < need; i++) {
		sqe = io_uring_get_sqe(&c->ring);
		switch (io->type) {
		case BDEV_IO_READ:
		case BDEV_IO_WRITE:
			if (u->bounce && io->type == BDEV_IO_WRITE)
				io_uring_prep_write(sqe, 0, u->bounce, (unsigned int)len, off);
			else if (u->bounce)
				io_uring_prep_read(sqe, 0, u->bounce, (unsigned int)len, off);
			else if (io->type == BDEV_IO_WRITE)
				io_uring_prep_writev(sqe, 0, io->iov, (unsigned int)io->iovcnt, off);
			else
				io_uring_prep_readv(sqe, 0, io->iov, (unsigned int)io->iovcnt, off);
			/* FUA: this write durable before it completes. */
			if (io->type == BDEV_IO_WRITE && (io->flags & BDEV_IO_F_FUA))
				sqe->rw_flags = RWF_DSYNC;
			break;
		case BDEV_IO_FLUSH:
			io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
			break;
		case BDEV_IO_WRITE_ZEROES:
			if (i == 0) {
				io_uring_prep_fallocate(sqe, 0,
							FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
							off, len);
				if (fua_sync)
					sqe->flags |= IOSQE_IO_LINK;
			} else {
				io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
			}
			break;
		case BDEV_IO_UNMAP:
			io_uring_prep_fallocate(sqe, 0, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						io->ranges[i].offset_blocks * bs,
						io->ranges[i].num_blocks * bs);
			break;
		case BDEV_IO_TYPE_COUNT:
			break;
		}
		bdev_uring_sqe_file(c, sqe, ur->f.fd);
		io_uring_sqe_set_data(sqe, io);
	}
	c->unsubmitted += need;
	return 0;
}

/* Zeroing and deallocation the file system cannot do with fallocate take the synchronous
 * fallback of bdev_file (written zeroes), as aio does for everything of this kind. */
static int bdev_uring_sync_fallback(struct bdev_uring *ur, struct bdev *b, struct bdev_io *io)
{
	uint64_t bs = b->block_size;
	int rc = 0;

	if (io->type == BDEV_IO_WRITE_ZEROES) {
		rc = bdev_file_zero_range(&ur->f, io->offset_blocks * bs, io->num_blocks * bs);
	} else {
		for (uint32_t i = 0; i < io->nranges && !rc; i++)
			rc = bdev_file_punch(&ur->f, io->ranges[i].offset_blocks * bs,
					     io->ranges[i].num_blocks * bs);
	}
	if (!rc && (io->flags & BDEV_IO_F_FUA))
		rc = bdev_file_fdatasync(&ur->f);
	return rc;
}

static void bdev_uring_flush_sq(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;
	int rc;

	while (c->unsubmitted) {
		rc = io_uring_submit(&c->ring);
		if (rc > 0) {
			c->inflight += (uint32_t)rc;
			c->unsubmitted -= (uint32_t)rc < c->unsubmitted ? (uint32_t)rc : c->unsubmitted;
			continue;
		}
		if (rc == -EINTR)
			continue;
		/* -EAGAIN/-EBUSY: the kernel wants completions reaped first; the eventfd wakes
		 * the channel for them and the next poll submits the rest. */
		if ((rc == -EAGAIN || rc == -EBUSY) && c->inflight)
			return;
		LOG_ERR(BDEV_LOG, "io_uring_submit: %s", strerror(-rc));
		return;
	}
}

static void bdev_uring_wait_push(struct bdev_uring_chan *c, struct bdev_io *io)
{
	bdev_uring_io(io)->wait_next = NULL;
	if (c->wait_tail)
		bdev_uring_io(c->wait_tail)->wait_next = io;
	else
		c->wait_head = io;
	c->wait_tail = io;
}

static void bdev_uring_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev *b = ch->bdev;
	struct bdev_uring *ur = b->ctx;
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring_io *u = bdev_uring_io(io);
	size_t len = io->num_blocks * b->block_size;

	memset(u, 0, sizeof(*u));
	if (io->type == BDEV_IO_TYPE_COUNT) {
		bdev_io_complete(io, -EINVAL);
		return;
	}
	if ((io->type == BDEV_IO_READ || io->type == BDEV_IO_WRITE)) {
		u->expect = len;
		if (len > UINT32_MAX) {
			bdev_io_complete(io, -EINVAL);
			return;
		}
		if (bdev_file_needs_bounce(&ur->f, io)) {
			u->bounce = bdev_file_bounce_get(&c->bounces, len, &u->bounce_len);
			if (!u->bounce) {
				bdev_io_complete(io, -ENOMEM);
				return;
			}
			if (io->type == BDEV_IO_WRITE)
				bdev_iov_to_buf(u->bounce, io->iov, io->iovcnt, len);
		}
	}
	/* Capabilities learned missing: straight to the fallback. */
	if ((io->type == BDEV_IO_WRITE_ZEROES && !bdev_file_cap(&ur->f.zero_range_ok)) ||
	    (io->type == BDEV_IO_UNMAP && !bdev_file_cap(&ur->f.punch_ok))) {
		bdev_io_complete(io, bdev_uring_sync_fallback(ur, b, io));
		return;
	}
	if (io->type == BDEV_IO_UNMAP && !io->nranges) {
		bdev_io_complete(io, 0);
		return;
	}
	/* More ranges than the ring ever holds at once: the synchronous path. */
	if (io->type == BDEV_IO_UNMAP && io->nranges > ur->queue_depth) {
		bdev_io_complete(io, bdev_uring_sync_fallback(ur, b, io));
		return;
	}
	if (c->wait_head || bdev_uring_prep(c, ur, b, io) == -EAGAIN) {
		bdev_uring_wait_push(c, io);
		bdev_uring_flush_sq(ch);
		return;
	}
	if (c->unsubmitted >= BDEV_URING_BATCH)
		bdev_uring_flush_sq(ch);
	else
		bdev_channel_kick(ch);
}

/* Issues what waited for ring space, in order, then submits. */
static void bdev_uring_issue(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring *ur = ch->bdev->ctx;

	while (c->wait_head && bdev_uring_prep(c, ur, ch->bdev, c->wait_head) == 0) {
		c->wait_head = bdev_uring_io(c->wait_head)->wait_next;
		if (!c->wait_head)
			c->wait_tail = NULL;
	}
	bdev_uring_flush_sq(ch);
}

/* One CQE of io. Returns true when it was the io's last. */
static bool bdev_uring_cqe(struct bdev_uring *ur, struct bdev_io *io, int res)
{
	struct bdev_uring_io *u = bdev_uring_io(io);
	int status = 0;

	if (res < 0)
		status = res;
	else if (u->expect && (size_t)res != u->expect)
		status = -EIO; /* short transfer: the file shrank under us */
	if (status && (io->type == BDEV_IO_WRITE_ZEROES || io->type == BDEV_IO_UNMAP) &&
	    (status == -EOPNOTSUPP || status == -EINVAL || status == -ECANCELED)) {
		/* The file system lacks the fallocate mode (or the range is unaligned, or the
		 * linked fdatasync was cancelled with it): the fallback decides, below. */
		if (status == -EOPNOTSUPP) {
			LOG_INFO(BDEV_LOG, "%s: no %s through fallocate: %s", ur->f.filename,
				 io->type == BDEV_IO_UNMAP ? "hole punching" : "zero range",
				 "writing zeroes instead");
			bdev_file_cap_clear(io->type == BDEV_IO_UNMAP ? &ur->f.punch_ok
								     : &ur->f.zero_range_ok);
		}
		status = 1; /* retry synchronously once every SQE is back */
	}
	if (status && !u->status)
		u->status = status;
	return --u->pending == 0;
}

static void bdev_uring_poll(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring *ur = ch->bdev->ctx;
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	io_uring_for_each_cqe(&c->ring, head, cqe)
	{
		struct bdev_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		n++;
		c->inflight--;
		if (!bdev_uring_cqe(ur, io, res))
			continue;
		{
			struct bdev_uring_io *u = bdev_uring_io(io);
			int status = u->status;

			if (status == 1)
				status = bdev_uring_sync_fallback(ur, ch->bdev, io);
			if (!status && io->type == BDEV_IO_READ && u->bounce)
				bdev_buf_to_iov(io->iov, io->iovcnt, u->bounce, u->expect);
			if (status)
				LOG_ERR(BDEV_LOG, "%s: io type %d lba %" PRIu64 ": %s",
					ur->f.filename, (int)io->type, io->offset_blocks,
					strerror(-status));
			bdev_uring_release(c, io);
			bdev_io_complete(io, status);
		}
	}
	io_uring_cq_advance(&c->ring, n);
	/* Reaping freed ring slots: issue what waited for them. */
	bdev_uring_issue(ch);
}

/* ---- channels ---- */

static int bdev_uring_channel_create(struct bdev_channel *ch)
{
	struct bdev_uring *ur = ch->bdev->ctx;
	struct bdev_uring_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = io_uring_queue_init(ur->queue_depth, &c->ring, 0);
	if (rc) {
		LOG_ERR(BDEV_LOG, "%s: io_uring_queue_init(%u): %s", ur->f.filename,
			ur->queue_depth, strerror(-rc));
		free(c);
		return rc;
	}
	/* Completions wake the channel's thread through the channel eventfd. */
	rc = io_uring_register_eventfd(&c->ring, ch->efd);
	if (rc) {
		LOG_ERR(BDEV_LOG, "%s: io_uring_register_eventfd: %s", ur->f.filename,
			strerror(-rc));
		io_uring_queue_exit(&c->ring);
		free(c);
		return rc;
	}
	/* A registered file saves a file-table lookup per request; optional. */
	c->fixed_file = io_uring_register_files(&c->ring, &ur->f.fd, 1) == 0;
	ch->drv = c;
	return 0;
}

static void bdev_uring_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;

	/* The core refuses to destroy a channel with outstanding ios, so nothing is in flight. */
	io_uring_queue_exit(&c->ring);
	bdev_file_bounce_fini(&c->bounces);
	free(c);
}

/* ---- bdev ---- */

static void bdev_uring_free(struct bdev_uring *ur)
{
	bdev_file_close(&ur->f);
	free(ur);
}

static void bdev_uring_destruct(struct bdev *bdev)
{
	bdev_uring_free(bdev->ctx);
}

static void bdev_uring_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_uring *ur = bdev->ctx;

	info->filename = ur->f.filename;
	info->direct_io = ur->f.direct;
}

static const struct bdev_module_ops bdev_uring_ops = {
	.module_name = "uring",
	.product_name = "URING disk",
	.io_ctx_size = sizeof(struct bdev_uring_io),
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = true,
	.destruct = bdev_uring_destruct,
	.channel_create = bdev_uring_channel_create,
	.channel_destroy = bdev_uring_channel_destroy,
	.submit = bdev_uring_submit,
	.issue = bdev_uring_issue,
	.poll = bdev_uring_poll,
	.get_info = bdev_uring_get_info,
};

int bdev_uring_create(const char *name, const struct bdev_aio_opts *opts, struct bdev **out)
{
	struct bdev_uring *ur = calloc(1, sizeof(*ur));
	uint64_t size = 0;
	bool created = false;
	uint32_t bs;
	int rc;

	if (!ur)
		return -ENOMEM;
	rc = bdev_file_setup(&ur->f, name, opts, BDEV_URING_MAX_QD, &bs, &size, &created);
	if (rc) {
		free(ur);
		return rc;
	}
	ur->queue_depth = opts->queue_depth ? opts->queue_depth : BDEV_URING_DEFAULT_QD;
	rc = bdev_file_register(name, &bdev_uring_ops, &ur->f, ur, bs, size, opts, ur->queue_depth,
				"io_uring", created, out);
	if (rc)
		bdev_uring_free(ur);
	return rc;
}
