/* vfu/vfu.h - the vfu library: our own vfio-user protocol endpoint (one unix
 * socket, one client at a time) and the DMA window table. It knows the wire
 * protocol and nothing about PCI types; the device model (pci_dev.c) plugs in
 * through struct vfu_endpoint_ops. All calls on the loop thread unless noted.
 */
#ifndef NVME_EMU_VFU_VFU_H
#define NVME_EMU_VFU_VFU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "vfu/vfio_user_proto.h"

struct evloop;
struct vfu_endpoint;

/* Returned by an op whose work finishes later: the endpoint holds the reply
 * and the client's next message until vfu_endpoint_resume(). */
#define VFU_ASYNC 1
struct vfu_dma_table;

/* ------------------------------------------------------------------------ */
/* DMA windows (guest physical -> local), shared by the endpoint and mmaps. */

struct vfu_dma_window {
	uint64_t iova, len;
	uint32_t prot; /* VFIO_USER_DMA_READ | VFIO_USER_DMA_WRITE */
	void *local;   /* NULL for fd-less ("message-only") windows */
};

/* Creates an empty table of at most max_windows windows. NULL + errno. */
struct vfu_dma_table *vfu_dma_table_create(uint32_t max_windows);
/* Unmaps every window and frees the table. NULL is fine. */
void vfu_dma_table_destroy(struct vfu_dma_table *t);
/* Adds a window; fd >= 0 is mmapped MAP_SHARED with prot from `prot` at
 * fd_offset (rounded down to the fd's st_blksize; the fd is not consumed).
 * -EEXIST on overlap, -EINVAL on zero size, wrap, unknown prot bits or a
 * range beyond the end of a regular file, -ENOSPC when full, or mmap's
 * -errno. Loop thread. */
int vfu_dma_table_add(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot, int fd,
		      uint64_t fd_offset);
/* Removes (and munmaps) the window matching exactly; -ENOENT if none. The
 * caller has quiesced every user of the range. Loop thread. */
int vfu_dma_table_remove(struct vfu_dma_table *t, uint64_t iova, uint64_t len);
/* Removes every window. Loop thread. */
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
	uint64_t size;	      /* 0: absent */
	uint32_t flags;	      /* VFIO_REGION_INFO_FLAG_READ/WRITE/MMAP */
	int mmap_fd;	      /* fd to offer with the sparse-mmap cap, or -1 */
	uint64_t mmap_offset; /* "offset" field: fd offset of region start */
	uint32_t nr_sparse;
	struct {
		uint64_t offset, size;
	} sparse[8];
};

struct vfu_endpoint_ops {
	/* VERSION negotiated: the client is attached. */
	void (*attach)(void *arg);
	/* The client closed or was dropped (only after attach). Stop every use
	 * of DMA windows before returning: the endpoint clears (munmaps) its DMA
	 * table right after, then listens for a new client. Held async
	 * operations are dropped; a later vfu_endpoint_resume is ignored. */
	void (*detach)(void *arg);
	/* DEVICE_GET_INFO */
	void (*device_info)(void *arg, uint32_t *flags, uint32_t *num_regions, uint32_t *num_irqs);
	/* DEVICE_GET_REGION_INFO for index < num_regions (desc is zeroed with
	 * mmap_fd -1 first; size 0 = absent): 0 or -errno. mmap_fd stays owned
	 * by the device (the endpoint sends a dup); nr_sparse <= 8. */
	int (*region_info)(void *arg, uint32_t index, struct vfu_region_desc *desc);
	/* REGION_READ / REGION_WRITE of count bytes at offset in region index
	 * (bounds already checked against the region size and READ/WRITE flag).
	 * 0, -errno, or VFU_ASYNC (writes only: reply and next message
	 * wait for vfu_endpoint_resume; a read returning it fails with EIO). */
	int (*region_access)(void *arg, uint32_t index, uint64_t offset, void *buf, uint32_t count,
			     bool is_write);
	/* DEVICE_GET_IRQ_INFO: 0 or -EINVAL */
	int (*irq_info)(void *arg, uint32_t index, uint32_t *flags, uint32_t *count);
	/* DEVICE_SET_IRQS, already validated against irq_info (index, range,
	 * exactly one DATA and one ACTION bit, fd count). fds has nfds entries
	 * (0 or count); the callee takes ownership of every fd, also on error.
	 * bools has count bytes for DATA_BOOL, else NULL. */
	int (*set_irqs)(void *arg, uint32_t flags, uint32_t index, uint32_t start, uint32_t count,
			int *fds, size_t nfds, const uint8_t *bools);
	/* DEVICE_RESET: 0, -errno or VFU_ASYNC. */
	int (*reset)(void *arg);
	/* Before DMA_UNMAP removes [iova, iova+len) (an exact match of a map):
	 * quiesce users of the range, then 0, VFU_ASYNC, or -errno (the
	 * window stays and the client gets that error). May be NULL. */
	int (*dma_unmap)(void *arg, uint64_t iova, uint64_t len);
	/* After DMA_MAP added a window. May be NULL. */
	void (*dma_map)(void *arg, uint64_t iova, uint64_t len, uint32_t prot);
};

struct vfu_endpoint_stats {
	uint64_t msgs_rx, msgs_tx, errors_replied, bad_messages, disconnects;
	uint64_t region_reads, region_writes, posted_writes, dma_maps, dma_unmaps;
	uint64_t clients_attached;
};

/* Creates the socket at path (a stale socket file is removed; any other
 * file there gives EEXIST), chmods it to mode (0: 0600) and listens on loop.
 * The ops table must outlive the endpoint; device_info, region_info,
 * region_access, irq_info, set_irqs and reset are required. NULL + errno. */
struct vfu_endpoint *vfu_endpoint_create(struct evloop *loop, const char *path, unsigned int mode,
					 const struct vfu_endpoint_ops *ops, void *arg);
/* Drops the client (calling detach), closes and unlinks the socket, frees
 * everything. Not from inside one of the endpoint's ops callbacks. */
void vfu_endpoint_destroy(struct vfu_endpoint *ep);
/* Drops the current client, if any: detach is called, the DMA table is
 * cleared, pending server->client DMA fails with -ECONNRESET, and the
 * endpoint listens for a new client. From inside an ops callback the drop
 * happens when the callback's message is done. */
void vfu_endpoint_disconnect(struct vfu_endpoint *ep);
/* True between a successful VERSION and the disconnect. */
bool vfu_endpoint_attached(const struct vfu_endpoint *ep);
/* The endpoint's DMA table (lives as long as the endpoint). Any thread may
 * look up through it (vfu_dma_table_find/iov). */
struct vfu_dma_table *vfu_endpoint_dma(struct vfu_endpoint *ep);
/* Completes an operation that returned VFU_ASYNC with status (0 or
 * -errno): sends the held reply (an error reply for status < 0; nothing for
 * a NO_REPLY request) and resumes reading. For DMA_UNMAP the window is
 * removed only on status 0; for UNMAP_ALL, dma_unmap is called once per
 * window, each possibly async, and the reply goes after the last one. May be
 * called from inside the op itself (before it returns VFU_ASYNC).
 * Ignored when nothing is held (e.g. the client went away meanwhile). */
void vfu_endpoint_resume(struct vfu_endpoint *ep, int status);
/* Copies the counters (errors_replied counts failed requests, also the
 * NO_REPLY ones that got no reply; bad_messages malformed requests and
 * framing violations). */
void vfu_endpoint_get_stats(const struct vfu_endpoint *ep, struct vfu_endpoint_stats *st);

/* Server->client DMA (VFIO_USER_DMA_READ/WRITE messages), meant for fd-less
 * windows. [iova, iova+len) must lie in one window with READ (dma_read) or
 * WRITE (dma_write) permission. Queued and sent only between client
 * requests (never while one is in a handler or held async: QEMU would
 * deadlock), chunked to the client's max_data_xfer_size. buf must stay
 * valid until cb(status, arg) runs on the loop thread: 0, -error of the
 * client's error reply, -EPROTO for a malformed reply, -ECONNRESET on
 * disconnect. cb never runs inside these calls. Returns 0 (queued),
 * -ENOTCONN, -EINVAL (len 0), -EFAULT (no window), -EPERM, -ENOMEM. */
typedef void (*vfu_dma_done_fn)(int status, void *arg);
int vfu_endpoint_dma_read(struct vfu_endpoint *ep, uint64_t iova, void *dst, uint64_t len,
			  vfu_dma_done_fn cb, void *arg);
int vfu_endpoint_dma_write(struct vfu_endpoint *ep, uint64_t iova, const void *src, uint64_t len,
			   vfu_dma_done_fn cb, void *arg);

#endif
