/* backend/bdev_aio.c - file / block device bdev through libaio: O_DIRECT when possible, batched
 * io_submit, completions signalled on the channel eventfd, real flush/FUA, hole punching. */
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
/* Bounce buffers kept per channel for reuse, so unaligned I/O allocates only while warming up. */
#define BDEV_AIO_BOUNCE_CACHE 16
#define BDEV_AIO_BOUNCE_ALIGN 4096
#define BDEV_AIO_ZERO_BUF (128 * 1024)
/* Linux UIO_MAXIOV: longer iovec arrays are refused by the kernel, so they go through a bounce. */
#define BDEV_AIO_MAX_IOV 1024

struct bdev_aio {
	int fd;
	char *filename;
	bool direct;
	bool is_blkdev;
	uint32_t queue_depth;
	size_t mem_align; /* O_DIRECT: buffer address alignment */
	size_t len_align; /* O_DIRECT: segment length alignment */
	/* Learned at run time; read and cleared with __atomic by channel threads. */
	bool fdsync_async;  /* IOCB_CMD_FDSYNC accepted by the kernel */
	bool punch_ok;	    /* FALLOC_FL_PUNCH_HOLE supported */
	bool zero_range_ok; /* FALLOC_FL_ZERO_RANGE supported */
	void *zero_buf;	    /* BDEV_AIO_ZERO_BUF aligned zero bytes (fallback writes) */
};

struct bdev_aio_bounce {
	void *buf;
	size_t len;
};

struct bdev_aio_chan {
	io_context_t ctx;
	struct io_event *events;   /* queue_depth */
	struct iocb **batch;	   /* queue_depth */
	struct bdev_io *pend_head; /* prepared, not yet given to io_submit */
	struct bdev_io *pend_tail;
	uint32_t npending;
	uint32_t inflight; /* in the kernel */
	struct bdev_aio_bounce bounce[BDEV_AIO_BOUNCE_CACHE];
	unsigned int nbounce;
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

static bool bdev_aio_cap(bool *flag)
{
	return __atomic_load_n(flag, __ATOMIC_RELAXED);
}

static void bdev_aio_cap_clear(bool *flag)
{
	__atomic_store_n(flag, false, __ATOMIC_RELAXED);
}

/* ---- bounce buffers ---- */

static void *bdev_aio_bounce_get(struct bdev_aio_chan *c, size_t len, size_t *got)
{
	unsigned int i, best = c->nbounce;
	void *buf;

	/* Smallest cached buffer that fits. */
	for (i = 0; i < c->nbounce; i++) {
		if (c->bounce[i].len >= len &&
		    (best == c->nbounce || c->bounce[i].len < c->bounce[best].len))
			best = i;
	}
	if (best < c->nbounce) {
		buf = c->bounce[best].buf;
		*got = c->bounce[best].len;
		c->bounce[best] = c->bounce[--c->nbounce];
		return buf;
	}
	len = (len + BDEV_AIO_BOUNCE_ALIGN - 1) & ~(size_t)(BDEV_AIO_BOUNCE_ALIGN - 1);
	if (posix_memalign(&buf, BDEV_AIO_BOUNCE_ALIGN, len))
		return NULL;
	*got = len;
	return buf;
}

static void bdev_aio_bounce_put(struct bdev_aio_chan *c, void *buf, size_t len)
{
	unsigned int i, smallest = 0;

	if (c->nbounce < BDEV_AIO_BOUNCE_CACHE) {
		c->bounce[c->nbounce].buf = buf;
		c->bounce[c->nbounce].len = len;
		c->nbounce++;
		return;
	}
	/* Cache full: keep the larger buffers, they serve more requests. */
	for (i = 1; i < c->nbounce; i++) {
		if (c->bounce[i].len < c->bounce[smallest].len)
			smallest = i;
	}
	if (c->bounce[smallest].len < len) {
		free(c->bounce[smallest].buf);
		c->bounce[smallest].buf = buf;
		c->bounce[smallest].len = len;
		return;
	}
	free(buf);
}

static bool bdev_aio_needs_bounce(const struct bdev_aio *a, const struct bdev_io *io)
{
	int i;

	if (io->iovcnt > BDEV_AIO_MAX_IOV)
		return true;
	if (!a->direct)
		return false;
	for (i = 0; i < io->iovcnt; i++) {
		if ((uintptr_t)io->iov[i].iov_base % a->mem_align ||
		    io->iov[i].iov_len % a->len_align)
			return true;
	}
	return false;
}

/* ---- synchronous helpers (operations without an asynchronous form) ---- */

static int bdev_aio_fdatasync(struct bdev_aio *a)
{
	return fdatasync(a->fd) ? -errno : 0;
}

static int bdev_aio_write_zeroes_buf(struct bdev_aio *a, uint64_t off, uint64_t len)
{
	while (len > 0) {
		size_t n = len < BDEV_AIO_ZERO_BUF ? (size_t)len : BDEV_AIO_ZERO_BUF;
		ssize_t w = pwrite(a->fd, a->zero_buf, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* EOPNOTSUPP/ENOSYS: the file system or device lacks the mode, so stop trying. EINVAL: this
 * range is not aligned to what the device accepts (a block device's logical block), so write
 * zeroes for this request only. */
static bool bdev_aio_fallocate_unsupported(int err)
{
	return err == EOPNOTSUPP || err == ENOSYS;
}

static int bdev_aio_zero_range(struct bdev_aio *a, uint64_t off, uint64_t len)
{
	if (bdev_aio_cap(&a->zero_range_ok)) {
		if (!fallocate(a->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len))
			return 0;
		if (bdev_aio_fallocate_unsupported(errno)) {
			LOG_INFO(BDEV_LOG,
				 "%s: no FALLOC_FL_ZERO_RANGE (%m): writing zeroes instead",
				 a->filename);
			bdev_aio_cap_clear(&a->zero_range_ok);
		} else if (errno != EINVAL) {
			return -errno;
		}
	}
	return bdev_aio_write_zeroes_buf(a, off, len);
}

static int bdev_aio_punch(struct bdev_aio *a, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (bdev_aio_cap(&a->punch_ok)) {
		if (!fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			       (off_t)len))
			return 0;
		if (bdev_aio_fallocate_unsupported(errno)) {
			LOG_INFO(BDEV_LOG, "%s: no FALLOC_FL_PUNCH_HOLE (%m): zeroing instead",
				 a->filename);
			bdev_aio_cap_clear(&a->punch_ok);
		} else if (errno != EINVAL) {
			return -errno;
		}
	}
	return bdev_aio_zero_range(a, off, len);
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
		rc = bdev_aio_zero_range(a, io->offset_blocks * bs, io->num_blocks * bs);
	} else {
		for (i = 0; i < io->nranges && !rc; i++)
			rc = bdev_aio_punch(a, io->ranges[i].offset_blocks * bs,
					    io->ranges[i].num_blocks * bs);
	}
	if (!rc && (io->flags & BDEV_IO_F_FUA))
		rc = bdev_aio_fdatasync(a);
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
		bdev_aio_bounce_put(c, aio->bounce, aio->bounce_len);
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
			 a->filename);
		bdev_aio_cap_clear(&a->fdsync_async);
		rc = bdev_aio_fdatasync(a);
	} else {
		LOG_ERR(BDEV_LOG, "%s: io_submit: %s", a->filename, strerror(-rc));
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
		if (bdev_aio_needs_bounce(a, io)) {
			aio->bounce = bdev_aio_bounce_get(c, len, &aio->bounce_len);
			if (!aio->bounce) {
				bdev_io_complete(io, -ENOMEM);
				return;
			}
			if (io->type == BDEV_IO_WRITE) {
				bdev_iov_to_buf(aio->bounce, io->iov, io->iovcnt, len);
				io_prep_pwrite(&aio->iocb, a->fd, aio->bounce, len, (long long)off);
			} else {
				io_prep_pread(&aio->iocb, a->fd, aio->bounce, len, (long long)off);
			}
		} else if (io->type == BDEV_IO_WRITE) {
			/* The kernel copies the iovec array at io_submit time. */
			io_prep_pwritev(&aio->iocb, a->fd, (struct iovec *)io->iov, io->iovcnt,
					(long long)off);
		} else {
			io_prep_preadv(&aio->iocb, a->fd, (struct iovec *)io->iov, io->iovcnt,
				       (long long)off);
		}
		/* FUA: RWF_DSYNC makes this one write durable before it completes (Linux 4.13). */
		if (io->type == BDEV_IO_WRITE && (io->flags & BDEV_IO_F_FUA))
			aio->iocb.aio_rw_flags = RWF_DSYNC;
		break;
	case BDEV_IO_FLUSH:
		if (!bdev_aio_cap(&a->fdsync_async)) {
			bdev_io_complete(io, bdev_aio_fdatasync(a));
			return;
		}
		io_prep_fdsync(&aio->iocb, a->fd);
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

static void bdev_aio_reap(struct bdev_channel *ch)
{
	struct bdev_aio_chan *c = ch->drv;
	struct bdev_aio *a = ch->bdev->ctx;
	struct timespec zero = {0, 0};
	int n, i;

	do {
		n = io_getevents(c->ctx, 0, (long)a->queue_depth, c->events, &zero);
		if (n < 0) {
			if (n != -EINTR)
				LOG_ERR(BDEV_LOG, "%s: io_getevents: %s", a->filename,
					strerror(-n));
			return;
		}
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
					a->filename, (int)io->type, io->offset_blocks, res);
			bdev_aio_release(c, io);
			c->inflight--;
			bdev_io_complete(io, status);
		}
	} while (n == (int)a->queue_depth);
}

static void bdev_aio_poll(struct bdev_channel *ch)
{
	bdev_aio_reap(ch);
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
		LOG_ERR(BDEV_LOG, "%s: io_setup(%u): %s", a->filename, a->queue_depth,
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
	unsigned int i;

	/* The core refuses to destroy a channel with outstanding ios, so nothing is in flight. */
	io_destroy(c->ctx);
	for (i = 0; i < c->nbounce; i++)
		free(c->bounce[i].buf);
	free(c->batch);
	free(c->events);
	free(c);
}

/* ---- bdev ---- */

static void bdev_aio_free(struct bdev_aio *a)
{
	if (a->fd >= 0)
		close(a->fd);
	free(a->zero_buf);
	free(a->filename);
	free(a);
}

static void bdev_aio_destruct(struct bdev *bdev)
{
	bdev_aio_free(bdev->ctx);
}

static void bdev_aio_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_aio *a = bdev->ctx;

	info->filename = a->filename;
	info->direct_io = a->direct;
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

static void bdev_aio_go_buffered(struct bdev_aio *a, const char *why)
{
	int fl = fcntl(a->fd, F_GETFL);

	LOG_WARN(BDEV_LOG, "%s: %s: using buffered I/O", a->filename, why);
	if (fl >= 0)
		fcntl(a->fd, F_SETFL, fl & ~O_DIRECT);
	a->direct = false;
}

/* Learns the O_DIRECT alignment rules; falls back to buffered I/O where they cannot be met. */
static void bdev_aio_probe_direct(struct bdev_aio *a, uint32_t block_size)
{
	struct statx stx;
	int lbs;

	a->mem_align = 512;
	a->len_align = 512;
	if (a->is_blkdev) {
		if (!ioctl(a->fd, BLKSSZGET, &lbs) && lbs > 0)
			a->len_align = a->mem_align = (size_t)lbs;
	} else if (!statx(a->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
		   (stx.stx_mask & STATX_DIOALIGN)) {
		if (!stx.stx_dio_offset_align) {
			bdev_aio_go_buffered(a, "file system reports no direct I/O");
			return;
		}
		a->len_align = stx.stx_dio_offset_align;
		a->mem_align = stx.stx_dio_mem_align ? stx.stx_dio_mem_align : 1;
	}
	if (block_size % a->len_align) {
		bdev_aio_go_buffered(a, "block size below the device's direct I/O alignment");
		return;
	}
}

/* Some file systems accept an O_DIRECT open and refuse the I/O itself: try one aligned read. */
static void bdev_aio_probe_read(struct bdev_aio *a, uint32_t block_size)
{
	if (pread(a->fd, a->zero_buf, block_size, 0) < 0 && errno == EINVAL)
		bdev_aio_go_buffered(a, "direct read refused");
	/* The probe read into the zero buffer: restore what the fallback writes rely on. */
	memset(a->zero_buf, 0, block_size);
}

static int bdev_aio_open(struct bdev_aio *a, const struct bdev_aio_opts *opts)
{
	int flags = O_RDWR | O_CLOEXEC;

	if (opts->create_size)
		flags |= O_CREAT;
	a->direct = !opts->buffered;
	a->fd = open(opts->filename, flags | (a->direct ? O_DIRECT : 0), 0600);
	if (a->fd < 0 && a->direct && errno == EINVAL) {
		LOG_WARN(BDEV_LOG, "%s: O_DIRECT refused by the file system: using buffered I/O",
			 opts->filename);
		a->direct = false;
		a->fd = open(opts->filename, flags, 0600);
	}
	if (a->fd < 0) {
		int rc = -errno;

		LOG_ERR(BDEV_LOG, "%s: open: %m", opts->filename);
		return rc;
	}
	return 0;
}

/* Size in bytes of the (possibly new) backing file or device. */
static int bdev_aio_size(struct bdev_aio *a, const struct bdev_aio_opts *opts, uint64_t *size)
{
	struct stat st;

	if (fstat(a->fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		a->is_blkdev = true;
		return ioctl(a->fd, BLKGETSIZE64, size) ? -errno : 0;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (opts->create_size && (uint64_t)st.st_size < opts->create_size) {
		if (opts->create_size > (uint64_t)INT64_MAX)
			return -EINVAL;
		if (ftruncate(a->fd, (off_t)opts->create_size))
			return -errno;
		st.st_size = (off_t)opts->create_size;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

int bdev_aio_create(const char *name, const struct bdev_aio_opts *opts, struct bdev **out)
{
	uint32_t bs = opts && opts->block_size ? opts->block_size : 512;
	struct bdev_aio *a;
	struct bdev *b;
	uint64_t size = 0;
	bool created;
	int rc;

	if (!opts || !opts->filename || !opts->filename[0] || (bs != 512 && bs != 4096))
		return -EINVAL;
	if (opts->create_size % bs || opts->queue_depth > BDEV_AIO_MAX_QD)
		return -EINVAL;
	/* Refuse a bad or taken name before touching (or creating) the file. */
	if (!name || !name[0] || strlen(name) > BDEV_NAME_MAX)
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	created = opts->create_size && access(opts->filename, F_OK) && errno == ENOENT;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->queue_depth = opts->queue_depth ? opts->queue_depth : BDEV_AIO_DEFAULT_QD;
	a->fdsync_async = a->punch_ok = a->zero_range_ok = true;
	a->filename = strdup(opts->filename);
	if (!a->filename ||
	    posix_memalign(&a->zero_buf, BDEV_AIO_BOUNCE_ALIGN, BDEV_AIO_ZERO_BUF)) {
		a->zero_buf = NULL;
		rc = -ENOMEM;
		goto out_free_a;
	}
	memset(a->zero_buf, 0, BDEV_AIO_ZERO_BUF);
	rc = bdev_aio_open(a, opts);
	if (rc)
		goto out_free_a;
	rc = bdev_aio_size(a, opts, &size);
	if (rc)
		goto out_free_a;
	if (a->direct)
		bdev_aio_probe_direct(a, bs);
	if (a->direct && size >= bs)
		bdev_aio_probe_read(a, bs);
	rc = bdev_alloc(name, &bdev_aio_ops, bs, size / bs, opts->uuid, &b);
	if (rc)
		goto out_free_a;
	b->ctx = a;
	rc = bdev_register(b);
	if (rc)
		goto out_free_bdev;
	LOG_INFO(BDEV_LOG, "%s: aio on %s, %s I/O, queue depth %u", name, a->filename,
		 a->direct ? "direct" : "buffered", a->queue_depth);
	if (out)
		*out = b;
	return 0;

out_free_bdev:
	bdev_free(b);
out_free_a:
	/* Do not leave behind a file that this failed call created. */
	if (created && a->fd >= 0)
		unlink(a->filename);
	bdev_aio_free(a);
	return rc;
}
