/* tests/integration/pel_test.c - the Persistent Event Log (log page 0Dh) kept in a state file
 * across a restart of the real daemon: the first daemon (--event-log FILE) records a Set Feature
 * event, is stopped (SIGTERM); the second, started on the same file, reports the old events
 * through Get Log Page (establish context) with the power cycle count moved on and an Unsafe
 * Shutdown (the first was stopped without a shutdown notification), and records its own. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define PEL_LEN 16384u

struct pel_view {
	uint32_t set_features, power_ons, last_pc, unsafe_shutdowns;
	uint32_t arb_value; /* CDW11 of the last Set Feature event of Arbitration */
	uint64_t pcc;
};

/* Get Log Page 0Dh, establishing a context, into buf; parses what the tests look at. */
static int pel_read(struct nvme_itest *t, uint8_t *buf, uint64_t iova, struct pel_view *v)
{
	struct nvme_sqe sqe = { 0 };
	const struct nvme_pel_hdr *h = (const struct nvme_pel_hdr *)buf;
	size_t off = sizeof(*h);
	int st;

	memset(v, 0, sizeof(*v));
	memset(buf, 0, PEL_LEN);
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.cdw10 = NVME_LOG_PERSISTENT_EVENT | NVME_PEL_ESTABLISH << 8 | (PEL_LEN / 4 - 1) << 16;
	if (nvme_host_build_prps(&t->h, &sqe, iova, PEL_LEN))
		return -1;
	st = nvme_host_cmd(&t->h, 0, &sqe, NULL);
	if (st)
		return st;
	v->pcc = h->pcc;
	for (uint32_t i = 0; i < h->tnev && off + sizeof(struct nvme_pel_event) <= PEL_LEN; i++) {
		struct nvme_pel_event e;
		const uint8_t *d;
		uint32_t dw;

		memcpy(&e, buf + off, sizeof(e));
		d = buf + off + sizeof(e);
		if (off + sizeof(e) + e.el > PEL_LEN)
			break;
		if (e.etype == NVME_PEL_SET_FEATURE && e.el >= 12) {
			v->set_features++;
			memcpy(&dw, d + 4, 4);
			if ((dw & 0xff) == NVME_FEAT_ARBITRATION)
				memcpy(&v->arb_value, d + 8, 4);
		} else if (e.etype == NVME_PEL_HW_ERROR && e.el >= 4) {
			uint16_t code;

			memcpy(&code, d, 2);
			v->unsafe_shutdowns += code == NVME_PEL_HWE_UNSAFE_SHUTDOWN;
		} else if (e.etype == NVME_PEL_POWER_ON_RESET && e.el >= 28) {
			v->power_ons++;
			memcpy(&v->last_pc, d + 24, 4);
		}
		off += sizeof(e) + e.el;
	}
	return 0;
}

static bool pel_daemon(struct nvme_itest *t, const char *build, const char *file)
{
	const char *args[] = { "--malloc", "1M", "--serial", "PEL-1", "--event-log", file, NULL };

	return CHECK(nvme_itest_up(t, build, args, 2, 32) == 0);
}

static void test_pel_restart(const char *build)
{
	char dir[] = "/tmp/nvme-pel-XXXXXX", file[64];
	struct nvme_itest t;
	struct pel_view v1, v2;
	struct nvme_sqe sqe = { 0 };
	uint8_t *buf;
	uint64_t iova;

	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(file, sizeof(file), "%s/pel.bin", dir);
	/* First life: a Set Features of Arbitration is recorded. */
	if (!pel_daemon(&t, build, file))
		goto out;
	iova = nvme_host_alloc(&t.h, PEL_LEN, (void **)&buf);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_ARBITRATION;
	sqe.cdw11 = 0x5;
	CHECK(nvme_host_cmd(&t.h, 0, &sqe, NULL) == 0);
	CHECK(pel_read(&t, buf, iova, &v1) == 0);
	CHECK(v1.arb_value == 0x5);
	CHECK(v1.pcc == 1 && v1.last_pc == 1);
	CHECK(nvme_itest_stop(&t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
	/* Second life on the same file: the old events are there, the cycle count moved on. */
	if (!pel_daemon(&t, build, file))
		goto out;
	iova = nvme_host_alloc(&t.h, PEL_LEN, (void **)&buf);
	CHECK(pel_read(&t, buf, iova, &v2) == 0);
	CHECK(v2.arb_value == 0x5);
	CHECK(v2.set_features >= v1.set_features);
	CHECK(v2.power_ons > v1.power_ons);
	CHECK(v2.pcc == 2 && v2.last_pc == 2);
	/* The first daemon was stopped with the controller enabled (no CC.SHN): Unsafe Shutdown. */
	CHECK(v1.unsafe_shutdowns == 0 && v2.unsafe_shutdowns == 1);
	CHECK(nvme_itest_alive(&t));
	CHECK(nvme_itest_stop(&t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
out:
	unlink(file);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("pel_restart", test_pel_restart, build);
	return itest_summary();
}
