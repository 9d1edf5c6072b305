/* controller/admin_abort.c - Abort (NVMe Base 2.0 5.1) of any command still running: a waiting
 * Asynchronous Event Request ends at once; any other command found by its SQ and CID (e.g. one
 * waiting for a slow bdev) is marked, and completes with Command Abort Requested instead of its
 * own status. A bdev request cannot be taken back once submitted, so a marked command still
 * waits for its bdev I/O: when that returns, its result is dropped (a read's data already
 * reached the host buffer, which the host must not use; a write may have reached the media) and
 * the command ends with Command Abort Requested. The Abort itself completes at once, CDW0 bit 0
 * clear when the command was marked, set when no running command had that CID (already
 * completed, never submitted, or not yet fetched: commands are fetched and started together,
 * so an SQE still in the ring is one the controller has not seen yet). Marks and completions
 * race without locks: a command's tag (generation << 16 | CID) is compare-and-swapped by the
 * Abort (admin thread) and swapped out by the completion (owner thread), so exactly one of them
 * wins. */
#include "common/log.h"
#include "controller/ctrlr_internal.h"

#define CTRLR_ABORT_MARK 0x80000000u

void ctrlr_abort_arm(struct ctrlr_req *req)
{
	/* A new generation each time the slot is reused: a stale Abort cannot mark its successor. */
	req->abort_gen = (uint16_t)((req->abort_gen + 1) & 0x7fff);
	if (!req->abort_gen)
		req->abort_gen = 1;
	__atomic_store_n(&req->abort_tag,
			 (uint32_t)req->abort_gen << 16 | req->sqe.cdw0.bits.cid,
			 __ATOMIC_RELEASE);
}

bool ctrlr_abort_seal(struct ctrlr_req *req)
{
	return __atomic_exchange_n(&req->abort_tag, 0, __ATOMIC_ACQ_REL) & CTRLR_ABORT_MARK;
}

/* Marks the running command `cid` of `sq` (not `self`). True if marked. */
static bool ctrlr_abort_mark(struct ctrlr_sq *sq, uint16_t cid, const struct ctrlr_req *self)
{
	for (uint32_t i = 0; i < sq->size; i++) {
		struct ctrlr_req *r = &sq->reqs[i];
		uint32_t tag = __atomic_load_n(&r->abort_tag, __ATOMIC_ACQUIRE);

		if (r == self || !tag || (tag & CTRLR_ABORT_MARK) || (tag & 0xffff) != cid)
			continue;
		if (__atomic_compare_exchange_n(&r->abort_tag, &tag, tag | CTRLR_ABORT_MARK, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

void ctrlr_admin_abort(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint16_t sqid = req->sqe.cdw10 & 0xffff;
	uint16_t cid = req->sqe.cdw10 >> 16;
	struct ctrlr_sq *sq = sqid < ctrlr->num_queues ? ctrlr->sqs[sqid] : NULL;

	req->cdw0 = 1; /* not aborted */
	if (sqid == 0) {
		for (uint32_t i = 0; i < ctrlr->num_aer_reqs; i++) {
			if (ctrlr->aer_reqs[i]->sqe.cdw0.bits.cid == cid) {
				ctrlr_aer_abort(ctrlr->aer_reqs[i]);
				req->cdw0 = 0;
				return ctrlr_req_complete(req, NVME_SC_SUCCESS);
			}
		}
	}
	/* The SQ's request array lives as long as the SQ, which only this thread deletes. */
	if (sq && CTRLR_LOAD(sq->state) == CTRLR_Q_LIVE && sq->reqs &&
	    ctrlr_abort_mark(sq, cid, req)) {
		req->cdw0 = 0;
		LOG_DBG(CTRLR_LOG, "%s: abort of sq %u cid %u: marked", ctrlr->serial, sqid, cid);
	}
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}
