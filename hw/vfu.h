/* hw/vfu.h - internal to hw/: the vfio-user protocol endpoint (one unix
 * socket, one client at a time) and the DMA window table. It knows the wire
 * protocol and nothing about PCI types; the device model (pci_dev.c) plugs in
 * through struct vfu_endpoint_ops. All calls on the loop thread unless noted.
 */
#ifndef NVME_EMU_HW_VFU_H
#define NVME_EMU_HW_VFU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "hw/vfio_user_proto.h"

struct evloop;
struct vfu_endpoint;
struct vfu_dma_table;

/* ------------------------------------------------------------------------ */
/* DMA windows (guest physical -> local), shared by the endpoint and mmaps. */

struct vfu_dma_window {
	uint64_t iova, len;
	uint32_t prot;   /* VFIO_USER_DMA_READ | VFIO_USER_DMA_WRITE */
	void *local;     /* NULL for fd-less ("message-only") windows */
};

struct vfu_dma_table *vfu_dma_table_create(uint32_t max_windows);
void vfu_dma_table_destroy(struct vfu_dma_table *t);
/* Adds a window; fd >= 0 is mmapped (the fd is not consumed). -EEXIST on
 * overlap, -EINVAL on zero size or wrap, -ENOSPC when full. */
int vfu_dma_table_add(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot,
		      int fd, uint64_t fd_offset);
/* Removes the window matching exactly; -ENOENT if none. */
int vfu_dma_table_remove(struct vfu_dma_table *t, uint64_t iova, uint64_t len);
void vfu_dma_table_clear(struct vfu_dma_table *t);
/* Any thread (readers take a shared lock; writers on the loop thread take it
 * exclusively, after the owner quiesced users of the range). Fills *out with
 * the window containing [iova, iova+len) wholly; -EFAULT if none. */
int vfu_dma_table_find(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
		       struct vfu_dma_window *out);
/* Local pieces of [iova, iova+len) across adjacent fd-backed windows with
 * `prot`. Returns entries used or -EFAULT / -EPERM / -E2BIG. Any thread. */
int vfu_dma_table_iov(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot,
		      struct iovec *iov, int max_iov);
/* Bumped (atomically) by every add, remove and clear: callers caching a
 * translation compare it to know the cache is still valid. Any thread. */
uint64_t vfu_dma_table_generation(const struct vfu_dma_table *t);
/* Number of windows. Any thread. */
uint32_t vfu_dma_table_count(struct vfu_dma_table *t);

/* ------------------------------------------------------------------------ */
/* Endpoint.                                                                */

/* What the device reports for one region index (DEVICE_GET_REGION_INFO). */
struct vfu_region_desc {
	uint64_t size;  /* 0: absent */
	uint32_t flags; /* VFIO_REGION_INFO_FLAG_READ/WRITE/MMAP */
	int mmap_fd;    /* fd to offer with the sparse-mmap cap, or -1 */
	uint64_t mmap_offset; /* "offset" field: fd offset of region start */
	uint32_t nr_sparse;
	struct { uint64_t offset, size; } sparse[8];
};

struct vfu_endpoint_ops {
	/* VERSION negotiated: the client is attached. */
	void (*attach)(void *arg);
	/* The client closed or was dropped. The endpoint already cleared its DMA
	 * table after calling this. Go back to listening afterwards. */
	void (*detach)(void *arg);
	/* DEVICE_GET_INFO */
	void (*device_info)(void *arg, uint32_t *flags, uint32_t *num_regions, uint32_t *num_irqs);
	/* DEVICE_GET_REGION_INFO: 0 or -EINVAL */
	int (*region_info)(void *arg, uint32_t index, struct vfu_region_desc *desc);
	/* REGION_READ / REGION_WRITE of count bytes at offset in region index
	 * (bounds already checked against the region size). 0, -errno, or
	 * HW_EVENT_ASYNC (writes only: reply and next message wait for
	 * vfu_endpoint_resume). */
	int (*region_access)(void *arg, uint32_t index, uint64_t offset, void *buf,
			     uint32_t count, bool is_write);
	/* DEVICE_GET_IRQ_INFO: 0 or -EINVAL */
	int (*irq_info)(void *arg, uint32_t index, uint32_t *flags, uint32_t *count);
	/* DEVICE_SET_IRQS, already validated against irq_info (index, range,
	 * exactly one DATA and one ACTION bit, fd count). fds has nfds entries
	 * (0 or count); the callee takes ownership of every fd, also on error.
	 * bools has count bytes for DATA_BOOL, else NULL. */
	int (*set_irqs)(void *arg, uint32_t flags, uint32_t index, uint32_t start,
			uint32_t count, int *fds, size_t nfds, const uint8_t *bools);
	/* DEVICE_RESET: 0, -errno or HW_EVENT_ASYNC. */
	int (*reset)(void *arg);
	/* Before DMA_UNMAP removes [iova, iova+len): 0 or HW_EVENT_ASYNC. */
	int (*dma_unmap)(void *arg, uint64_t iova, uint64_t len);
	/* After DMA_MAP added a window. May be NULL. */
	void (*dma_map)(void *arg, uint64_t iova, uint64_t len, uint32_t prot);
};

struct vfu_endpoint_stats {
	uint64_t msgs_rx, msgs_tx, errors_replied, bad_messages, disconnects;
	uint64_t region_reads, region_writes, posted_writes, dma_maps, dma_unmaps;
	uint64_t clients_attached;
};

/* Creates the socket at path (stale file removed, mode applied) and listens. */
struct vfu_endpoint *vfu_endpoint_create(struct evloop *loop, const char *path,
					 unsigned int mode,
					 const struct vfu_endpoint_ops *ops, void *arg);
/* Drops the client (calling detach), closes and unlinks the socket. */
void vfu_endpoint_destroy(struct vfu_endpoint *ep);
/* Drops the current client, if any (detach is called). */
void vfu_endpoint_disconnect(struct vfu_endpoint *ep);
bool vfu_endpoint_attached(const struct vfu_endpoint *ep);
struct vfu_dma_table *vfu_endpoint_dma(struct vfu_endpoint *ep);
/* Completes an operation that returned HW_EVENT_ASYNC with status (0 or
 * -errno): sends the held reply and resumes reading. */
void vfu_endpoint_resume(struct vfu_endpoint *ep, int status);
void vfu_endpoint_get_stats(const struct vfu_endpoint *ep, struct vfu_endpoint_stats *st);

/* Server->client DMA for fd-less windows. Queued; sent only between client
 * requests (never while one is being handled); cb on the loop thread. */
typedef void (*vfu_dma_done_fn)(int status, void *arg);
int vfu_endpoint_dma_read(struct vfu_endpoint *ep, uint64_t iova, void *dst, uint64_t len,
			  vfu_dma_done_fn cb, void *arg);
int vfu_endpoint_dma_write(struct vfu_endpoint *ep, uint64_t iova, const void *src,
			   uint64_t len, vfu_dma_done_fn cb, void *arg);

#endif
