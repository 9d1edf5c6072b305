/* backend/bdev_uring.c - file / block device bdev through io_uring (liburing): one ring per
 * channel, its completions signalled on the channel's eventfd (io_uring_register_eventfd), the
 * file registered with the ring, submissions batched, and flush, FUA, write zeroes and
 * deallocation (fallocate) all asynchronous. Option `poll`: reads and writes go to a second,
 * polled ring (IORING_SETUP_IOPOLL, O_DIRECT only) that the channel reaps by polling while it
 * has I/O in flight. Guest memory is registered with the read/write ring as fixed buffers (64 MiB
 * chunks of the mappings bdev_mem_ops names, on first use), so a single-segment transfer into it
 * pins no pages; a chunk's reference is dropped once its owner unmapped it (bdev_mem_removed
 * wakes the channel). Same file rules as aio (backend/bdev_file.h). */
#include "backend/bdev_file.h"
#include "backend/bdev_internal.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <liburing.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BDEV_URING_DEFAULT_QD 128
#define BDEV_URING_MAX_QD 4096
/* Submit at once when this many SQEs wait; fewer go out at the next issue/poll. */
#define BDEV_URING_BATCH 16
/* Fixed buffers: slots per ring, and the size of a registered chunk of guest memory (a bound on
 * the pages pinned at first use, and io_uring's limit is 1 GiB per buffer). */
#define BDEV_URING_FIXED_SLOTS 64
#define BDEV_URING_FIXED_CHUNK ((size_t)64 << 20)

struct bdev_uring {
	struct bdev_file f;
	uint32_t queue_depth;
	bool poll; /* reads and writes on a polled ring */
	uint32_t fixed_buffers; /* __atomic: chunks registered, all channels */
	uint64_t fixed_ios;	/* __atomic: added once per poll from the channels' counts */
};

/* A registered chunk of guest memory: fixed buffer slot i of the read/write ring. */
struct bdev_uring_fixed {
	uint8_t *base; /* NULL: free slot */
	size_t len;
	void *ref; /* bdev_mem_ops reference: keeps the chunk mapped while registered */
};

/* One ring of a channel and what is in it. */
struct bdev_uring_ring {
	struct io_uring ring;
	bool live;
	bool fixed_file; /* f.fd is registered as fixed file 0 */
	uint32_t unsubmitted;
	uint32_t inflight;
};

/* Rings of a channel: the interrupt-driven one (every op; completions on the eventfd) and,
 * with `poll`, the polled one (reads and writes; completions found by polling). */
enum { BDEV_URING_IRQ, BDEV_URING_POLLED, BDEV_URING_RINGS };

struct bdev_uring_chan {
	struct bdev_uring_ring r[BDEV_URING_RINGS];
	struct bdev_uring_ring *rw; /* the ring reads and writes go to */
	struct bdev_channel *ch;
	/* Fixed buffers on rw: usable when the sparse table was registered and registration has
	 * not failed (memlock limit, kernel without sparse tables). */
	bool fixed_ok;
	uint32_t fixed_hi; /* slots in use are below this */
	struct bdev_uring_fixed fixed[BDEV_URING_FIXED_SLOTS];
	uint64_t mem_gen;  /* bdev_mem_generation at the last sweep */
	uint64_t fixed_ios; /* not yet added to the bdev's count */
	struct bdev_mem_watch watch;
	bool watching;
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

static void bdev_uring_sqe_file(struct bdev_uring_ring *r, struct io_uring_sqe *sqe, int fd)
{
	if (r->fixed_file) {
		sqe->fd = 0;
		sqe->flags |= IOSQE_FIXED_FILE;
	} else {
		sqe->fd = fd;
	}
}

/* ---- fixed buffers ---- */

/* The slot of a registered chunk holding [va, va + len), registering the chunk on first use.
 * -1: not registrable (not guest memory, straddles two chunks, no free slot, or registration
 * failed: the io then goes unregistered). Channel thread. */
static int bdev_uring_fixed_slot(struct bdev_uring *ur, struct bdev_uring_chan *c, void *va,
				 size_t len)
{
	const struct bdev_mem_ops *ops;
	uint8_t *p = va, *base;
	struct iovec iov;
	uint32_t i, free_slot = BDEV_URING_FIXED_SLOTS;
	size_t size, off;
	void *ref;
	int rc;

	for (i = 0; i < c->fixed_hi; i++) {
		struct bdev_uring_fixed *f = &c->fixed[i];

		if (!f->base) {
			free_slot = free_slot < i ? free_slot : i;
			continue;
		}
		if (p >= f->base && len <= f->len && (size_t)(p - f->base) <= f->len - len)
			return (int)i;
	}
	if (!c->fixed_ok || !(ops = bdev_mem_ops()))
		return -1;
	if (free_slot == BDEV_URING_FIXED_SLOTS && c->fixed_hi < BDEV_URING_FIXED_SLOTS)
		free_slot = c->fixed_hi;
	if (free_slot == BDEV_URING_FIXED_SLOTS)
		return -1;
	ref = ops->get(va, len, (void **)&base, &size);
	if (!ref)
		return -1;
	off = (size_t)(p - base) & ~(BDEV_URING_FIXED_CHUNK - 1);
	iov.iov_base = base + off;
	iov.iov_len = size - off < BDEV_URING_FIXED_CHUNK ? size - off : BDEV_URING_FIXED_CHUNK;
	if (p + len > (uint8_t *)iov.iov_base + iov.iov_len) {
		ops->put(ref); /* across two chunks: unregistered */
		return -1;
	}
	rc = io_uring_register_buffers_update_tag(&c->rw->ring, free_slot, &iov, NULL, 1);
	if (rc < 0) {
		LOG_WARN(BDEV_LOG, "%s: cannot register guest memory with io_uring (%s): transfers "
				   "go unregistered",
			 ur->f.filename, strerror(-rc));
		c->fixed_ok = false;
		ops->put(ref);
		return -1;
	}
	c->fixed[free_slot] = (struct bdev_uring_fixed){.base = iov.iov_base, .len = iov.iov_len,
							.ref = ref};
	if (free_slot >= c->fixed_hi)
		c->fixed_hi = free_slot + 1;
	__atomic_add_fetch(&ur->fixed_buffers, 1, __ATOMIC_RELAXED);
	if (!c->watching) {
		bdev_mem_watch_add(&c->watch);
		c->watching = true;
	}
	return (int)free_slot;
}

static void bdev_uring_fixed_drop(struct bdev_uring *ur, struct bdev_uring_chan *c, uint32_t i,
				  bool unregister)
{
	struct bdev_uring_fixed *f = &c->fixed[i];
	struct iovec none = {NULL, 0};

	/* Requests still using the buffer keep the kernel's own reference to its pages. */
	if (unregister && io_uring_register_buffers_update_tag(&c->rw->ring, i, &none, NULL, 1) < 0)
		LOG_ERR(BDEV_LOG, "%s: cannot unregister fixed buffer %u", ur->f.filename, i);
	bdev_mem_ops()->put(f->ref);
	*f = (struct bdev_uring_fixed){0};
	__atomic_sub_fetch(&ur->fixed_buffers, 1, __ATOMIC_RELAXED);
}

/* Lets go of chunks whose memory was unmapped by its owner. Channel thread. */
static void bdev_uring_fixed_sweep(struct bdev_uring *ur, struct bdev_uring_chan *c)
{
	uint64_t gen = bdev_mem_generation();

	if (gen == c->mem_gen)
		return;
	c->mem_gen = gen;
	for (uint32_t i = 0; i < c->fixed_hi; i++)
		if (c->fixed[i].base && bdev_mem_ops()->removed(c->fixed[i].ref))
			bdev_uring_fixed_drop(ur, c, i, true);
	while (c->fixed_hi && !c->fixed[c->fixed_hi - 1].base)
		c->fixed_hi--;
}

/* bdev_mem_removed, any thread: the channel's own thread sweeps at its next poll. */
static void bdev_uring_mem_removed(void *arg)
{
	bdev_channel_wake(arg);
}

/* Fills the SQEs an io needs (UNMAP: one per range, fallocate with PUNCH_HOLE; FUA on a write
 * zeroes adds a linked fdatasync). Returns 0, or -EAGAIN when the ring has no room (the io then
 * waits, whole, for completions: none of its SQEs was taken). */
static int bdev_uring_prep(struct bdev_uring_chan *c, struct bdev_uring *ur, struct bdev *b,
			   struct bdev_io *io)
{
	struct bdev_uring_io *u = bdev_uring_io(io);
	uint64_t bs = b->block_size, off = io->offset_blocks * bs, len = io->num_blocks * bs;
	bool rw = io->type == BDEV_IO_READ || io->type == BDEV_IO_WRITE;
	struct bdev_uring_ring *r = &c->r[rw && ur->poll ? BDEV_URING_POLLED : BDEV_URING_IRQ];
	unsigned int need = 1, i;
	struct io_uring_sqe *sqe;
	bool fua_sync = false;
	int slot;

	if (io->type == BDEV_IO_UNMAP)
		need = io->nranges;
	/* FUA on a zeroing or a deallocation: a linked fdatasync after it. */
	if ((io->type == BDEV_IO_WRITE_ZEROES || (io->type == BDEV_IO_UNMAP && need)) &&
	    (io->flags & BDEV_IO_F_FUA)) {
		need++;
		fua_sync = true;
	}
	if (!need)
		return 0;
	/* At most queue_depth SQEs in the kernel: the CQ ring (twice the SQ) never overflows, so
	 * every completion reaches the ring and signals the eventfd. */
	if (r->inflight + r->unsubmitted + need > ur->queue_depth ||
	    io_uring_sq_space_left(&r->ring) < need)
		return -EAGAIN;
	u->pending = need;
	for (i = 0; i < need; i++) {
		sqe = io_uring_get_sqe(&r->ring);
		switch (io->type) {
		case BDEV_IO_READ:
		case BDEV_IO_WRITE:
			if (!u->bounce && io->iovcnt == 1 &&
			    (slot = bdev_uring_fixed_slot(ur, c, io->iov[0].iov_base, len)) >= 0) {
				if (io->type == BDEV_IO_WRITE)
					io_uring_prep_write_fixed(sqe, 0, io->iov[0].iov_base,
								  (unsigned int)len, off, slot);
				else
					io_uring_prep_read_fixed(sqe, 0, io->iov[0].iov_base,
								 (unsigned int)len, off, slot);
				c->fixed_ios++;
			} else if (u->bounce && io->type == BDEV_IO_WRITE)
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
			if (i == io->nranges) {
				io_uring_prep_fsync(sqe, 0, IORING_FSYNC_DATASYNC);
				break;
			}
			io_uring_prep_fallocate(sqe, 0, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						io->ranges[i].offset_blocks * bs,
						io->ranges[i].num_blocks * bs);
			if (fua_sync)
				sqe->flags |= IOSQE_IO_LINK;
			break;
		case BDEV_IO_TYPE_COUNT:
			break;
		}
		bdev_uring_sqe_file(r, sqe, ur->f.fd);
		io_uring_sqe_set_data(sqe, io);
	}
	r->unsubmitted += need;
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

static void bdev_uring_flush_ring(struct bdev_uring_ring *r)
{
	int rc;

	while (r->unsubmitted) {
		rc = io_uring_submit(&r->ring);
		if (rc > 0) {
			r->inflight += (uint32_t)rc;
			r->unsubmitted -= (uint32_t)rc < r->unsubmitted ? (uint32_t)rc : r->unsubmitted;
			continue;
		}
		if (rc == -EINTR)
			continue;
		/* -EAGAIN/-EBUSY: the kernel wants completions reaped first; the eventfd (or the
		 * polling) wakes the channel for them and the next poll submits the rest. */
		if ((rc == -EAGAIN || rc == -EBUSY) && r->inflight)
			return;
		LOG_ERR(BDEV_LOG, "io_uring_submit: %s", strerror(-rc));
		return;
	}
}

static void bdev_uring_flush_sq(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;

	for (unsigned int i = 0; i < BDEV_URING_RINGS; i++)
		if (c->r[i].live)
			bdev_uring_flush_ring(&c->r[i]);
}

static uint32_t bdev_uring_unsubmitted(const struct bdev_uring_chan *c)
{
	return c->r[BDEV_URING_IRQ].unsubmitted + c->r[BDEV_URING_POLLED].unsubmitted;
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
	if (bdev_uring_unsubmitted(c) >= BDEV_URING_BATCH)
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

/* Reaps the ring's completions; returns how many. */
static unsigned int bdev_uring_reap(struct bdev_channel *ch, struct bdev_uring_ring *r)
{
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring *ur = ch->bdev->ctx;
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	io_uring_for_each_cqe(&r->ring, head, cqe)
	{
		struct bdev_io *io = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		n++;
		r->inflight--;
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
	io_uring_cq_advance(&r->ring, n);
	return n;
}

static void bdev_uring_poll(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring_ring *p = &c->r[BDEV_URING_POLLED];
	int rc;

	/* The kernel wrote the eventfd for what this reaps (the registered eventfd): take those
	 * signals and reap again, until a reap after the read finds nothing. Left unread, the fd
	 * stays readable and the channel's thread never sleeps again. */
	while (bdev_uring_reap(ch, &c->r[BDEV_URING_IRQ]))
		bdev_channel_take_signal(ch);
	if (c->watching)
		bdev_uring_fixed_sweep(ch->bdev->ctx, c);
	if (c->fixed_ios) {
		struct bdev_uring *ur = ch->bdev->ctx;

		__atomic_add_fetch(&ur->fixed_ios, c->fixed_ios, __ATOMIC_RELAXED);
		c->fixed_ios = 0;
	}
	if (p->live && p->inflight) {
		/* A polled ring completes nothing by itself: entering with GETEVENTS runs one
		 * polling pass over its requests. */
		rc = io_uring_get_events(&p->ring);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			LOG_ERR(BDEV_LOG, "%s: polling io_uring: %s", ch->bdev->name, strerror(-rc));
		bdev_uring_reap(ch, p);
	}
	/* Reaping freed ring slots: issue what waited for them. */
	bdev_uring_issue(ch);
	/* Polled I/O still out (or just submitted): come back on the next loop iteration
	 * instead of sleeping; an idle channel sleeps on its eventfd as usual. */
	if (p->live && (p->inflight || p->unsubmitted))
		bdev_channel_repoll(ch);
}

/* ---- channels ---- */

static void bdev_uring_ring_exit(struct bdev_uring_ring *r)
{
	if (r->live)
		io_uring_queue_exit(&r->ring);
	r->live = false;
}

/* A ring of queue_depth entries with the file registered; `efd` >= 0: its completions signal
 * that eventfd. */
static int bdev_uring_ring_init(struct bdev_uring *ur, struct bdev_uring_ring *r, unsigned int flags,
				int efd)
{
	int rc = io_uring_queue_init(ur->queue_depth, &r->ring, flags);

	if (rc) {
		LOG_ERR(BDEV_LOG, "%s: io_uring_queue_init(%u%s): %s", ur->f.filename,
			ur->queue_depth, flags & IORING_SETUP_IOPOLL ? ", IOPOLL" : "",
			strerror(-rc));
		return rc;
	}
	r->live = true;
	if (efd >= 0) {
		rc = io_uring_register_eventfd(&r->ring, efd);
		if (rc) {
			LOG_ERR(BDEV_LOG, "%s: io_uring_register_eventfd: %s", ur->f.filename,
				strerror(-rc));
			bdev_uring_ring_exit(r);
			return rc;
		}
	}
	/* A registered file saves a file-table lookup per request; optional. */
	r->fixed_file = io_uring_register_files(&r->ring, &ur->f.fd, 1) == 0;
	return 0;
}

static int bdev_uring_channel_create(struct bdev_channel *ch)
{
	struct bdev_uring *ur = ch->bdev->ctx;
	struct bdev_uring_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	/* Completions wake the channel's thread through the channel eventfd. */
	rc = bdev_uring_ring_init(ur, &c->r[BDEV_URING_IRQ], 0, ch->efd);
	if (!rc && ur->poll)
		rc = bdev_uring_ring_init(ur, &c->r[BDEV_URING_POLLED], IORING_SETUP_IOPOLL, -1);
	if (rc) {
		bdev_uring_ring_exit(&c->r[BDEV_URING_IRQ]);
		free(c);
		return rc;
	}
	c->ch = ch;
	c->rw = &c->r[ur->poll ? BDEV_URING_POLLED : BDEV_URING_IRQ];
	c->watch = (struct bdev_mem_watch){.fn = bdev_uring_mem_removed, .arg = ch};
	c->mem_gen = bdev_mem_generation();
	/* An empty table of fixed buffers, filled with guest memory chunks on first use. */
	rc = io_uring_register_buffers_sparse(&c->rw->ring, BDEV_URING_FIXED_SLOTS);
	c->fixed_ok = rc == 0;
	if (rc)
		LOG_INFO(BDEV_LOG, "%s: no fixed buffers (%s)", ur->f.filename, strerror(-rc));
	ch->drv = c;
	return 0;
}

static void bdev_uring_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_uring_chan *c = ch->drv;
	struct bdev_uring *ur = ch->bdev->ctx;

	/* No wake-up may reach the channel once it is gone: off the watch list first. */
	if (c->watching)
		bdev_mem_watch_remove(&c->watch);
	/* The core refuses to destroy a channel with outstanding ios, so nothing is in flight. */
	for (unsigned int i = 0; i < BDEV_URING_RINGS; i++)
		bdev_uring_ring_exit(&c->r[i]);
	/* The rings are gone with their registrations: only the references are left. */
	for (uint32_t i = 0; i < c->fixed_hi; i++)
		if (c->fixed[i].base)
			bdev_uring_fixed_drop(ur, c, i, false);
	if (c->fixed_ios)
		__atomic_add_fetch(&ur->fixed_ios, c->fixed_ios, __ATOMIC_RELAXED);
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
	info->uring_poll = ur->poll;
	info->uring_fixed_buffers = __atomic_load_n(&ur->fixed_buffers, __ATOMIC_RELAXED);
	info->uring_fixed_ios = __atomic_load_n(&ur->fixed_ios, __ATOMIC_RELAXED);
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

/* Whether the block device under fd polls (its queue's io_poll is 1: NVMe with poll queues,
 * null_blk with poll_queues, ...). A polled bio to a device that does not is refused with
 * EOPNOTSUPP, while reads of unallocated file blocks (no bio) still succeed, so a trial read
 * proves nothing: the queue's own attribute decides. A partition's queue is its disk's. */
static bool bdev_uring_dev_polls(int fd, const char *filename)
{
	char path[96], buf[8] = "";
	struct stat st;
	dev_t dev;
	FILE *f;

	if (fstat(fd, &st))
		return false;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/io_poll", major(dev), minor(dev));
	f = fopen(path, "r");
	if (!f) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/io_poll", major(dev),
			 minor(dev));
		f = fopen(path, "r");
	}
	if (!f) {
		LOG_ERR(BDEV_LOG, "%s: no block queue behind the file (device %u:%u)", filename,
			major(dev), minor(dev));
		return false;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (buf[0] == '1')
		return true;
	LOG_ERR(BDEV_LOG, "%s: device %u:%u does not poll (%s is %c): polled I/O needs a device "
			  "with poll queues, e.g. NVMe with nvme.poll_queues=N",
		filename, major(dev), minor(dev), path, buf[0] ? buf[0] : '?');
	return false;
}

/* `poll` asks for polled reads and writes: only O_DIRECT I/O on a device that polls can be.
 * Checked here so the create fails with a clear error rather than every later I/O.
 * 0, -EINVAL (buffered) or -EOPNOTSUPP (the device does not poll). */
static int bdev_uring_check_poll(struct bdev_uring *ur)
{
	if (!ur->f.direct) {
		LOG_ERR(BDEV_LOG, "%s: poll needs O_DIRECT, and the file is open buffered",
			ur->f.filename);
		return -EINVAL;
	}
	return bdev_uring_dev_polls(ur->f.fd, ur->f.filename) ? 0 : -EOPNOTSUPP;
}

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
	if (opts->poll) {
		rc = bdev_uring_check_poll(ur);
		if (rc) {
			bdev_uring_free(ur);
			return rc;
		}
		ur->poll = true;
	}
	rc = bdev_file_register(name, &bdev_uring_ops, &ur->f, ur, bs, size, opts, ur->queue_depth,
				"io_uring", created, out);
	if (rc)
		bdev_uring_free(ur);
	return rc;
}
