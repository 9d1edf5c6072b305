/* tests/unit/controller/loopback.c - the loopback transport of loopback.h: the controller core's
 * transport ops and the host driver's transport ops over one plain buffer. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrlr_transport.h"
#include "common/syncer.h"
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

/* The tests poll held interrupts themselves (ctrlr_cq_irq_poll); the count shows a hold was
 * announced. */
static int lb_hold_irq(void *tctx, struct ctrlr_cq *cq, uint64_t until_us)
{
	struct lb *lb = tctx;

	(void)cq;
	(void)until_us;
	lb->irq_holds++;
	return 0;
}

static void lb_write_regs(void *tctx, uint32_t offset, const void *buf, size_t len)
{
	struct lb *lb = tctx;

	if (offset < NVME_REG_END && len <= NVME_REG_END - offset)
		memcpy(lb->regs + offset, buf, len);
}

static pthread_mutex_t lb_thunk_lock = PTHREAD_MUTEX_INITIALIZER;

static void lb_queue(struct lb *lb, void (*fn)(void *), void *arg, bool queue_op)
{
	if (queue_op && lb->hold_queue_ops) {
		lb->held_ops[lb->nheld++] = (struct lb_thunk){fn, arg};
		return;
	}
	/* The real transport's posts cannot fail; a test that overflows this is broken. */
	/* The syncer thread posts completions too (common/syncer.h). */
	pthread_mutex_lock(&lb_thunk_lock);
	if (lb->nthunks == LB_MAX_THUNKS)
		abort();
	lb->thunks[lb->nthunks++] = (struct lb_thunk){fn, arg};
	pthread_mutex_unlock(&lb_thunk_lock);
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

static void lb_io_post(void *tctx, struct ctrlr_sq *sq, struct evloop_msg *m,
		       void (*fn)(void *arg), void *arg)
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
    .io_post = lb_io_post,
    .raise_irq = lb_raise_irq,
    .hold_irq = lb_hold_irq,
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

/* Runs everything queued; returns how many things ran. */
static int lb_pump_count(struct lb *lb)
{
	int total = 0;

	for (;;) {
		int ran = 0;

		for (;;) {
			struct lb_thunk t;

			pthread_mutex_lock(&lb_thunk_lock);
			if (!lb->nthunks) {
				pthread_mutex_unlock(&lb_thunk_lock);
				break;
			}
			t = lb->thunks[0];
			memmove(lb->thunks, lb->thunks + 1, --lb->nthunks * sizeof(t));
			pthread_mutex_unlock(&lb_thunk_lock);
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
		if (!ran) {
			/* State files written by the syncer thread: wait for them (a synchronous
			 * pump), then run what their ends posted. */
			uint64_t ended = syncer_jobs_done();

			syncer_drain();
			if (syncer_jobs_done() != ended)
				continue;
			return total;
		}
		total += ran;
	}
}

void lb_pump(struct lb *lb)
{
	lb_pump_count(lb);
}

/* ---- The host driver's transport: registers, doorbells and memory straight to the core ---- */

static int lb_host_reg_read(struct nvme_host *h, uint32_t off, void *buf, uint32_t len)
{
	struct lb *lb = h->tctx;

	if (off >= NVME_REG_END || len > NVME_REG_END - off)
		return -EINVAL;
	memcpy(buf, lb->regs + off, len);
	return 0;
}

static int lb_host_reg_write(struct nvme_host *h, uint32_t off, const void *buf, uint32_t len)
{
	struct lb *lb = h->tctx;

	if (off >= NVME_REG_END || len > NVME_REG_END - off)
		return -EINVAL;
	memcpy(lb->regs + off, buf, len);
	ctrlr_regs_written(lb->ctrlr, lb->regs);
	lb_pump(lb);
	return 0;
}

/* A doorbell of a live queue goes to its queue object (as the poll group's doorbell path
 * would), anything else through the controller's doorbell decoder; then everything runs. */
static int lb_host_ring(struct nvme_host *h, uint32_t idx, uint32_t value)
{
	struct lb *lb = h->tctx;
	uint32_t qid = idx / 2;

	if (qid == 0 || qid >= LB_MAX_QUEUES) {
		ctrlr_doorbell_write(lb->ctrlr, idx, value);
	} else if (idx % 2 == 0 && lb->sqs[qid]) {
		if (!ctrlr_sq_tail_doorbell(lb->sqs[qid], value))
			ctrlr_sq_poll(lb->sqs[qid], 1024);
	} else if (idx % 2 == 1 && lb->cqs[qid]) {
		ctrlr_cq_head_doorbell(lb->cqs[qid], value);
	} else {
		ctrlr_doorbell_write(lb->ctrlr, idx, value);
	}
	lb_pump(lb);
	return 0;
}

/* The host sees all of its memory (a hole is only the transport refusing to map it). */
static void *lb_host_mem_ptr(struct nvme_host *h, uint64_t iova, uint64_t len)
{
	struct lb *lb = h->tctx;

	if (iova < LB_MEM_BASE || len > LB_MEM_SIZE || iova - LB_MEM_BASE > LB_MEM_SIZE - len)
		return NULL;
	return lb->mem + (iova - LB_MEM_BASE);
}

/* Synchronous: when the pump finds nothing to run, nothing more can happen. */
static int lb_host_wait(struct nvme_host *h, struct nvme_host_queue *q, int timeout_ms)
{
	struct lb *lb = h->tctx;

	if (lb_pump_count(lb))
		return 0;
	/* Backend I/O still in flight (a file's, or the next step of a stacked bdev's): wait for
	 * a channel's fd, as a poll group would, then look again. */
	for (size_t i = 0; i < 8; i++) {
		struct pollfd p = {.events = POLLIN};

		if (!lb->chans[i].ch || !bdev_channel_outstanding(lb->chans[i].ch))
			continue;
		p.fd = bdev_channel_get_fd(lb->chans[i].ch);
		if (poll(&p, 1, timeout_ms) < 0)
			return -errno;
		lb_pump_count(lb);
		return 0;
	}
	return -EAGAIN;
}

static const struct nvme_host_ops lb_host_ops = {
    .reg_read = lb_host_reg_read,
    .reg_write = lb_host_reg_write,
    .ring = lb_host_ring,
    .mem_ptr = lb_host_mem_ptr,
    .wait = lb_host_wait,
};

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
	ret = nvme_host_init_ops(&lb->h, &lb_host_ops, lb, LB_MEM_BASE, LB_MEM_SIZE);
	if (ret) {
		lb_fini(lb);
		return ret;
	}
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
	void *p;
	uint64_t a = nvme_host_alloc(&lb->h, bytes, &p);

	/* 8 MiB is plenty for any test: running out is a broken test. */
	if (!a)
		abort();
	return a;
}

void *lb_ptr(struct lb *lb, uint64_t gaddr)
{
	return lb->mem + (gaddr - LB_MEM_BASE);
}

void lb_reg_write32(struct lb *lb, uint32_t off, uint32_t v)
{
	nvme_host_reg_write32(&lb->h, off, v);
}

void lb_reg_write64(struct lb *lb, uint32_t off, uint64_t v)
{
	nvme_host_reg_write64(&lb->h, off, v);
}

uint32_t lb_reg_read32(struct lb *lb, uint32_t off)
{
	return nvme_host_reg_read32(&lb->h, off);
}

uint64_t lb_reg_read64(struct lb *lb, uint32_t off)
{
	return nvme_host_reg_read64(&lb->h, off);
}

/* Enable and disable return CSTS as it is once everything queued ran, whether or not the
 * host driver's wait for RDY succeeded: register-level tests look at it. */
uint32_t lb_enable(struct lb *lb, uint32_t entries)
{
	nvme_host_enable(&lb->h, (uint16_t)entries);
	return lb_reg_read32(lb, NVME_REG_CSTS);
}

uint32_t lb_disable(struct lb *lb)
{
	nvme_host_disable(&lb->h);
	return lb_reg_read32(lb, NVME_REG_CSTS);
}

void lb_ring_sq(struct lb *lb, uint16_t qid, uint32_t value)
{
	nvme_host_ring(&lb->h, 2u * qid, value);
}

uint16_t lb_submit(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe)
{
	int cid = nvme_host_submit(&lb->h, qid, sqe, false);

	return cid < 0 ? LB_NO_CQE : (uint16_t)cid;
}

bool lb_reap(struct lb *lb, uint16_t qid, struct nvme_cqe *cqe, bool no_ring)
{
	if (no_ring)
		return nvme_host_cq_take(&lb->h, qid, cqe) == 1;
	return nvme_host_reap(&lb->h, qid, cqe) == 1;
}

uint16_t lb_cmd(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe, uint32_t *cdw0)
{
	struct nvme_cqe cqe;
	int st = nvme_host_cmd(&lb->h, qid, sqe, &cqe);

	if (st < 0)
		return LB_NO_CQE;
	if (cdw0)
		*cdw0 = cqe.dw0;
	return (uint16_t)st;
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
	int st = nvme_host_create_io_queues(&lb->h, qid, (uint16_t)entries, ien, vector);

	return st < 0 ? LB_NO_CQE : (uint16_t)st;
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
