/* backend/bdev_fdp_create.c - the placement bdev's creation (bdev_fdp.c is the bdev itself):
 * the geometry from the options and the base, the owner thread started, the layout loaded by it
 * with ordinary asynchronous ios (the superblock read; a new layout's map zeroed and superblock
 * written, or an existing map read and the reverse map, valid counts and free units rebuilt from
 * it), and the result reported on the creator's loop, where the bdev is registered or, after a
 * failure, the owner joined once it exited and everything freed. Also what cancels creations
 * still loading at shutdown. */
#include "backend/bdev_fdp_internal.h"
#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- creation: the owner thread loads the layout with ordinary asynchronous ios ---- */

#define FDP_LOAD_CHUNK 256u /* map blocks per load io */

static void fdp_load_fail(struct fdp *f, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fdp_load_fail(struct fdp *f, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->create_msg, sizeof(f->create_msg), fmt, ap);
	va_end(ap);
	f->create_rc = rc;
	f->loading = false;
	f->load_failed = true;
}

/* The superblock this bdev's parameters give. */
void fdp_sb_make(const struct fdp *f, struct fdp_sb *sb)
{
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, FDP_MAGIC, 16);
	sb->version = FDP_VERSION;
	sb->block_size = f->bs;
	sb->nruh = f->geom.nruh;
	sb->ru_blocks = f->geom.ru_blocks;
	sb->nru = f->geom.nru;
	sb->num_blocks = f->geom.num_blocks;
	sb->map_off = f->map_off;
	sb->map_blocks = f->map_blocks;
	sb->data_off = f->data_off;
	sb->host_bytes = __atomic_load_n(&f->st.host_bytes, __ATOMIC_RELAXED);
	sb->media_bytes = __atomic_load_n(&f->st.media_bytes, __ATOMIC_RELAXED);
	sb->erased_bytes = __atomic_load_n(&f->st.erased_bytes, __ATOMIC_RELAXED);
}

/* Owner: the next io of the load (one at a time), or the end: created_msg to the creator. */
void fdp_load_step(struct fdp *f)
{
	struct fdp_op *op = fdp_op_new(f, FDP_OP_LOAD);
	uint64_t n = 0;

	if (!op) {
		fdp_load_fail(f, -ENOMEM, "%s: out of memory loading the placement map",
			      f->bdev->name);
		return;
	}
	switch (f->load_phase) {
	case FDP_LOAD_SB:
		op->buf = calloc(1, f->bs);
		if (!op->buf)
			break;
		fdp_op_submit(op, BDEV_IO_READ, 0, 1, 0);
		return;
	case FDP_LOAD_FORMAT:
	case FDP_LOAD_MAP:
		n = f->map_blocks - f->load_next;
		if (n > FDP_LOAD_CHUNK)
			n = FDP_LOAD_CHUNK;
		op->lba = f->load_next;
		op->n = n;
		if (f->load_phase == FDP_LOAD_FORMAT) {
			/* A new layout: the map zeroed (nothing mapped), then the superblock. */
			op->buf = calloc(n, f->bs);
			if (!op->buf)
				break;
			fdp_op_submit(op, BDEV_IO_WRITE, f->map_off + op->lba, n, BDEV_IO_F_FUA);
			return;
		}
		/* Read straight into the map. */
		op->one.iov_base = (uint8_t *)f->map + op->lba * f->bs;
		op->one.iov_len = n * f->bs;
		op->bio->iov = &op->one;
		op->bio->iovcnt = 1;
		fdp_op_submit(op, BDEV_IO_READ, f->map_off + op->lba, n, 0);
		return;
	case FDP_LOAD_SB_WRITE:
		op->buf = calloc(1, f->bs);
		if (!op->buf)
			break;
		fdp_sb_make(f, (struct fdp_sb *)op->buf);
		fdp_op_submit(op, BDEV_IO_WRITE, 0, 1, BDEV_IO_F_FUA);
		return;
	}
	fdp_op_free(op);
	fdp_load_fail(f, -ENOMEM, "%s: out of memory loading the placement map", f->bdev->name);
}

/* Owner: the map read; the reverse map, valid counts and free RUs from it. */
static int fdp_load_rebuild(struct fdp *f)
{
	uint64_t total = f->geom.nru * f->geom.ru_blocks;

	for (uint64_t lba = 0; lba < f->geom.num_blocks; lba++) {
		uint64_t m = f->map[lba];

		if (!m)
			continue;
		if (m > total || f->rmap[m - 1] != FDP_NONE) {
			fdp_load_fail(f, -EINVAL,
				      "%s: the placement map on %s is corrupt (LBA %" PRIu64
				      " maps to %" PRIu64 ")",
				      f->bdev->name, f->base->name, lba, m);
			return -EINVAL;
		}
		f->rmap[m - 1] = lba;
		f->ru[fdp_ru_of(f, m - 1)].valid++;
	}
	for (uint64_t r = 0; r < f->geom.nru; r++) {
		f->ru[r].state = f->ru[r].valid ? FDP_RU_CLOSED : FDP_RU_FREE;
		f->nfree += !f->ru[r].valid;
	}
	return 0;
}

void fdp_load_done(struct fdp *f, struct fdp_op *op, int status)
{
	static const char *const what[] = {"superblock read", "map format", "superblock write",
					   "map read"};
	struct fdp_sb sb, want;

	if (status) {
		fdp_load_fail(f, status < 0 ? status : -EIO, "%s: %s on %s failed: %s",
			      f->bdev->name, what[f->load_phase], f->base->name,
			      strerror(status < 0 ? -status : EIO));
		fdp_op_free(op);
		return;
	}
	switch (f->load_phase) {
	case FDP_LOAD_SB:
		memcpy(&sb, op->buf, sizeof(sb));
		f->fresh = memcmp(sb.magic, FDP_MAGIC, 16) != 0;
		fdp_sb_make(f, &want);
		if (f->fresh) {
			f->load_phase = FDP_LOAD_FORMAT;
			f->load_next = 0;
		} else if (memcmp(&sb, &want, FDP_SB_GEOM)) {
			fdp_load_fail(f, -EINVAL,
				      "%s: %s holds a placement layout of other parameters (%u "
				      "handles, reclaim units of %" PRIu64 " blocks, block size %u)",
				      f->bdev->name, f->base->name, sb.nruh, sb.ru_blocks,
				      sb.block_size);
			fdp_op_free(op);
			return;
		} else {
			/* The statistics go on from the last host Flush's. */
			f->st.host_bytes = sb.host_bytes;
			f->st.media_bytes = sb.media_bytes;
			f->st.erased_bytes = sb.erased_bytes;
			f->load_phase = FDP_LOAD_MAP;
			f->load_next = 0;
		}
		break;
	case FDP_LOAD_FORMAT:
	case FDP_LOAD_MAP:
		f->load_next += op->n;
		if (f->load_next < f->map_blocks)
			break;
		if (f->load_phase == FDP_LOAD_FORMAT) {
			f->load_phase = FDP_LOAD_SB_WRITE;
			break;
		}
		fdp_op_free(op);
		if (!fdp_load_rebuild(f)) {
			f->loading = false;
			evloop_post(f->loop, &f->created_msg, fdp_created_msg, f);
		}
		return;
	case FDP_LOAD_SB_WRITE:
		fdp_op_free(op);
		f->nfree = f->geom.nru;
		f->loading = false;
		evloop_post(f->loop, &f->created_msg, fdp_created_msg, f);
		return;
	}
	fdp_op_free(op);
	fdp_load_step(f);
}

static struct fdp *fdp_pending; /* main thread */

static void fdp_pending_remove(struct fdp *f)
{
	for (struct fdp **pp = &fdp_pending; *pp; pp = &(*pp)->next_pending) {
		if (*pp == f) {
			*pp = f->next_pending;
			return;
		}
	}
}

/* Creator's loop: the owner has exited after a failure (or after the creator stopped it), or
 * after bdev_delete stopped it: joined (it returns at once: its last act was to post this), the
 * failure reported or the deletion ended, everything freed. */
void fdp_exit_msg(void *arg)
{
	struct fdp *f = arg;
	bdev_create_cb done = f->cancelled ? NULL : f->done;

	pthread_join(f->thread, NULL);
	if (!__atomic_load_n(&f->creating, __ATOMIC_ACQUIRE)) {
		struct bdev *b = f->bdev;

		bdev_vbdev_put_base(f->base);
		fdp_free(f);
		bdev_destruct_done(b);
		return;
	}
	fdp_pending_remove(f);
	LOG_ERR(BDEV_LOG, "%s", f->create_msg);
	if (done)
		done(f->done_arg, f->create_rc, f->create_msg, NULL);
	bdev_free(f->bdev);
	bdev_vbdev_put_base(f->base);
	fdp_free(f);
}

static void fdp_stop_creating(struct fdp *f)
{
	uint64_t one = 1;

	__atomic_store_n(&f->stop, true, __ATOMIC_RELEASE);
	if (write(f->wake, &one, sizeof(one)) < 0)
		LOG_ERR(BDEV_LOG, "%s: wake: %m", f->bdev->name);
}

/* Creator's loop: the layout is loaded; the bdev registered (or the owner stopped). */
void fdp_created_msg(void *arg)
{
	struct fdp *f = arg;
	int rc;

	if (f->cancelled) {
		f->create_rc = -ECANCELED;
		snprintf(f->create_msg, sizeof(f->create_msg), "%s: creation cancelled",
			 f->bdev->name);
		fdp_stop_creating(f);
		return;
	}
	rc = bdev_register(f->bdev);
	if (rc) {
		f->create_rc = rc;
		snprintf(f->create_msg, sizeof(f->create_msg), "%s: cannot register: %s",
			 f->bdev->name, strerror(-rc));
		fdp_stop_creating(f); /* exit_msg reports it */
		return;
	}
	__atomic_store_n(&f->creating, false, __ATOMIC_RELEASE);
	fdp_pending_remove(f);
	LOG_INFO(BDEV_LOG,
		 "%s: %s placement over %s: %u handles, %" PRIu64 " reclaim units of %" PRIu64
		 " blocks, %" PRIu64 " blocks exposed",
		 f->bdev->name, f->fresh ? "new" : "existing", f->base->name, f->geom.nruh,
		 f->geom.nru, f->geom.ru_blocks, f->geom.num_blocks);
	f->done(f->done_arg, 0, NULL, f->bdev);
}

void bdev_fdp_cancel_creates(void)
{
	for (struct fdp *f = fdp_pending; f; f = f->next_pending) {
		if (f->cancelled)
			continue;
		f->cancelled = true;
		f->done(f->done_arg, -ECANCELED, "creation cancelled", NULL);
	}
}

int bdev_fdp_create(const char *name, const char *base_name, const struct bdev_fdp_opts *opts,
		    const uint8_t *uuid, struct evloop *loop, bdev_create_cb done, void *arg)
{
	struct bdev *base, *b;
	struct fdp *f;
	uint64_t base_blocks, nru, exposed, mapb;
	sigset_t all, old;
	int rc;

	if (!name || !*name || strlen(name) > BDEV_NAME_MAX || !opts || !opts->nruh ||
	    opts->nruh > BDEV_PLACEMENT_MAX_RUH || !opts->ru_blocks || !loop || !done)
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	for (f = fdp_pending; f; f = f->next_pending)
		if (!strcmp(f->bdev->name, name))
			return -EEXIST;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->wake = -1;
	pthread_mutex_init(&f->ev_lock, NULL);
	rc = bdev_vbdev_take_base(base_name, name, &base);
	if (rc) {
		pthread_mutex_destroy(&f->ev_lock);
		free(f);
		return rc;
	}
	f->base = base;
	f->bs = bdev_get_block_size(base);
	f->epb = f->bs / sizeof(uint64_t);
	base_blocks = bdev_get_num_blocks(base);
	/* Superblock, map, RUs: the map sized for what the RUs would give without it first. */
	nru = base_blocks > 1 ? (base_blocks - 1) / opts->ru_blocks : 0;
	exposed = nru > opts->nruh + FDP_SPARE_EXTRA ?
		      (nru - opts->nruh - FDP_SPARE_EXTRA) * opts->ru_blocks : 0;
	mapb = (exposed + f->epb - 1) / f->epb;
	nru = base_blocks > 1 + mapb ? (base_blocks - 1 - mapb) / opts->ru_blocks : 0;
	if (nru <= (uint64_t)opts->nruh + FDP_SPARE_EXTRA ||
	    !bdev_io_type_supported(base, BDEV_IO_READ) ||
	    !bdev_io_type_supported(base, BDEV_IO_WRITE) || f->bs < 512) {
		rc = -EINVAL;
		goto out_put;
	}
	exposed = (nru - opts->nruh - FDP_SPARE_EXTRA) * opts->ru_blocks;
	f->geom.nruh = opts->nruh;
	f->geom.ru_blocks = opts->ru_blocks;
	f->geom.nru = nru;
	f->geom.num_blocks = exposed;
	f->map_off = 1;
	f->map_blocks = mapb;
	f->data_off = 1 + mapb;
	f->map = calloc(mapb * f->epb, sizeof(uint64_t));
	f->rmap = malloc(nru * opts->ru_blocks * sizeof(uint64_t));
	f->ru = calloc(nru, sizeof(*f->ru));
	f->cur = malloc((opts->nruh + 1u) * sizeof(uint64_t));
	f->update = calloc(opts->nruh, 1);
	f->ruamw = calloc(opts->nruh, sizeof(uint64_t));
	f->dirty = calloc(mapb, 1);
	f->dirty_list = calloc(mapb, sizeof(uint64_t));
	f->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!f->map || !f->rmap || !f->ru || !f->cur || !f->update || !f->ruamw || !f->dirty ||
	    !f->dirty_list || f->wake < 0) {
		rc = f->wake < 0 ? -errno : -ENOMEM;
		goto out_put;
	}
	memset(f->rmap, 0xff, nru * opts->ru_blocks * sizeof(uint64_t));
	for (uint32_t h = 0; h <= opts->nruh; h++)
		f->cur[h] = FDP_NONE;
	for (uint32_t h = 0; h < opts->nruh; h++)
		f->ruamw[h] = opts->ru_blocks;
	f->gc_victim = FDP_NONE;
	f->map_seq_next = 1;
	f->ops = fdp_ops;
	f->ops.io_ctx_size = (sizeof(struct fdp_io) + 15) & ~(size_t)15;
	f->ops.has_write_cache = base->has_write_cache;
	rc = bdev_alloc(name, &f->ops, f->bs, exposed, uuid, &b);
	if (rc)
		goto out_put;
	b->has_write_cache = base->has_write_cache;
	b->write_cache = base->has_write_cache;
	b->ctx = f;
	f->bdev = b;
	f->loop = loop;
	f->done = done;
	f->done_arg = arg;
	f->creating = true;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&f->thread, NULL, fdp_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out_bdev;
	f->next_pending = fdp_pending;
	fdp_pending = f;
	return 0;
out_bdev:
	bdev_free(b);
out_put:
	bdev_vbdev_put_base(base);
	fdp_free(f);
	return rc;
}
