/* tests/unit/controller/resv_ctrl_test.c - reservations end to end: two controllers (two
 * loopback transports, two hosts) sharing one namespace; Host Identifier feature, the commands,
 * conflicts on I/O, Report with and without EDS, notifications (AEN and log page 80h), and Persist
 * Through Power Loss across a "restart" (both controllers destroyed and created again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/nvm/nvm.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static struct lb la, lbb;
static uint64_t abuf, bbuf; /* 4 KiB in each host's memory */
static char dir[] = "/tmp/resv_ctrlXXXXXX", ptpl[64];
static const uint8_t HA[16] = {0xaa, 1, 2, 3}, HB[16] = {0xbb, 4, 5, 6};

/* Both controllers attach bdev `name` as nsid 1 through one shared object. */
static int rc_start(bool fresh)
{
	struct ctrlr_config cfg;
	struct ctrlr_ns_shared *sh;
	struct ctrlr_ns_opts o = {0};
	struct bdev *bdev = bdev_lookup("EE_rc0");

	lb_default_config(&cfg);
	cfg.cntlid = 1;
	if (lb_init(&la, &cfg))
		return -1;
	cfg.cntlid = 2;
	cfg.serial = "LB0002";
	if (lb_init(&lbb, &cfg))
		return -1;
	/* An error bdev over the RAM one: the Preempt and Abort test holds reads in it. */
	if (fresh && (bdev_malloc_create("rc0", 256, 512, NULL, &bdev) ||
		      bdev_error_create("rc0", NULL, &bdev)))
		return -1;
	if (!bdev || ctrlr_ns_shared_create(ptpl, &sh))
		return -1;
	o.shared = sh;
	ctrlr_set_multi_ctrl(la.ctrlr, true);
	ctrlr_set_multi_ctrl(lbb.ctrlr, true);
	if (ctrlr_ns_add(la.ctrlr, 1, bdev, &o) != 1 || ctrlr_ns_add(lbb.ctrlr, 1, bdev, &o) != 1)
		return -1;
	ctrlr_ns_shared_put(sh);
	if (!(lb_enable(&la, 32) & 1) || !(lb_enable(&lbb, 32) & 1) ||
	    lb_create_qpair(&la, 1, 32, 1, true) || lb_create_qpair(&lbb, 1, 32, 1, true))
		return -1;
	abuf = lb_alloc(&la, 4096);
	bbuf = lb_alloc(&lbb, 4096);
	return 0;
}

/* Only the second fini deletes the bdev (the first finds it still open). */
static void rc_stop(void)
{
	lb_fini(&la);
	lb_fini(&lbb);
}

static int rc_init(void)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(ptpl, sizeof(ptpl), "%s/ns1.json", dir);
	return rc_start(true);
}

static int rc_fini(void)
{
	rc_stop();
	unlink(ptpl);
	rmdir(dir);
	return 0;
}

static uint8_t *rc_mem(struct lb *l)
{
	return lb_ptr(l, l == &la ? abuf : bbuf);
}

static uint64_t rc_addr(struct lb *l)
{
	return l == &la ? abuf : bbuf;
}

static uint16_t rc_set_hostid(struct lb *l, const uint8_t *id, bool ext)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);

	memset(rc_mem(l), 0, 16);
	memcpy(rc_mem(l), id, ext ? 16 : 8);
	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	sqe.cdw11 = ext ? NVME_HOST_ID_EXHID : 0;
	return lb_cmd(l, 0, &sqe, NULL);
}

static uint16_t rc_resv(struct lb *l, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);

	memcpy(rc_mem(l), &k1, 8);
	memcpy(rc_mem(l) + 8, &k2, 8);
	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = cdw10;
	return lb_cmd(l, 1, &sqe, NULL);
}

static uint16_t rc_report(struct lb *l, bool eds, uint32_t bytes)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_RESV_REPORT, 1);

	memset(rc_mem(l), 0xee, 4096);
	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = bytes / 4 - 1;
	sqe.cdw11 = eds ? NVME_RESV_REPORT_EDS : 0;
	return lb_cmd(l, 1, &sqe, NULL);
}

static uint16_t rc_io(struct lb *l, uint8_t opc, uint64_t slba)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);

	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = (uint32_t)slba;
	return lb_cmd(l, 1, &sqe, NULL);
}

static uint16_t rc_get_log(struct lb *l, uint8_t lid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 0);

	memset(rc_mem(l), 0xee, 64);
	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = lid | (64 / 4 - 1) << 16;
	return lb_cmd(l, 0, &sqe, NULL);
}

static const uint16_t CONFLICT = NVME_SC_RESV_CONFLICT | NVME_DNR;

static void test_two_hosts(void)
{
	const struct nvme_resv_status_hdr *h = (const void *)rc_mem(&lbb);
	const struct nvme_resv_ctrl_ext *e = (const void *)(rc_mem(&lbb) + NVME_RESV_EXT_HDR_SIZE);
	const struct nvme_resv_notify_log *lg = (const void *)rc_mem(&la);
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint32_t cdw0;
	uint16_t aer;

	/* Each controller gets its host's 128-bit identifier; Get Features gives it back. */
	CU_ASSERT_EQUAL(rc_set_hostid(&la, HA, true), 0);
	CU_ASSERT_EQUAL(rc_set_hostid(&lbb, HB, true), 0);
	sqe = lb_sqe(NVME_ADM_GET_FEATURES, 0);
	sqe.dptr.prp.prp1 = abuf;
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	sqe.cdw11 = NVME_HOST_ID_EXHID;
	memset(rc_mem(&la), 0, 16);
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, &cdw0), 0);
	CU_ASSERT_EQUAL(memcmp(rc_mem(&la), HA, 16), 0);
	sqe.cdw11 = 0; /* the 64-bit form while a 128-bit one is in use */
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, NULL), NVME_SC_HOSTID_INCONSISTENT | NVME_DNR);

	/* Both register; the identity is then fixed. */
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa), 0);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb), 0);
	CU_ASSERT_EQUAL(rc_set_hostid(&la, HB, true), NVME_SC_CMD_SEQ_ERROR | NVME_DNR);

	/* A takes Write Exclusive: B may read, not write; A does both. */
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WRITE_EXCLUSIVE << 8, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE, 3), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE_ZEROES, 3), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_FLUSH, 0), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_READ, 3), 0);
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_WRITE, 3), 0);
	/* A fused Compare and Write from B fails on its write half. */
	{
		struct nvme_sqe c = lb_sqe(NVME_CMD_COMPARE, 1), w = lb_sqe(NVME_CMD_WRITE, 1);
		int cid1, cid2;
		uint16_t s1 = LB_NO_CQE, s2 = LB_NO_CQE;

		c.dptr.prp.prp1 = w.dptr.prp.prp1 = bbuf;
		c.cdw0.bits.fuse = NVME_FUSE_FIRST;
		w.cdw0.bits.fuse = NVME_FUSE_SECOND;
		cid1 = nvme_host_submit(&lbb.h, 1, &c, true);
		cid2 = nvme_host_submit(&lbb.h, 1, &w, false);
		while (lb_reap(&lbb, 1, &cqe, false)) {
			if (cqe.cid == cid1)
				s1 = cqe.status >> 1;
			if (cqe.cid == cid2)
				s2 = cqe.status >> 1;
		}
		CU_ASSERT_EQUAL(s1, NVME_SC_FUSED_FAIL | NVME_DNR);
		CU_ASSERT_EQUAL(s2, CONFLICT);
	}

	/* Report: B's view, extended (128-bit host identifiers). */
	CU_ASSERT_EQUAL(rc_report(&lbb, false, 4096), NVME_SC_HOSTID_INCONSISTENT | NVME_DNR);
	CU_ASSERT_EQUAL(rc_report(&lbb, true, 4096), 0);
	CU_ASSERT_EQUAL(h->gen, 2);
	CU_ASSERT_EQUAL(h->rtype, NVME_RESV_WRITE_EXCLUSIVE);
	CU_ASSERT_EQUAL(h->regctl, 2);
	CU_ASSERT_EQUAL(h->ptpls, 0);
	for (int i = 0; i < 2; i++) {
		bool a = e[i].cntlid == 1;

		CU_ASSERT_TRUE(e[i].cntlid == 1 || e[i].cntlid == 2);
		CU_ASSERT_EQUAL(e[i].rcsts, a ? 1 : 0);
		CU_ASSERT_EQUAL(e[i].rkey, a ? 0xa : 0xb);
		CU_ASSERT_EQUAL(memcmp(e[i].hostid, a ? HA : HB, 16), 0);
	}
	CU_ASSERT_EQUAL(rc_mem(&lbb)[NVME_RESV_EXT_HDR_SIZE + 2 * 64], 0); /* zero past the data */
	/* A short buffer gets the head of it. */
	CU_ASSERT_EQUAL(rc_report(&lbb, true, 64), 0);
	CU_ASSERT_EQUAL(h->regctl, 2);
	CU_ASSERT_EQUAL(rc_mem(&lbb)[64], 0xee);

	/* B preempts A: A hears it by AEN and log page 80h, and is locked out (Exclusive
	 * Access). */
	sqe = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);
	aer = lb_submit(&la, 0, &sqe);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_ACQUIRE,
				NVME_RACQA_PREEMPT | NVME_RESV_EXCLUSIVE_ACCESS << 8, 0xb, 0xa),
			0);
	lb_pump(&la);
	CU_ASSERT_TRUE(lb_reap(&la, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, aer);
	CU_ASSERT_EQUAL(cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_IO_SPECIFIC, NVME_AER_IO_RESV_LOG,
					      NVME_LOG_RESV_NOTIFY));
	CU_ASSERT_EQUAL(rc_get_log(&la, NVME_LOG_RESV_NOTIFY), 0);
	CU_ASSERT_EQUAL(lg->count, 1);
	CU_ASSERT_EQUAL(lg->type, NVME_RESV_NOTIFY_REG_PREEMPTED);
	CU_ASSERT_EQUAL(lg->nsid, 1);
	CU_ASSERT_EQUAL(lg->nr_avail, 0);
	CU_ASSERT_EQUAL(rc_get_log(&la, NVME_LOG_RESV_NOTIFY), 0);
	CU_ASSERT_EQUAL(lg->type, NVME_RESV_NOTIFY_EMPTY);
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_READ, 3), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_WRITE, 3), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE, 3), 0);
	/* A is no registrant any more: it cannot release; B releases. */
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_RELEASE, NVME_RESV_EXCLUSIVE_ACCESS << 8, 0xa, 0),
			CONFLICT);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_RELEASE, NVME_RESV_EXCLUSIVE_ACCESS << 8, 0xb, 0),
			0);
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_WRITE, 3), 0);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_UNREGISTER, 0xb, 0), 0);
	/* The effects log lists the four commands. */
	CU_ASSERT_TRUE(ctrlr_io_effects(la.ctrlr, NVME_CSI_NVM, NVME_CMD_RESV_ACQUIRE) & NVME_CMD_EFFECTS_CSUPP);
}

/* A 64-bit host identifier: Report without EDS; the notification mask silences a type. */
static void test_hostid_64(void)
{
	const struct nvme_resv_status_hdr *h = (const void *)rc_mem(&la);
	const struct nvme_resv_ctrl *e = (const void *)(rc_mem(&la) + sizeof(*h));
	struct nvme_sqe sqe;
	uint64_t id;

	CU_ASSERT_EQUAL(rc_set_hostid(&la, (const uint8_t *)"\x01\x02\x03\x04\x05\x06\x07\x08", false),
			0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0x64), 0);
	CU_ASSERT_EQUAL(rc_report(&la, true, 4096), NVME_SC_HOSTID_INCONSISTENT | NVME_DNR);
	CU_ASSERT_EQUAL(rc_report(&la, false, 4096), 0);
	CU_ASSERT_EQUAL(h->regctl, 1);
	CU_ASSERT_EQUAL(e->cntlid, 1);
	memcpy(&id, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	CU_ASSERT_EQUAL(e->hostid, id);
	CU_ASSERT_EQUAL(e->rkey, 0x64);
	/* Mask Registration Preempted on A: B's preempt leaves no page. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 1);
	sqe.cdw10 = NVME_FEAT_RESV_MASK;
	sqe.cdw11 = NVME_RESV_MASK_REGPRE;
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, NULL), 0);
	sqe.cdw11 = 1; /* reserved bit */
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb), 0);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_ACQUIRE, NVME_RACQA_PREEMPT | 1 << 8, 0xb, 0x64), 0);
	CU_ASSERT_EQUAL(rc_get_log(&la, NVME_LOG_RESV_NOTIFY), 0);
	CU_ASSERT_EQUAL(((const struct nvme_resv_notify_log *)rc_mem(&la))->type, 0);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_RELEASE, NVME_RRELA_CLEAR, 0xb, 0), 0);
	sqe.cdw11 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, NULL), 0);
}

/* PTPL: set through Register's CPTPL; the registrations and the reservation are back after both
 * controllers and the shared namespace are destroyed and created again from the state file. */
static void test_ptpl_restart(void)
{
	/* The hosts' memory is new after each restart: looked up each time. */
#define h ((const struct nvme_resv_status_hdr *)rc_mem(&lbb))
#define e ((const struct nvme_resv_ctrl_ext *)(rc_mem(&lbb) + NVME_RESV_EXT_HDR_SIZE))
	struct nvme_sqe sqe;
	uint32_t cdw0;

	CU_ASSERT_EQUAL(rc_set_hostid(&la, HA, true), 0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER | 3u << 30, 0, 0xa1),
			0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WE_REG_ONLY << 8, 0xa1, 0), 0);
	sqe = lb_sqe(NVME_ADM_GET_FEATURES, 1);
	sqe.cdw10 = NVME_FEAT_RESV_PERSIST;
	CU_ASSERT_EQUAL(lb_cmd(&la, 0, &sqe, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 1);
	CU_ASSERT_EQUAL(access(ptpl, F_OK), 0);
	rc_stop();
	/* The bdev went with the last controller: a new one, same name (the file is what
	 * matters). */
	CU_ASSERT_EQUAL_FATAL(rc_start(true), 0);
	CU_ASSERT_EQUAL(rc_set_hostid(&lbb, HB, true), 0);
	CU_ASSERT_EQUAL(rc_report(&lbb, true, 4096), 0);
	CU_ASSERT_EQUAL(h->ptpls, 1);
	CU_ASSERT_EQUAL(h->rtype, NVME_RESV_WE_REG_ONLY);
	CU_ASSERT_EQUAL(h->regctl, 1);
	/* A's host has not come back yet: no controller. */
	CU_ASSERT_EQUAL(e->cntlid, NVME_RESV_CNTLID_UNKNOWN);
	CU_ASSERT_EQUAL(e->rkey, 0xa1);
	CU_ASSERT_EQUAL(e->rcsts, 1);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE, 5), CONFLICT);
	/* A new controller's host identifier is 0, no registrant: blocked. Host A comes back
	 * (sets its identifier): it holds the reservation again and writes. */
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_WRITE, 5), CONFLICT);
	CU_ASSERT_EQUAL(rc_set_hostid(&la, HA, true), 0);
	CU_ASSERT_EQUAL(rc_io(&la, NVME_CMD_WRITE, 5), 0);
	CU_ASSERT_EQUAL(rc_report(&lbb, true, 4096), 0);
	CU_ASSERT_EQUAL(e->cntlid, 1);
	/* Turning PTPL off through the feature: the file says so, the state stays until power
	 * loss. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 1);
	sqe.cdw10 = NVME_FEAT_RESV_PERSIST;
	sqe.cdw11 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lbb, 0, &sqe, NULL), 0);
	rc_stop();
	CU_ASSERT_EQUAL_FATAL(rc_start(true), 0);
	CU_ASSERT_EQUAL(rc_set_hostid(&lbb, HB, true), 0);
	CU_ASSERT_EQUAL(rc_report(&lbb, true, 4096), 0);
	CU_ASSERT_EQUAL(h->regctl, 0);
	CU_ASSERT_EQUAL(h->rtype, 0);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE, 5), 0);
#undef h
#undef e
}

/* A reservation command of l that also needs the other controller's threads to run (Preempt
 * and Abort waits for the preempted controller's SQs): both loopbacks are pumped. */
static uint16_t rc_resv_both(struct lb *l, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);
	struct lb *other = l == &la ? &lbb : &la;
	struct nvme_cqe cqe;
	uint16_t cid;

	memcpy(rc_mem(l), &k1, 8);
	memcpy(rc_mem(l) + 8, &k2, 8);
	sqe.dptr.prp.prp1 = rc_addr(l);
	sqe.cdw10 = cdw10;
	cid = lb_submit(l, 1, &sqe);
	for (int i = 0; i < 16; i++) {
		lb_pump(other);
		lb_pump(l);
		while (lb_reap(l, 1, &cqe, false))
			if (cqe.cid == cid)
				return cqe.status >> 1;
	}
	return LB_NO_CQE;
}

/* Preempt and Abort: B's read held in the bdev when A preempts B's registration ends with
 * Command Aborted due to Preempt and Abort once the bdev returns it; A's own held read is not
 * touched; B's later writes conflict; a plain Preempt aborts nothing; B's read still in its SQ
 * ends with 1Bh when fetched. */
static void test_preempt_abort(void)
{
	struct bdev_error_injection inj = {.type = BDEV_ERROR_PENDING, .num = 2};
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint16_t ra, rb, sa = LB_NO_CQE, sb = LB_NO_CQE;

	CU_ASSERT_EQUAL(rc_set_hostid(&la, HA, true), 0);
	CU_ASSERT_EQUAL(rc_set_hostid(&lbb, HB, true), 0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa), 0);
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb), 0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WE_REG_ONLY << 8, 0xa, 0), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_error_inject("EE_rc0", BDEV_IO_READ, &inj), 0);
	sqe = lb_sqe(NVME_CMD_READ, 1);
	sqe.dptr.prp.prp1 = bbuf;
	rb = lb_submit(&lbb, 1, &sqe);
	sqe.dptr.prp.prp1 = abuf + 2048;
	ra = lb_submit(&la, 1, &sqe);
	CU_ASSERT_FALSE(lb_reap(&lbb, 1, &cqe, false));
	CU_ASSERT_FALSE(lb_reap(&la, 1, &cqe, false));
	CU_ASSERT_EQUAL(rc_resv_both(&la, NVME_CMD_RESV_ACQUIRE,
				     NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WE_REG_ONLY << 8, 0xa, 0xb),
			0);
	CU_ASSERT_EQUAL(bdev_error_resume_pending("EE_rc0"), 0);
	for (int i = 0; i < 4; i++) {
		lb_pump(&la);
		lb_pump(&lbb);
	}
	while (lb_reap(&lbb, 1, &cqe, false))
		if (cqe.cid == rb)
			sb = cqe.status >> 1;
	while (lb_reap(&la, 1, &cqe, false))
		if (cqe.cid == ra)
			sa = cqe.status >> 1;
	CU_ASSERT_EQUAL(sb, NVME_SC_PREEMPT_ABORT | NVME_DNR);
	CU_ASSERT_EQUAL(sa, 0);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_rc0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	/* B is no registrant now: Write Exclusive - Registrants Only lets it read, not write. */
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_WRITE, 3), CONFLICT);
	CU_ASSERT_EQUAL(rc_io(&lbb, NVME_CMD_READ, 3), 0);
	/* A plain Preempt leaves running commands alone. */
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb), 0);
	inj.num = 1;
	CU_ASSERT_EQUAL_FATAL(bdev_error_inject("EE_rc0", BDEV_IO_READ, &inj), 0);
	sqe.dptr.prp.prp1 = bbuf;
	rb = lb_submit(&lbb, 1, &sqe);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_ACQUIRE,
				NVME_RACQA_PREEMPT | NVME_RESV_WE_REG_ONLY << 8, 0xa, 0xb),
			0);
	CU_ASSERT_EQUAL(bdev_error_resume_pending("EE_rc0"), 0);
	sb = LB_NO_CQE;
	for (int i = 0; i < 4; i++)
		lb_pump(&lbb);
	while (lb_reap(&lbb, 1, &cqe, false))
		if (cqe.cid == rb)
			sb = cqe.status >> 1;
	CU_ASSERT_EQUAL(sb, 0);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_rc0", BDEV_ERROR_IO_CLEAR, NULL), 0);

	/* B's read still in its SQ (every request of an 8-entry SQ held: six reads, a write that
	 * completes so the host sees the head move, two more reads) when A preempts and aborts:
	 * fetched later, it ends with 1Bh without running, like the held reads; B's read
	 * submitted after the preempt runs (Write Exclusive - Registrants Only lets B read). */
	CU_ASSERT_EQUAL(rc_resv(&lbb, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb), 0);
	CU_ASSERT_EQUAL_FATAL(lb_create_qpair(&lbb, 2, 8, 2, true), 0);
	inj.num = 8;
	CU_ASSERT_EQUAL_FATAL(bdev_error_inject("EE_rc0", BDEV_IO_READ, &inj), 0);
	{
		uint16_t held[8], w, queued, later, st[3] = {LB_NO_CQE, LB_NO_CQE, LB_NO_CQE};
		struct nvme_sqe wr = lb_sqe(NVME_CMD_WRITE, 1);
		unsigned int aborted = 0;

		for (int i = 0; i < 6; i++)
			held[i] = (uint16_t)nvme_host_submit(&lbb.h, 2, &sqe, true);
		wr.dptr.prp.prp1 = bbuf;
		wr.cdw10 = 50;
		w = lb_submit(&lbb, 2, &wr);
		for (int i = 0; i < 16 && st[0] == LB_NO_CQE; i++)
			while (lb_reap(&lbb, 2, &cqe, false))
				if (cqe.cid == w)
					st[0] = cqe.status >> 1;
		CU_ASSERT_EQUAL(st[0], 0);
		held[6] = lb_submit(&lbb, 2, &sqe);
		held[7] = lb_submit(&lbb, 2, &sqe);
		CU_ASSERT_EQUAL(lbb.sqs[2]->inflight, 8);
		queued = lb_submit(&lbb, 2, &sqe);
		CU_ASSERT_EQUAL(lbb.sqs[2]->tail, (lbb.sqs[2]->head + 1) % 8);
		CU_ASSERT_EQUAL(rc_resv_both(&la, NVME_CMD_RESV_ACQUIRE,
					     NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WE_REG_ONLY << 8,
					     0xa, 0xb),
				0);
		later = lb_submit(&lbb, 2, &sqe);
		CU_ASSERT_EQUAL(bdev_error_resume_pending("EE_rc0"), 0);
		for (int i = 0; i < 8; i++) {
			lb_pump(&lbb);
			while (lb_reap(&lbb, 2, &cqe, false)) {
				if (cqe.cid == queued)
					st[1] = cqe.status >> 1;
				else if (cqe.cid == later)
					st[2] = cqe.status >> 1;
				for (int k = 0; k < 8; k++)
					if (cqe.cid == held[k] &&
					    cqe.status >> 1 == (NVME_SC_PREEMPT_ABORT | NVME_DNR))
						aborted++;
			}
		}
		CU_ASSERT_EQUAL(st[1], NVME_SC_PREEMPT_ABORT | NVME_DNR);
		CU_ASSERT_EQUAL(st[2], 0);
		CU_ASSERT_EQUAL(aborted, 8);
		CU_ASSERT_EQUAL(lbb.sqs[2]->preempt_left, 0);
	}
	CU_ASSERT_EQUAL(bdev_error_inject("EE_rc0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	CU_ASSERT_EQUAL(nvme_host_delete_io_queues(&lbb.h, 2), 0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_RELEASE, NVME_RESV_WE_REG_ONLY << 8, 0xa, 0), 0);
	CU_ASSERT_EQUAL(rc_resv(&la, NVME_CMD_RESV_REGISTER, NVME_RREGA_UNREGISTER, 0xa, 0), 0);
}

CUNIT_SUITE(resv_ctrl, rc_init, rc_fini, {"two_hosts", test_two_hosts},
	    {"hostid_64", test_hostid_64}, {"ptpl_restart", test_ptpl_restart},
	    {"preempt_abort", test_preempt_abort})
