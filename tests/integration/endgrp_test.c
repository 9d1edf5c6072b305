/* tests/integration/endgrp_test.c - Endurance Groups of the real daemon through its socket:
 * Identify (CTRATT, ENDGIDMAX, OAES, each namespace's ENDGID, the Endurance Group List of CNS
 * 19h), the Endurance Group Information log (09h) against the per-namespace SMART log after
 * writes and reads (commands equal, bytes in 10^9 units, spare and percentage used the same),
 * its capacity against TNVMCAP/UNVMCAP with a namespace pool, Endurance Group Event
 * Configuration (Feature 18h), a spare warning injected over JSON-RPC putting the group in the
 * Event Aggregate log (0Fh) with its notice, the entry gone once read without RAE, and hostile
 * values for every new field: each one an error for that command only, the daemon serving on. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define EG_SERIAL "EG-1"
#define EG_NQN "nqn.2026-11.io.nvme-emu:" EG_SERIAL
#define EG_NS_BYTES (16ull << 20)
#define AER_WAIT_MS 30000
#define EG_IO (128u << 10) /* MDTS */

/* A command's status without DNR. */
static int sc(int st)
{
	return st < 0 ? st : st & 0x7ff;
}

static uint64_t le64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint16_t le16_at(const uint8_t *p, size_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

struct eg {
	struct nvme_itest t;
	char rpc[160];
	uint8_t *buf;
	uint64_t iova;
};

static bool eg_up(struct eg *x, const char *build, const char *const *more)
{
	const char *args[16] = { "-r", x->rpc };
	int n = 2;
	static unsigned int seq;

	snprintf(x->rpc, sizeof(x->rpc), "/tmp/.endgrp-rpc-%d-%u.sock", getpid(), seq++);
	for (int i = 0; more[i] && n < 15; i++)
		args[n++] = more[i];
	args[n] = NULL;
	if (!CHECK(nvme_itest_up(&x->t, build, args, 2, 32) == 0))
		return false;
	x->iova = nvme_host_alloc(&x->t.h, 8192, (void **)&x->buf);
	return CHECK(x->iova != 0);
}

static void eg_down(struct eg *x)
{
	CHECK(nvme_itest_alive(&x->t));
	CHECK(nvme_itest_stop(&x->t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
	unlink(x->rpc);
}

/* Get Log Page lid, 512 bytes at off into x->buf, with CDW11's LSI and NSID FFFFFFFFh. */
static int get_log(struct eg *x, uint8_t lid, uint16_t lsi, uint64_t off, bool rae)
{
	struct nvme_sqe sqe = { 0 };

	memset(x->buf, 0xa5, 512);
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.nsid = NVME_NSID_ALL;
	sqe.cdw10 = lid | (rae ? 1u << 15 : 0) | (512u / 4 - 1) << 16;
	sqe.cdw11 = (uint32_t)lsi << 16;
	sqe.cdw12 = (uint32_t)off;
	sqe.cdw13 = (uint32_t)(off >> 32);
	if (nvme_host_build_prps(&x->t.h, &sqe, x->iova, 512))
		return -1;
	return nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

static int smart_ns1(struct eg *x)
{
	struct nvme_sqe sqe = { 0 };

	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.nsid = 1;
	sqe.cdw10 = NVME_LOG_SMART | (512u / 4 - 1) << 16;
	if (nvme_host_build_prps(&x->t.h, &sqe, x->iova + 4096, 512))
		return -1;
	return nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

static int identify(struct eg *x, uint8_t cns, uint32_t nsid, uint32_t cdw11)
{
	struct nvme_sqe sqe = { 0 };

	memset(x->buf, 0xa5, 4096);
	sqe.cdw0.bits.opc = NVME_ADM_IDENTIFY;
	sqe.nsid = nsid;
	sqe.cdw10 = cns;
	sqe.cdw11 = cdw11;
	if (nvme_host_build_prps(&x->t.h, &sqe, x->iova, 4096))
		return -1;
	return nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

static int feat(struct eg *x, bool set, uint8_t fid, uint8_t sel, uint32_t cdw11, uint32_t *dw0)
{
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = set ? NVME_ADM_SET_FEATURES : NVME_ADM_GET_FEATURES;
	sqe.cdw10 = fid | (uint32_t)sel << 8;
	sqe.cdw11 = cdw11;
	st = nvme_host_cmd(&x->t.h, 0, &sqe, &cqe);
	if (dw0)
		*dw0 = cqe.dw0;
	return st;
}

static int set_spare(struct eg *x, const char *build, const char *spare)
{
	const char *args[] = { "nvmf_emu_set_health", "--nqn", EG_NQN, "--available_spare", spare,
			       "--reset", "true", NULL };

	return nvme_itest_rpc(build, x->rpc, args, NULL, 0);
}

/* Waits for one admin CQE (an AER's) without submitting anything. */
static bool aer_wait(struct eg *x, struct nvme_cqe *cqe)
{
	for (int i = 0; i < AER_WAIT_MS / 10; i++) {
		if (nvme_host_reap(&x->t.h, 0, cqe) == 1)
			return true;
		usleep(10000);
	}
	return false;
}

static int aer_submit(struct eg *x)
{
	struct nvme_sqe sqe = { 0 };

	sqe.cdw0.bits.opc = NVME_ADM_ASYNC_EVENT;
	return nvme_host_submit(&x->t.h, 0, &sqe, false);
}

static void check_identify(struct eg *x)
{
	const struct nvme_id_ctrl *id = (const struct nvme_id_ctrl *)x->buf;

	CHECK(identify(x, NVME_CNS_CTRL, 0, 0) == 0);
	CHECK(id->ctratt & NVME_CTRATT_EGS);
	CHECK(id->endgidmax == 1);
	CHECK(id->oaes & NVME_OAES_ENDGRP_EVENTS);
	CHECK(identify(x, NVME_CNS_NS, 1, 0) == 0);
	CHECK(((const struct nvme_id_ns *)x->buf)->endgid == 1);
	CHECK(identify(x, NVME_CNS_CS_INDEP_NS, 1, 0) == 0);
	CHECK(((const struct nvme_id_ns_indep *)x->buf)->endgid == 1);
	/* CNS 19h: the groups from CDW11[15:0] on. */
	CHECK(identify(x, NVME_CNS_ENDGRP_LIST, 0, 0) == 0);
	CHECK(le16_at(x->buf, 0) == 1 && le16_at(x->buf, 2) == 1 && le16_at(x->buf, 4) == 0);
	CHECK(identify(x, NVME_CNS_ENDGRP_LIST, 0, 1) == 0);
	CHECK(le16_at(x->buf, 0) == 1 && le16_at(x->buf, 2) == 1);
	/* Past the last group, and the reserved upper half of CDW11 set: an empty list. */
	CHECK(identify(x, NVME_CNS_ENDGRP_LIST, 0, 2) == 0);
	CHECK(le16_at(x->buf, 0) == 0 && le16_at(x->buf, 2) == 0);
	CHECK(identify(x, NVME_CNS_ENDGRP_LIST, 0xffffffffu, 0xffffffffu) == 0);
	CHECK(le16_at(x->buf, 0) == 0);
	/* The supported log pages. */
	CHECK(get_log(x, NVME_LOG_SUPPORTED, 0, 0, false) == 0);
	CHECK(x->buf[NVME_LOG_ENDGRP * 4] & 1);
	CHECK(x->buf[NVME_LOG_ENDGRP_EVENTS * 4] & 1);
}

static void test_info(const char *build)
{
	const char *args[] = { "--malloc", "16M", "--serial", EG_SERIAL, NULL };
	const uint8_t *smart;
	struct eg x;
	void *data;
	uint64_t data_iova;

	if (!eg_up(&x, build, args))
		return;
	smart = x.buf + 4096;
	check_identify(&x);
	CHECK(nvme_host_create_io_queues(&x.t.h, 1, 32, false, 0) == 0);
	data_iova = nvme_host_alloc(&x.t.h, EG_IO, &data);
	memset(data, 0x5a, EG_IO);
	/* 3 MiB written and 2 MiB read in 128 KiB commands (MDTS): the group's counters are the
	 * namespace's. */
	for (int i = 0; i < 24; i++)
		CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_WRITE, 1, (uint64_t)i * EG_IO / 512,
				   EG_IO / 512, data_iova, EG_IO) == 0);
	for (int i = 0; i < 16; i++)
		CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_READ, 1, 0, EG_IO / 512, data_iova, EG_IO) == 0);
	CHECK(smart_ns1(&x) == 0);
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 0, false) == 0);
	CHECK(x.buf[0] == 0);		     /* no critical warning */
	CHECK(x.buf[3] == smart[3] && x.buf[3] == 100); /* available spare */
	CHECK(x.buf[4] == smart[4]);	     /* its threshold */
	CHECK(x.buf[5] == smart[5]);	     /* percentage used */
	CHECK(le64_at(x.buf, 32) == 3000);   /* endurance: 3000 writes of 16 MiB, in 10^9 */
	CHECK(le64_at(x.buf, 48) == 1);	     /* 2 MiB read: one unit, rounded up */
	CHECK(le64_at(x.buf, 64) == 1);	     /* 3 MiB written */
	CHECK(le64_at(x.buf, 80) == 1);	     /* media units written */
	CHECK(le64_at(x.buf, 96) == le64_at(smart, 64) && le64_at(x.buf, 96) == 16);
	CHECK(le64_at(x.buf, 112) == le64_at(smart, 80) && le64_at(x.buf, 112) == 24);
	CHECK(le64_at(x.buf, 128) == le64_at(smart, 160)); /* media errors */
	CHECK(le64_at(x.buf, 144) == le64_at(smart, 176)); /* error log entries */
	CHECK(le64_at(x.buf, 160) == EG_NS_BYTES);	   /* TEGCAP */
	CHECK(le64_at(x.buf, 176) == 0);		   /* UEGCAP: all allocated */
	CHECK(x.buf[192] == 0 && x.buf[511] == 0);	   /* the rest reads zero */
	/* Dword offset into the log. */
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 160, false) == 0);
	CHECK(le64_at(x.buf, 0) == EG_NS_BYTES);
	/* Hostile: a group that is not there, an offset past the log. */
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP, 0, 0, false)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP, 2, 0, false)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP, 0xffff, 0, false)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP, 1, 516, false)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP, 1, ~0ull & ~3ull, false)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 12, false)) == NVME_SC_INVALID_FIELD);
	/* The daemon serves on: the data written reads back. */
	memset(data, 0, 4096);
	CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_READ, 1, 2048, 8, data_iova, 4096) == 0);
	CHECK(((uint8_t *)data)[4095] == 0x5a);
	eg_down(&x);
}

/* With a namespace pool: the group's capacity is Identify Controller's TNVMCAP/UNVMCAP. */
static void test_pool(const char *build)
{
	const char *args[] = { "--ns-pool", "ram:64M", "--serial", EG_SERIAL, NULL };
	uint64_t tnvmcap, unvmcap;
	struct eg x;

	if (!eg_up(&x, build, args))
		return;
	CHECK(identify(&x, NVME_CNS_CTRL, 0, 0) == 0);
	tnvmcap = le64_at(x.buf, 280);
	unvmcap = le64_at(x.buf, 296);
	CHECK(tnvmcap > 0 && unvmcap > 0 && unvmcap <= tnvmcap);
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 0, false) == 0);
	CHECK(le64_at(x.buf, 160) == tnvmcap);
	CHECK(le64_at(x.buf, 176) == unvmcap);
	CHECK(le64_at(x.buf, 32) ==
	      (tnvmcap + 999999999ull) / 1000000000ull * 3000);
	eg_down(&x);
}

static void test_events(const char *build)
{
	const char *args[] = { "--malloc", "16M", "--serial", EG_SERIAL, NULL };
	struct nvme_cqe cqe;
	struct eg x;
	uint32_t dw0 = 0;
	int cid;

	if (!eg_up(&x, build, args))
		return;
	/* Feature 18h: supported, changeable; group 1 only; spare, reliability, read only. */
	CHECK(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 3, 1, &dw0) == 0);
	CHECK(dw0 == NVME_FEAT_CAP_CHANGE);
	CHECK(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 1, &dw0) == 0);
	CHECK(dw0 == 1);
	CHECK(sc(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 0, NULL)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 2, NULL)) == NVME_SC_INVALID_FIELD);
	CHECK(sc(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 2 | 1u << 16, NULL)) ==
	      NVME_SC_INVALID_FIELD);
	CHECK(sc(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 0xffff | 1u << 16, NULL)) ==
	      NVME_SC_INVALID_FIELD);
	CHECK(sc(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 1 | 0x02u << 16, NULL)) ==
	      NVME_SC_INVALID_FIELD); /* bit 1 is reserved */
	CHECK(sc(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 1 | 0xf0u << 16, NULL)) ==
	      NVME_SC_INVALID_FIELD);
	CHECK(sc(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 1 | 1u << 24, NULL)) ==
	      NVME_SC_INVALID_FIELD);
	CHECK(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 1, &dw0) == 0 && dw0 == 1);
	/* Only the reliability warning enabled: a spare warning makes no entry. */
	CHECK(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 1 | NVME_EGCW_RELIABILITY << 16, NULL) == 0);
	CHECK(set_spare(&x, build, "5") == 0);
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 0, false) == 0);
	CHECK(x.buf[0] == NVME_EGCW_SPARE && x.buf[3] == 5);
	CHECK(smart_ns1(&x) == 0);
	CHECK(x.buf[4096 + 6] == NVME_EGCW_SPARE); /* SMART's summary of the groups */
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, true) == 0);
	CHECK(le64_at(x.buf, 0) == 0);
	CHECK(set_spare(&x, build, "100") == 0);
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 0, false) == 0);
	CHECK(x.buf[0] == 0 && x.buf[3] == 100);
	/* Spare enabled, notices enabled, an AER outstanding: the warning appears. */
	CHECK(feat(&x, true, NVME_FEAT_ENDGRP_EVENT, 0, 1 | NVME_EGCW_SPARE << 16, NULL) == 0);
	CHECK(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 1, &dw0) == 0);
	CHECK(dw0 == (1 | NVME_EGCW_SPARE << 16));
	CHECK(feat(&x, true, NVME_FEAT_ASYNC_EVENT, 0, NVME_AEC_ENDGRP_EVENTS, NULL) == 0);
	cid = aer_submit(&x);
	CHECK(cid >= 0);
	CHECK(set_spare(&x, build, "5") == 0);
	memset(&cqe, 0, sizeof(cqe));
	CHECK(aer_wait(&x, &cqe));
	CHECK(cqe.cid == cid);
	CHECK(cqe.dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ENDGRP_EVENTS,
				      NVME_LOG_ENDGRP_EVENTS));
	/* The aggregate log: one entry, group 1; kept with RAE, gone once read without. */
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, true) == 0);
	CHECK(le64_at(x.buf, 0) == 1 && le16_at(x.buf, 8) == 1 && le16_at(x.buf, 10) == 0);
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, false) == 0);
	CHECK(le64_at(x.buf, 0) == 1 && le16_at(x.buf, 8) == 1);
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, false) == 0);
	CHECK(le64_at(x.buf, 0) == 0 && le16_at(x.buf, 8) == 0);
	/* The warning still stands: no new entry; it goes and comes back: a new event. */
	CHECK(get_log(&x, NVME_LOG_ENDGRP, 1, 0, false) == 0);
	CHECK(x.buf[0] == NVME_EGCW_SPARE);
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, true) == 0);
	CHECK(le64_at(x.buf, 0) == 0);
	cid = aer_submit(&x);
	CHECK(set_spare(&x, build, "100") == 0);
	CHECK(set_spare(&x, build, "5") == 0);
	CHECK(aer_wait(&x, &cqe) && cqe.cid == cid);
	CHECK(cqe.dw0 == NVME_AER_DW0(NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ENDGRP_EVENTS,
				      NVME_LOG_ENDGRP_EVENTS));
	CHECK(get_log(&x, NVME_LOG_ENDGRP_EVENTS, 0, 0, false) == 0);
	CHECK(le64_at(x.buf, 0) == 1);
	/* A controller reset: Feature 18h back to its default. */
	CHECK(nvme_host_disable(&x.t.h) == 0);
	CHECK(nvme_host_enable(&x.t.h, 32) == 0);
	CHECK(feat(&x, false, NVME_FEAT_ENDGRP_EVENT, 0, 1, &dw0) == 0 && dw0 == 1);
	CHECK(set_spare(&x, build, "100") == 0);
	eg_down(&x);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("info", test_info, build);
	itest_run("pool", test_pool, build);
	itest_run("events", test_events, build);
	return itest_summary();
}
