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
};

struct vfu_endpoint {
	struct evloop *loop;
	char *path;
	int listen_fd;
	struct evloop_watch *listen_w;
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
	uint32_t client_max_xfer; /* client's max_data_xfer_size */

	/* Receive state: header, then body, buffered across wakeups. */
	struct vfio_user_header rx_hdr;
	size_t rx_hdr_got;
	uint8_t *rx_body;
	size_t rx_body_cap, rx_body_got;
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
	bool resume_early; /* resume called before the handler returned */
	int resume_status;

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

/* endpoint.c */
/* Queues (or sends) one message: header + payload, optional fd (dup'ed, the
 * caller keeps its own). 0 or -errno (the connection is then dropped). */
int vfu_ep_send(struct vfu_endpoint *ep, const struct vfio_user_header *hdr, const void *payload,
		size_t len, int fd);
/* Replies to request `req`: success with payload, or header-only error when
 * err > 0. Nothing is sent for NO_REPLY requests. */
void vfu_ep_reply(struct vfu_endpoint *ep, const struct vfio_user_header *req, int err,
		  const void *payload, size_t len);
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
