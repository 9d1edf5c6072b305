/* tests/unit/controller/queue_test.c - queue mirrors through the loopback transport: wrap and
 * phase, SQ head in CQEs, CQ-full back-pressure, invalid doorbells, shadow doorbells with event
 * index, IEN 0 polling, interrupt batching and coalescing (CD honoured), deletion and reset with
 * commands in flight. */
#include <errno.h>
#include <string.h>

#include "common/evloop.h"
#include "controller/core/core.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static struct lb lb;
static uint64_t data_addr;

static int q_setup(void)
{
	if (lb_init(&lb, NULL))
		return -1;
	if (lb_add_malloc_ns(&lb, "q0", 1, 1024, 512) != 1)
		return -1;
	if (!(lb_enable(&lb, 16) & 1))
		return -1;
	data_addr = lb_alloc(&lb, 65536);
	return 0;
}

static int q_teardown(void)
{
	lb_fini(&lb);
	return 0;
}

static void q_restart(void)
{
	q_teardown();
	CU_ASSERT_EQUAL_FATAL(q_setup(), 0);
}

/* Writes an SQE into qid's ring without ringing the doorbell (the host driver's put). */
static uint16_t q_put(uint16_t qid, struct nvme_sqe sqe)
{
	int cid = nvme_host_submit(&lb.h, qid, &sqe, true);

	CU_ASSERT_TRUE(cid >= 0);
	return (uint16_t)cid;
}

static struct nvme_sqe q_read(uint64_t lba)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_READ, 1);

	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = (uint32_t)lba;
	return sqe;
}

static void test_wrap_phase(void)
{
	struct nvme_cqe cqe;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 8, 1, true), 0);
	for (int i = 0; i < 50; i++) {
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_FLUSH, 1);
		uint16_t cid = lb_submit(&lb, 1, &sqe);

		CU_ASSERT_TRUE_FATAL(lb_reap(&lb, 1, &cqe, false));
		CU_ASSERT_EQUAL(cqe.cid, cid);
		CU_ASSERT_EQUAL(cqe.sqid, 1);
		CU_ASSERT_EQUAL(cqe.sqhd, (i + 1) % 8);
		CU_ASSERT_EQUAL(cqe.status >> 1, 0);
		CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, false));
	}
	CU_ASSERT_EQUAL(lb.irqs[1], 50);
}

static void test_cq_full_backpressure(void)
{
	struct nvme_cqe cqe;
	struct ctrlr_stats st;
	bool seen[32] = {false};
	int got = 0;

	q_restart();
	/* CQ of 4 entries (3 usable), SQ of 16. */
	CU_ASSERT_EQUAL_FATAL(nvme_host_create_io_queues2(&lb.h, 1, 16, 4, true, 1), 0);
	for (int i = 0; i < 10; i++)
		q_put(1, q_read(i));
	lb_ring_sq(&lb, 1, lb.h.q[1].sq_tail);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_TRUE(st.cq_full_holds > 0);
	/* Exactly 3 visible; the 4th slot was never written (no overwrite). */
	{
		struct nvme_cqe *ring = lb_ptr(&lb, lb.h.q[1].cq_iova);

		CU_ASSERT_EQUAL(ring[0].status & 1, 1);
		CU_ASSERT_EQUAL(ring[2].status & 1, 1);
		CU_ASSERT_EQUAL(ring[3].status & 1, 0);
	}
	/* Reaping frees slots; held completions follow in order. */
	while (lb_reap(&lb, 1, &cqe, false)) {
		CU_ASSERT_FALSE(seen[cqe.cid]);
		seen[cqe.cid] = true;
		CU_ASSERT_EQUAL(cqe.status >> 1, 0);
		got++;
	}
	CU_ASSERT_EQUAL(got, 10);
}

static void test_invalid_doorbells(void)
{
	struct nvme_sqe aer = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);
	struct nvme_cqe cqe;
	struct ctrlr_stats st;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 8, 1, true), 0);
	lb_submit(&lb, 0, &aer);
	lb_submit(&lb, 0, &aer);
	/* SQ tail beyond the queue: reported, ignored. */
	CU_ASSERT_EQUAL(ctrlr_sq_tail_doorbell(lb.sqs[1], 8), -EINVAL);
	lb_pump(&lb);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_ERROR, NVME_AER_ERR_INVALID_DB_VALUE,
					      NVME_LOG_ERROR));
	/* CQ head past what was posted. */
	CU_ASSERT_EQUAL(ctrlr_cq_head_doorbell(lb.cqs[1], 3), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_cq_head_doorbell(lb.cqs[1], 100), -EINVAL);
	lb_pump(&lb);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.invalid_db_writes, 3);
	/* The queue still works. */
	{
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_FLUSH, 1);

		CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	}
}

static void test_shadow_doorbells(void)
{
	uint64_t shadow = lb_alloc(&lb, 4096), evt;
	volatile uint32_t *sdb, *eidx;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;

	q_restart();
	shadow = lb_alloc(&lb, 4096);
	evt = lb_alloc(&lb, 4096);
	sdb = lb_ptr(&lb, shadow);
	eidx = lb_ptr(&lb, evt);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	sqe = lb_sqe(NVME_ADM_DBBUF, 0);
	sqe.dptr.prp.prp1 = shadow;
	sqe.dptr.prp.prp2 = evt;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(lb.dbbuf_on);
	CU_ASSERT_EQUAL(eidx[3], 0xffffffffu); /* CQ head: never ring */
	/* The guest updates only the shadow tail; the transport polls. */
	for (int i = 0; i < 3; i++)
		q_put(1, q_read(i));
	sdb[2] = lb.h.q[1].sq_tail;
	CU_ASSERT_TRUE(ctrlr_sq_has_work(lb.sqs[1]));
	CU_ASSERT_EQUAL(ctrlr_sq_poll(lb.sqs[1], 16), 3);
	lb_pump(&lb);
	/* Armed at the last consumed tail: the next submission rings. */
	CU_ASSERT_EQUAL(eidx[2], 3);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, true));
	sdb[3] = lb.h.q[1].cq_head;
	/* Shadow values beyond the queue are ignored. */
	sdb[2] = 99;
	CU_ASSERT_FALSE(ctrlr_sq_has_work(lb.sqs[1]));
	sdb[2] = 3;
	/* A reset drops the shadow buffers. */
	lb_disable(&lb);
	CU_ASSERT_FALSE(lb.dbbuf_on);
}

static void test_shadow_cq_head(void)
{
	uint64_t shadow, evt;
	volatile uint32_t *sdb, *eidx;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	int got = 0;

	q_restart();
	shadow = lb_alloc(&lb, 4096);
	evt = lb_alloc(&lb, 4096);
	sdb = lb_ptr(&lb, shadow);
	eidx = lb_ptr(&lb, evt);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 4, 1, true), 0);
	sqe = lb_sqe(NVME_ADM_DBBUF, 0);
	sqe.dptr.prp.prp1 = shadow;
	sqe.dptr.prp.prp2 = evt;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	/* Fill the 4-entry CQ (3 usable) with 3 commands, then a 4th is held. */
	for (int i = 0; i < 3; i++)
		q_put(1, q_read(i));
	sdb[2] = lb.h.q[1].sq_tail;
	ctrlr_sq_poll(lb.sqs[1], 16);
	lb_pump(&lb);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, true));
	q_put(1, q_read(5));
	sdb[2] = lb.h.q[1].sq_tail;
	ctrlr_sq_poll(lb.sqs[1], 16);
	lb_pump(&lb);
	/* Held, and the CQ head event index is armed so the guest will ring. */
	CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, true));
	CU_ASSERT_EQUAL(eidx[3], 0);
	/* The guest publishes its head in the shadow page and rings the real doorbell. */
	sdb[3] = lb.h.q[1].cq_head;
	ctrlr_cq_head_doorbell(lb.cqs[1], lb.h.q[1].cq_head);
	lb_pump(&lb);
	while (lb_reap(&lb, 1, &cqe, true))
		got++;
	CU_ASSERT_EQUAL(got, 1);
	CU_ASSERT_EQUAL(eidx[3], 0xffffffffu);
}

static void test_polling_queue(void)
{
	struct nvme_cqe cqe;
	struct nvme_sqe sqe;

	/* SeaBIOS: an I/O queue pair with IEN 0, polled. */
	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 0, false), 0);
	sqe = q_read(0);
	lb_submit(&lb, 1, &sqe);
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, false));
	CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	CU_ASSERT_EQUAL(lb.irqs[0], lb.irqs[0]);
	CU_ASSERT_EQUAL(lb.irqs[1], 0);
	/* Then Linux resets and re-initialises. */
	CU_ASSERT_EQUAL(lb_disable(&lb) & 1, 0);
	CU_ASSERT_EQUAL(lb_enable(&lb, 32) & 1, 1);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	sqe = q_read(0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(lb.irqs[1], 1);
}

static void test_irq_batching(void)
{
	struct nvme_cqe cqe;
	int got = 0;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	/* Eight reads complete in one bdev poll: one interrupt. */
	for (int i = 0; i < 8; i++)
		q_put(1, q_read(i));
	lb_ring_sq(&lb, 1, lb.h.q[1].sq_tail);
	while (lb_reap(&lb, 1, &cqe, true))
		got++;
	CU_ASSERT_EQUAL(got, 8);
	CU_ASSERT_EQUAL(lb.irqs[1], 1);
}

static void test_irq_coalescing(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint64_t when;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	/* Threshold 4 entries (THR 3), time 1 ms. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_IRQ_COALESCE;
	sqe.cdw11 = 3 | 10u << 8;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	/* Two completions: below the threshold, within the time: no interrupt yet. */
	for (int i = 0; i < 2; i++)
		q_put(1, q_read(i));
	lb_ring_sq(&lb, 1, lb.h.q[1].sq_tail);
	CU_ASSERT_EQUAL(lb.irqs[1], 0);
	/* The hold was announced to the transport, which polls it by its deadline. */
	CU_ASSERT_TRUE(lb.irq_holds > 0);
	when = ctrlr_cq_irq_poll(lb.cqs[1], evloop_now_us());
	CU_ASSERT_TRUE(when > 0);
	/* The aggregation time expires: raised. */
	CU_ASSERT_EQUAL(ctrlr_cq_irq_poll(lb.cqs[1], when + 1), 0);
	CU_ASSERT_EQUAL(lb.irqs[1], 1);
	while (lb_reap(&lb, 1, &cqe, false))
		;
	/* Four completions reach the threshold at once. */
	for (int i = 0; i < 4; i++)
		q_put(1, q_read(i));
	lb_ring_sq(&lb, 1, lb.h.q[1].sq_tail);
	CU_ASSERT_EQUAL(lb.irqs[1], 2);
	while (lb_reap(&lb, 1, &cqe, false))
		;
	/* CD on the vector: coalescing off for it. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_IRQ_CONFIG;
	sqe.cdw11 = 1 | NVME_IRQ_CONFIG_CD;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	sqe = q_read(0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(lb.irqs[1], 3);
	CU_ASSERT_EQUAL(ctrlr_cq_irq_poll(lb.cqs[1], evloop_now_us()), 0);
}

static void test_delete_sq_inflight(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	struct ctrlr_stats st;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	/* Four reads handed to the bdev but not completed yet. */
	for (int i = 0; i < 4; i++)
		q_put(1, q_read(i));
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	CU_ASSERT_EQUAL(ctrlr_sq_poll(lb.sqs[1], 16), 4);
	sqe = lb_sqe(NVME_ADM_DELETE_SQ, 0);
	sqe.cdw10 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	/* The in-flight commands drained; their CQEs were dropped with the queue. */
	CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, true));
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.io_sqs, 0);
	sqe = lb_sqe(NVME_ADM_DELETE_CQ, 0);
	sqe.cdw10 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
}

static void test_reset_inflight(void)
{
	struct nvme_cqe *ring;
	uint8_t before[64 * 16];

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	for (int i = 0; i < 6; i++)
		q_put(1, q_read(i));
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	ctrlr_sq_poll(lb.sqs[1], 64);
	ring = lb_ptr(&lb, lb.h.q[1].cq_iova);
	memcpy(before, ring, sizeof(before));
	/* Reset while the reads are at the bdev: nothing reaches the CQ afterwards. */
	CU_ASSERT_EQUAL(lb_disable(&lb) & 1, 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(memcmp(before, ring, sizeof(before)), 0);
	CU_ASSERT_PTR_NULL(lb.sqs[1]);
	CU_ASSERT_PTR_NULL(lb.cqs[1]);
}

struct q_unmap_seen {
	bool done;
	uint64_t io_cmds; /* commands completed when the unmap finished */
};

static void q_unmap_done(void *arg)
{
	struct q_unmap_seen *seen = arg;
	struct ctrlr_stats st;

	ctrlr_get_stats(lb.ctrlr, &st);
	seen->done = true;
	seen->io_cmds = st.io_cmds;
}

/* The guest unmaps the memory its SQ ring lives in, with entries queued: the queue is detached
 * (nothing fetched, nothing accessed, its pin released) until the memory comes back. */
static void test_unmap_sq_ring(void)
{
	struct q_unmap_seen seen = {0};
	struct nvme_cqe cqe;
	int pins;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	pins = lb.pins; /* admin SQ + CQ, I/O SQ + CQ */
	CU_ASSERT_EQUAL(pins, 4);
	lb.hole_start = lb.h.q[1].sq_iova;
	lb.hole_len = 4096;
	ctrlr_mem_unmap(lb.ctrlr, lb.hole_start, lb.hole_len, q_unmap_done, &seen);
	lb_pump(&lb);
	CU_ASSERT_TRUE(seen.done);
	CU_ASSERT_EQUAL(lb.pins, pins - 1);
	for (int i = 0; i < 3; i++)
		q_put(1, q_read(i));
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	CU_ASSERT_EQUAL(ctrlr_sq_poll(lb.sqs[1], 16), 0);
	CU_ASSERT_FALSE(ctrlr_sq_has_work(lb.sqs[1]));
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, true));
	/* Mapped again (a rebooting guest): re-attached, the queued commands run. */
	lb.hole_len = 0;
	ctrlr_mem_mapped(lb.ctrlr);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(lb.pins, pins);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, true));
		CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	}
	/* Data pointers outside memory fail the command only. */
	{
		struct nvme_sqe sqe = q_read(0);

		sqe.dptr.prp.prp1 = 0xfffff000ull;
		lb_submit(&lb, 1, &sqe);
		CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, false));
		CU_ASSERT_EQUAL(cqe.status >> 1, NVME_SC_DATA_XFER_ERROR | NVME_DNR);
	}
}

/* The CQ ring goes while a read is at the bdev: the unmap finishes only after the read did
 * (the fence), its completion is held, and delivered in order once the ring is back. */
static void test_unmap_cq_ring_inflight(void)
{
	struct q_unmap_seen seen = {0};
	struct ctrlr_stats st;
	struct nvme_cqe cqe;
	uint16_t cid;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	cid = q_put(1, q_read(5));
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	CU_ASSERT_EQUAL(ctrlr_sq_poll(lb.sqs[1], 16), 1); /* at the bdev, not completed */
	ctrlr_get_stats(lb.ctrlr, &st);
	lb.hole_start = lb.h.q[1].cq_iova;
	lb.hole_len = 4096;
	ctrlr_mem_unmap(lb.ctrlr, lb.hole_start, lb.hole_len, q_unmap_done, &seen);
	CU_ASSERT_FALSE(seen.done);
	lb_pump(&lb);
	CU_ASSERT_TRUE(seen.done);
	CU_ASSERT_EQUAL(seen.io_cmds, st.io_cmds + 1);
	CU_ASSERT_EQUAL(lb.pins, 3);
	CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, true));
	lb.hole_len = 0;
	ctrlr_mem_mapped(lb.ctrlr);
	lb_pump(&lb);
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, true));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	CU_ASSERT_EQUAL(lb.pins, 4);
}

/* Shadow doorbell pages unmapped: shadow doorbells are dropped (slots, pins), real doorbells
 * work, and nothing of the pages is touched any more. */
static void test_unmap_dbbuf(void)
{
	struct q_unmap_seen seen = {0};
	uint64_t shadow, evt;
	struct nvme_cqe cqe;

	q_restart();
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	shadow = lb_alloc(&lb, 4096);
	evt = lb_alloc(&lb, 4096);
	{
		struct nvme_sqe sqe = lb_sqe(NVME_ADM_DBBUF, 0);

		sqe.dptr.prp.prp1 = shadow;
		sqe.dptr.prp.prp2 = evt;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	}
	CU_ASSERT_TRUE(lb.dbbuf_on);
	CU_ASSERT_EQUAL(lb.pins, 6);
	lb.hole_start = shadow;
	lb.hole_len = 8192;
	ctrlr_mem_unmap(lb.ctrlr, shadow, 8192, q_unmap_done, &seen);
	lb_pump(&lb);
	CU_ASSERT_TRUE(seen.done);
	CU_ASSERT_FALSE(lb.dbbuf_on);
	CU_ASSERT_EQUAL(lb.pins, 4);
	memset(lb.mem + (shadow - LB_MEM_BASE), 0xee, 8192);
	q_put(1, q_read(0));
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	lb_pump(&lb);
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, true));
	CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	/* The controller wrote nothing into the pages after the unmap. */
	for (unsigned int i = 0; i < 8192; i++)
		if (lb.mem[shadow - LB_MEM_BASE + i] != 0xee) {
			CU_FAIL("shadow doorbell page written after its unmap");
			break;
		}
}

CUNIT_SUITE(queue, q_setup, q_teardown, {"wrap_phase", test_wrap_phase},
	    {"cq_full_backpressure", test_cq_full_backpressure},
	    {"invalid_doorbells", test_invalid_doorbells},
	    {"shadow_doorbells", test_shadow_doorbells}, {"shadow_cq_head", test_shadow_cq_head},
	    {"polling_queue", test_polling_queue}, {"irq_batching", test_irq_batching},
	    {"irq_coalescing", test_irq_coalescing},
	    {"delete_sq_inflight", test_delete_sq_inflight},
	    {"reset_inflight", test_reset_inflight}, {"unmap_sq_ring", test_unmap_sq_ring},
	    {"unmap_cq_ring_inflight", test_unmap_cq_ring_inflight},
	    {"unmap_dbbuf", test_unmap_dbbuf})
