/* hw/host_mem.c - host-memory mmaps of a device: a range + permission view
 * over the client's DMA windows; translation, iovecs, copies, and async
 * copies through DMA_READ/DMA_WRITE messages for fd-less windows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"

#define HW_MMAP_COPY_IOV 16

struct hw_mmap {
	struct hw_dev *dev;
	uint64_t base, len;
	unsigned int perm;
	uint64_t gen; /* dev->client_gen at creation */
};

struct hw_mmap *hw_mmap_create(struct hw_dev *dev, uint64_t base, uint64_t len, unsigned int perm)
{
	struct hw_mmap *map;

	if (!len || base + len < base || !perm || (perm & ~(HW_MMAP_READ | HW_MMAP_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	if (!dev->dma) {
		errno = ENODEV; /* not hot-plugged: no client memory to view */
		return NULL;
	}
	map = calloc(1, sizeof(*map));
	if (!map)
		return NULL;
	*map = (struct hw_mmap){.dev = dev,
				.base = base,
				.len = len,
				.perm = perm,
				.gen = atomic_load(&dev->client_gen)};
	return map;
}

void hw_mmap_destroy(struct hw_mmap *map)
{
	free(map);
}

static uint32_t hw_mmap_prot(unsigned int perm)
{
	return (perm & HW_MMAP_READ ? VFIO_USER_DMA_READ_PROT : 0) |
	       (perm & HW_MMAP_WRITE ? VFIO_USER_DMA_WRITE_PROT : 0);
}

/* Range, permission and liveness of an access; 0 or -errno. A device read of
 * host memory needs the client to have mapped it readable, and so on. */
static int hw_mmap_check(const struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm)
{
	if (!perm || (perm & ~map->perm))
		return -EPERM;
	if (!len || addr < map->base || addr - map->base >= map->len ||
	    len > map->len - (addr - map->base))
		return -EFAULT;
	if (atomic_load(&map->dev->client_gen) != map->gen || !map->dev->dma)
		return -ENODEV; /* the client that owned this memory is gone */
	return 0;
}

void *hw_mmap_translate(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm)
{
	struct vfu_dma_window w;
	int rc = hw_mmap_check(map, addr, len, perm);

	if (!rc)
		rc = vfu_dma_table_find(map->dev->dma, addr, len, &w);
	if (!rc && (w.prot & hw_mmap_prot(perm)) != hw_mmap_prot(perm))
		rc = -EPERM;
	if (!rc && !w.local)
		rc = -ENOENT;
	if (rc) {
		errno = rc == -ENODEV ? EFAULT : -rc;
		return NULL;
	}
	return (uint8_t *)w.local + (addr - w.iova);
}

struct hw_mem_pin *hw_mmap_pin(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm,
			       void **ptr)
{
	struct vfu_dma_region *r;
	int rc = hw_mmap_check(map, addr, len, perm);

	if (rc) {
		errno = rc == -ENODEV ? EFAULT : -rc;
		return NULL;
	}
	r = vfu_dma_table_pin(map->dev->dma, addr, len, hw_mmap_prot(perm), ptr);
	/* A pin is the vfu region reference itself: nothing to allocate. */
	return (struct hw_mem_pin *)r;
}

void hw_mem_pin_put(struct hw_mem_pin *pin)
{
	vfu_dma_region_put((struct vfu_dma_region *)pin);
}

void *hw_mem_local_get(const void *va, size_t len, void **base, size_t *size)
{
	return vfu_dma_local_get(va, len, base, size);
}

bool hw_mem_removed(const void *ref)
{
	return vfu_dma_region_removed(ref);
}

void hw_mem_put(void *ref)
{
	vfu_dma_region_put(ref);
}

void hw_mem_set_removed_cb(void (*cb)(void))
{
	vfu_dma_set_removed_cb(cb);
}

bool hw_mem_pin_overlaps(const struct hw_mem_pin *pin, uint64_t iova, uint64_t len)
{
	struct vfu_dma_window w;

	if (!pin || !len)
		return false;
	vfu_dma_region_window((const struct vfu_dma_region *)pin, &w);
	return iova <= w.iova + (w.len - 1) && w.iova <= iova + (len - 1);
}

int hw_mmap_iov(struct hw_mmap *map, uint64_t addr, uint64_t len, unsigned int perm,
		struct iovec *iov, int max_iov)
{
	int rc = hw_mmap_check(map, addr, len, perm);

	if (rc)
		return rc == -ENODEV ? -EFAULT : rc;
	return vfu_dma_table_iov(map->dev->dma, addr, len, hw_mmap_prot(perm), iov, max_iov);
}

static int hw_mmap_copy(struct hw_mmap *map, uint64_t addr, void *local, uint64_t len, bool to_host)
{
	struct iovec iov[HW_MMAP_COPY_IOV];
	uint8_t *p = local;
	int n = hw_mmap_iov(map, addr, len, to_host ? HW_MMAP_WRITE : HW_MMAP_READ, iov,
			    HW_MMAP_COPY_IOV);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (to_host)
			memcpy(iov[i].iov_base, p, iov[i].iov_len);
		else
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return 0;
}

int hw_mmap_copy_from_host(struct hw_mmap *map, void *dst, uint64_t addr, uint64_t len)
{
	return hw_mmap_copy(map, addr, dst, len, false);
}

int hw_mmap_copy_to_host(struct hw_mmap *map, uint64_t addr, const void *src, uint64_t len)
{
	return hw_mmap_copy(map, addr, (void *)src, len, true);
}

/* A copy done at once through the mapping; its callback still runs later,
 * as the API promises, from a deferred call. */
struct hw_mmap_done {
	hw_dma_done_fn cb;
	void *arg;
	int status;
};

static void hw_mmap_done_run(void *arg)
{
	struct hw_mmap_done *d = arg;

	d->cb(d->status, d->arg);
	free(d);
}

static int hw_mmap_async(struct hw_mmap *map, uint64_t addr, void *local, uint64_t len,
			 bool to_host, hw_dma_done_fn cb, void *arg)
{
	unsigned int perm = to_host ? HW_MMAP_WRITE : HW_MMAP_READ;
	struct vfu_dma_window w;
	struct hw_mmap_done *d;
	int rc = hw_mmap_check(map, addr, len, perm);

	if (rc)
		return rc == -ENODEV ? -EFAULT : rc;
	if (!cb)
		return -EINVAL;
	rc = vfu_dma_table_find(map->dev->dma, addr, len, &w);
	if (rc)
		return rc;
	if ((w.prot & hw_mmap_prot(perm)) != hw_mmap_prot(perm))
		return -EPERM;
	if (!w.local) {
		/* Message-only window: the client copies for us (sent between
		 * client requests, never while one is handled). */
		if (to_host)
			return vfu_endpoint_dma_write(map->dev->ep, addr, local, len, cb, arg);
		return vfu_endpoint_dma_read(map->dev->ep, addr, local, len, cb, arg);
	}
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (to_host)
		memcpy((uint8_t *)w.local + (addr - w.iova), local, len);
	else
		memcpy(local, (uint8_t *)w.local + (addr - w.iova), len);
	*d = (struct hw_mmap_done){.cb = cb, .arg = arg, .status = 0};
	rc = evloop_defer(map->dev->loop, hw_mmap_done_run, d);
	if (rc)
		free(d);
	return rc;
}

int hw_mmap_read_async(struct hw_mmap *map, void *dst, uint64_t addr, uint64_t len,
		       hw_dma_done_fn cb, void *arg)
{
	return hw_mmap_async(map, addr, dst, len, false, cb, arg);
}

int hw_mmap_write_async(struct hw_mmap *map, uint64_t addr, const void *src, uint64_t len,
			hw_dma_done_fn cb, void *arg)
{
	return hw_mmap_async(map, addr, (void *)src, len, true, cb, arg);
}
