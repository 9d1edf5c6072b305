/* host/nvme_host.c - the host driver's controller side, independent of the transport: register
 * helpers, enable/disable/shutdown (NVMe Base 2.0 section 3.5), guest memory allocation, waiting
 * for a completion, and the admin commands the tests and the perf tool need. */
#include "host/nvme_host.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static uint64_t nvme_host_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int nvme_host_init_ops(struct nvme_host *h, const struct nvme_host_ops *ops, void *tctx,
		       uint64_t ram_iova, uint64_t ram_size)
{
	memset(h, 0, sizeof(*h));
	h->ops = ops;
	h->tctx = tctx;
	h->ram_iova = ram_iova;
	h->ram_size = ram_size;
	h->brk = ram_iova;
	h->timeout_ms = 5000;
	h->cap = nvme_host_reg_read64(h, NVME_REG_CAP);
	if (h->cap == UINT64_MAX)
		return -EIO;
	h->dstrd = (uint32_t)(h->cap >> 32) & 0xf;
	return 0;
}

uint32_t nvme_host_reg_read32(struct nvme_host *h, uint32_t off)
{
	uint32_t v;

	if (h->ops->reg_read(h, off, &v, 4))
		return 0xffffffff;
	return v;
}

uint64_t nvme_host_reg_read64(struct nvme_host *h, uint32_t off)
{
	return nvme_host_reg_read32(h, off) | (uint64_t)nvme_host_reg_read32(h, off + 4) << 32;
}

int nvme_host_reg_write32(struct nvme_host *h, uint32_t off, uint32_t v)
{
	return h->ops->reg_write(h, off, &v, 4);
}

int nvme_host_reg_write64(struct nvme_host *h, uint32_t off, uint64_t v)
{
	return h->ops->reg_write(h, off, &v, 8);
}

void *nvme_host_ptr(struct nvme_host *h, uint64_t iova, uint64_t len)
{
	return h->ops->mem_ptr(h, iova, len);
}

uint64_t nvme_host_alloc(struct nvme_host *h, uint64_t len, void **ptr)
{
	uint64_t iova = h->brk;

	*ptr = NULL;
	len = (len + NVME_HOST_PAGE - 1) & ~(uint64_t)(NVME_HOST_PAGE - 1);
	if (len > h->ram_size || iova - h->ram_iova > h->ram_size - len)
		return 0;
	*ptr = nvme_host_ptr(h, iova, len);
	if (!*ptr)
		return 0;
	h->brk += len;
	memset(*ptr, 0, len);
	return iova;
}

/* Waits until (CSTS & mask) == want; CFS or all-ones end it with -EIO. */
static int nvme_host_wait_csts(struct nvme_host *h, uint32_t mask, uint32_t want)
{
	uint64_t deadline = nvme_host_now_ms() + (uint64_t)h->timeout_ms;

	for (;;) {
		uint32_t csts = nvme_host_reg_read32(h, NVME_REG_CSTS);

		if (csts == 0xffffffff)
			return -EIO;
		if ((csts & mask) == want)
			return 0;
		if (csts & 0x2) /* CFS */
			return -EIO;
		if (nvme_host_now_ms() >= deadline || h->ops->wait(h, NULL, 1) < 0)
			return -ETIMEDOUT;
	}
}

static void nvme_host_forget_queues(struct nvme_host *h)
{
	for (unsigned int i = 1; i < NVME_HOST_MAX_QUEUES; i++) {
		struct nvme_host_queue *q = &h->q[i];

		q->live = false;
		q->sdb_sq = q->sdb_cq = q->ei_sq = q->ei_cq = NULL;
	}
	/* A controller reset forgets the Doorbell Buffer Config (section 5.8). */
	h->dbbuf = false;
}

int nvme_host_disable(struct nvme_host *h)
{
	uint32_t cc = nvme_host_reg_read32(h, NVME_REG_CC);
	int rc = nvme_host_reg_write32(h, NVME_REG_CC, cc & ~1u);

	nvme_host_forget_queues(h);
	return rc ? rc : nvme_host_wait_csts(h, 1, 0);
}

/* Rings of `entries` for q, reallocated only when they grow. Rings a caller placed itself
 * (sq/cq set, *_alloc 0) count as holding `depth` / `cq_depth` entries. */
static int nvme_host_queue_rings(struct nvme_host *h, struct nvme_host_queue *q,
				 uint32_t sq_entries, uint32_t cq_entries)
{
	uint32_t sq_cap = q->sq_alloc ? q->sq_alloc : q->depth;
	uint32_t cq_cap = q->cq_alloc ? q->cq_alloc : (q->cq_depth ? q->cq_depth : q->depth);
	void *sq, *cq;

	if (!q->sq || sq_cap < sq_entries) {
		q->sq_iova = nvme_host_alloc(h, (uint64_t)sq_entries * sizeof(struct nvme_sqe), &sq);
		if (!q->sq_iova)
			return -ENOMEM;
		q->sq = sq;
		q->sq_alloc = sq_entries;
	}
	if (!q->cq || cq_cap < cq_entries) {
		q->cq_iova = nvme_host_alloc(h, (uint64_t)cq_entries * sizeof(struct nvme_cqe), &cq);
		if (!q->cq_iova)
			return -ENOMEM;
		q->cq = cq;
		q->cq_alloc = cq_entries;
	}
	memset(q->cq, 0, (size_t)cq_entries * sizeof(struct nvme_cqe));
	q->depth = (uint16_t)sq_entries;
	q->cq_depth = (uint16_t)cq_entries;
	q->sq_tail = q->cq_head = q->sq_head = 0;
	q->cq_phase = 1;
	return 0;
}

int nvme_host_enable(struct nvme_host *h, uint16_t depth)
{
	return nvme_host_enable_css(h, depth, 0);
}

int nvme_host_enable_css(struct nvme_host *h, uint16_t depth, uint8_t css)
{
	struct nvme_host_queue *q = &h->q[0];
	union nvme_cc cc = {.raw = 0};
	int rc;

	if (depth < 2 || depth > 4096)
		return -EINVAL;
	rc = nvme_host_disable(h);
	if (rc)
		return rc;
	rc = nvme_host_queue_rings(h, q, depth, depth);
	if (rc)
		return rc;
	q->qid = 0;
	q->irq = false;
	q->live = true;
	rc = nvme_host_reg_write32(h, NVME_REG_AQA, (uint32_t)(depth - 1) << 16 | (depth - 1u));
	rc = rc ?: nvme_host_reg_write32(h, NVME_REG_ASQ, (uint32_t)q->sq_iova);
	rc = rc ?: nvme_host_reg_write32(h, NVME_REG_ASQ + 4, (uint32_t)(q->sq_iova >> 32));
	rc = rc ?: nvme_host_reg_write32(h, NVME_REG_ACQ, (uint32_t)q->cq_iova);
	rc = rc ?: nvme_host_reg_write32(h, NVME_REG_ACQ + 4, (uint32_t)(q->cq_iova >> 32));
	/* IOCQES 4 (16 bytes), IOSQES 6 (64 bytes), MPS 0 (4 KiB), CSS, EN. */
	cc.bits.en = 1;
	cc.bits.css = css & 7;
	cc.bits.iosqes = 6;
	cc.bits.iocqes = 4;
	rc = rc ?: nvme_host_reg_write32(h, NVME_REG_CC, cc.raw);
	return rc ?: nvme_host_wait_csts(h, 1, 1);
}

int nvme_host_shutdown(struct nvme_host *h)
{
	uint32_t cc = nvme_host_reg_read32(h, NVME_REG_CC);
	int rc = nvme_host_reg_write32(h, NVME_REG_CC, (cc & ~(3u << 14)) | 1u << 14);

	return rc ? rc : nvme_host_wait_csts(h, 3u << 2, 2u << 2);
}

int nvme_host_cmd(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, struct nvme_cqe *out)
{
	uint64_t deadline = nvme_host_now_ms() + (uint64_t)h->timeout_ms;
	struct nvme_cqe cqe;
	int cid = nvme_host_submit(h, qid, sqe, false);

	if (cid < 0)
		return cid;
	for (;;) {
		int rc = nvme_host_reap(h, qid, &cqe);

		if (rc < 0)
			return rc;
		if (rc == 1) {
			if (cqe.cid != cid)
				continue; /* an earlier command's completion: skip */
			if (out)
				*out = cqe;
			return cqe.status >> 1;
		}
		if (nvme_host_now_ms() >= deadline || h->ops->wait(h, &h->q[qid], 5) < 0)
			return -ETIMEDOUT;
	}
}

int nvme_host_identify(struct nvme_host *h, uint8_t cns, uint32_t nsid, void *buf4k)
{
	struct nvme_sqe sqe = {0};
	uint64_t brk = h->brk;
	void *buf;
	uint64_t iova = nvme_host_alloc(h, 4096, &buf);
	int st;

	if (!iova)
		return -ENOMEM;
	sqe.cdw0.bits.opc = NVME_ADM_IDENTIFY;
	sqe.nsid = nsid;
	sqe.dptr.prp.prp1 = iova;
	sqe.cdw10 = cns;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st == 0 && buf4k)
		memcpy(buf4k, buf, 4096);
	h->brk = brk; /* the last allocation: give it back */
	return st;
}

int nvme_host_set_num_queues(struct nvme_host *h, uint16_t nsq, uint16_t ncq, uint32_t *dw0)
{
	struct nvme_sqe sqe = {0};
	struct nvme_cqe cqe;
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = 0x07; /* Number of Queues */
	sqe.cdw11 = (uint32_t)(ncq - 1) << 16 | (uint16_t)(nsq - 1);
	st = nvme_host_cmd(h, 0, &sqe, &cqe);
	if (st == 0 && dw0)
		*dw0 = cqe.dw0;
	return st;
}

/* Points q at its slots of the shadow doorbell and event index pages (index 2*qid for the SQ
 * tail, 2*qid+1 for the CQ head, stride 4 << CAP.DSTRD like the doorbells). */
static void nvme_host_dbbuf_attach(struct nvme_host *h, struct nvme_host_queue *q)
{
	uint32_t stride = 1u << h->dstrd; /* in dwords */
	uint32_t sq = 2u * q->qid * stride, cq = (2u * q->qid + 1) * stride;

	if (!h->dbbuf_page || q->qid == 0 || (cq + 1) * 4 > NVME_HOST_PAGE)
		return;
	/* The host owns the shadow doorbells: they hold the queue's current tail and head
	 * before the controller reads them. */
	h->dbbuf_page[sq] = q->sq_tail;
	h->dbbuf_page[cq] = q->cq_head;
	if (!h->dbbuf)
		return;
	q->sdb_sq = &h->dbbuf_page[sq];
	q->sdb_cq = &h->dbbuf_page[cq];
	q->ei_sq = &h->eventidx_page[sq];
	q->ei_cq = &h->eventidx_page[cq];
}

int nvme_host_create_io_queues2(struct nvme_host *h, uint16_t qid, uint16_t sq_depth,
				uint16_t cq_depth, bool irq, uint16_t vector)
{
	struct nvme_host_queue *q;
	struct nvme_sqe sqe = {0};
	int st;

	if (qid == 0 || qid >= NVME_HOST_MAX_QUEUES || sq_depth < 2 || cq_depth < 2)
		return -EINVAL;
	q = &h->q[qid];
	q->live = false;
	q->sdb_sq = q->sdb_cq = q->ei_sq = q->ei_cq = NULL;
	st = nvme_host_queue_rings(h, q, sq_depth, cq_depth);
	if (st)
		return st;
	q->qid = qid;
	q->irq = irq;
	q->cq_vector = vector;
	/* Shadow doorbells at 0 before the controller can look at them. */
	nvme_host_dbbuf_attach(h, q);
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_CQ;
	sqe.dptr.prp.prp1 = q->cq_iova;
	sqe.cdw10 = (uint32_t)(cq_depth - 1) << 16 | qid;
	sqe.cdw11 = (uint32_t)vector << 16 | (irq ? NVME_CQ_IEN : 0u) | NVME_QUEUE_PC;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st) {
		q->sdb_sq = q->sdb_cq = q->ei_sq = q->ei_cq = NULL;
		return st;
	}
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_SQ;
	sqe.dptr.prp.prp1 = q->sq_iova;
	sqe.cdw10 = (uint32_t)(sq_depth - 1) << 16 | qid;
	sqe.cdw11 = (uint32_t)qid << 16 | NVME_QUEUE_PC; /* CQID, PC */
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st == 0)
		q->live = true;
	else
		q->sdb_sq = q->sdb_cq = q->ei_sq = q->ei_cq = NULL;
	return st;
}

int nvme_host_create_io_queues(struct nvme_host *h, uint16_t qid, uint16_t depth, bool irq,
			       uint16_t vector)
{
	return nvme_host_create_io_queues2(h, qid, depth, depth, irq, vector);
}

int nvme_host_delete_io_queues(struct nvme_host *h, uint16_t qid)
{
	struct nvme_sqe sqe = {0};
	int st;

	if (qid == 0 || qid >= NVME_HOST_MAX_QUEUES)
		return -EINVAL;
	sqe.cdw0.bits.opc = NVME_ADM_DELETE_SQ;
	sqe.cdw10 = qid;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st)
		return st;
	h->q[qid].live = false;
	h->q[qid].sdb_sq = h->q[qid].sdb_cq = h->q[qid].ei_sq = h->q[qid].ei_cq = NULL;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_DELETE_CQ;
	sqe.cdw10 = qid;
	return nvme_host_cmd(h, 0, &sqe, NULL);
}

int nvme_host_dbbuf_enable(struct nvme_host *h)
{
	struct nvme_sqe sqe = {0};
	void *db, *ei;
	int st;

	if (!h->dbbuf_iova) {
		h->dbbuf_iova = nvme_host_alloc(h, NVME_HOST_PAGE, &db);
		h->eventidx_iova = nvme_host_alloc(h, NVME_HOST_PAGE, &ei);
		if (!h->dbbuf_iova || !h->eventidx_iova)
			return -ENOMEM;
		h->dbbuf_page = db;
		h->eventidx_page = ei;
	}
	/* Seed the live queues' shadow doorbells first: the controller takes them as the
	 * doorbells from the moment it accepts the command. */
	h->dbbuf = false;
	for (unsigned int i = 1; i < NVME_HOST_MAX_QUEUES; i++)
		if (h->q[i].live)
			nvme_host_dbbuf_attach(h, &h->q[i]);
	sqe.cdw0.bits.opc = NVME_ADM_DBBUF;
	sqe.dptr.prp.prp1 = h->dbbuf_iova;
	sqe.dptr.prp.prp2 = h->eventidx_iova;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st)
		return st;
	h->dbbuf = true;
	for (unsigned int i = 1; i < NVME_HOST_MAX_QUEUES; i++)
		if (h->q[i].live)
			nvme_host_dbbuf_attach(h, &h->q[i]);
	return 0;
}

int nvme_host_rw(struct nvme_host *h, uint16_t qid, uint8_t opc, uint32_t nsid, uint64_t slba,
		 uint32_t nlb, uint64_t iova, uint32_t len)
{
	struct nvme_sqe sqe;
	uint64_t brk = h->brk;
	int st;

	nvme_host_rw_sqe(&sqe, opc, nsid, slba, nlb);
	st = nvme_host_build_prps(h, &sqe, iova, len);
	if (st)
		return st;
	st = nvme_host_cmd(h, qid, &sqe, NULL);
	h->brk = brk; /* free the PRP list page */
	return st;
}
