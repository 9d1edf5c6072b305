/* vfu/vfu_internal.h - private to the vfu library: the endpoint's state shared
 * by the transport (endpoint.c), the command handlers (cmd.c) and the
 * server->client DMA messages (dma_msg.c). */
#ifndef NVME_EMU_VFU_VFU_INTERNAL_H
#define NVME_EMU_VFU_VFU_INTERNAL_H

#include "vfu/vfu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VFU_COMP "vfu"

/* Bytes queued for sending beyond which we stop reading requests: a client
 * that does not read its replies must not make us buffer without bound. */
#define VFU_TX_HIGH_WATER (4u << 20)

/* The receive buffer: one recv takes up to this much, so the small messages a
 * client queued (trapped doorbell writes) are parsed many per system call. A
 * larger message grows the buffer to its size for as long as it is read. */
#define VFU_RX_CHUNK (64u << 10)
/* recv calls per wakeup before other fds get their turn (epoll is
 * level-triggered: what is left brings us back). */
#define VFU_RX_READS_PER_WAKE 8
/* Bodies up to this size that do not sit 8-byte aligned in the receive buffer
 * are copied to ep->rx_small, larger ones to ep->rx_copy: handlers get the
 * alignment a malloc'ed body had. */
#define VFU_RX_SMALL 256u

/* One outgoing message, possibly partly sent. */
struct vfu_tx {
	struct vfu_tx *next;
	size_t len, sent;
	int fd; /* our own dup, sent with the first byte; -1 if none */
	uint8_t data[];
};

/* A server->client DMA_READ/DMA_WRITE request, split in chunks. */
struct vfu_dma_req {
	struct vfu_dma_req *next;
	bool is_write;
	uint64_t iova, len;
	uint8_t *buf;	     /* dst (read) or src (write), caller's */
	uint64_t next_off;   /* next chunk not yet sent */
	uint32_t chunks_out; /* sent, reply not yet received */
	int status;	     /* first error */
	vfu_dma_done_fn cb;
	void *cb_arg;
};

/* One chunk in flight, matched by msg_id against replies. */
struct vfu_dma_chunk {
	struct vfu_dma_chunk *next;
	struct vfu_dma_req *req;
	uint16_t msg_id;
	uint64_t off, count;
};

/* What an asynchronous (VFU_ASYNC) handler left to do on resume. */
enum vfu_held_kind {
	VFU_HELD_NONE,
	VFU_HELD_REGION_WRITE, /* reply echoes the 16-byte access header */
	VFU_HELD_RESET,
	VFU_HELD_UNMAP,	    /* quiesce the table, then reply */
	VFU_HELD_UNMAP_ALL, /* quiesce, then continue with the next window */
	VFU_HELD_WRITE_MULTI, /* one write was async: continue with the next */
	VFU_HELD_REGION_READ, /* reply with held_read (the data the device filled in) */
};

struct vfu_endpoint {
	struct evloop *loop;
	char *path;
	int listen_fd;
	struct evloop_watch *listen_w;
	struct evloop_watch *fault_w; /* the DMA table's fault eventfd */
	const struct vfu_endpoint_ops *ops;
	void *arg;
	struct vfu_dma_table *dma;
	struct vfu_endpoint_config cfg;
	struct vfu_endpoint_stats st;
	/* The device's detach of the last client is still running: its windows
	 * stay mapped and no new client is accepted. */
	bool closing, in_detach, detach_done_early;

	/* The attached client; conn_fd < 0 when none. */
	int conn_fd;
	struct evloop_watch *conn_w;
	uint32_t conn_events;
	bool negotiated;
	bool write_multi;	  /* the client's VERSION offered write_multiple */
	uint32_t client_max_xfer; /* client's max_data_xfer_size */

	/* Bytes read and not yet handled: [rx_start, rx_end) of rx_buf (rx_cap
	 * bytes, allocated while a client is connected). rx_base is the stream
	 * offset of rx_buf[0]. Whenever we recv, everything complete before has
	 * been handled: the buffer holds at most the start of one message. Bytes
	 * before rx_start are only overwritten by a recv, never while a request
	 * is held (a held REGION_WRITE_MULTI still points at its entries). */
	uint8_t *rx_buf;
	size_t rx_cap, rx_start, rx_end;
	uint64_t rx_base;
	/* fds received and not yet handed to their message: the message that
	 * starts at stream offset rx_pend_owner (see vfu_ep_recv). */
	int rx_pend_fds[VFU_MAX_MSG_FDS];
	size_t rx_pend_nfds;
	bool rx_pend_overflow;
	uint64_t rx_pend_owner;
	/* Re-runs the reader for messages still buffered after a held request
	 * was resumed (the socket may have nothing left to wake us). */
	struct evloop_timer *rx_timer;

	/* The message being handled: header, body (in rx_buf, rx_small or
	 * rx_copy) and the fds that came with it. */
	struct vfio_user_header rx_hdr;
	uint8_t *rx_body;
	uint64_t rx_small[VFU_RX_SMALL / sizeof(uint64_t)];
	uint8_t *rx_copy;
	size_t rx_copy_cap;
	int rx_fds[VFU_MAX_MSG_FDS];
	size_t rx_nfds;
	bool rx_fds_overflow;

	/* Send queue. */
	struct vfu_tx *tx_head, *tx_tail;
	size_t tx_bytes;

	/* A request whose reply waits for vfu_endpoint_resume. */
	bool in_handler;
	enum vfu_held_kind held;
	struct vfio_user_header held_hdr;
	struct vfio_user_region_access held_access;
	/* A held REGION_READ's reply (access header, then count bytes the device fills before it
	 * resumes); freed when sent or when the client goes. */
	uint8_t *held_read;
	bool resume_early; /* resume called before the handler returned */
	int resume_status;
	/* A REGION_WRITE_MULTI in progress (held_hdr is its header): entries
	 * point into its body; wm_next is the next to run, wm_done counts the
	 * writes done, wm_err is the first error (positive errno). */
	const uint8_t *wm_entries;
	uint32_t wm_cnt, wm_next, wm_done;
	int wm_err;

	/* Server->client DMA. */
	struct vfu_dma_req *dma_pending_head, *dma_pending_tail; /* chunks left */
	struct vfu_dma_chunk *dma_inflight;
	struct vfu_dma_req *dma_active; /* all chunks sent, replies outstanding */
	uint32_t dma_reqs;		/* queued + active, bounded by cfg.max_dma_msgs */
	uint16_t next_msg_id;
	bool dma_kicking;

	/* Inside the connection callback, or a call made by the device: drops
	 * are deferred to its end (or to drop_timer), so detach and DMA
	 * callbacks never run inside a call the device made. */
	bool in_io;
	bool dead;
	struct evloop_timer *drop_timer;
};

/* dma_table.c */
/* The lowest window; -ENOENT when the table is empty. Loop thread. */
int vfu_dma_table_first(struct vfu_dma_table *t, struct vfu_dma_window *out);
/* The eventfd that becomes readable when a window of t lost its memory under an access (the
 * client truncated the fd): the owner drops the client. */
int vfu_dma_table_fault_fd(const struct vfu_dma_table *t);
/* Faults since the last call, and the window of the last one. Loop thread. */
uint64_t vfu_dma_table_faults(struct vfu_dma_table *t, uint64_t *iova, uint64_t *len);

/* dma_fault.c: mappings of client fds watched for SIGBUS (see there). A notifier is one
 * owner's eventfd, referenced by the owner and by every slot naming it. */
struct vfu_dma_notifier;
struct vfu_fault_slot;
/* A notifier (installs the SIGBUS handler on first use). 0 or -errno. */
int vfu_dma_notifier_create(struct vfu_dma_notifier **out);
void vfu_dma_notifier_put(struct vfu_dma_notifier *n);
int vfu_dma_notifier_fd(const struct vfu_dma_notifier *n);
/* Faults reported to n since the last call (the eventfd is emptied), and the last window. */
uint64_t vfu_dma_notifier_take(struct vfu_dma_notifier *n, uint64_t *iova, uint64_t *len);
/* Watches [base, base+len), mapped with prot, of window [iova +wlen]: a SIGBUS there replaces
 * it with anonymous memory and reports to n. 0, or -ENOSPC past 65536 watched mappings. */
int vfu_dma_fault_watch(struct vfu_dma_notifier *n, void *base, size_t len, int prot,
			uint64_t iova, uint64_t wlen, struct vfu_fault_slot **out);
/* Stops watching (before the munmap: the address may be reused at once). NULL is fine. */
void vfu_dma_fault_unwatch(struct vfu_fault_slot *s);
/* Mappings replaced in this process so far. */
uint64_t vfu_dma_fault_count(void);

/* endpoint.c */
/* Queues (or sends) one message: header + payload, optional fd (dup'ed, the
 * caller keeps its own). 0 or -errno (the connection is then dropped). */
int vfu_ep_send(struct vfu_endpoint *ep, const struct vfio_user_header *hdr, const void *payload,
		size_t len, int fd);
/* Replies to request `req`: success with payload, or header-only error when
 * err > 0. Nothing is sent for NO_REPLY requests. */
void vfu_ep_reply(struct vfu_endpoint *ep, const struct vfio_user_header *req, int err,
		  const void *payload, size_t len);
/* A header-only error reply (err > 0) to req, not counted or logged again:
 * for requests whose failures were accounted one by one (REGION_WRITE_MULTI).
 * Nothing for NO_REPLY requests. */
void vfu_ep_reply_error(struct vfu_endpoint *ep, const struct vfio_user_header *req, int err);
/* Closes the current message's fds now, before its reply goes out: a client that sees the reply
 * finds them closed (DMA_MAP's, mapped; DMA_UNMAP's, unused). */
void vfu_ep_rx_fds_close(struct vfu_endpoint *ep);
/* Drops the client after a protocol violation. */
void vfu_ep_drop(struct vfu_endpoint *ep, const char *why);
/* Runs fn(ep) with drops deferred; a drop it caused is carried out from a
 * zero-delay timer on the loop. */
void vfu_ep_guarded(struct vfu_endpoint *ep, void (*fn)(struct vfu_endpoint *ep));
/* Recomputes which epoll events the connection needs. */
void vfu_ep_update_events(struct vfu_endpoint *ep);

/* cmd.c */
/* Handles one complete client command (the body is ep->rx_body, the fds
 * ep->rx_fds; handlers set rx_nfds to 0 for fds they consume). */
void vfu_cmd_dispatch(struct vfu_endpoint *ep);
/* Continues a held operation with status; sends the reply when done. */
void vfu_cmd_resume(struct vfu_endpoint *ep, int status);

/* dma_msg.c */
/* A reply from the client to one of our DMA requests; false if it answers
 * nothing we sent (the caller drops the connection). */
bool vfu_dma_msg_reply(struct vfu_endpoint *ep);
/* Sends queued DMA chunks if no client request is being handled. */
void vfu_dma_msg_kick(struct vfu_endpoint *ep);
/* Fails every queued and in-flight request with status. */
void vfu_dma_msg_fail_all(struct vfu_endpoint *ep, int status);

#endif
