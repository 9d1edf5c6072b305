/* tests/unit/controller/admin_ext_test.c - Device Self-test, Sanitize, Telemetry, the Persistent
 * Event Log and Abort of running and queued commands through the loopback transport, over a
 * malloc bdev stacked under an error bdev (held, failed requests) so the background state
 * machines can be stopped in the middle and made to fail. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/device/device.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define X_BLOCKS 2048
static struct lb lb;
static uint64_t x_buf; /* 64 KiB in guest memory */

static int x_init(void)
{
	struct bdev *b;

	if (lb_init(&lb, NULL))
		return -1;
	if (bdev_malloc_create("xm0", X_BLOCKS, 512, NULL, &b) ||
	    bdev_error_create("xm0", NULL, &b) || ctrlr_ns_add(lb.ctrlr, 1, b, NULL) != 1)
		return -1;
	if (lb_add_malloc_ns(&lb, "xm1", 2, 64, 4096) != 2)
		return -1;
	if (!(lb_enable(&lb, 32) & 1))
		return -1;
	if (lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	x_buf = lb_alloc(&lb, 65536);
	return 0;
}

static int x_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *xb(void)
{
	return lb_ptr(&lb, x_buf);
}

static uint16_t x_log(uint8_t lid, uint8_t lsp, uint32_t len, uint64_t off, uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, nsid);
	uint32_t numd = len / 4;

	memset(xb(), 0xa5, 65536);
	sqe.dptr.prp.prp1 = x_buf;
	sqe.dptr.prp.prp2 = x_buf + 4096;
	if (len > 8192) {
		/* A PRP list in the buffer's last page. */
		uint64_t *list = (uint64_t *)(xb() + 61440);

		for (uint32_t i = 1; i * 4096 < len; i++)
			list[i - 1] = x_buf + i * 4096;
		sqe.dptr.prp.prp2 = x_buf + 61440;
	}
	sqe.cdw10 = lid | (uint32_t)lsp << 8 | (numd - 1) << 16;
	sqe.cdw11 = (numd - 1) >> 16;
	sqe.cdw12 = (uint32_t)off;
	sqe.cdw13 = (uint32_t)(off >> 32);
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t x_dst(uint8_t stc, uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SELF_TEST, nsid);

	sqe.cdw10 = stc;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t x_sanitize(uint32_t cdw10, uint32_t pattern)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SANITIZE, 0);

	sqe.cdw10 = cdw10;
	sqe.cdw11 = pattern;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static struct nvme_sqe x_rw_sqe(uint8_t opc, uint64_t slba, uint32_t nlb)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);

	sqe.dptr.prp.prp1 = x_buf;
	sqe.dptr.prp.prp2 = x_buf + 4096;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw12 = nlb - 1;
	return sqe;
}

static uint16_t x_rw(uint8_t opc, uint64_t slba, uint32_t nlb)
{
	struct nvme_sqe sqe = x_rw_sqe(opc, slba, nlb);

	return lb_cmd(&lb, 1, &sqe, NULL);
}

static void x_inject(int io_type, enum bdev_error_type type, uint32_t num)
{
	struct bdev_error_injection inj = {.type = type, .num = num};

	CU_ASSERT_EQUAL_FATAL(bdev_error_inject("EE_xm0", io_type, &inj), 0);
}

static void x_resume(void)
{
	CU_ASSERT_EQUAL(bdev_error_resume_pending("EE_xm0"), 0);
	/* The first poll sends the held requests down, later ones reap them. */
	for (int i = 0; i < 4; i++)
		lb_pump(&lb);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
}

static struct nvme_dst_log *x_dst_log(void)
{
	CU_ASSERT_EQUAL(x_log(NVME_LOG_SELF_TEST, 0, sizeof(struct nvme_dst_log), 0, 0), 0);
	return (struct nvme_dst_log *)xb();
}

static struct nvme_sanitize_log *x_san_log(void)
{
	CU_ASSERT_EQUAL(x_log(NVME_LOG_SANITIZE, 0, 512, 0, 0), 0);
	return (struct nvme_sanitize_log *)xb();
}

static uint64_t x_bdev_read_bytes(void)
{
	struct bdev_stats st;

	bdev_get_stats(bdev_lookup("EE_xm0"), &st);
	return st.bytes_read;
}

static void test_advertised(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)xb();
	uint32_t *acs = (uint32_t *)xb();

	sqe.cdw10 = NVME_CNS_CTRL;
	sqe.dptr.prp.prp1 = x_buf;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(id->oacs & NVME_OACS_SELF_TEST);
	CU_ASSERT_TRUE(id->lpa & NVME_LPA_TELEMETRY);
	CU_ASSERT_TRUE(id->lpa & NVME_LPA_PEL);
	CU_ASSERT_TRUE(id->oaes & NVME_OAES_TELEMETRY);
	/* Block erase, overwrite, crypto erase (carried out as a block erase); Format NVM's
	 * cryptographic erase likewise (FNA bit 2). */
	CU_ASSERT_EQUAL(id->sanicap, NVME_SANICAP_CES | NVME_SANICAP_BES | NVME_SANICAP_OWS |
					 NVME_SANICAP_NODMMAS_UNMODIFIED);
	CU_ASSERT_EQUAL(id->fna, NVME_FNA_CRYPTO_ERASE);
	CU_ASSERT_TRUE(id->edstt >= 1);
	CU_ASSERT_EQUAL(id->dsto, 1);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_CMD_EFFECTS, 0, 4096, 0, 0), 0);
	CU_ASSERT_TRUE(acs[NVME_ADM_SELF_TEST] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(acs[NVME_ADM_SANITIZE] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(acs[NVME_ADM_SANITIZE] & NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_SUPPORTED, 0, 1024, 0, 0), 0);
	CU_ASSERT_EQUAL(acs[NVME_LOG_SELF_TEST], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(acs[NVME_LOG_SANITIZE], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(acs[NVME_LOG_TELEMETRY_HOST], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(acs[NVME_LOG_PERSISTENT_EVENT], NVME_LOG_SUPPORTED_LSUPP);
}

static void test_self_test_runs(void)
{
	uint64_t before = x_bdev_read_bytes();
	struct nvme_dst_log *log;

	CU_ASSERT_EQUAL(x_dst(0x3, 1), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 9), NVME_SC_INVALID_NS | NVME_DNR);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, NVME_NSID_ALL), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->current_op, 0);
	CU_ASSERT_EQUAL(log->result[0].status, NVME_DST_SHORT << 4 | NVME_DST_RES_OK);
	CU_ASSERT_EQUAL(log->result[1].status, NVME_DST_RES_UNUSED);
	/* The data segment read the namespace (1 MiB here, under the short test's 16 MiB). */
	CU_ASSERT_EQUAL(x_bdev_read_bytes() - before, X_BLOCKS * 512ull);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_EXTENDED, 2), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->result[0].status, NVME_DST_EXTENDED << 4 | NVME_DST_RES_OK);
	CU_ASSERT_TRUE(log->result[0].valid & NVME_DST_VALID_NSID);
	CU_ASSERT_EQUAL(log->result[0].nsid, 2);
	CU_ASSERT_EQUAL(log->result[1].status, NVME_DST_SHORT << 4 | NVME_DST_RES_OK);
}

static void test_self_test_failures(void)
{
	struct ctrlr_health_set hs = {.spare = 5, .used = -1};
	struct nvme_dst_log *log;
	struct nvme_telemetry_hdr *th;
	uint8_t gen;

	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_CTRL, 0, 512, 0, 0), 0);
	gen = ((struct nvme_telemetry_hdr *)xb())->ctrl_gen;
	/* A read the media fails: segment 6, the chunk's LBA, the status. */
	x_inject(BDEV_IO_READ, BDEV_ERROR_FAILURE, 1);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 1), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->result[0].status, NVME_DST_SHORT << 4 | NVME_DST_RES_FAILED_SEGMENT);
	CU_ASSERT_EQUAL(log->result[0].segment, 6);
	CU_ASSERT_EQUAL(log->result[0].valid, NVME_DST_VALID_NSID | NVME_DST_VALID_FLBA |
						  NVME_DST_VALID_SCT | NVME_DST_VALID_SC);
	CU_ASSERT_EQUAL(log->result[0].nsid, 1);
	CU_ASSERT_EQUAL(log->result[0].flba, 0);
	CU_ASSERT_EQUAL(log->result[0].sct, NVME_SCT_MEDIA);
	CU_ASSERT_EQUAL(log->result[0].sc, NVME_SC_UNRECOVERED_READ & 0xff);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	/* Blocks marked uncorrectable: the exact LBA. */
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE_UNCOR, 1500, 3), 0);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_EXTENDED, NVME_NSID_ALL), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->result[0].status,
			NVME_DST_EXTENDED << 4 | NVME_DST_RES_FAILED_SEGMENT);
	CU_ASSERT_EQUAL(log->result[0].flba, 1500);
	CU_ASSERT_EQUAL(log->result[0].nsid, 1);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE_ZEROES, 1500, 3), 0);
	/* The health model: spare below threshold fails the SMART check. */
	CU_ASSERT_EQUAL(ctrlr_health_set(lb.ctrlr, &hs), 0);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 0), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->result[0].status, NVME_DST_SHORT << 4 | NVME_DST_RES_FAILED_SEGMENT);
	CU_ASSERT_EQUAL(log->result[0].segment, 2);
	CU_ASSERT_EQUAL(log->result[0].valid, 0);
	hs = (struct ctrlr_health_set){.reset = true, .spare = -1, .used = -1};
	CU_ASSERT_EQUAL(ctrlr_health_set(lb.ctrlr, &hs), 0);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 0), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(x_dst_log()->result[0].status, NVME_DST_SHORT << 4 | NVME_DST_RES_OK);
	/* Each failure captured controller-initiated telemetry. */
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_CTRL, 0, 512, 0, 0), 0);
	th = (struct nvme_telemetry_hdr *)xb();
	CU_ASSERT_EQUAL(th->lid, NVME_LOG_TELEMETRY_CTRL);
	CU_ASSERT_TRUE((uint8_t)(th->ctrl_gen - gen) >= 3);
	CU_ASSERT_TRUE(th->da1lb >= 1);
}

static void test_self_test_abort_and_reset(void)
{
	struct nvme_dst_log *log;

	/* Held read: the test stays in segment 6. */
	x_inject(BDEV_IO_READ, BDEV_ERROR_PENDING, 1);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_EXTENDED, 1), 0);
	lb_pump(&lb);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->current_op, NVME_DST_EXTENDED);
	CU_ASSERT_TRUE(log->current_percent < 100);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 1), NVME_SC_SELF_TEST_IN_PROGRESS | NVME_DNR);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_ABORT, 0), 0);
	log = x_dst_log();
	CU_ASSERT_EQUAL(log->current_op, 0);
	CU_ASSERT_EQUAL(log->result[0].status, NVME_DST_EXTENDED << 4 | NVME_DST_RES_ABORTED_CMD);
	/* The held read returns later: dropped, the result stays. */
	x_resume();
	CU_ASSERT_EQUAL(x_dst_log()->result[0].status,
			NVME_DST_EXTENDED << 4 | NVME_DST_RES_ABORTED_CMD);
	CU_ASSERT_FALSE(ctrlr_bg_inflight(lb.ctrlr));

	/* A Controller Level Reset aborts it; the reset waits for the read in flight. */
	x_inject(BDEV_IO_READ, BDEV_ERROR_PENDING, 1);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 1), 0);
	lb_pump(&lb);
	lb_disable(&lb);
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS) & 1, 1); /* still tearing down */
	x_resume();
	CU_ASSERT_EQUAL(lb_reg_read32(&lb, NVME_REG_CSTS) & 1, 0);
	CU_ASSERT_EQUAL_FATAL(lb_enable(&lb, 32) & 1, 1);
	CU_ASSERT_EQUAL_FATAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
	CU_ASSERT_EQUAL(x_dst_log()->result[0].status,
			NVME_DST_SHORT << 4 | NVME_DST_RES_ABORTED_RESET);
}

static void test_sanitize_block_erase(void)
{
	struct nvme_sanitize_log *s;

	memset(xb(), 0xab, 4096);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE, 8, 8), 0);
	CU_ASSERT_EQUAL(x_sanitize(0, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(x_sanitize(5, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_BLOCK_ERASE, 0), 0);
	lb_pump(&lb);
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sprog, 0xffff);
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_COMPLETED);
	CU_ASSERT_TRUE(s->sstat & NVME_SSTAT_GDE);
	CU_ASSERT_EQUAL(s->scdw10, NVME_SANACT_BLOCK_ERASE);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 8, 8), 0);
	for (int i = 0; i < 4096; i++)
		if (xb()[i]) {
			CU_FAIL("block erase left data");
			break;
		}
	/* A write ends Global Data Erased. */
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE, 0, 1), 0);
	CU_ASSERT_FALSE(x_san_log()->sstat & NVME_SSTAT_GDE);
}

/* Crypto erase: the data is gone as after a block erase, the log names the action. */
static void test_sanitize_crypto_erase(void)
{
	struct nvme_sanitize_log *s;

	memset(xb(), 0xcd, 4096);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE, 16, 8), 0);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_CRYPTO_ERASE, 0), 0);
	lb_pump(&lb);
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_COMPLETED);
	CU_ASSERT_EQUAL(s->scdw10, NVME_SANACT_CRYPTO_ERASE);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 16, 8), 0);
	for (int i = 0; i < 4096; i++)
		if (xb()[i]) {
			CU_FAIL("crypto erase left data");
			break;
		}
}

static void test_sanitize_overwrite(void)
{
	struct nvme_sanitize_log *s;
	uint32_t *w = (uint32_t *)xb();

	/* Two passes, inverted between them, No-Deallocate: the second pass's pattern stays. */
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_OVERWRITE | 2u << 4 | NVME_SAN_OIPBP | NVME_SAN_NDAS,
				   0x12345678),
			0);
	lb_pump(&lb);
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_COMPLETED);
	CU_ASSERT_EQUAL((s->sstat >> NVME_SSTAT_PASSES_SHIFT) & 0x1f, 2);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, X_BLOCKS - 8, 8), 0);
	for (int i = 0; i < 1024; i++)
		if (w[i] != ~0x12345678u) {
			CU_FAIL("overwrite pattern missing");
			break;
		}
	/* One pass with deallocation afterwards: zeroes. */
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_OVERWRITE | 1u << 4, 0x5a5a5a5a), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 8), 0);
	CU_ASSERT_EQUAL(w[0], 0);
	CU_ASSERT_EQUAL(w[1023], 0);
}

static void test_sanitize_restrictions(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	struct nvme_sanitize_log *s;
	struct bdev_stats st0, st1;
	struct nvme_cqe cqe;
	uint16_t cid;

	/* A write is held in the bdev when the sanitize starts: the erase waits for it. */
	x_inject(BDEV_IO_WRITE, BDEV_ERROR_PENDING, 1);
	memset(xb(), 0xcd, 4096);
	sqe = x_rw_sqe(NVME_CMD_WRITE, 16, 8);
	cid = lb_submit(&lb, 1, &sqe);
	lb_pump(&lb);
	bdev_get_stats(bdev_lookup("EE_xm0"), &st0);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_BLOCK_ERASE | NVME_SAN_NDAS, 0), 0);
	lb_pump(&lb);
	bdev_get_stats(bdev_lookup("EE_xm0"), &st1);
	CU_ASSERT_EQUAL(st1.write_zeroes_ops, st0.write_zeroes_ops); /* nothing erased yet */
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_IN_PROGRESS);
	CU_ASSERT_NOT_EQUAL(s->sprog, 0xffff);
	/* While it runs: I/O, Format, self-test, other logs refused; Identify allowed. */
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 1), NVME_SC_SANITIZE_IN_PROGRESS | NVME_DNR);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 0), NVME_SC_SANITIZE_IN_PROGRESS | NVME_DNR);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_BLOCK_ERASE, 0),
			NVME_SC_SANITIZE_IN_PROGRESS | NVME_DNR);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_SELF_TEST, 0, 564, 0, 0),
			NVME_SC_SANITIZE_IN_PROGRESS | NVME_DNR);
	sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_SANITIZE_IN_PROGRESS | NVME_DNR);
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	sqe.cdw10 = NVME_CNS_CTRL;
	sqe.dptr.prp.prp1 = x_buf;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	/* The held write completes; then the erase runs over it. */
	x_resume();
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_COMPLETED);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 16, 8), 0);
	CU_ASSERT_EQUAL(xb()[0], 0);
	CU_ASSERT_EQUAL(xb()[4095], 0);
}

static void test_sanitize_failure(void)
{
	struct nvme_sanitize_log *s;

	/* A write the media fails: failure mode, restricted (AUSE 0). */
	x_inject(BDEV_IO_WRITE, BDEV_ERROR_FAILURE, 1);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_OVERWRITE | 1u << 4, 0x11111111), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	s = x_san_log();
	CU_ASSERT_EQUAL(s->sstat & 7, NVME_SSTAT_FAILED);
	CU_ASSERT_EQUAL(s->sprog, 0xffff);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 1), NVME_SC_SANITIZE_FAILED | NVME_DNR);
	CU_ASSERT_EQUAL(x_dst(NVME_DST_SHORT, 0), NVME_SC_SANITIZE_FAILED | NVME_DNR);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_EXIT_FAILURE, 0), NVME_SC_CMD_SEQ_ERROR | NVME_DNR);
	/* A sanitize that succeeds leaves it. */
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_BLOCK_ERASE, 0), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 1), 0);
	/* Unrestricted (AUSE 1): Exit Failure Mode is allowed. */
	x_inject(BDEV_IO_UNMAP, BDEV_ERROR_FAILURE, 1);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_BLOCK_ERASE | NVME_SAN_AUSE, 0), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 1), NVME_SC_SANITIZE_FAILED | NVME_DNR);
	CU_ASSERT_EQUAL(x_sanitize(NVME_SANACT_EXIT_FAILURE, 0), 0);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 1), 0);
	CU_ASSERT_EQUAL(x_san_log()->sstat & 7, NVME_SSTAT_FAILED);
}

static void test_telemetry(void)
{
	struct nvme_telemetry_hdr *h = (struct nvme_telemetry_hdr *)xb();
	uint16_t da1, da2;
	uint8_t gen;
	uint32_t nsq, ncq;
	uint64_t count;

	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_HOST, 0, 512, 0, 0), 0);
	gen = h->host_gen;
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_HOST, NVME_TELEMETRY_LSP_CREATE, 512, 0, 0), 0);
	CU_ASSERT_EQUAL(h->lid, NVME_LOG_TELEMETRY_HOST);
	CU_ASSERT_EQUAL(h->ieee[2], 0x02);
	CU_ASSERT_EQUAL(h->host_gen, (uint8_t)(gen + 1));
	da1 = h->da1lb;
	da2 = h->da2lb;
	CU_ASSERT_TRUE(da1 >= 1 && da2 > da1 && h->da3lb == da2);
	/* Data area 1: the state, both SQs and CQs (admin, I/O 1). */
	CU_ASSERT_EQUAL_FATAL(x_log(NVME_LOG_TELEMETRY_HOST, 0, da1 * 512u, 512, 0), 0);
	CU_ASSERT_EQUAL(memcmp(xb(), "NVMEEMU1", 8), 0);
	memcpy(&nsq, xb() + 12, 4);
	memcpy(&ncq, xb() + 16, 4);
	CU_ASSERT_EQUAL(nsq, 2);
	CU_ASSERT_EQUAL(ncq, 2);
	/* Data area 2: the error count as the error log says. */
	CU_ASSERT_EQUAL_FATAL(
	    x_log(NVME_LOG_TELEMETRY_HOST, 0, (da2 - da1) * 512u, (1u + da1) * 512u, 0), 0);
	memcpy(&count, xb(), 8);
	CU_ASSERT_TRUE(count > 0);
	CU_ASSERT_EQUAL(count, __atomic_load_n(&lb.ctrlr->error_count, __ATOMIC_RELAXED) -
				   0 /* the snapshot was taken before this read */);
	/* Offsets are whole blocks. */
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_HOST, 0, 512, 100 * 4, 0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_CTRL, 1, 512, 0, 0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	/* MCDA 01b: data area 1 only. */
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_HOST, 0x3, 512, 0, 0), 0);
	CU_ASSERT_EQUAL(h->da2lb, h->da1lb);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_TELEMETRY_HOST, 0x8, 512, 0, 0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
}

/* Counts events of `type` in a Persistent Event Log read into xb(). */
static unsigned int x_pel_count(uint8_t type)
{
	struct nvme_pel_hdr *h = (struct nvme_pel_hdr *)xb();
	size_t off = sizeof(*h);
	unsigned int n = 0;

	for (uint32_t i = 0; i < h->tnev && off + 24 <= h->tll; i++) {
		struct nvme_pel_event e;

		memcpy(&e, xb() + off, sizeof(e));
		CU_ASSERT_EQUAL(e.ehl, 21);
		if (e.etype == type)
			n++;
		off += 3 + e.ehl + e.el;
	}
	CU_ASSERT_EQUAL(off, h->tll);
	return n;
}

static void test_pel(void)
{
	struct nvme_pel_hdr *h = (struct nvme_pel_hdr *)xb();
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	unsigned int ts;

	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_READ, 512, 0, 0),
			NVME_SC_CMD_SEQ_ERROR | NVME_DNR);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 16384, 0, 0), 0);
	CU_ASSERT_EQUAL(h->lid, NVME_LOG_PERSISTENT_EVENT);
	CU_ASSERT_TRUE(h->tll > 512 && h->tll <= 16384);
	CU_ASSERT_EQUAL(memcmp(h->sn, "LB0001", 6), 0);
	CU_ASSERT_TRUE(h->seb[NVME_PEL_SANITIZE_START / 8] & (1u << (NVME_PEL_SANITIZE_START % 8)));
	/* Power on, the reset of the self-test test, the sanitize operations of the tests (8 with
	 * the crypto erase). */
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_POWER_ON_RESET), 2);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_SANITIZE_START), 8);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_SANITIZE_DONE), 8);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_SMART), 1); /* the forced spare of the self-test */
	ts = x_pel_count(NVME_PEL_TIMESTAMP);
	/* A timestamp set: not in the context established before, in the next one. */
	sqe.cdw10 = NVME_FEAT_TIMESTAMP;
	sqe.dptr.prp.prp1 = x_buf;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_READ, 16384, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_TIMESTAMP), ts);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 16384, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_TIMESTAMP), ts + 1);
	/* An over-temperature threshold below the modelled temperature (40 C): a Thermal
	 * Excursion event, 13 K over a 27 C threshold. */
	CU_ASSERT_TRUE(h->seb[NVME_PEL_THERMAL / 8] & (1u << (NVME_PEL_THERMAL % 8)));
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_THERMAL), 0);
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_TEMP_THRESH;
	sqe.cdw11 = 300;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 16384, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_THERMAL), 1);
	{
		size_t off = sizeof(*h);
		struct nvme_pel_event e = {0};

		for (uint32_t i = 0; i < h->tnev && off + 24 <= h->tll; i++) {
			memcpy(&e, xb() + off, sizeof(e));
			if (e.etype == NVME_PEL_THERMAL)
				break;
			off += 3 + e.ehl + e.el;
		}
		CU_ASSERT_EQUAL_FATAL(e.etype, NVME_PEL_THERMAL);
		CU_ASSERT_EQUAL(e.el, 2);
		/* The model is at 40 C or above (it follows the load of the tests before). */
		CU_ASSERT_TRUE(xb()[off + 3 + e.ehl] >= 13);
		CU_ASSERT_EQUAL(xb()[off + 3 + e.ehl + 1], 27);
	}
	sqe.cdw11 = 0xffff; /* threshold back out of reach */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	/* Format NVM: its start and its completion. */
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_FORMAT_START), 0);
	sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 16384, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_FORMAT_START), 1);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_FORMAT_DONE), 1);
	CU_ASSERT_TRUE(h->seb[NVME_PEL_FORMAT_DONE / 8] & (1u << (NVME_PEL_FORMAT_DONE % 8)));
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_RELEASE, 512, 0, 0), 0);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_READ, 512, 0, 0),
			NVME_SC_CMD_SEQ_ERROR | NVME_DNR);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, 3, 512, 0, 0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
}

static void test_abort_running(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	uint32_t dw0 = 7;
	uint16_t cid;

	/* A read waiting in the bdev: marked, ends with Command Abort Requested when it returns. */
	x_inject(BDEV_IO_READ, BDEV_ERROR_PENDING, 1);
	sqe = x_rw_sqe(NVME_CMD_READ, 0, 8);
	cid = lb_submit(&lb, 1, &sqe);
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 1, &cqe, false));
	sqe = lb_sqe(NVME_ADM_ABORT, 0);
	sqe.cdw10 = 1 | (uint32_t)cid << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 0);
	/* A second Abort of it finds it marked already. */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
	x_resume();
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cid);
	CU_ASSERT_EQUAL(cqe.status >> 1, NVME_SC_ABORT_REQ);
	/* Completed already, or never submitted: not aborted. */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 8), 0);
	sqe.cdw10 = 9 | 5u << 16; /* no such SQ */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
}

/* Reaps CQEs of qid until the one of `cid`; its status (no phase), or LB_NO_CQE. */
static uint16_t x_reap_cid(uint16_t qid, uint16_t cid)
{
	struct nvme_cqe cqe;

	for (int i = 0; i < 64; i++) {
		if (!lb_reap(&lb, qid, &cqe, false)) {
			lb_pump(&lb);
			continue;
		}
		if (cqe.cid == cid)
			return cqe.status >> 1;
	}
	return LB_NO_CQE;
}

static uint16_t x_abort(uint16_t sqid, uint16_t cid, uint32_t *dw0)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_ABORT, 0);

	sqe.cdw10 = sqid | (uint32_t)cid << 16;
	return lb_cmd(&lb, 0, &sqe, dw0);
}

static uint32_t x_abort_recs_busy(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < CTRLR_ARRAY_SIZE(lb.ctrlr->abort_recs); i++)
		n += lb.ctrlr->abort_recs[i].busy;
	return n;
}

/* SQ 2 (8 entries, so 8 requests) with every request busy: 6 reads held in the bdev and a fast
 * read of namespace 2 fetched together (its completion tells the host the head moved), then 2
 * more held reads. The `n` writes of LBA 100.. submitted next stay in the ring. */
static void x_fill_sq2(uint16_t *wcid, int n)
{
	struct nvme_sqe sqe;
	uint16_t fast;

	CU_ASSERT_EQUAL_FATAL(lb_create_qpair(&lb, 2, 8, 2, true), 0);
	x_inject(BDEV_IO_READ, BDEV_ERROR_PENDING, 8);
	for (int i = 0; i < 6; i++) {
		sqe = x_rw_sqe(NVME_CMD_READ, i, 1);
		CU_ASSERT_NOT_EQUAL(nvme_host_submit(&lb.h, 2, &sqe, true), -1);
	}
	sqe = lb_sqe(NVME_CMD_READ, 2);
	sqe.dptr.prp.prp1 = x_buf;
	fast = lb_submit(&lb, 2, &sqe);
	CU_ASSERT_EQUAL(x_reap_cid(2, fast), 0);
	for (int i = 0; i < 2; i++) {
		sqe = x_rw_sqe(NVME_CMD_READ, i, 1);
		CU_ASSERT_NOT_EQUAL(lb_submit(&lb, 2, &sqe), LB_NO_CQE);
	}
	CU_ASSERT_EQUAL(lb.sqs[2]->inflight, 8);
	/* The writes' data away from where the held reads land. */
	memset(xb() + 32768, 0x5a, 4096);
	for (int i = 0; i < n; i++) {
		sqe = x_rw_sqe(NVME_CMD_WRITE, 100 + i, 1);
		sqe.dptr.prp.prp1 = x_buf + 32768;
		wcid[i] = lb_submit(&lb, 2, &sqe);
		CU_ASSERT_NOT_EQUAL(wcid[i], LB_NO_CQE);
	}
	/* Rung, not fetched: no request free. */
	CU_ASSERT_EQUAL(lb.sqs[2]->tail, (lb.sqs[2]->head + n) % 8);
}

/* Aborts of commands still in their SQ: armed on the ring slot, completed with Command Abort
 * Requested when fetched and never executed; the Abort Command Limit; a CID not in the ring
 * leaves nothing behind; deletion drops armed records. */
static void test_abort_queued(void)
{
	uint16_t wcid[5], other;
	uint32_t dw0;
	struct nvme_sqe sqe;

	memset(xb(), 0, 4096);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(x_rw(NVME_CMD_WRITE, 100 + i, 1), 0);
	x_fill_sq2(wcid, 5);
	for (int i = 0; i < 4; i++) {
		dw0 = 7;
		CU_ASSERT_EQUAL(x_abort(2, wcid[i], &dw0), 0);
		CU_ASSERT_EQUAL(dw0 & 1, 0);
	}
	CU_ASSERT_EQUAL(x_abort_recs_busy(), CTRLR_ACL + 1);
	/* Every record armed: the fifth is over the limit (ACL is 0-based). */
	CU_ASSERT_EQUAL(x_abort(2, wcid[4], &dw0), NVME_SC_ABORT_LIMIT | NVME_DNR);
	/* Armed already: not aborted again. Not in the ring: not aborted. */
	CU_ASSERT_EQUAL(x_abort(2, wcid[0], &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
	other = (uint16_t)(wcid[4] + 1);
	CU_ASSERT_EQUAL(x_abort(2, other, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
	x_resume();
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(x_reap_cid(2, wcid[i]), NVME_SC_ABORT_REQ);
	CU_ASSERT_EQUAL(x_reap_cid(2, wcid[4]), 0);
	CU_ASSERT_EQUAL(x_abort_recs_busy(), 0);
	/* The aborted writes never ran; the one over the limit did. */
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 100 + i, 1), 0);
		CU_ASSERT_EQUAL(xb()[0], i < 4 ? 0 : 0x5a);
		CU_ASSERT_EQUAL(xb()[511], i < 4 ? 0 : 0x5a);
	}
	/* The CID the Abort did not find comes now: it runs. */
	CU_ASSERT_EQUAL(lb.h.q[2].cid, other);
	sqe = x_rw_sqe(NVME_CMD_READ, 0, 1);
	CU_ASSERT_EQUAL(lb_submit(&lb, 2, &sqe), other);
	CU_ASSERT_EQUAL(x_reap_cid(2, other), 0);
	CU_ASSERT_EQUAL(nvme_host_delete_io_queues(&lb.h, 2), 0);

	/* Armed on an SQ that is deleted before the slot is fetched: the record goes with it. */
	x_fill_sq2(wcid, 1);
	CU_ASSERT_EQUAL(x_abort(2, wcid[0], &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 0);
	CU_ASSERT_EQUAL(x_abort_recs_busy(), 1);
	sqe = lb_sqe(NVME_ADM_DELETE_SQ, 0);
	sqe.cdw10 = 2;
	other = lb_submit(&lb, 0, &sqe);
	x_resume();
	CU_ASSERT_EQUAL(x_reap_cid(0, other), 0);
	CU_ASSERT_EQUAL(x_abort_recs_busy(), 0);
	lb.h.q[2].live = false;
	sqe = lb_sqe(NVME_ADM_DELETE_CQ, 0);
	sqe.cdw10 = 2;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 100, 1), 0);
	CU_ASSERT_EQUAL(xb()[0], 0);
}

/* The data of the last event of `type` in the log read into xb() (NULL: none), its length. */
static const uint8_t *x_pel_last(uint8_t type, uint16_t *el)
{
	struct nvme_pel_hdr *h = (struct nvme_pel_hdr *)xb();
	size_t off = sizeof(*h);
	const uint8_t *d = NULL;

	for (uint32_t i = 0; i < h->tnev && off + 24 <= h->tll; i++) {
		struct nvme_pel_event e;

		memcpy(&e, xb() + off, sizeof(e));
		if (e.etype == type) {
			d = xb() + off + 24;
			*el = e.el;
		}
		off += 3 + e.ehl + e.el;
	}
	return d;
}

/* Hardware Error events with `code` in the log read into xb(). */
static unsigned int x_pel_hwe_count(uint16_t code)
{
	struct nvme_pel_hdr *h = (struct nvme_pel_hdr *)xb();
	size_t off = sizeof(*h);
	unsigned int n = 0;

	for (uint32_t i = 0; i < h->tnev && off + 24 <= h->tll; i++) {
		struct nvme_pel_event e;
		uint16_t c;

		memcpy(&e, xb() + off, sizeof(e));
		memcpy(&c, xb() + off + 24, 2);
		if (e.etype == NVME_PEL_HW_ERROR && c == code)
			n++;
		off += 3 + e.ehl + e.el;
	}
	return n;
}

/* Set Feature, Hardware Error (critical warning, media errors coalesced), and the Supported
 * Events Bitmap saying exactly 01h-0Dh. */
static void test_pel_events(void)
{
	struct nvme_pel_hdr *h = (struct nvme_pel_hdr *)xb();
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	const uint8_t *d;
	uint16_t el = 0, code, st;
	uint32_t v, n, sets;

	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 32768, 0, 0), 0);
	CU_ASSERT_EQUAL(h->seb[0], 0xfe);
	CU_ASSERT_EQUAL(h->seb[1], 0x3f);
	for (int i = 2; i < 32; i++)
		CU_ASSERT_EQUAL(h->seb[i], 0);
	/* The forced spare of the self-test test: a SMART snapshot and its hardware error view,
	 * the critical warning byte with the spare bit. */
	CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_CRIT_WARN), 1);
	sets = x_pel_count(NVME_PEL_SET_FEATURE);
	/* Arbitration set: logged with CDW10-15 (Dword Count 6); a failed set is not. */
	sqe.cdw10 = NVME_FEAT_ARBITRATION;
	sqe.cdw11 = 0x00000003;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	sqe.cdw10 = 0x7f; /* no such feature */
	CU_ASSERT_NOT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 32768, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_count(NVME_PEL_SET_FEATURE), sets + 1);
	d = x_pel_last(NVME_PEL_SET_FEATURE, &el);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(el, 28);
	memcpy(&v, d, 4);
	CU_ASSERT_EQUAL(v & 0x7, 6);
	memcpy(&v, d + 4, 4);
	CU_ASSERT_EQUAL(v, NVME_FEAT_ARBITRATION);
	memcpy(&v, d + 8, 4);
	CU_ASSERT_EQUAL(v, 3);
	/* A read failing in the bdev (Unrecovered Read Error): one Media and Data Integrity
	 * event; a second one within the second is counted into the next event. */
	CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_MEDIA), 0);
	x_inject(BDEV_IO_READ, BDEV_ERROR_FAILURE, 2);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 8), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 8), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 32768, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_MEDIA), 1);
	d = x_pel_last(NVME_PEL_HW_ERROR, &el);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(el, 12);
	memcpy(&code, d, 2);
	memcpy(&st, d + 4, 2);
	memcpy(&n, d + 8, 4);
	CU_ASSERT_EQUAL(code, NVME_PEL_HWE_MEDIA);
	CU_ASSERT_EQUAL(st, NVME_SC_UNRECOVERED_READ);
	CU_ASSERT_EQUAL(n, 1);
	/* The second has waited: once the second is over, the next error reports both. */
	ctrlr_dev(lb.ctrlr)->pel.media_last_us -= 2000000;
	x_inject(BDEV_IO_READ, BDEV_ERROR_FAILURE, 1);
	CU_ASSERT_EQUAL(x_rw(NVME_CMD_READ, 0, 8), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_xm0", BDEV_ERROR_IO_CLEAR, NULL), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 32768, 0, 0), 0);
	CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_MEDIA), 2);
	d = x_pel_last(NVME_PEL_HW_ERROR, &el);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memcpy(&n, d + 8, 4);
	CU_ASSERT_EQUAL(n, 2);
}

/* The log in a state file: a controller destroyed and created again over the same file (a
 * daemon restart) reads the old events back; the power cycle count goes on; a failed enable
 * (Controller Fatal Status) is among them, and an Unsafe Shutdown for the life that ended
 * without a shutdown notification (not for the one that had it); a file that is not a log is
 * refused. */
static void test_pel_persist(void)
{
	char dir[] = "/tmp/pel_persistXXXXXX", path[64];
	struct nvme_pel_hdr *h;
	struct ctrlr_config cfg;
	struct ctrlr *c2;
	const uint8_t *d;
	struct nvme_sqe sqe;
	uint16_t el = 0;
	uint32_t v, pc;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pel.bin", dir);
	x_fini();
	lb_default_config(&cfg);
	cfg.pel_file = path;
	/* Three lives: the first ends without a shutdown notification (Unsafe Shutdown), the
	 * second with one. */
	for (int life = 0; life < 3; life++) {
		CU_ASSERT_EQUAL_FATAL(lb_init(&lb, &cfg), 0);
		CU_ASSERT_EQUAL_FATAL(lb_add_malloc_ns(&lb, "pm0", 1, 64, 4096), 1);
		if (life == 0) {
			/* CC.MPS beyond MPSMAX: enable fails (CSTS.CFS); then a good enable. */
			lb_reg_write32(&lb, NVME_REG_CC, 1u | 0xfu << 7);
			CU_ASSERT_TRUE(lb_reg_read32(&lb, NVME_REG_CSTS) & 2);
			lb_reg_write32(&lb, NVME_REG_CC, 0);
		}
		CU_ASSERT_TRUE_FATAL(lb_enable(&lb, 32) & 1);
		x_buf = lb_alloc(&lb, 65536);
		/* The guest memory is the new controller's. */
		h = (struct nvme_pel_hdr *)xb();
		CU_ASSERT_EQUAL(x_log(NVME_LOG_PERSISTENT_EVENT, NVME_PEL_ESTABLISH, 32768, 0, 0), 0);
		CU_ASSERT_EQUAL(h->pcc, (uint64_t)life + 1);
		CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_UNSAFE_SHUTDOWN), life ? 1 : 0);
		if (life == 0) {
			sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
			sqe.cdw10 = NVME_FEAT_ARBITRATION;
			sqe.cdw11 = 0x00000002;
			CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
		}
		if (life == 1) {
			/* A normal shutdown notification before the power goes. */
			lb_reg_write32(&lb, NVME_REG_CC,
				       lb_reg_read32(&lb, NVME_REG_CC) | NVME_SHN_NORMAL << 14);
			CU_ASSERT_EQUAL((lb_reg_read32(&lb, NVME_REG_CSTS) >> 2) & 3,
					NVME_SHST_COMPLETE);
		}
		if (life < 2)
			lb_fini(&lb);
	}
	/* From the first life: its power-on (cycle 1), the fatal status, the feature; then the
	 * FLRs of the ends and the power-ons of the next lives (cycles 2, 3). */
	CU_ASSERT_EQUAL(x_pel_hwe_count(NVME_PEL_HWE_CTRL_FATAL), 1);
	CU_ASSERT_TRUE(x_pel_count(NVME_PEL_POWER_ON_RESET) >= 5);
	d = x_pel_last(NVME_PEL_SET_FEATURE, &el);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memcpy(&v, d + 8, 4);
	CU_ASSERT_EQUAL(v, 2);
	d = x_pel_last(NVME_PEL_POWER_ON_RESET, &el);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(el, 44);
	memcpy(&pc, d + 24, 4);
	CU_ASSERT_EQUAL(pc, 3);
	/* A torn last record (a crash mid-append) is dropped, the rest kept. */
	f = fopen(path, "ab");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fwrite("\x0b\x01\x15", 1, 3, f);
	fclose(f);
	CU_ASSERT_EQUAL(ctrlr_create(&cfg, lb.ctrlr->ops, lb.ctrlr->tctx, &c2), 0);
	CU_ASSERT_EQUAL(ctrlr_dev(c2)->pel.count, ctrlr_dev(lb.ctrlr)->pel.count + 1); /* + its power-on */
	CU_ASSERT_EQUAL(ctrlr_destroy(c2, NULL, NULL), 0);
	/* Not an event log: refused, left alone. */
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("not a log", f);
	fclose(f);
	CU_ASSERT_EQUAL(ctrlr_create(&cfg, lb.ctrlr->ops, lb.ctrlr->tctx, &c2), -EINVAL);
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fgetc(f), 'n');
	fclose(f);
	unlink(path);
	rmdir(dir);
}

/* The log's durability: an admin command completes only once the events before its end are
 * synced (pel.synced reaches pel.added), through the file's replacements (it is replaced by the
 * syncer when it holds twice the log: 3000 Set Feature events of 52 bytes make it grow past
 * 128 KiB more than once); the file after it all holds the newest event. */
static void test_pel_durable(void)
{
	char dir[] = "/tmp/pel_durableXXXXXX", path[64];
	struct ctrlr_config cfg;
	struct ctrlr_pel *p;
	struct nvme_sqe sqe;
	uint64_t jobs0;
	uint32_t best = 0;
	uint8_t *raw;
	size_t len = 0, off;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pel.bin", dir);
	x_fini();
	lb_default_config(&cfg);
	cfg.pel_file = path;
	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, &cfg), 0);
	CU_ASSERT_TRUE_FATAL(lb_enable(&lb, 32) & 1);
	p = &ctrlr_dev(lb.ctrlr)->pel;
	jobs0 = syncer_jobs_done();
	for (uint32_t i = 1; i <= 3000; i++) {
		sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
		sqe.cdw10 = NVME_FEAT_ARBITRATION;
		sqe.cdw11 = 2;
		sqe.cdw15 = i;
		CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
		if (p->synced != p->added || p->added < i) {
			CU_FAIL("a Set Features completed before its event was synced");
			break;
		}
	}
	CU_ASSERT_FALSE(p->file_failed);
	/* A sync per command at most, and the file kept below twice the log plus an event. */
	CU_ASSERT_TRUE(syncer_jobs_done() - jobs0 >= 3000);
	CU_ASSERT_TRUE(p->file_len <= 8 + 2 * (size_t)CTRLR_PEL_MAX_BYTES);
	raw = malloc(8 + 3 * (size_t)CTRLR_PEL_MAX_BYTES);
	CU_ASSERT_PTR_NOT_NULL_FATAL(raw);
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	len = fread(raw, 1, 8 + 3 * (size_t)CTRLR_PEL_MAX_BYTES, f);
	fclose(f);
	CU_ASSERT_EQUAL(len, p->file_len);
	CU_ASSERT_EQUAL(memcmp(raw, "NVMEPEL1", 8), 0);
	for (off = 8; off + 24 <= len;) {
		struct nvme_pel_event ev;
		uint32_t tok;

		memcpy(&ev, raw + off, sizeof(ev));
		if (off + 24 + ev.el > len)
			break;
		if (ev.etype == NVME_PEL_SET_FEATURE && ev.el >= 28) {
			memcpy(&tok, raw + off + 24 + 24, 4);
			best = tok > best ? tok : best;
		}
		off += 24 + ev.el;
	}
	CU_ASSERT_EQUAL(off, len);
	CU_ASSERT_EQUAL(best, 3000);
	free(raw);
	/* The controller goes with the suite's x_fini (as in pel_persist). */
	unlink(path);
	rmdir(dir);
}

CUNIT_SUITE(admin_ext, x_init, x_fini, {"advertised", test_advertised},
	    {"self_test_runs", test_self_test_runs},
	    {"self_test_failures", test_self_test_failures},
	    {"self_test_abort_and_reset", test_self_test_abort_and_reset},
	    {"sanitize_block_erase", test_sanitize_block_erase},
	    {"sanitize_crypto_erase", test_sanitize_crypto_erase},
	    {"sanitize_overwrite", test_sanitize_overwrite},
	    {"sanitize_restrictions", test_sanitize_restrictions},
	    {"sanitize_failure", test_sanitize_failure}, {"telemetry", test_telemetry},
	    {"pel", test_pel}, {"abort_running", test_abort_running},
	    {"abort_queued", test_abort_queued}, {"pel_events", test_pel_events},
	    {"pel_persist", test_pel_persist}, {"pel_durable", test_pel_durable})
