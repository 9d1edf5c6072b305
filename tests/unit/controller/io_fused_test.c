/* tests/unit/controller/io_fused_test.c - fused Compare and Write through the loopback transport:
 * success, miscompare, missing and mismatched halves, and a write racing with the pair on another
 * queue (it must wait for the pair's range lock). */
#include <string.h>

#include "controller/nvm/nvm.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static struct lb lb;
static uint64_t cbuf, wbuf, rbuf; /* compare data, write data, read-back buffer (4 KiB each) */

static int fu_init(void)
{
	if (lb_init(&lb, NULL) || lb_add_malloc_ns(&lb, "fu0", 1, 1024, 512) != 1)
		return -1;
	if (!(lb_enable(&lb, 32) & 1) || lb_create_qpair(&lb, 1, 64, 1, true) ||
	    lb_create_qpair(&lb, 2, 64, 2, true))
		return -1;
	cbuf = lb_alloc(&lb, 4096);
	wbuf = lb_alloc(&lb, 4096);
	rbuf = lb_alloc(&lb, 4096);
	return 0;
}

static int fu_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static struct nvme_sqe fu_sqe(uint8_t opc, uint64_t buf, uint64_t slba, uint32_t nlb, uint32_t fuse)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);

	sqe.dptr.prp.prp1 = buf;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw12 = nlb - 1;
	sqe.cdw0.bits.fuse = fuse;
	return sqe;
}

static void fu_fill(uint64_t buf, uint8_t seed)
{
	memset(lb_ptr(&lb, buf), seed, 4096);
}

/* Writes seed at slba (nlb blocks), plainly. */
static void fu_write(uint64_t slba, uint32_t nlb, uint8_t seed)
{
	struct nvme_sqe sqe = fu_sqe(NVME_CMD_WRITE, wbuf, slba, nlb, 0);

	fu_fill(wbuf, seed);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
}

static bool fu_holds(uint64_t slba, uint32_t nlb, uint8_t seed)
{
	struct nvme_sqe sqe = fu_sqe(NVME_CMD_READ, rbuf, slba, nlb, 0);
	const uint8_t *p = lb_ptr(&lb, rbuf);

	memset(lb_ptr(&lb, rbuf), ~seed, 4096);
	if (lb_cmd(&lb, 1, &sqe, NULL))
		return false;
	for (uint32_t i = 0; i < nlb * 512; i++)
		if (p[i] != seed)
			return false;
	return true;
}

/* Submits the SQEs to qid with one doorbell, pumps, and returns the statuses by cid order. */
static void fu_run(uint16_t qid, struct nvme_sqe *sqes, int n, uint16_t *st)
{
	uint16_t cids[4];
	struct nvme_cqe cqe;
	int got = 0;

	for (int i = 0; i < n; i++)
		cids[i] = (uint16_t)nvme_host_submit(&lb.h, qid, &sqes[i], i + 1 < n);
	lb_pump(&lb);
	for (int i = 0; i < n; i++)
		st[i] = LB_NO_CQE;
	while (got < n && lb_reap(&lb, qid, &cqe, false)) {
		for (int i = 0; i < n; i++)
			if (cqe.cid == cids[i])
				st[i] = cqe.status >> 1;
		got++;
	}
}

static void test_caw_success(void)
{
	struct nvme_sqe s[2];
	uint16_t st[2];

	fu_write(10, 4, 0x11);
	fu_fill(cbuf, 0x11);
	fu_fill(wbuf, 0x22);
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 10, 4, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 10, 4, NVME_FUSE_SECOND);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], 0);
	CU_ASSERT_EQUAL(st[1], 0);
	CU_ASSERT_TRUE(fu_holds(10, 4, 0x22));
}

static void test_caw_miscompare(void)
{
	struct nvme_sqe s[2];
	uint16_t st[2];

	fu_write(20, 2, 0x33);
	fu_fill(cbuf, 0x34); /* not what is there */
	fu_fill(wbuf, 0x44);
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 20, 2, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 20, 2, NVME_FUSE_SECOND);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_COMPARE_FAILED | NVME_DNR);
	CU_ASSERT_EQUAL(st[1], NVME_SC_FUSED_FAIL | NVME_DNR);
	CU_ASSERT_TRUE(fu_holds(20, 2, 0x33));
}

static void test_caw_broken_pairs(void)
{
	struct nvme_sqe s[2];
	uint16_t st[2];

	fu_write(30, 1, 0x55);
	fu_fill(cbuf, 0x55);
	fu_fill(wbuf, 0x66);
	/* A first command alone. */
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 30, 1, NVME_FUSE_FIRST);
	fu_run(1, s, 1, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_FUSED_MISSING | NVME_DNR);
	/* A second command alone. */
	s[0] = fu_sqe(NVME_CMD_WRITE, wbuf, 30, 1, NVME_FUSE_SECOND);
	fu_run(1, s, 1, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_FUSED_MISSING | NVME_DNR);
	CU_ASSERT_TRUE(fu_holds(30, 1, 0x55));
	/* A first followed by an ordinary command: the first is missing its second, the other
	 * command runs as usual. */
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 30, 1, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 30, 1, 0);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_FUSED_MISSING | NVME_DNR);
	CU_ASSERT_EQUAL(st[1], 0);
	CU_ASSERT_TRUE(fu_holds(30, 1, 0x66));
	/* Different ranges: the second is invalid, the first fails with it. */
	fu_fill(cbuf, 0x66);
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 30, 1, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 31, 1, NVME_FUSE_SECOND);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_FUSED_FAIL | NVME_DNR);
	CU_ASSERT_EQUAL(st[1], NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Only Compare + Write fuse. */
	s[0] = fu_sqe(NVME_CMD_READ, cbuf, 30, 1, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 30, 1, NVME_FUSE_SECOND);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(st[1], NVME_SC_FUSED_FAIL | NVME_DNR);
	/* Out of range: the compare fails, the write with it. */
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 1024, 1, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 1024, 1, NVME_FUSE_SECOND);
	fu_run(1, s, 2, st);
	CU_ASSERT_EQUAL(st[0], NVME_SC_LBA_RANGE | NVME_DNR);
	CU_ASSERT_EQUAL(st[1], NVME_SC_FUSED_FAIL | NVME_DNR);
	CU_ASSERT_TRUE(fu_holds(30, 1, 0x66));
}

/* The pair starts on queue 1 (its compare is in the bdev), then a plain write of the same blocks
 * arrives on queue 2 before anything completes: it must wait until the pair wrote, so the compare
 * sees the old data and the last write wins. Without the range lock the plain write reaches the
 * bdev first and the pair's write overwrites it. */
static void test_caw_race(void)
{
	struct nvme_sqe s[2], w;
	uint64_t rbuf2 = lb_alloc(&lb, 4096);
	struct nvme_cqe cqe;
	uint16_t st1[2] = {LB_NO_CQE, LB_NO_CQE}, st2 = LB_NO_CQE;
	int cid1[2], cid2;

	fu_write(40, 4, 0x77);
	fu_fill(cbuf, 0x77);
	fu_fill(wbuf, 0x88);
	memset(lb_ptr(&lb, rbuf2), 0x99, 4096);
	s[0] = fu_sqe(NVME_CMD_COMPARE, cbuf, 40, 4, NVME_FUSE_FIRST);
	s[1] = fu_sqe(NVME_CMD_WRITE, wbuf, 40, 4, NVME_FUSE_SECOND);
	w = fu_sqe(NVME_CMD_WRITE, rbuf2, 41, 1, 0);
	cid1[0] = nvme_host_submit(&lb.h, 1, &s[0], true);
	cid1[1] = nvme_host_submit(&lb.h, 1, &s[1], true);
	cid2 = nvme_host_submit(&lb.h, 2, &w, true);
	/* Doorbells straight to the queues, with nothing pumped in between. */
	CU_ASSERT_EQUAL(ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail), 0);
	ctrlr_sq_poll(lb.sqs[1], 64);
	CU_ASSERT_EQUAL(ctrlr_sq_tail_doorbell(lb.sqs[2], lb.h.q[2].sq_tail), 0);
	ctrlr_sq_poll(lb.sqs[2], 64);
	lb_pump(&lb);
	while (lb_reap(&lb, 1, &cqe, false))
		st1[cqe.cid == cid1[0] ? 0 : 1] = cqe.status >> 1;
	while (lb_reap(&lb, 2, &cqe, false))
		if (cqe.cid == cid2)
			st2 = cqe.status >> 1;
	CU_ASSERT_EQUAL(st1[0], 0);
	CU_ASSERT_EQUAL(st1[1], 0);
	CU_ASSERT_EQUAL(st2, 0);
	CU_ASSERT_TRUE(fu_holds(40, 1, 0x88));
	CU_ASSERT_TRUE(fu_holds(41, 1, 0x99));
	CU_ASSERT_TRUE(fu_holds(42, 2, 0x88));
	/* The lock table is empty again: a fast write goes through. */
	fu_write(41, 1, 0x10);
	CU_ASSERT_TRUE(fu_holds(41, 1, 0x10));
}

static void test_fuses_advertised(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	uint64_t id = lb_alloc(&lb, 4096);
	const struct nvme_id_ctrl *ic = lb_ptr(&lb, id);

	sqe.dptr.prp.prp1 = id;
	sqe.cdw10 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(ic->fuses, NVME_FUSES_COMPARE_WRITE);
	CU_ASSERT_TRUE(ic->oncs & NVME_ONCS_RESERVATIONS);
	CU_ASSERT_FALSE(ic->cmic & NVME_CMIC_MULTI_CTRL);
}

CUNIT_SUITE(io_fused, fu_init, fu_fini, {"caw_success", test_caw_success},
	    {"caw_miscompare", test_caw_miscompare}, {"caw_broken_pairs", test_caw_broken_pairs},
	    {"caw_race", test_caw_race}, {"fuses_advertised", test_fuses_advertised})
