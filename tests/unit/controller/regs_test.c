/* tests/unit/controller/regs_test.c - registers and the enable / reset / shutdown / FLR state
 * machine through the loopback transport. */
#include <string.h>

#include "controller/ctrlr_transport.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static struct lb lb;

static int regs_init(void)
{
	return lb_init(&lb, NULL) ? -1 : 0;
}

static int regs_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static void regs_restart(void)
{
	lb_fini(&lb);
	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, NULL), 0);
}

static void test_cap_vs(void)
{
	union nvme_cap cap = {.raw = lb_reg_read64(&lb, NVME_REG_CAP)};

	CU_ASSERT_EQUAL(cap.bits.mqes, 255);
	CU_ASSERT_EQUAL(cap.bits.cqr, 1);
	CU_ASSERT_EQUAL(cap.bits.css & 1, 1);
	CU_ASSERT_EQUAL(cap.bits.dstrd, 0);
	CU_ASSERT_TRUE(cap.bits.to > 0);
	CU_ASSERT_EQUAL(cap.bits.mpsmin, 0);
	CU_ASSERT_TRUE(cap.bits.mpsmax >= cap.bits.mpsmin);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_VS), 0x10400);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS), 0);
	/* Read-only registers come back after a guest write. */
	lb_reg_write64(&lb, NVME_REG_CAP, 0);
	CU_ASSERT_EQUAL(lb_reg_read64(&lb, NVME_REG_CAP), cap.raw);
	lb_reg_write32(&lb, NVME_REG_VS, 0x20000);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_VS), 0x10400);
	lb_reg_write32(&lb, NVME_REG_CSTS, 0xffffffff);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS), 0);
}

static void test_enable_disable(void)
{
	union nvme_csts csts;
	struct ctrlr_stats st;

	regs_restart();
	csts.raw = lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
	CU_ASSERT_EQUAL(csts.bits.cfs, 0);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_TRUE(st.enabled);
	csts.raw = lb_disable(&lb);
	CU_ASSERT_EQUAL(csts.bits.rdy, 0);
	CU_ASSERT_EQUAL(csts.bits.shst, 0);
	/* Enable again after a reset (Linux after SeaBIOS). */
	csts.raw = lb_enable(&lb, 64);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
}

static void test_enable_fail(void)
{
	union nvme_cc cc = {.raw = 0};
	union nvme_csts csts;

	/* MPS above MPSMAX. */
	regs_restart();
	lb_reg_write32(&lb, NVME_REG_AQA, 31 | 31 << 16);
	lb_reg_write64(&lb, NVME_REG_ASQ, lb_alloc(&lb, 4096));
	lb_reg_write64(&lb, NVME_REG_ACQ, lb_alloc(&lb, 4096));
	cc.bits.en = 1;
	cc.bits.iosqes = 6;
	cc.bits.iocqes = 4;
	cc.bits.mps = 15;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	csts.raw = lb_reg_read32(&lb, NVME_REG_CSTS);
	CU_ASSERT_EQUAL(csts.bits.cfs, 1);
	CU_ASSERT_EQUAL(csts.bits.rdy, 0);
	/* Reset clears CFS. */
	csts.raw = lb_disable(&lb);
	CU_ASSERT_EQUAL(csts.raw, 0);

	/* Bad IOSQES. */
	cc.bits.mps = 0;
	cc.bits.iosqes = 5;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	csts.raw = lb_reg_read32(&lb, NVME_REG_CSTS);
	CU_ASSERT_EQUAL(csts.bits.cfs, 1);
	lb_disable(&lb);

	/* Bad IOCQES. */
	cc.bits.iosqes = 6;
	cc.bits.iocqes = 6;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS) & 2, 2);
	lb_disable(&lb);

	/* AQA of one entry (0-based zero). */
	cc.bits.iocqes = 4;
	lb_reg_write32(&lb, NVME_REG_AQA, 0);
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS) & 2, 2);
	lb_disable(&lb);

	/* Misaligned ASQ. */
	lb_reg_write32(&lb, NVME_REG_AQA, 31 | 31 << 16);
	lb_reg_write64(&lb, NVME_REG_ASQ, lb_alloc(&lb, 4096) + 64);
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS) & 2, 2);
	lb_disable(&lb);

	/* And a good one still works afterwards. */
	csts.raw = lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
	CU_ASSERT_EQUAL(csts.bits.cfs, 0);
}

static void test_shutdown(void)
{
	union nvme_cc cc;
	union nvme_csts csts;

	regs_restart();
	lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	cc.raw = lb_reg_read32(&lb, NVME_REG_CC);
	cc.bits.shn = NVME_SHN_NORMAL;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	csts.raw = lb_reg_read32(&lb, NVME_REG_CSTS);
	CU_ASSERT_EQUAL(csts.bits.shst, NVME_SHST_COMPLETE);
	CU_ASSERT_PTR_NULL(lb.sqs[1]);
	CU_ASSERT_PTR_NULL(lb.cqs[1]);
	/* Then reset and re-enable. */
	cc.bits.shn = 0;
	cc.bits.en = 0;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	csts.raw = lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
	CU_ASSERT_EQUAL(csts.bits.shst, 0);
}

static void test_reset_async(void)
{
	union nvme_csts csts;
	struct ctrlr_stats st;

	regs_restart();
	lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 2, 16, 2, true), 0);
	/* The transport takes its time: RDY stays 1 until every queue is gone. */
	lb.hold_queue_ops = true;
	csts.raw = lb_disable(&lb);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
	lb_release_queue_ops(&lb);
	lb_pump(&lb);
	csts.raw = lb_reg_read32(&lb, NVME_REG_CSTS);
	CU_ASSERT_EQUAL(csts.bits.rdy, 0);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.io_sqs, 0);
	CU_ASSERT_EQUAL(st.io_cqs, 0);
	CU_ASSERT_EQUAL(st.resets, 1);
}

static void test_reenable_during_reset(void)
{
	union nvme_cc cc;
	union nvme_csts csts;

	regs_restart();
	lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	lb.hold_queue_ops = true;
	lb_disable(&lb);
	/* The guest sets EN again before the teardown finished: enabled when it ends. */
	cc.raw = lb_reg_read32(&lb, NVME_REG_CC);
	cc.bits.en = 1;
	lb_reg_write32(&lb, NVME_REG_CC, cc.raw);
	lb_release_queue_ops(&lb);
	lb_pump(&lb);
	csts.raw = lb_reg_read32(&lb, NVME_REG_CSTS);
	CU_ASSERT_EQUAL(csts.bits.rdy, 1);
}

static void test_flr(void)
{
	regs_restart();
	lb_enable(&lb, 32);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	lb.flr_done = false;
	ctrlr_flr(lb.ctrlr, NULL, NULL);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CC), 0);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS), 0);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_AQA), 0);
	CU_ASSERT_EQUAL(lb_reg_read64(&lb, NVME_REG_ASQ), 0);
	CU_ASSERT_PTR_NULL(lb.sqs[1]);
	CU_ASSERT_EQUAL(lb_enable(&lb, 32) & 1, 1);
}

static void test_intms_intmc(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint32_t irqs;

	regs_restart();
	lb_enable(&lb, 32);
	/* Mask vector 0: an admin completion raises nothing... */
	lb_reg_write32(&lb, NVME_REG_INTMS, 1);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_INTMS), 0); /* see regs.c: reads back 0 */
	irqs = lb.irqs[0];
	sqe = lb_sqe(NVME_ADM_GET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_NUM_QUEUES;
	lb_submit(&lb, 0, &sqe);
	CU_ASSERT_EQUAL(lb.irqs[0], irqs);
	/* ...until INTMC clears the bit: the pending interrupt is delivered then. */
	lb_reg_write32(&lb, NVME_REG_INTMC, 1);
	CU_ASSERT_EQUAL(lb.irqs[0], irqs + 1);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	/* Writing the same value twice still acts each time. */
	lb_reg_write32(&lb, NVME_REG_INTMS, 1);
	lb_reg_write32(&lb, NVME_REG_INTMC, 1);
	lb_submit(&lb, 0, &sqe);
	CU_ASSERT_EQUAL(lb.irqs[0], irqs + 2);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
}

static void test_admin_doorbell_when_disabled(void)
{
	struct ctrlr_stats st;

	regs_restart();
	/* Doorbells before enable are ignored, not crashes. */
	ctrlr_doorbell_write(lb.ctrlr, 0, 5);
	ctrlr_doorbell_write(lb.ctrlr, 1, 5);
	ctrlr_doorbell_write(lb.ctrlr, 9, 5);
	lb_pump(&lb);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.admin_cmds, 0);
	CU_ASSERT_EQUAL(st.invalid_db_writes, 1);
}

CUNIT_SUITE(regs, regs_init, regs_fini, {"cap_vs", test_cap_vs},
	    {"enable_disable", test_enable_disable}, {"enable_fail", test_enable_fail},
	    {"shutdown", test_shutdown}, {"reset_async", test_reset_async},
	    {"reenable_during_reset", test_reenable_during_reset}, {"flr", test_flr},
	    {"intms_intmc", test_intms_intmc},
	    {"admin_doorbell_when_disabled", test_admin_doorbell_when_disabled})
