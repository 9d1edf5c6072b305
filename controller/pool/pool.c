/* controller/pool/pool.c - the capacity pool of Namespace Management (NVMe Base 2.0 section 8.11):
 * one bdev carved into namespaces without copying (each a region bdev over an extent of it), a
 * best-fit extent allocator, and the layout kept in a header at the start of the pool (two
 * alternating copies, so a torn write leaves the previous one). Admin (main) thread. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/crc32c.h"
#include "controller/nvm/nvm.h"
#include "controller/pool/pool.h"

/*
 * On-disk layout (little-endian): bytes [0, 4 KiB) and [4 KiB, 8 KiB) hold two copies of the
 * header; the one with the valid CRC-32C and the highest generation is current, and each update
 * writes the other slot (with FUA). Namespaces are carved from [1 MiB, end), in 1 MiB units.
 */
#define CTRLR_POOL_MAGIC "nvme-emu nspool"
#define CTRLR_POOL_VERSION 1u
#define CTRLR_POOL_SLOT 4096u
#define CTRLR_POOL_HDR_BYTES (2 * CTRLR_POOL_SLOT)
#define CTRLR_POOL_DATA_START (1ull << 20)
#define CTRLR_POOL_FLAG_ATTACHED 0x1
#define CTRLR_POOL_FLAG_SHARED 0x2

struct ctrlr_pool_hdr_ent {
	uint32_t nsid; /* 0: slot unused */
	uint32_t block_size;
	uint64_t start; /* byte offset in the pool */
	uint64_t len;	/* bytes reserved (whole granules) */
	uint64_t nsze;	/* blocks */
	uint8_t flags;
	uint8_t flbas;
	uint8_t dps;
	uint8_t rsvd[5];
	uint8_t uuid[16];
	uint8_t rsvd2[8];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct ctrlr_pool_hdr_ent) == 64, "pool header entry");

struct ctrlr_pool_hdr {
	char magic[16];
	uint32_t version;
	uint32_t slot_size;
	uint64_t generation;
	uint64_t data_start;
	uint64_t data_end;
	uint32_t max_ns;
	uint32_t count;
	uint32_t crc; /* CRC-32C of the slot with this field zero */
	uint32_t rsvd;
	struct ctrlr_pool_hdr_ent ent[CTRLR_MAX_NAMESPACES];
} __attribute__((packed));
NVME_STATIC_ASSERT(sizeof(struct ctrlr_pool_hdr) <= CTRLR_POOL_SLOT, "pool header size");

enum ctrlr_pool_io_state {
	CTRLR_POOL_IO_IDLE = 0,
	CTRLR_POOL_IO_LOAD,
	CTRLR_POOL_IO_WRITE,
};

static void ctrlr_pool_io_start_write(struct ctrlr_ns_pool *pool);

/* ---- extents ---- */

static int ctrlr_pool_cmp_start(const void *a, const void *b)
{
	const struct ctrlr_pool_ns *x = *(struct ctrlr_pool_ns *const *)a;
	const struct ctrlr_pool_ns *y = *(struct ctrlr_pool_ns *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The allocated extents sorted by start; returns how many. */
static uint32_t ctrlr_pool_sorted(struct ctrlr_ns_pool *pool, struct ctrlr_pool_ns **out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (pool->ns[i].nsid)
			out[n++] = &pool->ns[i];
	qsort(out, n, sizeof(*out), ctrlr_pool_cmp_start);
	return n;
}

int ctrlr_pool_find_extent(struct ctrlr_ns_pool *pool, uint64_t len, uint64_t *start)
{
	struct ctrlr_pool_ns *sorted[CTRLR_MAX_NAMESPACES];
	uint32_t n = ctrlr_pool_sorted(pool, sorted);
	uint64_t pos = pool->data_start, best_len = UINT64_MAX, best = 0;

	/* Best fit over the gaps between allocated extents: the smallest gap that holds the
	 * request, so large gaps stay whole for large namespaces. */
	for (uint32_t i = 0; i <= n; i++) {
		uint64_t end = i < n ? sorted[i]->start : pool->data_end;
		uint64_t gap = end - pos;

		if (gap >= len && gap < best_len) {
			best_len = gap;
			best = pos;
		}
		if (i < n)
			pos = sorted[i]->start + sorted[i]->len;
	}
	if (best_len == UINT64_MAX)
		return -ENOSPC;
	*start = best;
	return 0;
}

uint64_t ctrlr_pool_granule(void)
{
	return CTRLR_POOL_GRANULE;
}

void ctrlr_ns_pool_get_info(const struct ctrlr_ns_pool *pool, struct ctrlr_ns_pool_info *info)
{
	struct ctrlr_pool_ns *sorted[CTRLR_MAX_NAMESPACES];
	uint64_t pos, largest = 0;
	uint32_t n;

	memset(info, 0, sizeof(*info));
	snprintf(info->bdev_name, sizeof(info->bdev_name), "%s", bdev_get_name(pool->base));
	info->total_bytes = pool->data_end - pool->data_start;
	info->free_bytes = info->total_bytes;
	info->granule = CTRLR_POOL_GRANULE;
	info->max_nsid = pool->max_nsid;
	info->generation = pool->generation;
	n = ctrlr_pool_sorted((struct ctrlr_ns_pool *)pool, sorted);
	pos = pool->data_start;
	for (uint32_t i = 0; i <= n; i++) {
		uint64_t end = i < n ? sorted[i]->start : pool->data_end;

		if (end - pos > largest)
			largest = end - pos;
		if (i < n) {
			info->free_bytes -= sorted[i]->len;
			pos = sorted[i]->start + sorted[i]->len;
		}
	}
	info->largest_free_bytes = largest;
	info->num_ns = n;
}

bool ctrlr_ns_pool_get_ns(const struct ctrlr_ns_pool *pool, uint32_t nsid,
			  struct ctrlr_ns_pool_ns_info *out)
{
	const struct ctrlr_pool_ns *e;

	if (!nsid || nsid > CTRLR_MAX_NAMESPACES || !pool->ns[nsid - 1].nsid)
		return false;
	e = &pool->ns[nsid - 1];
	memset(out, 0, sizeof(*out));
	out->nsid = e->nsid;
	out->offset_bytes = e->start;
	out->size_bytes = e->len;
	out->num_blocks = e->nsze;
	out->block_size = e->block_size;
	out->attached = e->attached;
	out->shared = e->nmic & 1;
	out->flbas = e->flbas;
	out->dps = e->dps;
	memcpy(out->uuid, e->uuid, sizeof(out->uuid));
	snprintf(out->bdev_name, sizeof(out->bdev_name), "%s", bdev_get_name(e->bdev));
	return true;
}

uint32_t ctrlr_pool_free_nsid(const struct ctrlr_ns_pool *pool)
{
	for (uint32_t nsid = 1; nsid <= pool->max_nsid; nsid++)
		if (!pool->ns[nsid - 1].nsid && !pool->reserved[nsid - 1])
			return nsid;
	return 0;
}

bool ctrlr_ns_pool_owns(const struct ctrlr_ns_pool *pool, uint32_t nsid)
{
	return nsid && nsid <= CTRLR_MAX_NAMESPACES && pool->ns[nsid - 1].nsid;
}

void ctrlr_ns_pool_reserve(struct ctrlr_ns_pool *pool, uint32_t nsid, bool reserved)
{
	if (nsid && nsid <= CTRLR_MAX_NAMESPACES)
		pool->reserved[nsid - 1] = reserved;
}

bool ctrlr_pool_reserved(const struct ctrlr_ns_pool *pool, uint32_t nsid)
{
	return nsid && nsid <= CTRLR_MAX_NAMESPACES && pool->reserved[nsid - 1];
}

/* Makes the region bdev of an entry whose extent is set. 0 or -errno. */
static int ctrlr_pool_region(struct ctrlr_ns_pool *pool, struct ctrlr_pool_ns *e)
{
	char name[BDEV_NAME_MAX + 1];
	int rc;

	if ((size_t)snprintf(name, sizeof(name), "%sn%u", bdev_get_name(pool->base), e->nsid) >=
	    sizeof(name))
		return -ENAMETOOLONG;
	rc = bdev_region_create(name, pool->base, e->start / bdev_get_block_size(pool->base),
				e->nsze, e->block_size, e->uuid, &e->bdev);
	if (rc)
		return rc;
	/* Held open by the pool: nobody deletes it under a namespace. */
	bdev_open(e->bdev);
	return 0;
}

static void ctrlr_pool_region_delete(struct ctrlr_pool_ns *e)
{
	char name[BDEV_NAME_MAX + 1];
	int rc;

	if (!e->bdev)
		return;
	snprintf(name, sizeof(name), "%s", bdev_get_name(e->bdev));
	bdev_close(e->bdev);
	rc = bdev_delete(name);
	if (rc)
		LOG_ERR(CTRLR_LOG, "namespace pool: cannot delete region %s: %d", name, rc);
	e->bdev = NULL;
}

int ctrlr_pool_alloc(struct ctrlr_ns_pool *pool, const struct ctrlr_pool_ns *req,
		     uint32_t *nsid_out)
{
	uint64_t bytes, len, start;
	struct ctrlr_pool_ns *e;
	uint32_t nsid;
	int rc;

	if (!req->nsze || !req->block_size || req->nsze > UINT64_MAX / req->block_size)
		return -ENOSPC;
	bytes = req->nsze * req->block_size;
	if (bytes > UINT64_MAX - CTRLR_POOL_GRANULE)
		return -ENOSPC;
	len = (bytes + CTRLR_POOL_GRANULE - 1) / CTRLR_POOL_GRANULE * CTRLR_POOL_GRANULE;
	nsid = req->nsid ? req->nsid : ctrlr_pool_free_nsid(pool);
	if (!nsid || nsid > pool->max_nsid || pool->ns[nsid - 1].nsid ||
	    pool->reserved[nsid - 1])
		return -EMLINK;
	rc = ctrlr_pool_find_extent(pool, len, &start);
	if (rc)
		return rc;
	e = &pool->ns[nsid - 1];
	*e = *req;
	e->nsid = nsid;
	e->start = start;
	e->len = len;
	e->bdev = NULL;
	if (!req->has_uuid) {
		if (getrandom(e->uuid, sizeof(e->uuid), 0) != (ssize_t)sizeof(e->uuid)) {
			rc = -errno;
			goto out_clear;
		}
		e->uuid[6] = (e->uuid[6] & 0x0f) | 0x40; /* RFC 9562 version 4 */
		e->uuid[8] = (e->uuid[8] & 0x3f) | 0x80;
	}
	e->has_uuid = true;
	rc = ctrlr_pool_region(pool, e);
	if (rc)
		goto out_clear;
	*nsid_out = nsid;
	return 0;

out_clear:
	memset(e, 0, sizeof(*e));
	return rc;
}

void ctrlr_pool_free(struct ctrlr_ns_pool *pool, uint32_t nsid)
{
	struct ctrlr_pool_ns *e = &pool->ns[nsid - 1];

	ctrlr_pool_region_delete(e);
	memset(e, 0, sizeof(*e));
}

/* ---- header I/O (the pool's own channel on the admin thread) ---- */

static void ctrlr_pool_hdr_encode(const struct ctrlr_ns_pool *pool, uint64_t gen, void *slot)
{
	struct ctrlr_pool_hdr *h = slot;
	uint32_t n = 0;

	memset(slot, 0, CTRLR_POOL_SLOT);
	memcpy(h->magic, CTRLR_POOL_MAGIC, sizeof(CTRLR_POOL_MAGIC));
	h->version = CTRLR_POOL_VERSION;
	h->slot_size = CTRLR_POOL_SLOT;
	h->generation = gen;
	h->data_start = pool->data_start;
	h->data_end = pool->data_end;
	h->max_ns = CTRLR_MAX_NAMESPACES;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		const struct ctrlr_pool_ns *e = &pool->ns[i];
		struct ctrlr_pool_hdr_ent *d = &h->ent[i];

		if (!e->nsid)
			continue;
		d->nsid = e->nsid;
		d->block_size = e->block_size;
		d->start = e->start;
		d->len = e->len;
		d->nsze = e->nsze;
		d->flags = (e->attached ? CTRLR_POOL_FLAG_ATTACHED : 0) |
			   (e->nmic & 1 ? CTRLR_POOL_FLAG_SHARED : 0);
		d->flbas = e->flbas;
		d->dps = e->dps;
		memcpy(d->uuid, e->uuid, sizeof(d->uuid));
		n++;
	}
	h->count = n;
	h->crc = crc32c(0, slot, CTRLR_POOL_SLOT);
}

/* Checks one header slot against the pool's geometry. Returns its generation, or 0 if it is not
 * a valid header. */
static uint64_t ctrlr_pool_hdr_check(const struct ctrlr_ns_pool *pool, const uint8_t *slot)
{
	struct ctrlr_pool_hdr h;
	uint8_t copy[CTRLR_POOL_SLOT];
	uint64_t bs = bdev_get_block_size(pool->base), used[CTRLR_MAX_NAMESPACES][2];
	uint32_t n = 0;

	memcpy(&h, slot, sizeof(h));
	if (memcmp(h.magic, CTRLR_POOL_MAGIC, sizeof(CTRLR_POOL_MAGIC)) ||
	    h.version != CTRLR_POOL_VERSION || h.slot_size != CTRLR_POOL_SLOT ||
	    h.max_ns != CTRLR_MAX_NAMESPACES || !h.generation)
		return 0;
	memcpy(copy, slot, sizeof(copy));
	memset(copy + offsetof(struct ctrlr_pool_hdr, crc), 0, sizeof(h.crc));
	if (crc32c(0, copy, sizeof(copy)) != h.crc)
		return 0;
	if (h.data_start != CTRLR_POOL_DATA_START || h.data_end != pool->data_end)
		return 0;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		const struct ctrlr_pool_hdr_ent *d = &h.ent[i];

		if (!d->nsid)
			continue;
		if (d->nsid != i + 1 ||
		    (d->block_size != 512 && d->block_size != 4096 &&
		     d->block_size != CTRLR_POOL_REGION_BS) ||
		    (d->block_size != CTRLR_POOL_REGION_BS && d->block_size % bs) ||
		    d->start % CTRLR_POOL_GRANULE ||
		    d->len % CTRLR_POOL_GRANULE || !d->nsze || d->start < h.data_start ||
		    d->start > h.data_end || d->len > h.data_end - d->start ||
		    d->nsze > d->len / d->block_size ||
		    !ctrlr_flbas_valid(d->block_size, d->flbas, d->dps, NULL))
			return 0;
		for (uint32_t j = 0; j < n; j++)
			if (d->start < used[j][1] && used[j][0] < d->start + d->len)
				return 0;
		used[n][0] = d->start;
		used[n][1] = d->start + d->len;
		n++;
	}
	return n == h.count ? h.generation : 0;
}

static void ctrlr_pool_io_done(struct bdev_io *io, int status, void *arg);

static void ctrlr_pool_io_submit(struct ctrlr_ns_pool *pool, enum bdev_io_type type,
				 uint64_t byte_off, uint32_t bytes, uint32_t flags)
{
	uint32_t bs = bdev_get_block_size(pool->base);

	memset(pool->io, 0, sizeof(*pool->io));
	pool->iov.iov_base = pool->buf + (type == BDEV_IO_WRITE ? 0 : byte_off);
	pool->iov.iov_len = bytes;
	pool->io->type = type;
	pool->io->flags = flags;
	pool->io->offset_blocks = byte_off / bs;
	pool->io->num_blocks = bytes / bs;
	pool->io->iov = &pool->iov;
	pool->io->iovcnt = 1;
	pool->io->cb = ctrlr_pool_io_done;
	pool->io->cb_arg = pool;
	bdev_submit(pool->ch, pool->io);
}

static void ctrlr_pool_watch_fn(int fd, uint32_t events, void *arg)
{
	struct ctrlr_ns_pool *pool = arg;

	bdev_channel_poll(pool->ch);
}

/* Calls every waiter of the write that ended. */
static void ctrlr_pool_waiters_run(struct ctrlr_pool_waiter *w, int rc)
{
	while (w) {
		struct ctrlr_pool_waiter *next = w->next;

		w->fn(w->arg, rc);
		w = next;
	}
}

static void ctrlr_pool_load_done(struct ctrlr_ns_pool *pool, int status);

static void ctrlr_pool_io_done(struct bdev_io *io, int status, void *arg)
{
	struct ctrlr_ns_pool *pool = arg;
	struct ctrlr_pool_waiter *w;

	if (pool->io_state == CTRLR_POOL_IO_LOAD) {
		pool->io_state = CTRLR_POOL_IO_IDLE;
		ctrlr_pool_load_done(pool, status);
		return;
	}
	pool->io_state = CTRLR_POOL_IO_IDLE;
	if (status) {
		LOG_ERR(CTRLR_LOG, "namespace pool %s: header write failed: %d",
			bdev_get_name(pool->base), status);
	} else {
		pool->generation = pool->writing_gen;
	}
	w = pool->inflight;
	pool->inflight = NULL;
	ctrlr_pool_waiters_run(w, status);
	if (pool->waiting)
		ctrlr_pool_io_start_write(pool);
	else if (pool->destroy_when_idle)
		ctrlr_ns_pool_destroy(pool);
}

static void ctrlr_pool_io_start_write(struct ctrlr_ns_pool *pool)
{
	uint64_t gen = pool->generation + 1;

	/* Everyone waiting now is served by this write (it carries the state as of now). */
	pool->inflight = pool->waiting;
	pool->waiting = NULL;
	pool->writing_gen = gen;
	ctrlr_pool_hdr_encode(pool, gen, pool->buf);
	pool->io_state = CTRLR_POOL_IO_WRITE;
	ctrlr_pool_io_submit(pool, BDEV_IO_WRITE, (gen & 1) * CTRLR_POOL_SLOT, CTRLR_POOL_SLOT,
			     BDEV_IO_F_FUA);
}

void ctrlr_pool_sync(struct ctrlr_ns_pool *pool, struct ctrlr_pool_waiter *w)
{
	struct ctrlr_pool_waiter **pp = &pool->waiting;

	while (*pp)
		pp = &(*pp)->next;
	w->next = NULL;
	*pp = w;
	if (pool->io_state == CTRLR_POOL_IO_IDLE)
		ctrlr_pool_io_start_write(pool);
}

/* ---- creation ---- */

static void ctrlr_pool_create_finish(struct ctrlr_ns_pool *pool, int rc, const char *msg)
{
	ctrlr_ns_pool_done_fn done = pool->create_done;
	void *arg = pool->create_arg;

	pool->create_done = NULL;
	if (rc) {
		ctrlr_ns_pool_destroy(pool);
		done(arg, rc, msg, NULL);
		return;
	}
	done(arg, 0, NULL, pool);
}

static void ctrlr_pool_format_done(void *arg, int rc)
{
	struct ctrlr_ns_pool *pool = arg;
	char msg[128];

	if (rc) {
		snprintf(msg, sizeof(msg), "cannot write the pool header: %s", strerror(-rc));
		ctrlr_pool_create_finish(pool, rc, msg);
		return;
	}
	ctrlr_pool_create_finish(pool, 0, NULL);
}

static bool ctrlr_pool_is_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* The header slots were read: adopt the newest valid one, or start a fresh layout. */
static void ctrlr_pool_load_done(struct ctrlr_ns_pool *pool, int status)
{
	uint64_t g0, g1, gen;
	const uint8_t *slot;
	struct ctrlr_pool_hdr h;
	char msg[160];
	int rc;

	if (status) {
		snprintf(msg, sizeof(msg), "cannot read the pool header: %s", strerror(-status));
		ctrlr_pool_create_finish(pool, status, msg);
		return;
	}
	g0 = ctrlr_pool_hdr_check(pool, pool->buf);
	g1 = ctrlr_pool_hdr_check(pool, pool->buf + CTRLR_POOL_SLOT);
	if (!g0 && !g1) {
		/* A pool header that does not fit this bdev (cut short by a full disk, grown, a
		 * copy torn): refused, never taken for a blank bdev nor advised to be formatted. */
		for (int i = 0; i < 2 && !pool->format; i++) {
			struct ctrlr_pool_hdr t;

			memcpy(&t, pool->buf + i * CTRLR_POOL_SLOT, sizeof(t));
			if (memcmp(t.magic, CTRLR_POOL_MAGIC, sizeof(CTRLR_POOL_MAGIC)))
				continue;
			if (t.data_end != pool->data_end)
				snprintf(msg, sizeof(msg),
					 "bdev %s: its namespace pool header is for %" PRIu64
					 " bytes of namespaces, the bdev now holds %" PRIu64
					 " (cut short or resized?): refused",
					 bdev_get_name(pool->base), t.data_end - t.data_start,
					 (uint64_t)(pool->data_end - CTRLR_POOL_DATA_START));
			else
				snprintf(msg, sizeof(msg),
					 "bdev %s: its namespace pool header is damaged (bad checksum "
					 "or layout in both copies): refused",
					 bdev_get_name(pool->base));
			ctrlr_pool_create_finish(pool, -EINVAL, msg);
			return;
		}
		if (!pool->format && !ctrlr_pool_is_zero(pool->buf, CTRLR_POOL_HDR_BYTES)) {
			snprintf(msg, sizeof(msg),
				 "bdev %s holds data but no namespace pool header (format it to "
				 "use it as a pool)",
				 bdev_get_name(pool->base));
			ctrlr_pool_create_finish(pool, -EINVAL, msg);
			return;
		}
		/* A blank pool: the namespaces the configuration lists, if any, are laid out
		 * again (their data is whatever the bdev holds: zeroes for a new one). */
		for (uint32_t i = 0; i < pool->num_seed; i++) {
			uint32_t nsid;

			rc = ctrlr_pool_alloc(pool, &pool->seed[i], &nsid);
			if (rc) {
				snprintf(msg, sizeof(msg), "cannot re-create namespace %u: %s",
					 pool->seed[i].nsid, strerror(-rc));
				ctrlr_pool_create_finish(pool, rc, msg);
				return;
			}
		}
		pool->format_waiter.fn = ctrlr_pool_format_done;
		pool->format_waiter.arg = pool;
		ctrlr_pool_sync(pool, &pool->format_waiter);
		return;
	}
	slot = g1 > g0 ? pool->buf + CTRLR_POOL_SLOT : pool->buf;
	gen = g1 > g0 ? g1 : g0;
	memcpy(&h, slot, sizeof(h));
	pool->generation = gen;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		const struct ctrlr_pool_hdr_ent *d = &h.ent[i];
		struct ctrlr_pool_ns *e = &pool->ns[i];

		if (!d->nsid)
			continue;
		if (d->nsid > pool->max_nsid || pool->reserved[i]) {
			snprintf(msg, sizeof(msg),
				 "the pool holds namespace %u, which %s", d->nsid,
				 pool->reserved[i] ? "the subsystem already has"
						   : "is above max_namespaces");
			ctrlr_pool_create_finish(pool, -EEXIST, msg);
			return;
		}
		e->nsid = d->nsid;
		e->block_size = d->block_size;
		e->start = d->start;
		e->len = d->len;
		e->nsze = d->nsze;
		e->attached = d->flags & CTRLR_POOL_FLAG_ATTACHED;
		e->nmic = d->flags & CTRLR_POOL_FLAG_SHARED ? 1 : 0;
		e->flbas = d->flbas;
		e->dps = d->dps;
		e->has_uuid = true;
		memcpy(e->uuid, d->uuid, sizeof(e->uuid));
		rc = ctrlr_pool_region(pool, e);
		if (rc) {
			snprintf(msg, sizeof(msg), "cannot make the bdev of namespace %u: %s",
				 e->nsid, strerror(-rc));
			e->nsid = 0;
			ctrlr_pool_create_finish(pool, rc, msg);
			return;
		}
	}
	LOG_INFO(CTRLR_LOG, "namespace pool %s: %u namespaces (generation %" PRIu64 ")",
		 bdev_get_name(pool->base), h.count, gen);
	ctrlr_pool_create_finish(pool, 0, NULL);
}

int ctrlr_ns_pool_create(const struct ctrlr_ns_pool_opts *o, ctrlr_ns_pool_done_fn done,
			 void *arg)
{
	struct ctrlr_ns_pool *pool;
	uint64_t size;
	int rc;

	if (!o->bdev || !o->loop || !done || o->max_nsid > CTRLR_MAX_NAMESPACES ||
	    o->num_ns > CTRLR_MAX_NAMESPACES)
		return -EINVAL;
	/* Namespaces are made in the one LBA format (512-byte blocks). */
	if (bdev_get_block_size(o->bdev) != 512)
		return -EINVAL;
	size = bdev_get_num_blocks(o->bdev) * 512;
	if (size < CTRLR_POOL_DATA_START + CTRLR_POOL_GRANULE)
		return -ENOSPC;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->base = o->bdev;
	pool->loop = o->loop;
	pool->max_nsid = o->max_nsid ? o->max_nsid : CTRLR_MAX_NAMESPACES;
	pool->format = o->format;
	pool->data_start = CTRLR_POOL_DATA_START;
	pool->data_end = size / CTRLR_POOL_GRANULE * CTRLR_POOL_GRANULE;
	for (uint32_t i = 0; o->reserved && i < CTRLR_MAX_NAMESPACES; i++)
		pool->reserved[i] = o->reserved[i];
	for (uint32_t i = 0; i < o->num_ns; i++) {
		const struct ctrlr_ns_pool_ns_info *s = &o->ns[i];
		struct ctrlr_pool_ns *d = &pool->seed[i];

		if (!s->nsid || s->nsid > CTRLR_MAX_NAMESPACES ||
		    (s->block_size != 512 && s->block_size != 4096 &&
		     s->block_size != CTRLR_POOL_REGION_BS) || !s->num_blocks ||
		    !ctrlr_flbas_valid(s->block_size, s->flbas, s->dps, NULL)) {
			free(pool);
			return -EINVAL;
		}
		d->nsid = s->nsid;
		d->nsze = s->num_blocks;
		d->block_size = s->block_size;
		d->attached = s->attached;
		d->nmic = s->shared ? 1 : 0;
		d->flbas = s->flbas;
		d->dps = s->dps;
		d->has_uuid = true;
		memcpy(d->uuid, s->uuid, sizeof(d->uuid));
	}
	pool->num_seed = o->num_ns;
	rc = bdev_claim(o->bdev, "namespace pool");
	if (rc)
		goto out_free;
	bdev_open(o->bdev);
	pool->io = calloc(1, bdev_io_size(o->bdev));
	if (posix_memalign((void **)&pool->buf, 4096, CTRLR_POOL_HDR_BYTES) || !pool->io) {
		rc = -ENOMEM;
		goto out_release;
	}
	rc = bdev_channel_create(o->bdev, &pool->ch);
	if (rc)
		goto out_release;
	pool->watch = evloop_watch_add(o->loop, bdev_channel_get_fd(pool->ch), EPOLLIN,
				       ctrlr_pool_watch_fn, pool);
	if (!pool->watch) {
		rc = -ENOMEM;
		goto out_channel;
	}
	pool->create_done = done;
	pool->create_arg = arg;
	pool->io_state = CTRLR_POOL_IO_LOAD;
	ctrlr_pool_io_submit(pool, BDEV_IO_READ, 0, CTRLR_POOL_HDR_BYTES, 0);
	return 0;

out_channel:
	bdev_channel_destroy(pool->ch);
out_release:
	free(pool->io);
	free(pool->buf);
	bdev_close(o->bdev);
	bdev_release(o->bdev);
out_free:
	free(pool);
	return rc;
}

int ctrlr_ns_pool_destroy(struct ctrlr_ns_pool *pool)
{
	if (!pool)
		return 0;
	if (pool->ctrlr || pool->ops_head)
		return -EBUSY;
	if (pool->io_state != CTRLR_POOL_IO_IDLE) {
		/* The header write in flight ends first (its io points at us). */
		pool->destroy_when_idle = true;
		return 0;
	}
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (pool->ns[i].nsid)
			ctrlr_pool_region_delete(&pool->ns[i]);
	evloop_watch_remove(pool->watch);
	if (bdev_channel_destroy(pool->ch))
		LOG_ERR(CTRLR_LOG, "namespace pool: channel busy at destroy");
	bdev_close(pool->base);
	bdev_release(pool->base);
	free(pool->io);
	free(pool->buf);
	free(pool);
	return 0;
}

/* ---- controllers ---- */

int ctrlr_ns_pool_bind(struct ctrlr_ns_pool *pool, struct ctrlr *ctrlr)
{
	int rc;

	if (pool->ctrlr || ctrlr_pool_of(ctrlr))
		return -EBUSY;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_pool_ns *e = &pool->ns[i];

		if (!e->nsid || !e->attached)
			continue;
		rc = ctrlr_pool_ns_attach(ctrlr, e);
		if (rc < 0) {
			for (uint32_t j = 0; j < i; j++)
				if (pool->ns[j].nsid && pool->ns[j].attached)
					ctrlr_ns_remove(ctrlr, pool->ns[j].nsid);
			return rc;
		}
	}
	pool->ctrlr = ctrlr;
	((struct ctrlr_pool_ctrlr *)ctrlr_mod(ctrlr, CTRLR_MOD_POOL))->pool = pool;
	return 0;
}

void ctrlr_pool_unbind(struct ctrlr *ctrlr)
{
	struct ctrlr_pool_ctrlr *p = ctrlr_mod(ctrlr, CTRLR_MOD_POOL);

	if (!p->pool)
		return;
	p->pool->ctrlr = NULL;
	p->pool = NULL;
}

int ctrlr_pool_ns_attach(struct ctrlr *ctrlr, const struct ctrlr_pool_ns *e)
{
	struct ctrlr_ns_opts o = {
	    .uuid = e->uuid,
	    .nmic = e->nmic,
	    .set_format = true,
	    .flbas = e->flbas,
	    .dps = e->dps,
	};

	return ctrlr_ns_add(ctrlr, e->nsid, e->bdev, &o);
}

bool ctrlr_pool_format_changed(struct ctrlr *ctrlr, const struct ctrlr_ns *ns)
{
	struct ctrlr_pool_ns *e;

	if (!ctrlr_pool_of(ctrlr) || !ctrlr_ns_pool_owns(ctrlr_pool_of(ctrlr), ns->nsid))
		return false;
	e = &ctrlr_pool_of(ctrlr)->ns[ns->nsid - 1];
	if (e->bdev != ns->bdev)
		return false;
	ctrlr_ns_get_flbas(ns, &e->flbas, &e->dps);
	return true;
}
