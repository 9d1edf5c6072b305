/* controller/queue_mem.c - the guest memory queues keep across commands (pinned SQ/CQ rings,
 * pinned shadow doorbell pages) and what happens when the guest takes memory away: visits of every
 * queue on its owner thread, ring detach and re-attach, fences on in-flight requests, the unmap
 * flow. Thread of each function in its comment. */
#include <errno.h>
#include <stdlib.h>

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
	/* A reset waits for visits to end before it frees what they point at. */
	if (CTRLR_LOAD(ctrlr->state) == CTRLR_ST_RESETTING)
		ctrlr_reset_continue(ctrlr);
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

/* Whether a queue's ring [addr, addr + bytes) shares a byte with [iova, iova + len). A ring lies
 * wholly in one DMA window, so this is "the ring's window goes". */
static bool ctrlr_range_overlaps(uint64_t addr, uint64_t bytes, uint64_t iova, uint64_t len)
{
	return bytes && len && addr <= iova + (len - 1) && iova <= addr + (bytes - 1);
}

static bool ctrlr_sq_ring_in(const struct ctrlr_sq *sq, uint64_t iova, uint64_t len)
{
	return ctrlr_range_overlaps(sq->dma_addr, (uint64_t)sq->size * sizeof(struct nvme_sqe),
				    iova, len);
}

static bool ctrlr_cq_ring_in(const struct ctrlr_cq *cq, uint64_t iova, uint64_t len)
{
	return ctrlr_range_overlaps(cq->dma_addr, (uint64_t)cq->size * sizeof(struct nvme_cqe),
				    iova, len);
}

static bool ctrlr_dbbuf_in(const struct ctrlr *ctrlr, uint64_t iova, uint64_t len)
{
	return ctrlr->dbbuf_shadow_pin &&
	       (ctrlr_range_overlaps(ctrlr->dbbuf_shadow, ctrlr->dbbuf_bytes, iova, len) ||
		ctrlr_range_overlaps(ctrlr->dbbuf_eventidx, ctrlr->dbbuf_bytes, iova, len));
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
static void ctrlr_sq_fence(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	uint8_t old = sq->epoch;

	sq->epoch ^= 1;
	if (!sq->epoch_users[old])
		return;
	ctrlr_visit_hold(v);
	sq->fence = v;
}

/* ---- Unmap ---- */

/* Owner thread: the CQ's ring or its shadow slots may be in the range going away. */
static void ctrlr_unmap_cq(struct ctrlr_cq *cq, struct ctrlr_visit *v)
{
	struct ctrlr *ctrlr = cq->ctrlr;

	if (ctrlr->unmap.dbbuf) {
		cq->shadow_head = NULL;
		cq->head_eventidx = NULL;
	}
	if (cq->ring && ctrlr_cq_ring_in(cq, ctrlr->unmap.iova, ctrlr->unmap.len)) {
		if (ctrlr->unmap.master_off)
			LOG_INFO(CTRLR_LOG, "CQ %u: bus mastering off; detached until it is on", cq->qid);
		else
			LOG_GUEST_ERR(CTRLR_LOG, "CQ %u: its ring was unmapped; detached until it is back",
				      cq->qid);
		ctrlr_cq_ring_detach(cq);
	}
}

static void ctrlr_unmap_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	struct ctrlr *ctrlr = sq->ctrlr;

	if (ctrlr->unmap.dbbuf) {
		CTRLR_STORE(sq->shadow_db, NULL);
		sq->eventidx = NULL;
	}
	if (sq->ring && ctrlr_sq_ring_in(sq, ctrlr->unmap.iova, ctrlr->unmap.len)) {
		if (ctrlr->unmap.master_off)
			LOG_INFO(CTRLR_LOG, "SQ %u: bus mastering off; detached until it is on", sq->qid);
		else
			LOG_GUEST_ERR(CTRLR_LOG, "SQ %u: its ring was unmapped; detached until it is back",
				      sq->qid);
		ctrlr_sq_ring_detach(sq);
	}
	ctrlr_sq_fence(sq, v);
}

static void ctrlr_mem_unmap_finish(struct ctrlr *ctrlr)
{
	void (*done)(void *arg) = ctrlr->unmap.done;

	ctrlr->unmap.active = false;
	ctrlr->unmap.done = NULL;
	done(ctrlr->unmap.arg);
}

/* Admin thread, every owner thread done: the controller-wide part. */
static void ctrlr_mem_unmap_owners_done(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	struct ctrlr_cq *acq = ctrlr->cqs[0];
	uint64_t iova = ctrlr->unmap.iova, len = ctrlr->unmap.len;
	struct ctrlr_visit *v = &ctrlr->admin_fence;

	/* No queue holds a shadow slot any more: the pages can go. */
	if (ctrlr->unmap.dbbuf)
		ctrlr_dbbuf_release(ctrlr);
	if (acq && acq->ring && ctrlr_cq_ring_in(acq, iova, len)) {
		if (!ctrlr->unmap.master_off)
			LOG_GUEST_ERR(CTRLR_LOG, "admin CQ ring unmapped; detached until it is back");
		ctrlr_cq_ring_detach(acq);
	}
	if (asq && asq->ring && ctrlr_sq_ring_in(asq, iova, len)) {
		if (!ctrlr->unmap.master_off)
			LOG_GUEST_ERR(CTRLR_LOG, "admin SQ ring unmapped; detached until it is back");
		ctrlr_sq_ring_detach(asq);
	}
	/* Admin commands in flight (Format NVM on a bdev, vendor reads) finish with their data too:
	 * a one-queue visit, run here. */
	*v = (struct ctrlr_visit){.ctrlr = ctrlr, .pending = 1, .done = ctrlr_mem_unmap_finish};
	if (asq)
		ctrlr_sq_fence(asq, v);
	ctrlr_visit_release(v);
}

static void ctrlr_mem_unmap_start(struct ctrlr *ctrlr, uint64_t iova, uint64_t len,
				  bool master_off, void (*done)(void *arg), void *arg)
{
	if (ctrlr->unmap.active) {
		/* The endpoint serialises a client's unmaps: a second one is a bug above us, and
		 * finishing it early could unmap memory in use. Refuse loudly; it never ends. */
		LOG_ERR(CTRLR_LOG, "unmap of 0x%llx+0x%llx while another one runs: ignored",
			(unsigned long long)iova, (unsigned long long)len);
		return;
	}
	ctrlr->unmap.active = true;
	ctrlr->unmap.master_off = master_off;
	ctrlr->unmap.iova = iova;
	ctrlr->unmap.len = len;
	ctrlr->unmap.done = done;
	ctrlr->unmap.arg = arg;
	/* Queues going live from now on take no shadow slot from pages about to go. */
	ctrlr->unmap.dbbuf = ctrlr_dbbuf_in(ctrlr, iova, len);
	if (ctrlr->unmap.dbbuf)
		ctrlr->dbbuf_live = false;
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_UNMAP, ctrlr_unmap_cq, ctrlr_unmap_sq,
			  ctrlr_mem_unmap_owners_done);
}

void ctrlr_mem_unmap(struct ctrlr *ctrlr, uint64_t iova, uint64_t len, void (*done)(void *arg),
		     void *arg)
{
	ctrlr_mem_unmap_start(ctrlr, iova, len, false, done, arg);
}

void ctrlr_dma_stop(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	ctrlr_mem_unmap_start(ctrlr, 0, UINT64_MAX, true, done, arg);
}

/* ---- Re-attach after a remap ---- */

static void ctrlr_remap_cq(struct ctrlr_cq *cq, struct ctrlr_visit *v)
{
	if (cq->ring || CTRLR_LOAD(cq->state) != CTRLR_Q_LIVE || ctrlr_cq_ring_attach(cq))
		return;
	LOG_INFO(CTRLR_LOG, "CQ %u: ring mapped again, attached", cq->qid);
	ctrlr_cq_batch_begin(cq);
	ctrlr_cq_drain_held(cq);
	ctrlr_cq_batch_end(cq);
}

static void ctrlr_remap_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	if (sq->ring || CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || ctrlr_sq_ring_attach(sq))
		return;
	LOG_INFO(CTRLR_LOG, "SQ %u: ring mapped again, attached", sq->qid);
}

static void ctrlr_remap_done(struct ctrlr *ctrlr)
{
	if (ctrlr->remap_again) {
		ctrlr->remap_again = false;
		ctrlr_mem_mapped(ctrlr);
	}
}

void ctrlr_mem_mapped(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	struct ctrlr_cq *acq = ctrlr->cqs[0];

	if (acq && !acq->ring && !ctrlr_cq_ring_attach(acq))
		ctrlr_cq_drain_held(acq);
	if (asq && !asq->ring && !ctrlr_sq_ring_attach(asq))
		while (ctrlr_sq_poll(asq, 64) > 0)
			;
	if (ctrlr_visit_running(ctrlr, CTRLR_VISIT_REMAP)) {
		ctrlr->remap_again = true;
		return;
	}
	/* The owner threads poll their SQs again after the visit (the transport's kick). */
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_REMAP, ctrlr_remap_cq, ctrlr_remap_sq,
			  ctrlr_remap_done);
}
