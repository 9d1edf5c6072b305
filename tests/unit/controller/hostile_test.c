/* tests/unit/controller/hostile_test.c - a hostile host through the loopback transport: seeded
 * random SQEs (admin and I/O, valid opcodes mixed with garbage), random data pointers inside and
 * outside guest memory, random doorbell values. The controller must never crash or touch memory
 * outside the guest (ASan), and must work normally after a reset. */
#include <string.h>

#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static uint64_t hs_state;

static uint64_t hs_rand(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	hs_state ^= hs_state >> 12;
	hs_state ^= hs_state << 25;
	hs_state ^= hs_state >> 27;
	return hs_state * 0x2545f4914f6cdd1dull;
}

static const uint8_t hs_admin_ops[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x09,
				       0x0a, 0x0c, 0x7c, 0x80, 0xc0, 0xc1, 0x10, 0xff};
static const uint8_t hs_io_ops[] = {0x00, 0x01, 0x02, 0x05, 0x08, 0x09, 0x0c, 0x80, 0x04, 0x7f};

/* An address: mostly inside guest memory (any alignment), sometimes outside or at the edge. */
static uint64_t hs_addr(void)
{
	switch (hs_rand() % 6) {
	case 0:
		return hs_rand();
	case 1:
		return LB_MEM_BASE + LB_MEM_SIZE - (hs_rand() % 8192);
	case 2:
		return LB_MEM_BASE + (hs_rand() % LB_MEM_SIZE);
	default:
		return LB_MEM_BASE + (hs_rand() % (LB_MEM_SIZE / 4096)) * 4096;
	}
}

static uint32_t hs_dword(void)
{
	switch (hs_rand() % 4) {
	case 0:
		return (uint32_t)hs_rand();
	case 1:
		return (uint32_t)(hs_rand() % 16);
	case 2:
		return (uint32_t)(hs_rand() % 4) << 16 | (uint32_t)(hs_rand() % 64);
	default:
		return 0;
	}
}

static void hs_fill(struct nvme_sqe *sqe, bool admin)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->cdw0.bits.opc = admin ? hs_admin_ops[hs_rand() % sizeof(hs_admin_ops)]
				   : hs_io_ops[hs_rand() % sizeof(hs_io_ops)];
	if (hs_rand() % 16 == 0)
		sqe->cdw0.bits.opc = (uint8_t)hs_rand();
	sqe->cdw0.bits.psdt = hs_rand() % 8 == 0 ? hs_rand() % 4 : 0;
	sqe->cdw0.bits.fuse = hs_rand() % 32 == 0 ? 1 : 0;
	sqe->nsid = hs_rand() % 4 == 0 ? (uint32_t)hs_rand() : (uint32_t)(hs_rand() % 3);
	sqe->dptr.prp.prp1 = hs_addr();
	sqe->dptr.prp.prp2 = hs_addr();
	sqe->cdw10 = hs_dword();
	sqe->cdw11 = hs_dword();
	sqe->cdw12 = hs_dword();
	sqe->cdw13 = hs_rand() % 8 == 0 ? (uint32_t)hs_rand() : 0;
	sqe->cdw14 = hs_rand() % 8 == 0 ? (uint32_t)hs_rand() : 0;
}

static void test_random_commands(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	struct ctrlr_stats st;
	struct lb lb;
	uint64_t buf;

	hs_state = 0x9e3779b97f4a7c15ull;
	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(lb_add_malloc_ns(&lb, "hs0", 1, 4096, 512), 1);
	CU_ASSERT_EQUAL_FATAL(lb_add_malloc_ns(&lb, "hs1", 2, 256, 4096), 2);
	for (int round = 0; round < 8; round++) {
		CU_ASSERT_EQUAL(lb_enable(&lb, 32) & 1, 1);
		CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
		for (int i = 0; i < 1500; i++) {
			bool admin = hs_rand() % 3 == 0 || !lb.sqs[1];
			uint16_t qid = admin ? 0 : 1;

			hs_fill(&sqe, admin);
			lb_submit(&lb, qid, &sqe);
			switch (hs_rand() % 16) {
			case 0: /* a doorbell value beyond the queue */
				lb_ring_sq(&lb, qid, (uint32_t)hs_rand() % 200);
				break;
			case 1:
				if (lb.cqs[1])
					ctrlr_cq_head_doorbell(lb.cqs[1], (uint32_t)hs_rand() % 80);
				break;
			case 2: /* a doorbell for a queue that does not exist */
				ctrlr_doorbell_write(lb.ctrlr, (uint32_t)hs_rand() % 64,
						     (uint32_t)hs_rand());
				break;
			default:
				break;
			}
			lb_pump(&lb);
			while (lb_reap(&lb, qid, &cqe, false))
				;
			/* A random Delete SQ took queue 1: the host builds it again. */
			if (!lb.sqs[1]) {
				struct nvme_sqe del = lb_sqe(NVME_ADM_DELETE_CQ, 0);

				del.cdw10 = 1;
				if (lb.cqs[1])
					lb_cmd(&lb, 0, &del, NULL);
				lb_create_qpair(&lb, 1, 64, 1, true);
			}
		}
		/* A reset recovers from anything. */
		CU_ASSERT_EQUAL(lb_disable(&lb) & 1, 0);
	}
	/* The storm really reached the controller, errors and all. */
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_TRUE(st.admin_cmds > 2000);
	/* Random Doorbell Buffer Configs point shadow tails at memory this host never updates,
	 * which stalls queue 1 until the next reset: fewer I/O commands than submitted. */
	CU_ASSERT_TRUE(st.io_cmds > 1000);
	CU_ASSERT_TRUE(st.errors > 1000);
	CU_ASSERT_TRUE(st.invalid_db_writes > 100);
	CU_ASSERT_TRUE(st.resets >= 8);
	/* And the controller still does real work. */
	CU_ASSERT_EQUAL(lb_enable(&lb, 32) & 1, 1);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	buf = lb_alloc(&lb, 4096);
	memset(lb_ptr(&lb, buf), 0x5a, 4096);
	sqe = lb_sqe(NVME_CMD_WRITE, 1);
	sqe.dptr.prp.prp1 = buf;
	sqe.cdw12 = 7;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	memset(lb_ptr(&lb, buf), 0, 4096);
	sqe = lb_sqe(NVME_CMD_READ, 1);
	sqe.dptr.prp.prp1 = buf;
	sqe.cdw12 = 7;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(((uint8_t *)lb_ptr(&lb, buf))[4095], 0x5a);
	lb_fini(&lb);
}

CUNIT_SUITE(hostile, NULL, NULL, {"random_commands", test_random_commands})
