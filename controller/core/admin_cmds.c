/* controller/core/admin_cmds.c - the admin commands every NVMe controller has whatever its
 * command sets, as the core's own module (CTRLR_MOD_CORE in controller/modules.c): the queue
 * management commands, Create/Delete I/O SQ/CQ (NVMe Base 2.0 5.4-5.7, with the transport's
 * asynchronous queue ops) and Doorbell Buffer Config (the shadow doorbell pages, taken by every
 * queue on its owner thread), here; Abort (abort.c), Asynchronous Event Request (aer.c) and Keep
 * Alive (keep_alive.c) in the table at the end. Admin thread. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

/* The queue limit the host negotiated with Number of Queues, or the configured one. */
static uint32_t ctrlr_max_qid(const struct ctrlr *ctrlr, bool cq)
{
	if (!ctrlr->feat.num_queues_set)
		return ctrlr->res_io_queues;
	return (cq ? (ctrlr->feat.num_queues >> 16) : (ctrlr->feat.num_queues & 0xffff)) + 1;
}

/* ---- Create / Delete I/O CQ ---- */

void ctrlr_admin_create_cq(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	const struct nvme_sqe *sqe = &req->sqe;
	uint16_t qid = sqe->cdw10 & 0xffff;
	uint32_t qsize = (sqe->cdw10 >> 16) + 1;
	uint16_t iv = sqe->cdw11 >> 16;
	bool ien = sqe->cdw11 & NVME_CQ_IEN;
	uint64_t addr = sqe->dptr.prp.prp1;
	struct ctrlr_cq *cq;
	int rc;

	if (qid == 0 || qid > ctrlr_max_qid(ctrlr, true) || ctrlr->cqs[qid])
		return ctrlr_req_complete_err(req, NVME_SC_QID_INVALID,
					      offsetof(struct nvme_sqe, cdw10));
	if (qsize < 2 || qsize > ctrlr->cap.bits.mqes + 1u)
		return ctrlr_req_complete_err(req, NVME_SC_QUEUE_SIZE,
					      offsetof(struct nvme_sqe, cdw10) + 2);
	if (!(sqe->cdw11 & NVME_QUEUE_PC))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw11));
	if (iv >= ctrlr->res_vectors)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_VECTOR,
					      offsetof(struct nvme_sqe, cdw11) + 2);
	if (!addr || (addr & (ctrlr->page_size - 1)))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	ctrlr_cq_init(ctrlr, cq, qid, addr, qsize, iv, ien);
	/* The ring is translated once, here, and pinned for the queue's life: it must be one
	 * piece of guest memory the controller may write. */
	if (ctrlr_cq_ring_attach(cq)) {
		free(cq);
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	}
	cq->create_req = req;
	ctrlr->cqs[qid] = cq;
	ctrlr->queue_ops_pending++;
	/* A refusal ends like an asynchronous failure. */
	rc = ctrlr->ops->create_cq(ctrlr->tctx, cq);
	if (rc)
		ctrlr_cq_create_done(cq, rc);
}

void ctrlr_cq_create_done(struct ctrlr_cq *cq, int status)
{
	struct ctrlr *ctrlr = cq->ctrlr;
	struct ctrlr_req *req = cq->create_req;

	cq->create_req = NULL;
	ctrlr->queue_ops_pending--;
	if (status) {
		ctrlr->cqs[cq->qid] = NULL;
		ctrlr_cq_fini(cq);
		free(cq);
		ctrlr_req_complete(req, NVME_SC_INTERNAL);
	} else {
		/* Before it goes live: its owner reads the slots only after seeing LIVE. */
		ctrlr_cq_dbbuf_attach(cq);
		CTRLR_STORE(cq->state, CTRLR_Q_LIVE);
		CTRLR_STAT_ADD(ctrlr->io_cqs, 1);
		ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
	ctrlr_reset_continue(ctrlr);
}

void ctrlr_admin_delete_cq(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint16_t qid = req->sqe.cdw10 & 0xffff;
	struct ctrlr_cq *cq = qid && qid < ctrlr->num_queues ? ctrlr->cqs[qid] : NULL;

	if (!cq || cq->state != CTRLR_Q_LIVE)
		return ctrlr_req_complete_err(req, NVME_SC_QID_INVALID,
					      offsetof(struct nvme_sqe, cdw10));
	if (cq->sq_refs)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_QUEUE_DELETION,
					      offsetof(struct nvme_sqe, cdw10));
	cq->state = CTRLR_Q_DELETING;
	cq->create_req = req;
	ctrlr->queue_ops_pending++;
	if (ctrlr->ops->delete_cq(ctrlr->tctx, cq)) {
		ctrlr->queue_ops_pending--;
		cq->state = CTRLR_Q_LIVE;
		cq->create_req = NULL;
		ctrlr_req_complete(req, NVME_SC_INTERNAL);
	}
}

void ctrlr_cq_delete_done(struct ctrlr_cq *cq)
{
	struct ctrlr *ctrlr = cq->ctrlr;
	struct ctrlr_req *req = cq->create_req;
	struct ctrlr_req *held;

	ctrlr->queue_ops_pending--;
	ctrlr->cqs[cq->qid] = NULL;
	CTRLR_STAT_ADD(ctrlr->io_cqs, -1);
	/* No SQ is bound any more, so nothing can be held here; free defensively anyway. */
	while ((held = cq->held_head)) {
		cq->held_head = held->next;
		ctrlr_req_free(held);
	}
	ctrlr_cq_fini(cq);
	free(cq);
	if (req)
		ctrlr_req_complete(req, NVME_SC_SUCCESS);
	ctrlr_reset_continue(ctrlr);
}

/* ---- Create / Delete I/O SQ ---- */

void ctrlr_admin_create_sq(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	const struct nvme_sqe *sqe = &req->sqe;
	uint16_t qid = sqe->cdw10 & 0xffff;
	uint32_t qsize = (sqe->cdw10 >> 16) + 1;
	uint16_t cqid = sqe->cdw11 >> 16;
	uint64_t addr = sqe->dptr.prp.prp1;
	struct ctrlr_cq *cq;
	struct ctrlr_sq *sq;
	int rc;

	if (qid == 0 || qid > ctrlr_max_qid(ctrlr, false) || ctrlr->sqs[qid])
		return ctrlr_req_complete_err(req, NVME_SC_QID_INVALID,
					      offsetof(struct nvme_sqe, cdw10));
	/* CQID 0h (the Admin CQ) or one past the CQs allocated names no I/O CQ at all: Invalid
	 * Queue Identifier (Base 2.x, Create I/O SQ, CQID); an identifier in range with no queue
	 * behind it, Completion Queue Invalid. SPDK's nvme_compliance checks both. */
	if (cqid == 0 || cqid > ctrlr_max_qid(ctrlr, true))
		return ctrlr_req_complete_err(req, NVME_SC_QID_INVALID,
					      offsetof(struct nvme_sqe, cdw11) + 2);
	cq = cqid < ctrlr->num_queues ? ctrlr->cqs[cqid] : NULL;
	if (!cq || cq->state != CTRLR_Q_LIVE)
		return ctrlr_req_complete_err(req, NVME_SC_CQ_INVALID,
					      offsetof(struct nvme_sqe, cdw11) + 2);
	if (qsize < 2 || qsize > ctrlr->cap.bits.mqes + 1u)
		return ctrlr_req_complete_err(req, NVME_SC_QUEUE_SIZE,
					      offsetof(struct nvme_sqe, cdw10) + 2);
	if (!(sqe->cdw11 & NVME_QUEUE_PC))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw11));
	if (!addr || (addr & (ctrlr->page_size - 1)))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	sq = calloc(1, sizeof(*sq));
	if (!sq)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	if (ctrlr_sq_init(ctrlr, sq, qid, cq, addr, qsize, (sqe->cdw11 >> 1) & 3)) {
		free(sq);
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	}
	/* Translated once and pinned, as the CQ's ring. */
	if (ctrlr_sq_ring_attach(sq)) {
		ctrlr_sq_fini(sq);
		free(sq);
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	}
	sq->create_req = req;
	ctrlr->sqs[qid] = sq;
	cq->sq_refs++;
	ctrlr->queue_ops_pending++;
	rc = ctrlr->ops->create_sq(ctrlr->tctx, sq);
	if (rc)
		ctrlr_sq_create_done(sq, rc);
}

void ctrlr_sq_create_done(struct ctrlr_sq *sq, int status)
{
	struct ctrlr *ctrlr = sq->ctrlr;
	struct ctrlr_req *req = sq->create_req;

	sq->create_req = NULL;
	ctrlr->queue_ops_pending--;
	if (status) {
		ctrlr->sqs[sq->qid] = NULL;
		sq->cq->sq_refs--;
		ctrlr_sq_fini(sq);
		free(sq);
		ctrlr_req_complete(req, NVME_SC_INTERNAL);
	} else {
		ctrlr_sq_dbbuf_attach(sq);
		CTRLR_STORE(sq->state, CTRLR_Q_LIVE);
		CTRLR_STAT_ADD(ctrlr->io_sqs, 1);
		ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
	ctrlr_reset_continue(ctrlr);
}

void ctrlr_admin_delete_sq(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint16_t qid = req->sqe.cdw10 & 0xffff;
	struct ctrlr_sq *sq = qid && qid < ctrlr->num_queues ? ctrlr->sqs[qid] : NULL;

	if (!sq || sq->state == CTRLR_Q_CREATING || sq->state == CTRLR_Q_DELETING)
		return ctrlr_req_complete_err(req, NVME_SC_QID_INVALID,
					      offsetof(struct nvme_sqe, cdw10));
	CTRLR_STORE(sq->state, CTRLR_Q_DELETING);
	sq->create_req = req;
	ctrlr->queue_ops_pending++;
	if (ctrlr->ops->delete_sq(ctrlr->tctx, sq)) {
		ctrlr->queue_ops_pending--;
		sq->create_req = NULL;
		CTRLR_STORE(sq->state, CTRLR_Q_LIVE);
		ctrlr_req_complete(req, NVME_SC_INTERNAL);
	}
}

void ctrlr_sq_delete_done(struct ctrlr_sq *sq)
{
	struct ctrlr *ctrlr = sq->ctrlr;
	struct ctrlr_req *req = sq->create_req;

	ctrlr->queue_ops_pending--;
	ctrlr->sqs[sq->qid] = NULL;
	sq->cq->sq_refs--;
	CTRLR_STAT_ADD(ctrlr->io_sqs, -1);
	ctrlr_abort_sq_gone(sq);
	ctrlr_sq_fini(sq);
	free(sq);
	if (req)
		ctrlr_req_complete(req, NVME_SC_SUCCESS);
	ctrlr_reset_continue(ctrlr);
}

/* ---- Doorbell Buffer Config ---- */

static void ctrlr_dbbuf_attach_cq(struct ctrlr_cq *cq, struct ctrlr_visit *v)
{
	if (CTRLR_LOAD(cq->state) == CTRLR_Q_LIVE)
		ctrlr_cq_dbbuf_attach(cq);
}

static void ctrlr_dbbuf_attach_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	if (CTRLR_LOAD(sq->state) == CTRLR_Q_LIVE)
		ctrlr_sq_dbbuf_attach(sq);
}

static void ctrlr_dbbuf_start(struct ctrlr_req *req);

/* Every live queue took its slots on its owner thread: the command is done. */
static void ctrlr_dbbuf_visited(struct ctrlr *ctrlr)
{
	struct ctrlr_req *req = ctrlr->dbbuf_req, *next = ctrlr->dbbuf_next;

	ctrlr->dbbuf_req = NULL;
	ctrlr->dbbuf_next = NULL;
	for (unsigned int i = 0; i < 2; i++) {
		ctrlr->ops->mem_unpin(ctrlr->tctx, ctrlr->dbbuf_old_pins[i]);
		ctrlr->dbbuf_old_pins[i] = NULL;
	}
	if (ctrlr->ops->dbbuf_changed)
		ctrlr->ops->dbbuf_changed(ctrlr->tctx, ctrlr->dbbuf_live);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
	if (next)
		ctrlr_dbbuf_start(next);
}

static void ctrlr_dbbuf_start(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint64_t shadow = req->sqe.dptr.prp.prp1, evt = req->sqe.dptr.prp.prp2;
	/* One dword per doorbell of every queue the controller allows (SQ tail, CQ head), page
	 * aligned (section 5.8); past 512 queue pairs that is more than a 4 KiB page, which hosts
	 * allocate physically contiguous (Linux sizes it by its queue count). */
	uint64_t bytes = (uint64_t)ctrlr->num_queues * 8;
	void *sp, *ep, *spin = NULL, *epin = NULL;

	if (!shadow || !evt || (shadow & (ctrlr->page_size - 1)) || (evt & (ctrlr->page_size - 1)))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	/* Pinned: queues read and write them on every submission, for as long as they last. */
	sp = ctrlr->ops->mem_pin(ctrlr->tctx, shadow, bytes, CTRLR_DMA_READ, &spin);
	ep = sp ? ctrlr->ops->mem_pin(ctrlr->tctx, evt, bytes, CTRLR_DMA_READ | CTRLR_DMA_WRITE,
				      &epin)
		: NULL;
	if (!sp || !ep) {
		ctrlr->ops->mem_unpin(ctrlr->tctx, spin);
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, dptr));
	}
	/* A second configuration replaces the first: queues move to the new pages in the visit;
	 * the old pages stay pinned until it ended (queues may hold slots in them till then). */
	ctrlr->dbbuf_old_pins[0] = ctrlr->dbbuf_shadow_pin;
	ctrlr->dbbuf_old_pins[1] = ctrlr->dbbuf_eventidx_pin;
	ctrlr->dbbuf_shadow = shadow;
	ctrlr->dbbuf_eventidx = evt;
	ctrlr->dbbuf_shadow_ptr = sp;
	ctrlr->dbbuf_eventidx_ptr = ep;
	ctrlr->dbbuf_shadow_pin = spin;
	ctrlr->dbbuf_eventidx_pin = epin;
	ctrlr->dbbuf_bytes = (uint32_t)bytes;
	ctrlr->dbbuf_live = true;
	ctrlr->dbbuf_req = req;
	/* The admin thread does not touch queues other threads own: each owner takes its slots. */
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_DBBUF, ctrlr_dbbuf_attach_cq, ctrlr_dbbuf_attach_sq,
			  ctrlr_dbbuf_visited);
}

void ctrlr_admin_dbbuf(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	if (ctrlr->dbbuf_req) {
		/* One at a time; a host sending them back to back gets them done in order. */
		if (ctrlr->dbbuf_next)
			return ctrlr_req_complete_err(req, NVME_SC_CMD_SEQ_ERROR, 0);
		ctrlr->dbbuf_next = req;
		return;
	}
	ctrlr_dbbuf_start(req);
}

/* ---- the core's module ---- */

/* Doorbell Buffer Config (OACS bit 8) is offered unless the configuration says not to. */
static bool ctrlr_dbbuf_supported(const struct ctrlr *ctrlr)
{
	return !ctrlr->cfg.no_dbbuf;
}

static const struct ctrlr_cmd ctrlr_core_admin_cmds[256] = {
    [NVME_ADM_DELETE_SQ] = {.exec = ctrlr_admin_delete_sq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_CREATE_SQ] = {.exec = ctrlr_admin_create_sq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_DELETE_CQ] = {.exec = ctrlr_admin_delete_cq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_CREATE_CQ] = {.exec = ctrlr_admin_create_cq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_ABORT] = {.exec = ctrlr_admin_abort, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_ASYNC_EVENT] = {.exec = ctrlr_aer_request, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_KEEP_ALIVE] = {.exec = ctrlr_admin_keep_alive, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_DBBUF] = {.exec = ctrlr_admin_dbbuf,
			.effects = NVME_CMD_EFFECTS_CSUPP,
			.supported = ctrlr_dbbuf_supported},
};

const struct ctrlr_module ctrlr_core_module = {
    .name = "core",
    .admin_cmds = ctrlr_core_admin_cmds,
};
