/* tests/unit/controller/fdp_test.c - Flexible Data Placement through the loopback transport (issue
 * 35): the configuration log, Feature 1Dh only while the group has no namespace, the
 * Directive Receive Identify parameters, writes with DTYPE 2 filling their handle's reclaim
 * unit of the namespace's placement bdev (RUH Status), RUH Update, the statistics (media bytes
 * from the bdev), a namespace refused on a bdev without placement or of another geometry, and
 * hostile values. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend/bdev.h"
#include "common/evloop.h"

#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/fdp_create_wait.h"

#define FDP_NRUH 4
#define FDP_RUNS (1u << 20)

static struct lb lb;
static uint64_t buf_addr;

static int fdp_init(void)
{
	struct ctrlr_config cfg;

	lb_default_config(&cfg);
	cfg.fdp_nruh = FDP_NRUH;
	cfg.fdp_runs = FDP_RUNS;
	if (lb_init(&lb, &cfg))
		return -1;
	if (!(lb_enable(&lb, 32) & 1))
		return -1;
	buf_addr = lb_alloc(&lb, 65536);
	return 0;
}

static int fdp_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *buf(void)
{
	return lb_ptr(&lb, buf_addr);
}

static struct nvme_sqe sqe_data(uint8_t opc, uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);

	memset(buf(), 0xa5, 8192);
	sqe.dptr.prp.prp1 = buf_addr;
	sqe.dptr.prp.prp2 = buf_addr + 4096;
	return sqe;
}

static uint16_t get_log(uint8_t lid, uint16_t lsi)
{
	struct nvme_sqe sqe = sqe_data(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);

	/* Log 23h: LSP bit 0, the host events. */
	sqe.cdw10 = lid | (lid == NVME_LOG_FDP_EVENTS ? 1u << 8 : 0) | (1024u - 1) << 16;
	sqe.cdw11 = (uint32_t)lsi << 16;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t set_fdp(uint32_t cdw11, uint32_t cdw12)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);

	sqe.cdw10 = NVME_FEAT_FDP;
	sqe.cdw11 = cdw11;
	sqe.cdw12 = cdw12;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

/* Feature 1Eh on namespace 1: placement handle ph, noet event types (t0, t1), enable. */
static uint16_t set_events(uint16_t ph, uint8_t noet, uint32_t cdw12, uint8_t t0, uint8_t t1)
{
	struct nvme_sqe sqe = sqe_data(NVME_ADM_SET_FEATURES, 1);

	buf()[0] = t0;
	buf()[1] = t1;
	sqe.cdw10 = NVME_FEAT_FDP_EVENTS;
	sqe.cdw11 = ph | (uint32_t)noet << 16;
	sqe.cdw12 = cdw12;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static uint16_t write_placed(uint8_t dtype, uint16_t dspec, uint32_t nlb)
{
	struct nvme_sqe sqe = sqe_data(NVME_CMD_WRITE, 1);

	sqe.cdw12 = (nlb - 1) | (uint32_t)dtype << 20;
	sqe.cdw13 = (uint32_t)dspec << 16;
	return lb_cmd(&lb, 1, &sqe, NULL);
}

static uint64_t ruamw(uint16_t pid)
{
	struct nvme_sqe sqe = sqe_data(NVME_CMD_IO_MGMT_RECV, 1);
	struct nvme_ruh_status_desc d;

	sqe.cdw10 = NVME_IOM_RUH_STATUS;
	sqe.cdw11 = 4096 / 4 - 1;
	if (lb_cmd(&lb, 1, &sqe, NULL))
		return ~0ull;
	memcpy(&d, buf() + 16 + 32u * pid, sizeof(d));
	/* NRUHSD at bytes 15:14 of the header. */
	if (buf()[14] != FDP_NRUH || buf()[15] != 0)
		return ~0ull;
	return d.pid == pid && d.ruhid == pid ? d.ruamw : ~0ull;
}

static void test_fdp(void)
{
	struct nvme_fdp_config_desc d;
	struct nvme_sqe sqe;
	uint64_t v;
	uint32_t dw0 = 0;

	/* Identify: FDPS, directives. */
	sqe = sqe_data(NVME_ADM_IDENTIFY, 0);
	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(((struct nvme_id_ctrl *)buf())->ctratt & NVME_CTRATT_FDPS);
	CU_ASSERT_TRUE(((struct nvme_id_ctrl *)buf())->oacs & NVME_OACS_DIRECTIVES);
	/* Log 12h: Features 1Dh (the endurance group's) and 1Eh (per namespace) are taken. */
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FID_EFFECTS, 0), 0);
	CU_ASSERT_EQUAL(((uint32_t *)buf())[NVME_FEAT_FDP],
			NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_ENDGRP);
	CU_ASSERT_EQUAL(((uint32_t *)buf())[NVME_FEAT_FDP_EVENTS],
			NVME_FID_EFFECTS_FSUPP | NVME_FID_EFFECTS_SCOPE_NS);
	/* The configuration log. */
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FDP_CONFIGS, 1), 0);
	memcpy(&d, buf() + 16, sizeof(d));
	CU_ASSERT_EQUAL(d.nruh, FDP_NRUH);
	CU_ASSERT_EQUAL(d.runs, FDP_RUNS);
	CU_ASSERT_EQUAL(d.maxpids, FDP_NRUH - 1);
	CU_ASSERT_TRUE(d.fdpatt & NVME_FDPA_VALID);
	CU_ASSERT_EQUAL(buf()[16 + 64], NVME_RUHT_INITIALLY_ISOLATED);
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FDP_CONFIGS, 2), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Feature 1Dh: enable while the group has no namespace; hostile values refused. */
	CU_ASSERT_EQUAL(set_fdp(2, 1), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_fdp(1, 1 | 1u << 8), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_fdp(1, 1 | 1u << 20), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_fdp(1, 1), 0);
	sqe = lb_sqe(NVME_ADM_GET_FEATURES, 0);
	sqe.cdw10 = NVME_FEAT_FDP;
	sqe.cdw11 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 1);
	/* While FDP is enabled a namespace needs a placement bdev of the configuration's
	 * geometry: a plain bdev and one of other handles are refused. */
	CU_ASSERT_EQUAL(lb_add_malloc_ns(&lb, "plain0", 1, 16384, 512), -EINVAL);
	{
		struct bdev_fdp_opts o = {.nruh = FDP_NRUH - 1, .ru_blocks = FDP_RUNS / 512};
		struct bdev *b;

		CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("fdpbase1", 48000, 512, NULL, NULL), 0);
		CU_ASSERT_EQUAL_FATAL(fdp_create_wait("fdpbad", "fdpbase1", &o, &b, NULL, 0), 0);
		CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 1, b, NULL), -EINVAL);
		o.nruh = FDP_NRUH;
		CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("fdpbase0", 48000, 512, NULL, NULL), 0);
		CU_ASSERT_EQUAL_FATAL(fdp_create_wait("fdp0", "fdpbase0", &o, &b, NULL, 0), 0);
		CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 1, b, NULL), 1);
		lb_pump(&lb);
	}
	CU_ASSERT_EQUAL(set_fdp(1, 0) & 0x7ff, NVME_SC_CMD_SEQ_ERROR);
	/* Directive Receive, Identify: Data Placement supported and enabled. */
	sqe = sqe_data(NVME_ADM_DIRECTIVE_RECV, 1);
	sqe.cdw10 = 4096 / 4 - 1;
	sqe.cdw11 = NVME_DOPER_ID_RETURN_PARAMS | NVME_DTYPE_IDENTIFY << 8;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(buf()[0], 0x5);
	CU_ASSERT_EQUAL(buf()[32], 0x5);
	sqe.cdw11 = NVME_DOPER_ID_RETURN_PARAMS | NVME_DTYPE_DATA_PLACEMENT << 8;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe = lb_sqe(NVME_ADM_DIRECTIVE_SEND, 1);
	sqe.cdw11 = NVME_DOPER_ID_ENABLE;
	sqe.cdw12 = 1 | NVME_DTYPE_DATA_PLACEMENT << 8;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Feature 1Eh: both host events of handle 2 enabled; hostile values refused. */
	CU_ASSERT_EQUAL(set_events(2, 2, 1, 0x00, 0x03), 0);
	CU_ASSERT_EQUAL(set_events(FDP_NRUH, 2, 1, 0x00, 0x03), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_events(2, 2, 1, 0x00, 0x42), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_events(2, 0, 1, 0x00, 0x03), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(set_events(2, 2, 3, 0x00, 0x03), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe = sqe_data(NVME_ADM_GET_FEATURES, 1);
	sqe.cdw10 = NVME_FEAT_FDP_EVENTS;
	sqe.cdw11 = 2;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, 3);
	CU_ASSERT_EQUAL(buf()[0], 0x00);
	CU_ASSERT_EQUAL(buf()[1], 1);
	CU_ASSERT_EQUAL(buf()[2], 0x03);
	CU_ASSERT_EQUAL(buf()[3], 1);
	CU_ASSERT_EQUAL(buf()[4], 0x80); /* Media Reallocated, not enabled */
	CU_ASSERT_EQUAL(buf()[5], 0);
	/* Writes through handle 2 fill its reclaim unit; the others keep theirs. */
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 32, 1, false), 0);
	CU_ASSERT_EQUAL(ruamw(2), FDP_RUNS / 512);
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 2, 8), 0);
	CU_ASSERT_EQUAL(ruamw(2), FDP_RUNS / 512 - 8);
	CU_ASSERT_EQUAL(ruamw(1), FDP_RUNS / 512);
	/* No directive: the default handle 0; a placement identifier past the list: handle 0. */
	CU_ASSERT_EQUAL(write_placed(0, 0, 4), 0);
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 0xffff, 4), 0);
	CU_ASSERT_EQUAL(ruamw(0), FDP_RUNS / 512 - 8);
	/* A directive type that is not enabled. */
	CU_ASSERT_EQUAL(write_placed(1, 0, 4), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* RUH Update: handle 2 gets a new, empty reclaim unit. */
	sqe = sqe_data(NVME_CMD_IO_MGMT_SEND, 1);
	sqe.cdw10 = NVME_IOM_RUH_UPDATE;
	((uint16_t *)buf())[0] = 2;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(ruamw(2), FDP_RUNS / 512);
	/* ... and its reclaim unit was not full: an event with the blocks it had left. */
	lb_pump(&lb);
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FDP_EVENTS, 1), 0);
	{
		struct nvme_fdp_event e;
		uint64_t left;

		memcpy(&v, buf(), 4);
		CU_ASSERT_EQUAL((uint32_t)v, 1);
		memcpy(&e, buf() + 64, sizeof(e));
		memcpy(&left, e.type_specific, 8);
		CU_ASSERT_EQUAL(e.type, NVME_FDPE_RU_NOT_FULLY_WRITTEN);
		CU_ASSERT_EQUAL(e.pid, 2);
		CU_ASSERT_EQUAL(e.nsid, 1);
		CU_ASSERT_EQUAL(left, FDP_RUNS / 512 - 8);
	}
	/* Invalid placement identifiers count against handle 0, whose events are off. */
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 0x7777, 1), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(set_events(0, 1, 1, 0x03, 0), 0);
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 0x7777, 1), 0);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FDP_EVENTS, 1), 0);
	memcpy(&v, buf(), 4);
	CU_ASSERT_EQUAL((uint32_t)v, 2);
	CU_ASSERT_EQUAL(buf()[64 + 64], NVME_FDPE_INVALID_PID);
	/* Controller events (LSP bit 0 clear): none. */
	sqe = sqe_data(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);
	sqe.cdw10 = NVME_LOG_FDP_EVENTS | (1024u - 1) << 16;
	sqe.cdw11 = 1u << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(&v, buf(), 4);
	CU_ASSERT_EQUAL((uint32_t)v, 0);
	sqe = sqe_data(NVME_CMD_IO_MGMT_SEND, 1);
	sqe.cdw10 = NVME_IOM_RUH_UPDATE;
	((uint16_t *)buf())[0] = FDP_NRUH;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe.cdw10 = NVME_IOM_RUH_UPDATE | 0xffffu << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe = sqe_data(NVME_CMD_IO_MGMT_RECV, 1);
	sqe.cdw10 = 7;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* A write past the end of a reclaim unit takes the next one. */
	for (int i = 0; i < 128; i++)
		CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 3, 16), 0);
	CU_ASSERT_EQUAL(ruamw(3), 0);
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 3, 16), 0);
	CU_ASSERT_EQUAL(ruamw(3), FDP_RUNS / 512 - 16);
	/* Statistics: host and media bytes written, a reclaim unit erased per new one. */
	CU_ASSERT_EQUAL(get_log(NVME_LOG_FDP_STATS, 1), 0);
	memcpy(&v, buf(), 8);
	CU_ASSERT_EQUAL(v, (8 + 4 + 4 + 1 + 1 + 128 * 16 + 16) * 512ull);
	/* Media bytes: the placement bdev's (no garbage collection yet: what the host wrote);
	 * erased: the four reclaim units it handed out (handles 2, 0 and twice 3). */
	memcpy(&v, buf() + 16, 8);
	CU_ASSERT_EQUAL(v, (8 + 4 + 4 + 1 + 1 + 128 * 16 + 16) * 512ull);
	memcpy(&v, buf() + 32, 8);
	CU_ASSERT_EQUAL(v, 4ull * FDP_RUNS);
	/* Copy's DTYPE/DSPEC place its destination: one block to LBA 100 through handle 3. */
	v = ruamw(3);
	sqe = sqe_data(NVME_CMD_COPY, 1);
	memset(buf(), 0, 32); /* descriptor format 0: SLBA 0, NLB 1 */
	sqe.cdw10 = 100;
	sqe.cdw12 = 1u << 20; /* DTYPE 1: not enabled */
	sqe.cdw13 = 3u << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	sqe = sqe_data(NVME_CMD_COPY, 1);
	memset(buf(), 0, 32);
	sqe.cdw10 = 100;
	sqe.cdw12 = (uint32_t)NVME_DTYPE_DATA_PLACEMENT << 20;
	sqe.cdw13 = 3u << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(ruamw(3), v - 1);
	/* A format with metadata (512+8 extended): its writes take the metadata path, which
	 * checks the directive and places them too. */
	sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);
	sqe.cdw10 = 1 | 1u << 4;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	v = ruamw(1);
	CU_ASSERT_EQUAL(write_placed(1, 0, 1), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(ruamw(1), v);
	CU_ASSERT_EQUAL(write_placed(NVME_DTYPE_DATA_PLACEMENT, 1, 1), 0);
	CU_ASSERT_TRUE(ruamw(1) < v);
}

CUNIT_SUITE(fdp, fdp_init, fdp_fini, {"fdp", test_fdp})
