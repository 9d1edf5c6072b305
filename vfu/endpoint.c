/* vfu/endpoint.c - the vfio-user endpoint's transport: listening socket,
 * one client at a time, non-blocking framing with SCM_RIGHTS (batched reads:
 * many queued messages per recv), the send queue, disconnect and the async
 * hold/resume of requests. */
#include "vfu/vfu_internal.h"

#include "common/evloop.h"
#include "common/log.h"
#include "common/unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void vfu_ep_on_conn(int fd, uint32_t events, void *arg);

static void vfu_ep_close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* The message just handled is done: fds it did not consume are closed. */
static void vfu_ep_msg_done(struct vfu_endpoint *ep)
{
	vfu_ep_close_fds(ep->rx_fds, ep->rx_nfds);
	ep->rx_nfds = 0;
	ep->rx_fds_overflow = false;
	ep->rx_body = NULL;
}

void vfu_ep_rx_fds_close(struct vfu_endpoint *ep)
{
	vfu_ep_close_fds(ep->rx_fds, ep->rx_nfds);
	ep->rx_nfds = 0;
}

/* Forgets every byte and fd received from the client. */
static void vfu_ep_rx_reset(struct vfu_endpoint *ep)
{
	vfu_ep_msg_done(ep);
	vfu_ep_close_fds(ep->rx_pend_fds, ep->rx_pend_nfds);
	ep->rx_pend_nfds = 0;
	ep->rx_pend_overflow = false;
	free(ep->rx_buf);
	ep->rx_buf = NULL;
	ep->rx_cap = ep->rx_start = ep->rx_end = 0;
	ep->rx_base = 0;
	free(ep->rx_copy);
	ep->rx_copy = NULL;
	ep->rx_copy_cap = 0;
	if (ep->rx_timer) {
		evloop_timer_cancel(ep->rx_timer);
		ep->rx_timer = NULL;
	}
}

static void vfu_ep_tx_free(struct vfu_endpoint *ep)
{
	while (ep->tx_head) {
		struct vfu_tx *tx = ep->tx_head;

		ep->tx_head = tx->next;
		if (tx->fd >= 0)
			close(tx->fd);
		free(tx);
	}
	ep->tx_tail = NULL;
	ep->tx_bytes = 0;
}

/* Takes the faults reported since the last look (dma_fault.c): a window lost its memory under a
 * device access, its fd truncated after DMA_MAP. Counts and logs them; true if there were any. */
static bool vfu_ep_take_faults(struct vfu_endpoint *ep)
{
	uint64_t iova, len, n = vfu_dma_table_faults(ep->dma, &iova, &len);

	if (!n)
		return false;
	ep->st.dma_faults += n;
	LOG_GUEST_ERR(VFU_COMP,
		      "%s: DMA window [%#llx +%#llx] lost its memory under a device access (its fd "
		      "was truncated after DMA_MAP)%s", ep->path, (unsigned long long)iova,
		      (unsigned long long)len, ep->conn_fd >= 0 ? ": dropping the client" : "");
	return true;
}

/* The device has let go of the last client's memory: unmap it and listen for
 * the next client. */
static void vfu_ep_detach_finish(struct vfu_endpoint *ep)
{
	ep->closing = false;
	vfu_dma_table_clear(ep->dma);
	vfu_dma_table_quiesce(ep->dma);
	/* Faults in the gone client's memory are counted now: one still waiting in the eventfd
	 * must not drop the next client, which may be accepted in the same loop turn. */
	vfu_ep_take_faults(ep);
	if (ep->listen_w && evloop_watch_modify(ep->listen_w, EPOLLIN))
		LOG_ERR(VFU_COMP, "%s: cannot listen again", ep->path);
	LOG_INFO(VFU_COMP, "%s: client detached", ep->path);
}

/* Closes the client's socket and frees what it had; the device's detach
 * decides when its memory may go (vfu_ep_detach_finish). */
static void vfu_ep_teardown(struct vfu_endpoint *ep)
{
	bool was_attached = ep->negotiated;
	int rc = 0;

	if (ep->drop_timer) {
		evloop_timer_cancel(ep->drop_timer);
		ep->drop_timer = NULL;
	}
	if (ep->conn_fd < 0)
		return;
	evloop_watch_remove(ep->conn_w);
	ep->conn_w = NULL;
	close(ep->conn_fd);
	ep->conn_fd = -1;
	ep->conn_events = 0;
	ep->negotiated = false;
	ep->write_multi = false;
	ep->held = VFU_HELD_NONE;
	free(ep->held_read);
	ep->held_read = NULL;
	ep->wm_entries = NULL;
	ep->resume_early = false;
	ep->dead = false;
	ep->st.disconnects++;
	vfu_ep_rx_reset(ep);
	vfu_ep_tx_free(ep);
	vfu_dma_msg_fail_all(ep, -ECONNRESET);
	/* No new client until the device is done with this one's memory (accepting stays
	 * paused since this one was accepted). */
	ep->closing = true;
	if (was_attached && ep->ops->detach) {
		ep->in_detach = true;
		ep->detach_done_early = false;
		rc = ep->ops->detach(ep->arg);
		ep->in_detach = false;
		if (rc == VFU_ASYNC && !ep->detach_done_early)
			return;
		if (rc < 0)
			LOG_ERR(VFU_COMP, "%s: device detach failed: %d", ep->path, rc);
	}
	vfu_ep_detach_finish(ep);
}

void vfu_endpoint_detach_done(struct vfu_endpoint *ep)
{
	if (ep->in_detach) {
		ep->detach_done_early = true;
		return;
	}
	if (!ep->closing || ep->conn_fd >= 0) {
		LOG_ERR(VFU_COMP, "%s: detach_done with no detach in progress", ep->path);
		return;
	}
	vfu_ep_detach_finish(ep);
}

void vfu_ep_drop(struct vfu_endpoint *ep, const char *why)
{
	if (ep->conn_fd < 0)
		return;
	if (why)
		LOG_GUEST_ERR(VFU_COMP, "%s: dropping client: %s", ep->path, why);
	/* Inside the connection callback, the reader finishes first. */
	if (ep->in_io) {
		ep->dead = true;
		return;
	}
	vfu_ep_teardown(ep);
}

static void vfu_ep_drop_timer(void *arg)
{
	struct vfu_endpoint *ep = arg;

	ep->drop_timer = NULL;
	if (ep->dead)
		vfu_ep_teardown(ep);
}

void vfu_ep_guarded(struct vfu_endpoint *ep, void (*fn)(struct vfu_endpoint *ep))
{
	bool outer = !ep->in_io;

	ep->in_io = true;
	fn(ep);
	if (!outer)
		return;
	ep->in_io = false;
	if (ep->dead && !ep->drop_timer) {
		ep->drop_timer = evloop_timer_add(ep->loop, 0, vfu_ep_drop_timer, ep);
		/* Without a timer, tear down now rather than leak the client. */
		if (!ep->drop_timer)
			vfu_ep_teardown(ep);
	}
}

void vfu_ep_update_events(struct vfu_endpoint *ep)
{
	uint32_t ev = 0;

	if (ep->conn_fd < 0 || ep->dead)
		return;
	if (ep->held == VFU_HELD_NONE && ep->tx_bytes < VFU_TX_HIGH_WATER)
		ev |= EPOLLIN;
	if (ep->tx_head)
		ev |= EPOLLOUT;
	if (ev != ep->conn_events && !evloop_watch_modify(ep->conn_w, ev))
		ep->conn_events = ev;
}

/* One sendmsg of iov; the fd rides on the first byte. Returns bytes or
 * -errno. */
static ssize_t vfu_ep_sendmsg(int sock, struct iovec *iov, int niov, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n < 0 ? (errno == EINTR ? -EAGAIN : -errno) : n;
}

/* Sends what the queue holds until the socket is full. 0 or -errno. */
static int vfu_ep_flush(struct vfu_endpoint *ep)
{
	while (ep->tx_head) {
		struct vfu_tx *tx = ep->tx_head;
		struct iovec iov = {.iov_base = tx->data + tx->sent, .iov_len = tx->len - tx->sent};
		ssize_t n = vfu_ep_sendmsg(ep->conn_fd, &iov, 1, tx->fd);

		if (n == -EAGAIN)
			break;
		if (n < 0)
			return (int)n;
		if (tx->fd >= 0) {
			close(tx->fd);
			tx->fd = -1;
		}
		tx->sent += (size_t)n;
		ep->tx_bytes -= (size_t)n;
		if (tx->sent < tx->len)
			break;
		ep->tx_head = tx->next;
		if (!ep->tx_head)
			ep->tx_tail = NULL;
		free(tx);
	}
	vfu_ep_update_events(ep);
	return 0;
}

/* Queues the unsent tail of a message: bytes [skip, total) of hdr+payload,
 * with fd if none of it went out yet. 0 or -errno. */
static int vfu_ep_queue(struct vfu_endpoint *ep, const struct vfio_user_header *hdr,
			const void *payload, size_t len, int fd, size_t skip)
{
	size_t total = sizeof(*hdr) + len;
	struct vfu_tx *tx = malloc(sizeof(*tx) + total - skip);

	if (!tx)
		return -ENOMEM;
	tx->next = NULL;
	tx->len = total - skip;
	tx->sent = 0;
	tx->fd = -1;
	if (skip < sizeof(*hdr)) {
		memcpy(tx->data, (const uint8_t *)hdr + skip, sizeof(*hdr) - skip);
		if (len)
			memcpy(tx->data + sizeof(*hdr) - skip, payload, len);
	} else {
		memcpy(tx->data, (const uint8_t *)payload + (skip - sizeof(*hdr)), total - skip);
	}
	if (fd >= 0 && !skip) {
		/* Our own copy: the owner may close its fd before we flush. */
		tx->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (tx->fd < 0) {
			free(tx);
			return -EMFILE;
		}
	}
	if (ep->tx_tail)
		ep->tx_tail->next = tx;
	else
		ep->tx_head = tx;
	ep->tx_tail = tx;
	ep->tx_bytes += tx->len;
	return 0;
}

int vfu_ep_send(struct vfu_endpoint *ep, const struct vfio_user_header *hdr, const void *payload,
		size_t len, int fd)
{
	struct iovec iov[2] = {{.iov_base = (void *)hdr, .iov_len = sizeof(*hdr)},
			       {.iov_base = (void *)payload, .iov_len = len}};
	ssize_t n = 0;
	int rc;

	if (ep->conn_fd < 0 || ep->dead)
		return -ENOTCONN;
	/* Straight out when nothing is queued: no copy on the common path. */
	if (!ep->tx_head) {
		n = vfu_ep_sendmsg(ep->conn_fd, iov, len ? 2 : 1, fd);
		if (n == -EAGAIN)
			n = 0;
		if (n < 0) {
			vfu_ep_drop(ep, "send failed");
			return (int)n;
		}
	}
	ep->st.msgs_tx++;
	if ((size_t)n == sizeof(*hdr) + len)
		return 0;
	rc = vfu_ep_queue(ep, hdr, payload, len, fd, (size_t)n);
	if (rc) {
		vfu_ep_drop(ep, "cannot queue a message");
		return rc;
	}
	vfu_ep_update_events(ep);
	return 0;
}

void vfu_ep_reply_error(struct vfu_endpoint *ep, const struct vfio_user_header *req, int err)
{
	struct vfio_user_header h = {
	    .msg_id = req->msg_id,
	    .command = req->command,
	    .msg_size = sizeof(h),
	    .flags = VFIO_USER_F_TYPE_REPLY | VFIO_USER_F_ERROR,
	    .error_no = (uint32_t)err,
	};

	if (!(req->flags & VFIO_USER_F_NO_REPLY))
		vfu_ep_send(ep, &h, NULL, 0, -1);
}

void vfu_ep_reply(struct vfu_endpoint *ep, const struct vfio_user_header *req, int err,
		  const void *payload, size_t len)
{
	struct vfio_user_header h = {
	    .msg_id = req->msg_id,
	    .command = req->command,
	    .flags = VFIO_USER_F_TYPE_REPLY,
	};

	if (err) {
		ep->st.errors_replied++;
		LOG_GUEST_ERR(VFU_COMP, "%s: command %u id %u failed: %s", ep->path, req->command,
			      req->msg_id, strerror(err));
	}
	/* Spec: a NO_REPLY request never gets an answer, not even an error; the
	 * client would not expect it and would desynchronise. */
	if (req->flags & VFIO_USER_F_NO_REPLY)
		return;
	if (err) {
		h.flags |= VFIO_USER_F_ERROR;
		h.error_no = (uint32_t)err;
		payload = NULL;
		len = 0;
	}
	h.msg_size = (uint32_t)(sizeof(h) + len);
	vfu_ep_send(ep, &h, payload, len, -1);
}

/* Stream offset of the last message that begins in the buffer (the one at
 * rx_start when no other does). */
static uint64_t vfu_ep_rx_last_start(const struct vfu_endpoint *ep)
{
	size_t pos = ep->rx_start, last = pos;

	while (pos < ep->rx_end) {
		struct vfio_user_header h;

		last = pos;
		if (ep->rx_end - pos < sizeof(h))
			break;
		memcpy(&h, ep->rx_buf + pos, sizeof(h));
		/* Garbage: the reader drops the client when it gets there. */
		if (h.msg_size < sizeof(h))
			break;
		pos += h.msg_size;
	}
	return ep->rx_base + last;
}

/* One recvmsg of up to len bytes onto the end of the buffer. Returns bytes, 0
 * on EOF, -EAGAIN, or -errno (-EPROTO for a truncated control message).
 *
 * Which message do fds belong to? The client sends a message with its fds in
 * one sendmsg, so they ride on its first byte; and the kernel ends a read
 * right after the first chunk that carries fds (unix_stream_read_generic), so
 * the fds of a read came with the last chunk in it. They therefore belong to
 * the last message that begins in the buffer once the read is done (or the
 * message in progress, when none began in this read). While fds wait for
 * their message, vfu_ep_read reads no further than that message's end, so the
 * fds of two messages never meet in the pending set. */
static ssize_t vfu_ep_recv(struct vfu_endpoint *ep, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VFU_MAX_MSG_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = ep->rx_buf + ep->rx_end, .iov_len = len};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = ctl.buf,
	    .msg_controllen = sizeof(ctl.buf),
	};
	int got[VFU_MAX_MSG_FDS];
	size_t ngot = 0;
	bool overflow = false;
	ssize_t n = recvmsg(ep->conn_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t nfd;
		int *fds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < nfd; i++) {
			int f;

			memcpy(&f, &fds[i], sizeof(f));
			if (ngot < VFU_MAX_MSG_FDS) {
				got[ngot++] = f;
			} else {
				close(f);
				overflow = true;
			}
		}
	}
	/* The kernel dropped fds it could not deliver: the client sent more than
	 * max_msg_fds with one message. */
	if (msg.msg_flags & MSG_CTRUNC) {
		vfu_ep_close_fds(got, ngot);
		return -EPROTO;
	}
	if (n == 0) {
		vfu_ep_close_fds(got, ngot);
		return 0;
	}
	ep->rx_end += (size_t)n;
	ep->st.socket_reads++;
	if (!ngot && !overflow)
		return n;
	ep->rx_pend_owner = vfu_ep_rx_last_start(ep);
	for (size_t i = 0; i < ngot; i++) {
		if (ep->rx_pend_nfds < VFU_MAX_MSG_FDS) {
			ep->rx_pend_fds[ep->rx_pend_nfds++] = got[i];
		} else {
			close(got[i]);
			overflow = true;
		}
	}
	ep->rx_pend_overflow |= overflow;
	return n;
}

/* Validates a complete header. false: drop the connection. */
static bool vfu_ep_check_header(struct vfu_endpoint *ep, const struct vfio_user_header *h)
{
	uint32_t type = h->flags & VFIO_USER_F_TYPE_MASK;

	if (h->msg_size < sizeof(*h) || h->msg_size > VFU_MAX_MSG_SIZE) {
		ep->st.bad_messages++;
		vfu_ep_drop(ep, "message size out of bounds");
		return false;
	}
	if (type != VFIO_USER_F_TYPE_COMMAND && type != VFIO_USER_F_TYPE_REPLY) {
		ep->st.bad_messages++;
		vfu_ep_drop(ep, "message type neither command nor reply");
		return false;
	}
	return true;
}

/* Readies the buffer for a recv: what is left (at most the start of one
 * message) moves to the front, and the buffer grows to hold that message
 * whole (or shrinks back after a large one). *len gets how much the recv may
 * take. 0 or -ENOMEM. */
static int vfu_ep_rx_room(struct vfu_endpoint *ep, size_t *len)
{
	size_t have = ep->rx_end - ep->rx_start, need = VFU_RX_CHUNK;
	size_t msg_end = sizeof(struct vfio_user_header);

	if (ep->rx_start) {
		memmove(ep->rx_buf, ep->rx_buf + ep->rx_start, have);
		ep->rx_base += ep->rx_start;
		ep->rx_start = 0;
		ep->rx_end = have;
	}
	if (have >= sizeof(struct vfio_user_header)) {
		struct vfio_user_header h;

		/* Checked by vfu_ep_check_header: at most VFU_MAX_MSG_SIZE. */
		memcpy(&h, ep->rx_buf, sizeof(h));
		msg_end = h.msg_size;
		if (msg_end > need)
			need = msg_end;
	}
	if (ep->rx_cap != need) {
		uint8_t *nb = realloc(ep->rx_buf, need);

		/* A failed shrink keeps the larger buffer. */
		if (!nb && ep->rx_cap < need)
			return -ENOMEM;
		if (nb) {
			ep->rx_buf = nb;
			ep->rx_cap = need;
		}
	}
	*len = ep->rx_cap - ep->rx_end;
	/* fds wait for the message in progress: read no further than its end. */
	if ((ep->rx_pend_nfds || ep->rx_pend_overflow) && msg_end - have < *len)
		*len = msg_end - have;
	return 0;
}

/* Makes the complete message at rx_start (header h) the one being handled:
 * its body, aligned as a malloc'ed one would be, and its fds. 0 or -ENOMEM
 * (the client is dropped). */
static int vfu_ep_rx_take(struct vfu_endpoint *ep, const struct vfio_user_header *h)
{
	uint8_t *body = ep->rx_buf + ep->rx_start + sizeof(*h);
	size_t len = h->msg_size - sizeof(*h);
	uint64_t at = ep->rx_base + ep->rx_start;

	ep->rx_hdr = *h;
	if (!((uintptr_t)body % sizeof(uint64_t))) {
		ep->rx_body = body;
	} else if (len <= sizeof(ep->rx_small)) {
		memcpy(ep->rx_small, body, len);
		ep->rx_body = (uint8_t *)ep->rx_small;
	} else {
		if (len > ep->rx_copy_cap) {
			uint8_t *nb = realloc(ep->rx_copy, len);

			if (!nb) {
				vfu_ep_drop(ep, "out of memory for a message");
				return -ENOMEM;
			}
			ep->rx_copy = nb;
			ep->rx_copy_cap = len;
		}
		memcpy(ep->rx_copy, body, len);
		ep->rx_body = ep->rx_copy;
	}
	if ((ep->rx_pend_nfds || ep->rx_pend_overflow) && ep->rx_pend_owner == at) {
		memcpy(ep->rx_fds, ep->rx_pend_fds, ep->rx_pend_nfds * sizeof(int));
		ep->rx_nfds = ep->rx_pend_nfds;
		ep->rx_fds_overflow = ep->rx_pend_overflow;
		ep->rx_pend_nfds = 0;
		ep->rx_pend_overflow = false;
	}
	return 0;
}

/* Runs the resumes a device made from inside the endpoint's own call (an op
 * completing inline) one after the other, each with in_handler set: a device
 * that resumes again from inside the continued operation never nests. */
static void vfu_ep_run_resumes(struct vfu_endpoint *ep)
{
	while (ep->resume_early && !ep->dead) {
		ep->resume_early = false;
		if (ep->held == VFU_HELD_NONE)
			break;
		ep->in_handler = true;
		vfu_cmd_resume(ep, ep->resume_status);
		ep->in_handler = false;
	}
	ep->resume_early = false;
}

/* A complete message is in rx_hdr/rx_body/rx_fds: handle it. */
static void vfu_ep_process(struct vfu_endpoint *ep)
{
	ep->st.msgs_rx++;
	if ((ep->rx_hdr.flags & VFIO_USER_F_TYPE_MASK) == VFIO_USER_F_TYPE_REPLY) {
		if (!vfu_dma_msg_reply(ep)) {
			ep->st.bad_messages++;
			vfu_ep_drop(ep, "reply to nothing we sent");
		}
		return;
	}
	ep->in_handler = true;
	vfu_cmd_dispatch(ep);
	ep->in_handler = false;
	vfu_ep_run_resumes(ep);
}

/* Handles the complete messages in the buffer, in order, until one is held,
 * the send queue is full or the client is dropped. */
static void vfu_ep_rx_handle(struct vfu_endpoint *ep)
{
	while (!ep->dead && ep->held == VFU_HELD_NONE && ep->tx_bytes < VFU_TX_HIGH_WATER) {
		size_t have = ep->rx_end - ep->rx_start;
		struct vfio_user_header h;

		if (have < sizeof(h))
			return;
		memcpy(&h, ep->rx_buf + ep->rx_start, sizeof(h));
		if (!vfu_ep_check_header(ep, &h) || have < h.msg_size)
			return;
		if (vfu_ep_rx_take(ep, &h))
			return;
		ep->rx_start += h.msg_size;
		vfu_ep_process(ep);
		vfu_ep_msg_done(ep);
	}
}

/* Handles what is buffered, then reads the socket in chunks of up to
 * VFU_RX_CHUNK, handling every message a read completed, until a read comes
 * back short (the socket was empty then: no recv just to see EAGAIN), a
 * request is held, the send queue is full, or a bounded number of reads was
 * made. epoll is level-triggered: whatever is left brings us back, so other
 * fds get their turn (a read also ends short at a chunk with fds). */
static void vfu_ep_read(struct vfu_endpoint *ep)
{
	bool drained = false;
	ssize_t n = 0;

	for (int reads = 0;; reads++) {
		size_t len;

		vfu_ep_rx_handle(ep);
		if (ep->dead || ep->held != VFU_HELD_NONE || ep->tx_bytes >= VFU_TX_HIGH_WATER ||
		    reads == VFU_RX_READS_PER_WAKE || drained)
			return;
		if (vfu_ep_rx_room(ep, &len)) {
			vfu_ep_drop(ep, "out of memory for a message");
			return;
		}
		n = vfu_ep_recv(ep, len);
		if (n == -EAGAIN)
			return;
		if (n <= 0)
			break;
		drained = (size_t)n < len;
	}
	/* EOF or an error: mid-message it is a short read, else a plain close. */
	if (n == -EPROTO) {
		ep->st.bad_messages++;
		vfu_ep_drop(ep, "more fds than max_msg_fds");
	} else if (ep->rx_end > ep->rx_start) {
		ep->st.bad_messages++;
		vfu_ep_drop(ep, "short read");
	} else {
		vfu_ep_drop(ep, NULL);
	}
}

static void vfu_ep_on_conn(int fd, uint32_t events, void *arg)
{
	struct vfu_endpoint *ep = arg;

	ep->in_io = true;
	if ((events & EPOLLOUT) && vfu_ep_flush(ep))
		vfu_ep_drop(ep, "send failed");
	/* Messages already buffered are handled even when the socket has nothing
	 * new (after a resume, or once the send queue drained). */
	if (!ep->dead && ep->held == VFU_HELD_NONE && ep->tx_bytes < VFU_TX_HIGH_WATER &&
	    ((events & EPOLLIN) || ep->rx_end > ep->rx_start))
		vfu_ep_read(ep);
	else if (!ep->dead && (events & (EPOLLHUP | EPOLLERR)))
		/* Not reading (held or backlogged) and the peer is gone. */
		vfu_ep_drop(ep, NULL);
	ep->in_io = false;
	if (ep->dead) {
		vfu_ep_teardown(ep);
		return;
	}
	vfu_ep_update_events(ep);
	vfu_dma_msg_kick(ep);
}

/* Messages left in the buffer when a held request was resumed: the socket
 * may stay silent, so the reader runs from the loop (never inside the
 * device's call to vfu_endpoint_resume). */
static void vfu_ep_rx_timer(void *arg)
{
	struct vfu_endpoint *ep = arg;

	ep->rx_timer = NULL;
	if (ep->conn_fd >= 0)
		vfu_ep_on_conn(ep->conn_fd, 0, ep);
}

/* A window lost its memory under a device access (dma_fault.c): the client truncated the file
 * behind it after DMA_MAP. The device saw zeroes there; the client goes, the daemon stays. */
static void vfu_ep_on_dma_fault(int fd, uint32_t events, void *arg)
{
	struct vfu_endpoint *ep = arg;

	(void)fd;
	(void)events;
	if (vfu_ep_take_faults(ep))
		vfu_ep_drop(ep, NULL);
}

static void vfu_ep_on_listen(int fd, uint32_t events, void *arg)
{
	struct vfu_endpoint *ep = arg;
	int c;

	/* One client at a time: while one is attached, or the device still tears the last one
	 * down, the next waits in the backlog (accepting pauses; this event may have been
	 * collected just before). A client that reconnects right after hanging up must not be
	 * refused because we have not read its old socket's EOF yet. */
	if (ep->conn_fd >= 0 || ep->closing)
		return;
	c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c < 0) {
		if (errno != EAGAIN && errno != EINTR)
			LOG_WARN(VFU_COMP, "%s: accept: %s", ep->path, strerror(errno));
		return;
	}
	if (evloop_watch_modify(ep->listen_w, 0)) {
		LOG_ERR(VFU_COMP, "%s: cannot pause accepting: client refused", ep->path);
		close(c);
		return;
	}
	ep->conn_w = evloop_watch_add(ep->loop, c, EPOLLIN, vfu_ep_on_conn, ep);
	if (!ep->conn_w) {
		LOG_ERR(VFU_COMP, "%s: cannot watch the client socket", ep->path);
		close(c);
		if (evloop_watch_modify(ep->listen_w, EPOLLIN))
			LOG_ERR(VFU_COMP, "%s: cannot listen again", ep->path);
		return;
	}
	ep->conn_fd = c;
	ep->conn_events = EPOLLIN;
	ep->client_max_xfer = VFU_MAX_DATA_XFER_SIZE;
	vfu_ep_rx_reset(ep);
	LOG_INFO(VFU_COMP, "%s: client connected", ep->path);
}

struct vfu_endpoint *vfu_endpoint_create(struct evloop *loop, const char *path,
					 const struct vfu_endpoint_config *cfg,
					 const struct vfu_endpoint_ops *ops, void *arg)
{
	struct sockaddr_un sa;
	struct vfu_endpoint *ep;
	char err[256];
	int saved;

	if (!loop || !path || !ops || !ops->device_info || !ops->region_info ||
	    !ops->region_access || !ops->irq_info || !ops->set_irqs || !ops->reset) {
		errno = EINVAL;
		return NULL;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->loop = loop;
	ep->ops = ops;
	ep->arg = arg;
	ep->conn_fd = -1;
	ep->path = strdup(path);
	if (!ep->path)
		goto out_free;
	if (cfg)
		ep->cfg = *cfg;
	if (!ep->cfg.mode)
		ep->cfg.mode = 0600;
	if (!ep->cfg.max_dma_regions || ep->cfg.max_dma_regions > VFU_MAX_DMA_MAPS)
		ep->cfg.max_dma_regions =
		    ep->cfg.max_dma_regions ? VFU_MAX_DMA_MAPS : VFU_DEFAULT_DMA_REGIONS;
	if (!ep->cfg.max_dma_bytes)
		ep->cfg.max_dma_bytes = VFU_DEFAULT_DMA_BYTES;
	if (!ep->cfg.max_dma_msgs)
		ep->cfg.max_dma_msgs = VFU_DEFAULT_DMA_MSGS;
	ep->dma = vfu_dma_table_create(ep->cfg.max_dma_regions);
	if (!ep->dma)
		goto out_path;
	vfu_dma_table_set_policy(ep->dma, ep->cfg.max_dma_bytes, ep->cfg.allow_any_dma_fd);
	ep->fault_w = evloop_watch_add(loop, vfu_dma_table_fault_fd(ep->dma), EPOLLIN,
				       vfu_ep_on_dma_fault, ep);
	if (!ep->fault_w)
		goto out_dma;
	/* Safe against other users of the directory (common/unix_socket.h); a stale socket
	 * of ours from an earlier run is replaced, anything else is left alone. */
	ep->listen_fd = unix_socket_listen(path, ep->cfg.mode, 4, err, sizeof(err));
	if (ep->listen_fd < 0) {
		LOG_ERR(VFU_COMP, "%s", err);
		errno = -ep->listen_fd;
		goto out_fault;
	}
	ep->listen_w = evloop_watch_add(loop, ep->listen_fd, EPOLLIN, vfu_ep_on_listen, ep);
	if (!ep->listen_w)
		goto out_sock;
	return ep;

out_sock:
	saved = errno;
	unix_socket_unlink(path);
	close(ep->listen_fd);
	errno = saved;
out_fault:
	saved = errno;
	evloop_watch_remove(ep->fault_w);
	errno = saved;
out_dma:
	saved = errno;
	vfu_dma_table_destroy(ep->dma);
	errno = saved;
out_path:
	saved = errno;
	free(ep->path);
	errno = saved;
out_free:
	saved = errno;
	free(ep);
	errno = saved;
	return NULL;
}

int vfu_endpoint_destroy(struct vfu_endpoint *ep)
{
	if (!ep)
		return 0;
	if (!vfu_endpoint_idle(ep)) {
		LOG_ERR(VFU_COMP, "%s: destroy with a client still attached or detaching",
			ep->path);
		return -EBUSY;
	}
	evloop_watch_remove(ep->listen_w);
	close(ep->listen_fd);
	unix_socket_unlink(ep->path);
	evloop_watch_remove(ep->fault_w);
	vfu_dma_table_destroy(ep->dma);
	vfu_ep_rx_reset(ep);
	free(ep->path);
	free(ep);
	return 0;
}

bool vfu_endpoint_idle(const struct vfu_endpoint *ep)
{
	return ep->conn_fd < 0 && !ep->closing;
}

void vfu_endpoint_disconnect(struct vfu_endpoint *ep)
{
	vfu_ep_drop(ep, NULL);
}

bool vfu_endpoint_attached(const struct vfu_endpoint *ep)
{
	return ep->conn_fd >= 0 && ep->negotiated && !ep->dead;
}

struct vfu_dma_table *vfu_endpoint_dma(struct vfu_endpoint *ep)
{
	return ep->dma;
}

static void vfu_ep_resume_guarded(struct vfu_endpoint *ep)
{
	ep->resume_early = true;
	vfu_ep_run_resumes(ep);
	if (!ep->dead && ep->held == VFU_HELD_NONE && ep->rx_end > ep->rx_start && !ep->rx_timer) {
		ep->rx_timer = evloop_timer_add(ep->loop, 0, vfu_ep_rx_timer, ep);
		if (!ep->rx_timer)
			vfu_ep_drop(ep, "cannot schedule the buffered messages");
	}
	vfu_ep_update_events(ep);
	vfu_dma_msg_kick(ep);
}

void vfu_endpoint_resume(struct vfu_endpoint *ep, int status)
{
	if (ep->in_handler) {
		/* Completed before the handler even returned VFU_ASYNC. */
		ep->resume_early = true;
		ep->resume_status = status;
		return;
	}
	if (ep->held == VFU_HELD_NONE || ep->conn_fd < 0 || ep->dead) {
		LOG_DBG(VFU_COMP, "%s: resume with nothing held", ep->path);
		return;
	}
	ep->resume_status = status;
	vfu_ep_guarded(ep, vfu_ep_resume_guarded);
}

void vfu_endpoint_get_stats(const struct vfu_endpoint *ep, struct vfu_endpoint_stats *st)
{
	*st = ep->st;
}
