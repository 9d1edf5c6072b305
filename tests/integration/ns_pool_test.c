/* tests/integration/ns_pool_test.c - capacity of a namespace pool through the real vfio-user
 * socket, as a host computes it: the daemon starts with an empty pool (--ns-pool ram:64M, then a
 * file pool), and in every LBA format Identify NSID FFFFFFFFh offers, NSZE = UNVMCAP / (data +
 * metadata size) is created (one block more is Namespace Insufficient Capacity), its last block
 * is written and read back, and deleting it gives the capacity back. Then in 512 + 8 with
 * extended LBAs two I/O queues (two poll groups with mmap doorbells) write every other block of
 * a run, 64 of whose blocks share each 512-byte block of the pool: every write must land. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define RUN 256u /* blocks written by the two queues */

struct np {
	struct nvme_itest t;
	uint8_t *buf, *big;
	uint64_t buf_iova, big_iova;
};

static char np_file_arg[160];

static int np_admin(struct np *p, struct nvme_sqe *sqe, uint32_t *cdw0)
{
	struct nvme_cqe cqe;
	int st = nvme_host_cmd(&p->t.h, 0, sqe, &cqe);

	if (cdw0)
		*cdw0 = cqe.dw0;
	return st < 0 ? st : st & ST_MASK;
}

static uint64_t np_le64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, 8);
	return v;
}

/* UNVMCAP (and TNVMCAP) from Identify Controller. */
static uint64_t np_unvmcap(struct np *p, uint64_t *tnvmcap)
{
	const struct nvme_id_ctrl *id = (const struct nvme_id_ctrl *)p->buf;

	if (!CHECK(nvme_host_identify(&p->t.h, NVME_CNS_CTRL, 0, p->buf) == 0))
		return 0;
	if (tnvmcap)
		*tnvmcap = np_le64(id->tnvmcap);
	return np_le64(id->unvmcap);
}

static int np_create(struct np *p, uint64_t nsze, uint8_t flbas, uint32_t *nsid)
{
	struct nvme_id_ns *id = (struct nvme_id_ns *)p->buf;
	struct nvme_sqe sqe = {0};

	memset(id, 0, 4096);
	id->nsze = id->ncap = nsze;
	id->flbas = flbas;
	sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
	sqe.cdw10 = NVME_NS_MGMT_SEL_CREATE;
	sqe.dptr.prp.prp1 = p->buf_iova;
	return np_admin(p, &sqe, nsid);
}

static int np_delete(struct np *p, uint32_t nsid)
{
	struct nvme_sqe sqe = {0};

	sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
	sqe.nsid = nsid;
	sqe.cdw10 = NVME_NS_MGMT_SEL_DELETE;
	return np_admin(p, &sqe, NULL);
}

static int np_attach(struct np *p, uint32_t nsid, bool attach)
{
	uint16_t *list = (uint16_t *)p->buf;
	struct nvme_sqe sqe = {0};

	memset(p->buf, 0, 4096);
	list[0] = 1;
	list[1] = 1; /* the controller's CNTLID */
	sqe.cdw0.bits.opc = NVME_ADM_NS_ATTACH;
	sqe.nsid = nsid;
	sqe.cdw10 = attach ? NVME_NS_ATTACH_SEL_ATTACH : NVME_NS_ATTACH_SEL_DETACH;
	sqe.dptr.prp.prp1 = p->buf_iova;
	return np_admin(p, &sqe, NULL);
}

static void np_pattern(uint8_t *b, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Every format: the most a host computes from UNVMCAP, its last block, and back. */
static void np_every_format(struct np *p)
{
	const struct nvme_id_ns *idns = (const struct nvme_id_ns *)p->buf;
	uint64_t tnvm, unvm = np_unvmcap(p, &tnvm);
	uint8_t want[8192];
	int nlbaf;

	CHECK(unvm == 63ull << 20 && tnvm == unvm);
	if (!CHECK(nvme_host_identify(&p->t.h, NVME_CNS_NS, NVME_NSID_ALL, p->buf) == 0))
		return;
	nlbaf = idns->nlbaf + 1;
	CHECK(nlbaf == 16);
	for (int f = 0; f < nlbaf; f++) {
		uint32_t ds, ms, nsid = 0;
		uint64_t nsze, nvmcap;
		uint8_t flbas;

		nvme_host_identify(&p->t.h, NVME_CNS_NS, NVME_NSID_ALL, p->buf);
		ds = 1u << idns->lbaf[f].lbads;
		ms = idns->lbaf[f].ms;
		nsze = unvm / (ds + ms);
		flbas = (uint8_t)(f | (ms ? NVME_FLBAS_EXTENDED : 0));
		CHECK(np_create(p, nsze + 1, flbas, &nsid) == NVME_SC_NS_INSUFFICIENT_CAP);
		if (!CHECK(np_create(p, nsze, flbas, &nsid) == 0)) {
			printf("  format %d (%u + %u): %llu blocks refused\n", f, ds, ms,
			       (unsigned long long)nsze);
			continue;
		}
		CHECK(np_unvmcap(p, NULL) == 0);
		{
			int st = np_attach(p, nsid, true);

			if (!CHECK(st == 0))
				printf("  format %d: attach of nsid %u: status %x\n", f, nsid, st);
		}
		CHECK(nvme_host_identify(&p->t.h, NVME_CNS_NS, nsid, p->buf) == 0);
		nvmcap = np_le64(idns->nvmcap);
		CHECK(idns->nsze == nsze && nvmcap == unvm);
		np_pattern(want, ds + ms, (uint32_t)f + 1);
		memcpy(p->buf, want, ds + ms);
		{
			int st = nvme_host_rw(&p->t.h, 1, NVME_CMD_WRITE, nsid, nsze - 1, 1,
					      p->buf_iova, ds + ms);

			if (!CHECK(st == 0))
				printf("  format %d: write of the last block: %d\n", f, st);
		}
		memset(p->buf, 0, ds + ms);
		CHECK(nvme_host_rw(&p->t.h, 1, NVME_CMD_READ, nsid, nsze - 1, 1, p->buf_iova,
				   ds + ms) == 0);
		CHECK(memcmp(p->buf, want, ds + ms) == 0);
		CHECK((nvme_host_rw(&p->t.h, 1, NVME_CMD_WRITE, nsid, nsze, 1, p->buf_iova, ds + ms) &
		       ST_MASK) == NVME_SC_LBA_RANGE);
		CHECK(np_attach(p, nsid, false) == 0);
		CHECK(np_delete(p, nsid) == 0);
		CHECK(np_unvmcap(p, NULL) == unvm);
	}
}

/* Waits for n completions on qid; true if all succeeded. */
static bool np_reap(struct np *p, uint16_t qid, uint32_t n)
{
	struct nvme_cqe cqe;
	bool ok = true;

	for (int tries = 0; n && tries < 100000; tries++) {
		int rc = nvme_host_reap(&p->t.h, qid, &cqe);

		if (rc < 0)
			return false;
		if (rc == 1) {
			ok &= (cqe.status >> 1 & ST_MASK) == 0;
			n--;
			continue;
		}
		p->t.h.ops->wait(&p->t.h, &p->t.h.q[qid], 5);
	}
	return ok && !n;
}

/* 512 + 8 (extended): queue 1 writes the even blocks of the run, queue 2 the odd ones, all in
 * flight at once; the run then reads back whole. */
static void np_shared_blocks(struct np *p)
{
	const uint32_t bs = 520;
	uint32_t nsid = 0;
	uint64_t nsze = 4096;

	if (!CHECK(np_create(p, nsze, 0x11, &nsid) == 0) || !CHECK(np_attach(p, nsid, true) == 0))
		return;
	np_pattern(p->big, (size_t)RUN * bs, 99);
	for (uint32_t round = 0; round < 2; round++) {
		uint32_t sent[3] = {0};

		for (uint32_t lba = 0; lba < RUN; lba++) {
			struct nvme_sqe sqe = {0};
			uint16_t qid = 1 + (lba & 1);

			sqe.cdw0.bits.opc = NVME_CMD_WRITE;
			sqe.nsid = nsid;
			sqe.cdw10 = 17 + lba; /* unaligned to the pool's blocks */
			sqe.dptr.prp.prp1 = p->big_iova + (uint64_t)lba * bs;
			/* A block crossing a page continues at the next page (contiguous). */
			sqe.dptr.prp.prp2 = (sqe.dptr.prp.prp1 & ~4095ull) + 4096;
			if (!CHECK(nvme_host_submit(&p->t.h, qid, &sqe, lba + 2 < RUN) >= 0))
				return;
			sent[qid]++;
		}
		CHECK(np_reap(p, 1, sent[1]));
		CHECK(np_reap(p, 2, sent[2]));
	}
	memset(p->buf, 0, 8192);
	for (uint32_t lba = 0; lba < RUN; lba += 8) {
		memset(p->buf, 0, 8 * bs);
		CHECK(nvme_host_rw(&p->t.h, 1, NVME_CMD_READ, nsid, 17 + lba, 8, p->buf_iova,
				   8 * bs) == 0);
		if (!CHECK(memcmp(p->buf, p->big + (size_t)lba * bs, 8 * bs) == 0)) {
			printf("  blocks %u-%u differ\n", lba, lba + 7);
			break;
		}
	}
	CHECK(np_attach(p, nsid, false) == 0);
	CHECK(np_delete(p, nsid) == 0);
}

static void test_ns_pool(const char *build, const char *pool)
{
	const char *const args[] = { "--ns-pool", pool, "--serial", "ITEST-NS-POOL", NULL };
	struct np p;

	memset(&p, 0, sizeof(p));
	if (!CHECK(nvme_itest_start(&p.t, build, args) == 0))
		return;
	if (!CHECK(nvme_itest_attach(&p.t, 3) == 0)) {
		nvme_itest_stop(&p.t, true);
		return;
	}
	/* A hang guard, not a bound: with the write cache off every write of the file pool is
	 * durable (RWF_DSYNC), seconds on a busy disk. */
	p.t.h.timeout_ms = 60000;
	if (!CHECK(nvme_host_enable(&p.t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&p.t.h, 1, 512, true, 1) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&p.t.h, 2, 512, true, 2) == 0)) {
		nvme_itest_stop(&p.t, true);
		return;
	}
	p.buf_iova = nvme_host_alloc(&p.t.h, 8192, (void **)&p.buf);
	p.big_iova = nvme_host_alloc(&p.t.h, RUN * 520 + 4096, (void **)&p.big);
	if (CHECK(p.buf_iova && p.big_iova)) {
		np_every_format(&p);
		np_shared_blocks(&p);
	}
	CHECK(nvme_itest_alive(&p.t));
	CHECK(nvme_itest_stop(&p.t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
}

static void test_ram_pool(const char *build)
{
	test_ns_pool(build, "ram:64M");
}

static void test_file_pool(const char *build)
{
	char path[] = "/var/tmp/ns_pool_itest.XXXXXX";
	int fd = mkstemp(path);

	if (!CHECK(fd >= 0))
		return;
	close(fd);
	unlink(path); /* the daemon creates it at the size given */
	snprintf(np_file_arg, sizeof(np_file_arg), "file:%s:64M", path);
	test_ns_pool(build, np_file_arg);
	unlink(path);
}

static void np_tests(const char *build)
{
	itest_run("ram_pool", test_ram_pool, build);
	itest_run("file_pool", test_file_pool, build);
}

int main(int argc, char **argv)
{
	nvme_itest_each_mode(argc > 1 ? argv[1] : "build", np_tests);
	return itest_summary();
}
