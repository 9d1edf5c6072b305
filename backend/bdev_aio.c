/* backend/bdev_aio.c - file / block device bdev through libaio: O_DIRECT when possible, batched
 * io_submit, completions signalled on the channel eventfd, real flush/FUA, hole punching. */
#include "backend/bdev_file.h"
#include "backend/bdev_internal.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libaio.h>
#include <linux/fs.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define BDEV_AIO_DEFAULT_QD 128
#define BDEV_AIO_MAX_QD 4096
/* Submit at once when this many iocbs wait; fewer go out at the next poll (one eventfd kick). */
#define BDEV_AIO_BATCH 16

struct bdev_aio {
	struct bdev_file f;
	uint32_t queue_depth;
	bool fdsync_async; /* IOCB_CMD_FDSYNC accepted by the kernel (learned, atomic) */
};

struct bdev_aio_chan {
	io_context_t ctx;
	struct io_event *events;   /* queue_depth */
	struct iocb **batch;	   /* queue_depth */
	struct bdev_io *pend_head; /* prepared, not yet given to io_submit */
	struct bdev_io *pend_tail;
	uint32_t npending;
	uint32_t inflight; /* in the kernel */
	struct bdev_file_bounces bounces;
};

/* Per-io context, in bdev_io.driver_ctx. */
struct bdev_aio_io {
	struct iocb iocb;
	struct bdev_io *pend_next;
	void *bounce;
	size_t bounce_len;
	size_t expect; /* bytes the transfer must move */
};

static struct bdev_aio_io *bdev_aio_io(struct bdev_io *io)
{
	return (struct bdev_aio_io *)io->driver_ctx;
}

/* WRITE_ZEROES and UNMAP: fallocate has no asynchronous form, so these run here on the channel
 * thread and complete through the queue like everything else. */
static int bdev_aio_sync_op(struct bdev *b, struct bdev_io *io)
{
	struct bdev_aio *a = b->ctx;
	uint64_t bs = b->block_size;
	uint32_t i;
	int rc = 0;

	if (io->type == BDEV_IO_WRITE_ZEROES) {
		rc = bdev_file_zero_range(&a->f, io->offset_blocks * bs, io->num_blocks * bs);
	} else {
		for (i = 0; i < io->nranges && !rc; i++)
			rc = bdev_file_punch(&a->f, io->ranges[i].offset_blocks * bs,
					    io->ranges[i].num_blocks * bs);
	}
	if (!rc && (io->flags & BDEV_IO_F_FUA))
		rc = bdev_file_fdatasync(&a->f);
	return rc;
}

/* ---- submission ---- */

static void bdev_aio_pend_pop(struct bdev_aio_chan *c)
{
	struct bdev_io *io = c->pend_head;

	c->pend_head = bdev_aio_io(io)->pend_next;
	if (!c->pend_head)
		c->pend_tail = NULL;
	c->npending--;
}

static void bdev_aio_release(struct bdev_aio_chan *c, struct bdev_io *io)
{
	struct bdev_aio_io *aio = bdev_aio_io(io);

	if (aio->bounce) {
		bdev_file_bounce_put(&c->bounces, aio->bounce, aio->bounce_len);
		aio->bounce = NULL;
	}
}

/* The head of the pending list was refused by io_submit with rc (< 0). */
static void bdev_aio_refused(struct bdev_channel *ch, int rc)
{
	struct bdev_aio_chan *c = ch->drv;
	struct bdev_aio *a = ch->bdev->ctx;
	struct bdev_io *io = c->pend_head;

	bdev_aio_pend_pop(c);
	bdev_aio_release(c, io);
	if (io->type == BDEV_IO_FLUSH && rc == -EINVAL) {
		/* Kernels before 4.18 have no aio fdsync: flush synchronously from now on. */
		LOG_INFO(BDEV_LOG, "%s: no asynchronous fdsync: flushing synchronously",
			 a->f.filename);
		bdev_file_cap_clear(&a->fdsync_async);
		rc = bdev_file_fdatasync(&a->f);
	} else {
		LOG_ERR(BDEV_LOG, "%s: io_submit: %s", a->f.filename, strerror(-rc));
	}
	bdev_io_complete(io, rc);
}

/* Gives pending iocbs to the kernel, as many as the queue depth allows, in batches. */
static void bdev_aio_flush_pending(struct bdev_channel *ch)
{
	struct bdev_aio_chan *c = ch->drv;
	struct bdev_aio *a = ch->bdev->ctx;
	struct bdev_io *io;
	uint32_t n, i;
	int rc;

	while (c->npending && c->inflight < a->queue_depth) {
		n = a->queue_depth - c->inflight;
		if (n > c->npending)
			n = c->npending;
		for (i = 0, io = c->pend_head; i < n; i++, io = bdev_aio_io(io)->pend_next)
			c->batch[i] = &bdev_aio_io(io)->iocb;
		rc = io_submit(c->ctx, (long)n, c->batch);
		if (rc > 0) {
			for (i = 0; i < (uint32_t)rc; i++)
				bdev_aio_pend_pop(c);
			c->inflight += (uint32_t)rc;
			continue;
		}
		if (rc == -EAGAIN && c->inflight > 0)
			break; /* retried when the next completion wakes the channel */
		bdev_aio_refused(ch, rc ? rc : -EIO);
	}
}

static void bdev_aio_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev *b = ch->bdev;
	struct bdev_aio *a = b->ctx;
	struct bdev_aio_chan *c = ch->drv;
	struct bdev_aio_io *aio = bdev_aio_io(io);
	uint64_t off = io->offset_blocks * b->block_size;
	size_t len = io->num_blocks * b->block_size;

	aio->bounce = NULL;
	aio->pend_next = NULL;
	aio->expect = 0;
	switch (io->type) {
	case BDEV_IO_READ:
	case BDEV_IO_WRITE:
		aio->expect = len;
		if (bdev_file_needs_bounce(&a->f, io)) {
			aio->bounce = bdev_file_bounce_get(&c->bounces, len, &aio->bounce_len);
			if (!aio->bounce) {
				bdev_io_complete(io, -ENOMEM);
				return;
			}
			if (io->type == BDEV_IO_WRITE) {
				bdev_iov_to_buf(aio->bounce, io->iov, io->iovcnt, len);
				io_prep_pwrite(&aio->iocb, a->f.fd, aio->bounce, len, (long long)off);
			} else {
				io_prep_pread(&aio->iocb, a->f.fd, aio->bounce, len, (long long)off);
			}
		} else if (io->type == BDEV_IO_WRITE) {
			/* The kernel copies the iovec array at io_submit time. */
			io_prep_pwritev(&aio->iocb, a->f.fd, (struct iovec *)io->iov, io->iovcnt,
					(long long)off);
		} else {
			io_prep_preadv(&aio->iocb, a->f.fd, (struct iovec *)io->iov, io->iovcnt,
				       (long long)off);
		}
		/* FUA: RWF_DSYNC makes this one write durable before it completes (Linux 4.13). */
		if (io->type == BDEV_IO_WRITE && (io->flags & BDEV_IO_F_FUA))
			aio->iocb.aio_rw_flags = RWF_DSYNC;
		break;
	case BDEV_IO_FLUSH:
		if (!bdev_file_cap(&a->fdsync_async)) {
			bdev_io_complete(io, bdev_file_fdatasync(&a->f));
			return;
		}
		io_prep_fdsync(&aio->iocb, a->f.fd);
		break;
	case BDEV_IO_WRITE_ZEROES:
	case BDEV_IO_UNMAP:
		bdev_io_complete(io, bdev_aio_sync_op(b, io));
		return;
	case BDEV_IO_TYPE_COUNT:
		bdev_io_complete(io, -EINVAL);
		return;
	}
	aio->iocb.data = io;
	io_set_eventfd(&aio->iocb, ch->efd);
	if (c->pend_tail)
		bdev_aio_io(c->pend_tail)->pend_next = io;
	else
		c->pend_head = io;
	c->pend_tail = io;
	c->npending++;
	if (c->npending >= BDEV_AIO_BATCH)
		bdev_aio_flush_pending(ch);
	else
		bdev_channel_kick(ch);
}

/* ---- completion ---- */

/* Reaps what finished; returns how many. */
static int bdev_aio_reap(struct bdev_channel *ch)
{
	struct bdev_aio_chan *c = ch->drv;
	struct bdev_aio *a = ch->bdev->ctx;
	struct timespec zero = {0, 0};
	int n, i, total = 0;

	do {
		n = io_getevents(c->ctx, 0, (long)a->queue_depth, c->events, &zero);
		if (n < 0) {
			if (n != -EINTR)
				LOG_ERR(BDEV_LOG, "%s: io_getevents: %s", a->f.filename,
					strerror(-n));
			return total;
		}
		total += n;
		for (i = 0; i < n; i++) {
			struct bdev_io *io = c->events[i].data;
			struct bdev_aio_io *aio = bdev_aio_io(io);
			long res = (long)c->events[i].res;
			int status = 0;

			if (res < 0)
				status = (int)res;
			else if ((size_t)res != aio->expect)
				status = -EIO; /* short transfer: the file shrank under us */
			if (!status && io->type == BDEV_IO_READ && aio->bounce)
				bdev_buf_to_iov(io->iov, io->iovcnt, aio->bounce, aio->expect);
			if (status)
				LOG_ERR(BDEV_LOG, "%s: io type %d lba %" PRIu64 ": result %ld",
					a->f.filename, (int)io->type, io->offset_blocks, res);
			bdev_aio_release(c, io);
			c->inflight--;
			bdev_io_complete(io, status);
		}
	} while (n == (int)a->queue_depth);
	return total;
}

static void bdev_aio_poll(struct bdev_channel *ch)
{
	/* The kernel wrote the eventfd for what this reaps (io_set_eventfd): take those signals
	 * and reap again, until a reap after the read finds nothing. Left unread, the fd stays
	 * readable and the channel's thread never sleeps again. */
	while (bdev_aio_reap(ch) > 0)
		bdev_channel_take_signal(ch);
	/* Reaping freed queue slots: issue what waited for them. */
	bdev_aio_flush_pending(ch);
}

/* ---- channels ---- */

static int bdev_aio_channel_create(struct bdev_channel *ch)
{
	struct bdev_aio *a = ch->bdev->ctx;
	struct bdev_aio_chan *c;
	int rc;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->events = calloc(a->queue_depth, sizeof(*c->events));
	c->batch = calloc(a->queue_depth, sizeof(*c->batch));
	if (!c->events || !c->batch) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = io_setup((int)a->queue_depth, &c->ctx);
	if (rc) {
		LOG_ERR(BDEV_LOG, "%s: io_setup(%u): %s", a->f.filename, a->queue_depth,
			strerror(-rc));
		goto out_free;
	}
	ch->drv = c;
	return 0;

out_free:
	free(c->batch);
	free(c->events);
	free(c);
	return rc;
}

static void bdev_aio_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_aio_chan *c = ch->drv;

	/* The core refuses to destroy a channel with outstanding ios, so nothing is in flight. */
	io_destroy(c->ctx);
	bdev_file_bounce_fini(&c->bounces);
	free(c->batch);
	free(c->events);
	free(c);
}

/* ---- bdev ---- */

static void bdev_aio_free(struct bdev_aio *a)
{
	bdev_file_close(&a->f);
	free(a);
}

static void bdev_aio_destruct(struct bdev *bdev)
{
	bdev_aio_free(bdev->ctx);
}

static void bdev_aio_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_aio *a = bdev->ctx;

	info->filename = a->f.filename;
	info->direct_io = a->f.direct;
}

static const struct bdev_module_ops bdev_aio_ops = {
	.module_name = "aio",
	.product_name = "AIO disk",
	.io_ctx_size = sizeof(struct bdev_aio_io),
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = true,
	.destruct = bdev_aio_destruct,
	.channel_create = bdev_aio_channel_create,
	.channel_destroy = bdev_aio_channel_destroy,
	.submit = bdev_aio_submit,
	.issue = bdev_aio_flush_pending,
	.poll = bdev_aio_poll,
	.get_info = bdev_aio_get_info,
};

int bdev_aio_create(const char *name, const struct bdev_aio_opts *opts, struct bdev **out)
{
	struct bdev_aio *a = calloc(1, sizeof(*a));
	uint64_t size = 0;
	bool created = false;
	uint32_t bs;
	int rc;

	if (!a)
		return -ENOMEM;
	rc = bdev_file_setup(&a->f, name, opts, BDEV_AIO_MAX_QD, &bs, &size, &created);
	if (rc) {
		free(a);
		return rc;
	}
	a->queue_depth = opts->queue_depth ? opts->queue_depth : BDEV_AIO_DEFAULT_QD;
	a->fdsync_async = true;
	rc = bdev_file_register(name, &bdev_aio_ops, &a->f, a, bs, size, opts, a->queue_depth,
				"aio", created, out);
	if (rc)
		bdev_aio_free(a);
	return rc;
}
