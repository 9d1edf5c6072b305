/* host/nvme_qpair.c - the host driver's queue pairs, independent of the transport: SQE put at the
 * tail, CQE take by phase tag, doorbells plain or shadowed with event indices, data pointers. */
#include "host/nvme_host.h"

#include <errno.h>
#include <string.h>

int nvme_host_ring(struct nvme_host *h, uint32_t idx, uint32_t value)
{
	return h->ops->ring(h, idx, value);
}

int nvme_host_db_flush(struct nvme_host *h)
{
	if (!h->db_npend)
		return 0;
	return h->ops->flush ? h->ops->flush(h) : -EOPNOTSUPP;
}

int nvme_host_db_coalesce(struct nvme_host *h, bool on)
{
	int rc;

	if (!on) {
		rc = nvme_host_db_flush(h);
		h->db_coalesce = false;
		return rc;
	}
	if (!h->ops->coalesce_ok || !h->ops->flush)
		return -EOPNOTSUPP;
	rc = h->ops->coalesce_ok(h);
	if (!rc)
		h->db_coalesce = true;
	return rc;
}

/* NVMe Base 2.0 section 5.8 (Doorbell Buffer Config): the host writes the shadow doorbell and
 * rings the real one only when the controller's event index lies in (old, new], i.e.
 * (u16)(new - event_idx - 1) < (u16)(new - old). */
static bool nvme_qpair_need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old);
}

static int nvme_qpair_doorbell(struct nvme_host *h, struct nvme_host_queue *q, uint32_t idx,
			       volatile uint32_t *sdb, volatile uint32_t *ei, uint16_t value)
{
	if (sdb) {
		uint16_t old = (uint16_t)*sdb;

		/* The SQEs (or the CQ slots we consumed) before the shadow value; pairs with the
		 * controller's read barrier after it reads the shadow doorbell. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		*sdb = value;
		/* Full barrier: the shadow store before the event index load; the controller
		 * writes the event index and then re-reads the shadow doorbell, so one of the two
		 * sides always sees the other (SPDK's and Linux's pairing). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!nvme_qpair_need_event((uint16_t)*ei, value, old)) {
			q->rings_skipped++;
			return 0;
		}
	}
	q->rings++;
	return h->ops->ring(h, idx, value);
}

int nvme_host_sq_put(struct nvme_host *h, uint16_t qid, const struct nvme_sqe *sqe)
{
	struct nvme_host_queue *q = &h->q[qid];
	uint16_t next;

	if (qid >= NVME_HOST_MAX_QUEUES || !q->live)
		return -ENOENT;
	next = (uint16_t)((q->sq_tail + 1u) % q->depth);
	if (next == q->sq_head)
		return -EBUSY;
	q->sq[q->sq_tail] = *sqe;
	q->sq_tail = next;
	return 0;
}

int nvme_host_sq_ring(struct nvme_host *h, uint16_t qid)
{
	struct nvme_host_queue *q = &h->q[qid];

	return nvme_qpair_doorbell(h, q, 2u * qid, q->sdb_sq, q->ei_sq, q->sq_tail);
}

static uint16_t nvme_qpair_cq_depth(const struct nvme_host_queue *q)
{
	return q->cq_depth ? q->cq_depth : q->depth;
}

int nvme_host_cq_take(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe)
{
	struct nvme_host_queue *q = &h->q[qid];
	volatile struct nvme_cqe *e;

	if (!q->cq)
		return 0;
	e = &q->cq[q->cq_head];
	if ((e->status & 1) != q->cq_phase)
		return 0;
	/* Pairs with the controller's write barrier before the phase flip: the rest of the
	 * entry is read after the phase tag. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*cqe = *(const struct nvme_cqe *)e;
	if (cqe->sqid == qid && cqe->sqhd < q->depth)
		q->sq_head = cqe->sqhd;
	if (++q->cq_head == nvme_qpair_cq_depth(q)) {
		q->cq_head = 0;
		q->cq_phase ^= 1;
	}
	return 1;
}

int nvme_host_cq_ring(struct nvme_host *h, uint16_t qid)
{
	struct nvme_host_queue *q = &h->q[qid];

	return nvme_qpair_doorbell(h, q, 2u * qid + 1, q->sdb_cq, q->ei_cq, q->cq_head);
}

int nvme_host_submit(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, bool no_ring)
{
	struct nvme_host_queue *q;
	uint16_t cid;
	int rc;

	if (qid >= NVME_HOST_MAX_QUEUES)
		return -ENOENT;
	q = &h->q[qid];
	cid = q->cid;
	sqe->cdw0.bits.cid = cid;
	rc = nvme_host_sq_put(h, qid, sqe);
	if (rc)
		return rc;
	q->cid++;
	if (!no_ring) {
		rc = nvme_host_sq_ring(h, qid);
		if (rc)
			return rc;
	}
	return cid;
}

int nvme_host_reap(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe)
{
	int rc = nvme_host_cq_take(h, qid, cqe);

	if (rc <= 0)
		return rc;
	return nvme_host_cq_ring(h, qid) ?: 1;
}

void nvme_host_rw_sqe(struct nvme_sqe *sqe, uint8_t opc, uint32_t nsid, uint64_t slba,
		      uint32_t nlb)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->cdw0.bits.opc = opc;
	sqe->nsid = nsid;
	sqe->cdw10 = (uint32_t)slba;
	sqe->cdw11 = (uint32_t)(slba >> 32);
	sqe->cdw12 = nlb - 1;
}

int nvme_host_build_prps_list(struct nvme_sqe *sqe, uint64_t iova, uint32_t len, uint64_t *list,
			      uint64_t list_iova)
{
	uint64_t first = NVME_HOST_PAGE - (iova & (NVME_HOST_PAGE - 1));
	uint32_t n = 0;

	sqe->cdw0.bits.psdt = NVME_PSDT_PRP;
	sqe->dptr.prp.prp1 = iova;
	sqe->dptr.prp.prp2 = 0;
	if (len <= first)
		return 0;
	if (len <= first + NVME_HOST_PAGE) {
		sqe->dptr.prp.prp2 = iova + first;
		return 0;
	}
	/* PRP2 points to a list of the remaining pages (NVMe Base 2.0 section 4.1.1); one list
	 * page, no chaining: longer transfers than it covers are refused. */
	if ((len - first + NVME_HOST_PAGE - 1) / NVME_HOST_PAGE > NVME_HOST_PRP_LIST_ENTRIES)
		return -E2BIG;
	for (uint64_t p = iova + first; p < iova + len; p += NVME_HOST_PAGE)
		list[n++] = p;
	sqe->dptr.prp.prp2 = list_iova;
	return 0;
}

int nvme_host_build_prps(struct nvme_host *h, struct nvme_sqe *sqe, uint64_t iova, uint32_t len)
{
	uint64_t first = NVME_HOST_PAGE - (iova & (NVME_HOST_PAGE - 1));
	uint64_t list_iova = 0;
	void *list = NULL;

	if (len > first + NVME_HOST_PAGE) {
		list_iova = nvme_host_alloc(h, NVME_HOST_PAGE, &list);
		if (!list_iova)
			return -ENOMEM;
	}
	return nvme_host_build_prps_list(sqe, iova, len, list, list_iova);
}

void nvme_host_build_sgl(struct nvme_sqe *sqe, uint64_t iova, uint32_t len)
{
	/* PSDT 01: SGL, MPTR a single address; SGL1 a Data Block descriptor (section 4.1.2). */
	sqe->cdw0.bits.psdt = NVME_PSDT_SGL_MPTR_CONTIG;
	memset(&sqe->dptr, 0, sizeof(sqe->dptr));
	sqe->dptr.sgl.addr = iova;
	sqe->dptr.sgl.length = len;
	sqe->dptr.sgl.type = NVME_SGL_TYPE_DATA_BLOCK << 4 | NVME_SGL_SUBTYPE_ADDRESS;
}
