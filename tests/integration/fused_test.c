/* tests/integration/fused_test.c - fused Compare and Write (NVMe Base 2.0 section 3.4.2) through
 * the real vfio-user socket: the test host puts both halves (FUSE 01b then 10b) in adjacent SQ
 * slots and rings the doorbell once, as a driver does, on an NVM namespace and on a zoned one:
 * a match writes, a mismatch fails the compare and aborts the write, a write to the range
 * submitted right behind the pair is ordered after it, and lone or broken halves get the
 * statuses the spec names. On the zoned namespace the write half follows the write pointer and
 * a failed compare leaves the zone as it was. Every case runs for each doorbell mode. */
#include "tests/integration/nvme_itest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define NLB 8u
#define LEN (NLB * 512u)
#define NS_NVM 1u
#define NS_ZNS 2u

static const char *const fz_args[] = { "--malloc", "16M", "--malloc", "16M", "--zoned", "2048",
				       "--serial", "ITEST-FUSED", NULL };

/* The host and its buffers: five patterns of LEN bytes in guest memory. */
struct fz {
	struct nvme_itest t;
	uint8_t *buf[5];
	uint64_t iova[5];
	uint8_t *rd;
	uint64_t rd_iova;
	uint16_t cid;
};
enum { PAT_A, PAT_B, PAT_C, PAT_D, PAT_ZERO };

static bool fz_setup(struct fz *f, const char *build)
{
	memset(f, 0, sizeof(*f));
	if (!CHECK(nvme_itest_start(&f->t, build, fz_args) == 0))
		return false;
	if (!CHECK(nvme_itest_attach(&f->t, 2) == 0)) {
		nvme_itest_stop(&f->t, true);
		return false;
	}
	if (!CHECK(nvme_host_enable(&f->t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&f->t.h, 1, 64, true, 1) == 0)) {
		nvme_itest_stop(&f->t, true);
		return false;
	}
	for (int i = 0; i < 5; i++) {
		f->iova[i] = nvme_host_alloc(&f->t.h, LEN, (void **)&f->buf[i]);
		memset(f->buf[i], 0, LEN);
		if (i != PAT_ZERO) {
			memset(f->buf[i], 0x11 * (i + 1), LEN);
			f->buf[i][LEN - 1 - i] ^= 0x80; /* not only the fill byte differs */
		}
	}
	f->rd_iova = nvme_host_alloc(&f->t.h, LEN, (void **)&f->rd);
	f->cid = 0x4000; /* far from the CIDs nvme_host_submit hands out */
	return true;
}

static void fz_teardown(struct fz *f)
{
	bool alive = nvme_itest_alive(&f->t);

	CHECK(alive);
	CHECK(nvme_itest_stop(&f->t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
}

/* A Read-family SQE of NLB blocks at slba on nsid with pattern pat (or the read buffer, pat <
 * 0) and the FUSE field; its CID is returned. */
static uint16_t fz_sqe(struct fz *f, struct nvme_sqe *sqe, uint8_t opc, uint32_t nsid,
		       uint64_t slba, int pat, uint8_t fuse)
{
	nvme_host_rw_sqe(sqe, opc, nsid, slba, NLB);
	nvme_host_build_prps(&f->t.h, sqe, pat < 0 ? f->rd_iova : f->iova[pat], LEN);
	sqe->cdw0.bits.fuse = fuse;
	sqe->cdw0.bits.cid = ++f->cid;
	return f->cid;
}

/* Puts n SQEs in adjacent slots of SQ 1 and rings its doorbell once, then waits for their n
 * completions: st[i] is the status (SCT/SC) of sqes[i]. false if one did not come. */
static bool fz_run(struct fz *f, const struct nvme_sqe *sqes, int n, uint16_t *st)
{
	int got = 0;

	for (int i = 0; i < n; i++)
		if (!CHECK(nvme_host_sq_put(&f->t.h, 1, &sqes[i]) == 0))
			return false;
	if (!CHECK(nvme_host_sq_ring(&f->t.h, 1) == 0))
		return false;
	for (int ms = 0; got < n && ms < ITEST_TIMEOUT_MS;) {
		struct nvme_cqe cqe;
		int rc = nvme_host_reap(&f->t.h, 1, &cqe);

		if (rc < 0)
			break;
		if (rc == 0) {
			usleep(1000);
			ms++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (sqes[i].cdw0.bits.cid == cqe.cid) {
				st[i] = (cqe.status >> 1) & ST_MASK;
				got++;
			}
		}
	}
	return CHECK(got == n);
}

/* One plain command of NLB blocks, waited for: its status. */
static uint16_t fz_one(struct fz *f, uint8_t opc, uint32_t nsid, uint64_t slba, int pat)
{
	struct nvme_sqe sqe;
	uint16_t st = 0xffff;

	fz_sqe(f, &sqe, opc, nsid, slba, pat, NVME_FUSE_NONE);
	fz_run(f, &sqe, 1, &st);
	return st;
}

/* The NLB blocks at slba hold pattern pat. */
static bool fz_holds(struct fz *f, uint32_t nsid, uint64_t slba, int pat)
{
	memset(f->rd, 0xee, LEN);
	return fz_one(f, NVME_CMD_READ, nsid, slba, -1) == 0 &&
	       memcmp(f->rd, f->buf[pat], LEN) == 0;
}

/* A Compare (pattern cmp) and Write (pattern wr) pair at slba, then `extra` commands, one
 * doorbell. */
static bool fz_pair(struct fz *f, uint32_t nsid, uint64_t slba, int cmp, int wr,
		    const struct nvme_sqe *extra, int n_extra, uint16_t *st)
{
	struct nvme_sqe sqes[4];

	fz_sqe(f, &sqes[0], NVME_CMD_COMPARE, nsid, slba, cmp, NVME_FUSE_FIRST);
	fz_sqe(f, &sqes[1], NVME_CMD_WRITE, nsid, slba, wr, NVME_FUSE_SECOND);
	for (int i = 0; i < n_extra && i < 2; i++)
		sqes[2 + i] = extra[i];
	return fz_run(f, sqes, 2 + n_extra, st);
}

/* ---- cases ---- */

/* Identify says FUSES bit 0; match writes; mismatch fails and aborts; a write queued behind the
 * pair lands after it. */
static void test_fused_nvm(const char *build)
{
	struct fz f;
	struct nvme_sqe w;
	uint16_t st[4];
	uint8_t id[4096];

	if (!fz_setup(&f, build))
		return;
	CHECK(nvme_host_identify(&f.t.h, NVME_CNS_CTRL, 0, id) == 0);
	CHECK((id[522] & 1) == 1); /* FUSES: Compare and Write */
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_NVM, 64, PAT_A) == 0);
	/* Match: the write is done. */
	if (fz_pair(&f, NS_NVM, 64, PAT_A, PAT_B, NULL, 0, st)) {
		CHECK(st[0] == 0);
		CHECK(st[1] == 0);
	}
	CHECK(fz_holds(&f, NS_NVM, 64, PAT_B));
	/* Mismatch: Compare Failure, the write aborted (Failed Fused Command), data kept. */
	if (fz_pair(&f, NS_NVM, 64, PAT_A, PAT_C, NULL, 0, st)) {
		CHECK(st[0] == NVME_SC_COMPARE_FAILED);
		CHECK(st[1] == NVME_SC_FUSED_FAIL);
	}
	CHECK(fz_holds(&f, NS_NVM, 64, PAT_B));
	/* A write of the range right behind the pair in the same doorbell is ordered after it:
	 * the compare still sees B (it matches), the pair writes C, then D lands. */
	fz_sqe(&f, &w, NVME_CMD_WRITE, NS_NVM, 64, PAT_D, NVME_FUSE_NONE);
	if (fz_pair(&f, NS_NVM, 64, PAT_B, PAT_C, &w, 1, st)) {
		CHECK(st[0] == 0);
		CHECK(st[1] == 0);
		CHECK(st[2] == 0);
	}
	CHECK(fz_holds(&f, NS_NVM, 64, PAT_D));
	/* The same with the racing write overlapping only the pair's last block. */
	fz_sqe(&f, &w, NVME_CMD_WRITE, NS_NVM, 64 + NLB - 1, PAT_A, NVME_FUSE_NONE);
	if (fz_pair(&f, NS_NVM, 64, PAT_D, PAT_B, &w, 1, st))
		CHECK(st[0] == 0 && st[1] == 0 && st[2] == 0);
	memset(f.rd, 0, LEN);
	CHECK(fz_one(&f, NVME_CMD_READ, NS_NVM, 64, -1) == 0);
	CHECK(memcmp(f.rd, f.buf[PAT_B], LEN - 512) == 0);
	CHECK(fz_holds(&f, NS_NVM, 64 + NLB - 1, PAT_A));
	fz_teardown(&f);
}

/* Halves that do not make a pair. */
static void test_fused_broken(const char *build)
{
	struct fz f;
	struct nvme_sqe s[2];
	uint16_t st[2];

	if (!fz_setup(&f, build))
		return;
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_NVM, 128, PAT_A) == 0);
	/* A second half alone: Command Aborted due to Missing Fused Command; nothing written. */
	fz_sqe(&f, &s[0], NVME_CMD_WRITE, NS_NVM, 128, PAT_B, NVME_FUSE_SECOND);
	if (fz_run(&f, s, 1, st))
		CHECK(st[0] == NVME_SC_FUSED_MISSING);
	CHECK(fz_holds(&f, NS_NVM, 128, PAT_A));
	/* A first half followed by an ordinary command: the first is missing its second; the
	 * other command runs as usual. */
	fz_sqe(&f, &s[0], NVME_CMD_COMPARE, NS_NVM, 128, PAT_A, NVME_FUSE_FIRST);
	fz_sqe(&f, &s[1], NVME_CMD_READ, NS_NVM, 128, -1, NVME_FUSE_NONE);
	if (fz_run(&f, s, 2, st)) {
		CHECK(st[0] == NVME_SC_FUSED_MISSING);
		CHECK(st[1] == 0);
	}
	/* The halves in two doorbells: the first is alone when fetched, so is the second. */
	fz_sqe(&f, &s[0], NVME_CMD_COMPARE, NS_NVM, 128, PAT_A, NVME_FUSE_FIRST);
	if (fz_run(&f, s, 1, st))
		CHECK(st[0] == NVME_SC_FUSED_MISSING);
	fz_sqe(&f, &s[0], NVME_CMD_WRITE, NS_NVM, 128, PAT_B, NVME_FUSE_SECOND);
	if (fz_run(&f, s, 1, st))
		CHECK(st[0] == NVME_SC_FUSED_MISSING);
	CHECK(fz_holds(&f, NS_NVM, 128, PAT_A));
	/* Halves that disagree on the LBAs: the write is refused, the compare aborted. */
	fz_sqe(&f, &s[0], NVME_CMD_COMPARE, NS_NVM, 128, PAT_A, NVME_FUSE_FIRST);
	fz_sqe(&f, &s[1], NVME_CMD_WRITE, NS_NVM, 136, PAT_B, NVME_FUSE_SECOND);
	if (fz_run(&f, s, 2, st)) {
		CHECK(st[0] == NVME_SC_FUSED_FAIL);
		CHECK(st[1] == NVME_SC_INVALID_FIELD);
	}
	/* Compare and Write is the only fused operation: a Read as the first half is refused and
	 * its write aborted. */
	fz_sqe(&f, &s[0], NVME_CMD_READ, NS_NVM, 128, -1, NVME_FUSE_FIRST);
	fz_sqe(&f, &s[1], NVME_CMD_WRITE, NS_NVM, 128, PAT_B, NVME_FUSE_SECOND);
	if (fz_run(&f, s, 2, st)) {
		CHECK(st[0] == NVME_SC_INVALID_FIELD);
		CHECK(st[1] == NVME_SC_FUSED_FAIL);
	}
	CHECK(fz_holds(&f, NS_NVM, 128, PAT_A));
	/* The queue still works for a good pair afterwards. */
	if (fz_pair(&f, NS_NVM, 128, PAT_A, PAT_C, NULL, 0, st))
		CHECK(st[0] == 0 && st[1] == 0);
	CHECK(fz_holds(&f, NS_NVM, 128, PAT_C));
	fz_teardown(&f);
}

/* Zoned namespace (zones of 2048 blocks): the write half writes at the write pointer only,
 * moves it, and a failed compare or refused write leaves it where it was. */
static void test_fused_zoned(const char *build)
{
	struct fz f;
	struct nvme_sqe w;
	uint16_t st[3];

	if (!fz_setup(&f, build))
		return;
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_ZNS, 0, PAT_A) == 0); /* write pointer 8 */
	/* Blocks past the write pointer read as zeroes: compare zeroes, write B there. */
	if (fz_pair(&f, NS_ZNS, 8, PAT_ZERO, PAT_B, NULL, 0, st))
		CHECK(st[0] == 0 && st[1] == 0);
	CHECK(fz_holds(&f, NS_ZNS, 8, PAT_B));
	CHECK(fz_holds(&f, NS_ZNS, 0, PAT_A));
	/* The write pointer moved to 16. */
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_ZNS, 8, PAT_C) == NVME_SC_ZONE_INVALID_WRITE);
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_ZNS, 16, PAT_C) == 0); /* write pointer 24 */
	/* Mismatch: the write is aborted and does not take the write pointer. */
	if (fz_pair(&f, NS_ZNS, 24, PAT_A, PAT_B, NULL, 0, st)) {
		CHECK(st[0] == NVME_SC_COMPARE_FAILED);
		CHECK(st[1] == NVME_SC_FUSED_FAIL);
	}
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_ZNS, 24, PAT_D) == 0); /* write pointer 32 */
	/* A pair not at the write pointer: the compare matches (zeroes), the write is refused
	 * with Zone Invalid Write, and the zone is unchanged. */
	if (fz_pair(&f, NS_ZNS, 100, PAT_ZERO, PAT_B, NULL, 0, st)) {
		CHECK(st[0] == 0);
		CHECK(st[1] == NVME_SC_ZONE_INVALID_WRITE);
	}
	CHECK(fz_holds(&f, NS_ZNS, 100, PAT_ZERO));
	CHECK(fz_one(&f, NVME_CMD_WRITE, NS_ZNS, 32, PAT_A) == 0); /* write pointer 40 */
	/* A pair across a zone boundary: the compare fails with Zone Boundary Error. */
	if (fz_pair(&f, NS_ZNS, 2048 - 4, PAT_ZERO, PAT_B, NULL, 0, st)) {
		CHECK(st[0] == NVME_SC_ZONE_BOUNDARY_ERROR);
		CHECK(st[1] == NVME_SC_FUSED_FAIL);
	}
	/* A write at the same write pointer right behind the pair runs after it: the pair's
	 * compare saw zeroes and its write took LBA 40, so the other write is no longer at the
	 * write pointer. */
	fz_sqe(&f, &w, NVME_CMD_WRITE, NS_ZNS, 40, PAT_D, NVME_FUSE_NONE);
	if (fz_pair(&f, NS_ZNS, 40, PAT_ZERO, PAT_C, &w, 1, st)) {
		CHECK(st[0] == 0);
		CHECK(st[1] == 0);
		CHECK(st[2] == NVME_SC_ZONE_INVALID_WRITE);
	}
	CHECK(fz_holds(&f, NS_ZNS, 40, PAT_C));
	fz_teardown(&f);
}

static void fz_matrix(const char *build, const char *label, const char *const *args)
{
	unsigned int i = 0;

	printf("== %s\n", label);
	for (; args[i] && i < 15; i++)
		nvme_itest_mode_args[i] = args[i];
	nvme_itest_mode_args[i] = NULL;
	itest_run("fused_nvm", test_fused_nvm, build);
	itest_run("fused_broken", test_fused_broken, build);
	itest_run("fused_zoned", test_fused_zoned, build);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	static const char *const trap[] = { "--doorbells", "trap", NULL };
	static const char *const mmap_2pg[] = { "--doorbells", "mmap", "-m", "2", NULL };

	fz_matrix(build, "trap doorbells", trap);
	fz_matrix(build, "mmap doorbells, 2 poll groups", mmap_2pg);
	return itest_summary();
}
