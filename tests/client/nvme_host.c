/* tests/client/nvme_host.c - a minimal NVMe host driver over the vfio-user
 * test client (see nvme_host.h). */
#include "tests/client/nvme_host.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define NVME_HOST_BAR0 0
#define NVME_HOST_CFG 7

static uint64_t nvme_host_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint32_t nvme_host_reg_read32(struct nvme_host *h, uint32_t off)
{
	uint32_t v = 0xffffffff;

	if (vfu_client_region_read(h->c, NVME_HOST_BAR0, off, &v, 4))
		return 0xffffffff;
	return v;
}

int nvme_host_reg_write32(struct nvme_host *h, uint32_t off, uint32_t v)
{
	return vfu_client_region_write(h->c, NVME_HOST_BAR0, off, &v, 4, h->posted);
}

static uint64_t nvme_host_reg_read64(struct nvme_host *h, uint32_t off)
{
	return nvme_host_reg_read32(h, off) | (uint64_t)nvme_host_reg_read32(h, off + 4) << 32;
}

int nvme_host_init(struct nvme_host *h, struct vfu_client *c, uint64_t ram_iova,
		   uint64_t ram_size, uint32_t vectors)
{
	struct vfu_client_region bar0;
	uint16_t cmd = 0x6; /* MEM | BUS MASTER */
	int rc;

	memset(h, 0, sizeof(*h));
	h->c = c;
	h->ram_iova = ram_iova;
	h->ram_size = ram_size;
	h->brk = ram_iova;
	h->timeout_ms = 5000;
	rc = vfu_client_region_info(c, NVME_HOST_BAR0, &bar0);
	if (rc)
		return rc;
	h->db_page = vfu_client_region_ptr(c, NVME_HOST_BAR0, 0x1000, 0x1000);
	rc = vfu_client_region_write(c, NVME_HOST_CFG, 0x4, &cmd, 2, false);
	if (rc)
		return rc;
	if (vectors) {
		uint16_t msix_ctl;

		/* MSI-X cap: find it through the capability list. */
		uint8_t ptr = 0;

		rc = vfu_client_region_read(c, NVME_HOST_CFG, 0x34, &ptr, 1);
		while (!rc && ptr) {
			uint8_t id[2];

			rc = vfu_client_region_read(c, NVME_HOST_CFG, ptr, id, 2);
			if (rc || id[0] == 0x11)
				break;
			ptr = id[1];
		}
		if (rc || !ptr)
			return rc ? rc : -ENODEV;
		msix_ctl = 0x8000; /* enable */
		rc = vfu_client_region_write(c, NVME_HOST_CFG, ptr + 2u, &msix_ctl, 2, false);
		if (!rc)
			rc = vfu_client_irq_eventfds(c, 2 /* MSI-X */, 0, vectors);
		if (rc)
			return rc;
	}
	h->cap = nvme_host_reg_read64(h, 0x0);
	h->dstrd = (uint32_t)(h->cap >> 32) & 0xf;
	return 0;
}

uint64_t nvme_host_alloc(struct nvme_host *h, uint64_t len, void **ptr)
{
	uint64_t iova = h->brk;

	len = (len + NVME_HOST_PAGE - 1) & ~(uint64_t)(NVME_HOST_PAGE - 1);
	if (iova + len > h->ram_iova + h->ram_size)
		return 0;
	h->brk += len;
	*ptr = vfu_client_ram_ptr(h->c, iova, len);
	if (!*ptr)
		return 0;
	memset(*ptr, 0, len);
	return iova;
}

static int nvme_host_wait_csts(struct nvme_host *h, uint32_t mask, uint32_t want)
{
	uint64_t deadline = nvme_host_now_ms() + (uint64_t)h->timeout_ms;

	do {
		uint32_t csts = nvme_host_reg_read32(h, 0x1c);

		if (csts == 0xffffffff)
			return -EIO;
		if ((csts & mask) == want)
			return 0;
		if (csts & 0x2) /* CFS */
			return -EIO;
		vfu_client_serve(h->c, 1);
	} while (nvme_host_now_ms() < deadline);
	return -ETIMEDOUT;
}

int nvme_host_disable(struct nvme_host *h)
{
	uint32_t cc = nvme_host_reg_read32(h, 0x14);
	int rc = nvme_host_reg_write32(h, 0x14, cc & ~1u);

	for (unsigned int i = 1; i < NVME_HOST_MAX_QUEUES; i++)
		h->q[i].live = false;
	return rc ? rc : nvme_host_wait_csts(h, 1, 0);
}

int nvme_host_enable(struct nvme_host *h, uint16_t depth)
{
	struct nvme_host_queue *q = &h->q[0];
	void *sq, *cq;
	int rc;

	rc = nvme_host_disable(h);
	if (rc)
		return rc;
	if (!q->sq_iova) {
		q->sq_iova = nvme_host_alloc(h, (uint64_t)depth * 64, &sq);
		q->cq_iova = nvme_host_alloc(h, (uint64_t)depth * 16, &cq);
		if (!q->sq_iova || !q->cq_iova)
			return -ENOMEM;
		q->sq = sq;
		q->cq = cq;
	}
	memset(q->cq, 0, (size_t)depth * 16);
	q->qid = 0;
	q->depth = depth;
	q->sq_tail = q->cq_head = q->sq_head = 0;
	q->cq_phase = 1;
	q->irq = false;
	q->live = true;
	rc = nvme_host_reg_write32(h, 0x24, (uint32_t)(depth - 1) << 16 | (depth - 1u));
	rc = rc ? rc : nvme_host_reg_write32(h, 0x28, (uint32_t)q->sq_iova);
	rc = rc ? rc : nvme_host_reg_write32(h, 0x2c, (uint32_t)(q->sq_iova >> 32));
	rc = rc ? rc : nvme_host_reg_write32(h, 0x30, (uint32_t)q->cq_iova);
	rc = rc ? rc : nvme_host_reg_write32(h, 0x34, (uint32_t)(q->cq_iova >> 32));
	/* IOCQES 4, IOSQES 6, MPS 0 (4 KiB), CSS NVM, EN. */
	rc = rc ? rc : nvme_host_reg_write32(h, 0x14, 4u << 20 | 6u << 16 | 1u);
	return rc ? rc : nvme_host_wait_csts(h, 1, 1);
}

int nvme_host_shutdown(struct nvme_host *h)
{
	uint32_t cc = nvme_host_reg_read32(h, 0x14);
	int rc = nvme_host_reg_write32(h, 0x14, (cc & ~(3u << 14)) | 1u << 14);

	return rc ? rc : nvme_host_wait_csts(h, 3u << 2, 2u << 2);
}

int nvme_host_ring(struct nvme_host *h, uint32_t idx, uint32_t value)
{
	uint32_t off = 0x1000 + idx * (4u << h->dstrd);

	if (h->db_page) {
		/* Pairs with the controller's read barrier after the doorbell:
		 * the SQE stores are visible before the tail. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		h->db_page[(off - 0x1000) / 4] = value;
		return 0;
	}
	return vfu_client_region_write(h->c, NVME_HOST_BAR0, off, &value, 4, h->posted);
}

int nvme_host_submit(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, bool no_ring)
{
	struct nvme_host_queue *q = &h->q[qid];
	uint16_t next = (uint16_t)((q->sq_tail + 1) % q->depth);
	uint16_t cid;

	if (!q->live)
		return -ENOENT;
	if (next == q->sq_head)
		return -EBUSY;
	cid = q->cid++;
	sqe->cdw0.bits.cid = cid;
	q->sq[q->sq_tail] = *sqe;
	q->sq_tail = next;
	if (!no_ring) {
		int rc = nvme_host_ring(h, 2u * qid, q->sq_tail);

		if (rc)
			return rc;
	}
	return cid;
}

int nvme_host_reap(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe)
{
	struct nvme_host_queue *q = &h->q[qid];
	volatile struct nvme_cqe *e = &q->cq[q->cq_head];

	if ((e->status & 1) != q->cq_phase)
		return 0;
	/* Pairs with the controller's write barrier before the phase flip. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*cqe = *(struct nvme_cqe *)e;
	if (cqe->sqid == qid && cqe->sqhd < q->depth)
		q->sq_head = cqe->sqhd;
	if (++q->cq_head == q->depth) {
		q->cq_head = 0;
		q->cq_phase ^= 1;
	}
	return nvme_host_ring(h, 2u * qid + 1, q->cq_head) ?: 1;
}

int nvme_host_cmd(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, struct nvme_cqe *out)
{
	struct nvme_host_queue *q = &h->q[qid];
	uint64_t deadline = nvme_host_now_ms() + (uint64_t)h->timeout_ms;
	struct nvme_cqe cqe;
	int cid = nvme_host_submit(h, qid, sqe, false);

	if (cid < 0)
		return cid;
	do {
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
		if (q->irq && vfu_client_irq_fd(h->c, 2, q->cq_vector) >= 0)
			vfu_client_irq_wait(h->c, 2, q->cq_vector, 5);
		else
			vfu_client_serve(h->c, 1);
	} while (nvme_host_now_ms() < deadline);
	return -ETIMEDOUT;
}

int nvme_host_identify(struct nvme_host *h, uint8_t cns, uint32_t nsid, void *buf4k)
{
	struct nvme_sqe sqe = { 0 };
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
	h->brk -= 4096; /* the last allocation: give it back */
	return st;
}

int nvme_host_set_num_queues(struct nvme_host *h, uint16_t nsq, uint16_t ncq, uint32_t *dw0)
{
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe;
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = 0x07;
	sqe.cdw11 = (uint32_t)(ncq - 1) << 16 | (uint16_t)(nsq - 1);
	st = nvme_host_cmd(h, 0, &sqe, &cqe);
	if (st == 0 && dw0)
		*dw0 = cqe.dw0;
	return st;
}

int nvme_host_create_io_queues(struct nvme_host *h, uint16_t qid, uint16_t depth, bool irq,
			       uint16_t vector)
{
	struct nvme_host_queue *q = &h->q[qid];
	struct nvme_sqe sqe = { 0 };
	void *sq, *cq;
	int st;

	if (qid == 0 || qid >= NVME_HOST_MAX_QUEUES)
		return -EINVAL;
	if (!q->sq_iova || q->depth < depth) {
		q->sq_iova = nvme_host_alloc(h, (uint64_t)depth * 64, &sq);
		q->cq_iova = nvme_host_alloc(h, (uint64_t)depth * 16, &cq);
		if (!q->sq_iova || !q->cq_iova)
			return -ENOMEM;
		q->sq = sq;
		q->cq = cq;
	}
	memset(q->cq, 0, (size_t)depth * 16);
	q->qid = qid;
	q->depth = depth;
	q->irq = irq;
	q->cq_vector = vector;
	q->sq_tail = q->cq_head = q->sq_head = 0;
	q->cq_phase = 1;
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_CQ;
	sqe.dptr.prp.prp1 = q->cq_iova;
	sqe.cdw10 = (uint32_t)(depth - 1) << 16 | qid;
	sqe.cdw11 = (uint32_t)vector << 16 | (irq ? 2u : 0u) | 1u; /* PC */
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st)
		return st;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_SQ;
	sqe.dptr.prp.prp1 = q->sq_iova;
	sqe.cdw10 = (uint32_t)(depth - 1) << 16 | qid;
	sqe.cdw11 = (uint32_t)qid << 16 | 1u; /* CQID, PC */
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st == 0)
		q->live = true;
	return st;
}

int nvme_host_delete_io_queues(struct nvme_host *h, uint16_t qid)
{
	struct nvme_sqe sqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_DELETE_SQ;
	sqe.cdw10 = qid;
	st = nvme_host_cmd(h, 0, &sqe, NULL);
	if (st)
		return st;
	h->q[qid].live = false;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_DELETE_CQ;
	sqe.cdw10 = qid;
	return nvme_host_cmd(h, 0, &sqe, NULL);
}

int nvme_host_build_prps(struct nvme_host *h, struct nvme_sqe *sqe, uint64_t iova, uint32_t len)
{
	uint64_t first = NVME_HOST_PAGE - (iova & (NVME_HOST_PAGE - 1));
	uint64_t *list;
	uint64_t list_iova, p;
	uint32_t n = 0;

	sqe->dptr.prp.prp1 = iova;
	sqe->dptr.prp.prp2 = 0;
	if (len <= first)
		return 0;
	if (len <= first + NVME_HOST_PAGE) {
		sqe->dptr.prp.prp2 = iova + first;
		return 0;
	}
	/* One list page holds 512 entries: enough for 2 MiB, our MDTS. */
	list_iova = nvme_host_alloc(h, NVME_HOST_PAGE, (void **)&list);
	if (!list_iova)
		return -ENOMEM;
	for (p = iova + first; p < iova + len && n < 512; p += NVME_HOST_PAGE)
		list[n++] = p;
	sqe->dptr.prp.prp2 = list_iova;
	return 0;
}

int nvme_host_rw(struct nvme_host *h, uint16_t qid, uint8_t opc, uint32_t nsid, uint64_t slba,
		 uint32_t nlb, uint64_t iova, uint32_t len)
{
	struct nvme_sqe sqe = { 0 };
	uint64_t brk = h->brk;
	int st;

	sqe.cdw0.bits.opc = opc;
	sqe.nsid = nsid;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = nlb - 1;
	st = nvme_host_build_prps(h, &sqe, iova, len);
	if (st)
		return st;
	st = nvme_host_cmd(h, qid, &sqe, NULL);
	h->brk = brk; /* free the PRP list page */
	return st;
}
