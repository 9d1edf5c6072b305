/* controller/core/cq.c - the completion side of the queues: CQ mirrors of the host rings, CQE
 * posting with phase tag and SQ head, CQ-full back-pressure (completions held until the host
 * frees room), interrupts (IEN, INTMS, per-vector coalescing, the adaptive moderation that
 * follows the host's pace and depth). Owner thread of the CQ. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/counter.h"
#include "common/evloop.h"
#include "common/log.h"
#include "controller/core/core.h"

int ctrlr_cq_init(struct ctrlr *ctrlr, struct ctrlr_cq *cq, uint16_t qid, uint64_t addr,
		  uint32_t size, uint16_t vector, bool ien)
{
	memset(cq, 0, sizeof(*cq));
	cq->ctrlr = ctrlr;
	cq->qid = qid;
	cq->dma_addr = addr;
	cq->size = size;
	cq->vector = vector;
	cq->ien = ien;
	cq->phase = 1;
	cq->state = CTRLR_Q_CREATING;
	return 0;
}

void ctrlr_cq_fini(struct ctrlr_cq *cq)
{
	if (cq->ring_pin)
		ctrlr_cq_ring_detach(cq);
}

/* ---- shadow doorbells ---- */

void ctrlr_cq_dbbuf_attach(struct ctrlr_cq *cq)
{
	struct ctrlr *ctrlr = cq->ctrlr;

	if (!ctrlr->dbbuf_live || !ctrlr_dbbuf_covers(ctrlr, cq->qid)) {
		cq->shadow_head = NULL;
		cq->head_eventidx = NULL;
		return;
	}
	cq->shadow_head = &ctrlr->dbbuf_shadow_ptr[nvme_db_index(cq->qid, true)];
	cq->head_eventidx = &ctrlr->dbbuf_eventidx_ptr[nvme_db_index(cq->qid, true)];
	/* CQ heads are read from the shadow page when room is needed, so the guest need not ring
	 * (VFIO-USER.md 13): an event index it never crosses. */
	__atomic_store_n(cq->head_eventidx, 0xffffffffu, __ATOMIC_RELEASE);
}

/* ---- interrupts ---- */

static bool ctrlr_cq_coalesced(struct ctrlr_cq *cq, uint32_t *thr, uint32_t *time_us)
{
	struct ctrlr *ctrlr = cq->ctrlr;
	uint32_t coal = CTRLR_LOAD(ctrlr->feat.irq_coalesce);

	/* Coalescing never applies to the admin CQ, nor to a vector with CD set (section 5.27.1.9).
	 */
	if (cq->qid == 0 || CTRLR_LOAD(ctrlr->feat.irq_cd[cq->vector]))
		return false;
	*thr = (coal & 0xff) + 1;
	*time_us = ((coal >> 8) & 0xff) * 100;
	/* Aggregation time 0 disables coalescing. */
	return *time_us != 0;
}

/* Adaptive moderation: the longest a completion waits for the host to consume the previous
 * interrupt's before its own is raised anyway (a host that never updates its head, or updates it
 * late, loses at most this; one that is merely slow gets fewer interrupts). */
#define CTRLR_IRQ_ADAPT_MAX_US 200

static void ctrlr_cq_head_event_idle(struct ctrlr_cq *cq)
{
	/* Nothing to be told about: the guest need not ring the CQ head (VFIO-USER.md 13). The CQ
	 * full path arms its own value while completions are held. */
	if (cq->head_eventidx && !cq->held_head)
		__atomic_store_n(cq->head_eventidx, 0xffffffffu, __ATOMIC_RELEASE);
}

void ctrlr_cq_irq_raise_now(struct ctrlr_cq *cq)
{
	struct ctrlr *ctrlr = cq->ctrlr;

	if (!cq->irq_pending)
		return;
	/* INTMS masks vectors 0-31; the interrupt stays pending until INTMC clears the bit. */
	if (cq->vector < 32 && (CTRLR_LOAD(ctrlr->intm) & (1u << cq->vector)))
		return;
	CTRLR_STAT_ADD(ctrlr->cnt.irq_cqes, cq->irq_pending);
	cq->irq_pending = 0;
	if (cq->irq_unacked)
		ctrlr_cq_head_event_idle(cq);
	cq->irq_unacked = true;
	cq->irq_ack_tail = cq->tail;
	cq->depth_seen = 0;
	CTRLR_STAT_ADD(ctrlr->cnt.irqs_raised, 1);
	ctrlr->ops->raise_irq(ctrlr->tctx, cq);
}

void ctrlr_cq_irq_unmasked(struct ctrlr_cq *cq)
{
	ctrlr_cq_irq_raise_now(cq);
}

static void ctrlr_cq_refresh_head(struct ctrlr_cq *cq);

/* True while the host has not consumed every CQE the last interrupt announced: its handler is
 * still to run (or running), and will either find the CQEs posted since, or report a head short
 * of the tail, which raises the interrupt for them (ctrlr_cq_head_doorbell). */
static bool ctrlr_cq_irq_in_service(struct ctrlr_cq *cq)
{
	uint32_t since;

	if (!cq->irq_unacked)
		return false;
	ctrlr_cq_refresh_head(cq);
	/* Consumed up to irq_ack_tail: the head lies in [irq_ack_tail, tail]. */
	since = (cq->tail + cq->size - cq->irq_ack_tail) % cq->size;
	if ((cq->head + cq->size - cq->irq_ack_tail) % cq->size <= since) {
		cq->irq_unacked = false;
		ctrlr_cq_head_event_idle(cq);
		return false;
	}
	return true;
}

/* Asks the host to ring the CQ head doorbell once it has consumed the last interrupt's CQEs, even
 * with shadow doorbells (its event index, NVMe 2.0 5.8.1), so a held interrupt is raised as soon
 * as it is needed. Full barrier and re-check, as ctrlr_cq_arm_head_event. True if that already
 * happened. */
static bool ctrlr_cq_arm_ack_event(struct ctrlr_cq *cq)
{
	if (!cq->head_eventidx || cq->held_head)
		return false;
	__atomic_store_n(cq->head_eventidx, (cq->irq_ack_tail + cq->size - 1) % cq->size,
			 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !ctrlr_cq_irq_in_service(cq);
}

/* Commands of this CQ the host is not done with and has not been told about: fetched from its
 * SQs and not completed, or completed since the last interrupt and not consumed (a handler takes
 * every CQE it finds, announced or not). Those an interrupt announced are not counted: the host
 * takes them and submits again. Nor are SQEs written but not fetched yet: the wait lasts until
 * they are. `unconsumed` is from a current head. */
static uint32_t ctrlr_cq_host_outstanding(const struct ctrlr_cq *cq, uint32_t unconsumed)
{
	return cq->inflight + (cq->irq_pending < unconsumed ? cq->irq_pending : unconsumed);
}

/* The host's depth: a host that takes each interrupt's completions and then submits the same
 * number again one command at a time (fio at QD8 and up, one io_submit per command) would be
 * interrupted by the first of them to complete, in the middle of its submissions, and again for
 * each one after (a fast backend completes each before the next arrives). An interrupt for fewer
 * outstanding commands than the most the host has had (its depth mark) waits while the host keeps
 * submitting, and comes once it is CTRLR_IRQ_DEPTH_EARLY commands short of the mark, or has not
 * submitted for CTRLR_IRQ_DEPTH_GAP_US (a miss). Coming that much early, the interrupt's delivery
 * (tens of microseconds through a VMM's event loop) overlaps the host's last submissions instead
 * of following them; those last commands ride on the next interrupt with the next burst (a TCG
 * guest's 128 KiB writes at QD8, against QEMU's NVMe in the same guest: 1.24x one short where
 * at the mark gave 1.05x, and in another run 1.22x two short where one short gave 1.16x).
 *
 * The mark grows with what the host is seen to have outstanding. It falls to that count when
 * CTRLR_IRQ_DEPTH_MISSES waits in a row miss: the host's depth dropped, and the next interrupts
 * come at once. One miss alone says little (a preempted vCPU pauses its host mid-burst: 3% of a
 * TCG guest's waits), and lowering the mark for it would split the host's bursts for good: an
 * interrupt raised at the lower mark leaves the rest of the burst to its own.
 *
 * A host that submits one command at a time and then waits for all of them before it submits
 * again (a barrier) misses every other wait: the last completions of each round wait for
 * submissions that do not come. When misses that follow a wait that did not miss reach
 * CTRLR_IRQ_DEPTH_MISS_PCT of the recent waits (a running share, 1/32 weight: a TCG guest's
 * fio misses 1-3%, in clusters), the rule is off for the next depth_backoff interrupts, from
 * CTRLR_IRQ_DEPTH_BACKOFF_MIN doubling each time to CTRLR_IRQ_DEPTH_BACKOFF_MAX, and halved
 * after every CTRLR_IRQ_DEPTH_BACKOFF_DECAY waits without that: such a host pays a couple of
 * misses now and then, not one a round.
 *
 * At QD1 the mark is 1 and nothing waits, nor below a mark of CTRLR_IRQ_DEPTH_EARLY + 2; with a
 * slow backend every completion finds the host at its mark. */
#define CTRLR_IRQ_DEPTH_GAP_US 100
#define CTRLR_IRQ_DEPTH_EARLY 2
#define CTRLR_IRQ_DEPTH_MISSES 2
#define CTRLR_IRQ_DEPTH_MISS_PCT 20
#define CTRLR_IRQ_DEPTH_BACKOFF_MIN 64
#define CTRLR_IRQ_DEPTH_BACKOFF_MAX 65536
#define CTRLR_IRQ_DEPTH_BACKOFF_DECAY 1024

/* A wait of the depth rule ended, by the host reaching its mark or by a miss (counted, or not). */
static void ctrlr_cq_depth_wait_end(struct ctrlr_cq *cq, bool miss)
{
	uint32_t share = cq->depth_miss_share;

	share = share - share / 32 + (miss ? 100u * 16 / 32 : 0);
	cq->depth_miss_share = share;
	cq->depth_seen = 0;
	if (miss && share >= CTRLR_IRQ_DEPTH_MISS_PCT * 16u) {
		/* The share stays: back on, the next such miss turns the rule off again, for
		 * twice as long. */
		if (cq->depth_backoff < CTRLR_IRQ_DEPTH_BACKOFF_MIN)
			cq->depth_backoff = CTRLR_IRQ_DEPTH_BACKOFF_MIN;
		cq->depth_off = cq->depth_backoff;
		if (cq->depth_backoff < CTRLR_IRQ_DEPTH_BACKOFF_MAX)
			cq->depth_backoff *= 2;
		cq->depth_ok = 0;
		CTRLR_STAT_ADD(cq->ctrlr->cnt.irq_depth_backoffs, 1);
	} else if (++cq->depth_ok >= CTRLR_IRQ_DEPTH_BACKOFF_DECAY) {
		cq->depth_ok = 0;
		cq->depth_backoff /= 2;
	}
}

static bool ctrlr_cq_depth_hold(struct ctrlr_cq *cq, uint32_t unconsumed, uint64_t *now_us)
{
	uint32_t out = ctrlr_cq_host_outstanding(cq, unconsumed);

	if (out > cq->depth_mark)
		cq->depth_mark = out;
	if (cq->depth_off) {
		cq->depth_off--;
		return false;
	}
	if (out + CTRLR_IRQ_DEPTH_EARLY >= cq->depth_mark) {
		cq->depth_misses = 0;
		if (cq->depth_seen)
			ctrlr_cq_depth_wait_end(cq, false);
		return false;
	}
	if (!*now_us)
		*now_us = evloop_now_us();
	if (!cq->depth_seen)
		CTRLR_STAT_ADD(cq->ctrlr->cnt.irq_depth_waits, 1);
	if (out > cq->depth_seen) {
		cq->depth_seen = out;
		cq->depth_since_us = *now_us;
	}
	cq->irq_hold_until_us = cq->depth_since_us + CTRLR_IRQ_DEPTH_GAP_US;
	if (*now_us < cq->irq_hold_until_us)
		return true;
	CTRLR_STAT_ADD(cq->ctrlr->cnt.irq_depth_misses, 1);
	/* Only a miss after a wait that did not miss counts towards the backoff: misses in a row
	 * are a depth that dropped, which the lower mark takes care of. */
	ctrlr_cq_depth_wait_end(cq, cq->depth_misses == 0);
	if (++cq->depth_misses >= CTRLR_IRQ_DEPTH_MISSES) {
		cq->depth_mark = out;
		cq->depth_misses = 0;
	}
	return false;
}

/* Adaptive moderation, when the host set no coalescing of its own (Set Features 08h time 0) and
 * the vector allows it (no CD): an interrupt is raised at once unless the host has not yet
 * consumed the previous one's CQEs, or is still submitting up to its depth (above). At QD1 the
 * host always has consumed (it consumed the completion before submitting again) and is at its
 * depth, so nothing waits; under load completions that arrive while the host is still busy with
 * the last interrupt ride on it, bounded by CTRLR_IRQ_ADAPT_MAX_US. */
static bool ctrlr_cq_adaptive_hold(struct ctrlr_cq *cq, uint64_t *now_us)
{
	if (cq->qid == 0 || CTRLR_LOAD(cq->ctrlr->feat.irq_cd[cq->vector]))
		return false;
	if (!ctrlr_cq_irq_in_service(cq) || ctrlr_cq_arm_ack_event(cq)) {
		uint32_t unconsumed = ctrlr_cq_unconsumed(cq);

		/* The host's handler took the completions since the last interrupt with that
		 * interrupt's: nothing is left to announce, and an interrupt would find nothing
		 * (Linux counts such ones as unhandled, and turns off a vector with too many). */
		if (!unconsumed) {
			CTRLR_STAT_ADD(cq->ctrlr->cnt.irq_cqes, cq->irq_pending);
			cq->irq_pending = 0;
			cq->depth_seen = 0;
			return true;
		}
		return ctrlr_cq_depth_hold(cq, unconsumed, now_us);
	}
	if (!*now_us)
		*now_us = evloop_now_us();
	if (!cq->irq_first_us)
		cq->irq_first_us = *now_us;
	cq->irq_hold_until_us = cq->irq_first_us + CTRLR_IRQ_ADAPT_MAX_US;
	return *now_us < cq->irq_hold_until_us;
}

/* The interrupt waits until `until_us`: the transport is told, whichever path posted the CQEs
 * (a backend poll, a message to the owner thread), so that the hold ends by its timer even when
 * nothing else happens on the queue. Returns false when it could not be (the interrupt is then
 * raised at once). */
static bool ctrlr_cq_irq_hold(struct ctrlr_cq *cq, uint64_t until_us)
{
	struct ctrlr *ctrlr = cq->ctrlr;
	int rc = ctrlr->ops->hold_irq(ctrlr->tctx, cq, until_us);

	if (rc)
		LOG_ERR(CTRLR_LOG, "%s: CQ %u: interrupt held without a timer (%s): raised now",
			ctrlr->serial, cq->qid, strerror(-rc));
	return rc == 0;
}

/* Raises the CQ's interrupt unless a batch is open or coalescing says wait. `now_us` is 0 when
 * the caller has no clock reading: the clock is read only if coalescing is on, and the first
 * check after the first pending CQE starts the aggregation time. */
static void ctrlr_cq_irq_check(struct ctrlr_cq *cq, uint64_t now_us)
{
	uint32_t thr, time_us;

	if (!cq->irq_pending || cq->batch)
		return;
	if (ctrlr_cq_coalesced(cq, &thr, &time_us)) {
		if (cq->irq_pending < thr) {
			if (!now_us)
				now_us = evloop_now_us();
			if (!cq->irq_first_us)
				cq->irq_first_us = now_us;
			if (now_us - cq->irq_first_us < time_us &&
			    ctrlr_cq_irq_hold(cq, cq->irq_first_us + time_us))
				return;
		}
	} else if (ctrlr_cq_adaptive_hold(cq, &now_us)) {
		/* Nothing left to announce (the host took it all): nothing to wait for. */
		if (!cq->irq_pending || ctrlr_cq_irq_hold(cq, cq->irq_hold_until_us))
			return;
	}
	ctrlr_cq_irq_raise_now(cq);
}

bool ctrlr_cq_irq_held(const struct ctrlr_cq *cq)
{
	return cq->irq_pending && !cq->batch;
}

uint64_t ctrlr_cq_irq_poll(struct ctrlr_cq *cq, uint64_t now_us)
{
	uint32_t thr, time_us;

	if (!cq->irq_pending)
		return 0;
	if (!now_us)
		now_us = evloop_now_us();
	ctrlr_cq_irq_check(cq, now_us);
	if (!cq->irq_pending || cq->batch)
		return 0;
	if (ctrlr_cq_coalesced(cq, &thr, &time_us))
		return cq->irq_first_us + time_us;
	return cq->irq_hold_until_us;
}

void ctrlr_cq_batch_begin(struct ctrlr_cq *cq)
{
	cq->batch++;
}

void ctrlr_cq_batch_end(struct ctrlr_cq *cq)
{
	if (--cq->batch == 0 && cq->irq_pending)
		ctrlr_cq_irq_check(cq, 0);
}

/* ---- CQ posting ---- */

/* Reads the shadow CQ head (if any) into cq->head when it is a sane value. */
static void ctrlr_cq_refresh_head(struct ctrlr_cq *cq)
{
	uint32_t head, used, adv;

	if (!cq->shadow_head)
		return;
	head = __atomic_load_n(cq->shadow_head, __ATOMIC_ACQUIRE);
	used = (cq->tail + cq->size - cq->head) % cq->size;
	adv = (head + cq->size - cq->head) % cq->size;
	/* Ignore values that would free slots the controller never posted. */
	if (head < cq->size && adv <= used)
		cq->head = head;
}

bool ctrlr_cq_is_full(struct ctrlr_cq *cq)
{
	if ((cq->tail + 1) % cq->size != cq->head)
		return false;
	ctrlr_cq_refresh_head(cq);
	return (cq->tail + 1) % cq->size == cq->head;
}

/* Writes one CQE into the pinned ring. The status word (with the phase tag) is stored last with
 * release order: it pairs with the host's read barrier after it sees the new phase
 * (nvme_cqe_pending). */
static void ctrlr_cq_write(struct ctrlr_cq *cq, struct ctrlr_req *req)
{
	struct nvme_cqe *cqe = &cq->ring[cq->tail];

	cqe->dw0 = req->cdw0;
	cqe->dw1 = req->cdw1;
	cqe->sqhd = (uint16_t)req->sq->head;
	cqe->sqid = req->sq->qid;
	cqe->cid = req->sqe.cdw0.bits.cid;
	__atomic_store_n(&cqe->status, (uint16_t)((req->status << 1) | cq->phase),
			 __ATOMIC_RELEASE);
	ctrlr_cq_req_close(cq, req);
	if (++cq->tail == cq->size) {
		cq->tail = 0;
		cq->phase ^= 1;
	}
	if (cq->ien && cq->irq_pending++ == 0)
		cq->irq_first_us = 0; /* set by the next check, if coalescing needs it */
}

/* Arms the CQ head event index so the guest rings the CQ head doorbell on its next update: used
 * while completions are held back. Full barrier, then re-read, closes the race with a head update
 * that happened before the arm became visible. Returns true if room appeared meanwhile. */
static bool ctrlr_cq_arm_head_event(struct ctrlr_cq *cq)
{
	if (!cq->shadow_head)
		return false;
	__atomic_store_n(cq->head_eventidx, cq->head, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !ctrlr_cq_is_full(cq);
}

/* No room for a CQE: the ring is full, or detached because its memory was unmapped. */
static bool ctrlr_cq_blocked(struct ctrlr_cq *cq)
{
	return !cq->ring || (ctrlr_cq_is_full(cq) && !ctrlr_cq_arm_head_event(cq));
}

void ctrlr_cq_drain_held(struct ctrlr_cq *cq)
{
	while (cq->held_head) {
		struct ctrlr_req *req = cq->held_head;

		if (ctrlr_cq_blocked(cq))
			break;
		cq->held_head = req->next;
		if (!cq->held_head)
			cq->held_tail = NULL;
		ctrlr_cq_write(cq, req);
		ctrlr_req_free(req);
	}
	if (!cq->held_head && cq->head_eventidx)
		__atomic_store_n(cq->head_eventidx,
				 cq->irq_unacked && cq->irq_pending
					 ? (cq->irq_ack_tail + cq->size - 1) % cq->size
					 : 0xffffffffu,
				 __ATOMIC_RELEASE);
}

uint32_t ctrlr_cq_unconsumed(struct ctrlr_cq *cq)
{
	if (!cq->size)
		return 0;
	ctrlr_cq_refresh_head(cq);
	return (cq->tail + cq->size - cq->head) % cq->size;
}

void ctrlr_cq_post(struct ctrlr_cq *cq, struct ctrlr_req *req)
{
	if (cq->held_head || !cq->ring || ctrlr_cq_is_full(cq)) {
		if (cq->qid == 0 && CTRLR_LOAD(cq->ctrlr->state) == CTRLR_ST_RESETTING) {
			/* The reset discards the admin queue: no host will make room for this one,
			 * and the reset waits for every admin request to be freed. */
			ctrlr_req_free(req);
			return;
		}
		/* Never overwrite: hold it until the guest frees a slot (section 3.3.1.2.1), or
		 * until the ring's memory is mapped again. */
		req->state = CTRLR_REQ_HELD;
		req->next = NULL;
		if (cq->held_tail)
			cq->held_tail->next = req;
		else
			cq->held_head = req;
		cq->held_tail = req;
		CTRLR_STAT_ADD(cq->ctrlr->cnt.cq_full_holds, 1);
		if (cq->ring && ctrlr_cq_arm_head_event(cq))
			ctrlr_cq_drain_held(cq);
		ctrlr_cq_irq_check(cq, 0);
		return;
	}
	ctrlr_cq_write(cq, req);
	ctrlr_cq_irq_check(cq, 0);
	/* Last: freeing the admin queue's last request during a reset may finish the reset,
	 * which frees this CQ. */
	ctrlr_req_free(req);
}

/* Drops the held completions of one SQ (it is being deleted: the host expects none). */
void ctrlr_cq_drop_held(struct ctrlr_cq *cq, struct ctrlr_sq *sq)
{
	struct ctrlr_req **pp = &cq->held_head;

	cq->held_tail = NULL;
	while (*pp) {
		struct ctrlr_req *req = *pp;

		if (req->sq == sq) {
			*pp = req->next;
			ctrlr_req_free(req);
			continue;
		}
		cq->held_tail = req;
		pp = &req->next;
	}
}

/* The host moved its head (a valid head doorbell): room for completions held back, or an
 * interrupt held since the last one it consumed. */
void ctrlr_cq_head_moved(struct ctrlr_cq *cq, uint32_t value)
{
	cq->head = value;
	if (cq->held_head) {
		ctrlr_cq_batch_begin(cq);
		ctrlr_cq_drain_held(cq);
		ctrlr_cq_batch_end(cq);
	} else if (cq->irq_pending && !cq->batch) {
		/* The host consumed (part of) the last interrupt's CQEs: one held since may go. */
		ctrlr_cq_irq_check(cq, 0);
	}
}

/* ---- accessors for the transport ---- */

uint16_t ctrlr_cq_get_qid(const struct ctrlr_cq *cq)
{
	return cq->qid;
}

uint16_t ctrlr_cq_get_vector(const struct ctrlr_cq *cq)
{
	return cq->vector;
}

bool ctrlr_cq_irq_enabled(const struct ctrlr_cq *cq)
{
	return cq->ien;
}

uint32_t ctrlr_cq_get_size(const struct ctrlr_cq *cq)
{
	return cq->size;
}

struct ctrlr *ctrlr_cq_get_ctrlr(const struct ctrlr_cq *cq)
{
	return cq->ctrlr;
}

void ctrlr_cq_set_tctx(struct ctrlr_cq *cq, void *ctx)
{
	cq->tctx = ctx;
}

void *ctrlr_cq_get_tctx(const struct ctrlr_cq *cq)
{
	return cq->tctx;
}
