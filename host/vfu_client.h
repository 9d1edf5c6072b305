/* host/vfu_client.h - a small synchronous vfio-user client that plays
 * QEMU and a host driver, for tests and the perf tool: connect, negotiate,
 * guest RAM as a memfd, DMA maps (with and without fd, serving the server's
 * DMA_READ/DMA_WRITE for the latter), region info with sparse-mmap areas,
 * region access, interrupts as eventfds, reset, and raw messages.
 *
 * Threads: a client is used by one thread at a time. Every call blocks until
 * its reply arrived or the reply timeout (default 5000 ms) passed.
 * Errors: int functions return 0 (or a count) or a negative errno; an error
 * reply from the server is returned as -error_no; -ETIMEDOUT when no reply
 * came; -EPROTO for a malformed or unexpected message.
 */
#ifndef NVME_EMU_HOST_VFU_CLIENT_H
#define NVME_EMU_HOST_VFU_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfu/vfio_user_proto.h"

struct vfu_client;

#define VFU_CLIENT_MAX_REGIONS 16
#define VFU_CLIENT_MAX_AREAS 8
#define VFU_CLIENT_MAX_IRQS 8
#define VFU_CLIENT_MAX_VECTORS 64

/* QEMU 11.1.3's VERSION capabilities, byte for byte what it sends. */
extern const char vfu_client_qemu_caps[];

/* One region as the last DEVICE_GET_REGION_INFO reported it. */
struct vfu_client_region {
	uint32_t index, flags;
	uint64_t size, offset; /* offset: fd offset of the region start */
	uint32_t nr_areas;
	struct {
		uint64_t offset, size;
		void *ptr; /* mmapped area, NULL if not mapped */
	} areas[VFU_CLIENT_MAX_AREAS];
	int fd; /* fd received with the full reply, or -1 */
};

struct vfu_client_stats {
	uint64_t dma_reads_served, dma_writes_served, dma_errors_replied;
};

/* Connects to the socket at path, retrying for up to timeout_ms while it
 * does not exist yet or refuses. Returns NULL with errno set on failure. */
struct vfu_client *vfu_client_connect(const char *path, int timeout_ms);
/* Closes the socket, unmaps everything, closes every fd. NULL is fine. */
void vfu_client_close(struct vfu_client *c);
/* The socket, for hostile tests that want to poke at it directly. */
int vfu_client_fd(const struct vfu_client *c);
/* Sets the reply timeout in ms (default 5000). */
void vfu_client_set_timeout(struct vfu_client *c, int timeout_ms);
void vfu_client_get_stats(const struct vfu_client *c, struct vfu_client_stats *st);

/* VERSION with QEMU's JSON; checks the reply (major 0, NUL-terminated JSON
 * object) and records the server's max_data_xfer_size. */
int vfu_client_negotiate(struct vfu_client *c);
/* VERSION with arbitrary version and JSON (json may be NULL: no JSON at
 * all). On success the reply JSON is copied to reply_json (if not NULL). */
int vfu_client_version(struct vfu_client *c, uint16_t major, uint16_t minor, const char *json,
		       char *reply_json, size_t reply_cap);
/* The server's max_data_xfer_size after negotiate (0 before). */
uint32_t vfu_client_server_max_xfer(const struct vfu_client *c);

/* Creates a memfd of size bytes as guest RAM and DMA_MAPs it read/write at
 * iova with its fd (fd offset 0). */
int vfu_client_ram_create(struct vfu_client *c, uint64_t iova, uint64_t size);
/* Maps an fd-less ("message-only") window at iova backed by a local buffer;
 * server DMA_READ/DMA_WRITE into it are served while the client waits. */
int vfu_client_map_msg_window(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t prot);
/* Local pointer for [iova, iova+len) inside one RAM or message window, or
 * NULL. */
void *vfu_client_ram_ptr(struct vfu_client *c, uint64_t iova, uint64_t len);
/* Plain DMA_MAP (fd < 0: no fd); the window is not recorded locally. */
int vfu_client_dma_map(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t prot, int fd,
		       uint64_t offset);
/* DMA_UNMAP (flags 0 or VFIO_USER_DMA_UNMAP_ALL); on success the matching
 * local windows are forgotten (all of them for UNMAP_ALL). */
int vfu_client_dma_unmap(struct vfu_client *c, uint64_t iova, uint64_t size, uint32_t flags);

int vfu_client_device_info(struct vfu_client *c, struct vfio_user_device_info *out);
/* DEVICE_GET_REGION_INFO with the two-step argsz protocol; mmaps every
 * sparse area (or the whole region when MMAP comes without caps). The result
 * is cached in the client and copied to *out if not NULL. */
int vfu_client_region_info(struct vfu_client *c, uint32_t index, struct vfu_client_region *out);
/* Pointer to [offset, offset+len) of region index inside one mmapped area
 * (after vfu_client_region_info), or NULL. */
void *vfu_client_region_ptr(struct vfu_client *c, uint32_t index, uint64_t offset, uint64_t len);
int vfu_client_region_read(struct vfu_client *c, uint32_t index, uint64_t offset, void *buf,
			   uint32_t count);
/* posted: send with NO_REPLY and return at once (errors are never seen). */
int vfu_client_region_write(struct vfu_client *c, uint32_t index, uint64_t offset, const void *buf,
			    uint32_t count, bool posted);

/* One write of a REGION_WRITE_MULTI: count bytes (1..8) of data at offset in region. */
struct vfu_client_write {
	uint64_t offset;
	uint32_t region, count;
	uint8_t data[VFIO_USER_WRITE_MULTI_DATA];
};
/* True when our VERSION and the server's reply both offered write_multiple. */
bool vfu_client_write_multi_ok(const struct vfu_client *c);
/* n writes (1..VFU_WRITE_MULTI_MAX) in one REGION_WRITE_MULTI message, sent whether or not it
 * was negotiated (hostile tests). posted: NO_REPLY, as QEMU always sends it; otherwise the
 * reply's wr_cnt must be n (-EPROTO), an error reply gives its -errno. */
int vfu_client_region_write_multi(struct vfu_client *c, const struct vfu_client_write *w, size_t n,
				  bool posted);

int vfu_client_irq_info(struct vfu_client *c, uint32_t index, uint32_t *flags, uint32_t *count);
/* Raw DEVICE_SET_IRQS: fds are sent with SCM_RIGHTS (not consumed). */
int vfu_client_set_irqs(struct vfu_client *c, uint32_t flags, uint32_t index, uint32_t start,
			uint32_t count, const int *fds, size_t nfds, const uint8_t *bools);
/* Creates eventfds for vectors [start, start+count) of index and assigns
 * them (DATA_EVENTFD | ACTION_TRIGGER), replacing earlier ones. */
int vfu_client_irq_eventfds(struct vfu_client *c, uint32_t index, uint32_t start, uint32_t count);
/* The eventfd of a vector, or -1. */
int vfu_client_irq_fd(const struct vfu_client *c, uint32_t index, uint32_t vector);
/* Waits up to timeout_ms for the vector's eventfd, serving server requests
 * meanwhile. Returns the eventfd counter (>= 1, and resets it), 0 on
 * timeout, or -errno. */
int64_t vfu_client_irq_wait(struct vfu_client *c, uint32_t index, uint32_t vector, int timeout_ms);
/* ACTION_MASK (mask true) or ACTION_UNMASK with DATA_NONE. */
int vfu_client_irq_mask(struct vfu_client *c, uint32_t index, uint32_t start, uint32_t count,
			bool mask);
int vfu_client_reset(struct vfu_client *c);

/* Serves server requests (DMA_READ/DMA_WRITE) for up to timeout_ms, returning
 * after the first one served. Returns the number served (0 or 1) or -errno;
 * a reply arriving here is unexpected (-EPROTO). */
int vfu_client_serve(struct vfu_client *c, int timeout_ms);

/* Sends a command and waits for its reply (unless flags has NO_REPLY).
 * reply: where the reply payload goes (may be NULL with cap 0); reply_len
 * gets its length; reply_fd (if not NULL) gets an fd that came with the
 * reply or -1 (extra fds are closed). */
int vfu_client_request(struct vfu_client *c, uint16_t command, uint32_t flags, const void *payload,
		       size_t len, const int *fds, size_t nfds, void *reply, size_t reply_cap,
		       size_t *reply_len, int *reply_fd);
/* Raw bytes with optional fds, nothing checked (hostile tests). 0 or -errno. */
int vfu_client_send_raw(struct vfu_client *c, const void *buf, size_t len, const int *fds,
			size_t nfds);
/* Receives one whole message (no serving, no matching). payload gets up to
 * cap bytes (the rest is discarded); fds received are closed unless fds is
 * not NULL (then up to *nfds are returned, *nfds updated). 0, -ETIMEDOUT,
 * -ECONNRESET on EOF, -EPROTO. */
int vfu_client_recv_msg(struct vfu_client *c, struct vfio_user_header *hdr, void *payload,
			size_t cap, size_t *plen, int *fds, size_t *nfds, int timeout_ms);
/* The msg_id the next request will use. */
uint16_t vfu_client_next_id(const struct vfu_client *c);
/* True if the server closed the connection (recv saw EOF). */
bool vfu_client_eof(const struct vfu_client *c);

#endif
