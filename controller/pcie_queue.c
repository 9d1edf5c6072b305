/* controller/pcie_queue.c - I/O queue create/delete flows of the transport
 * (DOCA NVMe app style): the main thread creates the DPA channel, doorbells
 * and MSI-X vector; the owning poll group binds the doorbells through the DPA
 * program; each round trip ends back on the main thread, which completes the
 * admin command through the core. Thread of each function in its comment. */
#include "common/evloop.h"
#include "common/log.h"
#include "controller/pcie_internal.h"
#include "dpa/nvme_dpa.h"

#include <errno.h>
#include <stdlib.h>

/* Doorbell ids with CAP.DSTRD 0: SQy tail = 2y, CQy head = 2y + 1. */
static uint32_t pcie_sq_db_id(uint16_t qid)
{
	return 2u * qid;
}

static uint32_t pcie_cq_db_id(uint16_t qid)
{
	return 2u * qid + 1;
}

/* A bind/unbind request to a channel, sent from its poll group; retried from
 * the poll group's loop while the to-DPA queue is full. */
struct pcie_bind_req {
	struct pcie_poll_group *pg;
	struct dpa_nvme_chan *chan;
	struct dpa_db *db;
	void *cookie;
	bool bind;
};

/* Poll group. */
static void pcie_bind_msg(void *arg)
{
	struct pcie_bind_req *r = arg;
	uint64_t cookie = (uint64_t)(uintptr_t)r->cookie;
	int rc = r->bind ? dpa_nvme_chan_bind_db(r->chan, r->db, cookie)
			 : dpa_nvme_chan_unbind_db(r->chan, r->db, cookie);

	if (rc == -EAGAIN && pcie_pg_send(r->pg, pcie_bind_msg, r) == 0)
		return;
	if (rc)
		LOG_ERR(PCIE_LOG, "DPA %s request failed: %d", r->bind ? "bind" : "unbind", rc);
	free(r);
}

/* Poll group. */
static void pcie_send_bind(struct pcie_poll_group *pg, struct dpa_nvme_chan *chan,
			   struct dpa_db *db, void *cookie, bool bind)
{
	struct pcie_bind_req *r = malloc(sizeof(*r));

	if (!r) {
		LOG_ERR(PCIE_LOG, "out of memory for a DPA %s request", bind ? "bind" : "unbind");
		return;
	}
	*r = (struct pcie_bind_req){ .pg = pg, .chan = chan, .db = db, .cookie = cookie,
				     .bind = bind };
	pcie_bind_msg(r);
}

struct hw_msix_vector *pcie_vector_get(struct pcie_ctrlr *pc, uint16_t vector)
{
	if (vector >= pc->num_msix)
		return NULL;
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
	if (pcq->chan)
		dpa_nvme_chan_destroy(pcq->chan);
	free(pcq);
}

/* Poll group: adopt the CQ, then bind its head doorbell. */
static void pcie_cq_attach_msg(void *arg)
{
	struct pcie_cq *pcq = arg;

	pcie_pg_cq_attach(pcq);
	pcie_send_bind(pcq->pg, pcq->chan, pcq->db, pcq, true);
}

int pcie_create_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_cq *pcq = calloc(1, sizeof(*pcq));
	uint16_t qid = ctrlr_cq_get_qid(cq);
	int rc = -ENOMEM;

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
	pcq->db = dpa_db_create(dpa_nvme_chan_db_comp(pcq->chan), pc->dev, pcie_cq_db_id(qid));
	if (!pcq->db) {
		rc = -errno;
		goto out_free;
	}
	/* Doorbells restart from 0 with every new queue (NVMe reset semantics);
	 * the DB is stopped, so this only stores. */
	hw_db_modify_value(dpa_db_hw(pcq->db), 0);
	ctrlr_cq_set_tctx(cq, pcq);
	rc = pcie_pg_send(pcq->pg, pcie_cq_attach_msg, pcq);
	if (rc)
		goto out_free;
	return 0;

out_free:
	LOG_ERR(PCIE_LOG, "%s: create CQ %u failed: %d", pc->vuid, qid, rc);
	pcie_cq_free(pcq);
	return rc < 0 ? rc : -EIO;
}

struct pcie_done_msg {
	void *q;
	int status;
};

/* Main. */
static void pcie_cq_bound_main(void *arg)
{
	struct pcie_cq *pcq = arg;
	int rc = dpa_db_start(pcq->db);

	if (rc)
		LOG_ERR(PCIE_LOG, "%s: CQ %u doorbell start failed: %d", pcq->pc->vuid,
			ctrlr_cq_get_qid(pcq->cq), rc);
	ctrlr_cq_create_done(pcq->cq, 0);
}

/* Poll group: the DPA bound the CQ head doorbell. A failed bind leaves the
 * CQ attached with no doorbell; the queue still works for SQ completions,
 * so report the failure and go on. */
void pcie_cq_bound(struct pcie_cq *pcq, int status)
{
	if (status)
		LOG_ERR(PCIE_LOG, "%s: CQ %u doorbell bind failed: %d", pcq->pc->vuid,
			ctrlr_cq_get_qid(pcq->cq), status);
	evloop_send_msg(pcq->pc->loop, pcie_cq_bound_main, pcq);
}

/* Main: the last step of a CQ deletion. */
static void pcie_cq_unbound_main(void *arg)
{
	struct pcie_cq *pcq = arg;
	struct ctrlr_cq *cq = pcq->cq;

	pcie_cq_free(pcq);
	ctrlr_cq_delete_done(cq);
}

/* Poll group: the CQ doorbell is unbound, its channel has nothing more. */
void pcie_cq_unbound(struct pcie_cq *pcq)
{
	pcie_pg_cq_detach(pcq);
	evloop_send_msg(pcq->pc->loop, pcie_cq_unbound_main, pcq);
}

static void pcie_cq_unbind_msg(void *arg)
{
	struct pcie_cq *pcq = arg;

	pcie_send_bind(pcq->pg, pcq->chan, pcq->db, pcq, false);
}

int pcie_delete_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(cq);

	dpa_db_stop(pcq->db);
	return pcie_pg_send(pcq->pg, pcie_cq_unbind_msg, pcq);
}

/* ---- Create / delete SQ ---- */

static void pcie_sq_attach_msg(void *arg)
{
	struct pcie_sq *psq = arg;
	struct pcie_cq *pcq = psq->pcq;

	psq->next = pcq->sqs;
	pcq->sqs = psq;
	atomic_fetch_add(&pcq->pg->nr_sqs, 1);
	pcie_send_bind(pcq->pg, pcq->chan, psq->db, psq, true);
}

int pcie_create_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_cq *pcq = ctrlr_cq_get_tctx(ctrlr_sq_get_cq(sq));
	struct pcie_sq *psq;
	uint16_t qid = ctrlr_sq_get_qid(sq);
	int rc;

	if (!pcq)
		return -EINVAL;
	psq = calloc(1, sizeof(*psq));
	if (!psq)
		return -ENOMEM;
	psq->kind = PCIE_Q_SQ;
	psq->pc = pc;
	psq->sq = sq;
	psq->pcq = pcq;
	psq->db = dpa_db_create(dpa_nvme_chan_db_comp(pcq->chan), pc->dev, pcie_sq_db_id(qid));
	if (!psq->db) {
		rc = -errno;
		goto out_free;
	}
	hw_db_modify_value(dpa_db_hw(psq->db), 0);
	ctrlr_sq_set_tctx(sq, psq);
	rc = pcie_pg_send(pcq->pg, pcie_sq_attach_msg, psq);
	if (rc)
		goto out_destroy_db;
	return 0;

out_destroy_db:
	dpa_db_destroy(psq->db);
out_free:
	LOG_ERR(PCIE_LOG, "%s: create SQ %u failed: %d", pc->vuid, qid, rc);
	free(psq);
	return rc < 0 ? rc : -EIO;
}

/* Main: the SQ is live in the core before its doorbell starts, so the first
 * DB_VALUE (start produces one with the current tail) finds it ready. */
static void pcie_sq_bound_main(void *arg)
{
	struct pcie_sq *psq = arg;
	int rc;

	ctrlr_sq_create_done(psq->sq, 0);
	rc = dpa_db_start(psq->db);
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: SQ %u doorbell start failed: %d", psq->pc->vuid,
			ctrlr_sq_get_qid(psq->sq), rc);
}

void pcie_sq_bound(struct pcie_sq *psq, int status)
{
	if (status)
		LOG_ERR(PCIE_LOG, "%s: SQ %u doorbell bind failed: %d", psq->pc->vuid,
			ctrlr_sq_get_qid(psq->sq), status);
	evloop_send_msg(psq->pc->loop, pcie_sq_bound_main, psq);
}

static void pcie_sq_unbound_main(void *arg)
{
	struct pcie_sq *psq = arg;
	struct ctrlr_sq *sq = psq->sq;

	dpa_db_destroy(psq->db);
	free(psq);
	ctrlr_sq_delete_done(sq);
}

/* Poll group: UNBIND_DONE; every DB_VALUE of the SQ came before it. */
void pcie_sq_unbound(struct pcie_sq *psq)
{
	evloop_send_msg(psq->pc->loop, pcie_sq_unbound_main, psq);
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
	pcie_send_bind(pcq->pg, pcq->chan, psq->db, psq, false);
}

static void pcie_sq_stop_msg(void *arg)
{
	struct pcie_sq *psq = arg;

	psq->stopped = true;
	ctrlr_sq_stop(psq->sq, pcie_sq_drained, psq);
}

int pcie_delete_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct pcie_sq *psq = ctrlr_sq_get_tctx(sq);

	dpa_db_stop(psq->db);
	return pcie_pg_send(psq->pcq->pg, pcie_sq_stop_msg, psq);
}

/* ---- Interrupts ---- */

/* Owner thread of the CQ using `vector`. Poll groups ask the CQ's DPA thread
 * to raise it (DOCA's flow); the admin queue, on the main thread, raises
 * directly. */
void pcie_raise_irq(void *tctx, uint16_t vector)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_poll_group *pg = pcie_current_pg;
	struct hw_msix_vector *vec;

	if (!pg) {
		vec = pcie_vector_get(pc, vector);
		if (vec)
			hw_msix_vector_raise(vec);
		return;
	}
	for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next) {
		if (pcq->pc != pc || !pcq->vec || ctrlr_cq_get_vector(pcq->cq) != vector)
			continue;
		atomic_fetch_add_explicit(&pg->irqs, 1, memory_order_relaxed);
		if (dpa_nvme_chan_raise_msix(pcq->chan, pcq->vec))
			hw_msix_vector_raise(pcq->vec); /* queue full: raise it ourselves */
		return;
	}
}
