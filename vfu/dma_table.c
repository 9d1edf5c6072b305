/* vfu/dma_table.c - the DMA window table: the client's guest-physical windows
 * as reference-counted regions (mmap of fd-backed ones, watched for SIGBUS by
 * dma_fault.c), looked up without locks through immutable snapshots that the
 * loop thread replaces and frees at the next quiescent point. */
#include "vfu/vfu_internal.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* One window. Immutable once published; freed (and munmapped) when the table
 * and every pin have let go of it. */
struct vfu_dma_region {
	struct vfu_dma_window w;
	void *map_base; /* what mmap returned (may precede w.local) */
	size_t map_len;
	struct vfu_fault_slot *fault; /* the mapping's SIGBUS watch */
	unsigned int refs; /* atomic: the table's reference + pins */
	struct vfu_dma_region *removed_next;
	bool removed; /* atomic: out of its table's lookups */
	/* In the process-wide list of local mappings (fd-backed windows), by address. */
	struct vfu_dma_region *local_next, **local_pprev;
};

/* Local mappings of every table, for lookups by address (vfu_dma_local_get): changed when a
 * window is mapped or freed, read when an I/O layer meets memory it has not registered yet. */
static pthread_mutex_t vfu_dma_local_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfu_dma_region *vfu_dma_local_head;
static void (*vfu_dma_removed_cb)(void);

static void vfu_dma_local_link(struct vfu_dma_region *r)
{
	pthread_mutex_lock(&vfu_dma_local_lock);
	r->local_next = vfu_dma_local_head;
	if (r->local_next)
		r->local_next->local_pprev = &r->local_next;
	r->local_pprev = &vfu_dma_local_head;
	vfu_dma_local_head = r;
	pthread_mutex_unlock(&vfu_dma_local_lock);
}

static void vfu_dma_local_unlink(struct vfu_dma_region *r)
{
	if (!r->local_pprev)
		return;
	pthread_mutex_lock(&vfu_dma_local_lock);
	*r->local_pprev = r->local_next;
	if (r->local_next)
		r->local_next->local_pprev = r->local_pprev;
	pthread_mutex_unlock(&vfu_dma_local_lock);
	r->local_pprev = NULL;
}

/* A window left its table's lookups. */
static void vfu_dma_mark_removed(struct vfu_dma_region *r)
{
	__atomic_store_n(&r->removed, true, __ATOMIC_RELEASE);
}

static void vfu_dma_notify_removed(void)
{
	void (*cb)(void) = __atomic_load_n(&vfu_dma_removed_cb, __ATOMIC_ACQUIRE);

	if (cb)
		cb();
}

struct vfu_dma_region *vfu_dma_local_get(const void *va, size_t len, void **base, size_t *size)
{
	uintptr_t a = (uintptr_t)va;
	struct vfu_dma_region *r;

	pthread_mutex_lock(&vfu_dma_local_lock);
	for (r = vfu_dma_local_head; r; r = r->local_next) {
		uintptr_t lo = (uintptr_t)r->w.local;

		if (a >= lo && len <= r->w.len && a - lo <= r->w.len - len &&
		    !__atomic_load_n(&r->removed, __ATOMIC_ACQUIRE)) {
			__atomic_add_fetch(&r->refs, 1, __ATOMIC_ACQ_REL);
			*base = r->w.local;
			*size = (size_t)r->w.len;
			break;
		}
	}
	pthread_mutex_unlock(&vfu_dma_local_lock);
	return r;
}

bool vfu_dma_region_removed(const struct vfu_dma_region *r)
{
	return __atomic_load_n(&r->removed, __ATOMIC_ACQUIRE);
}

void vfu_dma_set_removed_cb(void (*cb)(void))
{
	__atomic_store_n(&vfu_dma_removed_cb, cb, __ATOMIC_RELEASE);
}

/* The windows sorted by iova, never overlapping. Readers load the current
 * snapshot with acquire order and search it; the loop thread publishes a new
 * one for every change and keeps the old one until a quiescent point. */
struct vfu_dma_snap {
	uint64_t gen; /* unique in the process (vfu_dma_snap_gen): names this snapshot in caches */
	uint32_t n;
	struct vfu_dma_snap *retired_next;
	struct vfu_dma_region *r[];
};

struct vfu_dma_table {
	struct vfu_dma_snap *snap; /* atomic pointer, never NULL */
	struct vfu_dma_snap *retired;
	struct vfu_dma_region *removed; /* the table's references still held */
	uint32_t max;
	uint64_t max_bytes, bytes;
	bool allow_any_fd;
	struct vfu_dma_notifier *notifier; /* wakes the owner when a window lost its memory */
	uint64_t generation; /* bumped on every add/remove, read atomically */
};

/* Last byte of [iova, iova+len); the caller has checked len != 0. */
static inline uint64_t vfu_dma_last(uint64_t iova, uint64_t len)
{
	return iova + len - 1;
}

/* Snapshot generations, process-wide so that a cache keyed by one can never meet a later
 * snapshot of the same or another table under the same key (addresses are reused, these never). */
static uint64_t vfu_dma_snap_gen;

/* The window a thread found last and the snapshot it was found in: a queue's I/O lands in the
 * same few windows over and over, and a snapshot is immutable, so while the table still
 * publishes that snapshot the window is the answer a search would give. */
static __thread struct {
	uint64_t gen;
	struct vfu_dma_window w;
} vfu_dma_last_found;

static struct vfu_dma_snap *vfu_dma_snap_alloc(uint32_t n)
{
	struct vfu_dma_snap *s = calloc(1, sizeof(*s) + (size_t)n * sizeof(s->r[0]));

	if (s) {
		s->n = n;
		s->gen = __atomic_add_fetch(&vfu_dma_snap_gen, 1, __ATOMIC_RELAXED);
	}
	return s;
}

static struct vfu_dma_snap *vfu_dma_snap_get(const struct vfu_dma_table *t)
{
	return __atomic_load_n(&t->snap, __ATOMIC_ACQUIRE);
}

/* Publishes s; the old snapshot waits for the next quiescent point, since a
 * reader on another thread may still be searching it. Loop thread. */
static void vfu_dma_snap_publish(struct vfu_dma_table *t, struct vfu_dma_snap *s)
{
	struct vfu_dma_snap *old = t->snap;

	__atomic_store_n(&t->snap, s, __ATOMIC_RELEASE);
	old->retired_next = t->retired;
	t->retired = old;
	__atomic_add_fetch(&t->generation, 1, __ATOMIC_RELEASE);
}

struct vfu_dma_table *vfu_dma_table_create(uint32_t max_windows)
{
	struct vfu_dma_table *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return NULL;
	t->snap = vfu_dma_snap_alloc(0);
	if (!t->snap) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	rc = vfu_dma_notifier_create(&t->notifier);
	if (rc) {
		free(t->snap);
		free(t);
		errno = -rc;
		return NULL;
	}
	t->max = max_windows;
	t->max_bytes = UINT64_MAX;
	return t;
}

void vfu_dma_table_set_policy(struct vfu_dma_table *t, uint64_t max_bytes, bool allow_any_fd)
{
	t->max_bytes = max_bytes ? max_bytes : UINT64_MAX;
	t->allow_any_fd = allow_any_fd;
}

int vfu_dma_table_fault_fd(const struct vfu_dma_table *t)
{
	return vfu_dma_notifier_fd(t->notifier);
}

uint64_t vfu_dma_table_faults(struct vfu_dma_table *t, uint64_t *iova, uint64_t *len)
{
	return vfu_dma_notifier_take(t->notifier, iova, len);
}

static void vfu_dma_region_free(struct vfu_dma_region *r)
{
	vfu_dma_local_unlink(r);
	/* Unwatched first: once unmapped, the addresses may be mapped again by anyone. */
	vfu_dma_fault_unwatch(r->fault);
	if (r->map_base)
		munmap(r->map_base, r->map_len);
	free(r);
}

void vfu_dma_region_put(struct vfu_dma_region *r)
{
	if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0)
		vfu_dma_region_free(r);
}

void vfu_dma_table_destroy(struct vfu_dma_table *t)
{
	if (!t)
		return;
	vfu_dma_table_clear(t);
	vfu_dma_table_quiesce(t);
	vfu_dma_notifier_put(t->notifier);
	free(t->snap);
	free(t);
}

/* Index of the first entry whose last byte is >= iova (n if none). */
static uint32_t vfu_dma_lower_bound(const struct vfu_dma_snap *s, uint64_t iova)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (vfu_dma_last(s->r[mid]->w.iova, s->r[mid]->w.len) < iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Which fds a client may share as guest memory. Shrinking one under our mapping is contained
 * (dma_fault.c: the window turns into anonymous memory and the client is dropped), so a regular
 * file of tmpfs or hugetlbfs is taken sealed or not: a memfd, QEMU's memory-backend-file on
 * /dev/shm or /dev/hugepages, DPDK's hugepage files (SPDK's host). Anything else - a file on a
 * disk or network file system, whose page faults would wait for its I/O in a device thread, or a
 * device node, which could map anything - only from a client the operator trusts. */
static int vfu_dma_check_fd(const struct vfu_dma_table *t, int fd, const struct stat *st)
{
	struct statfs sfs;

	if (t->allow_any_fd)
		return 0;
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (S_ISREG(st->st_mode) &&
	    (sfs.f_type == TMPFS_MAGIC || sfs.f_type == HUGETLBFS_MAGIC))
		return 0;
	LOG_GUEST_ERR(VFU_COMP,
		      "DMA_MAP: the fd is %s, not a file of tmpfs or hugetlbfs (memfd, /dev/shm, "
		      "/dev/hugepages); a trusted client's needs --allow-any-dma-fd",
		      S_ISREG(st->st_mode) ? "a file of another file system" : "not a regular file");
	return -EPERM;
}

/* mmaps [fd_offset, fd_offset+len) of fd. Offsets are rounded down to the
 * fd's block size (2 MiB on hugetlbfs) as mmap requires; the window's local
 * pointer then points inside the mapping. A regular file must cover the
 * whole range, or a later access past EOF would raise SIGBUS in our process. */
static int vfu_dma_map_fd(const struct vfu_dma_table *t, struct vfu_dma_region *e, int fd,
			  uint64_t fd_offset)
{
	uint64_t blk = (uint64_t)sysconf(_SC_PAGESIZE), delta, map_len, end;
	int prot = 0, rc;
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	rc = vfu_dma_check_fd(t, fd, &st);
	if (rc)
		return rc;
	if (S_ISREG(st.st_mode) &&
	    (fd_offset > (uint64_t)st.st_size || e->w.len > (uint64_t)st.st_size - fd_offset)) {
		/* SPDK's host without -g (--single-file-segments) maps a run of hugepages, one
		 * file each, with the first one's fd. */
		LOG_GUEST_ERR(VFU_COMP,
			      "DMA_MAP [%#llx +%#llx]: the fd holds %lld bytes, not offset %#llx + "
			      "length", (unsigned long long)e->w.iova, (unsigned long long)e->w.len,
			      (long long)st.st_size, (unsigned long long)fd_offset);
		return -EINVAL;
	}
	if (st.st_blksize > 0 && (uint64_t)st.st_blksize > blk &&
	    !((uint64_t)st.st_blksize & ((uint64_t)st.st_blksize - 1)))
		blk = (uint64_t)st.st_blksize;
	delta = fd_offset & (blk - 1);
	if (__builtin_add_overflow(e->w.len, delta, &map_len) ||
	    __builtin_add_overflow(map_len, blk - 1, &end))
		return -EINVAL;
	map_len = end & ~(blk - 1);
	if (map_len > SIZE_MAX || (fd_offset - delta) > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (e->w.prot & VFIO_USER_DMA_READ_PROT)
		prot |= PROT_READ;
	if (e->w.prot & VFIO_USER_DMA_WRITE_PROT)
		prot |= PROT_WRITE;
	p = mmap(NULL, (size_t)map_len, prot, MAP_SHARED, fd, (off_t)(fd_offset - delta));
	if (p == MAP_FAILED)
		return -errno;
	rc = vfu_dma_fault_watch(t->notifier, p, (size_t)map_len, prot, e->w.iova, e->w.len,
				 &e->fault);
	if (rc) {
		LOG_ERR(VFU_COMP, "DMA_MAP [%#llx +%#llx]: cannot watch the mapping for SIGBUS: %s",
			(unsigned long long)e->w.iova, (unsigned long long)e->w.len, strerror(-rc));
		munmap(p, (size_t)map_len);
		return rc;
	}
	/* Guest RAM has no business in our core dumps. */
	madvise(p, (size_t)map_len, MADV_DONTDUMP);
	e->map_base = p;
	e->map_len = (size_t)map_len;
	e->w.local = (uint8_t *)p + delta;
	return 0;
}

int vfu_dma_table_add(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot, int fd,
		      uint64_t fd_offset)
{
	struct vfu_dma_snap *cur = t->snap, *s;
	struct vfu_dma_region *e;
	uint32_t pos;
	int rc;

	if (!len || iova + len - 1 < iova)
		return -EINVAL;
	if (prot & ~(VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT))
		return -EINVAL;
	pos = vfu_dma_lower_bound(cur, iova);
	if (pos < cur->n && cur->r[pos]->w.iova <= vfu_dma_last(iova, len))
		return -EEXIST;
	if (cur->n >= t->max)
		return -ENOSPC;
	if (fd >= 0 && len > t->max_bytes - t->bytes)
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	s = vfu_dma_snap_alloc(cur->n + 1);
	if (!e || !s) {
		rc = -ENOMEM;
		goto out_free;
	}
	e->w = (struct vfu_dma_window){.iova = iova, .len = len, .prot = prot};
	e->refs = 1;
	if (fd >= 0) {
		rc = vfu_dma_map_fd(t, e, fd, fd_offset);
		if (rc)
			goto out_free;
		t->bytes += len;
		vfu_dma_local_link(e);
	}
	memcpy(s->r, cur->r, pos * sizeof(s->r[0]));
	s->r[pos] = e;
	memcpy(&s->r[pos + 1], &cur->r[pos], (cur->n - pos) * sizeof(s->r[0]));
	vfu_dma_snap_publish(t, s);
	return 0;

out_free:
	free(s);
	free(e);
	return rc;
}

/* Takes entry pos out of the lookups; the table's reference is dropped at the
 * next quiescent point. Loop thread. */
static int vfu_dma_table_take(struct vfu_dma_table *t, uint32_t pos)
{
	struct vfu_dma_snap *cur = t->snap, *s = vfu_dma_snap_alloc(cur->n - 1);
	struct vfu_dma_region *e = cur->r[pos];

	if (!s)
		return -ENOMEM;
	memcpy(s->r, cur->r, pos * sizeof(s->r[0]));
	memcpy(&s->r[pos], &cur->r[pos + 1], (cur->n - pos - 1) * sizeof(s->r[0]));
	if (e->w.local)
		t->bytes -= e->w.len;
	e->removed_next = t->removed;
	t->removed = e;
	vfu_dma_mark_removed(e);
	vfu_dma_snap_publish(t, s);
	if (e->w.local)
		vfu_dma_notify_removed();
	return 0;
}

int vfu_dma_table_remove(struct vfu_dma_table *t, uint64_t iova, uint64_t len)
{
	struct vfu_dma_snap *cur = t->snap;
	uint32_t pos;

	if (!len || iova + len - 1 < iova)
		return -ENOENT;
	pos = vfu_dma_lower_bound(cur, iova);
	if (pos >= cur->n || cur->r[pos]->w.iova != iova || cur->r[pos]->w.len != len)
		return -ENOENT;
	return vfu_dma_table_take(t, pos);
}

void vfu_dma_table_clear(struct vfu_dma_table *t)
{
	struct vfu_dma_snap *cur = t->snap, *empty = vfu_dma_snap_alloc(0);

	if (!cur->n) {
		free(empty);
		return;
	}
	if (!empty) {
		/* Without memory for an empty snapshot, take them out one by one
		 * (each step needs a smaller allocation, still possible). */
		while (t->snap->n && !vfu_dma_table_take(t, t->snap->n - 1))
			;
		return;
	}
	for (uint32_t i = 0; i < cur->n; i++) {
		cur->r[i]->removed_next = t->removed;
		t->removed = cur->r[i];
		vfu_dma_mark_removed(cur->r[i]);
	}
	t->bytes = 0;
	vfu_dma_snap_publish(t, empty);
	vfu_dma_notify_removed();
}

void vfu_dma_table_quiesce(struct vfu_dma_table *t)
{
	while (t->retired) {
		struct vfu_dma_snap *s = t->retired;

		t->retired = s->retired_next;
		free(s);
	}
	while (t->removed) {
		struct vfu_dma_region *r = t->removed;

		t->removed = r->removed_next;
		vfu_dma_region_put(r);
	}
}

/* Entry containing the byte iova, or NULL. */
static struct vfu_dma_region *vfu_dma_lookup(const struct vfu_dma_snap *s, uint64_t iova,
					     uint32_t *pos_out)
{
	uint32_t pos = vfu_dma_lower_bound(s, iova);

	if (pos_out)
		*pos_out = pos;
	if (pos < s->n && s->r[pos]->w.iova <= iova)
		return s->r[pos];
	return NULL;
}

int vfu_dma_table_find(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
		       struct vfu_dma_window *out)
{
	const struct vfu_dma_snap *s = vfu_dma_snap_get(t);
	const struct vfu_dma_region *e;

	if (!len)
		len = 1;
	if (iova + len - 1 < iova)
		return -EFAULT;
	if (vfu_dma_last_found.gen == s->gen && iova >= vfu_dma_last_found.w.iova &&
	    vfu_dma_last(iova, len) <=
		vfu_dma_last(vfu_dma_last_found.w.iova, vfu_dma_last_found.w.len)) {
		*out = vfu_dma_last_found.w;
		return 0;
	}
	e = vfu_dma_lookup(s, iova, NULL);
	if (!e || vfu_dma_last(iova, len) > vfu_dma_last(e->w.iova, e->w.len))
		return -EFAULT;
	*out = e->w;
	vfu_dma_last_found.gen = s->gen;
	vfu_dma_last_found.w = e->w;
	return 0;
}

struct vfu_dma_region *vfu_dma_table_pin(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
					 uint32_t prot, void **local)
{
	struct vfu_dma_region *e;

	if (!len || iova + len - 1 < iova) {
		errno = EFAULT;
		return NULL;
	}
	e = vfu_dma_lookup(t->snap, iova, NULL);
	if (!e || vfu_dma_last(iova, len) > vfu_dma_last(e->w.iova, e->w.len) || !e->w.local) {
		errno = EFAULT;
		return NULL;
	}
	if ((e->w.prot & prot) != prot) {
		errno = EPERM;
		return NULL;
	}
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
	*local = (uint8_t *)e->w.local + (iova - e->w.iova);
	return e;
}

void vfu_dma_region_window(const struct vfu_dma_region *r, struct vfu_dma_window *out)
{
	*out = r->w;
}

int vfu_dma_table_iov(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot,
		      struct iovec *iov, int max_iov)
{
	const struct vfu_dma_snap *s = vfu_dma_snap_get(t);
	uint64_t cur = iova, left = len;
	uint32_t pos;
	int n = 0;

	if (!len || iova + len - 1 < iova || max_iov <= 0)
		return -EFAULT;
	if (!vfu_dma_lookup(s, iova, &pos))
		return -EFAULT;
	while (left) {
		const struct vfu_dma_region *e = pos < s->n ? s->r[pos] : NULL;
		uint64_t avail, take;

		/* Pieces must chain through windows with no hole between them. */
		if (!e || e->w.iova > cur || !e->w.local)
			return -EFAULT;
		if ((e->w.prot & prot) != prot)
			return -EPERM;
		if (n == max_iov)
			return -E2BIG;
		avail = vfu_dma_last(e->w.iova, e->w.len) - cur + 1;
		take = left < avail ? left : avail;
		iov[n].iov_base = (uint8_t *)e->w.local + (cur - e->w.iova);
		iov[n].iov_len = (size_t)take;
		n++;
		left -= take;
		cur += take;
		pos++;
	}
	return n;
}

int vfu_dma_table_first(struct vfu_dma_table *t, struct vfu_dma_window *out)
{
	const struct vfu_dma_snap *s = t->snap;

	if (!s->n)
		return -ENOENT;
	*out = s->r[0]->w;
	return 0;
}

uint32_t vfu_dma_table_count(struct vfu_dma_table *t)
{
	return vfu_dma_snap_get(t)->n;
}

uint64_t vfu_dma_table_generation(const struct vfu_dma_table *t)
{
	return __atomic_load_n(&t->generation, __ATOMIC_ACQUIRE);
}
