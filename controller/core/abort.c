/* controller/core/abort.c - Abort (NVMe Base 2.0 5.1) of any command not completed yet, and the
 * marks and fences of Reservation Acquire's Preempt and Abort (nvm/resv.c asks for them).
 *
 * Running commands: a waiting Asynchronous Event Request ends at once; any other command found
 * by its SQ and CID (e.g. one waiting for a slow bdev) is marked, and completes with Command
 * Abort Requested instead of its own status. A bdev request cannot be taken back once
 * submitted, so a marked command still waits for its bdev I/O: when that returns, its result
 * is dropped (a read's data already reached the host buffer, which the host must not use; a
 * write may have reached the media) and the command ends with Command Abort Requested. Marks
 * are written only by the SQ's owner thread, the one that completes the command: an Abort of an
 * I/O SQ's command hops there (the admin SQ's owner is the admin thread itself), and a Preempt
 * and Abort marks with the fence it puts up on each SQ's owner. So a command's tag (generation
 * << 16 | CID) is plain memory of one thread: the completion reads and clears it with no locked
 * instruction, and a mark and a completion never race.
 *
 * Commands still in their I/O SQ (the host rang the doorbell, the controller has not fetched
 * them: the queue has no free request, or its poll group did not get to it): on the owner
 * thread, the Abort looks for the CID between the SQ head and the tail it has seen and arms a
 * record on that ring slot. When the slot is fetched, a command with that CID
 * completes with Command Abort Requested without being executed; the record then goes. A
 * record therefore never outlives the one SQE it names (or its SQ: deletion and resets drop
 * it), and a later command reusing the CID is never touched. Records are the Abort Command
 * Limit (ACL + 1 of them): when all are armed, an Abort that needs one completes with Abort
 * Command Limit Exceeded. Fused commands are not armed (the pair is fetched as one, 3.4.2).
 *
 * The Abort completes once its decision is made: CDW0 bit 0 clear when the command was marked
 * or armed (it will not complete any other way), set when no command with that CID was
 * running or queued as far as the controller had seen the SQ tail (already completed, never
 * submitted, or its doorbell not processed yet: best effort, as the spec allows). Admin SQ
 * commands are fetched in order, so one not fetched yet was submitted after the Abort: only
 * running ones are looked for there. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

/* Marks the running command `cid` of `sq` (not `self`). True if marked. The SQ's owner
 * thread. */
static bool ctrlr_abort_mark(struct ctrlr_sq *sq, uint16_t cid, const struct ctrlr_req *self)
{
	for (uint32_t i = 0; i < sq->size; i++) {
		struct ctrlr_req *r = &sq->reqs[i];
		uint32_t tag = r->abort_tag;

		if (r == self || !tag || (tag & CTRLR_ABORT_MARKS) || (tag & 0xffff) != cid)
			continue;
		r->abort_tag = tag | CTRLR_ABORT_MARK;
		return true;
	}
	return false;
}

/* Preempt and Abort: marks every running command of `sq` on namespace nsid. Returns how many.
 * The SQ's owner thread. */
static uint32_t ctrlr_abort_preempted(struct ctrlr_sq *sq, uint32_t nsid)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < sq->size; i++) {
		struct ctrlr_req *r = &sq->reqs[i];
		uint32_t tag = r->abort_tag;

		if (!tag || r->sqe.nsid != nsid)
			continue;
		/* A write still running may yet land, whatever marked it first: the Acquire
		 * waits for it to end. */
		if (!r->preempt_drain && r->ns &&
		    (ctrlr_io_effects(sq->ctrlr, r->ns->csi, r->sqe.cdw0.bits.opc) &
		     NVME_CMD_EFFECTS_LBCC)) {
			r->preempt_drain = true;
			sq->preempt_writes++;
		}
		if (tag & CTRLR_ABORT_MARKS)
			continue;
		r->abort_tag = tag | CTRLR_ABORT_MARK_PREEMPT;
		n++;
	}
	return n;
}

/* A free record, or NULL (the limit). Any owner thread. */
static struct ctrlr_abort_rec *ctrlr_abort_rec_get(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_ARRAY_SIZE(ctrlr->abort_recs); i++) {
		uint32_t free_ = 0;

		if (__atomic_compare_exchange_n(&ctrlr->abort_recs[i].busy, &free_, 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return &ctrlr->abort_recs[i];
	}
	return NULL;
}

static void ctrlr_abort_rec_put(struct ctrlr_abort_rec *rec)
{
	rec->sq = NULL;
	rec->next = NULL;
	__atomic_store_n(&rec->busy, 0, __ATOMIC_RELEASE);
}

/* Owner thread of sq: the command `cid` is running (marked) or still in the ring (armed).
 * Sets req->cdw0 (0: it will end with Command Abort Requested); returns the Abort's status. */
static uint16_t ctrlr_abort_queued(struct ctrlr_sq *sq, uint16_t cid, struct ctrlr_req *req)
{
	struct ctrlr_abort_rec *rec;

	req->cdw0 = 1;
	if (CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE)
		return NVME_SC_SUCCESS;
	if (ctrlr_abort_mark(sq, cid, NULL)) {
		req->cdw0 = 0;
		return NVME_SC_SUCCESS;
	}
	if (!sq->ring)
		return NVME_SC_SUCCESS;
	ctrlr_sq_refresh_tail(sq);
	/* Pairs with the host's write barrier between filling SQEs and ringing the doorbell. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (uint32_t i = sq->head; i != sq->tail; i = (i + 1) % sq->size) {
		union nvme_cdw0 dw0;

		memcpy(&dw0, &sq->ring[i].cdw0, sizeof(dw0));
		if (dw0.bits.cid != cid)
			continue;
		/* The first SQE with that CID is the one: armed already (a second Abort of it), or
		 * half of a fused pair, it is not aborted (again). */
		if (dw0.bits.fuse)
			return NVME_SC_SUCCESS;
		for (rec = sq->abort_armed; rec; rec = rec->next)
			if (rec->slot == i)
				return NVME_SC_SUCCESS;
		rec = ctrlr_abort_rec_get(sq->ctrlr);
		if (!rec)
			return NVME_SC_ABORT_LIMIT;
		rec->sq = sq;
		rec->slot = i;
		rec->cid = cid;
		rec->next = sq->abort_armed;
		sq->abort_armed = rec;
		req->cdw0 = 0;
		LOG_DBG(CTRLR_LOG, "%s: abort of sq %u cid %u: armed on slot %u", sq->ctrlr->serial,
			sq->qid, cid, i);
		return NVME_SC_SUCCESS;
	}
	return NVME_SC_SUCCESS;
}

/* The preempt fence: was the SQE just fetched in the ring when the preempt came, and for one of
 * its namespaces? The SQEs consumed since the last look (a fused pair takes two) come off the
 * window first. */
static bool ctrlr_preempt_fetched(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;
	uint32_t adv = (sq->head + sq->size - sq->preempt_head) % sq->size;
	bool hit = false;

	if (adv && adv <= sq->preempt_left) {
		/* A fused pair is fetched as one (3.4.2): it meets the reservation when it runs. */
		for (uint32_t i = 0; i < sq->preempt_n && !req->sqe.cdw0.bits.fuse; i++)
			hit |= sq->preempt_nsid[i] == req->sqe.nsid;
		sq->preempt_left -= adv;
	} else {
		sq->preempt_left = 0;
	}
	sq->preempt_head = sq->head;
	if (!sq->preempt_left)
		sq->preempt_n = 0;
	if (hit)
		ctrlr_req_complete(req, NVME_SC_PREEMPT_ABORT);
	return hit;
}

bool ctrlr_abort_fetched(struct ctrlr_req *req, uint32_t slot)
{
	struct ctrlr_sq *sq = req->sq;

	if (sq->preempt_left && ctrlr_preempt_fetched(req))
		return true;
	for (struct ctrlr_abort_rec **pp = &sq->abort_armed; *pp; pp = &(*pp)->next) {
		struct ctrlr_abort_rec *rec = *pp;
		bool hit;

		if (rec->slot != slot)
			continue;
		*pp = rec->next;
		/* The host must leave SQEs between head and tail alone; one that changed is not
		 * the command the Abort named. */
		hit = rec->cid == req->sqe.cdw0.bits.cid && !req->sqe.cdw0.bits.fuse;
		ctrlr_abort_rec_put(rec);
		if (!hit)
			return false;
		LOG_DBG(CTRLR_LOG, "%s: sq %u cid %u aborted before it started", sq->ctrlr->serial,
			sq->qid, req->sqe.cdw0.bits.cid);
		ctrlr_req_complete(req, NVME_SC_ABORT_REQ);
		return true;
	}
	return false;
}

/* A preempt fence to put up on an SQ's owner thread. */
struct ctrlr_preempt_fence {
	struct ctrlr_preempt_fence *next; /* in sq->preempt_waiters */
	struct evloop_msg msg;
	struct ctrlr_sq *sq;
	struct ctrlr *ctrlr;
	uint32_t nsid;
	void (*up)(void *arg); /* told once the fence is up (admin thread), or NULL */
	void *up_arg;
};

/* Admin thread: one fence of the Acquire is up. */
static void ctrlr_preempt_fence_done(void *arg)
{
	struct ctrlr_preempt_fence *f = arg;

	void (*up)(void *arg) = f->up;
	void *up_arg = f->up_arg;

	free(f);
	up(up_arg);
}

/* The SQ's owner thread: the running commands on the namespace are marked, the SQEs between
 * the head and the tail seen now are under the fence (a fence already up is widened to them;
 * its namespaces kept), then the Acquire waiting for it hears so on the admin thread. The SQ
 * still exists: posted while live, before any deletion the admin thread posts later on the same
 * thread. */
static void ctrlr_preempt_fence_up(void *arg)
{
	struct ctrlr_preempt_fence *f = arg;
	struct ctrlr_sq *sq = f->sq;
	uint32_t left, i, n;

	if (CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || !sq->reqs)
		goto out;
	n = ctrlr_abort_preempted(sq, f->nsid);
	if (n)
		LOG_INFO(CTRLR_LOG, "%s: sq %u ns %u: %u running command(s) aborted by a preempt",
			 sq->ctrlr->serial, sq->qid, f->nsid, n);
	if (!sq->ring)
		goto out;
	ctrlr_sq_refresh_tail(sq);
	left = (sq->tail + sq->size - sq->head) % sq->size;
	if (!left)
		goto out;
	if (sq->preempt_left) {
		/* Bring the fence's window to the current head before widening it. */
		uint32_t adv = (sq->head + sq->size - sq->preempt_head) % sq->size;

		sq->preempt_left = adv < sq->preempt_left ? sq->preempt_left - adv : 0;
		if (!sq->preempt_left)
			sq->preempt_n = 0;
	}
	for (i = 0; i < sq->preempt_n && sq->preempt_nsid[i] != f->nsid; i++)
		;
	if (i == sq->preempt_n) {
		if (sq->preempt_n == CTRLR_PREEMPT_NSIDS) {
			LOG_WARN(CTRLR_LOG, "%s: sq %u: preempt fence full: queued commands of ns %u "
					    "meet the reservation instead", sq->ctrlr->serial, sq->qid,
				 f->nsid);
			goto out;
		}
		sq->preempt_nsid[sq->preempt_n++] = f->nsid;
	}
	sq->preempt_head = sq->head;
	if (left > sq->preempt_left)
		sq->preempt_left = left;
out:
	if (!f->up) {
		free(f);
		return;
	}
	/* Writes of the preempted host still running: the Acquire waits for them. */
	if (CTRLR_LOAD(sq->state) == CTRLR_Q_LIVE && sq->preempt_writes) {
		f->next = sq->preempt_waiters;
		sq->preempt_waiters = f;
		return;
	}
	f->ctrlr->ops->admin_post(f->ctrlr->tctx, &f->msg, ctrlr_preempt_fence_done, f);
}

/* The fences waiting on sq are up: each Acquire hears so. */
static void ctrlr_preempt_release(struct ctrlr_sq *sq)
{
	struct ctrlr_preempt_fence *f = sq->preempt_waiters, *next;

	sq->preempt_waiters = NULL;
	for (; f; f = next) {
		next = f->next;
		f->ctrlr->ops->admin_post(f->ctrlr->tctx, &f->msg, ctrlr_preempt_fence_done, f);
	}
}

void ctrlr_abort_preempt_drained(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;

	req->preempt_drain = false;
	if (sq->preempt_writes && !--sq->preempt_writes)
		ctrlr_preempt_release(sq);
}

uint32_t ctrlr_abort_preempt_queued(struct ctrlr *ctrlr, uint32_t nsid, void (*up)(void *arg),
				    void *arg)
{
	uint32_t posted = 0;

	for (uint32_t qid = 1; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_sq *sq = ctrlr->sqs[qid];
		struct ctrlr_preempt_fence *f;

		if (!sq || CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE)
			continue;
		f = malloc(sizeof(*f));
		if (!f) {
			LOG_ERR(CTRLR_LOG, "%s: sq %u: no memory for a preempt fence: running and "
					   "queued commands of ns %u meet the reservation instead",
				ctrlr->serial, qid, nsid);
			continue;
		}
		f->sq = sq;
		f->ctrlr = ctrlr;
		f->nsid = nsid;
		f->up = up;
		f->up_arg = arg;
		posted++;
		ctrlr->ops->io_post(ctrlr->tctx, sq, &f->msg, ctrlr_preempt_fence_up, f);
	}
	return posted;
}

void ctrlr_abort_sq_gone(struct ctrlr_sq *sq)
{
	struct ctrlr_abort_rec *rec = sq->abort_armed, *next;

	/* Its commands are over: an Acquire still waiting on it goes on. */
	sq->preempt_writes = 0;
	ctrlr_preempt_release(sq);

	for (; rec; rec = next) {
		next = rec->next;
		ctrlr_abort_rec_put(rec);
	}
	sq->abort_armed = NULL;
}

/* Admin thread: the owner thread decided. */
static void ctrlr_abort_decided(void *arg)
{
	struct ctrlr_req *req = arg;

	ctrlr_req_complete(req, req->status);
}

/* The I/O SQ's owner thread. The SQ still exists: the hop was posted while it was live, and its
 * deletion (also posted by the admin thread, later) runs after this on the same thread. */
static void ctrlr_abort_on_owner(void *arg)
{
	struct ctrlr_req *req = arg;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_sq *sq = req->step.buf;

	req->step.buf = NULL;
	req->status = ctrlr_abort_queued(sq, (uint16_t)(req->sqe.cdw10 >> 16), req);
	ctrlr->ops->admin_post(ctrlr->tctx, &req->hop, ctrlr_abort_decided, req);
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
	if (!sq || CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || !sq->reqs)
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	if (sqid == 0) {
		/* The admin SQ's owner is this thread. */
		if (ctrlr_abort_mark(sq, cid, req)) {
			req->cdw0 = 0;
			LOG_DBG(CTRLR_LOG, "%s: abort of sq 0 cid %u: marked", ctrlr->serial, cid);
		}
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
	/* Running or still in the ring: the owner thread marks or arms. */
	req->step.buf = sq;
	ctrlr->ops->io_post(ctrlr->tctx, sq, &req->hop, ctrlr_abort_on_owner, req);
}
