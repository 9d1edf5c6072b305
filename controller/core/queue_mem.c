/* controller/core/queue_mem.c - what a queue holds across commands: its pinned ring, the pinned
 * shadow doorbell pages, its pool of requests (taken at fetch, returned after the CQE), and the
 * fences and visits over them: a visit runs a function over every queue on its owner thread; a
 * fence waits for the requests that started before it to finish with their data. The lowest
 * floor of the queues: it calls nothing above it (a visit's end is a callback). Thread of each
 * function in its comment. */
#include <errno.h>
#include <stdlib.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/core/core.h"

/* ---- Visits ---- */

_Static_assert(CTRLR_VISIT_SLOTS == CTRLR_VISIT_SLOTS_MAX, "transport's visit slot count");

unsigned int ctrlr_visit_slot(const struct ctrlr_visit *v)
{
	return v->slot;
}

bool ctrlr_visit_running(const struct ctrlr *ctrlr, enum ctrlr_visit_slot slot)
{
	return ctrlr->visits[slot].done != NULL;
}

static void ctrlr_visit_done_msg(void *arg)
{
	struct ctrlr_visit *v = arg;
	void (*done)(struct ctrlr * ctrlr) = v->done;

	struct ctrlr *ctrlr = v->ctrlr;

	v->done = NULL; /* the slot is free again, also for `done` itself */
	done(ctrlr);
	/* A reset waits for visits to end before it frees what they point at: it left its
	 * continuation (regs.c). */
	if (ctrlr->visits_waiter)
		ctrlr->visits_waiter(ctrlr);
}

void ctrlr_visit_hold(struct ctrlr_visit *v)
{
	__atomic_add_fetch(&v->pending, 1, __ATOMIC_RELAXED);
}

void ctrlr_visit_release(struct ctrlr_visit *v)
{
	struct ctrlr *ctrlr = v->ctrlr;

	if (__atomic_sub_fetch(&v->pending, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* The last part may end on any thread; the flow goes on on the admin thread. */
	ctrlr->ops->admin_post(ctrlr->tctx, &v->done_msg, ctrlr_visit_done_msg, v);
}

void ctrlr_visit_cq(struct ctrlr_visit *v, struct ctrlr_cq *cq)
{
	if (v->cq_fn)
		v->cq_fn(cq, v);
}

void ctrlr_visit_sq(struct ctrlr_visit *v, struct ctrlr_sq *sq)
{
	if (v->sq_fn)
		v->sq_fn(sq, v);
}

void ctrlr_visit_start(struct ctrlr *ctrlr, enum ctrlr_visit_slot slot,
		       void (*cq_fn)(struct ctrlr_cq *, struct ctrlr_visit *),
		       void (*sq_fn)(struct ctrlr_sq *, struct ctrlr_visit *),
		       void (*done)(struct ctrlr *))
{
	struct ctrlr_visit *v = &ctrlr->visits[slot];

	*v = (struct ctrlr_visit){
	    .ctrlr = ctrlr,
	    .slot = slot,
	    .pending = 1,
	    .cq_fn = cq_fn,
	    .sq_fn = sq_fn,
	    .done = done,
	};
	ctrlr->ops->visit_queues(ctrlr->tctx, v);
	/* Our own hold: the visit cannot end before every part was started. */
	ctrlr_visit_release(v);
}

/* ---- Rings ---- */

int ctrlr_sq_ring_attach(struct ctrlr_sq *sq)
{
	struct ctrlr *ctrlr = sq->ctrlr;
	void *ring = ctrlr->ops->mem_pin(ctrlr->tctx, sq->dma_addr,
					 (uint64_t)sq->size * sizeof(struct nvme_sqe),
					 CTRLR_DMA_READ, &sq->ring_pin);

	if (!ring)
		return -EFAULT;
	sq->ring = ring;
	return 0;
}

int ctrlr_cq_ring_attach(struct ctrlr_cq *cq)
{
	struct ctrlr *ctrlr = cq->ctrlr;
	void *ring = ctrlr->ops->mem_pin(ctrlr->tctx, cq->dma_addr,
					 (uint64_t)cq->size * sizeof(struct nvme_cqe),
					 CTRLR_DMA_WRITE, &cq->ring_pin);

	if (!ring)
		return -EFAULT;
	cq->ring = ring;
	return 0;
}

void ctrlr_sq_ring_detach(struct ctrlr_sq *sq)
{
	sq->ring = NULL;
	sq->ctrlr->ops->mem_unpin(sq->ctrlr->tctx, sq->ring_pin);
	sq->ring_pin = NULL;
}

void ctrlr_cq_ring_detach(struct ctrlr_cq *cq)
{
	cq->ring = NULL;
	cq->ctrlr->ops->mem_unpin(cq->ctrlr->tctx, cq->ring_pin);
	cq->ring_pin = NULL;
}

void ctrlr_dbbuf_release(struct ctrlr *ctrlr)
{
	bool was = ctrlr->dbbuf_shadow_pin != NULL;

	ctrlr->dbbuf_shadow_ptr = NULL;
	ctrlr->dbbuf_eventidx_ptr = NULL;
	ctrlr->ops->mem_unpin(ctrlr->tctx, ctrlr->dbbuf_shadow_pin);
	ctrlr->ops->mem_unpin(ctrlr->tctx, ctrlr->dbbuf_eventidx_pin);
	ctrlr->dbbuf_shadow_pin = ctrlr->dbbuf_eventidx_pin = NULL;
	ctrlr->dbbuf_bytes = 0;
	ctrlr->dbbuf_shadow = ctrlr->dbbuf_eventidx = 0;
	if (was && ctrlr->ops->dbbuf_changed)
		ctrlr->ops->dbbuf_changed(ctrlr->tctx, false);
}

/* ---- Fences ---- */

/* Owner thread: the request no longer touches its data. */
void ctrlr_req_data_done(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;

	if (req->state != CTRLR_REQ_EXEC)
		return;
	req->state = CTRLR_REQ_PARKED;
	if (--sq->epoch_users[req->epoch] == 0 && sq->fence && req->epoch != sq->epoch) {
		struct ctrlr_visit *v = sq->fence;

		sq->fence = NULL;
		ctrlr_visit_release(v);
	}
}

/* Owner thread: the visit ends only once every request that started before now is done with its
 * data. One fence at a time per SQ (unmaps are serialised per controller). */
void ctrlr_sq_fence(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	uint8_t old = sq->epoch;

	sq->epoch ^= 1;
	if (!sq->epoch_users[old])
		return;
	ctrlr_visit_hold(v);
	sq->fence = v;
}

/* ---- The request pool ---- */

struct ctrlr_req *ctrlr_req_get(struct ctrlr_sq *sq)
{
	struct ctrlr_req *req = sq->free_list;

	if (!req)
		return NULL;
	sq->free_list = req->next;
	sq->inflight++;
	sq->cq->inflight++;
	req->cq_open = true;
	req->next = NULL;
	req->state = CTRLR_REQ_EXEC;
	req->epoch = sq->epoch;
	sq->epoch_users[req->epoch]++;
	/* Owner-thread counts, not a reference on the namespace: see ctrlr.c, grace periods. */
	req->ns_epoch = sq->ns_epoch;
	sq->ns_users[req->ns_epoch]++;
	req->cdw0 = 0;
	req->cdw1 = 0;
	req->t_start_ns = evloop_clock_ns();
	req->status = 0;
	req->error_loc = 0xffff;
	req->error_lba = 0;
	req->ns = NULL;
	req->lbaf = NULL;
	req->iovcnt = 0;
	req->data_len = 0;
	req->io_done = NULL;
	req->step.buf = NULL;
	req->fused = NULL;
	req->end_fn = NULL;
	req->caw_state = 0;
	req->hold.active = false;
	req->hold.durable = false;
	return req;
}

void ctrlr_req_ns_end(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;
	uint8_t ep = req->ns_epoch;

	if (ep == CTRLR_NS_EPOCH_NONE)
		return;
	req->ns_epoch = CTRLR_NS_EPOCH_NONE;
	if (--sq->ns_users[ep] == 0 && sq->ns_fence && ep != sq->ns_epoch) {
		struct ctrlr_visit *v = sq->ns_fence;

		sq->ns_fence = NULL;
		ctrlr_visit_release(v);
	}
}

void ctrlr_req_free(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;

	ctrlr_req_data_done(req);
	ctrlr_req_ns_end(req);
	ctrlr_cq_req_close(sq->cq, req);
	req->state = CTRLR_REQ_FREE;
	req->next = sq->free_list;
	sq->free_list = req;
	if (--sq->inflight == 0 && sq->stop_done) {
		void (*done)(void *arg) = sq->stop_done;

		sq->stop_done = NULL;
		done(sq->stop_arg);
	}
}
