/* vfu/dma_msg.c - server->client DMA_READ / DMA_WRITE messages for
 * fd-less DMA windows: queueing, chunking, reply matching, failure on
 * disconnect. */
#include "vfu/vfu_internal.h"

#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void vfu_dma_msg_complete(struct vfu_endpoint *ep, struct vfu_dma_req *req)
{
	struct vfu_dma_req **pp;

	for (pp = &ep->dma_active; *pp; pp = &(*pp)->next) {
		if (*pp == req) {
			*pp = req->next;
			break;
		}
	}
	ep->dma_reqs--;
	if (req->cb)
		req->cb(req->status, req->cb_arg);
	free(req);
}

static int vfu_dma_msg_submit(struct vfu_endpoint *ep, bool is_write, uint64_t iova, void *buf,
			      uint64_t len, vfu_dma_done_fn cb, void *arg)
{
	uint32_t need = is_write ? VFIO_USER_DMA_WRITE_PROT : VFIO_USER_DMA_READ_PROT;
	struct vfu_dma_window w;
	struct vfu_dma_req *req;
	int rc;

	if (!ep->negotiated || ep->conn_fd < 0 || ep->dead)
		return -ENOTCONN;
	if (!len || !buf || iova + len - 1 < iova)
		return -EINVAL;
	rc = vfu_dma_table_find(ep->dma, iova, len, &w);
	if (rc)
		return rc;
	if ((w.prot & need) != need)
		return -EPERM;
	/* A per-client bound: the client answers these at its own pace. */
	if (ep->dma_reqs >= ep->cfg.max_dma_msgs)
		return -EAGAIN;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	ep->dma_reqs++;
	req->is_write = is_write;
	req->iova = iova;
	req->len = len;
	req->buf = buf;
	req->cb = cb;
	req->cb_arg = arg;
	if (ep->dma_pending_tail)
		ep->dma_pending_tail->next = req;
	else
		ep->dma_pending_head = req;
	ep->dma_pending_tail = req;
	/* A send failure must not run callbacks (ours included) in here. */
	vfu_ep_guarded(ep, vfu_dma_msg_kick);
	return 0;
}

int vfu_endpoint_dma_read(struct vfu_endpoint *ep, uint64_t iova, void *dst, uint64_t len,
			  vfu_dma_done_fn cb, void *arg)
{
	return vfu_dma_msg_submit(ep, false, iova, dst, len, cb, arg);
}

int vfu_endpoint_dma_write(struct vfu_endpoint *ep, uint64_t iova, const void *src, uint64_t len,
			   vfu_dma_done_fn cb, void *arg)
{
	return vfu_dma_msg_submit(ep, true, iova, (void *)src, len, cb, arg);
}

/* Sends the next chunk of the head request. 0 or -errno. */
static int vfu_dma_msg_send_chunk(struct vfu_endpoint *ep)
{
	struct vfu_dma_req *req = ep->dma_pending_head;
	uint64_t max = ep->client_max_xfer < VFU_MAX_DATA_XFER_SIZE ? ep->client_max_xfer
								    : VFU_MAX_DATA_XFER_SIZE;
	uint64_t left = req->len - req->next_off;
	uint64_t count = left < max ? left : max;
	size_t plen = sizeof(struct vfio_user_dma_rw) + (req->is_write ? (size_t)count : 0);
	struct vfio_user_dma_rw rw = {.addr = req->iova + req->next_off, .count = count};
	struct vfio_user_header h = {
	    .msg_id = ep->next_msg_id++,
	    .command = req->is_write ? VFIO_USER_DMA_WRITE : VFIO_USER_DMA_READ,
	    .msg_size = (uint32_t)(sizeof(h) + plen),
	    .flags = VFIO_USER_F_TYPE_COMMAND,
	};
	struct vfu_dma_chunk *c = calloc(1, sizeof(*c));
	uint8_t *payload = malloc(plen);
	int rc = -ENOMEM;

	if (!c || !payload)
		goto out_free;
	memcpy(payload, &rw, sizeof(rw));
	if (req->is_write)
		memcpy(payload + sizeof(rw), req->buf + req->next_off, (size_t)count);
	c->req = req;
	c->msg_id = h.msg_id;
	c->off = req->next_off;
	c->count = count;
	rc = vfu_ep_send(ep, &h, payload, plen, -1);
	if (rc)
		goto out_free;
	free(payload);
	c->next = ep->dma_inflight;
	ep->dma_inflight = c;
	req->chunks_out++;
	req->next_off += count;
	if (req->next_off == req->len) {
		ep->dma_pending_head = req->next;
		if (!ep->dma_pending_head)
			ep->dma_pending_tail = NULL;
		req->next = ep->dma_active;
		ep->dma_active = req;
	}
	return 0;

out_free:
	free(payload);
	free(c);
	return rc;
}

void vfu_dma_msg_kick(struct vfu_endpoint *ep)
{
	/* VFIO-USER.md 5: QEMU serves our request on its main loop under the
	 * BQL, which a vCPU waiting for our reply holds; so nothing goes out while
	 * a client request is in a handler or held for an async completion. */
	if (ep->dma_kicking || ep->in_handler || ep->held != VFU_HELD_NONE || ep->conn_fd < 0 ||
	    ep->dead || !ep->negotiated)
		return;
	ep->dma_kicking = true;
	while (ep->dma_pending_head && ep->tx_bytes < VFU_TX_HIGH_WATER && !ep->dead &&
	       ep->conn_fd >= 0) {
		if (vfu_dma_msg_send_chunk(ep))
			break;
	}
	ep->dma_kicking = false;
}

bool vfu_dma_msg_reply(struct vfu_endpoint *ep)
{
	const struct vfio_user_header *h = &ep->rx_hdr;
	size_t len = h->msg_size - sizeof(*h);
	struct vfu_dma_chunk **pp, *c = NULL;
	struct vfu_dma_req *req;
	struct vfio_user_dma_rw rw;
	int status = 0;

	for (pp = &ep->dma_inflight; *pp; pp = &(*pp)->next) {
		if ((*pp)->msg_id == h->msg_id) {
			c = *pp;
			break;
		}
	}
	if (!c || h->command != (c->req->is_write ? VFIO_USER_DMA_WRITE : VFIO_USER_DMA_READ))
		return false;
	*pp = c->next;
	req = c->req;
	if (h->flags & VFIO_USER_F_ERROR) {
		status = h->error_no && h->error_no < 4096 ? -(int)h->error_no : -EIO;
	} else if (!req->is_write) {
		/* DMA_READ reply: addr and count echoed, then exactly count bytes. */
		if (len != sizeof(rw) + c->count) {
			status = -EPROTO;
		} else {
			memcpy(&rw, ep->rx_body, sizeof(rw));
			if (rw.addr != req->iova + c->off || rw.count != c->count)
				status = -EPROTO;
			else
				memcpy(req->buf + c->off, ep->rx_body + sizeof(rw),
				       (size_t)c->count);
		}
	}
	if (status) {
		LOG_GUEST_ERR(VFU_COMP, "%s: DMA_%s [%#llx +%#llx] failed: %s", ep->path,
			      req->is_write ? "WRITE" : "READ",
			      (unsigned long long)(req->iova + c->off),
			      (unsigned long long)c->count, strerror(-status));
		if (!req->status)
			req->status = status;
	}
	free(c);
	req->chunks_out--;
	if (!req->chunks_out && req->next_off == req->len)
		vfu_dma_msg_complete(ep, req);
	return true;
}

void vfu_dma_msg_fail_all(struct vfu_endpoint *ep, int status)
{
	while (ep->dma_inflight) {
		struct vfu_dma_chunk *c = ep->dma_inflight;

		ep->dma_inflight = c->next;
		free(c);
	}
	/* Called with the connection gone: a callback that submits again fails. */
	while (ep->dma_pending_head || ep->dma_active) {
		struct vfu_dma_req *req = ep->dma_pending_head;

		if (req) {
			ep->dma_pending_head = req->next;
			if (!ep->dma_pending_head)
				ep->dma_pending_tail = NULL;
		} else {
			req = ep->dma_active;
			ep->dma_active = req->next;
		}
		ep->dma_reqs--;
		if (req->cb)
			req->cb(status, req->cb_arg);
		free(req);
	}
}
