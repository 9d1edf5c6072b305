/* backend/bdev_region.c - region bdev: a window of blocks of another (base) bdev, stacked over it
 * without copying (each io becomes one io of the base, shifted), as the namespaces carved out of
 * a capacity pool are; a packed region has 8-byte blocks, and read-modify-writes the base blocks
 * an io shares with its neighbours. */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Deallocate ranges translated per base io; more ranges go in further rounds. */
#define BDEV_REGION_RANGES 8

struct bdev_region {
	struct bdev_module_ops ops; /* io_ctx_size depends on the base */
	struct bdev *base;
	uint64_t offset; /* in base blocks */
	uint32_t ratio;	 /* region block size / base block size; 0: packed */
	uint32_t bbs;	 /* the base's block size */
	/* Packed: the ios read-modify-writing base blocks (`held`) and those waiting for one of
	 * theirs (FIFO). Held only for these list updates, never across I/O. */
	pthread_mutex_t lock;
	struct bdev_io *held;
	struct bdev_io *wait_head, *wait_tail;
};

/* What an unaligned io of a packed region needs besides its context: the child's iovecs and
 * the two edge blocks. Kept on the channel's free list once made (no allocation after warm-up). */
struct bdev_region_scratch {
	struct bdev_region_scratch *next;
	struct iovec iov[BDEV_REGION_MAX_IOV + 2];
	uint8_t *edge; /* 2 base blocks, 4 KiB aligned (O_DIRECT bases) */
};

struct bdev_region_chan {
	struct bdev_channel *base_ch;
	struct bdev_channel *ch;
	/* Packed: ios another thread granted their edge blocks, resumed by this channel's poll
	 * (under the region's lock; `has_ready` lets a poll skip it). */
	struct bdev_io *ready;
	atomic_bool has_ready;
	struct bdev_region_scratch *free;
};

/* Where an unaligned io of a packed region is. */
enum bdev_region_step {
	BDEV_REGION_HEAD_READ,
	BDEV_REGION_TAIL_READ,
	BDEV_REGION_MERGE,	/* WRITE: then edges and the whole blocks between, one io */
	BDEV_REGION_HEAD_WRITE, /* WRITE_ZEROES, UNMAP: each edge, then the middle */
	BDEV_REGION_TAIL_WRITE,
	BDEV_REGION_MIDDLE,
	BDEV_REGION_PIECE, /* the piece's last io is under way */
};

/* The region's part of an io's context; the base's io follows it (bdev_vbdev.h). */
struct bdev_region_io {
	uint32_t next_range; /* UNMAP: the first parent range not yet sent */
	struct bdev_range ranges[BDEV_REGION_RANGES];
	/* Packed: the piece under way (the io, or one deallocate range), in bytes of the base. */
	uint64_t a, b;
	uint64_t lk[2];	 /* base blocks held (read-modify-written) */
	uint8_t nlk;
	bool head, tail; /* a partial first / last base block (tail: another block than head) */
	uint8_t step;
	struct bdev_io *lnext; /* held or waiting list */
	struct bdev_io *rnext; /* the channel's ready list */
	struct bdev_region_chan *chan;
	struct bdev_region_scratch *s;
};
#define BDEV_REGION_OWN ((sizeof(struct bdev_region_io) + 15) & ~(size_t)15)

static struct bdev_region_io *bdev_region_io(struct bdev_io *io)
{
	return (struct bdev_region_io *)io->driver_ctx;
}

static struct bdev_io *bdev_region_child(struct bdev_io *io)
{
	return (struct bdev_io *)(io->driver_ctx + BDEV_REGION_OWN);
}

static void bdev_region_destruct(struct bdev *bdev)
{
	struct bdev_region *r = bdev->ctx;

	bdev_close(r->base);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/*
 * A channel on the base whose fd wakes the region's channel (bdev_vbdev_chan_open): the poll
 * group watching the region reaps the base channel in the region's poll (bdev_region_poll) and
 * delivers the region ios in the same pass.
 */
static int bdev_region_channel_create(struct bdev_channel *ch)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = bdev_vbdev_chan_open(ch, r->base, &c->base_ch);
	if (rc) {
		free(c);
		return rc;
	}
	c->ch = ch;
	atomic_init(&c->has_ready, false);
	ch->drv = c;
	return 0;
}

static void bdev_region_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_region_chan *c = ch->drv;

	bdev_vbdev_chan_close(ch, c->base_ch);
	while (c->free) {
		struct bdev_region_scratch *s = c->free;

		c->free = s->next;
		free(s->edge);
		free(s);
	}
	free(c);
}

static void bdev_region_unmap_next(struct bdev_channel *ch, struct bdev_io *io);

static void bdev_region_child_done(struct bdev_io *child, int status, void *arg)
{
	struct bdev_io *io = arg;
	struct bdev_region_io *rio = bdev_region_io(io);

	if (!status && io->type == BDEV_IO_UNMAP && rio->next_range < io->nranges) {
		bdev_region_unmap_next(io->internal.ch, io);
		return;
	}
	bdev_io_complete(io, status);
}

/* Sends the next batch of the parent's deallocate ranges, shifted to the base. */
static void bdev_region_unmap_next(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = ch->drv;
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_io *child = bdev_region_child(io);
	uint32_t n = 0;

	while (rio->next_range < io->nranges && n < BDEV_REGION_RANGES) {
		const struct bdev_range *src = &io->ranges[rio->next_range++];

		rio->ranges[n].offset_blocks = r->offset + src->offset_blocks * r->ratio;
		rio->ranges[n].num_blocks = src->num_blocks * r->ratio;
		n++;
	}
	memset(child, 0, sizeof(*child));
	child->type = BDEV_IO_UNMAP;
	child->flags = io->flags;
	child->ranges = rio->ranges;
	child->nranges = n;
	child->cb = bdev_region_child_done;
	child->cb_arg = io;
	bdev_submit(c->base_ch, child);
}

/* ---- packed regions ---- */

static void bdev_region_piece_start(struct bdev_channel *ch, struct bdev_io *io);
static void bdev_region_rmw_next(struct bdev_io *io);

/* Submits the child: `type` over base blocks [blk, +n), with iov (READ, WRITE) or the range. */
static void bdev_region_child_submit(struct bdev_io *io, enum bdev_io_type type, uint64_t blk,
				     uint64_t n, const struct iovec *iov, int iovcnt,
				     bdev_io_cb cb)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_io *child = bdev_region_child(io);

	memset(child, 0, sizeof(*child));
	child->type = type;
	child->flags = type == BDEV_IO_WRITE || type == BDEV_IO_WRITE_ZEROES ? io->flags : 0;
	child->cb = cb;
	child->cb_arg = io;
	if (type == BDEV_IO_UNMAP) {
		rio->ranges[0].offset_blocks = blk;
		rio->ranges[0].num_blocks = n;
		child->ranges = rio->ranges;
		child->nranges = 1;
	} else {
		child->offset_blocks = blk;
		child->num_blocks = n;
		child->iov = iov;
		child->iovcnt = iovcnt;
	}
	bdev_submit(rio->chan->base_ch, child);
}

static struct bdev_region_scratch *bdev_region_scratch_get(struct bdev_region_chan *c,
							   uint32_t bbs)
{
	struct bdev_region_scratch *s = c->free;

	if (s) {
		c->free = s->next;
		return s;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->edge = aligned_alloc(4096, 2 * (size_t)bbs < 4096 ? 4096 : 2 * (size_t)bbs);
	if (!s->edge) {
		free(s);
		return NULL;
	}
	return s;
}

static void bdev_region_scratch_put(struct bdev_region_io *rio)
{
	if (rio->s) {
		rio->s->next = rio->chan->free;
		rio->chan->free = rio->s;
		rio->s = NULL;
	}
}

/* Copies iovecs [off, off + len) of the parent into out (at most max entries); returns how
 * many, or -1 when they do not fit. */
static int bdev_region_iov_slice(const struct iovec *iov, int cnt, uint64_t off, uint64_t len,
				 struct iovec *out, int max)
{
	int n = 0;

	for (int i = 0; i < cnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t c = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;

		if (n == max)
			return -1;
		out[n].iov_base = (char *)iov[i].iov_base + off;
		out[n].iov_len = c;
		n++;
		len -= c;
		off = 0;
	}
	return n;
}

/* Copies parent bytes [off, off + len) into buf. */
static void bdev_region_iov_read(const struct iovec *iov, int cnt, uint64_t off, void *buf,
				 size_t len)
{
	uint8_t *b = buf;

	for (int i = 0; i < cnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t c = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;

		memcpy(b, (char *)iov[i].iov_base + off, c);
		b += c;
		len -= c;
		off = 0;
	}
}

static bool bdev_region_conflict(const struct bdev_region_io *x, const struct bdev_region_io *y)
{
	for (uint8_t i = 0; i < x->nlk; i++)
		for (uint8_t j = 0; j < y->nlk; j++)
			if (x->lk[i] == y->lk[j])
				return true;
	return false;
}

/* True when an edge block of rio is held, or wanted by a waiter queued before `upto` (NULL: by
 * any waiter). Under the region's lock. */
static bool bdev_region_busy(const struct bdev_region *r, const struct bdev_region_io *rio,
			     const struct bdev_io *upto)
{
	for (struct bdev_io *h = r->held; h; h = bdev_region_io(h)->lnext)
		if (bdev_region_conflict(rio, bdev_region_io(h)))
			return true;
	for (struct bdev_io *w = r->wait_head; w && w != upto; w = bdev_region_io(w)->lnext)
		if (bdev_region_conflict(rio, bdev_region_io(w)))
			return true;
	return false;
}

/* Takes the piece's edge blocks, or queues the io behind the holders and earlier waiters of
 * one of them (FIFO: a later io never overtakes an earlier one on a block). True: taken. */
static bool bdev_region_lock(struct bdev_region *r, struct bdev_io *io)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	bool busy;

	pthread_mutex_lock(&r->lock);
	busy = bdev_region_busy(r, rio, NULL);
	rio->lnext = NULL;
	if (busy) {
		if (r->wait_tail)
			bdev_region_io(r->wait_tail)->lnext = io;
		else
			r->wait_head = io;
		r->wait_tail = io;
	} else {
		rio->lnext = r->held;
		r->held = io;
	}
	pthread_mutex_unlock(&r->lock);
	return !busy;
}

/* Lets go of the piece's edge blocks; waiters no longer in anyone's way take theirs and are
 * handed to their channel's poll (a wake of its eventfd: their own thread resumes them). */
static void bdev_region_unlock(struct bdev_region *r, struct bdev_io *io)
{
	struct bdev_io **pp, *w, *prev = NULL, *next;

	pthread_mutex_lock(&r->lock);
	for (pp = &r->held; *pp; pp = &bdev_region_io(*pp)->lnext)
		if (*pp == io) {
			*pp = bdev_region_io(io)->lnext;
			break;
		}
	for (w = r->wait_head; w; w = next) {
		struct bdev_region_io *wio = bdev_region_io(w);

		next = wio->lnext;
		if (bdev_region_busy(r, wio, w)) {
			prev = w;
			continue;
		}
		/* Out of the wait list, into the held one and the channel's ready list. */
		if (prev)
			bdev_region_io(prev)->lnext = next;
		else
			r->wait_head = next;
		if (r->wait_tail == w)
			r->wait_tail = prev;
		wio->lnext = r->held;
		r->held = w;
		wio->rnext = wio->chan->ready;
		wio->chan->ready = w;
		atomic_store_explicit(&wio->chan->has_ready, true, memory_order_release);
		bdev_channel_wake(wio->chan->ch);
	}
	pthread_mutex_unlock(&r->lock);
}

/* The piece is done: the next deallocate range, or the io's completion. */
static void bdev_region_piece_done(struct bdev_io *io, int status)
{
	struct bdev_region_io *rio = bdev_region_io(io);

	bdev_region_scratch_put(rio);
	if (!status && io->type == BDEV_IO_UNMAP && rio->next_range < io->nranges)
		return bdev_region_piece_start(rio->chan->ch, io);
	bdev_io_complete(io, status);
}

static void bdev_region_piece_child_done(struct bdev_io *child, int status, void *arg)
{
	bdev_region_piece_done(arg, status);
}

static void bdev_region_rmw_child_done(struct bdev_io *child, int status, void *arg)
{
	struct bdev_io *io = arg;
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_region *r = rio->chan->ch->bdev->ctx;

	if (status || rio->step == BDEV_REGION_PIECE) {
		bdev_region_unlock(r, io);
		return bdev_region_piece_done(io, status);
	}
	rio->step++;
	bdev_region_rmw_next(io);
}

/* Merges the parent's bytes (WRITE) or zeroes into the edge blocks read. */
static void bdev_region_merge(struct bdev_io *io, uint32_t bbs)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	uint8_t *e0 = rio->s->edge, *e1 = e0 + bbs;
	uint64_t a = rio->a, b = rio->b, hb = a / bbs, hend = (hb + 1) * bbs;
	uint64_t hlen = (b < hend ? b : hend) - a, tlen = b % bbs;

	if (rio->head) {
		if (io->type == BDEV_IO_WRITE)
			bdev_region_iov_read(io->iov, io->iovcnt, 0, e0 + a % bbs, hlen);
		else
			memset(e0 + a % bbs, 0, hlen);
	}
	if (rio->tail) {
		if (io->type == BDEV_IO_WRITE)
			bdev_region_iov_read(io->iov, io->iovcnt, b - a - tlen, e1, tlen);
		else
			memset(e1, 0, tlen);
	}
}

/* Reads or writes one edge block (base block blk, from or into buf) when the piece has that
 * edge: true when submitted. */
static bool bdev_region_edge_io(struct bdev_io *io, enum bdev_io_type type, bool edge, uint64_t blk,
				uint8_t *buf)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_region *r = rio->chan->ch->bdev->ctx;

	if (!edge)
		return false;
	rio->s->iov[0] = (struct iovec){buf, r->bbs};
	bdev_region_child_submit(io, type, blk, 1, rio->s->iov, 1, bdev_region_rmw_child_done);
	return true;
}

/* The next step of a read-modify-write piece (edges held). Each step that submits an io keeps
 * its own value; the io's completion moves to the next (bdev_region_rmw_child_done). */
static void bdev_region_rmw_next(struct bdev_io *io)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_region *r = rio->chan->ch->bdev->ctx;
	uint32_t bbs = r->bbs;
	uint8_t *e0 = rio->s->edge, *e1 = e0 + bbs;
	uint64_t a = rio->a, b = rio->b, first = a / bbs, end = (b + bbs - 1) / bbs;
	uint64_t mid0 = (a + bbs - 1) / bbs, mid1 = b / bbs;
	struct iovec *v = rio->s->iov;
	int n = 0, m;

	switch (rio->step) {
	case BDEV_REGION_HEAD_READ:
		if (bdev_region_edge_io(io, BDEV_IO_READ, rio->head, first, e0))
			return;
		rio->step = BDEV_REGION_TAIL_READ;
		/* fall through */
	case BDEV_REGION_TAIL_READ:
		if (bdev_region_edge_io(io, BDEV_IO_READ, rio->tail, end - 1, e1))
			return;
		rio->step = BDEV_REGION_MERGE;
		/* fall through */
	case BDEV_REGION_MERGE:
		bdev_region_merge(io, bbs);
		if (io->type == BDEV_IO_WRITE) {
			uint64_t hend = (first + 1) * bbs;
			uint64_t hlen = rio->head ? (b < hend ? b : hend) - a : 0;
			uint64_t tlen = rio->tail ? b % bbs : 0;

			if (rio->head)
				v[n++] = (struct iovec){e0, bbs};
			m = bdev_region_iov_slice(io->iov, io->iovcnt, hlen, b - a - hlen - tlen,
						  v + n, BDEV_REGION_MAX_IOV);
			if (m < 0) {
				bdev_region_unlock(r, io);
				return bdev_region_piece_done(io, -EINVAL);
			}
			n += m;
			if (rio->tail)
				v[n++] = (struct iovec){e1, bbs};
			rio->step = BDEV_REGION_PIECE;
			return bdev_region_child_submit(io, BDEV_IO_WRITE, first, end - first, v, n,
							bdev_region_rmw_child_done);
		}
		rio->step = BDEV_REGION_HEAD_WRITE;
		/* fall through */
	case BDEV_REGION_HEAD_WRITE:
		if (bdev_region_edge_io(io, BDEV_IO_WRITE, rio->head, first, e0))
			return;
		rio->step = BDEV_REGION_TAIL_WRITE;
		/* fall through */
	case BDEV_REGION_TAIL_WRITE:
		if (bdev_region_edge_io(io, BDEV_IO_WRITE, rio->tail, end - 1, e1))
			return;
		rio->step = BDEV_REGION_MIDDLE;
		/* fall through */
	case BDEV_REGION_MIDDLE:
	default:
		/* The whole base blocks between the edges: zeroed or deallocated as asked. */
		if (mid1 > mid0) {
			rio->step = BDEV_REGION_PIECE;
			return bdev_region_child_submit(io, io->type, mid0, mid1 - mid0, NULL, 0,
							bdev_region_rmw_child_done);
		}
		bdev_region_unlock(r, io);
		return bdev_region_piece_done(io, 0);
	}
}

/* Edges held: the scratch, then the first step. */
static void bdev_region_rmw_go(struct bdev_io *io)
{
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_region *r = rio->chan->ch->bdev->ctx;

	rio->s = bdev_region_scratch_get(rio->chan, r->bbs);
	if (!rio->s) {
		bdev_region_unlock(r, io);
		return bdev_region_piece_done(io, -ENOMEM);
	}
	rio->step = BDEV_REGION_HEAD_READ;
	bdev_region_rmw_next(io);
}

/* Starts the piece [a, b) of the io (the next deallocate range, or the whole io). */
static void bdev_region_piece_start(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_io *rio = bdev_region_io(io);
	uint64_t base = r->offset * r->bbs, off = io->offset_blocks, num = io->num_blocks;
	uint32_t bbs = r->bbs;
	struct iovec *v;
	int n = 0, m;

	if (io->type == BDEV_IO_UNMAP) {
		off = io->ranges[rio->next_range].offset_blocks;
		num = io->ranges[rio->next_range].num_blocks;
		rio->next_range++;
	}
	rio->a = base + off * BDEV_PACKED_BLOCK_SIZE;
	rio->b = rio->a + num * BDEV_PACKED_BLOCK_SIZE;
	if (io->type == BDEV_IO_UNMAP && !num)
		return bdev_region_piece_done(io, 0);
	if (rio->a % bbs == 0 && rio->b % bbs == 0)
		return bdev_region_child_submit(io, io->type, rio->a / bbs, (rio->b - rio->a) / bbs,
						io->iov, io->iovcnt, bdev_region_piece_child_done);
	if (io->type == BDEV_IO_READ) {
		/* The base blocks around it: the parts outside the io land in scratch. */
		rio->s = bdev_region_scratch_get(rio->chan, bbs);
		if (!rio->s)
			return bdev_region_piece_done(io, -ENOMEM);
		v = rio->s->iov;
		if (rio->a % bbs)
			v[n++] = (struct iovec){rio->s->edge, rio->a % bbs};
		m = bdev_region_iov_slice(io->iov, io->iovcnt, 0, rio->b - rio->a, v + n,
					  BDEV_REGION_MAX_IOV);
		if (m < 0)
			return bdev_region_piece_done(io, -EINVAL);
		n += m;
		if (rio->b % bbs)
			v[n++] = (struct iovec){rio->s->edge + bbs, bbs - rio->b % bbs};
		return bdev_region_child_submit(io, BDEV_IO_READ, rio->a / bbs,
						(rio->b + bbs - 1) / bbs - rio->a / bbs, v, n,
						bdev_region_piece_child_done);
	}
	/* A write of some kind sharing a base block with other logical blocks: hold it. */
	rio->head = rio->a % bbs != 0;
	rio->tail = rio->b % bbs != 0 && !(rio->head && (rio->b - 1) / bbs == rio->a / bbs);
	rio->nlk = 0;
	if (rio->head)
		rio->lk[rio->nlk++] = rio->a / bbs;
	if (rio->tail)
		rio->lk[rio->nlk++] = (rio->b - 1) / bbs;
	if (bdev_region_lock(r, io))
		bdev_region_rmw_go(io);
}

static void bdev_region_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = ch->drv;
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_io *child = bdev_region_child(io);

	rio->next_range = 0;
	rio->chan = c;
	rio->s = NULL;
	if (!r->ratio && io->type != BDEV_IO_FLUSH)
		return bdev_region_piece_start(ch, io);
	if (io->type == BDEV_IO_UNMAP) {
		bdev_region_unmap_next(ch, io);
		return;
	}
	/* The core checked the range against the region, which lies inside the base. */
	memset(child, 0, sizeof(*child));
	child->type = io->type;
	child->flags = io->flags;
	child->offset_blocks = r->offset + io->offset_blocks * r->ratio;
	child->num_blocks = io->num_blocks * r->ratio;
	child->iov = io->iov;
	child->iovcnt = io->iovcnt;
	child->cb = bdev_region_child_done;
	child->cb_arg = io;
	bdev_submit(c->base_ch, child);
}

/* The shared eventfd fired: reap the base channel; its callbacks complete region ios into this
 * channel's done list, which bdev_channel_poll delivers right after. Then the packed ios other
 * threads handed their edge blocks. */
static void bdev_region_poll(struct bdev_channel *ch)
{
	struct bdev_region_chan *c = ch->drv;
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_io *io, *next;

	bdev_channel_poll(c->base_ch);
	if (!atomic_load_explicit(&c->has_ready, memory_order_acquire))
		return;
	pthread_mutex_lock(&r->lock);
	io = c->ready;
	c->ready = NULL;
	atomic_store_explicit(&c->has_ready, false, memory_order_relaxed);
	pthread_mutex_unlock(&r->lock);
	/* Granted in FIFO order, listed newest first: resume the oldest first. */
	struct bdev_io *rev = NULL;

	for (; io; io = next) {
		next = bdev_region_io(io)->rnext;
		bdev_region_io(io)->rnext = rev;
		rev = io;
	}
	for (io = rev; io; io = next) {
		next = bdev_region_io(io)->rnext;
		bdev_region_rmw_go(io);
	}
}

static void bdev_region_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_region *r = bdev->ctx;
	struct bdev_info base;

	bdev_get_info(r->base, &base);
	info->filename = base.filename;
	info->direct_io = base.direct_io;
}

static const struct bdev_module_ops bdev_region_ops = {
	.module_name = BDEV_REGION_MODULE,
	.product_name = "Region of a capacity pool",
	/* Set per region (the base's io follows ours); types and cache are the base's. */
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = true,
	.packed_blocks = true,
	.destruct = bdev_region_destruct,
	.channel_create = bdev_region_channel_create,
	.channel_destroy = bdev_region_channel_destroy,
	.submit = bdev_region_submit,
	.poll = bdev_region_poll,
	.get_info = bdev_region_get_info,
};

int bdev_region_create(const char *name, struct bdev *base, uint64_t offset_blocks,
		       uint64_t num_blocks, uint32_t block_size, const uint8_t *uuid,
		       struct bdev **out)
{
	struct bdev_region *r;
	uint64_t base_bytes;
	uint32_t ratio = 0;
	struct bdev *b;
	int rc;

	if (!base || !block_size || !num_blocks)
		return -EINVAL;
	base_bytes = base->num_blocks * base->block_size;
	if (block_size == BDEV_PACKED_BLOCK_SIZE) {
		/* Packed: the window's bytes, within the base. */
		if (offset_blocks > base->num_blocks ||
		    num_blocks > (base_bytes - offset_blocks * base->block_size) / block_size)
			return -EINVAL;
	} else {
		if (block_size % base->block_size)
			return -EINVAL;
		ratio = block_size / base->block_size;
		/* The whole window, in base blocks, must lie inside the base. */
		if (num_blocks > base->num_blocks / ratio ||
		    offset_blocks > base->num_blocks - num_blocks * ratio)
			return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = bdev_region_ops;
	r->ops.io_ctx_size = bdev_vbdev_ctx_size(sizeof(struct bdev_region_io), base);
	rc = bdev_alloc(name, &r->ops, block_size, num_blocks, uuid, &b);
	if (rc) {
		free(r);
		return rc;
	}
	r->base = base;
	r->offset = offset_blocks;
	r->ratio = ratio;
	r->bbs = base->block_size;
	pthread_mutex_init(&r->lock, NULL);
	b->io_types = base->io_types;
	b->has_write_cache = base->has_write_cache;
	b->write_cache = base->has_write_cache;
	b->ctx = r;
	bdev_open(base);
	rc = bdev_register(b);
	if (rc)
		goto out_close;
	if (out)
		*out = b;
	return 0;

out_close:
	bdev_close(base);
	pthread_mutex_destroy(&r->lock);
	free(r);
	bdev_free(b);
	return rc;
}
