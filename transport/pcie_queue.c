/* transport/pcie_queue.c - I/O queue create/delete flows of the transport
 * (DOCA NVMe app style): the main thread creates the DPA channel, doorbells
 * and MSI-X vector; the owning poll group binds the doorbells through the DPA
 * program; each round trip ends back on the main thread, which completes the
 * admin command through the core. Every hop posts the queue's own message
 * node, so no step can be lost. Thread of each function in its comment. */
#include "common/evloop.h"
#include "common/log.h"
#include "controller/nvme_spec.h"
#include "transport/pcie_internal.h"
#include "dpa/nvme_dpa.h"

#include <errno.h>
#include <stdlib.h>

/* ---- DPA bind / unbind ---- */

/* Poll group: sends the request; a full to-DPA queue is retried from the poll
 * group's loop (the DPA drains it meanwhile). */
static void pcie_bind_send(void *arg)
{
	struct pcie_bind *b = arg;
	uint64_t cookie = (uint64_t)(uintptr_t)b->cookie;
	int rc;

	EVLOOP_ASSERT_OWNER(b->pg->t.loop);
	rc = b->bind ? dpa_nvme_chan_bind_db(b->chan, b->db, cookie)
		     : dpa_nvme_chan_unbind_db(b->chan, b->db, cookie);
	if (rc == -EAGAIN) {
		pcie_pg_post(b->pg, &b->retry, pcie_bind_send, b);
		return;
	}
	if (!rc)
		return;
	/* Refused for good (a bug: bad handle or type). The reply will never come, so
	 * produce it here with the error, the way the DPA would have. */
	LOG_ERR(PCIE_LOG, "DPA %s request refused: %d", b->bind ? "bind" : "unbind", rc);
	b->done(b, rc);
}

static void pcie_cq_bound(struct pcie_cq *pcq, int status);
static void pcie_sq_bound(struct pcie_sq *psq, int status);
static void pcie_cq_unbound(struct pcie_cq *pcq);
static void pcie_sq_unbound(struct pcie_sq *psq);

/* The DPA's reply to a bind or an unbind, on the queue's poll group (or the refusal). */
static void pcie_bind_done(struct pcie_bind *b, int status)
{
	if (*(enum pcie_q_kind *)b->cookie == PCIE_Q_SQ) {
		if (b->bind)
			pcie_sq_bound(b->cookie, status);
		else
			pcie_sq_unbound(b->cookie);
	} else {
		if (b->bind)
			pcie_cq_bound(b->cookie, status);
		else
			pcie_cq_unbound(b->cookie);
	}
}

static void pcie_bind_start(struct pcie_bind *b, struct pcie_poll_group *pg,
			    struct dpa_nvme_chan *chan, struct dpa_db *db, void *cookie, bool bind)
{
	b->pg = pg;
	b->chan = chan;
	b->db = db;
	b->cookie = cookie;
	b->bind = bind;
	b->done = pcie_bind_done;
	pcie_bind_send(b);
}

struct hw_msix_vector *pcie_vector_get(struct pcie_ctrlr *pc, uint16_t vector)
{
	EVLOOP_ASSERT_OWNER(pc->loop);
	if (vector >= pc->num_msix) {
		errno = EINVAL;
		return NULL;
	}
	if (!pc->vectors[vector])
		pc->vectors[vector] = hw_msix_vector_create(pc->dev, vector);
	return pc->vectors[vector];
}

/* ---- Create / delete CQ ---- */

/* Main: frees what create_cq took, in reverse. */
static void pcie_cq_free(struct pcie_cq *pcq)
{
	if (pcq->db)
		dpa_db_destroy(pcq->db);
	if (pcq->chan && dpa_nvme_chan_destroy(pcq->chan))
		LOG_ERR(PCIE_LOG, "%s: a CQ channel still has doorbells: kept", pcq->pc->vuid);
	free(pcq);
}

/* Poll group: adopt the CQ, then bind its head doorbell. */
static void pcie_cq_attach_msg(void *arg)
{
	struct pcie_cq *pcq = arg;

	EVLOOP_ASSERT_OWNER(pcq->pg->t.loop);
	pcie_pg_cq_attach(pcq);
	pcie_bind_start(&pcq->bind, pcq->pg, pcq->chan, pcq->db, pcq, true);
}

int pcie_create_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_cq *pcq;
	uint16_t qid = ctrlr_cq_get_qid(cq);
	int rc = -ENOMEM;

	EVLOOP_ASSERT_OWNER(pc->loop);
	pcq = calloc(1, sizeof(*pcq));
	if (!pcq)
		return -ENOMEM;
	pcq->kind = PCIE_Q_CQ;
	pcq->pc = pc;
	pcq->cq = cq;
	pcq->pg = pcie_pg_pick(pc->pgs);
	if (ctrlr_cq_irq_enabled(cq)) {
		pcq->vec = pcie_vector_get(pc, ctrlr_cq_get_vector(cq));
		if (!pcq->vec) {
			rc = -errno;
			goto out_free;
		}
	}
	pcq->chan = dpa_nvme_chan_create(pc->dpa, -1, PCIE_CHAN_DEPTH);
	if (!pcq->chan) {
		rc = -errno;
		goto out_free;
	}
	pcq->db = dpa_db_create(dpa_nvme_chan_db_comp(pcq->chan), pc->dev, nvme_db_index(qid, true));
	if (!pcq->db) {
		rc = -errno;
		goto out_free;
	}
	/* Doorbells restart from 0 with every new queue (NVMe reset semantics);
	 * the DB is stopped, so this only stores. */
	rc = hw_db_modify_value(dpa_db_hw(pcq->db), 0);
	if (rc)
		goto out_free;
	ctrlr_cq_set_tctx(cq, pcq);
	pcie_pg_post(pcq->pg, &pcq->msg, pcie_cq_attach_msg, pcq);
	return 0;

out_free:
	LOG_ERR(PCIE_LOG, "%s: create CQ %u failed: %d", pc->vuid, qid, rc);
	pcie_cq_free(pcq);
	return rc < 0 ? rc : -EIO;
}

static void pcie_cq_unbind_msg(void *arg);

/* Main: the CQ's doorbell is bound (or not). */
static void pcie_cq_bound_main(void *arg)
{
	struct pcie_cq *pcq = arg;
	int rc = pcq->status;

	EVLOOP_ASSERT_OWNER(pcq->pc->loop);
	if (!rc)
		rc = dpa_db_start(pcq->db);
	if (rc) {
		/* A CQ without its head doorbell would stall once full: undo the attach
		 * (an unbind round trip frees it) and fail the command. */
		LOG_ERR(PCIE_LOG, "%s: CQ %u doorbell bind/start failed: %d", pcq->pc->vuid,
			ctrlr_cq_get_qid(pcq->cq), rc);
		pcq->status = rc;
		dpa_db_stop(pcq->db);
		pcie_pg_post(pcq->pg, &pcq->msg, pcie_cq_unbind_msg, pcq);
		return;
	}
	ctrlr_cq_create_done(pcq->cq, 0);
}

/* Poll group: BIND_DONE of the CQ head doorbell. */
static void pcie_cq_bound(struct pcie_cq *pcq, int status)
{
	pcq->status = status;
	evloop_post(pcq->pc->loop, &pcq->msg, pcie_cq_bound_main, pcq);
}

/* Main: the last step of a CQ deletion, or of a failed creation. */
static void pcie_cq_unbound_main(void *arg)
{
	struct pcie_cq *pcq = arg;
	struct ctrlr_cq *cq = pcq->cq;
	int failed = pcq->status;

	EVLOOP_ASSERT_OWNER(pcq->pc->loop);
	pcie_cq_free(pcq);
	ctrlr_cq_set_tctx(cq, NULL);
	if (failed)
		ctrlr_cq_create_done(cq, failed);
	else
		ctrlr_cq_delete_done(cq);
}

/* Poll group: UNBIND_DONE; the CQ's channel has nothing more for us. */
static void pcie_cq_unbound(struct pcie_cq *pcq)
{
	pcie_pg_cq_detach(pcq);
	evloop_post(pcq->pc->loop, &pcq->msg, pcie_cq_unbound_main, pcq);
}

static void pcie_cq_unbind_msg(void *arg)
{
	struct pcie_cq *pcq = arg;

	EVLOOP_ASSERT_OWNER(pcq->pg->t.loop);
	pcie_bind_start(&pcq->bind, pcq->pg, pcq->chan, pcq->db, pcq, false);
}

int pcie_delete_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(cq);
	int rc;

	EVLOOP_ASSERT_OWNER(pcq->pc->loop);
	rc = dpa_db_stop(pcq->db);
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: CQ %u doorbell stop failed: %d", pcq->pc->vuid,
			ctrlr_cq_get_qid(cq), rc);
	pcq->status = 0;
	pcie_pg_post(pcq->pg, &pcq->msg, pcie_cq_unbind_msg, pcq);
	return 0;
}

/* ---- Create / delete SQ ---- */

static void pcie_sq_attach_msg(void *arg)
{
	struct pcie_sq *psq = arg;
	struct pcie_cq *pcq = psq->pcq;

	EVLOOP_ASSERT_OWNER(pcq->pg->t.loop);
	psq->next = pcq->sqs;
	pcq->sqs = psq;
	atomic_fetch_add(&pcq->pg->nr_sqs, 1);
	pcie_bind_start(&psq->bind, pcq->pg, pcq->chan, psq->db, psq, true);
}

int pcie_create_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(ctrlr_sq_get_cq(sq));
	struct pcie_sq *psq;
	uint16_t qid = ctrlr_sq_get_qid(sq);
	int rc;

	EVLOOP_ASSERT_OWNER(pc->loop);
	if (!pcq)
		return -EINVAL;
	psq = calloc(1, sizeof(*psq));
	if (!psq)
		return -ENOMEM;
	psq->kind = PCIE_Q_SQ;
	psq->pc = pc;
	psq->sq = sq;
	psq->pcq = pcq;
	psq->db = dpa_db_create(dpa_nvme_chan_db_comp(pcq->chan), pc->dev,
				nvme_db_index(qid, false));
	if (!psq->db) {
		rc = -errno;
		goto out_free;
	}
	rc = hw_db_modify_value(dpa_db_hw(psq->db), 0);
	if (rc)
		goto out_destroy_db;
	ctrlr_sq_set_tctx(sq, psq);
	pcie_pg_post(pcq->pg, &psq->msg, pcie_sq_attach_msg, psq);
	return 0;

out_destroy_db:
	dpa_db_destroy(psq->db);
out_free:
	LOG_ERR(PCIE_LOG, "%s: create SQ %u failed: %d", pc->vuid, qid, rc);
	free(psq);
	return rc < 0 ? rc : -EIO;
}

static void pcie_sq_stop_msg(void *arg);

/* Main: the SQ is live in the core before its doorbell starts, so the first
 * DB_VALUE (start produces one with the current tail) finds it ready. */
static void pcie_sq_bound_main(void *arg)
{
	struct pcie_sq *psq = arg;
	int rc = psq->status;

	EVLOOP_ASSERT_OWNER(psq->pc->loop);
	if (rc) {
		/* No tail doorbell, no queue: undo the attach, fail the command. */
		LOG_ERR(PCIE_LOG, "%s: SQ %u doorbell bind failed: %d", psq->pc->vuid,
			ctrlr_sq_get_qid(psq->sq), rc);
		pcie_pg_post(psq->pcq->pg, &psq->msg, pcie_sq_stop_msg, psq);
		return;
	}
	ctrlr_sq_create_done(psq->sq, 0);
	rc = dpa_db_start(psq->db);
	if (rc) {
		/* The queue is live in the core: the host sees it fail to fetch; say why. */
		LOG_ERR(PCIE_LOG, "%s: SQ %u doorbell start failed: %d", psq->pc->vuid,
			ctrlr_sq_get_qid(psq->sq), rc);
	}
}

static void pcie_sq_bound(struct pcie_sq *psq, int status)
{
	psq->status = status;
	evloop_post(psq->pc->loop, &psq->msg, pcie_sq_bound_main, psq);
}

static void pcie_sq_unbound_main(void *arg)
{
	struct pcie_sq *psq = arg;
	struct ctrlr_sq *sq = psq->sq;
	int failed = psq->status;

	EVLOOP_ASSERT_OWNER(psq->pc->loop);
	dpa_db_destroy(psq->db);
	free(psq);
	ctrlr_sq_set_tctx(sq, NULL);
	if (failed)
		ctrlr_sq_create_done(sq, failed);
	else
		ctrlr_sq_delete_done(sq);
}

/* Poll group: UNBIND_DONE; every DB_VALUE of the SQ came before it. */
static void pcie_sq_unbound(struct pcie_sq *psq)
{
	evloop_post(psq->pc->loop, &psq->msg, pcie_sq_unbound_main, psq);
}

/* Poll group: no request of the SQ is in flight any more. */
static void pcie_sq_drained(void *arg)
{
	struct pcie_sq *psq = arg;
	struct pcie_cq *pcq = psq->pcq;

	for (struct pcie_sq **pp = &pcq->sqs; *pp; pp = &(*pp)->next) {
		if (*pp == psq) {
			*pp = psq->next;
			break;
		}
	}
	atomic_fetch_sub(&pcq->pg->nr_sqs, 1);
	pcie_bind_start(&psq->bind, pcq->pg, pcq->chan, psq->db, psq, false);
}

static void pcie_sq_stop_msg(void *arg)
{
	struct pcie_sq *psq = arg;

	EVLOOP_ASSERT_OWNER(psq->pcq->pg->t.loop);
	psq->stopped = true;
	ctrlr_sq_stop(psq->sq, pcie_sq_drained, psq);
}

int pcie_delete_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct pcie_sq *psq = ctrlr_sq_get_tctx(sq);
	int rc;

	EVLOOP_ASSERT_OWNER(psq->pc->loop);
	rc = dpa_db_stop(psq->db);
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: SQ %u doorbell stop failed: %d", psq->pc->vuid,
			ctrlr_sq_get_qid(sq), rc);
	psq->status = 0;
	pcie_pg_post(psq->pcq->pg, &psq->msg, pcie_sq_stop_msg, psq);
	return 0;
}

/* ---- Interrupts ---- */

/* Owner thread of cq. An I/O CQ asks its DPA thread to raise its vector
 * (DOCA's flow); the admin CQ, on the main thread, raises directly. */
void pcie_raise_irq(void *tctx, struct ctrlr_cq *cq)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(cq);
	struct hw_msix_vector *vec;
	int rc;

	if (!pcq) {
		EVLOOP_ASSERT_OWNER(pc->loop);
		vec = pcie_vector_get(pc, ctrlr_cq_get_vector(cq));
		if (vec)
			hw_msix_vector_raise(vec);
		return;
	}
	EVLOOP_ASSERT_OWNER(pcq->pg->t.loop);
	if (!pcq->vec)
		return;
	counter_add_owned_atomic(&pcq->pg->irqs, 1);
	/* Fused: this thread runs the program, so the request needs no eventfd round trip (one
	 * system call per interrupt, the MSI-X eventfd write, instead of three) as long as the
	 * program runs before the loop sleeps again. With the channel's doorbells polled, our
	 * poller drains every channel that has polled DBs before each sleep; otherwise a deferred
	 * drain does. Usually pcie_pg_settle runs it at once. */
	if ((pcq->pg->polling && dpa_thread_has_polled_dbs(dpa_nvme_chan_thread(pcq->chan))) ||
	    (pcq->pg->pgs->fused && pcie_pg_defer_drain(pcq->pg) == 0))
		rc = dpa_nvme_chan_raise_msix_polled(pcq->chan, pcq->vec);
	else
		rc = dpa_nvme_chan_raise_msix(pcq->chan, pcq->vec);
	if (rc)
		hw_msix_vector_raise(pcq->vec); /* queue full: raise it ourselves */
}

/* Owner thread of cq (an I/O CQ): the core holds its interrupt until until_us; the poll group's
 * timer polls it then (pcie_pg_irq_timer_fired). */
int pcie_hold_irq(void *tctx, struct ctrlr_cq *cq, uint64_t until_us)
{
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(cq);

	(void)tctx;
	if (!pcq)
		return -EINVAL; /* the admin CQ is never held */
	return pcie_pg_arm_irq_timer(pcq, until_us);
}
