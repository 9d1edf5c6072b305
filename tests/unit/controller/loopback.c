/* tests/unit/controller/loopback.c - the loopback transport and tiny host driver of loopback.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrlr_transport.h"
#include "tests/unit/controller/loopback.h"

static void *lb_mem_map(void *tctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	struct lb *lb = tctx;

	if (addr < LB_MEM_BASE || len > LB_MEM_SIZE || addr - LB_MEM_BASE > LB_MEM_SIZE - len)
		return NULL;
	if (lb->hole_len && addr < lb->hole_start + lb->hole_len && addr + len > lb->hole_start)
		return NULL;
	return lb->mem + (addr - LB_MEM_BASE);
}

/* Pins are counted so tests can check every one is released; the pointer is the plain one. */
static void *lb_mem_pin(void *tctx, uint64_t addr, uint64_t len, unsigned int dir, void **pin)
{
	struct lb *lb = tctx;
	void *p = lb_mem_map(tctx, addr, len, dir);

	*pin = p ? lb : NULL;
	if (p)
		lb->pins++;
	return p;
}

static void lb_mem_unpin(void *tctx, void *pin)
{
	struct lb *lb = tctx;

	if (pin)
		lb->pins--;
}

static void lb_raise_irq(void *tctx, struct ctrlr_cq *cq)
{
	struct lb *lb = tctx;
	uint16_t vector = ctrlr_cq_get_vector(cq);

	if (vector < LB_MAX_VECTORS)
		lb->irqs[vector]++;
}

static void lb_write_regs(void *tctx, uint32_t offset, const void *buf, size_t len)
{
	struct lb *lb = tctx;

	if (offset < NVME_REG_END && len <= NVME_REG_END - offset)
		memcpy(lb->regs + offset, buf, len);
}

static void lb_queue(struct lb *lb, void (*fn)(void *), void *arg, bool queue_op)
{
	if (queue_op && lb->hold_queue_ops) {
		lb->held_ops[lb->nheld++] = (struct lb_thunk){fn, arg};
		return;
	}
	/* The real transport's posts cannot fail; a test that overflows this is broken. */
	if (lb->nthunks == LB_MAX_THUNKS)
		abort();
	lb->thunks[lb->nthunks++] = (struct lb_thunk){fn, arg};
}

/* Queue operations complete later, from lb_pump, as the real transport's messages would. */
struct lb_op {
	struct lb *lb;
	struct ctrlr_sq *sq;
	struct ctrlr_cq *cq;
	int status;
};

static struct lb_op *lb_op_new(struct lb *lb, struct ctrlr_sq *sq, struct ctrlr_cq *cq)
{
	struct lb_op *op = calloc(1, sizeof(*op));

	op->lb = lb;
	op->sq = sq;
	op->cq = cq;
	op->status = lb->fail_create_done;
	return op;
}

static void lb_create_cq_done(void *arg)
{
	struct lb_op *op = arg;

	if (!op->status)
		op->lb->cqs[ctrlr_cq_get_qid(op->cq)] = op->cq;
	ctrlr_cq_create_done(op->cq, op->status);
	free(op);
}

static int lb_create_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct lb *lb = tctx;
	int ret = lb->fail_create;

	lb->fail_create = 0;
	if (ret)
		return ret;
	lb_queue(lb, lb_create_cq_done, lb_op_new(lb, NULL, cq), true);
	lb->fail_create_done = 0;
	return 0;
}

static void lb_create_sq_done(void *arg)
{
	struct lb_op *op = arg;

	if (!op->status)
		op->lb->sqs[ctrlr_sq_get_qid(op->sq)] = op->sq;
	ctrlr_sq_create_done(op->sq, op->status);
	free(op);
}

static int lb_create_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct lb *lb = tctx;
	int ret = lb->fail_create;

	lb->fail_create = 0;
	if (ret)
		return ret;
	lb_queue(lb, lb_create_sq_done, lb_op_new(lb, sq, NULL), true);
	lb->fail_create_done = 0;
	return 0;
}

static void lb_sq_deleted(void *arg)
{
	struct lb_op *op = arg;

	op->lb->sqs[ctrlr_sq_get_qid(op->sq)] = NULL;
	ctrlr_sq_delete_done(op->sq);
	free(op);
}

/* ctrlr_sq_stop's done: runs on the "owner thread"; hop back to the admin thread. */
static void lb_sq_stopped(void *arg)
{
	struct lb_op *op = arg;

	lb_queue(op->lb, lb_sq_deleted, op, false);
}

static void lb_delete_sq_msg(void *arg)
{
	struct lb_op *op = arg;

	ctrlr_sq_stop(op->sq, lb_sq_stopped, op);
}

static int lb_delete_sq(void *tctx, struct ctrlr_sq *sq)
{
	struct lb *lb = tctx;

	lb_queue(lb, lb_delete_sq_msg, lb_op_new(lb, sq, NULL), true);
	return 0;
}

static void lb_delete_cq_msg(void *arg)
{
	struct lb_op *op = arg;

	op->lb->cqs[ctrlr_cq_get_qid(op->cq)] = NULL;
	ctrlr_cq_delete_done(op->cq);
	free(op);
}

static int lb_delete_cq(void *tctx, struct ctrlr_cq *cq)
{
	struct lb *lb = tctx;

	lb_queue(lb, lb_delete_cq_msg, lb_op_new(lb, NULL, cq), true);
	return 0;
}

static struct bdev_channel *lb_get_channel(void *tctx, struct ctrlr_sq *sq, struct bdev *bdev)
{
	struct lb *lb = tctx;

	for (size_t i = 0; i < 8; i++)
		if (lb->chans[i].bdev == bdev)
			return lb->chans[i].ch;
	for (size_t i = 0; i < 8; i++) {
		if (lb->chans[i].bdev)
			continue;
		if (bdev_channel_create(bdev, &lb->chans[i].ch))
			return NULL;
		lb->chans[i].bdev = bdev;
		return lb->chans[i].ch;
	}
	return NULL;
}

struct lb_put {
	struct lb *lb;
	struct bdev *bdev;
	void (*done)(void *arg);
	void *arg;
};

/* The "owner thread" drops its channel, then the admin thread continues. */
static void lb_put_msg(void *arg)
{
	struct lb_put *p = arg;
	struct lb *lb = p->lb;

	for (size_t i = 0; i < 8; i++) {
		if (lb->chans[i].bdev != p->bdev)
			continue;
		while (bdev_channel_outstanding(lb->chans[i].ch))
			bdev_channel_poll(lb->chans[i].ch);
		bdev_channel_destroy(lb->chans[i].ch);
		lb->chans[i].bdev = NULL;
		lb->chans[i].ch = NULL;
	}
	p->done(p->arg);
	free(p);
}

static int lb_put_bdev(void *tctx, struct bdev *bdev, void (*done)(void *arg), void *arg)
{
	struct lb *lb = tctx;
	struct lb_put *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	*p = (struct lb_put){.lb = lb, .bdev = bdev, .done = done, .arg = arg};
	lb_queue(lb, lb_put_msg, p, false);
	return 0;
}

static int lb_admin_msg(void *tctx, void (*fn)(void *arg), void *arg)
{
	struct lb *lb = tctx;

	if (lb->nthunks == LB_MAX_THUNKS)
		return -ENOMEM;
	lb_queue(lb, fn, arg, false);
	return 0;
}

static void lb_admin_post(void *tctx, struct evloop_msg *m, void (*fn)(void *arg), void *arg)
{
	lb_queue(tctx, fn, arg, false);
}

/* One "owner thread" here: the visit of every queue runs later, from the pump. */
struct lb_visit {
	struct lb *lb;
	struct ctrlr_visit *v;
};

static void lb_visit_msg(void *arg)
{
	struct lb_visit *lv = arg;
	struct lb *lb = lv->lb;

	for (uint16_t q = 1; q < LB_MAX_QUEUES; q++) {
		if (lb->cqs[q])
			ctrlr_visit_cq(lv->v, lb->cqs[q]);
		if (lb->sqs[q])
			ctrlr_visit_sq(lv->v, lb->sqs[q]);
	}
	ctrlr_visit_release(lv->v);
	free(lv);
}

static void lb_visit_queues(void *tctx, struct ctrlr_visit *v)
{
	struct lb *lb = tctx;
	struct lb_visit *lv = malloc(sizeof(*lv));

	if (!lv)
		abort();
	*lv = (struct lb_visit){.lb = lb, .v = v};
	lb->visits++;
	ctrlr_visit_hold(v);
	lb_queue(lb, lb_visit_msg, lv, false);
}

static void lb_dbbuf_changed(void *tctx, bool enabled)
{
	struct lb *lb = tctx;

	lb->dbbuf_changes++;
	lb->dbbuf_on = enabled;
}

static const struct ctrlr_transport_ops lb_ops = {
    .mem_map = lb_mem_map,
    .mem_pin = lb_mem_pin,
    .mem_unpin = lb_mem_unpin,
    .visit_queues = lb_visit_queues,
    .admin_post = lb_admin_post,
    .raise_irq = lb_raise_irq,
    .write_regs = lb_write_regs,
    .create_cq = lb_create_cq,
    .create_sq = lb_create_sq,
    .delete_sq = lb_delete_sq,
    .delete_cq = lb_delete_cq,
    .get_channel = lb_get_channel,
    .put_bdev = lb_put_bdev,
    .admin_msg = lb_admin_msg,
    .dbbuf_changed = lb_dbbuf_changed,
};

void lb_pump(struct lb *lb)
{
	for (;;) {
		int ran = 0;

		while (lb->nthunks) {
			struct lb_thunk t = lb->thunks[0];

			memmove(lb->thunks, lb->thunks + 1, --lb->nthunks * sizeof(t));
			t.fn(t.arg);
			ran++;
		}
		for (size_t i = 0; i < 8; i++) {
			if (!lb->chans[i].ch)
				continue;
			for (uint16_t q = 1; q < LB_MAX_QUEUES; q++)
				if (lb->cqs[q])
					ctrlr_cq_batch_begin(lb->cqs[q]);
			ran += bdev_channel_poll(lb->chans[i].ch);
			for (uint16_t q = 1; q < LB_MAX_QUEUES; q++)
				if (lb->cqs[q])
					ctrlr_cq_batch_end(lb->cqs[q]);
		}
		/* Commands that freed pool entries or arrived meanwhile. */
		for (uint16_t q = 1; q < LB_MAX_QUEUES; q++)
			if (lb->sqs[q] && ctrlr_sq_has_work(lb->sqs[q]))
				ran += ctrlr_sq_poll(lb->sqs[q], 64);
		if (!ran)
			return;
	}
}

void lb_release_queue_ops(struct lb *lb)
{
	for (unsigned int i = 0; i < lb->nheld; i++)
		lb->thunks[lb->nthunks++] = lb->held_ops[i];
	lb->nheld = 0;
	lb->hold_queue_ops = false;
}

void lb_default_config(struct ctrlr_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->serial = "LB0001";
	cfg->model = "nvme-emu loopback";
	cfg->firmware_rev = "0.1";
	cfg->max_io_queues = 8;
	cfg->max_queue_entries = 256;
	cfg->mdts = 5;
	cfg->sgl = true;
}

int lb_init(struct lb *lb, const struct ctrlr_config *cfg)
{
	struct ctrlr_config def;
	int ret;

	memset(lb, 0, sizeof(*lb));
	lb->mem = calloc(1, LB_MEM_SIZE);
	if (!lb->mem)
		return -ENOMEM;
	lb->alloc_next = LB_MEM_BASE;
	if (!cfg) {
		lb_default_config(&def);
		cfg = &def;
	}
	ret = ctrlr_create(cfg, &lb_ops, lb, &lb->ctrlr);
	if (ret) {
		free(lb->mem);
		return ret;
	}
	ctrlr_regs_read(lb->ctrlr, 0, lb->regs, sizeof(lb->regs));
	return 0;
}

static void lb_flr_done(void *arg)
{
	struct lb *lb = arg;

	lb->flr_done = true;
}

static void lb_destroyed(void *arg)
{
	struct lb *lb = arg;

	lb->destroyed = true;
}

void lb_fini(struct lb *lb)
{
	if (lb->hold_queue_ops)
		lb_release_queue_ops(lb);
	lb_pump(lb);
	ctrlr_flr(lb->ctrlr, lb_flr_done, lb);
	lb_pump(lb);
	if (ctrlr_destroy(lb->ctrlr, lb_destroyed, lb))
		abort();
	lb_pump(lb);
	if (!lb->destroyed)
		abort();
	for (size_t i = 0; i < 8; i++)
		if (lb->chans[i].ch)
			bdev_channel_destroy(lb->chans[i].ch);
	bdev_delete_all();
	free(lb->mem);
}

uint64_t lb_alloc(struct lb *lb, uint64_t bytes)
{
	uint64_t a = lb->alloc_next;

	lb->alloc_next += (bytes + 4095) & ~4095ull;
	if (lb->alloc_next > LB_MEM_BASE + LB_MEM_SIZE)
		abort();
	memset(lb_ptr(lb, a), 0, bytes);
	return a;
}

void *lb_ptr(struct lb *lb, uint64_t gaddr)
{
	return lb->mem + (gaddr - LB_MEM_BASE);
}

static void lb_regs_notify(struct lb *lb)
{
	ctrlr_regs_written(lb->ctrlr, lb->regs);
	lb_pump(lb);
}

void lb_reg_write32(struct lb *lb, uint32_t off, uint32_t v)
{
	memcpy(lb->regs + off, &v, 4);
	lb_regs_notify(lb);
}

void lb_reg_write64(struct lb *lb, uint32_t off, uint64_t v)
{
	memcpy(lb->regs + off, &v, 8);
	lb_regs_notify(lb);
}

uint32_t lb_reg_read32(struct lb *lb, uint32_t off)
{
	uint32_t v;

	memcpy(&v, lb->regs + off, 4);
	return v;
}

uint64_t lb_reg_read64(struct lb *lb, uint32_t off)
{
	uint64_t v;

	memcpy(&v, lb->regs + off, 8);
	return v;
}

uint32_t lb_enable(struct lb *lb, uint32_t entries)
{
	struct lb_hq *hq = &lb->hq[0];
	union nvme_cc cc = {.raw = 0};

	memset(hq, 0, sizeof(*hq));
	hq->used = true;
	hq->sq_size = hq->cq_size = entries;
	hq->sq_addr = lb_alloc(lb, entries * sizeof(struct nvme_sqe));
	hq->cq_addr = lb_alloc(lb, entries * sizeof(struct nvme_cqe));
	hq->phase = 1;
	memset(lb->hq + 1, 0, sizeof(lb->hq) - sizeof(lb->hq[0]));
	lb_reg_write32(lb, NVME_REG_AQA, (entries - 1) | (entries - 1) << 16);
	lb_reg_write64(lb, NVME_REG_ASQ, hq->sq_addr);
	lb_reg_write64(lb, NVME_REG_ACQ, hq->cq_addr);
	cc.bits.en = 1;
	cc.bits.iosqes = 6;
	cc.bits.iocqes = 4;
	lb_reg_write32(lb, NVME_REG_CC, cc.raw);
	return lb_reg_read32(lb, NVME_REG_CSTS);
}

uint32_t lb_disable(struct lb *lb)
{
	union nvme_cc cc = {.raw = lb_reg_read32(lb, NVME_REG_CC)};

	cc.bits.en = 0;
	lb_reg_write32(lb, NVME_REG_CC, cc.raw);
	return lb_reg_read32(lb, NVME_REG_CSTS);
}

void lb_ring_sq(struct lb *lb, uint16_t qid, uint32_t value)
{
	if (qid == 0) {
		ctrlr_doorbell_write(lb->ctrlr, 0, value);
	} else if (lb->sqs[qid]) {
		if (!ctrlr_sq_tail_doorbell(lb->sqs[qid], value))
			ctrlr_sq_poll(lb->sqs[qid], 1024);
	} else {
		ctrlr_doorbell_write(lb->ctrlr, 2u * qid, value);
	}
	lb_pump(lb);
}

uint16_t lb_submit(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe)
{
	struct lb_hq *hq = &lb->hq[qid];
	struct nvme_sqe *slot = lb_ptr(lb, hq->sq_addr + hq->sq_tail * sizeof(*sqe));

	sqe->cdw0.bits.cid = hq->next_cid++;
	*slot = *sqe;
	hq->sq_tail = (hq->sq_tail + 1) % hq->sq_size;
	lb_ring_sq(lb, qid, hq->sq_tail);
	return sqe->cdw0.bits.cid;
}

bool lb_reap(struct lb *lb, uint16_t qid, struct nvme_cqe *cqe, bool no_ring)
{
	struct lb_hq *hq = &lb->hq[qid];
	struct nvme_cqe *slot = lb_ptr(lb, hq->cq_addr + hq->cq_head * sizeof(*cqe));

	if ((slot->status & 1) != hq->phase)
		return false;
	*cqe = *slot;
	if (++hq->cq_head == hq->cq_size) {
		hq->cq_head = 0;
		hq->phase ^= 1;
	}
	if (!no_ring) {
		if (qid == 0)
			ctrlr_doorbell_write(lb->ctrlr, 1, hq->cq_head);
		else if (lb->cqs[qid])
			ctrlr_cq_head_doorbell(lb->cqs[qid], hq->cq_head);
		lb_pump(lb);
	}
	return true;
}

uint16_t lb_cmd(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe, uint32_t *cdw0)
{
	struct nvme_cqe cqe;
	uint16_t cid = lb_submit(lb, qid, sqe);

	lb_pump(lb);
	if (!lb_reap(lb, qid, &cqe, false))
		return LB_NO_CQE;
	if (cqe.cid != cid)
		return LB_NO_CQE;
	if (cdw0)
		*cdw0 = cqe.dw0;
	return cqe.status >> 1;
}

struct nvme_sqe lb_sqe(uint8_t opc, uint32_t nsid)
{
	struct nvme_sqe sqe;

	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = nsid;
	return sqe;
}

uint16_t lb_create_qpair(struct lb *lb, uint16_t qid, uint32_t entries, uint16_t vector, bool ien)
{
	struct lb_hq *hq = &lb->hq[qid];
	struct nvme_sqe sqe;
	uint16_t st;

	memset(hq, 0, sizeof(*hq));
	hq->sq_size = hq->cq_size = entries;
	hq->cq_addr = lb_alloc(lb, entries * sizeof(struct nvme_cqe));
	hq->sq_addr = lb_alloc(lb, entries * sizeof(struct nvme_sqe));
	hq->phase = 1;
	sqe = lb_sqe(NVME_ADM_CREATE_CQ, 0);
	sqe.dptr.prp.prp1 = hq->cq_addr;
	sqe.cdw10 = qid | (entries - 1) << 16;
	sqe.cdw11 = NVME_QUEUE_PC | (ien ? NVME_CQ_IEN : 0) | (uint32_t)vector << 16;
	st = lb_cmd(lb, 0, &sqe, NULL);
	if (st)
		return st;
	sqe = lb_sqe(NVME_ADM_CREATE_SQ, 0);
	sqe.dptr.prp.prp1 = hq->sq_addr;
	sqe.cdw10 = qid | (entries - 1) << 16;
	sqe.cdw11 = NVME_QUEUE_PC | (uint32_t)qid << 16;
	st = lb_cmd(lb, 0, &sqe, NULL);
	if (!st)
		hq->used = true;
	return st;
}

int lb_add_malloc_ns(struct lb *lb, const char *name, uint32_t nsid, uint64_t blocks,
		     uint32_t block_size)
{
	struct bdev *bdev;
	int ret = bdev_malloc_create(name, blocks, block_size, NULL, &bdev);

	if (ret)
		return ret;
	ret = ctrlr_ns_add(lb->ctrlr, nsid, bdev, NULL);
	lb_pump(lb);
	return ret;
}
