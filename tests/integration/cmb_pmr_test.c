/* tests/integration/cmb_pmr_test.c - the Controller Memory Buffer and the Persistent Memory
 * Region of the real daemon through its socket: the registers and their state machines, BAR2
 * and BAR4 mapped by the client, an SQ, a CQ, a PRP list and data living in the CMB, commands
 * moving data in and out of the PMR, the PMR's persistence (disable, PMRSTS.NRDY, the file,
 * SIGKILL and a restart on the same file), and hostile values for every new register and
 * address: each one an error for that client only, the daemon serving on. */
#include "tests/integration/nvme_itest.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define CMB_SIZE (2u << 20)
#define PMR_SIZE (1u << 20)
/* Bus addresses the host gives the CMB and PMR: outside the test's guest RAM. */
#define CMB_CBA 0x80000000ull
#define PMR_CBA 0x90000000ull
/* Generous: register handlers run on a later loop turn of a loaded machine (hang guard). */
#define REG_WAIT_MS 30000

/* A command's status without DNR (the daemon sets it on every status not worth a retry). */
static int sc(int st)
{
	return st < 0 ? st : st & 0x7ff;
}

static bool reg_wait(struct nvme_itest *t, uint32_t off, uint32_t want)
{
	return itest_wait_reg(t->c, off, want, REG_WAIT_MS);
}

static bool daemon_up(struct nvme_itest *t, const char *build, const char *const *args)
{
	return CHECK(nvme_itest_up(t, build, args, 2, 32) == 0);
}

/* The BAR's mapping as the client got it (region info with its sparse area and fd). */
static uint8_t *bar_map(struct nvme_itest *t, uint32_t bar, uint64_t size)
{
	struct vfu_client_region r;

	if (vfu_client_region_info(t->c, bar, &r) || r.size != size ||
	    !(r.flags & VFIO_REGION_INFO_FLAG_MMAP))
		return NULL;
	return vfu_client_region_ptr(t->c, bar, 0, size);
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* I/O SQ qid (its CQ created by the host driver in RAM) moved to the CMB at offset off. */
static int cmb_sq_create(struct nvme_itest *t, uint16_t qid, uint8_t *cmb, uint64_t off,
			 uint16_t depth)
{
	struct nvme_host_queue *q = &t->h.q[qid];
	struct nvme_sqe sqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_DELETE_SQ;
	sqe.cdw10 = qid;
	st = nvme_host_cmd(&t->h, 0, &sqe, NULL);
	if (st)
		return st;
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_SQ;
	sqe.dptr.prp.prp1 = CMB_CBA + off;
	sqe.cdw10 = (uint32_t)(depth - 1) << 16 | qid;
	sqe.cdw11 = (uint32_t)qid << 16 | NVME_QUEUE_PC;
	st = nvme_host_cmd(&t->h, 0, &sqe, NULL);
	if (st)
		return st;
	q->sq = (struct nvme_sqe *)(cmb + off);
	q->sq_iova = CMB_CBA + off;
	q->depth = depth;
	q->sq_tail = q->sq_head = 0;
	return 0;
}

/* Without --cmb/--pmr: CAP says none, BAR2 and BAR4 are absent, the registers read 0 whatever
 * is written to them. */
static void test_absent(const char *build)
{
	const char *args[] = { "--malloc", "1M", NULL };
	struct vfu_client_region r;
	struct nvme_itest t;
	union nvme_cap cap;

	if (!daemon_up(&t, build, args))
		return;
	cap.raw = nvme_host_reg_read64(&t.h, NVME_REG_CAP);
	CHECK(!cap.bits.cmbs && !cap.bits.pmrs);
	CHECK(vfu_client_region_info(t.c, 2, &r) == 0 && r.size == 0);
	CHECK(vfu_client_region_info(t.c, 4, &r) == 0 && r.size == 0);
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC, ~0ull) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 1) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBMSC, 0));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRCTL) == 0);
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_CMBSZ) == 0);
	CHECK(nvme_itest_alive(&t));
	CHECK(nvme_itest_stop(&t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
}

/* Queues, a PRP list and data in the CMB, and the hostile cases around it. */
static void test_cmb(const char *build)
{
	const char *args[] = { "--malloc", "4M", "--cmb", "2M", NULL };
	union nvme_cmbsz sz;
	union nvme_cmbloc loc;
	struct nvme_itest t;
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	union nvme_cap cap;
	uint8_t *cmb, *ram, *pat;
	uint64_t ram_iova, *list;

	if (!daemon_up(&t, build, args))
		return;
	cap.raw = nvme_host_reg_read64(&t.h, NVME_REG_CAP);
	CHECK(cap.bits.cmbs && !cap.bits.pmrs);
	/* CMBLOC and CMBSZ show once CMBMSC.CRE is set. */
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_CMBSZ) == 0);
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC, NVME_CMBMSC_CRE) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSZ, 0x0000221fu)); /* SZ 2, SZU 1 MiB, SQS..WDS */
	/* Read-only registers and the reserved space after ACQ are restored after a write. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_CMBSZ, ~0u) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_CMBLOC, ~0u) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_CMBSTS, ~0u) == 0);
	CHECK(nvme_host_reg_write32(&t.h, 0x80, ~0u) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSZ, 0x0000221fu));
	CHECK(reg_wait(&t, 0x80, 0));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_CMBSTS) == 0);
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_CMBLOC) == 0xe2);
	sz.raw = nvme_host_reg_read32(&t.h, NVME_REG_CMBSZ);
	loc.raw = nvme_host_reg_read32(&t.h, NVME_REG_CMBLOC);
	CHECK(sz.bits.sqs && sz.bits.cqs && sz.bits.lists && sz.bits.rds && sz.bits.wds);
	CHECK(loc.bits.bir == 2 && loc.bits.ofst == 0);
	cmb = bar_map(&t, 2, CMB_SIZE);
	if (!CHECK(cmb != NULL))
		goto out;
	/* A CBA that cannot be the BAR's (not aligned to its size): CBAI, no window. */
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC,
				    NVME_CMBMSC_CRE | NVME_CMBMSC_CMSE | (CMB_CBA + 0x1000)) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSTS, NVME_CMBSTS_CBAI));
	CHECK(nvme_host_create_io_queues(&t.h, 1, 16, false, 0) == 0);
	ram_iova = nvme_host_alloc(&t.h, 64 * 1024, (void **)&ram);
	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 8);
	sqe.dptr.prp.prp1 = CMB_CBA;
	CHECK(sc(nvme_host_cmd(&t.h, 1, &sqe, NULL)) == NVME_SC_DATA_XFER_ERROR);
	/* A CBA wrapping past 2^64. */
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC,
				    NVME_CMBMSC_CRE | NVME_CMBMSC_CMSE | 0xffffffffffe00000ull) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSTS, NVME_CMBSTS_CBAI));
	/* The BAR's own address: the window opens, CBAI clears; reserved bits read 0. */
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC,
				    NVME_CMBMSC_CRE | NVME_CMBMSC_CMSE | 0xffcu | CMB_CBA) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSTS, 0));
	CHECK(nvme_host_reg_read64(&t.h, NVME_REG_CMBMSC) ==
	      (NVME_CMBMSC_CRE | NVME_CMBMSC_CMSE | CMB_CBA));

	/* Write data from the CMB (WDS), read it back into RAM and into the CMB (RDS). */
	pat = cmb + 0x10000;
	fill(pat, 4096, 1);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 0, 8, CMB_CBA + 0x10000, 4096) == 0);
	memset(ram, 0, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, ram_iova, 4096) == 0);
	CHECK(!memcmp(ram, pat, 4096));
	memset(cmb + 0x20000, 0, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, CMB_CBA + 0x20000, 4096) == 0);
	CHECK(!memcmp(cmb + 0x20000, pat, 4096));

	/* The SQ in the CMB, a PRP list in the CMB pointing at RAM (LISTS). */
	CHECK(cmb_sq_create(&t, 1, cmb, 0, 16) == 0);
	fill(ram, 3 * 4096, 2);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 8, 24, ram_iova, 3 * 4096) == 0);
	memset(ram + 0x8000, 0, 3 * 4096);
	list = (uint64_t *)(cmb + 0x30000);
	list[0] = ram_iova + 0x9000;
	list[1] = ram_iova + 0xa000;
	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 8, 24);
	sqe.dptr.prp.prp1 = ram_iova + 0x8000;
	sqe.dptr.prp.prp2 = CMB_CBA + 0x30000;
	CHECK(nvme_host_cmd(&t.h, 1, &sqe, NULL) == 0);
	CHECK(!memcmp(ram + 0x8000, ram, 3 * 4096));
	/* A PRP list running past the CMB's end: Data Transfer Error, nothing read outside. */
	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 8, 24);
	sqe.dptr.prp.prp1 = ram_iova + 0x8000;
	sqe.dptr.prp.prp2 = CMB_CBA + CMB_SIZE - 8;
	CHECK(sc(nvme_host_cmd(&t.h, 1, &sqe, NULL)) == NVME_SC_DATA_XFER_ERROR);
	/* Data running past the CMB's end. */
	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 8);
	sqe.dptr.prp.prp1 = CMB_CBA + CMB_SIZE - 512;
	CHECK(sc(nvme_host_cmd(&t.h, 1, &sqe, NULL)) == NVME_SC_DATA_XFER_ERROR);

	/* A CQ in the CMB (CQS) with its SQ in RAM. */
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_CQ;
	sqe.dptr.prp.prp1 = CMB_CBA + 0x40000;
	sqe.cdw10 = 15u << 16 | 2;
	sqe.cdw11 = NVME_QUEUE_PC;
	CHECK(nvme_host_cmd(&t.h, 0, &sqe, NULL) == 0);
	t.h.q[2] = (struct nvme_host_queue){ .qid = 2, .depth = 16, .cq_depth = 16,
					     .cq = (struct nvme_cqe *)(cmb + 0x40000),
					     .cq_iova = CMB_CBA + 0x40000, .cq_phase = 1 };
	t.h.q[2].sq_iova = nvme_host_alloc(&t.h, 16 * 64, (void **)&t.h.q[2].sq);
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_SQ;
	sqe.dptr.prp.prp1 = t.h.q[2].sq_iova;
	sqe.cdw10 = 15u << 16 | 2;
	sqe.cdw11 = 2u << 16 | NVME_QUEUE_PC;
	CHECK(nvme_host_cmd(&t.h, 0, &sqe, NULL) == 0);
	t.h.q[2].live = true;
	memset(ram + 0x8000, 0, 4096);
	CHECK(nvme_host_rw(&t.h, 2, NVME_CMD_READ, 1, 0, 8, ram_iova + 0x8000, 4096) == 0);
	CHECK(!memcmp(ram + 0x8000, pat, 4096));
	memcpy(&cqe, cmb + 0x40000, sizeof(cqe));
	CHECK(cqe.sqid == 2 && (cqe.status & 1));

	/* An SQ whose ring would run past the CMB's end: refused. */
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_ADM_CREATE_SQ;
	sqe.dptr.prp.prp1 = CMB_CBA + CMB_SIZE - 4096;
	sqe.cdw10 = 127u << 16 | 3;
	sqe.cdw11 = 1u << 16 | NVME_QUEUE_PC;
	CHECK(sc(nvme_host_cmd(&t.h, 0, &sqe, NULL)) == NVME_SC_INVALID_FIELD);
	/* The client's own accesses past BAR2: refused, the client stays. */
	CHECK(vfu_client_region_read(t.c, 2, CMB_SIZE - 2, &cqe, 4) < 0);
	CHECK(vfu_client_region_write(t.c, 2, CMB_SIZE, &cqe, 4, false) < 0);
	/* Trapped accesses reach the same memory. */
	CHECK(vfu_client_region_write(t.c, 2, 0x50000, "cmb!", 4, false) == 0);
	CHECK(!memcmp(cmb + 0x50000, "cmb!", 4));
	/* CRE cleared: CMBLOC and CMBSZ read 0, the window closes. */
	CHECK(nvme_host_reg_write64(&t.h, NVME_REG_CMBMSC, 0) == 0);
	CHECK(reg_wait(&t, NVME_REG_CMBSZ, 0));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_CMBLOC) == 0);
	nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 0, 8);
	sqe.dptr.prp.prp1 = CMB_CBA + 0x20000;
	CHECK(sc(nvme_host_cmd(&t.h, 2, &sqe, NULL)) == NVME_SC_DATA_XFER_ERROR);
out:
	CHECK(nvme_itest_alive(&t));
	CHECK(nvme_itest_stop(&t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
}

static bool file_has(const char *path, uint64_t off, const uint8_t *want, size_t len)
{
	uint8_t *buf = malloc(len);
	int fd = open(path, O_RDONLY);
	bool ok = buf && fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len &&
		  !memcmp(buf, want, len);

	if (fd >= 0)
		close(fd);
	free(buf);
	return ok;
}

/* The PMR: registers, persistence through the disable, data moved by commands, SIGKILL and a
 * restart on the same file. */
static void test_pmr(const char *build)
{
	char dir[] = "/tmp/nvme-pmr-XXXXXX", file[64], spec[80];
	const char *args[] = { "--malloc", "4M", "--pmr", spec, NULL };
	union nvme_pmrcap cap;
	union nvme_pmrsts sts;
	uint8_t pat[8192], *pmr;
	struct nvme_itest t;
	union nvme_cap ccap;
	int status;

	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(file, sizeof(file), "%s/pmr.bin", dir);
	snprintf(spec, sizeof(spec), "%s:1M", file);
	if (!daemon_up(&t, build, args))
		goto out_dir;
	ccap.raw = nvme_host_reg_read64(&t.h, NVME_REG_CAP);
	CHECK(ccap.bits.pmrs && !ccap.bits.cmbs);
	cap.raw = nvme_host_reg_read32(&t.h, NVME_REG_PMRCAP);
	CHECK(cap.bits.bir == 4 && cap.bits.rds && cap.bits.wds && cap.bits.cmss);
	CHECK(cap.bits.pmrwbm == NVME_PMRWBM_PMRSTS_READ && cap.bits.pmrto > 0);
	sts.raw = nvme_host_reg_read32(&t.h, NVME_REG_PMRSTS);
	CHECK(sts.bits.nrdy == 1 && sts.bits.hsts == 0);
	pmr = bar_map(&t, 4, PMR_SIZE);
	if (!CHECK(pmr != NULL))
		goto out;
	/* Read-only PMR registers and the reserved space after them are restored after a write. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCAP, 0) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRSTS, 0) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMREBS, 0) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRSWTP, 0) == 0);
	CHECK(nvme_host_reg_write32(&t.h, 0xe40, ~0u) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRCAP, cap.raw));
	CHECK(reg_wait(&t, 0xe40, 0));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRSTS) == sts.raw);
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMREBS) == (2u | 1u << 8));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRSWTP) == (2u | 1024u << 8));
	/* Enabled (reserved PMRCTL bits dropped): ready. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 0xffffffffu) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 0));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRCTL) == NVME_PMRCTL_EN);
	fill(pat, sizeof(pat), 3);
	memcpy(pmr, pat, 4096);
	memcpy(pmr + PMR_SIZE - 4096, pat + 4096, 4096);
	/* A PMRSTS read is a write barrier: when it completes the file holds what came before. */
	CHECK(!file_has(file, 0, pat, 4096));
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRSTS) == 0);
	CHECK(file_has(file, 0, pat, 4096));
	CHECK(file_has(file, PMR_SIZE - 4096, pat + 4096, 4096));
	memcpy(pmr + 0x2000, pat, 4096);
	/* Disabled: NRDY once the file holds it all. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 0) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 0x100));
	CHECK(file_has(file, 0x2000, pat, 4096));

	/* PMRMSC: an invalid CBA sets CBAI; then the right one, and commands move data in and
	 * out of the PMR (RDS, WDS). */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 1) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRMSCU, 0) == 0);
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRMSCL, (uint32_t)PMR_CBA | 0x1000 | 2) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 1u << 12));
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRMSCL, (uint32_t)PMR_CBA | 2) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 0));
	CHECK(nvme_host_create_io_queues(&t.h, 1, 16, false, 0) == 0);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_WRITE, 1, 0, 8, PMR_CBA, 4096) == 0);
	memset(pmr + 0x8000, 0, 4096);
	CHECK(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, PMR_CBA + 0x8000, 4096) == 0);
	CHECK(!memcmp(pmr + 0x8000, pat, 4096));
	/* Past the PMR's end. */
	CHECK(sc(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, PMR_CBA + PMR_SIZE - 512, 4096)) == NVME_SC_DATA_XFER_ERROR);
	/* Made persistent, then the daemon is killed: the file has it all. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 0) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 0x100));
	/* A disabled PMR is not decoded. */
	CHECK(sc(nvme_host_rw(&t.h, 1, NVME_CMD_READ, 1, 0, 8, PMR_CBA + 0x8000, 4096)) == NVME_SC_DATA_XFER_ERROR);
	CHECK(nvme_itest_alive(&t));
	nvme_itest_detach(&t);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &status, 0);
	t.pid = -1;
	CHECK(file_has(file, 0x8000, pat, 4096));
	nvme_itest_stop(&t, false);
	/* A new daemon on the same file offers what was made persistent. */
	if (!daemon_up(&t, build, args))
		goto out_dir;
	pmr = bar_map(&t, 4, PMR_SIZE);
	if (CHECK(pmr != NULL)) {
		CHECK(!memcmp(pmr, pat, 4096));
		CHECK(!memcmp(pmr + 0x8000, pat, 4096));
		CHECK(!memcmp(pmr + PMR_SIZE - 4096, pat + 4096, 4096));
	}
	/* An FLR disables the PMR like the host would, and leaves it persistent. */
	CHECK(nvme_host_reg_write32(&t.h, NVME_REG_PMRCTL, 1) == 0);
	CHECK(reg_wait(&t, NVME_REG_PMRSTS, 0));
	if (pmr)
		memcpy(pmr + 0x4000, pat, 4096);
	CHECK(vfu_client_reset(t.c) == 0);
	CHECK(file_has(file, 0x4000, pat, 4096));
	CHECK(itest_enable(t.c) == 0); /* the FLR cleared COMMAND */
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRCTL) == 0);
	CHECK(nvme_host_reg_read32(&t.h, NVME_REG_PMRSTS) == 0x100);
out:
	CHECK(nvme_itest_alive(&t));
	CHECK(nvme_itest_stop(&t, getenv("ITEST_SHOW_LOG") != NULL) == 0);
out_dir:
	unlink(file);
	rmdir(dir);
}

/* Options refused before anything is served. */
static void test_bad_options(const char *build)
{
	const char *bad[][6] = {
	    { "--malloc", "1M", "--cmb", "3M", NULL },
	    { "--malloc", "1M", "--cmb", "2G", NULL },
	    { "--malloc", "1M", "--pmr", "/nonexistent-dir/pmr.bin:1M", NULL },
	    { "--malloc", "1M", "--pmr", "/tmp", NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nvme_itest t;

		/* The daemon exits before its socket appears (the harness reaps it). */
		CHECK(nvme_itest_start(&t, build, bad[i]) != 0);
	}
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	static const char *const trap[] = { "--doorbells", "trap", NULL };
	static const char *const mmap[] = { "--doorbells", "mmap", NULL };

	itest_run("absent", test_absent, build);
	itest_run("bad_options", test_bad_options, build);
	for (int i = 0; trap[i]; i++)
		nvme_itest_mode_args[i] = trap[i];
	itest_run("cmb (trap doorbells)", test_cmb, build);
	itest_run("pmr (trap doorbells)", test_pmr, build);
	for (int i = 0; mmap[i]; i++)
		nvme_itest_mode_args[i] = mmap[i];
	itest_run("cmb (mmap doorbells)", test_cmb, build);
	return itest_summary();
}
