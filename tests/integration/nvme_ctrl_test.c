/* tests/integration/nvme_ctrl_test.c - the nvme-emu daemon over a real
 * vfio-user socket, driven by the test client playing the host driver:
 * init, identify, queues, read/write/compare across queues, the error paths
 * the spec names, reset, shutdown, FLR, reconnect and a hostile host. Every
 * case runs for each doorbell mode / DPA configuration of the matrix. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST(sct, sc) ((uint16_t)((sct) << 8 | (sc)))
#define ST_MASK 0x7ff /* SCT + SC, without More and DNR */
#define NS_BYTES (16u << 20)

static const char *const ns_args[] = { "--malloc", "16M", "--serial", "ITEST-SN-42",
				       "--io-queues", "8", NULL };

static bool setup(struct nvme_itest *t, const char *build, uint32_t vectors)
{
	if (!CHECK(nvme_itest_start(t, build, ns_args) == 0))
		return false;
	if (!CHECK(nvme_itest_attach(t, vectors) == 0)) {
		nvme_itest_stop(t, true);
		return false;
	}
	return true;
}

static void teardown(struct nvme_itest *t)
{
	bool alive = nvme_itest_alive(t);

	CHECK(alive);
	CHECK(nvme_itest_stop(t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
}

/* ---- cases ---- */

static void test_init_identify(const char *build)
{
	struct nvme_itest t;
	uint8_t id[4096];

	if (!setup(&t, build, 0))
		return;
	CHECK((t.h.cap & 0xffff) + 1 >= 64);          /* MQES */
	CHECK((t.h.cap >> 37 & 1) == 1);               /* CSS: NVM */
	CHECK(nvme_host_reg_read32(&t.h, 0x8) >= 0x10400); /* VS >= 1.4 */
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_identify(&t.h, 1, 0, id) == 0);
	CHECK(id[0] == 0xfe && id[1] == 0xff);         /* VID: the default, assigned to nobody */
	CHECK(memcmp(id + 4, "ITEST-SN-42", 11) == 0); /* SN */
	CHECK(id[512] == 0x66 && id[513] == 0x44);     /* SQES, CQES */
	CHECK(id[516] >= 1);                           /* NN */
	CHECK(memcmp(id + 768, "nqn.", 4) == 0);       /* SUBNQN */
	CHECK(nvme_host_identify(&t.h, 0, 1, id) == 0);
	{
		uint64_t nsze;

		memcpy(&nsze, id, 8);
		CHECK(nsze == NS_BYTES / 512);
	}
	CHECK(nvme_host_identify(&t.h, 2, 0, id) == 0); /* active ns list */
	CHECK(id[0] == 1 && id[4] == 0);
	/* An inactive NSID reads as zeroes; one beyond NN is invalid. */
	memset(id, 0xa5, sizeof(id));
	CHECK(nvme_host_identify(&t.h, 0, 7, id) == 0);
	CHECK(id[0] == 0 && id[4095] == 0);
	CHECK((nvme_host_identify(&t.h, 0, 1000, id) & ST_MASK) == ST(0, 0x0b));
	CHECK(nvme_host_shutdown(&t.h) == 0);
	teardown(&t);
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void test_rw_many_queues(const char *build)
{
	enum { NQ = 4, LEN = 64 * 1024 };
	struct nvme_itest t;
	uint8_t *wbuf, *rbuf, *expect;
	uint64_t wiova, riova;
	uint32_t dw0 = 0;

	if (!setup(&t, build, NQ + 1))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_set_num_queues(&t.h, NQ, NQ, &dw0) == 0);
	CHECK((dw0 & 0xffff) + 1 >= NQ);
	for (uint16_t q = 1; q <= NQ; q++)
		CHECK(nvme_host_create_io_queues(&t.h, q, 64, true, q) == 0);
	wiova = nvme_host_alloc(&t.h, LEN, (void **)&wbuf);
	riova = nvme_host_alloc(&t.h, LEN, (void **)&rbuf);
	expect = malloc(LEN * NQ);
	CHECK(wiova && riova && expect);
	if (!wiova || !riova || !expect)
		goto out;
	/* Write through queue q, read back through another one. */
	for (uint16_t q = 1; q <= NQ; q++) {
		fill(wbuf, LEN, q);
		memcpy(expect + (size_t)(q - 1) * LEN, wbuf, LEN);
		CHECK(nvme_host_rw(&t.h, q, NVME_CMD_WRITE, 1, (q - 1u) * (LEN / 512), LEN / 512,
				   wiova, LEN) == 0);
	}
	for (uint16_t q = 1; q <= NQ; q++) {
		uint16_t via = (uint16_t)(q % NQ + 1);

		memset(rbuf, 0, LEN);
		CHECK(nvme_host_rw(&t.h, via, NVME_CMD_READ, 1, (q - 1u) * (LEN / 512), LEN / 512,
				   riova, LEN) == 0);
		CHECK(memcmp(rbuf, expect + (size_t)(q - 1) * LEN, LEN) == 0);
		/* Compare: equal succeeds, different fails with Compare Failure. */
		CHECK(nvme_host_rw(&t.h, via, NVME_CMD_COMPARE, 1, (q - 1u) * (LEN / 512),
				   LEN / 512, riova, LEN) == 0);
		rbuf[100] ^= 0xff;
		CHECK((nvme_host_rw(&t.h, via, NVME_CMD_COMPARE, 1, (q - 1u) * (LEN / 512),
				    LEN / 512, riova, LEN) & ST_MASK) == ST(2, 0x85));
	}
	/* Interrupts arrived on every I/O queue's vector. */
	for (uint16_t q = 1; q <= NQ; q++)
		CHECK(vfu_client_irq_wait(t.c, 2, q, 0) >= 0);
	/* Flush, write zeroes, deallocate, verify. */
	{
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = NVME_CMD_FLUSH;
		sqe.nsid = 1;
		CHECK(nvme_host_cmd(&t.h, 1, &sqe, NULL) == 0);
		memset(&sqe, 0, sizeof(sqe));
		sqe.cdw0.bits.opc = NVME_CMD_WRITE_ZEROES;
		sqe.nsid = 1;
		sqe.cdw12 = 7; /* 8 blocks at LBA 0 */
		CHECK(nvme_host_cmd(&t.h, 2, &sqe, NULL) == 0);
		CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, riova, 4096) == 0);
		CHECK(rbuf[0] == 0 && rbuf[4095] == 0);
		memset(&sqe, 0, sizeof(sqe));
		sqe.cdw0.bits.opc = NVME_CMD_VERIFY;
		sqe.nsid = 1;
		sqe.cdw12 = 127;
		CHECK(nvme_host_cmd(&t.h, 3, &sqe, NULL) == 0);
	}
	for (uint16_t q = 1; q <= NQ; q++)
		CHECK(nvme_host_delete_io_queues(&t.h, q) == 0);
out:
	free(expect);
	teardown(&t);
}

static int admin_raw(struct nvme_itest *t, uint8_t opc, uint32_t cdw10, uint32_t cdw11,
		     uint64_t prp1)
{
	struct nvme_sqe sqe = { 0 };

	sqe.cdw0.bits.opc = opc;
	sqe.cdw10 = cdw10;
	sqe.cdw11 = cdw11;
	sqe.dptr.prp.prp1 = prp1;
	return nvme_host_cmd(&t->h, 0, &sqe, NULL);
}

static void test_queue_errors(const char *build)
{
	struct nvme_itest t;
	void *p;
	uint64_t ring;

	if (!setup(&t, build, 4))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	ring = nvme_host_alloc(&t.h, 64 * 64, &p);
	/* qid 0 and qid above the maximum: Invalid Queue Identifier. */
	CHECK((admin_raw(&t, NVME_ADM_CREATE_CQ, 31u << 16 | 0, 1, ring) & ST_MASK) == ST(1, 1));
	CHECK((admin_raw(&t, NVME_ADM_CREATE_CQ, 31u << 16 | 100, 1, ring) & ST_MASK) ==
	      ST(1, 1));
	/* Size above MQES: Invalid Queue Size. */
	CHECK((admin_raw(&t, NVME_ADM_CREATE_CQ, 0xffffu << 16 | 1, 1, ring) & ST_MASK) ==
	      ST(1, 2));
	/* Vector beyond the function's vectors: Invalid Interrupt Vector. */
	CHECK((admin_raw(&t, NVME_ADM_CREATE_CQ, 31u << 16 | 1, 200u << 16 | 3, ring) &
	       ST_MASK) == ST(1, 8));
	/* Not physically contiguous while CAP.CQR is set. */
	CHECK((admin_raw(&t, NVME_ADM_CREATE_CQ, 31u << 16 | 1, 0, ring) & ST_MASK) != 0);
	/* SQ on a CQ that does not exist: Completion Queue Invalid. */
	CHECK((admin_raw(&t, NVME_ADM_CREATE_SQ, 31u << 16 | 1, 1u << 16 | 1, ring) & ST_MASK) ==
	      ST(1, 0));
	/* Delete a CQ that still has an SQ: Invalid Queue Deletion. */
	CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
	CHECK((admin_raw(&t, NVME_ADM_DELETE_CQ, 1, 0, 0) & ST_MASK) == ST(1, 0x0c));
	/* Unknown admin opcode: Invalid Command Opcode. */
	CHECK((admin_raw(&t, 0x7f, 0, 0, 0) & ST_MASK) == ST(0, 1));
	/* Data pointer outside guest memory: Data Transfer Error, no crash. */
	CHECK((admin_raw(&t, NVME_ADM_IDENTIFY, 1, 0, 0x7000000000ull) & ST_MASK) == ST(0, 4));
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, 0x7000000000ull, 4096) != 0);
	/* LBA out of range and invalid namespace on I/O. */
	CHECK((nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, NS_BYTES / 512, 1, NVME_ITEST_RAM_IOVA,
			    512) & ST_MASK) == ST(0, 0x80));
	CHECK((nvme_host_rw(&t.h, 1, NVME_CMD_READ, 9, 0, 1, NVME_ITEST_RAM_IOVA, 512) &
	       ST_MASK) == ST(0, 0x0b));
	/* Vendor commands: registered ones work, others are Invalid Opcode. */
	CHECK(admin_raw(&t, 0xc0, 0, 0, ring) == 0);
	CHECK((admin_raw(&t, 0xc1, 0, 0, ring) & ST_MASK) == ST(0, 1));
	teardown(&t);
}

static void test_invalid_doorbell_aer(const char *build)
{
	struct nvme_itest t;
	struct nvme_sqe aer = { 0 };
	struct nvme_cqe cqe;
	int cid, got = 0;

	if (!setup(&t, build, 2))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 16, true, 1) == 0);
	aer.cdw0.bits.opc = NVME_ADM_ASYNC_EVENT;
	cid = nvme_host_submit(&t.h, 0, &aer, false);
	CHECK(cid >= 0);
	/* Tail beyond the queue size: an invalid doorbell write value event. */
	CHECK(nvme_host_ring(&t.h, 2, 40) == 0);
	for (int i = 0; i < 2000 && !got; i++) {
		got = nvme_host_reap(&t.h, 0, &cqe);
		if (!got)
			vfu_client_serve(t.c, 1);
	}
	CHECK(got == 1);
	if (got == 1) {
		CHECK(cqe.cid == cid);
		CHECK((cqe.dw0 & 0x7) == 0);         /* error status event */
		CHECK((cqe.dw0 >> 8 & 0xff) == 0x01); /* invalid doorbell write value */
	}
	/* Reading the error log (RAE 0) unmasks error events (5.2.2). */
	{
		void *log;
		uint64_t log_iova = nvme_host_alloc(&t.h, 4096, &log);

		CHECK(admin_raw(&t, NVME_ADM_GET_LOG_PAGE, 15u << 16 | 0x01, 0, log_iova) == 0);
	}
	/* A doorbell of a queue that does not exist (SQ 5 tail, written as a
	 * trapped message): an Invalid Doorbell Register event. */
	cid = nvme_host_submit(&t.h, 0, &aer, false);
	CHECK(cid >= 0);
	{
		uint32_t v = 3;

		CHECK(vfu_client_region_write(t.c, 0, 0x1000 + 2 * 5 * 4, &v, 4, false) == 0);
	}
	got = 0;
	for (int i = 0; i < 2000 && !got; i++) {
		got = nvme_host_reap(&t.h, 0, &cqe);
		if (!got)
			vfu_client_serve(t.c, 1);
	}
	CHECK(got == 1);
	if (got == 1) {
		CHECK(cqe.cid == cid);
		CHECK((cqe.dw0 & 0x7) == 0);         /* error status event */
		CHECK((cqe.dw0 >> 8 & 0xff) == 0x00); /* invalid doorbell register */
	}
	/* The queue keeps working for a well-behaved host afterwards. */
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 1, NVME_ITEST_RAM_IOVA, 512) == 0);
	teardown(&t);
}

static void test_reset_and_flr(const char *build)
{
	struct nvme_itest t;
	uint8_t *buf;
	uint64_t iova;

	if (!setup(&t, build, 3))
		return;
	iova = nvme_host_alloc(&t.h, 8192, (void **)&buf);
	for (int round = 0; round < 3; round++) {
		CHECK(nvme_host_enable(&t.h, 32) == 0);
		CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
		CHECK(nvme_host_create_io_queues(&t.h, 2, 32, true, 2) == 0);
		fill(buf, 8192, (uint32_t)round);
		{
			int st = nvme_host_rw(&t.h, 2, NVME_CMD_WRITE, 1, 64, 16, iova, 8192);

			if (!CHECK(st == 0))
				fprintf(stderr, "  round %d: write status %d\n", round, st);
		}
		/* Leave I/O in flight, then reset in different ways. */
		for (int i = 0; i < 8; i++) {
			struct nvme_sqe sqe = { 0 };

			sqe.cdw0.bits.opc = NVME_CMD_READ;
			sqe.nsid = 1;
			sqe.cdw12 = 15;
			nvme_host_build_prps(&t.h, &sqe, iova, 8192);
			nvme_host_submit(&t.h, 1, &sqe, false);
		}
		if (round == 0) {
			CHECK(nvme_host_disable(&t.h) == 0); /* CC.EN 1 -> 0 */
		} else if (round == 1) {
			uint16_t flr = 0x8000;

			/* PCIe FLR: DEVCTL bit 15 of the Express capability. */
			uint8_t ptr = 0;

			vfu_client_region_read(t.c, 7, 0x34, &ptr, 1);
			while (ptr) {
				uint8_t id[2];

				vfu_client_region_read(t.c, 7, ptr, id, 2);
				if (id[0] == 0x10)
					break;
				ptr = id[1];
			}
			CHECK(ptr != 0);
			CHECK(vfu_client_region_write(t.c, 7, ptr + 8u, &flr, 2, false) == 0);
			/* The FLR cleared COMMAND: BAR0 is not decoded (all ones) until the
			 * driver enables memory space again, as it does with MSI-X. */
			CHECK(nvme_host_reg_read32(&t.h, 0x1c) == 0xffffffffu);
			nvme_host_init(&t.h, t.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, 3);
			CHECK(nvme_host_reg_read32(&t.h, 0x1c) == 0); /* CSTS cleared */
			iova = nvme_host_alloc(&t.h, 8192, (void **)&buf);
		} else {
			CHECK(vfu_client_reset(t.c) == 0); /* vfio-user DEVICE_RESET */
			nvme_host_init(&t.h, t.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, 3);
			iova = nvme_host_alloc(&t.h, 8192, (void **)&buf);
		}
	}
	/* Works after the last reset. */
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 64, 16, iova, 8192) == 0);
	teardown(&t);
}

static void test_reconnect(const char *build)
{
	struct nvme_itest t;

	if (!setup(&t, build, 2))
		return;
	for (int i = 0; i < 3; i++) {
		CHECK(nvme_host_enable(&t.h, 32) == 0);
		CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
		CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 0, 8, NVME_ITEST_RAM_IOVA, 4096) == 0);
		/* Go away with the queues alive: the daemon resets and waits. */
		nvme_itest_detach(&t);
		CHECK(nvme_itest_alive(&t));
		if (!CHECK(nvme_itest_attach(&t, 2) == 0))
			break;
	}
	if (t.c)
		CHECK(nvme_host_enable(&t.h, 32) == 0);
	teardown(&t);
}

static void test_hostile_host(const char *build)
{
	struct nvme_itest t;
	uint32_t seed = 0x5eed;
	uint8_t id[4096];

	if (!setup(&t, build, 3))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
	t.h.timeout_ms = 200;
	for (int i = 0; i < 400; i++) {
		struct nvme_sqe sqe;
		uint32_t *w = (uint32_t *)&sqe;
		uint16_t q = (uint16_t)(i & 1);

		for (unsigned int k = 0; k < 16; k++) {
			seed = seed * 1664525u + 1013904223u;
			w[k] = seed;
		}
		/* Keep admin queue-deleting opcodes off qid 1 so the test goes on. */
		if (q == 0 && (sqe.cdw0.bits.opc == NVME_ADM_DELETE_SQ ||
			       sqe.cdw0.bits.opc == NVME_ADM_DELETE_CQ ||
			       sqe.cdw0.bits.opc == NVME_ADM_FORMAT_NVM ||
			       sqe.cdw0.bits.opc == NVME_ADM_ASYNC_EVENT))
			sqe.cdw0.bits.opc = 0xff;
		/* Half of them with data pointers inside guest RAM. */
		if (i & 2)
			sqe.dptr.prp.prp1 = NVME_ITEST_RAM_IOVA + (seed % (NVME_ITEST_RAM_SIZE / 2));
		nvme_host_cmd(&t.h, q, &sqe, NULL);
		if (!nvme_itest_alive(&t))
			break;
	}
	/* Garbage doorbells for queues that exist and do not. */
	for (uint32_t db = 0; db < 40; db++)
		nvme_host_ring(&t.h, db, 0xffff0000u | db);
	CHECK(nvme_itest_alive(&t));
	/* The daemon still serves a well-behaved host after a reset. */
	t.h.timeout_ms = 5000;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_identify(&t.h, 1, 0, id) == 0);
	/* Delete queues with I/O in flight. */
	CHECK(nvme_host_create_io_queues(&t.h, 1, 64, true, 1) == 0);
	for (int i = 0; i < 32; i++) {
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = NVME_CMD_WRITE;
		sqe.nsid = 1;
		sqe.cdw10 = (uint32_t)i * 8;
		sqe.cdw12 = 7;
		sqe.dptr.prp.prp1 = NVME_ITEST_RAM_IOVA;
		nvme_host_submit(&t.h, 1, &sqe, false);
	}
	CHECK(admin_raw(&t, NVME_ADM_DELETE_SQ, 1, 0, 0) == 0);
	CHECK(admin_raw(&t, NVME_ADM_DELETE_CQ, 1, 0, 0) == 0);
	CHECK(nvme_host_identify(&t.h, 1, 0, id) == 0);
	teardown(&t);
}

/* A RAM and a null namespace. The null one drops writes; its reads leave the host's buffer as it
 * is, or with --read-zeroes fill it with zeroes, and only then does it offer deallocation (NSFEAT
 * thin provisioning, DLFEAT "reads zeroes"). */
static void two_namespaces(const char *build, bool read_zeroes)
{
	static const char *const args[] = {"--malloc", "16M", "--null", "8M", NULL};
	static const char *const args_rz[] = {"--malloc", "16M", "--null", "8M", "--read-zeroes",
					      NULL};
	struct nvme_itest t;
	uint8_t id[4096], *buf;
	uint64_t iova, nsze;

	if (!CHECK(nvme_itest_start(&t, build, read_zeroes ? args_rz : args) == 0))
		return;
	if (!CHECK(nvme_itest_attach(&t, 2) == 0)) {
		nvme_itest_stop(&t, true);
		return;
	}
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_identify(&t.h, 2, 0, id) == 0);
	CHECK(id[0] == 1 && id[4] == 2 && id[8] == 0);
	CHECK(nvme_host_identify(&t.h, 0, 2, id) == 0);
	memcpy(&nsze, id, 8);
	CHECK(nsze == (8u << 20) / 512);
	CHECK((id[offsetof(struct nvme_id_ns, nsfeat)] & NVME_NSFEAT_THIN) ==
	      (read_zeroes ? NVME_NSFEAT_THIN : 0));
	CHECK(id[offsetof(struct nvme_id_ns, dlfeat)] ==
	      (read_zeroes ? (NVME_DLFEAT_READ_ZEROES | NVME_DLFEAT_WZ_DEAC) : 0));
	CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
	iova = nvme_host_alloc(&t.h, 4096, (void **)&buf);
	memset(buf, 0x5a, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 8, 8, iova, 4096) == 0);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 2, 8, 8, iova, 4096) == 0);
	memset(buf, 0, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 8, 8, iova, 4096) == 0);
	CHECK(buf[0] == 0x5a && buf[4095] == 0x5a);
	memset(buf, 0xff, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 2, 8, 8, iova, 4096) == 0);
	if (read_zeroes)
		CHECK(buf[0] == 0 && buf[2048] == 0 && buf[4095] == 0);
	else
		CHECK(buf[0] == 0xff && buf[2048] == 0xff && buf[4095] == 0xff);
	teardown(&t);
}

static void test_two_namespaces(const char *build)
{
	two_namespaces(build, false);
}

static void test_two_namespaces_read_zeroes(const char *build)
{
	two_namespaces(build, true);
}

/* A client that unmaps guest RAM under in-flight I/O: the daemon must stop
 * touching it, stay up, and serve the next client. */
static void test_unmap_under_io(const char *build)
{
	struct nvme_itest t;

	if (!setup(&t, build, 2))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 64, true, 1) == 0);
	for (int i = 0; i < 48; i++) {
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = (i & 1) ? NVME_CMD_READ : NVME_CMD_WRITE;
		sqe.nsid = 1;
		sqe.cdw10 = (uint32_t)i * 64;
		sqe.cdw12 = 63; /* 32 KiB */
		nvme_host_build_prps(&t.h, &sqe, NVME_ITEST_RAM_IOVA + (uint64_t)i * 32768, 32768);
		nvme_host_submit(&t.h, 1, &sqe, false);
	}
	CHECK(vfu_client_dma_unmap(t.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, 0) == 0);
	/* Doorbells for commands whose memory is gone. */
	for (uint32_t v = 1; v < 8; v++)
		nvme_host_ring(&t.h, 2, v);
	CHECK(nvme_itest_alive(&t));
	nvme_itest_detach(&t);
	if (CHECK(nvme_itest_attach(&t, 2) == 0)) {
		CHECK(nvme_host_enable(&t.h, 32) == 0);
		CHECK(nvme_host_create_io_queues(&t.h, 1, 32, true, 1) == 0);
		CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, NVME_ITEST_RAM_IOVA, 4096) ==
		      0);
	}
	teardown(&t);
}

/* Polls qid's CQ for up to ms milliseconds. 1 with *cqe, 0 if nothing came. */
static int reap_within(struct nvme_itest *t, uint16_t qid, struct nvme_cqe *cqe, int ms)
{
	for (int i = 0; i < ms; i++) {
		int rc = nvme_host_reap(&t->h, qid, cqe);

		if (rc)
			return rc;
		usleep(1000);
	}
	return 0;
}

/* PCI COMMAND really gates the function: with Bus Master Enable clear nothing reaches guest
 * memory (no fetch, no data, no CQE, no interrupt) and everything resumes when it is set; with
 * Memory Space Enable clear BAR0 reads all ones and writes are dropped. */
static void test_command_register_gating(const char *build)
{
	enum { LEN = 4096 };
	struct nvme_itest t;
	struct nvme_cqe cqe;
	uint8_t *buf, pattern[LEN];
	uint64_t iova;
	uint16_t cmd;

	if (!setup(&t, build, 2))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 64, true, 1) == 0);
	iova = nvme_host_alloc(&t.h, LEN, (void **)&buf);
	if (!CHECK(iova != 0))
		goto out;
	fill(pattern, LEN, 77);
	memcpy(buf, pattern, LEN);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 0, LEN / 512, iova, LEN) == 0);
	(void)vfu_client_irq_wait(t.c, 2, 1, 0); /* drain the vector's eventfd */

	/* Bus master off: the config write completes once the controller is quiet. */
	cmd = 0x2; /* memory space only */
	CHECK(vfu_client_region_write(t.c, 7, 0x4, &cmd, 2, false) == 0);
	memset(buf, 0xa5, LEN);
	{
		struct nvme_sqe sqe = { 0 };

		nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, LEN / 512);
		nvme_host_build_prps(&t.h, &sqe, iova, LEN);
		CHECK(nvme_host_submit(&t.h, 1, &sqe, false) >= 0);
	}
	CHECK(reap_within(&t, 1, &cqe, 300) == 0); /* no CQE written */
	CHECK(buf[0] == 0xa5 && buf[LEN - 1] == 0xa5); /* no data written */
	CHECK(vfu_client_irq_wait(t.c, 2, 1, 0) < 1);	/* no interrupt */
	CHECK(nvme_host_reg_read32(&t.h, 0x1c) == 1);	/* still enabled, ready */

	/* Bus master on: the held read runs, completes and interrupts. */
	cmd = 0x6;
	CHECK(vfu_client_region_write(t.c, 7, 0x4, &cmd, 2, false) == 0);
	if (CHECK(reap_within(&t, 1, &cqe, 5000) == 1))
		CHECK((cqe.status >> 1) == 0);
	CHECK(memcmp(buf, pattern, LEN) == 0);
	CHECK(vfu_client_irq_wait(t.c, 2, 1, 5000) >= 1);

	/* Memory space off: registers read all ones, a CC write (disable) is dropped. */
	cmd = 0x4;
	CHECK(vfu_client_region_write(t.c, 7, 0x4, &cmd, 2, false) == 0);
	CHECK(nvme_host_reg_read32(&t.h, 0x1c) == 0xffffffffu);
	CHECK(nvme_host_reg_read32(&t.h, 0x08) == 0xffffffffu);
	CHECK(nvme_host_reg_write32(&t.h, 0x14, 0) == 0);
	cmd = 0x6;
	CHECK(vfu_client_region_write(t.c, 7, 0x4, &cmd, 2, false) == 0);
	CHECK(nvme_host_reg_read32(&t.h, 0x1c) == 1); /* CC.EN stayed 1: still ready */
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, LEN / 512, iova, LEN) == 0);

	/* Enabling the controller without bus mastering: it cannot reach its admin queue. */
	CHECK(nvme_host_disable(&t.h) == 0);
	cmd = 0x2;
	CHECK(vfu_client_region_write(t.c, 7, 0x4, &cmd, 2, false) == 0);
	CHECK(nvme_host_enable(&t.h, 32) != 0);
	CHECK((nvme_host_reg_read32(&t.h, 0x1c) & 0x2) == 0x2); /* CSTS.CFS */
out:
	teardown(&t);
}

/* A client gets the function enabled, as Linux's vfio-pci hands a device over: COMMAND has memory
 * space and bus master set at attach, so a userspace driver that never writes COMMAND (SPDK's
 * vfio-user host) reads the registers (not all ones) and its DMA works. A client that leaves
 * and comes back finds it so again (the reset at its leaving cleared COMMAND). */
static void test_enabled_at_attach(const char *build)
{
	enum { LEN = 4096 };
	struct nvme_itest t;
	uint16_t cmd = 0;
	uint8_t *buf, pattern[LEN];
	uint64_t iova;

	fill(pattern, LEN, 5);
	if (!CHECK(nvme_itest_start(&t, build, ns_args) == 0))
		return;
	for (int round = 0; round < 2; round++) {
		t.c = vfu_client_connect(t.sock, 5000);
		if (!CHECK(t.c != NULL) || !CHECK(vfu_client_negotiate(t.c) == 0))
			break;
		CHECK(vfu_client_region_read(t.c, 7, 0x4, &cmd, 2) == 0);
		CHECK((cmd & 0x6) == 0x6);
		/* nvme_host_init writes COMMAND only when a bit is missing: here it writes nothing. */
		CHECK(vfu_client_ram_create(t.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE) == 0);
		CHECK(nvme_host_init(&t.h, t.c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, 0) == 0);
		CHECK(nvme_host_reg_read32(&t.h, 0x1c) != 0xffffffffu);
		CHECK(nvme_host_enable(&t.h, 32) == 0);
		CHECK(nvme_host_create_io_queues(&t.h, 1, 64, false, 0) == 0);
		iova = nvme_host_alloc(&t.h, LEN, (void **)&buf);
		if (CHECK(iova != 0)) {
			memcpy(buf, pattern, LEN);
			CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 0, LEN / 512, iova, LEN) == 0);
			memset(buf, 0, LEN);
			CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, LEN / 512, iova, LEN) == 0);
			CHECK(memcmp(buf, pattern, LEN) == 0);
		}
		nvme_itest_detach(&t);
	}
	teardown(&t);
}

/* The health model runs on its own clock: under I/O the modelled temperature rises past a
 * threshold set just above idle and the SMART temperature event arrives with nobody reading the
 * SMART log. */
/* Keep Alive through the real socket, the daemon's own timer: with KATO 1 s, Keep Alive every
 * 100 ms for 1.5 s keeps CSTS.CFS clear (a gap would have to stretch by 900 ms to matter); then
 * silence sets it within a bound, with Keep Alive Timer Expired in the Error Information log;
 * the host's reset clears both. */
static void test_keep_alive(const char *build)
{
	struct nvme_itest t;
	struct nvme_error_log_entry *e;
	uint64_t iova;
	int cfs = 0;

	if (!setup(&t, build, 2))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	iova = nvme_host_alloc(&t.h, 4096, (void **)&e);
	CHECK(admin_raw(&t, NVME_ADM_SET_FEATURES, NVME_FEAT_KATO, 1000, 0) == 0);
	for (int i = 0; i < 15; i++) {
		usleep(100000);
		CHECK(admin_raw(&t, NVME_ADM_KEEP_ALIVE, 0, 0, 0) == 0);
		CHECK(!(nvme_host_reg_read32(&t.h, 0x1c) & 2));
	}
	/* Silence: the timer fires at the deadline (polled for up to 5 s: a loaded machine). */
	for (int i = 0; i < 500 && !cfs; i++) {
		usleep(10000);
		cfs = nvme_host_reg_read32(&t.h, 0x1c) & 2;
	}
	CHECK(cfs);
	/* Get Log Page 01h, one entry (NUMDL 15). */
	CHECK(admin_raw(&t, NVME_ADM_GET_LOG_PAGE, NVME_LOG_ERROR | 15u << 16, 0, iova) == 0);
	CHECK((e->status >> 1) == NVME_SC_KEEP_ALIVE_EXPIRED);
	CHECK(nvme_host_disable(&t.h) == 0);
	CHECK(!(nvme_host_reg_read32(&t.h, 0x1c) & 2));
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	{
		struct nvme_sqe sqe = { 0 };
		struct nvme_cqe cqe;

		sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
		sqe.cdw10 = NVME_FEAT_KATO;
		CHECK(nvme_host_cmd(&t.h, 0, &sqe, &cqe) == 0);
		CHECK(cqe.dw0 == 0);
	}
	teardown(&t);
}

static void test_health_clock(const char *build)
{
	struct nvme_itest t;
	struct nvme_sqe aer = { 0 };
	struct nvme_cqe cqe;
	uint64_t iova;
	void *buf;
	int cid, got = 0;

	if (!setup(&t, build, 2))
		return;
	CHECK(nvme_host_enable(&t.h, 32) == 0);
	CHECK(nvme_host_create_io_queues(&t.h, 1, 64, true, 1) == 0);
	iova = nvme_host_alloc(&t.h, 4096, &buf);
	/* Temperature events on (AEC bit 1); over-temperature threshold 41 C, idle is 40 C. */
	CHECK(admin_raw(&t, NVME_ADM_SET_FEATURES, NVME_FEAT_ASYNC_EVENT, 0x2, 0) == 0);
	CHECK(admin_raw(&t, NVME_ADM_SET_FEATURES, NVME_FEAT_TEMP_THRESH, 314, 0) == 0);
	aer.cdw0.bits.opc = NVME_ADM_ASYNC_EVENT;
	cid = nvme_host_submit(&t.h, 0, &aer, false);
	CHECK(cid >= 0);
	CHECK(reap_within(&t, 0, &cqe, 200) == 0); /* idle: below the threshold */
	/* Load: batches of 32 reads (tens of thousands per second natively) for up to 20 s. */
	for (time_t end = time(NULL) + 20; !got && time(NULL) < end;) {
		int inflight = 0, errors = 0;

		for (int i = 0; i < 32; i++) {
			struct nvme_sqe sqe = { 0 };

			nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, (uint64_t)i * 8, 8);
			nvme_host_build_prps(&t.h, &sqe, iova, 4096);
			if (nvme_host_submit(&t.h, 1, &sqe, i != 31) >= 0)
				inflight++;
		}
		while (inflight) {
			struct nvme_cqe io;

			if (!reap_within(&t, 1, &io, 5000))
				break;
			inflight--;
			errors += (io.status >> 1) != 0;
		}
		if (!CHECK(inflight == 0 && errors == 0))
			break;
		got = nvme_host_reap(&t.h, 0, &cqe);
	}
	if (CHECK(got == 1)) {
		CHECK(cqe.cid == cid);
		CHECK((cqe.dw0 & 0x7) == 1);	       /* SMART / health status */
		CHECK((cqe.dw0 >> 8 & 0xff) == 0x01);  /* temperature threshold */
		CHECK((cqe.dw0 >> 16 & 0xff) == 0x02); /* log page: SMART */
	}
	teardown(&t);
}

static void run_matrix(const char *build, const char *label, const char *const *args)
{
	unsigned int i = 0;

	printf("== %s\n", label);
	for (; args[i] && i < 15; i++)
		nvme_itest_mode_args[i] = args[i];
	nvme_itest_mode_args[i] = NULL;
	itest_run("init_identify", test_init_identify, build);
	itest_run("rw_many_queues", test_rw_many_queues, build);
	itest_run("queue_errors", test_queue_errors, build);
	itest_run("invalid_doorbell_aer", test_invalid_doorbell_aer, build);
	itest_run("reset_and_flr", test_reset_and_flr, build);
	itest_run("reconnect", test_reconnect, build);
	itest_run("hostile_host", test_hostile_host, build);
	itest_run("two_namespaces", test_two_namespaces, build);
	itest_run("two_namespaces_read_zeroes", test_two_namespaces_read_zeroes, build);
	itest_run("unmap_under_io", test_unmap_under_io, build);
	itest_run("command_register_gating", test_command_register_gating, build);
	itest_run("enabled_at_attach", test_enabled_at_attach, build);
	itest_run("health_clock", test_health_clock, build);
	itest_run("keep_alive", test_keep_alive, build);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	static const char *const trap[] = { "--doorbells", "trap", "--dpa-harts", "1", NULL };
	static const char *const mmap_fused[] = { "--doorbells", "mmap", "--dpa-harts", "0",
						  NULL };
	static const char *const trap_2pg[] = { "--doorbells", "trap", "-m", "2",
						"--dpa-harts", "2", "--profile", "bf3", NULL };

	run_matrix(build, "trap doorbells, 1 DPA hart", trap);
	run_matrix(build, "mmap doorbells, fused DPA", mmap_fused);
	run_matrix(build, "trap doorbells, 2 poll groups, 2 harts, bf3 profile", trap_2pg);
	return itest_summary();
}
