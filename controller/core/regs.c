/* controller/core/regs.c - the register file (CAP, VS, INTMS/INTMC, CC, CSTS, AQA, ASQ, ACQ) and the
 * enable / reset / shutdown / FLR state machine driven by register writes (NVMe Base 2.0 3.1.4,
 * 3.5): a reset deletes every I/O queue through the transport, waits for visits, the modules'
 * own I/O and admin commands still running, then drops the admin queue and writes CSTS. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

void ctrlr_regs_init(struct ctrlr *ctrlr)
{
	ctrlr->cap.raw = 0;
	ctrlr->cap.bits.mqes = ctrlr->cfg.max_queue_entries - 1;
	ctrlr->cap.bits.cqr = 1;
	ctrlr->cap.bits.to = 20; /* 10 s, in 500 ms units */
	ctrlr->cap.bits.dstrd = 0;
	/* The NVM command set, and I/O command set selection (CC.CSS 110b) for zoned namespaces. */
	ctrlr->cap.bits.css = NVME_CAP_CSS_NVM | NVME_CAP_CSS_IOCS;
	ctrlr->cap.bits.mpsmin = CTRLR_MPSMIN;
	ctrlr->cap.bits.mpsmax = CTRLR_MPSMAX;
	ctrlr->cap.bits.cmbs = ctrlr->cfg.cap_cmbs;
	ctrlr->cap.bits.pmrs = ctrlr->cfg.cap_pmrs;
	ctrlr->vs = NVME_VERSION(1, 4, 0);
	ctrlr->intm = 0;
	ctrlr->cc.raw = 0;
	ctrlr->csts.raw = 0;
	ctrlr->aqa.raw = 0;
	ctrlr->asq = 0;
	ctrlr->acq = 0;
}

static void ctrlr_regs_image(const struct ctrlr *ctrlr, uint8_t *img)
{
	uint32_t zero = 0;

	memset(img, 0, NVME_REG_END);
	memcpy(img + NVME_REG_CAP, &ctrlr->cap.raw, 8);
	memcpy(img + NVME_REG_VS, &ctrlr->vs, 4);
	/* INTMS/INTMC read back 0: the register file cannot tell a rewrite of the same value from
	 * no write, so the core keeps the mask itself and leaves 0 for the next write to show. */
	memcpy(img + NVME_REG_INTMS, &zero, 4);
	memcpy(img + NVME_REG_INTMC, &zero, 4);
	memcpy(img + NVME_REG_CC, &ctrlr->cc.raw, 4);
	memcpy(img + NVME_REG_CSTS, &ctrlr->csts.raw, 4);
	memcpy(img + NVME_REG_AQA, &ctrlr->aqa.raw, 4);
	memcpy(img + NVME_REG_ASQ, &ctrlr->asq, 8);
	memcpy(img + NVME_REG_ACQ, &ctrlr->acq, 8);
}

void ctrlr_regs_read(struct ctrlr *ctrlr, uint32_t offset, void *buf, size_t len)
{
	uint8_t img[NVME_REG_END];

	if (offset >= NVME_REG_END)
		return;
	if (len > NVME_REG_END - offset)
		len = NVME_REG_END - offset;
	ctrlr_regs_image(ctrlr, img);
	memcpy(buf, img + offset, len);
}

void ctrlr_regs_write_csts(struct ctrlr *ctrlr)
{
	ctrlr->ops->write_regs(ctrlr->tctx, NVME_REG_CSTS, &ctrlr->csts.raw, 4);
}

static void ctrlr_enable_fail(struct ctrlr *ctrlr, const char *why)
{
	LOG_GUEST_ERR(CTRLR_LOG, "enable failed: %s (CC 0x%08x AQA 0x%08x)", why, ctrlr->cc.raw,
		      ctrlr->aqa.raw);
	CTRLR_STORE(ctrlr->state, CTRLR_ST_FAILED);
	ctrlr->csts.bits.cfs = 1;
	ctrlr->csts.bits.rdy = 0;
	ctrlr_regs_write_csts(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, enable_failed, ctrlr);
}

/* CC.EN 0 -> 1: validate CC/AQA/ASQ/ACQ (startup failures set CSTS.CFS, as QEMU does), create the
 * admin queue pair, set CSTS.RDY. */
void ctrlr_enable(struct ctrlr *ctrlr)
{
	union nvme_cc cc = ctrlr->cc;
	uint32_t asqs = ctrlr->aqa.bits.asqs + 1, acqs = ctrlr->aqa.bits.acqs + 1;
	struct ctrlr_sq *sq;
	struct ctrlr_cq *cq;
	uint64_t mask;

	if (cc.bits.mps < ctrlr->cap.bits.mpsmin || cc.bits.mps > ctrlr->cap.bits.mpsmax)
		return ctrlr_enable_fail(ctrlr, "CC.MPS outside CAP.MPSMIN..MPSMAX");
	if (cc.bits.css != NVME_CC_CSS_NVM && cc.bits.css != NVME_CC_CSS_IOCS)
		return ctrlr_enable_fail(ctrlr, "CC.CSS is neither 000b (NVM) nor 110b (all sets)");
	if (cc.bits.ams != 0)
		return ctrlr_enable_fail(ctrlr, "CC.AMS is not round robin");
	if (cc.bits.iosqes != NVME_SQES_LOG2 || cc.bits.iocqes != NVME_CQES_LOG2)
		return ctrlr_enable_fail(ctrlr, "CC.IOSQES/IOCQES not 6/4");
	if (asqs < 2 || acqs < 2)
		return ctrlr_enable_fail(ctrlr, "AQA sizes below 2 entries");
	mask = ((uint64_t)1 << (12 + cc.bits.mps)) - 1;
	if ((ctrlr->asq & mask) || (ctrlr->acq & mask) || !ctrlr->asq || !ctrlr->acq)
		return ctrlr_enable_fail(ctrlr, "ASQ/ACQ not page aligned");

	ctrlr->page_size = 1u << (12 + cc.bits.mps);
	cq = calloc(1, sizeof(*cq));
	sq = calloc(1, sizeof(*sq));
	if (!cq || !sq)
		goto out_free;
	ctrlr_cq_init(ctrlr, cq, 0, ctrlr->acq, acqs, 0, true);
	if (ctrlr_sq_init(ctrlr, sq, 0, cq, ctrlr->asq, asqs, 0))
		goto out_free;
	/* Both rings are translated once and pinned while enabled. Memory the guest has not
	 * mapped (yet) is a startup failure, as QEMU's device treats it. */
	if (ctrlr_cq_ring_attach(cq) || ctrlr_sq_ring_attach(sq)) {
		ctrlr_cq_fini(cq);
		ctrlr_sq_fini(sq);
		free(sq);
		free(cq);
		return ctrlr_enable_fail(ctrlr, "ASQ/ACQ not in guest memory the "
						 "controller may use (unmapped, or bus "
						 "mastering disabled)");
	}
	cq->state = CTRLR_Q_LIVE;
	sq->state = CTRLR_Q_LIVE;
	cq->sq_refs = 1;
	ctrlr->cqs[0] = cq;
	ctrlr->sqs[0] = sq;
	CTRLR_STORE(ctrlr->state, CTRLR_ST_ENABLED);
	ctrlr->csts.raw = 0;
	ctrlr->csts.bits.rdy = 1;
	ctrlr_regs_write_csts(ctrlr);
	LOG_DBG(CTRLR_LOG, "enabled: MPS %u admin SQ %u CQ %u", ctrlr->page_size, asqs, acqs);
	CTRLR_MODULES_CALL(ctrlr, enabled, ctrlr);
	return;

out_free:
	free(sq);
	free(cq);
	ctrlr_enable_fail(ctrlr, "out of memory");
}

void ctrlr_regs_written(struct ctrlr *ctrlr, const void *regs)
{
	const uint8_t *r = regs;
	uint64_t cap, asq, acq;
	uint32_t vs, intms, intmc, csts;
	union nvme_cc old = ctrlr->cc, cc;
	uint32_t zero = 0;

	memcpy(&cap, r + NVME_REG_CAP, 8);
	memcpy(&vs, r + NVME_REG_VS, 4);
	memcpy(&intms, r + NVME_REG_INTMS, 4);
	memcpy(&intmc, r + NVME_REG_INTMC, 4);
	memcpy(&cc.raw, r + NVME_REG_CC, 4);
	memcpy(&csts, r + NVME_REG_CSTS, 4);
	memcpy(&asq, r + NVME_REG_ASQ, 8);
	memcpy(&acq, r + NVME_REG_ACQ, 8);

	/* Read-only registers are restored. */
	if (cap != ctrlr->cap.raw)
		ctrlr->ops->write_regs(ctrlr->tctx, NVME_REG_CAP, &ctrlr->cap.raw, 8);
	if (vs != ctrlr->vs)
		ctrlr->ops->write_regs(ctrlr->tctx, NVME_REG_VS, &ctrlr->vs, 4);
	if (csts != ctrlr->csts.raw)
		ctrlr_regs_write_csts(ctrlr);

	/* INTMS sets mask bits, INTMC clears them (3.1.4.3/4). */
	if (intms || intmc) {
		uint32_t mask = (CTRLR_LOAD(ctrlr->intm) | intms) & ~intmc;

		CTRLR_STORE(ctrlr->intm, mask);
		ctrlr->ops->write_regs(ctrlr->tctx, NVME_REG_INTMS, &zero, 4);
		ctrlr->ops->write_regs(ctrlr->tctx, NVME_REG_INTMC, &zero, 4);
		if (intmc && ctrlr->cqs[0])
			ctrlr_cq_irq_unmasked(ctrlr->cqs[0]);
	}

	memcpy(&ctrlr->aqa.raw, r + NVME_REG_AQA, 4);
	ctrlr->aqa.bits.rsvd12 = 0;
	ctrlr->aqa.bits.rsvd28 = 0;
	ctrlr->asq = asq;
	ctrlr->acq = acq;

	if (cc.raw == old.raw)
		return;
	ctrlr->cc = cc;
	if (old.bits.en && !cc.bits.en) {
		ctrlr_reset_start(ctrlr, cc.bits.shn != NVME_SHN_NONE);
		return;
	}
	/* While a reset is still tearing down, the enable is done when it ends. */
	if (!old.bits.en && cc.bits.en && ctrlr->state == CTRLR_ST_DISABLED)
		ctrlr_enable(ctrlr);
	if (cc.bits.shn != NVME_SHN_NONE && old.bits.shn == NVME_SHN_NONE)
		ctrlr_reset_start(ctrlr, true);
}

/* ---- reset / shutdown / FLR: the teardown of every queue, then CSTS ---- */

bool ctrlr_visits_running(const struct ctrlr *ctrlr)
{
	for (unsigned int i = 0; i < CTRLR_VISIT_SLOTS; i++)
		if (ctrlr_visit_running(ctrlr, (enum ctrlr_visit_slot)i))
			return true;
	return ctrlr->unmap.active;
}

/* A module's own I/O in flight (self-test, sanitize) holds a reset or destroy back. */
bool ctrlr_modules_busy(const struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < ctrlr->nr_modules; i++)
		if (ctrlr->modules[i] && ctrlr->modules[i]->busy && ctrlr->modules[i]->busy(ctrlr))
			return true;
	return false;
}

/* ---- reset / shutdown / FLR ---- */

static void ctrlr_admin_sq_drained(void *arg)
{
	ctrlr_reset_continue(arg);
}

static void ctrlr_reset_finish(struct ctrlr *ctrlr)
{
	bool shutdown = ctrlr->reset_shutdown;

	if (ctrlr->sqs[0]) {
		ctrlr_sq_fini(ctrlr->sqs[0]);
		ctrlr_cq_fini(ctrlr->cqs[0]);
		free(ctrlr->sqs[0]);
		free(ctrlr->cqs[0]);
		ctrlr->sqs[0] = NULL;
		ctrlr->cqs[0] = NULL;
	}
	/* Shadow doorbells are dropped on every reset (Linux configures them again). */
	ctrlr->dbbuf_live = false;
	ctrlr_dbbuf_release(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, reset_done, ctrlr);
	ctrlr->visits_waiter = NULL;
	CTRLR_STORE(ctrlr->state, CTRLR_ST_DISABLED);
	ctrlr->csts.raw = 0;
	if (shutdown)
		ctrlr->csts.bits.shst = NVME_SHST_COMPLETE;
	ctrlr->reset_shutdown = false;
	if (ctrlr->reset_flr) {
		uint8_t img[NVME_REG_END];
		void (*done)(void *arg) = ctrlr->flr_done;

		ctrlr->reset_flr = false;
		ctrlr->flr_done = NULL;
		ctrlr_regs_init(ctrlr);
		ctrlr_regs_read(ctrlr, 0, img, sizeof(img));
		ctrlr->ops->write_regs(ctrlr->tctx, 0, img, sizeof(img));
		if (done)
			done(ctrlr->flr_arg);
		return;
	}
	ctrlr_regs_write_csts(ctrlr);
	LOG_DBG(CTRLR_LOG, "%s done", shutdown ? "shutdown" : "reset");
	/* The guest re-enabled while the teardown ran. */
	if (ctrlr->cc.bits.en && !shutdown)
		ctrlr_enable(ctrlr);
}

void ctrlr_reset_continue(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	bool waiting = false;

	if (ctrlr->state != CTRLR_ST_RESETTING || ctrlr->queue_ops_pending)
		return;
	/* A visit of the queues (unmap, remap, shadow doorbells) ends first: it holds pointers
	 * the teardown frees. Its end calls us again (visits_waiter). */
	if (ctrlr_visits_running(ctrlr))
		return;
	/* A module's own bdev request (self-test, sanitize) returns first; its completion calls
	 * us again. */
	if (ctrlr_modules_busy(ctrlr))
		return;
	/* Admin completions held for room in a full admin CQ are discarded with the queue: only
	 * the host could make room, and a host that reset (or is gone) never will. */
	if (asq && ctrlr->cqs[0]) {
		/* Not from inside the drop: the check below sets it again if still needed. */
		asq->stop_done = NULL;
		ctrlr_cq_drop_held(ctrlr->cqs[0], asq);
	}
	/* Admin commands still running (e.g. Format NVM on a bdev) finish first. */
	if (asq && asq->inflight) {
		asq->stop_done = ctrlr_admin_sq_drained;
		asq->stop_arg = ctrlr;
		return;
	}
	for (uint32_t qid = 1; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_sq *sq = ctrlr->sqs[qid];

		if (!sq)
			continue;
		waiting = true;
		if (sq->state == CTRLR_Q_DELETING)
			continue;
		CTRLR_STORE(sq->state, CTRLR_Q_DELETING);
		ctrlr->queue_ops_pending++;
		if (ctrlr->ops->delete_sq(ctrlr->tctx, sq)) {
			LOG_ERR(CTRLR_LOG, "transport refused to delete SQ %u during reset", qid);
			ctrlr->queue_ops_pending--;
		}
	}
	if (waiting)
		return;
	for (uint32_t qid = 1; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_cq *cq = ctrlr->cqs[qid];

		if (!cq)
			continue;
		waiting = true;
		if (cq->state == CTRLR_Q_DELETING)
			continue;
		cq->state = CTRLR_Q_DELETING;
		ctrlr->queue_ops_pending++;
		if (ctrlr->ops->delete_cq(ctrlr->tctx, cq)) {
			LOG_ERR(CTRLR_LOG, "transport refused to delete CQ %u during reset", qid);
			ctrlr->queue_ops_pending--;
		}
	}
	if (!waiting)
		ctrlr_reset_finish(ctrlr);
}

void ctrlr_reset_start(struct ctrlr *ctrlr, bool shutdown)
{
	if (shutdown) {
		ctrlr->reset_shutdown = true;
		CTRLR_STAT_ADD(ctrlr->cnt.shutdowns, 1);
	} else {
		CTRLR_STAT_ADD(ctrlr->cnt.resets, 1);
	}
	if (ctrlr->state == CTRLR_ST_RESETTING)
		return;
	CTRLR_STORE(ctrlr->state, CTRLR_ST_RESETTING);
	ctrlr->visits_waiter = ctrlr_reset_continue;
	ctrlr_aer_reset(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, reset, ctrlr);
	if (shutdown) {
		ctrlr->csts.bits.shst = NVME_SHST_OCCURRING;
		ctrlr_regs_write_csts(ctrlr);
	}
	ctrlr_reset_continue(ctrlr);
}

void ctrlr_flr(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	ctrlr->reset_flr = true;
	CTRLR_STAT_ADD(ctrlr->cnt.flrs, 1);
	ctrlr->flr_done = done;
	ctrlr->flr_arg = arg;
	ctrlr->cc.raw = 0;
	ctrlr_reset_start(ctrlr, false);
}
