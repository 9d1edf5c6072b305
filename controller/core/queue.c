/* controller/core/queue.c - the submission side of the queues and the doorbells: SQ mirrors of
 * the host rings (their request pools, shadow doorbells with event index), SQE fetch and the
 * start of each command (req.c dispatches it), the SQ tail and CQ head doorbells as the transport
 * hands them in (a bad value is an asynchronous event), the admin queue's doorbells and those of
 * queues that do not exist, and each SQ's counters. Everything here runs on the queue's owner
 * thread but the counters' sum (ctrlr_counters_get: any thread) and an SQ's joining and leaving
 * the controller's list of them (ctrlr_sq_init, ctrlr_sq_fini). The completion side is cq.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/counter.h"
#include "common/log.h"
#include "controller/core/core.h"

#define CTRLR_COUNTERS_N (sizeof(struct ctrlr_counters) / sizeof(uint64_t))


void ctrlr_counters_get(const struct ctrlr *ctrlr, struct ctrlr_counters *out)
{
	counter_sum(&ctrlr->stat_sqs, (const uint64_t *)&ctrlr->cnt, (uint64_t *)out,
		    CTRLR_COUNTERS_N);
}

int ctrlr_sq_init(struct ctrlr *ctrlr, struct ctrlr_sq *sq, uint16_t qid, struct ctrlr_cq *cq,
		  uint64_t addr, uint32_t size, uint8_t qprio)
{
	size_t bio_size = sizeof(struct bdev_io) + CTRLR_BDEV_CTX_MAX;
	uint32_t max_iov = (1u << ctrlr->cfg.mdts) + 1;

	memset(sq, 0, sizeof(*sq));
	sq->ctrlr = ctrlr;
	sq->qid = qid;
	sq->cq = cq;
	sq->cqid = cq->qid;
	sq->dma_addr = addr;
	sq->size = size;
	sq->qprio = qprio;
	sq->max_iov = max_iov;
	sq->state = CTRLR_Q_CREATING;
	sq->reqs = calloc(size, sizeof(*sq->reqs));
	if (!sq->reqs)
		goto out_err;
	sq->bio_mem = aligned_alloc(16, (size_t)size * bio_size);
	if (!sq->bio_mem)
		goto out_free_reqs;
	memset(sq->bio_mem, 0, (size_t)size * bio_size);
	sq->iov_mem = calloc((size_t)size * max_iov, sizeof(struct iovec));
	if (!sq->iov_mem)
		goto out_free_bio;
	/* The pool: one request per SQ slot, so a full SQ never waits for memory. */
	for (uint32_t i = size; i-- > 0;) {
		struct ctrlr_req *req = &sq->reqs[i];

		req->sq = sq;
		req->bio = (struct bdev_io *)(sq->bio_mem + (size_t)i * bio_size);
		req->iov = &sq->iov_mem[(size_t)i * max_iov];
		req->next = sq->free_list;
		sq->free_list = req;
	}
	sq->iostat = ctrlr_iostat_queue(ctrlr, qid);
	if (!sq->iostat)
		goto out_free_iov;
	counter_block_join(&ctrlr->stat_sqs, &sq->stat_block, (const uint64_t *)&sq->cnt);
	return 0;

out_free_iov:
	free(sq->iov_mem);
out_free_bio:
	free(sq->bio_mem);
out_free_reqs:
	free(sq->reqs);
out_err:
	return -ENOMEM;
}

void ctrlr_sq_fini(struct ctrlr_sq *sq)
{
	/* Its counts stay the controller's: the SMART log counts deleted queues' commands. */
	counter_block_leave(&sq->stat_block, (uint64_t *)&sq->ctrlr->cnt, CTRLR_COUNTERS_N);
	if (sq->ring_pin)
		ctrlr_sq_ring_detach(sq);
	free(sq->iov_mem);
	free(sq->bio_mem);
	CTRLR_MODULES_CALL(sq->ctrlr, sq_fini, sq);
	free(sq->reqs);
	sq->reqs = NULL;
	sq->bio_mem = NULL;
	sq->iov_mem = NULL;
}

void ctrlr_sq_dbbuf_attach(struct ctrlr_sq *sq)
{
	struct ctrlr *ctrlr = sq->ctrlr;

	/* Linux uses shadow doorbells only for I/O queues; the admin queue always rings BAR0. */
	if (!ctrlr->dbbuf_live || !ctrlr_dbbuf_covers(ctrlr, sq->qid)) {
		CTRLR_STORE(sq->shadow_db, NULL);
		sq->eventidx = NULL;
		return;
	}
	sq->eventidx = &ctrlr->dbbuf_eventidx_ptr[nvme_db_index(sq->qid, false)];
	CTRLR_STORE(sq->shadow_db, &ctrlr->dbbuf_shadow_ptr[nvme_db_index(sq->qid, false)]);
	/* Ask for a doorbell on the next submission. */
	__atomic_store_n(sq->eventidx, sq->tail, __ATOMIC_RELEASE);
}

/* ---- doorbells ---- */

int ctrlr_cq_head_doorbell(struct ctrlr_cq *cq, uint32_t value)
{
	uint32_t used = (cq->tail + cq->size - cq->head) % cq->size;

	if (value >= cq->size || (value + cq->size - cq->head) % cq->size > used) {
		LOG_GUEST_ERR(CTRLR_LOG, "CQ %u head doorbell %u invalid (size %u head %u tail %u)",
			      cq->qid, value, cq->size, cq->head, cq->tail);
		ctrlr_aer_report_async(cq->ctrlr, NVME_AER_ERR_INVALID_DB_VALUE);
		return -EINVAL;
	}
	ctrlr_cq_head_moved(cq, value);
	return 0;
}

int ctrlr_sq_tail_doorbell(struct ctrlr_sq *sq, uint32_t value)
{
	if (value >= sq->size) {
		LOG_GUEST_ERR(CTRLR_LOG, "SQ %u tail doorbell %u beyond size %u", sq->qid, value,
			      sq->size);
		ctrlr_aer_report_async(sq->ctrlr, NVME_AER_ERR_INVALID_DB_VALUE);
		return -EINVAL;
	}
	sq->tail = value;
	return 0;
}

bool ctrlr_sq_has_work(struct ctrlr_sq *sq)
{
	if (CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || !sq->free_list || !sq->ring)
		return false;
	ctrlr_sq_refresh_tail(sq);
	return sq->head != sq->tail;
}

/* Arms the SQ tail event index at the last consumed tail, then re-reads the shadow tail after a
 * full barrier (pairs with the guest's barrier between its shadow store and its event index
 * read): a submission that raced with the arm is seen here instead of being lost. */
static bool ctrlr_sq_arm_tail_event(struct ctrlr_sq *sq)
{
	if (!CTRLR_LOAD(sq->shadow_db))
		return false;
	__atomic_store_n(sq->eventidx, sq->head, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ctrlr_sq_refresh_tail(sq);
	return sq->head != sq->tail;
}

int ctrlr_sq_poll(struct ctrlr_sq *sq, unsigned int budget)
{
	struct ctrlr *ctrlr = sq->ctrlr;
	struct ctrlr_cq *cq = sq->cq;
	unsigned int n = 0;

	/* A detached ring (its memory unmapped) fetches nothing until it is mapped again. */
	if (CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED ||
	    !sq->ring)
		return 0;
	ctrlr_cq_batch_begin(cq);
	ctrlr_sq_refresh_tail(sq);
	for (;;) {
		while (n < budget && sq->head != sq->tail &&
		       CTRLR_LOAD(sq->state) == CTRLR_Q_LIVE) {
			struct ctrlr_req *req;

			req = ctrlr_req_get(sq);
			if (!req)
				goto out;
			/* The tail was read before: the acquire fence pairs with the host's write
			 * barrier between filling the SQE and ringing the doorbell. */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			memcpy(&req->sqe, &sq->ring[sq->head], sizeof(req->sqe));
			sq->head = (sq->head + 1) % sq->size;
			n++;
			/* An Abort armed on this slot ends the command unexecuted (abort.c). */
			if ((sq->abort_armed || sq->preempt_left) &&
			    ctrlr_abort_fetched(req, (sq->head + sq->size - 1) % sq->size))
				continue;
			if (sq->qid == 0)
				ctrlr_admin_dispatch(req);
			else
				ctrlr_io_dispatch(req);
			/* A command may detach the ring (e.g. an admin command's side effects). */
			if (!sq->ring)
				goto out;
		}
		if (n >= budget || CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE ||
		    !ctrlr_sq_arm_tail_event(sq))
			break;
	}
out:
	ctrlr_cq_batch_end(cq);
	return (int)n;
}

void ctrlr_sq_stop(struct ctrlr_sq *sq, void (*done)(void *arg), void *arg)
{
	enum ctrlr_q_state live = CTRLR_Q_LIVE;

	/* A queue the admin thread is deleting stays DELETING; either state stops fetching. */
	__atomic_compare_exchange_n(&sq->state, &live, CTRLR_Q_STOPPED, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	ctrlr_cq_drop_held(sq->cq, sq);
	if (sq->inflight == 0) {
		done(arg);
		return;
	}
	sq->stop_done = done;
	sq->stop_arg = arg;
}

/* ---- accessors for the transport ---- */

uint16_t ctrlr_sq_get_qid(const struct ctrlr_sq *sq)
{
	return sq->qid;
}

struct ctrlr_cq *ctrlr_sq_get_cq(const struct ctrlr_sq *sq)
{
	return sq->cq;
}

uint32_t ctrlr_sq_get_size(const struct ctrlr_sq *sq)
{
	return sq->size;
}

struct ctrlr *ctrlr_sq_get_ctrlr(const struct ctrlr_sq *sq)
{
	return sq->ctrlr;
}

void ctrlr_sq_set_tctx(struct ctrlr_sq *sq, void *ctx)
{
	sq->tctx = ctx;
}

void *ctrlr_sq_get_tctx(const struct ctrlr_sq *sq)
{
	return sq->tctx;
}

/* ---- admin doorbells and invalid doorbells ---- */

void ctrlr_doorbell_write(struct ctrlr *ctrlr, uint32_t db_index, uint32_t value)
{
	uint32_t qid = nvme_db_qid(db_index);
	bool is_cq = nvme_db_is_cq(db_index);

	if (qid == 0 && ctrlr->state == CTRLR_ST_ENABLED && ctrlr->sqs[0]) {
		if (is_cq) {
			ctrlr_cq_head_doorbell(ctrlr->cqs[0], value);
		} else if (!ctrlr_sq_tail_doorbell(ctrlr->sqs[0], value)) {
			/* The admin queue is served at once, on this thread. */
			while (ctrlr_sq_poll(ctrlr->sqs[0], 64) > 0)
				;
		}
		return;
	}
	if (qid == 0)
		return; /* the controller is not ready: writes are ignored (3.1.4.18) */
	CTRLR_STAT_ADD(ctrlr->cnt.invalid_db_writes, 1);
	LOG_GUEST_ERR(CTRLR_LOG, "doorbell %u (%s %u) written for a queue that does not exist",
		      db_index, is_cq ? "CQ" : "SQ", qid);
	if (ctrlr->state == CTRLR_ST_ENABLED)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_ERROR, NVME_AER_ERR_INVALID_DB_REG,
				 NVME_LOG_ERROR);
}
