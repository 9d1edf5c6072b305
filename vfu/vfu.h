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
/* DMA windows (guest physical -> local), shared by the endpoint and mmaps.  */
/*
 * Lookups never take a lock: the loop thread publishes an immutable snapshot
 * of the windows for every change, and readers on any thread search the one
 * they loaded. A removed window leaves the lookups at once but stays mapped
 * until (1) the next quiescent point, vfu_dma_table_quiesce(), which the
 * owner calls once every thread that may have looked something up since the
 * removal has finished what it was doing (the device's dma_unmap handler
 * completing certifies that), and (2) every pin taken on it is released.
 * So a pointer from a lookup stays valid until the next quiescent point, and
 * a pinned window until its pin is put: memory is never unmapped under a
 * user, whatever the client does.
 */

struct vfu_dma_window {
	uint64_t iova, len;
	uint32_t prot; /* VFIO_USER_DMA_READ | VFIO_USER_DMA_WRITE */
	void *local;   /* NULL for fd-less ("message-only") windows */
};

/* A window held by a pin (vfu_dma_table_pin). */
struct vfu_dma_region;

/* Creates an empty table of at most max_windows windows. NULL + errno. It
 * takes only files of tmpfs or hugetlbfs and has no byte limit until
 * vfu_dma_table_set_policy. Every fd-backed window is watched for SIGBUS: a
 * client that truncates the file under our mapping turns the window into
 * anonymous memory (the access that faulted, and any later one, see zeroes)
 * and makes vfu_endpoint drop it. */
struct vfu_dma_table *vfu_dma_table_create(uint32_t max_windows);
/* Per-client limits: at most max_bytes of fd-backed windows mapped at once (0:
 * no limit), and whether fds other than regular files of tmpfs or hugetlbfs
 * are accepted (files on disk, whose page faults wait for I/O in the thread
 * that touches them; device nodes): only for a client the operator trusts.
 * Loop thread. */
void vfu_dma_table_set_policy(struct vfu_dma_table *t, uint64_t max_bytes, bool allow_any_fd);
/* Removes every window, quiesces and frees the table. Pinned windows live on
 * until their pins are put. NULL is fine. Loop thread. */
void vfu_dma_table_destroy(struct vfu_dma_table *t);
/* Adds a window; fd >= 0 is mmapped MAP_SHARED with prot from `prot` at
 * fd_offset (rounded down to the fd's st_blksize; the fd is not consumed).
 * -EEXIST on overlap, -EINVAL on zero size, wrap, unknown prot bits or a
 * range beyond the end of a regular file, -EPERM for an fd the policy refuses,
 * -ENOSPC past the window or byte limit, or mmap's -errno. Loop thread. */
int vfu_dma_table_add(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot, int fd,
		      uint64_t fd_offset);
/* Takes the window matching exactly out of the lookups (see above for when it
 * is unmapped); -ENOENT if none. Loop thread. */
int vfu_dma_table_remove(struct vfu_dma_table *t, uint64_t iova, uint64_t len);
/* Takes every window out of the lookups. Loop thread. */
void vfu_dma_table_clear(struct vfu_dma_table *t);
/* A quiescent point: no thread still uses a lookup made before the last
 * removal; frees old snapshots and unmaps removed windows nobody pins. Loop
 * thread. */
void vfu_dma_table_quiesce(struct vfu_dma_table *t);
/* Any thread. Fills *out with the window containing [iova, iova+len) wholly;
 * -EFAULT if none. */
int vfu_dma_table_find(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
		       struct vfu_dma_window *out);
/* Local pieces of [iova, iova+len) across adjacent fd-backed windows with
 * `prot`. Returns entries used or -EFAULT / -EPERM / -E2BIG. Any thread. */
int vfu_dma_table_iov(struct vfu_dma_table *t, uint64_t iova, uint64_t len, uint32_t prot,
		      struct iovec *iov, int max_iov);
/* Pins the fd-backed window holding [iova, iova+len) wholly with `prot`: its
 * mapping stays valid, even after the client unmaps it, until
 * vfu_dma_region_put. *local gets the pointer for iova. NULL with errno
 * EFAULT (no such fd-backed window) or EPERM. Loop thread (so a pin never
 * races with the removal of its window). */
struct vfu_dma_region *vfu_dma_table_pin(struct vfu_dma_table *t, uint64_t iova, uint64_t len,
					 uint32_t prot, void **local);
/* Releases a pin (NULL is fine). Any thread. */
void vfu_dma_region_put(struct vfu_dma_region *r);
/* The window a pin holds. Any thread. */
void vfu_dma_region_window(const struct vfu_dma_region *r, struct vfu_dma_window *out);
/* For I/O layers that hand guest memory to the kernel by address (io_uring fixed buffers): the
 * fd-backed window, of any table in the process, whose local mapping holds [va, va + len), with a
 * reference (vfu_dma_region_put) that keeps it mapped, and the mapping's local base and length.
 * NULL when there is none or it was removed. Any thread (takes a process-wide lock: not for the
 * per-I/O path). */
struct vfu_dma_region *vfu_dma_local_get(const void *va, size_t len, void **base, size_t *size);
/* True once the window left its table (the client unmapped it, or went away): holders of
 * references taken by address let go. Any thread. */
bool vfu_dma_region_removed(const struct vfu_dma_region *r);
/* cb runs (on the loop thread of the table) each time fd-backed windows leave a table. One per
 * process; NULL to clear. */
void vfu_dma_set_removed_cb(void (*cb)(void));
/* Bumped (atomically) by every add, remove and clear: callers caching a
 * translation compare it to know the cache is still valid. Any thread. */
uint64_t vfu_dma_table_generation(const struct vfu_dma_table *t);
/* Number of windows in the lookups. Any thread. */
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
	/* The client closed or was dropped (only after attach). The device
	 * stops every use of the DMA windows and returns 0 when done, or
	 * VFU_ASYNC and calls vfu_endpoint_detach_done() later (possibly from
	 * inside this call). Until then the endpoint keeps the client's windows
	 * mapped and accepts no new client; then it clears the DMA table and
	 * listens again. Held async operations are dropped; a later
	 * vfu_endpoint_resume is ignored. */
	int (*detach)(void *arg);
	/* DEVICE_GET_INFO */
	void (*device_info)(void *arg, uint32_t *flags, uint32_t *num_regions, uint32_t *num_irqs);
	/* DEVICE_GET_REGION_INFO for index < num_regions (desc is zeroed with
	 * mmap_fd -1 first; size 0 = absent): 0 or -errno. mmap_fd stays owned
	 * by the device (the endpoint sends a dup); nr_sparse <= 8. */
	int (*region_info)(void *arg, uint32_t index, struct vfu_region_desc *desc);
	/* REGION_READ / REGION_WRITE of count bytes at offset in region index
	 * (bounds already checked against the region size and READ/WRITE flag);
	 * each write of a REGION_WRITE_MULTI comes here as its own REGION_WRITE.
	 * 0, -errno, or VFU_ASYNC: the reply and the next message wait for
	 * vfu_endpoint_resume; a read's buf stays valid until then (or until
	 * the client goes: the detach op runs first), the device fills it in
	 * before it resumes with 0. */
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
	/* DMA_UNMAP of [iova, iova+len) (an exact match of a map): the window
	 * has already left the lookups (no new translation reaches it). The
	 * device finishes every use of pointers into it (in-flight transfers,
	 * pins) and makes sure every thread that looked up through the table
	 * since has passed a quiescent point; then it returns 0, or VFU_ASYNC and
	 * calls vfu_endpoint_resume(ep, 0) later. The endpoint then quiesces the
	 * table (the window is unmapped once unpinned) and replies. NULL means
	 * only the loop thread ever translates. */
	int (*dma_unmap)(void *arg, uint64_t iova, uint64_t len);
	/* After DMA_MAP added a window. May be NULL. */
	void (*dma_map)(void *arg, uint64_t iova, uint64_t len, uint32_t prot);
};

struct vfu_endpoint_stats {
	uint64_t msgs_rx, msgs_tx, errors_replied, bad_messages, disconnects;
	uint64_t region_reads, region_writes, posted_writes, dma_maps, dma_unmaps;
	uint64_t clients_attached;
	uint64_t socket_reads; /* recv calls that returned data (msgs_rx / this: the batching) */
	uint64_t write_multis; /* REGION_WRITE_MULTI messages (each write is in region_writes) */
	uint64_t dma_faults;   /* windows that lost their memory under an access (truncated fd) */
};

/* Per-client limits and trust of one endpoint; zero fields take the
 * defaults below. */
struct vfu_endpoint_config {
	unsigned int mode;	  /* socket file mode (0: 0600) */
	uint32_t max_dma_regions; /* DMA windows at once */
	uint64_t max_dma_bytes;	  /* bytes of fd-backed windows mapped at once */
	uint32_t max_dma_msgs;	  /* server->client DMA requests queued at once */
	bool allow_any_dma_fd;	  /* accept fds other than tmpfs/hugetlbfs files */
};
#define VFU_DEFAULT_DMA_REGIONS 256u	   /* QEMU uses a few dozen */
#define VFU_DEFAULT_DMA_BYTES (1ull << 40) /* 1 TiB of guest memory */
#define VFU_DEFAULT_DMA_MSGS 64u

/* Creates the socket at path (a stale socket file is removed; any other
 * file there gives EEXIST) with cfg->mode and listens on loop. cfg may be
 * NULL (all defaults). The ops table must outlive the endpoint;
 * device_info, region_info, region_access, irq_info, set_irqs and reset are
 * required. NULL + errno. */
struct vfu_endpoint *vfu_endpoint_create(struct evloop *loop, const char *path,
					 const struct vfu_endpoint_config *cfg,
					 const struct vfu_endpoint_ops *ops, void *arg);
/* Closes and unlinks the socket and frees everything. Only with no client
 * attached and no detach in progress (vfu_endpoint_idle): disconnect first
 * and wait for the device's detach to finish. Not from inside one of the
 * endpoint's ops callbacks. Returns 0 or -EBUSY (nothing done). */
int vfu_endpoint_destroy(struct vfu_endpoint *ep);
/* Drops the current client, if any: pending server->client DMA fails with
 * -ECONNRESET, detach is called, and once it is done the DMA table is
 * cleared and the endpoint listens for a new client. From inside an ops
 * callback the drop happens when the callback's message is done. */
void vfu_endpoint_disconnect(struct vfu_endpoint *ep);
/* Finishes a detach that returned VFU_ASYNC. Loop thread. */
void vfu_endpoint_detach_done(struct vfu_endpoint *ep);
/* True between a successful VERSION and the disconnect. */
bool vfu_endpoint_attached(const struct vfu_endpoint *ep);
/* True with no client connected and no detach in progress. */
bool vfu_endpoint_idle(const struct vfu_endpoint *ep);
/* The endpoint's DMA table (lives as long as the endpoint). Any thread may
 * look up through it (vfu_dma_table_find/iov). */
struct vfu_dma_table *vfu_endpoint_dma(struct vfu_endpoint *ep);
/* Completes an operation that returned VFU_ASYNC with status (0 or
 * -errno): sends the held reply (an error reply for status < 0; nothing for
 * a NO_REPLY request) and resumes reading. For DMA_UNMAP the table is
 * quiesced first; for UNMAP_ALL, dma_unmap is called once per window, each
 * possibly async, and the reply goes after the last one. May be
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
 * -ENOTCONN, -EINVAL (len 0), -EFAULT (no window), -EPERM, -ENOMEM, -EAGAIN
 * (max_dma_msgs requests are queued already). */
typedef void (*vfu_dma_done_fn)(int status, void *arg);
int vfu_endpoint_dma_read(struct vfu_endpoint *ep, uint64_t iova, void *dst, uint64_t len,
			  vfu_dma_done_fn cb, void *arg);
int vfu_endpoint_dma_write(struct vfu_endpoint *ep, uint64_t iova, const void *src, uint64_t len,
			   vfu_dma_done_fn cb, void *arg);

#endif
