/* tests/unit/controller/admin_test.c - admin commands end to end through the loopback transport:
 * Identify, queue creation/deletion checks, Get Log Page, Get/Set Features, AER, Abort, Doorbell
 * Buffer Config checks, Format NVM checks, vendor commands, invalid opcodes, Keep Alive. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctrlr_vendor.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static struct lb lb;
static uint64_t adm_buf_addr; /* a 64 KiB data buffer in guest memory */

static int admin_init(void)
{
	if (lb_init(&lb, NULL))
		return -1;
	if (lb_add_malloc_ns(&lb, "adm0", 1, 1024, 512) != 1)
		return -1;
	if (lb_add_malloc_ns(&lb, "adm1", 3, 256, 4096) != 3)
		return -1;
	if (!(lb_enable(&lb, 32) & 1))
		return -1;
	adm_buf_addr = lb_alloc(&lb, 65536);
	return 0;
}

static int admin_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *adm_buf(void)
{
	return lb_ptr(&lb, adm_buf_addr);
}

static struct nvme_sqe adm_sqe_data(uint8_t opc, uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);

	memset(adm_buf(), 0xa5, 65536);
	sqe.dptr.prp.prp1 = adm_buf_addr;
	sqe.dptr.prp.prp2 = adm_buf_addr + 4096;
	return sqe;
}

static uint16_t adm_identify(uint8_t cns, uint32_t nsid, uint8_t csi)
{
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_IDENTIFY, nsid);

	sqe.cdw10 = cns;
	sqe.cdw11 = (uint32_t)csi << 24;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static void test_identify_ctrl(void)
{
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)adm_buf();

	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CTRL, 0, 0), 0);
	CU_ASSERT_EQUAL(id->sqes, 0x66);
	CU_ASSERT_EQUAL(id->cqes, 0x44);
	CU_ASSERT_EQUAL(id->nn, CTRLR_MAX_NAMESPACES);
	CU_ASSERT_EQUAL(id->mdts, 5);
	CU_ASSERT_EQUAL(memcmp(id->sn, "LB0001    ", 10), 0);
	CU_ASSERT_EQUAL(memcmp(id->mn, "nvme-emu loopback   ", 20), 0);
	CU_ASSERT_EQUAL(memcmp(id->fr, "0.1     ", 8), 0);
	CU_ASSERT_STRING_EQUAL(id->subnqn, "nqn.2026-11.io.nvme-emu:LB0001");
	CU_ASSERT_TRUE(id->oacs & NVME_OACS_DBBUF);
	CU_ASSERT_TRUE(id->oacs & NVME_OACS_FORMAT);
	CU_ASSERT_EQUAL(id->oncs & 0x8d, NVME_ONCS_COMPARE | NVME_ONCS_DSM |
					     NVME_ONCS_WRITE_ZEROES | NVME_ONCS_VERIFY);
	CU_ASSERT_TRUE(id->vwc & NVME_VWC_PRESENT);
	CU_ASSERT_TRUE(id->sgls & NVME_SGLS_SUPPORTED);
	CU_ASSERT_TRUE(id->sgls & NVME_SGLS_BIT_BUCKET);
	CU_ASSERT_EQUAL(id->ver, 0x10400);
	CU_ASSERT_TRUE(id->oaes & NVME_OAES_NS_ATTR);
	CU_ASSERT_TRUE(id->lpa & NVME_LPA_CMD_EFFECTS);
	CU_ASSERT_EQUAL(id->elpe, 63);
	CU_ASSERT_EQUAL(id->aerl, 3);
	CU_ASSERT_EQUAL(id->cntrltype, 1);
	CU_ASSERT_TRUE(id->ieee[0] || id->ieee[1] || id->ieee[2]);
	/* CNS 06h, NVM. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_CTRL, 0, NVME_CSI_NVM), 0);
	CU_ASSERT_EQUAL(adm_buf()[0], 0);
	/* CNS 06h, Zoned Namespace (zns_test.c checks its content); Key Value: not supported. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_CTRL, 0, NVME_CSI_ZNS), 0);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_CTRL, 0, 1), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Unknown CNS. */
	CU_ASSERT_EQUAL(adm_identify(0x1f, 0, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
}

static void test_identify_ns(void)
{
	struct nvme_id_ns *id = (struct nvme_id_ns *)adm_buf();
	struct nvme_id_ns_indep *ind = (struct nvme_id_ns_indep *)adm_buf();
	uint32_t *list = (uint32_t *)adm_buf();
	uint8_t *d = adm_buf();

	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, 1, 0), 0);
	CU_ASSERT_EQUAL(id->nsze, 1024);
	CU_ASSERT_EQUAL(id->ncap, 1024);
	/* 512 and 4096 data with 0, 8, 16 (twice: 16b and 64b guard) and 64 (twice) bytes of
	 * metadata, then four with a storage tag; format 0 in use. */
	CU_ASSERT_EQUAL(id->nlbaf, 15);
	CU_ASSERT_EQUAL(id->flbas, 0);
	CU_ASSERT_EQUAL(id->lbaf[0].lbads, 9);
	CU_ASSERT_EQUAL(id->lbaf[0].ms, 0);
	CU_ASSERT_EQUAL(id->lbaf[11].lbads, 12);
	CU_ASSERT_EQUAL(id->lbaf[11].ms, 64);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, 3, 0), 0);
	CU_ASSERT_EQUAL(id->nsze, 256);
	/* A 4096-byte bdev cannot hold 512-byte blocks without read-modify-write: the six 4096
	 * ones and the 4096 + 16 with a storage tag. */
	CU_ASSERT_EQUAL(id->nlbaf, 6);
	CU_ASSERT_EQUAL(id->lbaf[0].lbads, 12);
	/* Inactive but valid id: zeroes. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, 2, 0), 0);
	CU_ASSERT_EQUAL(id->nsze, 0);
	/* Invalid ids. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, 0, 0), NVME_SC_INVALID_NS | NVME_DNR);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, 1000, 0), NVME_SC_INVALID_NS | NVME_DNR);
	/* Common capabilities (FFFFFFFFh) need Namespace Management, which has no pool here. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS, NVME_NSID_ALL, 0), NVME_SC_INVALID_NS | NVME_DNR);
	/* Active lists. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_ACTIVE_NS_LIST, 0, 0), 0);
	CU_ASSERT_EQUAL(list[0], 1);
	CU_ASSERT_EQUAL(list[1], 3);
	CU_ASSERT_EQUAL(list[2], 0);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_ACTIVE_NS_LIST, 1, 0), 0);
	CU_ASSERT_EQUAL(list[0], 3);
	CU_ASSERT_EQUAL(list[1], 0);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_ACTIVE_NS_LIST, 0, NVME_CSI_NVM), 0);
	CU_ASSERT_EQUAL(list[1], 3);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_ACTIVE_NS_LIST, 0, 1),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_ACTIVE_NS_LIST, 0xfffffffe, 0),
			NVME_SC_INVALID_NS | NVME_DNR);
	/* Descriptors: EUI64, NGUID, UUID, CSI. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS_DESC_LIST, 1, 0), 0);
	CU_ASSERT_EQUAL(d[0], NVME_NIDT_EUI64);
	CU_ASSERT_EQUAL(d[1], 8);
	CU_ASSERT_EQUAL(d[12], NVME_NIDT_NGUID);
	CU_ASSERT_EQUAL(d[13], 16);
	CU_ASSERT_EQUAL(d[32], NVME_NIDT_UUID);
	CU_ASSERT_EQUAL(d[33], 16);
	CU_ASSERT_EQUAL(d[52], NVME_NIDT_CSI);
	CU_ASSERT_EQUAL(d[53], 1);
	CU_ASSERT_EQUAL(d[56], NVME_CSI_NVM);
	CU_ASSERT_EQUAL(d[57], 0);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_NS_DESC_LIST, 2, 0), NVME_SC_INVALID_NS | NVME_DNR);
	/* CNS 05h and 08h. */
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_NS, 1, NVME_CSI_NVM), 0);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_NS, 1, 2), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CS_INDEP_NS, 3, 0), 0);
	CU_ASSERT_EQUAL(ind->nstat, NVME_NSTAT_READY);
}

static void test_identify_bad_prp(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);

	sqe.cdw10 = NVME_CNS_CTRL;
	sqe.dptr.prp.prp1 = 0x2000; /* below guest memory */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_DATA_XFER_ERROR | NVME_DNR);
	/* PRP2 needed (offset in PRP1) and outside memory. */
	sqe.dptr.prp.prp1 = adm_buf_addr + 2048;
	sqe.dptr.prp.prp2 = 0xfff0000000ull;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_DATA_XFER_ERROR | NVME_DNR);
	/* SGLs are not allowed for admin commands. */
	sqe.cdw0.bits.psdt = NVME_PSDT_SGL_MPTR_CONTIG;
	sqe.dptr.prp.prp1 = adm_buf_addr;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
}

static uint16_t adm_create_cq(uint16_t qid, uint32_t entries, uint16_t iv, uint32_t flags,
			      uint64_t addr)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_CREATE_CQ, 0);

	sqe.dptr.prp.prp1 = addr;
	sqe.cdw10 = qid | (entries - 1) << 16;
	sqe.cdw11 = flags | (uint32_t)iv << 16;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t adm_create_sq(uint16_t qid, uint32_t entries, uint16_t cqid, uint32_t flags,
			      uint64_t addr)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_CREATE_SQ, 0);

	sqe.dptr.prp.prp1 = addr;
	sqe.cdw10 = qid | (entries - 1) << 16;
	sqe.cdw11 = flags | (uint32_t)cqid << 16;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t adm_delete_q(uint8_t opc, uint16_t qid)
{
	struct nvme_sqe sqe = lb_sqe(opc, 0);

	sqe.cdw10 = qid;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static void test_queue_checks(void)
{
	uint64_t ring = lb_alloc(&lb, 64 * 256);
	uint64_t ring2 = lb_alloc(&lb, 64 * 256);
	const uint32_t pc = NVME_QUEUE_PC, ien = NVME_CQ_IEN;
	struct ctrlr_stats st;

	/* CQ checks. */
	CU_ASSERT_EQUAL(adm_create_cq(0, 16, 1, pc | ien, ring), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(9, 16, 1, pc | ien, ring), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 1, 1, pc | ien, ring), NVME_SC_QUEUE_SIZE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 257, 1, pc | ien, ring), NVME_SC_QUEUE_SIZE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, ien, ring), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 9, pc | ien, ring), NVME_SC_INVALID_VECTOR | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, ring + 64),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, LB_MEM_BASE + LB_MEM_SIZE),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	lb.fail_create = -ENOMEM;
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, ring), NVME_SC_INTERNAL);
	lb.fail_create_done = -EIO;
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, ring), NVME_SC_INTERNAL);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, ring), 0);
	CU_ASSERT_EQUAL(adm_create_cq(1, 16, 1, pc | ien, ring), NVME_SC_QID_INVALID | NVME_DNR);

	/* SQ checks. */
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 2, pc, ring2), NVME_SC_CQ_INVALID | NVME_DNR);
	/* CQID 0h or past the CQs allocated: no I/O CQ identifier at all. */
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 0, pc, ring2), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 0xffff, pc, ring2), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(0, 16, 1, pc, ring2), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(1, 300, 1, pc, ring2), NVME_SC_QUEUE_SIZE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 1, 0, ring2), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 1, pc, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* The ring must lie wholly in guest memory. */
	CU_ASSERT_EQUAL(adm_create_sq(1, 256, 1, pc, LB_MEM_BASE + LB_MEM_SIZE - 4096),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 1, pc, ring2), 0);
	CU_ASSERT_EQUAL(adm_create_sq(1, 16, 1, pc, ring2), NVME_SC_QID_INVALID | NVME_DNR);
	/* Two SQs may share a CQ. */
	CU_ASSERT_EQUAL(adm_create_sq(2, 16, 1, pc, lb_alloc(&lb, 4096)), 0);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.io_sqs, 2);
	CU_ASSERT_EQUAL(st.io_cqs, 1);

	/* Deletion. */
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_CQ, 1),
			NVME_SC_INVALID_QUEUE_DELETION | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 5), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 0), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 1000), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 1), 0);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 2), 0);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_CQ, 2), NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_CQ, 1), 0);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_EQUAL(st.io_sqs, 0);
	CU_ASSERT_EQUAL(st.io_cqs, 0);
}

static uint16_t adm_set_feat(uint8_t fid, uint32_t cdw11, uint32_t *cdw0)
{
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_SET_FEATURES, 0);

	sqe.cdw10 = fid;
	sqe.cdw11 = cdw11;
	return lb_cmd(&lb, 0, &sqe, cdw0);
}

static uint16_t adm_get_feat(uint8_t fid, uint8_t sel, uint32_t cdw11, uint32_t *cdw0)
{
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_GET_FEATURES, 0);

	sqe.cdw10 = fid | (uint32_t)sel << 8;
	sqe.cdw11 = cdw11;
	return lb_cmd(&lb, 0, &sqe, cdw0);
}

static void test_num_queues(void)
{
	uint32_t dw0 = 0;

	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_NUM_QUEUES, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 7 | 7 << 16);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 0xffff, &dw0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 1 | 1 << 16, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1 | 1 << 16);
	/* More than allowed is granted the maximum. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 100 | 100 << 16, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 7 | 7 << 16);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 1 | 1 << 16, &dw0), 0);
	/* Queue 3 is beyond the two granted. */
	CU_ASSERT_EQUAL(adm_create_cq(3, 16, 1, NVME_QUEUE_PC, lb_alloc(&lb, 4096)),
			NVME_SC_QID_INVALID | NVME_DNR);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	/* Fixed once queues exist. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 3 | 3 << 16, &dw0),
			NVME_SC_CMD_SEQ_ERROR | NVME_DNR);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_SQ, 1), 0);
	CU_ASSERT_EQUAL(adm_delete_q(NVME_ADM_DELETE_CQ, 1), 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_NUM_QUEUES, 7 | 7 << 16, &dw0), 0);
}

/* Set (set) or Get Features Error Recovery on nsid. */
static uint16_t adm_err_recovery(bool set, uint32_t nsid, uint32_t cdw11, uint32_t *dw0)
{
	struct nvme_sqe sqe = lb_sqe(set ? NVME_ADM_SET_FEATURES : NVME_ADM_GET_FEATURES, nsid);

	sqe.cdw10 = NVME_FEAT_ERR_RECOVERY;
	sqe.cdw11 = cdw11;
	return lb_cmd(&lb, 0, &sqe, dw0);
}

static void test_features(void)
{
	uint32_t dw0 = 0;
	struct nvme_sqe sqe;

	/* SEL supported / default / saved. */
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ARBITRATION, NVME_SEL_SUPPORTED, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_FEAT_CAP_CHANGE);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ERR_RECOVERY, NVME_SEL_SUPPORTED, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_NS);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_ARBITRATION, 0x03020103, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ARBITRATION, NVME_SEL_CURRENT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0x03020103);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ARBITRATION, NVME_SEL_DEFAULT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ARBITRATION, NVME_SEL_SAVED, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_ARBITRATION, 4, 0, &dw0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Saving is not supported. */
	sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_ARBITRATION | NVME_SET_FEAT_SV;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_FEATURE_NOT_SAVEABLE | NVME_DNR);
	/* Unsupported feature ids. */
	CU_ASSERT_EQUAL(adm_get_feat(0x03, 0, 0, &dw0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_set_feat(0x7f, 0, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);

	/* Power management: only PS 0. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_POWER_MGMT, 1, NULL),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_POWER_MGMT, 0, NULL), 0);
	/* Volatile write cache. */
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_VOLATILE_WC, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_VOLATILE_WC, 0, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_VOLATILE_WC, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_VOLATILE_WC, 1, NULL), 0);
	/* Interrupt coalescing and vector configuration. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_IRQ_COALESCE, 0x0a03, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_IRQ_COALESCE, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0x0a03);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_IRQ_COALESCE, 0, NULL), 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_IRQ_CONFIG, 2 | NVME_IRQ_CONFIG_CD, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_IRQ_CONFIG, 0, 2, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 2 | NVME_IRQ_CONFIG_CD);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_IRQ_CONFIG, 0, 1, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_IRQ_CONFIG, 0, 9, &dw0),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_IRQ_CONFIG, 2, NULL), 0);
	/* Write atomicity, error recovery (per namespace). */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_WRITE_ATOMIC, 1, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_WRITE_ATOMIC, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1);
	CU_ASSERT_EQUAL(adm_err_recovery(true, 1, 42, NULL), 0);
	CU_ASSERT_EQUAL(adm_err_recovery(false, 1, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 42);
	CU_ASSERT_EQUAL(adm_err_recovery(false, 2, 0, &dw0), NVME_SC_INVALID_NS | NVME_DNR);
	/* NSID 0h reads the value last set for every namespace (FFFFFFFFh), 0 until then. */
	CU_ASSERT_EQUAL(adm_err_recovery(false, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(adm_err_recovery(true, NVME_NSID_ALL, 7, NULL), 0);
	CU_ASSERT_EQUAL(adm_err_recovery(false, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 7);
	CU_ASSERT_EQUAL(adm_err_recovery(false, 1, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 7);
	CU_ASSERT_EQUAL(adm_err_recovery(true, 1, 1u << 16 /* DULBE */, NULL),
			NVME_SC_INVALID_FIELD | NVME_DNR);
}

static void test_features_data(void)
{
	struct nvme_sqe sqe;
	uint64_t ts = 0;

	/* APST: accepted, table kept. */
	sqe = adm_sqe_data(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_AUTO_PST;
	sqe.cdw11 = 1;
	adm_buf()[0] = 0x18;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	sqe = adm_sqe_data(NVME_ADM_GET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_AUTO_PST;
	uint32_t dw0 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1);
	CU_ASSERT_EQUAL(adm_buf()[0], 0x18);
	CU_ASSERT_EQUAL(adm_buf()[1], 0xa5);
	CU_ASSERT_EQUAL(adm_buf()[256], 0xa5);
	/* Timestamp: set by the host, read back moving forward from it. */
	sqe = adm_sqe_data(NVME_ADM_SET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_TIMESTAMP;
	ts = 1700000000000ull;
	memcpy(adm_buf(), &ts, 8);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	sqe = adm_sqe_data(NVME_ADM_GET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_TIMESTAMP;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	ts = 0;
	memcpy(&ts, adm_buf(), 6);
	CU_ASSERT_TRUE(ts >= 1700000000000ull && ts < 1700000000000ull + 60000);
	CU_ASSERT_EQUAL((adm_buf()[6] >> 1) & 7, 1);
	/* Data features with an unmapped buffer. */
	sqe.dptr.prp.prp1 = 0x3000;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_DATA_XFER_ERROR | NVME_DNR);
}

static uint16_t adm_get_log(uint8_t lid, uint32_t numd, uint64_t off, bool rae)
{
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);

	sqe.cdw10 = lid | (rae ? 1u << 15 : 0) | ((numd - 1) & 0xffff) << 16;
	sqe.cdw11 = (numd - 1) >> 16;
	sqe.cdw12 = (uint32_t)off;
	sqe.cdw13 = (uint32_t)(off >> 32);
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static void test_log_pages(void)
{
	uint32_t *dw = (uint32_t *)adm_buf();
	struct nvme_fw_slot_log *fw = (struct nvme_fw_slot_log *)adm_buf();

	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_SUPPORTED, 256, 0, false), 0);
	CU_ASSERT_EQUAL(dw[NVME_LOG_SMART], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(dw[NVME_LOG_CMD_EFFECTS], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(dw[0x06], NVME_LOG_SUPPORTED_LSUPP); /* device self-test */
	CU_ASSERT_EQUAL(dw[NVME_LOG_ENDGRP], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(dw[NVME_LOG_ENDGRP_EVENTS], NVME_LOG_SUPPORTED_LSUPP);
	CU_ASSERT_EQUAL(dw[0x0a], 0); /* NVM set predictable latency: no NVM sets */
	CU_ASSERT_EQUAL(dw[NVME_LOG_FID_EFFECTS], NVME_LOG_SUPPORTED_LSUPP);
	/* Feature Identifiers Supported and Effects: the features taken, with their scope. */
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FID_EFFECTS, 256, 0, false), 0);
	CU_ASSERT_EQUAL(dw[NVME_FEAT_NUM_QUEUES], NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_CTRL);
	CU_ASSERT_EQUAL(dw[NVME_FEAT_ERR_RECOVERY], NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_NS);
	CU_ASSERT_EQUAL(dw[NVME_FEAT_ENDGRP_EVENT],
			NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_ENDGRP);
	CU_ASSERT_EQUAL(dw[0x83], NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_NS); /* PTPL */
	CU_ASSERT_EQUAL(dw[0x03], 0); /* LBA Range Type: not taken */
	CU_ASSERT_EQUAL(dw[0x1d], 0); /* FDP: this controller has no configuration */
	{
		uint32_t fis[256];

		memcpy(fis, dw, sizeof(fis));
		/* Exactly the features Get Features takes (FDP's only with a configuration). */
		for (unsigned int fid = 0; fid < 256; fid++) {
			uint32_t dw0;
			uint16_t st = adm_get_feat((uint8_t)fid, NVME_SEL_SUPPORTED, 0, &dw0);

			if (fid == 0x1d || fid == 0x1e)
				continue;
			CU_ASSERT_EQUAL((fis[fid] & NVME_FID_EFFECTS_FSUPP) != 0, st == 0);
		}
	}
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 128, 0, false), 0);
	CU_ASSERT_EQUAL(fw->afi, 1);
	CU_ASSERT_EQUAL(memcmp(fw->frs[0], "0.1     ", 8), 0);
	/* Effects: generated from the tables, vendor commands included. */
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CMD_EFFECTS, 1024, 0, false), 0);
	CU_ASSERT_TRUE(dw[NVME_ADM_IDENTIFY] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(dw[NVME_ADM_DBBUF] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(dw[0xc0] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(dw[0xc1], 0);
	CU_ASSERT_EQUAL(dw[0x03], 0);
	CU_ASSERT_TRUE(dw[NVME_ADM_FORMAT_NVM] & NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_TRUE(dw[256 + NVME_CMD_WRITE] & NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_TRUE(dw[256 + NVME_CMD_READ] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(dw[256 + NVME_CMD_VERIFY] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_TRUE(dw[256 + 0x80] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(dw[256 + 0x81], 0);
	CU_ASSERT_EQUAL(dw[256 + NVME_CMD_WRITE_UNCOR], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(dw[256 + NVME_CMD_COPY], NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC);
	CU_ASSERT_EQUAL(dw[NVME_ADM_GET_LBA_STATUS], NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(dw[256 + 0x7e], 0);
	/* NUMD and offset honoured exactly: 2 dwords from dword 6 (CREATE_CQ's, IDENTIFY's). */
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CMD_EFFECTS, 2, 5 * 4, false), 0);
	CU_ASSERT_EQUAL(dw[0], NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(dw[1], NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(dw[2], 0xa5a5a5a5);
	/* Past the end reads zero; at the very end works; beyond is invalid. */
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 4, 510, false),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 4, 508, false), 0);
	CU_ASSERT_EQUAL(dw[1], 0);
	CU_ASSERT_EQUAL(dw[4], 0xa5a5a5a5);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 4, 516, false),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Unknown log page. */
	CU_ASSERT_EQUAL(adm_get_log(0x70, 4, 0, false), NVME_SC_INVALID_LOG_PAGE | NVME_DNR);
	/* Above MDTS (128 KiB). */
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 0x10000, 0, false),
			NVME_SC_INVALID_FIELD | NVME_DNR);
}

static void test_error_log(void)
{
	struct nvme_error_log_entry *e = (struct nvme_error_log_entry *)adm_buf();
	struct nvme_sqe sqe = lb_sqe(0x03, 0); /* not an admin opcode */
	uint16_t cid;
	uint64_t before;

	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 16, 0, false), 0);
	before = e[0].error_count;
	cid = lb_submit(&lb, 0, &sqe);
	lb_pump(&lb);
	struct nvme_cqe cqe;
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.status >> 1, NVME_SC_INVALID_OPCODE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 64 * 16, 0, false), 0);
	CU_ASSERT_EQUAL(e[0].error_count, before + 1);
	CU_ASSERT_EQUAL(e[0].cid, cid);
	CU_ASSERT_EQUAL(e[0].sqid, 0);
	CU_ASSERT_EQUAL(e[0].status >> 1, NVME_SC_INVALID_OPCODE | NVME_DNR);
	/* A bad field records where it was. */
	CU_ASSERT_EQUAL(adm_identify(0x1f, 0, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 16, 0, false), 0);
	CU_ASSERT_EQUAL(e[0].param_error_location, offsetof(struct nvme_sqe, cdw10));
	/* The ring keeps the newest 64. */
	for (int i = 0; i < 70; i++)
		CU_ASSERT_EQUAL(adm_identify(0x1f, 0, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 64 * 16, 0, false), 0);
	CU_ASSERT_EQUAL(e[0].error_count, e[63].error_count + 63);
}

static void test_fused_and_opcodes(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);

	sqe.cdw0.bits.fuse = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe = lb_sqe(0x13, 0); /* reserved */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_OPCODE | NVME_DNR);
	sqe = lb_sqe(0xc1, 0); /* unregistered vendor opcode */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_OPCODE | NVME_DNR);
}

/* Downloads `len` bytes at `off` from adm_buf() (not cleared). */
static uint16_t adm_fw_download(uint32_t off, uint32_t len)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_FW_DOWNLOAD, 0);

	sqe.dptr.prp.prp1 = adm_buf_addr;
	sqe.dptr.prp.prp2 = adm_buf_addr + 4096;
	sqe.cdw10 = len / 4 - 1;
	sqe.cdw11 = off / 4;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t adm_fw_commit(uint8_t slot, uint8_t action)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_FW_COMMIT, 0);

	sqe.cdw10 = slot | (uint32_t)action << 3;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static void adm_fw_fr(char fr[9])
{
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)adm_buf();
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_IDENTIFY, 0);

	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(fr, id->fr, 8);
	fr[8] = '\0';
}

/* Firmware Image Download and Commit: pieces, slot rules, activation at reset and at once,
 * the slot log, the image checks (gap, overlap, revision). */
static void test_firmware(void)
{
	struct nvme_fw_slot_log *log = (struct nvme_fw_slot_log *)adm_buf();
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)adm_buf();
	struct nvme_sqe sqe = adm_sqe_data(NVME_ADM_IDENTIFY, 0);
	char fr0[9], fr[9];

	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(id->oacs & NVME_OACS_FW);
	CU_ASSERT_EQUAL(id->frmw, NVME_FRMW_SLOT1_RO | NVME_FRMW_SLOTS(3) | NVME_FRMW_ACT_NO_RESET);
	CU_ASSERT_EQUAL(id->fwug, 1);
	adm_fw_fr(fr0);
	/* Nothing downloaded: no image to commit. */
	CU_ASSERT_EQUAL(adm_fw_commit(2, 1), NVME_SC_INVALID_FW_IMAGE | NVME_DNR);
	/* Two 4 KiB pieces, the second first; revision "2.1.0" padded. */
	memset(adm_buf(), 0x5a, 8192);
	CU_ASSERT_EQUAL(adm_fw_download(4096, 4096), 0);
	memcpy(adm_buf(), "2.1.0   ", 8);
	CU_ASSERT_EQUAL(adm_fw_download(0, 4096), 0);
	/* Not whole units, slot 1 read-only, slot 4 absent, boot partitions. */
	CU_ASSERT_EQUAL(adm_fw_download(0, 2048), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_fw_download(100, 4096), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_fw_commit(1, 1), NVME_SC_INVALID_FW_SLOT | NVME_DNR);
	CU_ASSERT_EQUAL(adm_fw_commit(4, 1), NVME_SC_INVALID_FW_SLOT | NVME_DNR);
	CU_ASSERT_EQUAL(adm_fw_commit(2, 6), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Commit to slot 2, activate at the next reset. */
	CU_ASSERT_EQUAL(adm_fw_commit(2, 1), 0);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 128, 0, false), 0);
	CU_ASSERT_EQUAL(log->afi, 1 | 2 << 4);
	CU_ASSERT_EQUAL(memcmp(log->frs[1], "2.1.0   ", 8), 0);
	adm_fw_fr(fr);
	CU_ASSERT_STRING_EQUAL(fr, fr0);
	lb_disable(&lb);
	CU_ASSERT_TRUE_FATAL(lb_enable(&lb, 32) & 1);
	adm_fw_fr(fr);
	CU_ASSERT_STRING_EQUAL(fr, "2.1.0   ");
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 128, 0, false), 0);
	CU_ASSERT_EQUAL(log->afi, 2);
	/* A gap (units 0 and 2 only): invalid image; an overlap: Overlapping Range. */
	memcpy(adm_buf(), "3.0.0   ", 8);
	CU_ASSERT_EQUAL(adm_fw_download(0, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_download(8192, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_commit(3, 0), NVME_SC_INVALID_FW_IMAGE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_fw_download(4096, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_download(4096, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_commit(3, 0), NVME_SC_FW_OVERLAPPING_RANGE | NVME_DNR);
	/* Not a revision (binary first bytes). */
	memset(adm_buf(), 0, 4096);
	CU_ASSERT_EQUAL(adm_fw_download(0, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_commit(3, 0), NVME_SC_INVALID_FW_IMAGE | NVME_DNR);
	/* A good one, slot chosen by the controller (0: not the active slot 2), activated now. */
	memset(adm_buf(), 0x11, 4096);
	memcpy(adm_buf(), "3.0.1   ", 8);
	CU_ASSERT_EQUAL(adm_fw_download(0, 4096), 0);
	CU_ASSERT_EQUAL(adm_fw_commit(0, 3), 0);
	adm_fw_fr(fr);
	CU_ASSERT_STRING_EQUAL(fr, "3.0.1   ");
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_FW_SLOT, 128, 0, false), 0);
	CU_ASSERT_EQUAL(log->afi, 3);
	/* Back to the shipped image (slot 1) at the next reset. */
	CU_ASSERT_EQUAL(adm_fw_commit(1, 2), 0);
	CU_ASSERT_EQUAL(adm_fw_commit(0, 2), NVME_SC_INVALID_FW_SLOT | NVME_DNR);
	lb_disable(&lb);
	CU_ASSERT_TRUE_FATAL(lb_enable(&lb, 32) & 1);
	adm_fw_fr(fr);
	CU_ASSERT_STRING_EQUAL(fr, fr0);
}

static uint16_t adm_aer_submit(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);

	return lb_submit(&lb, 0, &sqe);
}

static void test_aer(void)
{
	struct nvme_cqe cqe;
	struct nvme_sqe sqe;
	uint16_t cids[4];
	uint32_t dw0;

	for (int i = 0; i < 4; i++)
		cids[i] = adm_aer_submit();
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	/* A fifth exceeds AERL. */
	sqe = lb_sqe(NVME_ADM_ASYNC_EVENT, 0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_ASYNC_LIMIT | NVME_DNR);

	/* Namespace attribute notices are reported once enabled. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_ASYNC_EVENT, NVME_AEC_NS_ATTR, NULL), 0);
	CU_ASSERT_EQUAL(lb_add_malloc_ns(&lb, "adm2", 5, 64, 512), 5);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cids[0]);
	CU_ASSERT_EQUAL(cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED,
					      NVME_LOG_CHANGED_NS));
	/* Masked until the log is read: a second change is not reported yet. */
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 5), 0);
	lb_pump(&lb);
	CU_ASSERT_FALSE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CHANGED_NS, 1024, 0, false), 0);
	CU_ASSERT_EQUAL(((uint32_t *)adm_buf())[0], 5);
	CU_ASSERT_EQUAL(((uint32_t *)adm_buf())[1], 0);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cids[1]);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CHANGED_NS, 1024, 0, false), 0);
	CU_ASSERT_EQUAL(((uint32_t *)adm_buf())[0], 0); /* cleared by the read with RAE 0 */

	/* Error event: a doorbell for a queue that does not exist. */
	ctrlr_doorbell_write(lb.ctrlr, 2 * 7, 3);
	lb_pump(&lb);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cids[2]);
	CU_ASSERT_EQUAL(cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_ERROR, NVME_AER_ERR_INVALID_DB_REG,
					      NVME_LOG_ERROR));
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 16, 0, false), 0);

	/* SMART temperature: threshold below the current temperature. */
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_ASYNC_EVENT, NVME_AEC_NS_ATTR | 0x2, NULL), 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_TEMP_THRESH, 300, NULL), 0);
	CU_ASSERT_TRUE(lb_reap(&lb, 0, &cqe, false));
	CU_ASSERT_EQUAL(cqe.cid, cids[3]);
	CU_ASSERT_EQUAL(
	    cqe.dw0, NVME_AER_DW0(NVME_AER_TYPE_SMART, NVME_AER_SMART_TEMP_THRESH, NVME_LOG_SMART));
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_SMART, 128, 0, false), 0);
	CU_ASSERT_EQUAL(((struct nvme_smart_log *)adm_buf())->critical_warning,
			NVME_SMART_CRIT_TEMPERATURE);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_TEMP_THRESH, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 0xffff, 300);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_TEMP_THRESH, 343, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_SMART, 128, 0, false), 0);
	CU_ASSERT_EQUAL(((struct nvme_smart_log *)adm_buf())->critical_warning, 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_TEMP_THRESH, 5u << 16, NULL),
			NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_ASYNC_EVENT, 0, NULL), 0);
}

static void test_abort(void)
{
	struct nvme_cqe cqe;
	struct nvme_sqe sqe;
	uint16_t aer_cid;
	uint32_t dw0 = 7;
	bool saw_aer = false, saw_abort = false;

	aer_cid = adm_aer_submit();
	sqe = lb_sqe(NVME_ADM_ABORT, 0);
	sqe.cdw10 = 0 | (uint32_t)aer_cid << 16;
	lb_submit(&lb, 0, &sqe);
	lb_pump(&lb);
	while (lb_reap(&lb, 0, &cqe, false)) {
		if (cqe.cid == aer_cid) {
			saw_aer = true;
			CU_ASSERT_EQUAL(cqe.status >> 1, NVME_SC_ABORT_REQ);
		} else {
			saw_abort = true;
			CU_ASSERT_EQUAL(cqe.status >> 1, 0);
			CU_ASSERT_EQUAL(cqe.dw0 & 1, 0);
		}
	}
	CU_ASSERT_TRUE(saw_aer && saw_abort);
	/* Nothing to abort: dw0 bit 0 set. */
	sqe = lb_sqe(NVME_ADM_ABORT, 0);
	sqe.cdw10 = 1 | 77u << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0 & 1, 1);
}

static void test_dbbuf_checks(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_DBBUF, 0);

	sqe.dptr.prp.prp1 = adm_buf_addr + 8;
	sqe.dptr.prp.prp2 = adm_buf_addr + 4096;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe.dptr.prp.prp1 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe.dptr.prp.prp1 = 0x4000; /* outside guest memory */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(lb.dbbuf_changes, 0);
}

static void test_format_checks(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);

	sqe.cdw10 = (1u << 12) | 0; /* LBAFU: format 16 does not exist */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FORMAT | NVME_DNR);
	sqe.cdw10 = 1u << 5; /* protection information without metadata */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FORMAT | NVME_DNR);
	sqe.cdw10 = 1 | (4u << 5); /* PI type 4 is reserved */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe.cdw10 = 3u << 9; /* reserved */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe.nsid = 3;
	sqe.cdw10 = 7; /* ns 3 (4096-byte bdev) has formats 0-6 */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FORMAT | NVME_DNR);
	sqe.nsid = NVME_NSID_ALL; /* ...so all namespaces cannot take it either */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FORMAT | NVME_DNR);
	sqe.nsid = 1;
	sqe.cdw10 = 0;
	sqe.nsid = 2;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_NS | NVME_DNR);
	sqe.nsid = NVME_NSID_ALL;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	sqe.nsid = 3;
	sqe.cdw10 = 1u << 9;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
}

struct vendor_probe {
	int calls;
};

static void adm_vendor_echo(struct ctrlr_req *req, void *arg)
{
	struct vendor_probe *p = arg;

	p->calls++;
	ctrlr_req_set_cdw0(req, ctrlr_req_sqe(req)->cdw12 + 1);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

static void test_vendor(void)
{
	struct nvme_sqe sqe = adm_sqe_data(0xc0, 0);
	struct vendor_probe probe = {0};
	struct ctrlr_vendor_cmd cmd = {
	    .opcode = 0xd5,
	    .io = false,
	    .name = "echo",
	    .fn = adm_vendor_echo,
	    .arg = &probe,
	};
	uint32_t dw0 = 0;

	/* The shipped controller-info command. */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 2);
	CU_ASSERT_EQUAL(memcmp(adm_buf(), "NVMEEMU1", 8), 0);
	CU_ASSERT_EQUAL(adm_buf()[4095], 0);
	sqe = adm_sqe_data(0xc0, 0);
	sqe.cdw10 = 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(adm_buf()[16], 0xa5);
	sqe.cdw10 = 4097;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), NVME_SC_INVALID_FIELD | NVME_DNR);

	/* Registration table. */
	CU_ASSERT_EQUAL(ctrlr_vendor_register(lb.ctrlr, &cmd), 0);
	CU_ASSERT_EQUAL(ctrlr_vendor_register(lb.ctrlr, &cmd), -EEXIST);
	cmd.opcode = 0x40;
	CU_ASSERT_EQUAL(ctrlr_vendor_register(lb.ctrlr, &cmd), -EINVAL);
	sqe = lb_sqe(0xd5, 0);
	sqe.cdw12 = 41;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 42);
	CU_ASSERT_EQUAL(probe.calls, 1);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CMD_EFFECTS, 1024, 0, false), 0);
	CU_ASSERT_TRUE(((uint32_t *)adm_buf())[0xd5] & NVME_CMD_EFFECTS_CSUPP);
	CU_ASSERT_EQUAL(ctrlr_vendor_unregister(lb.ctrlr, false, 0xd5), 0);
	CU_ASSERT_EQUAL(ctrlr_vendor_unregister(lb.ctrlr, false, 0xd5), -ENOENT);
	sqe = lb_sqe(0xd5, 0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), NVME_SC_INVALID_OPCODE | NVME_DNR);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_CMD_EFFECTS, 1024, 0, false), 0);
	CU_ASSERT_EQUAL(((uint32_t *)adm_buf())[0xd5], 0);
}

static void test_admin_queue_wrap(void)
{
	/* 32-entry admin queue: 100 commands wrap it several times, phase flips each time. */
	for (int i = 0; i < 100; i++)
		CU_ASSERT_EQUAL_FATAL(adm_get_feat(NVME_FEAT_VOLATILE_WC, 0, 0, NULL), 0);
}

/* Keep Alive (optional on PCIe): KAS 100 ms, KATO rounded up to it, a Keep Alive restarts the
 * timer, none within KATO sets CSTS.CFS and logs Keep Alive Timer Expired; the host's reset turns
 * it off. Waits of 120-250 ms against the real clock, no upper bound asserted on them. */
static void test_keep_alive(void)
{
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)adm_buf();
	const uint32_t cfs = 1u << 1; /* CSTS.CFS */
	struct nvme_sqe ka = lb_sqe(NVME_ADM_KEEP_ALIVE, 0);
	struct nvme_error_log_entry *e = (struct nvme_error_log_entry *)adm_buf();
	uint64_t errs, left;
	uint32_t dw0 = 1;

	CU_ASSERT_EQUAL(adm_identify(NVME_CNS_CTRL, 0, 0), 0);
	CU_ASSERT_EQUAL(id->kas, 1);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 16, 0, false), 0);
	errs = e[0].error_count;
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_KATO, NVME_SEL_SUPPORTED, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, NVME_FEAT_CAP_CHANGE);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_KATO, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	/* Off: Keep Alive is accepted and nothing is ever due. */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &ka, NULL), 0);
	CU_ASSERT_EQUAL(ctrlr_keep_alive_check(lb.ctrlr), 0);
	CU_ASSERT_EQUAL(adm_set_feat(NVME_FEAT_KATO, 150, NULL), 0);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_KATO, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 200);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_KATO, NVME_SEL_DEFAULT, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	left = ctrlr_keep_alive_check(lb.ctrlr);
	CU_ASSERT(left > 0 && left <= 200000);
	/* A Keep Alive 120 ms in: 200 ms are due again (without it, at most 80 ms would be). */
	usleep(120000);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &ka, NULL), 0);
	CU_ASSERT(ctrlr_keep_alive_check(lb.ctrlr) > 100000);
	CU_ASSERT_FALSE(lb_reg_read32(&lb, NVME_REG_CSTS) & cfs);
	/* Then none: fatal status, and the error log says why. */
	usleep(250000);
	CU_ASSERT_EQUAL(ctrlr_keep_alive_check(lb.ctrlr), 0);
	CU_ASSERT_TRUE(lb_reg_read32(&lb, NVME_REG_CSTS) & cfs);
	CU_ASSERT_EQUAL(adm_get_log(NVME_LOG_ERROR, 16, 0, false), 0);
	CU_ASSERT_EQUAL(e[0].error_count, errs + 1);
	CU_ASSERT_EQUAL(e[0].status >> 1, NVME_SC_KEEP_ALIVE_EXPIRED);
	CU_ASSERT_EQUAL(e[0].cid, 0xffff);
	/* The host resets the controller: CFS clear, KATO back to 0. */
	CU_ASSERT_FALSE(lb_disable(&lb) & cfs);
	CU_ASSERT_TRUE(lb_enable(&lb, 32) & 1);
	CU_ASSERT_FALSE(lb_reg_read32(&lb, NVME_REG_CSTS) & cfs);
	CU_ASSERT_EQUAL(adm_get_feat(NVME_FEAT_KATO, 0, 0, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 0);
	CU_ASSERT_EQUAL(ctrlr_keep_alive_check(lb.ctrlr), 0);
}

CUNIT_SUITE(admin, admin_init, admin_fini, {"identify_ctrl", test_identify_ctrl},
	    {"identify_ns", test_identify_ns}, {"identify_bad_prp", test_identify_bad_prp},
	    {"queue_checks", test_queue_checks}, {"num_queues", test_num_queues},
	    {"features", test_features}, {"features_data", test_features_data},
	    {"log_pages", test_log_pages}, {"error_log", test_error_log},
	    {"fused_and_opcodes", test_fused_and_opcodes}, {"aer", test_aer}, {"abort", test_abort},
	    {"dbbuf_checks", test_dbbuf_checks}, {"format_checks", test_format_checks},
	    {"vendor", test_vendor}, {"admin_queue_wrap", test_admin_queue_wrap},
	    {"firmware", test_firmware}, {"keep_alive", test_keep_alive})
