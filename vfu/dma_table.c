/* vfu/dma_table.c - the DMA window table: sorted guest-physical windows, mmap of
 * fd-backed ones, lookups from any thread under a rwlock. */
#include "vfu/vfu_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct vfu_dma_entry {
	struct vfu_dma_window w;
	void *map_base; /* what mmap returned (may precede w.local) */
	size_t map_len;
};

struct vfu_dma_table {
	pthread_rwlock_t lock;
	struct vfu_dma_entry *e; /* sorted by iova, never overlapping */
	uint32_t n, cap, max;
	uint64_t generation; /* bumped on every add/remove, read atomically */
};

/* Last byte of [iova, iova+len); the caller has checked len != 0. */
static inline uint64_t vfu_dma_last(uint64_t iova, uint64_t len)
{
	return iova + len - 1;
}

struct vfu_dma_table *vfu_dma_table_create(uint32_t max_windows)
{
	struct vfu_dma_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (pthread_rwlock_init(&t->lock, NULL)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->max = max_windows;
	return t;
}

static void vfu_dma_entry_release(struct vfu_dma_entry *e)
{
	if (e->map_base)
		munmap(e->map_base, e->map_len);
}

void vfu_dma_table_destroy(struct vfu_dma_table *t)
{
	if (!t)
		return;
	vfu_dma_table_clear(t);
	free(t->e);
	pthread_rwlock_destroy(&t->lock);
	free(t);
}

/* Index of the first entry whose last byte is >= iova (n if none). */
static uint32_t vfu_dma_lower_bound(const struct vfu_dma_table *t, uint64_t iova)
{
	uint32_t lo = 0, hi = t->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (vfu_dma_last(t->e[mid].w.iova, t->e[mid].w.len) < iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* mmaps [fd_offset, fd_offset+len) of fd. Offsets are rounded down to the
 * fd's block size (2 MiB on hugetlbfs) as mmap requires; the window's local
 * pointer then points inside the mapping. A regular file must cover the
 * whole range, or a later access past EOF would raise SIGBUS in our process. */
static int vfu_dma_map_fd(struct vfu_dma_entry *e, int fd, uint64_t fd_offset)
{
	uint64_t blk = (uint64_t)sysconf(_SC_PAGESIZE), delta, map_len, end;
	int prot = 0;
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode) &&
	    (fd_offset > (uint64_t)st.st_size || e->w.len > (uint64_t)st.st_size - fd_offset))
		return -EINVAL;
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
	struct vfu_dma_entry e = {.w = {.iova = iova, .len = len, .prot = prot}};
	uint32_t pos;
	int rc;

	if (!len || iova + len - 1 < iova)
		return -EINVAL;
	if (prot & ~(VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT))
		return -EINVAL;
	pos = vfu_dma_lower_bound(t, iova);
	if (pos < t->n && t->e[pos].w.iova <= vfu_dma_last(iova, len))
		return -EEXIST;
	if (t->n >= t->max)
		return -ENOSPC;
	if (t->n == t->cap) {
		uint32_t ncap = t->cap ? t->cap * 2 : 16;
		struct vfu_dma_entry *ne;

		if (ncap > t->max)
			ncap = t->max;
		/* Under the write lock: a reader may be walking the old array. */
		pthread_rwlock_wrlock(&t->lock);
		ne = realloc(t->e, (size_t)ncap * sizeof(*ne));
		if (ne) {
			t->e = ne;
			t->cap = ncap;
		}
		pthread_rwlock_unlock(&t->lock);
		if (!ne)
			return -ENOMEM;
	}
	if (fd >= 0) {
		rc = vfu_dma_map_fd(&e, fd, fd_offset);
		if (rc)
			return rc;
	}
	pthread_rwlock_wrlock(&t->lock);
	memmove(&t->e[pos + 1], &t->e[pos], (size_t)(t->n - pos) * sizeof(*t->e));
	t->e[pos] = e;
	t->n++;
	__atomic_add_fetch(&t->generation, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&t->lock);
	return 0;
}

int vfu_dma_table_remove(struct vfu_dma_table *t, uint64_t iova, uint64_t len)
{
	struct vfu_dma_entry e;
	uint32_t pos;

	if (!len || iova + len - 1 < iova)
		return -ENOENT;
	pos = vfu_dma_lower_bound(t, iova);
	if (pos >= t->n || t->e[pos].w.iova != iova || t->e[pos].w.len != len)
		return -ENOENT;
	pthread_rwlock_wrlock(&t->lock);
	e = t->e[pos];
	memmove(&t->e[pos], &t->e[pos + 1], (size_t)(t->n - pos - 1) * sizeof(*t->e));
	t->n--;
	__atomic_add_fetch(&t->generation, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&t->lock);
	vfu_dma_entry_release(&e);
	return 0;
}

void vfu_dma_table_clear(struct vfu_dma_table *t)
{
	struct vfu_dma_entry *old;
	uint32_t n;

	pthread_rwlock_wrlock(&t->lock);
	old = t->e;
	n = t->n;
	t->e = NULL;
	t->n = 0;
	t->cap = 0;
	__atomic_add_fetch(&t->generation, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&t->lock);
	for (uint32_t i = 0; i < n; i++)
		vfu_dma_entry_release(&old[i]);
	free(old);
}

/* Entry containing the byte iova, or NULL. Lock held. */
static const struct vfu_dma_entry *vfu_dma_lookup(const struct vfu_dma_table *t, uint64_t iova)
{
	uint32_t pos = vfu_dma_lower_bound(t, iova);

	if (pos < t->n && t->e[pos].w.iova <= iova)
		return &t->e[pos];
	return NULL;
}

int vfu_dma_table_find(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
		       struct vfu_dma_window *out)
{
	const struct vfu_dma_entry *e;
	int rc = -EFAULT;

	if (!len)
		len = 1;
	if (iova + len - 1 < iova)
		return -EFAULT;
	pthread_rwlock_rdlock(&t->lock);
	e = vfu_dma_lookup(t, iova);
	if (e && vfu_dma_last(iova, len) <= vfu_dma_last(e->w.iova, e->w.len)) {
		*out = e->w;
		rc = 0;
	}
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

int vfu_dma_table_iov(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot,
		      struct iovec *iov, int max_iov)
{
	const struct vfu_dma_entry *e;
	uint64_t cur = iova, left = len;
	int n = 0, rc;

	if (!len || iova + len - 1 < iova || max_iov <= 0)
		return -EFAULT;
	pthread_rwlock_rdlock(&t->lock);
	e = vfu_dma_lookup(t, iova);
	while (left) {
		uint64_t avail, take;

		/* Pieces must chain through windows with no hole between them. */
		if (!e || e >= t->e + t->n || e->w.iova > cur || !e->w.local) {
			rc = -EFAULT;
			goto out;
		}
		if ((e->w.prot & prot) != prot) {
			rc = -EPERM;
			goto out;
		}
		if (n == max_iov) {
			rc = -E2BIG;
			goto out;
		}
		avail = vfu_dma_last(e->w.iova, e->w.len) - cur + 1;
		take = left < avail ? left : avail;
		iov[n].iov_base = (uint8_t *)e->w.local + (cur - e->w.iova);
		iov[n].iov_len = (size_t)take;
		n++;
		left -= take;
		cur += take;
		e++;
	}
	rc = n;
out:
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

int vfu_dma_table_first(struct vfu_dma_table *t, struct vfu_dma_window *out)
{
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&t->lock);
	if (t->n) {
		*out = t->e[0].w;
		rc = 0;
	}
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

uint32_t vfu_dma_table_count(struct vfu_dma_table *t)
{
	uint32_t n;

	pthread_rwlock_rdlock(&t->lock);
	n = t->n;
	pthread_rwlock_unlock(&t->lock);
	return n;
}

uint64_t vfu_dma_table_generation(const struct vfu_dma_table *t)
{
	return __atomic_load_n(&t->generation, __ATOMIC_ACQUIRE);
}
