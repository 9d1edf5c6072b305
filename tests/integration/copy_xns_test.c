/* tests/integration/copy_xns_test.c - cross-namespace Copy (descriptor formats 2h/3h) through the
 * real vfio-user socket, with the test client's NVMe host driver: OCFS, the Host Behavior Support
 * feature enabling the formats (refused before, cleared by a controller reset), a copy of ranges
 * from namespace 2 and from namespace 1 itself into namespace 1 read back, an SNSID naming no
 * namespace, and a source whose format differs. The daemon runs with trap doorbells and with mmap
 * doorbells and two poll groups (the I/O SQ's owner thread reads the source namespace's bdev
 * through its own channel). A Linux guest cannot run this: its kernel refuses userspace Set
 * Features of Host Behavior Support (EACCES, 6.12.117), so tests/guest only checks the refusal
 * before enabling. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define NLB 8u
#define LEN (NLB * 512u)

static const char *const cx_args[] = { "--malloc", "16M", "--malloc", "16M", "--malloc", "8M",
				       "--serial", "ITEST-COPY-XNS", NULL };

struct cx {
	struct nvme_itest t;
	uint8_t *a, *b, *rd, *desc;
	uint64_t a_iova, b_iova, rd_iova, desc_iova;
};

static bool cx_queues(struct cx *c)
{
	return CHECK(nvme_host_enable(&c->t.h, 32) == 0) &&
	       CHECK(nvme_host_create_io_queues(&c->t.h, 1, 64, true, 1) == 0);
}

static bool cx_setup(struct cx *c, const char *build)
{
	memset(c, 0, sizeof(*c));
	if (!CHECK(nvme_itest_start(&c->t, build, cx_args) == 0))
		return false;
	if (!CHECK(nvme_itest_attach(&c->t, 2) == 0) || !cx_queues(c)) {
		nvme_itest_stop(&c->t, true);
		return false;
	}
	c->a_iova = nvme_host_alloc(&c->t.h, LEN, (void **)&c->a);
	c->b_iova = nvme_host_alloc(&c->t.h, LEN, (void **)&c->b);
	c->rd_iova = nvme_host_alloc(&c->t.h, 2 * LEN, (void **)&c->rd);
	c->desc_iova = nvme_host_alloc(&c->t.h, 4096, (void **)&c->desc);
	for (uint32_t i = 0; i < LEN; i++) {
		c->a[i] = (uint8_t)(i * 7 + 1);
		c->b[i] = (uint8_t)(i * 13 + 5);
	}
	return true;
}

static void cx_teardown(struct cx *c)
{
	bool alive = nvme_itest_alive(&c->t);

	CHECK(alive);
	CHECK(nvme_itest_stop(&c->t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
}

/* Set Features Host Behavior Support with CDFE (bytes 05:04) and LBAFEE 1, as Linux sets it. */
static int cx_set_cdfe(struct cx *c, uint16_t cdfe)
{
	struct nvme_sqe sqe = {0};

	memset(c->desc, 0, 512);
	c->desc[2] = 1;
	c->desc[4] = (uint8_t)cdfe;
	c->desc[5] = (uint8_t)(cdfe >> 8);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.dptr.prp.prp1 = c->desc_iova;
	sqe.cdw10 = 0x16;
	return nvme_host_cmd(&c->t.h, 0, &sqe, NULL);
}

/* Get Features Host Behavior Support: CDFE, or -1. */
static int cx_get_cdfe(struct cx *c)
{
	struct nvme_sqe sqe = {0};

	memset(c->desc, 0xee, 512);
	sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
	sqe.dptr.prp.prp1 = c->desc_iova;
	sqe.cdw10 = 0x16;
	if (nvme_host_cmd(&c->t.h, 0, &sqe, NULL) != 0)
		return -1;
	return c->desc[4] | c->desc[5] << 8;
}

/* Copy to sdlba of namespace 1 of n ranges (SNSID, SLBA, NLB blocks each) in descriptor format
 * 2h, laid out by byte offset (SNSID 03:00, SLBA 15:08, NLB 17:16). The status (SCT/SC). */
static int cx_copy(struct cx *c, uint64_t sdlba, const uint32_t *snsid, const uint64_t *slba,
		   uint32_t n)
{
	struct nvme_sqe sqe = {0};
	int st;

	memset(c->desc, 0, 4096);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = c->desc + 32 * i;
		uint16_t nlb = NLB - 1;

		memcpy(e, &snsid[i], 4);
		memcpy(e + 8, &slba[i], 8);
		memcpy(e + 16, &nlb, 2);
	}
	sqe.cdw0.bits.opc = NVME_CMD_COPY;
	sqe.nsid = 1;
	sqe.dptr.prp.prp1 = c->desc_iova;
	sqe.cdw10 = (uint32_t)sdlba;
	sqe.cdw12 = (n - 1) | 2u << 8;
	st = nvme_host_cmd(&c->t.h, 1, &sqe, NULL);
	return st < 0 ? st : st & ST_MASK;
}

static void test_copy_xns(const char *build)
{
	const uint32_t two[2] = {2, 1}, bad[1] = {9}, three[1] = {3};
	const uint64_t at[2] = {100, 0};
	static uint8_t id[4096];
	struct cx c;

	if (!cx_setup(&c, build))
		return;
	CHECK(nvme_host_identify(&c.t.h, NVME_CNS_CTRL, 0, id) == 0);
	CHECK(((const struct nvme_id_ctrl *)id)->ocfs == 0xf); /* formats 0h-3h */
	CHECK(nvme_host_rw(&c.t.h, 1, NVME_CMD_WRITE, 2, 100, NLB, c.a_iova, LEN) == 0);
	CHECK(nvme_host_rw(&c.t.h, 1, NVME_CMD_WRITE, 1, 0, NLB, c.b_iova, LEN) == 0);
	CHECK(nvme_host_rw(&c.t.h, 1, NVME_CMD_WRITE, 1, 100, NLB, c.b_iova, LEN) == 0);
	/* Not enabled yet: Invalid Field in Command. */
	CHECK(cx_get_cdfe(&c) == 0);
	CHECK(cx_copy(&c, 1000, two, at, 2) == NVME_SC_INVALID_FIELD);
	CHECK(cx_set_cdfe(&c, 0xc) == 0);
	CHECK(cx_get_cdfe(&c) == 0xc);
	/* ns 2's LBA 100-107 (not ns 1's, which hold pattern b), then ns 1's LBA 0-7. */
	CHECK(cx_copy(&c, 1000, two, at, 2) == 0);
	memset(c.rd, 0, 2 * LEN);
	CHECK(nvme_host_rw(&c.t.h, 1, NVME_CMD_READ, 1, 1000, 2 * NLB, c.rd_iova, 2 * LEN) == 0);
	CHECK(memcmp(c.rd, c.a, LEN) == 0);
	CHECK(memcmp(c.rd + LEN, c.b, LEN) == 0);
	/* No namespace 9: Invalid Namespace or Format. */
	CHECK(cx_copy(&c, 2000, bad, at, 1) == NVME_SC_INVALID_NS);
	/* Namespace 3 as 512+8 (FLBAS 1): Incompatible Namespace or Format. */
	{
		struct nvme_sqe sqe = {0};

		sqe.cdw0.bits.opc = NVME_ADM_FORMAT_NVM;
		sqe.nsid = 3;
		sqe.cdw10 = 1;
		CHECK((nvme_host_cmd(&c.t.h, 0, &sqe, NULL) & ST_MASK) == 0);
	}
	CHECK(cx_copy(&c, 2000, three, at, 1) == NVME_SC_INCOMPATIBLE_NS);
	/* A controller reset clears Host Behavior Support: refused again. */
	CHECK(nvme_host_disable(&c.t.h) == 0);
	if (cx_queues(&c)) {
		CHECK(cx_get_cdfe(&c) == 0);
		CHECK(cx_copy(&c, 1000, two, at, 2) == NVME_SC_INVALID_FIELD);
	}
	cx_teardown(&c);
}

static void cx_tests(const char *build)
{
	itest_run("copy_xns", test_copy_xns, build);
}

int main(int argc, char **argv)
{
	nvme_itest_each_mode(argc > 1 ? argv[1] : "build", cx_tests);
	return itest_summary();
}
