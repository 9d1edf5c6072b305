/* backend/bdev_fdp.c - the placement bdev (Flexible Data Placement, issue 35): a base bdev laid
 * out as a superblock, a persistent LBA map and reclaim units (RUs) of ru_blocks blocks each.
 * A write carries a placement handle (io->placement, RUH 0..nruh-1; anything else is RUH 0): its
 * data goes to the write pointer of that handle's current RU, a fresh empty RU when that one is
 * full, so every handle's data sits in RUs of its own and no base write spans two RUs (a host
 * write larger than what is left is split at the boundary). Only when the data is written is
 * LBA -> physical block recorded in the map, and the host's write completes once the map block
 * holding that entry was written to the base (group commit: one map write batch in flight,
 * changes made meanwhile go in the next). Reads go through the map (an unmapped block reads as
 * zeroes); write zeroes and deallocation unmap. An RU whose blocks are all stale is free. When
 * free RUs run low, garbage collection copies the still-valid blocks of the closed RU with the
 * fewest valid ones into a GC RU of its own and remaps them (media bytes the host did not write:
 * MBMW counts them, MBE every RU handed out again). The exposed capacity leaves nruh + 2 RUs of
 * the base spare, so a closed RU with a stale block always exists while no RU is free.
 *
 * Crash safety: the map on the base is the truth. Data is written before the map entry that
 * points at it; a block a map entry stopped pointing at is only written again once the RU it is
 * in was handed out again, which waits until the map writes that freed it were followed by a
 * completed flush of the base (an RU freed in map batch s is reusable once a flush issued after
 * batch s completed). FUA writes (and deallocations) have their data and map writes FUA; a Flush
 * is a flush of the base after which every completed write's data and map entry are durable;
 * before it the superblock is written with the statistics (host, media and erased bytes), so a
 * restart goes on from the last Flush's counts (one such write at a time: an older snapshot
 * never lands last).
 * At creation the owner thread reads the superblock and the map (or writes new ones) with
 * asynchronous ios on its own channel and rebuilds the valid counts, the reverse map and the
 * free RUs, then reports to the creator's loop, which registers the bdev; nothing waits for it
 * (a failure is reported with its reason after the owner exited, and all it took is freed).
 * Every handle starts with a fresh RU (the ones they wrote into before are closed).
 *
 * Concurrency: all of the bdev's state (map, RUs, write pointers, GC) belongs to one thread of
 * the bdev's own, the owner: channels on poll group threads push their ios onto a lock-free
 * list (a Treiber stack, one CAS) and write the owner's eventfd; the owner places, translates
 * and submits them on its own channel of the base and completes them back to the submitting
 * channel (bdev_io_complete_remote, the core's funnel for ios finished elsewhere). Why one owner
 * rather than per-handle atomics: a write's placement, the map update of an LBA two channels
 * write at once, the stale counts and GC's "is this block still valid" all touch the same map
 * and RU counters; one owner makes each of them a plain sequential step with no lock on the data
 * path, and costs one cross-thread hop per io. Other threads only read the statistics and the
 * RUs' available counts (atomics) and ask for an RUH Update (an atomic flag the owner looks at
 * before it takes the next ios, so a write submitted after the request returned lands in the
 * new RU). The ring of reclaimed units (Media Reallocated events) has a mutex the owner takes
 * once per unit GC empties, never per io.
 */
#include "backend/bdev_vbdev.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "backend/bdev_fdp_internal.h"

static void fdp_run(struct fdp *f);
static void fdp_flush_done(struct fdp *f, struct fdp_op *op, int status);

/* ---- base ios ---- */

struct fdp_op *fdp_op_new(struct fdp *f, enum fdp_op_kind kind)
{
	size_t sz = (sizeof(struct fdp_op) + 15) & ~(size_t)15;
	struct fdp_op *op = calloc(1, sz + bdev_io_size(f->base));

	if (!op)
		return NULL;
	op->f = f;
	op->kind = kind;
	op->bio = (struct bdev_io *)((char *)op + sz);
	return op;
}

void fdp_op_free(struct fdp_op *op)
{
	free(op->iov);
	free(op->buf);
	free(op->lbas);
	free(op);
}

static void fdp_op_done(struct bdev_io *bio, int status, void *arg);

void fdp_op_submit(struct fdp_op *op, enum bdev_io_type type, uint64_t off, uint64_t n,
		   uint32_t flags)
{
	struct bdev_io *b = op->bio;

	b->type = type;
	b->flags = flags;
	b->offset_blocks = off;
	b->num_blocks = n;
	if (op->buf) {
		op->one.iov_base = op->buf;
		op->one.iov_len = n * op->f->bs;
		b->iov = &op->one;
		b->iovcnt = 1;
	} else if (op->iov) {
		b->iov = op->iov;
	}
	b->cb = fdp_op_done;
	b->cb_arg = op;
	op->f->ops_inflight++;
	bdev_submit(op->f->base_ch, b);
}

/* The iovecs of bytes [off, off + len) of iov into a new array (*cnt of them). NULL: ENOMEM. */
static struct iovec *fdp_iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t len,
				   int *cnt)
{
	struct iovec *out = calloc((size_t)iovcnt, sizeof(*out));
	int n = 0;

	if (!out)
		return NULL;
	for (int i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[n].iov_base = (char *)iov[i].iov_base + off;
		out[n].iov_len = l - off < len ? l - off : len;
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	*cnt = n;
	return out;
}

static void fdp_iov_zero(const struct iovec *iov, int iovcnt, size_t off, size_t len)
{
	for (int i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < len ? l - off : len;
		memset((char *)iov[i].iov_base + off, 0, take);
		len -= take;
		off = 0;
	}
}

/* ---- the map ---- */

/* Map block mb goes in the next map batch (once, however many of its entries changed). */
static void fdp_map_block_dirty(struct fdp *f, uint64_t mb)
{
	if (!f->dirty[mb]) {
		f->dirty[mb] = 1;
		f->dirty_list[f->ndirty++] = mb;
	}
}

static void fdp_mark_dirty(struct fdp *f, uint64_t lba)
{
	fdp_map_block_dirty(f, lba / f->epb);
}

static void fdp_ru_maybe_free(struct fdp *f, uint64_t r)
{
	struct fdp_ru *ru = &f->ru[r];

	if (ru->state == FDP_RU_CLOSED && !ru->valid && !ru->writers) {
		ru->state = FDP_RU_FREE;
		ru->wp = 0;
		ru->free_seq = f->map_seq_next;
		f->nfree++;
		if (!f->npending++ || ru->free_seq < f->min_pending_seq)
			f->min_pending_seq = ru->free_seq;
	}
}

/* LBA now at phys (FDP_NONE: unmapped); the block it was at goes stale. */
static void fdp_map_set(struct fdp *f, uint64_t lba, uint64_t phys)
{
	uint64_t old = f->map[lba];

	if (old) {
		uint64_t r = fdp_ru_of(f, old - 1);

		f->rmap[old - 1] = FDP_NONE;
		f->ru[r].valid--;
		fdp_ru_maybe_free(f, r);
	}
	if (phys != FDP_NONE) {
		f->map[lba] = phys + 1;
		f->rmap[phys] = lba;
		f->ru[fdp_ru_of(f, phys)].valid++;
	} else {
		f->map[lba] = 0;
	}
	if (old || phys != FDP_NONE)
		fdp_mark_dirty(f, lba);
}

static void fdp_complete(struct fdp_io *x)
{
	bdev_io_complete_remote(x->io, x->status);
}

/* io's map changes are made: it completes once they are written (or at once if it made none
 * and has nothing durable to wait for). */
static void fdp_map_wait(struct fdp *f, struct fdp_io *x)
{
	x->next = f->waiters;
	f->waiters = x;
	f->waiters_fua |= x->fua;
}

/* Starts a map batch when none is in flight: every dirty map block, copied as it is now. */
static void fdp_map_kick(struct fdp *f)
{
	uint32_t flags;

	if (f->batch_inflight || (!f->ndirty && !f->waiters))
		return;
	flags = f->waiters_fua ? BDEV_IO_F_FUA : 0;
	f->batch_waiters = f->waiters;
	f->waiters = NULL;
	f->waiters_fua = false;
	f->batch_status = 0;
	f->map_seq_next++;
	for (uint64_t i = 0, keep = 0; i < f->ndirty; i++) {
		uint64_t mb = f->dirty_list[i];
		struct fdp_op *op = fdp_op_new(f, FDP_OP_MAP);

		if (op)
			op->buf = malloc(f->bs);
		if (!op || !op->buf) {
			if (op)
				fdp_op_free(op);
			/* Stays dirty: the next batch tries it. */
			f->batch_status = -ENOMEM;
			f->dirty_list[keep++] = mb;
		} else {
			f->dirty[mb] = 0;
			memcpy(op->buf, f->map + mb * f->epb, f->bs);
			op->lba = mb;
			f->batch_inflight++;
			fdp_op_submit(op, BDEV_IO_WRITE, f->map_off + mb, 1, flags);
		}
		if (i + 1 == f->ndirty) {
			f->ndirty = keep;
			break;
		}
	}
	if (!f->batch_inflight) {
		/* Nothing to write (or nothing could be): the waiters' state is what it was. */
		struct fdp_io *w = f->batch_waiters;

		f->batch_waiters = NULL;
		f->map_seq_done = f->map_seq_next - 1;
		while (w) {
			struct fdp_io *nx = w->next;

			if (!w->status)
				w->status = f->batch_status;
			fdp_complete(w);
			w = nx;
		}
	}
}

static void fdp_map_batch_done(struct fdp *f)
{
	struct fdp_io *w = f->batch_waiters;

	f->batch_waiters = NULL;
	if (!f->batch_status)
		f->map_seq_done = f->map_seq_next - 1;
	while (w) {
		struct fdp_io *nx = w->next;

		if (!w->status)
			w->status = f->batch_status;
		fdp_complete(w);
		w = nx;
	}
}

/* ---- reclaim units ---- */

static uint64_t fdp_free_count(const struct fdp *f, bool clean_only)
{
	uint64_t n = 0;

	for (uint64_t r = 0; r < f->geom.nru; r++)
		if (f->ru[r].state == FDP_RU_FREE &&
		    (!clean_only || (f->ru[r].free_seq <= f->durable_seq && !f->ru[r].readers)))
			n++;
	return n;
}

static void fdp_ruamw_store(struct fdp *f, uint16_t h)
{
	uint64_t r = f->cur[h];
	uint64_t left = r == FDP_NONE ? f->geom.ru_blocks : f->geom.ru_blocks - f->ru[r].wp;

	__atomic_store_n(&f->ruamw[h], left, __ATOMIC_RELAXED);
}

/* Handle h (nruh: the GC) lets go of its RU. */
static void fdp_ru_close(struct fdp *f, uint16_t h)
{
	uint64_t r = f->cur[h];

	if (r == FDP_NONE)
		return;
	f->cur[h] = FDP_NONE;
	f->ru[r].state = FDP_RU_CLOSED;
	fdp_ru_maybe_free(f, r);
	if (h < f->geom.nruh)
		fdp_ruamw_store(f, h);
}

/* A fresh RU for handle h: a clean free one (the last one only for the GC). */
static bool fdp_ru_open(struct fdp *f, uint16_t h)
{
	uint64_t pick = FDP_NONE;

	if (fdp_free_count(f, true) <= (h == f->geom.nruh ? 0 : 1))
		return false;
	for (uint64_t r = 0; r < f->geom.nru; r++) {
		const struct fdp_ru *ru = &f->ru[r];

		if (ru->state == FDP_RU_FREE && ru->free_seq <= f->durable_seq && !ru->readers) {
			pick = r;
			break;
		}
	}
	f->ru[pick].state = FDP_RU_OPEN;
	f->ru[pick].owner = h;
	f->nfree--;
	f->ru[pick].wp = 0;
	f->cur[h] = pick;
	__atomic_fetch_add(&f->st.erased_bytes, f->geom.ru_blocks * f->bs, __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->st.ru_opened, 1, __ATOMIC_RELAXED);
	if (h < f->geom.nruh)
		fdp_ruamw_store(f, h);
	return true;
}

/* Room in handle h's RU: up to `want` blocks at *phys. 0: none now (wait for GC / a flush). */
static uint64_t fdp_take(struct fdp *f, uint16_t h, uint64_t want, uint64_t *phys)
{
	uint64_t r = f->cur[h], left;

	if (r != FDP_NONE && f->ru[r].wp == f->geom.ru_blocks)
		fdp_ru_close(f, h);
	if (f->cur[h] == FDP_NONE && !fdp_ru_open(f, h))
		return 0;
	r = f->cur[h];
	left = f->geom.ru_blocks - f->ru[r].wp;
	if (want > left)
		want = left;
	*phys = r * f->geom.ru_blocks + f->ru[r].wp;
	f->ru[r].wp += want;
	f->ru[r].writers++;
	if (h < f->geom.nruh)
		fdp_ruamw_store(f, h);
	return want;
}

/* ---- garbage collection ---- */

static void fdp_gc_step(struct fdp *f)
{
	uint64_t rub = f->geom.ru_blocks;

	if (f->gc_victim == FDP_NONE) {
		uint64_t best = FDP_NONE, bestv = rub;

		/* Only when free RUs run low: fewer than two, i.e. one for the GC and none
		 * left for the handles. */
		if (f->nfree >= 2)
			return;
		for (uint64_t r = 0; r < f->geom.nru; r++) {
			const struct fdp_ru *ru = &f->ru[r];

			if (ru->state == FDP_RU_CLOSED && !ru->writers && ru->valid < bestv) {
				best = r;
				bestv = ru->valid;
			}
		}
		if (best == FDP_NONE)
			return;
		f->gc_victim = best;
		f->gc_scan = 0;
		f->gc_moved = 0;
		f->gc_first_lba = FDP_NONE;
		__atomic_fetch_add(&f->st.gc_runs, 1, __ATOMIC_RELAXED);
	}
	while (f->gc_inflight < FDP_GC_INFLIGHT && f->gc_scan < rub) {
		uint64_t src = f->gc_victim * rub + f->gc_scan, n = 0, dst, got;
		struct fdp_op *op;

		if (f->rmap[src] == FDP_NONE) {
			f->gc_scan++;
			continue;
		}
		while (f->gc_scan + n < rub && n < FDP_GC_BATCH && f->rmap[src + n] != FDP_NONE)
			n++;
		op = fdp_op_new(f, FDP_OP_GC_READ);
		if (!op)
			return;
		got = fdp_take(f, f->geom.nruh, n, &dst);
		if (!got) {
			fdp_op_free(op);
			return;
		}
		op->buf = malloc(got * f->bs);
		op->lbas = malloc(got * sizeof(uint64_t));
		if (!op->buf || !op->lbas) {
			f->ru[fdp_ru_of(f, dst)].writers--;
			fdp_op_free(op);
			return;
		}
		for (uint64_t i = 0; i < got; i++)
			op->lbas[i] = f->rmap[src + i];
		op->lba = src; /* GC: the source */
		op->phys = dst;
		op->n = got;
		f->ru[f->gc_victim].readers++;
		f->gc_scan += got;
		f->gc_inflight++;
		fdp_op_submit(op, BDEV_IO_READ, f->data_off + src, got, 0);
	}
	if (f->gc_scan >= rub && !f->gc_inflight) {
		if (f->gc_moved) {
			struct timespec ts;
			struct bdev_placement_event *e;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			pthread_mutex_lock(&f->ev_lock);
			e = &f->ev[f->nev++ % BDEV_PLACEMENT_EVENTS];
			e->time_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
			e->lba = f->gc_first_lba;
			e->nlbam = f->gc_moved;
			e->ruh = f->ru[f->gc_victim].owner;
			pthread_mutex_unlock(&f->ev_lock);
		}
		fdp_ru_maybe_free(f, f->gc_victim);
		f->gc_victim = FDP_NONE;
	}
}

static void fdp_gc_read_done(struct fdp *f, struct fdp_op *op, int status)
{
	f->ru[f->gc_victim].readers--;
	if (status) {
		LOG_ERR(BDEV_LOG, "%s: GC read of block %" PRIu64 ": %d", f->bdev->name, op->lba,
			status);
		f->ru[fdp_ru_of(f, op->phys)].writers--;
		fdp_ru_maybe_free(f, fdp_ru_of(f, op->phys));
		f->gc_inflight--;
		fdp_op_free(op);
		return;
	}
	op->kind = FDP_OP_GC_WRITE;
	fdp_op_submit(op, BDEV_IO_WRITE, f->data_off + op->phys, op->n, 0);
}

static void fdp_gc_write_done(struct fdp *f, struct fdp_op *op, int status)
{
	uint64_t r = fdp_ru_of(f, op->phys);

	if (!status) {
		for (uint64_t i = 0; i < op->n; i++) {
			uint64_t lba = op->lbas[i];

			/* Still where GC found it (not written or unmapped meanwhile). */
			if (lba != FDP_NONE && f->map[lba] == op->lba + i + 1) {
				fdp_map_set(f, lba, op->phys + i);
				if (f->gc_first_lba == FDP_NONE)
					f->gc_first_lba = lba;
				f->gc_moved++;
			}
		}
		__atomic_fetch_add(&f->st.media_bytes, op->n * f->bs, __ATOMIC_RELAXED);
		__atomic_fetch_add(&f->st.gc_bytes, op->n * f->bs, __ATOMIC_RELAXED);
	} else {
		LOG_ERR(BDEV_LOG, "%s: GC write of block %" PRIu64 ": %d", f->bdev->name, op->phys,
			status);
	}
	f->ru[r].writers--;
	fdp_ru_maybe_free(f, r);
	f->gc_inflight--;
	fdp_op_free(op);
}

/* ---- host ios ---- */

static struct fdp_io *fdp_ctx(struct bdev_io *io)
{
	return (struct fdp_io *)io->driver_ctx;
}

/* Places as much of write x as there is room for. False: it waits for an RU. */
static bool fdp_write_start(struct fdp *f, struct fdp_io *x)
{
	struct bdev_io *io = x->io;
	uint16_t h = io->placement < f->geom.nruh ? io->placement : 0;

	while (x->placed < io->num_blocks) {
		uint64_t phys, n = fdp_take(f, h, io->num_blocks - x->placed, &phys);
		struct fdp_op *op;
		int cnt;

		if (!n)
			return false;
		op = fdp_op_new(f, FDP_OP_WRITE);
		if (op)
			op->iov = fdp_iov_slice(io->iov, io->iovcnt, x->placed * f->bs, n * f->bs,
						&cnt);
		if (!op || !op->iov) {
			f->ru[fdp_ru_of(f, phys)].writers--;
			if (op)
				fdp_op_free(op);
			x->status = -ENOMEM;
			x->placed = io->num_blocks; /* the rest is not written */
			break;
		}
		op->upper = io;
		op->lba = io->offset_blocks + x->placed;
		op->phys = phys;
		op->n = n;
		op->bio->iovcnt = cnt;
		x->placed += n;
		x->pending++;
		fdp_op_submit(op, BDEV_IO_WRITE, f->data_off + phys, n, x->fua ? BDEV_IO_F_FUA : 0);
	}
	if (!x->pending)
		fdp_complete(x);
	return true;
}

static void fdp_write_done(struct fdp *f, struct fdp_op *op, int status)
{
	struct fdp_io *x = fdp_ctx(op->upper);
	uint64_t r = fdp_ru_of(f, op->phys);

	if (!status) {
		for (uint64_t i = 0; i < op->n; i++)
			fdp_map_set(f, op->lba + i, op->phys + i);
		__atomic_fetch_add(&f->st.host_bytes, op->n * f->bs, __ATOMIC_RELAXED);
		__atomic_fetch_add(&f->st.media_bytes, op->n * f->bs, __ATOMIC_RELAXED);
	} else if (!x->status) {
		x->status = status;
	}
	f->ru[r].writers--;
	fdp_ru_maybe_free(f, r);
	fdp_op_free(op);
	if (--x->pending || x->placed < x->io->num_blocks)
		return;
	if (x->status)
		fdp_complete(x);
	else
		fdp_map_wait(f, x);
}

static void fdp_read_start(struct fdp *f, struct fdp_io *x)
{
	struct bdev_io *io = x->io;
	uint64_t i = 0, rub = f->geom.ru_blocks;

	while (i < io->num_blocks) {
		uint64_t m = f->map[io->offset_blocks + i], n = 1;
		struct fdp_op *op;
		int cnt;

		if (!m) {
			while (i + n < io->num_blocks && !f->map[io->offset_blocks + i + n])
				n++;
			fdp_iov_zero(io->iov, io->iovcnt, i * f->bs, n * f->bs);
			i += n;
			continue;
		}
		/* Physically contiguous, inside one RU. */
		while (i + n < io->num_blocks && f->map[io->offset_blocks + i + n] == m + n &&
		       (m - 1 + n) % rub)
			n++;
		op = fdp_op_new(f, FDP_OP_READ);
		if (op)
			op->iov = fdp_iov_slice(io->iov, io->iovcnt, i * f->bs, n * f->bs, &cnt);
		if (!op || !op->iov) {
			if (op)
				fdp_op_free(op);
			x->status = -ENOMEM;
			break;
		}
		op->upper = io;
		op->phys = m - 1;
		op->n = n;
		op->bio->iovcnt = cnt;
		f->ru[fdp_ru_of(f, m - 1)].readers++;
		x->pending++;
		fdp_op_submit(op, BDEV_IO_READ, f->data_off + m - 1, n, 0);
		i += n;
	}
	if (!x->pending)
		fdp_complete(x);
}

static void fdp_read_done(struct fdp *f, struct fdp_op *op, int status)
{
	struct fdp_io *x = fdp_ctx(op->upper);

	f->ru[fdp_ru_of(f, op->phys)].readers--;
	if (status && !x->status)
		x->status = status;
	fdp_op_free(op);
	if (!--x->pending)
		fdp_complete(x);
}

static void fdp_unmap(struct fdp *f, uint64_t lba, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (f->map[lba + i])
			fdp_map_set(f, lba + i, FDP_NONE);
}

/* A flush of the base: io's (NULL: the owner's own, to make freed RUs reusable). */
static void fdp_flush_start(struct fdp *f, struct fdp_io *x)
{
	struct fdp_op *op = fdp_op_new(f, FDP_OP_FLUSH);

	if (!op) {
		if (x) {
			x->status = -ENOMEM;
			fdp_complete(x);
		}
		return;
	}
	op->upper = x ? x->io : NULL;
	op->covers = f->map_seq_done;
	if (!bdev_io_type_supported(f->base, BDEV_IO_FLUSH)) {
		/* A base without a volatile cache: what completed is durable. */
		fdp_flush_done(f, op, 0);
		return;
	}
	if (!x)
		f->flush_inflight = true;
	fdp_op_submit(op, BDEV_IO_FLUSH, 0, 0, 0);
}

static void fdp_flush_done(struct fdp *f, struct fdp_op *op, int status)
{
	if (!status && op->covers > f->durable_seq) {
		f->durable_seq = op->covers;
		/* Which freed RUs are still waiting for a flush (a scan per flush, not per io). */
		f->npending = 0;
		for (uint64_t r = 0; r < f->geom.nru; r++) {
			const struct fdp_ru *ru = &f->ru[r];

			if (ru->state == FDP_RU_FREE && ru->free_seq > f->durable_seq &&
			    (!f->npending++ || ru->free_seq < f->min_pending_seq))
				f->min_pending_seq = ru->free_seq;
		}
	}
	if (op->upper) {
		fdp_ctx(op->upper)->status = status;
		fdp_complete(fdp_ctx(op->upper));
	} else {
		f->flush_inflight = false;
	}
	fdp_op_free(op);
}

/* Owner: the superblock with the statistics now, for the host flushes in sb_waiters. */
static void fdp_sb_write(struct fdp *f)
{
	struct fdp_op *op = fdp_op_new(f, FDP_OP_SB);

	if (op)
		op->buf = calloc(1, f->bs);
	if (!op || !op->buf) {
		struct fdp_io *l = f->sb_waiters;

		f->sb_waiters = NULL;
		if (op)
			fdp_op_free(op);
		while (l) {
			struct fdp_io *nx = l->next;

			l->status = -ENOMEM;
			fdp_complete(l);
			l = nx;
		}
		return;
	}
	f->sb_batch = f->sb_waiters;
	f->sb_waiters = NULL;
	f->sb_inflight = true;
	fdp_sb_make(f, (struct fdp_sb *)op->buf);
	fdp_op_submit(op, BDEV_IO_WRITE, 0, 1, 0);
}

/* A host Flush: the statistics into the superblock, then the flush of the base (which makes
 * that write durable with the rest). */
static void fdp_sb_flush(struct fdp *f, struct fdp_io *x)
{
	x->next = f->sb_waiters;
	f->sb_waiters = x;
	if (!f->sb_inflight)
		fdp_sb_write(f);
}

static void fdp_sb_done(struct fdp *f, struct fdp_op *op, int status)
{
	struct fdp_io *l = f->sb_batch;

	fdp_op_free(op);
	f->sb_batch = NULL;
	f->sb_inflight = false;
	while (l) {
		struct fdp_io *nx = l->next;

		l->next = NULL;
		if (status) {
			l->status = status;
			fdp_complete(l);
		} else {
			fdp_flush_start(f, l);
		}
		l = nx;
	}
	if (f->sb_waiters)
		fdp_sb_write(f);
}

/* False: the io waits (a write with no RU to go to). */
static bool fdp_start(struct fdp *f, struct fdp_io *x)
{
	struct bdev_io *io = x->io;

	switch (io->type) {
	case BDEV_IO_WRITE:
		return fdp_write_start(f, x);
	case BDEV_IO_READ:
		fdp_read_start(f, x);
		return true;
	case BDEV_IO_WRITE_ZEROES:
		fdp_unmap(f, io->offset_blocks, io->num_blocks);
		fdp_map_wait(f, x);
		return true;
	case BDEV_IO_UNMAP:
		for (uint32_t i = 0; i < io->nranges; i++)
			fdp_unmap(f, io->ranges[i].offset_blocks, io->ranges[i].num_blocks);
		fdp_map_wait(f, x);
		return true;
	case BDEV_IO_FLUSH:
		fdp_sb_flush(f, x);
		return true;
	case BDEV_IO_TYPE_COUNT:
		break;
	}
	x->status = -EINVAL;
	fdp_complete(x);
	return true;
}

static void fdp_sb_done(struct fdp *f, struct fdp_op *op, int status);

static void fdp_op_done(struct bdev_io *bio, int status, void *arg)
{
	struct fdp_op *op = arg;
	struct fdp *f = op->f;

	(void)bio;
	f->ops_inflight--;
	switch (op->kind) {
	case FDP_OP_WRITE:
		fdp_write_done(f, op, status);
		break;
	case FDP_OP_READ:
		fdp_read_done(f, op, status);
		break;
	case FDP_OP_MAP:
		if (status) {
			LOG_ERR(BDEV_LOG, "%s: map block %" PRIu64 " write: %d", f->bdev->name,
				op->lba, status);
			f->batch_status = status;
			fdp_map_block_dirty(f, op->lba); /* written again with the next batch */
		}
		fdp_op_free(op);
		if (!--f->batch_inflight)
			fdp_map_batch_done(f);
		break;
	case FDP_OP_FLUSH:
		fdp_flush_done(f, op, status);
		break;
	case FDP_OP_GC_READ:
		fdp_gc_read_done(f, op, status);
		break;
	case FDP_OP_GC_WRITE:
		fdp_gc_write_done(f, op, status);
		break;
	case FDP_OP_LOAD:
		fdp_load_done(f, op, status);
		break;
	case FDP_OP_SB:
		fdp_sb_done(f, op, status);
		break;
	}
}

/* RUH Updates asked for, then the queued ios in order, then the GC, the map and the flush
 * that makes freed RUs reusable. */
static void fdp_run(struct fdp *f)
{
	for (uint16_t h = 0; h < f->geom.nruh; h++) {
		if (!__atomic_exchange_n(&f->update[h], 0, __ATOMIC_ACQ_REL))
			continue;
		if (f->cur[h] != FDP_NONE && f->ru[f->cur[h]].wp) {
			fdp_ru_close(f, h);
			__atomic_fetch_add(&f->st.ruh_updates, 1, __ATOMIC_RELAXED);
		}
	}
	while (f->qhead) {
		struct fdp_io *x = f->qhead;

		/* Off the queue first: x->next is the map waiters' link afterwards. */
		f->qhead = x->next;
		if (!f->qhead)
			f->qtail = NULL;
		if (!fdp_start(f, x)) {
			x->next = f->qhead;
			f->qhead = x;
			if (!f->qtail)
				f->qtail = x;
			break;
		}
	}
	fdp_map_kick(f);
	if (__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
		return;
	fdp_gc_step(f);
	fdp_map_kick(f);
	/* Freed RUs whose map batch is written: a flush makes them reusable. */
	if (!f->flush_inflight && f->npending && f->min_pending_seq <= f->map_seq_done)
		fdp_flush_start(f, NULL);
}

static void fdp_take_inbox(struct fdp *f)
{
	struct fdp_io *l = __atomic_exchange_n(&f->inbox, NULL, __ATOMIC_ACQUIRE), *rev = NULL;

	while (l) { /* newest first: reverse into submission order */
		struct fdp_io *nx = l->next;

		l->next = rev;
		rev = l;
		l = nx;
	}
	while (rev) {
		struct fdp_io *nx = rev->next;

		rev->next = NULL;
		if (f->qtail)
			f->qtail->next = rev;
		else
			f->qhead = rev;
		f->qtail = rev;
		rev = nx;
	}
}


/* The owner: makes its channel on the base, loads the layout (asynchronously, reported to the
 * creating thread's loop), then serves the inbox until stopped. A failed creation (or one the
 * creating thread stops before it registered the bdev) ends with exit_msg as its last act. */
void *fdp_main(void *arg)
{
	struct fdp *f = arg;
	struct epoll_event ev[2];
	int ep = epoll_create1(EPOLL_CLOEXEC), rc;

	pthread_setname_np(pthread_self(), "bdev-fdp");
	rc = ep < 0 ? -errno : bdev_channel_create(f->base, &f->base_ch);
	if (rc) {
		f->create_rc = rc;
		snprintf(f->create_msg, sizeof(f->create_msg),
			 "%s: no channel on %s for the owner thread: %s", f->bdev->name,
			 f->base->name, strerror(-rc));
		if (ep >= 0)
			close(ep);
		evloop_post(f->loop, &f->exit_msg, fdp_exit_msg, f);
		return NULL;
	}
	ev[0].events = EPOLLIN;
	ev[0].data.u32 = 0;
	epoll_ctl(ep, EPOLL_CTL_ADD, f->wake, &ev[0]);
	ev[0].data.u32 = 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, bdev_channel_get_fd(f->base_ch), &ev[0]);
	f->loading = true;
	f->load_phase = FDP_LOAD_SB;
	fdp_load_step(f);
	for (;;) {
		uint64_t v;
		bool stop = __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE) || f->load_failed;

		if (stop && !f->ops_inflight && !f->qhead && !f->inbox)
			break;
		if (epoll_wait(ep, ev, 2, stop ? 10 : -1) < 0 && errno != EINTR)
			break;
		if (read(f->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
		bdev_channel_poll(f->base_ch);
		if (f->loading || f->load_failed)
			continue;
		fdp_take_inbox(f);
		fdp_run(f);
	}
	bdev_channel_poll(f->base_ch);
	bdev_channel_destroy(f->base_ch);
	close(ep);
	if (__atomic_load_n(&f->creating, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&f->deleting, __ATOMIC_ACQUIRE))
		evloop_post(f->loop, &f->exit_msg, fdp_exit_msg, f);
	return NULL;
}

/* ---- the bdev ---- */

static void fdp_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct fdp *f = ch->bdev->ctx;
	struct fdp_io *x = fdp_ctx(io), *head;
	uint64_t one = 1;

	memset(x, 0, sizeof(*x));
	x->io = io;
	x->fua = io->flags & BDEV_IO_F_FUA;
	head = __atomic_load_n(&f->inbox, __ATOMIC_RELAXED);
	do {
		x->next = head;
	} while (!__atomic_compare_exchange_n(&f->inbox, &head, x, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if (write(f->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_ERR(BDEV_LOG, "%s: wake: %m", f->bdev->name);
}

void fdp_free(struct fdp *f)
{
	free(f->map);
	free(f->rmap);
	free(f->ru);
	free(f->cur);
	free(f->update);
	free(f->ruamw);
	free(f->dirty);
	free(f->dirty_list);
	if (f->wake >= 0)
		close(f->wake);
	pthread_mutex_destroy(&f->ev_lock);
	free(f);
}

/* Main thread: the owner is told to stop; it finishes the ios it has on the base (map writes,
 * GC copies), exits and reports on the loop (fdp_exit_msg), which joins it, releases the base
 * and ends the deletion. Nothing here waits for it. */
static void fdp_destruct_async(struct bdev *bdev)
{
	struct fdp *f = bdev->ctx;
	uint64_t one = 1;

	__atomic_store_n(&f->deleting, true, __ATOMIC_RELEASE);
	__atomic_store_n(&f->stop, true, __ATOMIC_RELEASE);
	if (write(f->wake, &one, sizeof(one)) < 0)
		LOG_ERR(BDEV_LOG, "%s: wake: %m", bdev->name);
}

static void fdp_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct fdp *f = bdev->ctx;

	info->base_name = f->base->name;
	info->placement = true;
	info->placement_geom = f->geom;
}

const struct bdev_module_ops fdp_ops = {
    .module_name = "fdp",
    .product_name = "Flexible Data Placement disk",
    .io_types = (1u << BDEV_IO_READ) | (1u << BDEV_IO_WRITE) | (1u << BDEV_IO_FLUSH) |
		(1u << BDEV_IO_WRITE_ZEROES) | (1u << BDEV_IO_UNMAP),
    .destruct_async = fdp_destruct_async,
    .submit = fdp_submit,
    .get_info = fdp_get_info,
};

static struct fdp *fdp_of(const struct bdev *bdev)
{
	if (!bdev || strcmp(bdev->ops->module_name, fdp_ops.module_name))
		return NULL;
	return bdev->ctx;
}

const struct bdev_placement_geom *bdev_get_placement(const struct bdev *bdev)
{
	const struct fdp *f = fdp_of(bdev);

	return f ? &f->geom : NULL;
}

uint64_t bdev_placement_ruamw(const struct bdev *bdev, uint16_t ruh)
{
	struct fdp *f = fdp_of(bdev);

	if (!f || ruh >= f->geom.nruh)
		return 0;
	if (__atomic_load_n(&f->update[ruh], __ATOMIC_ACQUIRE))
		return f->geom.ru_blocks;
	return __atomic_load_n(&f->ruamw[ruh], __ATOMIC_RELAXED);
}

int bdev_placement_ruh_update(struct bdev *bdev, uint16_t ruh)
{
	struct fdp *f = fdp_of(bdev);
	uint64_t one = 1;

	if (!f || ruh >= f->geom.nruh)
		return -EINVAL;
	__atomic_store_n(&f->update[ruh], 1, __ATOMIC_RELEASE);
	if (write(f->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

void bdev_placement_get_stats(const struct bdev *bdev, struct bdev_placement_stats *st)
{
	const struct fdp *f = fdp_of(bdev);

	memset(st, 0, sizeof(*st));
	if (!f)
		return;
	st->host_bytes = __atomic_load_n(&f->st.host_bytes, __ATOMIC_RELAXED);
	st->media_bytes = __atomic_load_n(&f->st.media_bytes, __ATOMIC_RELAXED);
	st->erased_bytes = __atomic_load_n(&f->st.erased_bytes, __ATOMIC_RELAXED);
	st->gc_bytes = __atomic_load_n(&f->st.gc_bytes, __ATOMIC_RELAXED);
	st->gc_runs = __atomic_load_n(&f->st.gc_runs, __ATOMIC_RELAXED);
	st->ru_opened = __atomic_load_n(&f->st.ru_opened, __ATOMIC_RELAXED);
	st->ruh_updates = __atomic_load_n(&f->st.ruh_updates, __ATOMIC_RELAXED);
}

unsigned int bdev_placement_get_events(const struct bdev *bdev, struct bdev_placement_event *out,
				       unsigned int max)
{
	struct fdp *f = fdp_of(bdev);
	unsigned int n = 0;
	uint64_t from;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->ev_lock);
	if (max > BDEV_PLACEMENT_EVENTS)
		max = BDEV_PLACEMENT_EVENTS;
	from = f->nev > max ? f->nev - max : 0;
	for (uint64_t i = from; i < f->nev; i++)
		out[n++] = f->ev[i % BDEV_PLACEMENT_EVENTS];
	pthread_mutex_unlock(&f->ev_lock);
	return n;
}
