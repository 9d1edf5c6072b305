/* tests/integration/abort_test.c - Abort (NVMe Base 2.0 5.1) of a command the controller has not
 * fetched yet, through the real vfio-user socket and the daemon's threads: the namespace sits on
 * an error bdev (configured over JSON-RPC) that holds reads, so eight held reads take every
 * request of an 8-entry SQ; a write put in the SQ behind them, its doorbell rung, cannot be
 * fetched. The Abort of it is answered "aborted" (CDW0 bit 0 clear), and once the reads are let
 * go the write completes with Command Abort Requested without having reached the media, while
 * the write behind it runs; an Abort of one of the held reads (running) is answered "aborted" and
 * that read ends with Command Abort Requested. An Abort of a CID in no queue is answered "not
 * aborted". Runs with
 * trapped doorbells on one poll group and with mmapped doorbells on two. Also Reservation
 * Acquire with Preempt and Abort between two controllers of the subsystem (two hosts): the
 * preempted host's read held in the bdev ends with Command Aborted due to Preempt and Abort. */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define AB_NQN "nqn.2026-11.io.nvme-emu:abort"
#define AB_DEPTH 8

static const char *g_build;

struct ab {
	struct nvme_itest t;
	char rpc[160];
	uint8_t *buf, *rd, *pat;
	uint64_t buf_iova, rd_iova, pat_iova;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Runs nvme-emu-rpc against the daemon; 0 when it exits 0. */
static int ab_rpc(struct ab *x, const char *const *args)
{
	const char *argv[24];
	char prog[256];
	int argc = 0, status;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu-rpc", g_build);
	argv[argc++] = prog;
	argv[argc++] = "-s";
	argv[argc++] = x->rpc;
	for (int i = 0; args[i] && argc < 23; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The daemon; the function under test is made over JSON-RPC on an error bdev, and the host
 * attaches to it (the command-line function stays idle). */
static bool ab_start(struct ab *x)
{
	const char *args[8] = { "--malloc", "1M", "--serial", "ABORT-CLI" };
	char wsock[128];
	int n = 4;

	memset(x, 0, sizeof(*x));
	snprintf(x->rpc, sizeof(x->rpc), "/tmp/.abort-rpc-%d-%ld.sock", getpid(), (long)now_us());
	args[n++] = "-r";
	args[n++] = x->rpc;
	args[n] = NULL;
	if (!CHECK(nvme_itest_start(&x->t, g_build, args) == 0))
		return false;
	snprintf(wsock, sizeof(wsock), "%.64s/abort.sock", x->t.dir);
	{
		const char *m1[] = { "bdev_malloc_create", "--name", "AB0", "--num_blocks", "8192",
				     "--block_size", "512", NULL };
		const char *m2[] = { "bdev_error_create", "--base_name", "AB0", NULL };
		const char *m3[] = { "nvmf_create_subsystem", "--nqn", AB_NQN, "--serial_number",
				     "\"ABORT-1\"", NULL };
		const char *m4[] = { "nvmf_subsystem_add_ns", "--nqn", AB_NQN,
				     "--namespace.bdev_name", "EE_AB0", NULL };
		const char *m5[] = { "nvmf_subsystem_add_listener", "--nqn", AB_NQN,
				     "--listen_address.trtype", "PCIE_EMU",
				     "--listen_address.traddr", wsock, NULL };

		if (!CHECK(ab_rpc(x, m1) == 0) || !CHECK(ab_rpc(x, m2) == 0) ||
		    !CHECK(ab_rpc(x, m3) == 0) || !CHECK(ab_rpc(x, m4) == 0) ||
		    !CHECK(ab_rpc(x, m5) == 0))
			goto fail;
	}
	snprintf(x->t.sock, sizeof(x->t.sock), "%s", wsock);
	if (!CHECK(nvme_itest_attach(&x->t, 2) == 0) || !CHECK(nvme_host_enable(&x->t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&x->t.h, 1, AB_DEPTH, true, 1) == 0))
		goto fail;
	x->buf_iova = nvme_host_alloc(&x->t.h, 4096, (void **)&x->buf);
	x->rd_iova = nvme_host_alloc(&x->t.h, 4096, (void **)&x->rd);
	x->pat_iova = nvme_host_alloc(&x->t.h, 4096, (void **)&x->pat);
	memset(x->pat, 0x5a, 4096);
	return true;
fail:
	nvme_itest_stop(&x->t, true);
	unlink(x->rpc);
	return false;
}

static void ab_stop(struct ab *x)
{
	bool alive = nvme_itest_alive(&x->t);

	CHECK(alive);
	CHECK(nvme_itest_stop(&x->t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
	unlink(x->rpc);
}

/* Submits a one-block command on SQ 1 (not rung when no_ring); its CID. */
static int ab_submit(struct ab *x, uint8_t opc, uint64_t lba, uint64_t iova, bool no_ring)
{
	struct nvme_sqe sqe;

	nvme_host_rw_sqe(&sqe, opc, 1, lba, 1);
	sqe.dptr.prp.prp1 = iova;
	return nvme_host_submit(&x->t.h, 1, &sqe, no_ring);
}

/* Waits (bounded) for the CQE of `cid` on SQ 1, recording the others in got[]; the status or -1. */
static int ab_wait(struct ab *x, int cid, int *got, int ngot)
{
	uint64_t deadline = now_us() + 5000000;
	struct nvme_cqe cqe;

	while (now_us() < deadline) {
		if (nvme_host_reap(&x->t.h, 1, &cqe) != 1) {
			usleep(200);
			continue;
		}
		if (cqe.cid < ngot)
			got[cqe.cid] = (cqe.status >> 1) & ST_MASK;
		if (cqe.cid == cid)
			return (cqe.status >> 1) & ST_MASK;
	}
	return -1;
}

static int ab_abort(struct ab *x, uint16_t sqid, uint16_t cid, uint32_t *dw0)
{
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe = { 0 };
	int st;

	sqe.cdw0.bits.opc = NVME_ADM_ABORT;
	sqe.cdw10 = sqid | (uint32_t)cid << 16;
	st = nvme_host_cmd(&x->t.h, 0, &sqe, &cqe);
	*dw0 = cqe.dw0;
	return st;
}

static void test_abort_unfetched(const char *build)
{
	static const char *const inject[] = { "bdev_error_inject_error", "--name", "EE_AB0",
					      "--io_type", "read", "--error_type", "pending",
					      "--num", "8", NULL };
	static const char *const resume[] = { "bdev_error_resume_pending", "--name", "EE_AB0",
					      NULL };
	int got[1024], fast, w, v, r0 = -1, st = -1;
	uint32_t dw0 = 0;
	struct ab x;

	g_build = build;
	if (!ab_start(&x))
		return;
	memset(got, 0xff, sizeof(got));
	/* LBAs 100 and 101 start as zeroes (the malloc bdev), checked to be sure. */
	CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_READ, 1, 100, 2, x.rd_iova, 1024) == 0);
	CHECK(x.rd[0] == 0 && x.rd[1023] == 0);
	CHECK(ab_rpc(&x, inject) == 0);
	/* Six held reads and a write that completes (so the host learns the SQ head moved), then
	 * two more held reads: all eight requests of the SQ are taken. */
	for (int i = 0; i < 6; i++) {
		int c = ab_submit(&x, NVME_CMD_READ, i, x.buf_iova, true);

		CHECK(c >= 0);
		if (!i)
			r0 = c;
	}
	fast = ab_submit(&x, NVME_CMD_WRITE, 50, x.pat_iova, false);
	CHECK(fast >= 0 && ab_wait(&x, fast, got, 1024) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(ab_submit(&x, NVME_CMD_READ, i, x.buf_iova, false) >= 0);
	/* The write to abort and one behind it, rung: they stay in the SQ. */
	w = ab_submit(&x, NVME_CMD_WRITE, 100, x.pat_iova, true);
	v = ab_submit(&x, NVME_CMD_WRITE, 101, x.pat_iova, false);
	CHECK(w >= 0 && v >= 0);
	/* The doorbell reaches the poll group on its own path: until it did, the Abort honestly
	 * answers "not aborted", so it is asked again for a bounded while. */
	for (int i = 0; i < 200; i++) {
		st = ab_abort(&x, 1, (uint16_t)w, &dw0);
		if (st != 0 || !(dw0 & 1))
			break;
		usleep(5000);
	}
	CHECK(st == 0);
	CHECK((dw0 & 1) == 0);
	/* A CID in no queue: not aborted. */
	CHECK(ab_abort(&x, 1, 0x7777, &dw0) == 0);
	CHECK((dw0 & 1) == 1);
	/* A running command (a read held in the bdev): marked by the SQ's owner thread, so
	 * "aborted", and it ends with Command Abort Requested once its read returns. */
	CHECK(r0 >= 0 && ab_abort(&x, 1, (uint16_t)r0, &dw0) == 0);
	CHECK((dw0 & 1) == 0);
	CHECK(got[w] == -1 && got[v] == -1 && got[r0] == -1);
	CHECK(ab_rpc(&x, resume) == 0);
	CHECK(ab_wait(&x, w, got, 1024) == NVME_SC_ABORT_REQ);
	if (got[r0] == -1)
		CHECK(ab_wait(&x, r0, got, 1024) == NVME_SC_ABORT_REQ);
	else
		CHECK(got[r0] == NVME_SC_ABORT_REQ);
	if (got[v] == -1)
		CHECK(ab_wait(&x, v, got, 1024) == 0);
	else
		CHECK(got[v] == 0);
	/* The aborted write never reached the media; the one behind it did. */
	memset(x.rd, 0xee, 1024);
	CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_READ, 1, 100, 2, x.rd_iova, 1024) == 0);
	CHECK(x.rd[0] == 0 && x.rd[511] == 0);
	CHECK(x.rd[512] == 0x5a && x.rd[1023] == 0x5a);
	ab_stop(&x);
}

/* ---- Preempt and Abort across two controllers of the subsystem ---- */

/* Set Features Host Identifier (64-bit) of host h, data at iova/buf. */
static int pa_hostid(struct nvme_host *h, uint8_t *buf, uint64_t iova, uint64_t id)
{
	struct nvme_sqe sqe = { 0 };

	memcpy(buf, &id, 8);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	sqe.dptr.prp.prp1 = iova;
	return nvme_host_cmd(h, 0, &sqe, NULL);
}

/* A reservation command on nsid 1 with two 8-byte keys as its data. */
static int pa_resv(struct nvme_host *h, uint8_t *buf, uint64_t iova, uint8_t opc, uint32_t cdw10,
		   uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = { 0 };
	int st;

	memcpy(buf, &k1, 8);
	memcpy(buf + 8, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	sqe.dptr.prp.prp1 = iova;
	st = nvme_host_cmd(h, 1, &sqe, NULL);
	return st < 0 ? st : st & ST_MASK;
}

/* Host B: a second controller of the subsystem (its own listener) attached, enabled, with an I/O
 * queue pair; host identifiers 0xaaaa (x) and 0xbbbb (B), keys 0xa and 0xb registered, and A
 * holding Write Exclusive - Registrants Only. b is detached by the caller either way. */
static bool pa_second_host(struct ab *x, struct nvme_itest *b, uint8_t **bbuf, uint64_t *biova)
{
	char bsock[128];

	memset(b, 0, sizeof(*b));
	snprintf(bsock, sizeof(bsock), "%.64s/abort-b.sock", x->t.dir);
	{
		const char *m[] = { "nvmf_subsystem_add_listener", "--nqn", AB_NQN,
				    "--listen_address.trtype", "PCIE_EMU", "--listen_address.traddr",
				    bsock, NULL };

		if (!CHECK(ab_rpc(x, m) == 0))
			return false;
	}
	snprintf(b->sock, sizeof(b->sock), "%s", bsock);
	if (!CHECK(nvme_itest_attach(b, 2) == 0) || !CHECK(nvme_host_enable(&b->h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&b->h, 1, 32, true, 1) == 0))
		return false;
	*biova = nvme_host_alloc(&b->h, 4096, (void **)bbuf);
	return CHECK(pa_hostid(&x->t.h, x->buf, x->buf_iova, 0xaaaa) == 0) &&
	       CHECK(pa_hostid(&b->h, *bbuf, *biova, 0xbbbb) == 0) &&
	       CHECK(pa_resv(&x->t.h, x->buf, x->buf_iova, NVME_CMD_RESV_REGISTER,
			     NVME_RREGA_REGISTER, 0, 0xa) == 0) &&
	       CHECK(pa_resv(&b->h, *bbuf, *biova, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0,
			     0xb) == 0) &&
	       CHECK(pa_resv(&x->t.h, x->buf, x->buf_iova, NVME_CMD_RESV_ACQUIRE,
			     NVME_RESV_WE_REG_ONLY << 8, 0xa, 0) == 0);
}

/* Host B's read held in the bdev when host A (the other controller) preempts B's registration
 * with Preempt and Abort ends with Command Aborted due to Preempt and Abort (1Bh) once the bdev
 * lets it go; B's writes then conflict; a read of A held the same way is not touched. */
static void test_preempt_abort_two_ctrls(const char *build)
{
	static const char *const inject[] = { "bdev_error_inject_error", "--name", "EE_AB0",
					      "--io_type", "read", "--error_type", "pending",
					      "--num", "2", NULL };
	static const char *const resume[] = { "bdev_error_resume_pending", "--name", "EE_AB0",
					      NULL };
	struct nvme_itest b;
	struct ab x;
	uint8_t *bbuf;
	uint64_t biova;
	int got[1024], rb, ra;

	g_build = build;
	if (!ab_start(&x))
		return;
	memset(got, 0xff, sizeof(got));
	if (!pa_second_host(&x, &b, &bbuf, &biova))
		goto out;
	CHECK(ab_rpc(&x, inject) == 0);
	{
		struct nvme_sqe sqe;

		nvme_host_rw_sqe(&sqe, NVME_CMD_READ, 1, 7, 1);
		sqe.dptr.prp.prp1 = biova + 2048;
		rb = nvme_host_submit(&b.h, 1, &sqe, false);
		ra = ab_submit(&x, NVME_CMD_READ, 7, x.rd_iova, false);
	}
	CHECK(rb >= 0 && ra >= 0);
	usleep(100000); /* both reads reach the bdev (held there) */
	CHECK(pa_resv(&x.t.h, x.buf, x.buf_iova, NVME_CMD_RESV_ACQUIRE,
		      NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WE_REG_ONLY << 8, 0xa, 0xb) == 0);
	CHECK(ab_rpc(&x, resume) == 0);
	{
		uint64_t deadline = now_us() + 5000000;
		struct nvme_cqe cqe;
		int sb = -1;

		while (sb < 0 && now_us() < deadline) {
			if (nvme_host_reap(&b.h, 1, &cqe) == 1 && cqe.cid == rb)
				sb = (cqe.status >> 1) & ST_MASK;
			else
				usleep(200);
		}
		CHECK(sb == NVME_SC_PREEMPT_ABORT);
	}
	CHECK(ab_wait(&x, ra, got, 1024) == 0);
	/* B is no registrant now: it reads (Write Exclusive - Registrants Only), cannot write. */
	CHECK(nvme_host_rw(&b.h, 1, NVME_CMD_READ, 1, 7, 1, biova, 512) == 0);
	CHECK((nvme_host_rw(&b.h, 1, NVME_CMD_WRITE, 1, 7, 1, biova, 512) & ST_MASK) ==
	      NVME_SC_RESV_CONFLICT);
out:
	nvme_itest_detach(&b);
	ab_stop(&x);
}

/* Host B's write held in the bdev (it may still land) when host A preempts B with Preempt and
 * Abort: A's Acquire does not complete while that write runs, so no write of B can land after A
 * was told it won; once the bdev lets it go the write ends with Command Aborted due to Preempt
 * and Abort and the Acquire completes. A read of B held the same way does not hold the Acquire
 * (preempt_abort_two_ctrls). */
static void test_preempt_abort_waits_writes(const char *build)
{
	static const char *const inject[] = { "bdev_error_inject_error", "--name", "EE_AB0",
					      "--io_type", "write", "--error_type", "pending",
					      "--num", "1", NULL };
	static const char *const resume[] = { "bdev_error_resume_pending", "--name", "EE_AB0",
					      NULL };
	struct nvme_itest b;
	struct ab x;
	uint8_t *bbuf;
	uint64_t biova;
	int wb = -1, acq = -1, sb = -1, sacq = -1;

	g_build = build;
	if (!ab_start(&x))
		return;
	/* Write Exclusive - Registrants Only: B, a registrant, may write until it is preempted. */
	if (!pa_second_host(&x, &b, &bbuf, &biova))
		goto out;
	CHECK(ab_rpc(&x, inject) == 0);
	{
		struct nvme_sqe sqe;

		memset(bbuf + 2048, 0xbb, 512);
		nvme_host_rw_sqe(&sqe, NVME_CMD_WRITE, 1, 9, 1);
		sqe.dptr.prp.prp1 = biova + 2048;
		wb = nvme_host_submit(&b.h, 1, &sqe, false);
	}
	CHECK(wb >= 0);
	usleep(100000); /* the write reaches the bdev (held there) */
	{
		struct nvme_sqe sqe = { 0 };
		uint64_t k[2] = { 0xa, 0xb };

		memcpy(x.buf, k, 16);
		sqe.cdw0.bits.opc = NVME_CMD_RESV_ACQUIRE;
		sqe.nsid = 1;
		sqe.cdw10 = NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WE_REG_ONLY << 8;
		sqe.dptr.prp.prp1 = x.buf_iova;
		acq = nvme_host_submit(&x.t.h, 1, &sqe, false);
	}
	CHECK(acq >= 0);
	/* The held write keeps the Acquire waiting, however long. */
	{
		uint64_t deadline = now_us() + 500000;
		struct nvme_cqe cqe;

		while (now_us() < deadline) {
			if (nvme_host_reap(&x.t.h, 1, &cqe) == 1 && cqe.cid == acq) {
				sacq = (cqe.status >> 1) & ST_MASK;
				break;
			}
			usleep(1000);
		}
		CHECK(sacq == -1);
	}
	CHECK(ab_rpc(&x, resume) == 0);
	{
		uint64_t deadline = now_us() + 5000000;
		struct nvme_cqe cqe;

		while ((sb < 0 || sacq < 0) && now_us() < deadline) {
			if (sb < 0 && nvme_host_reap(&b.h, 1, &cqe) == 1 && cqe.cid == wb)
				sb = (cqe.status >> 1) & ST_MASK;
			if (sacq < 0 && nvme_host_reap(&x.t.h, 1, &cqe) == 1 && cqe.cid == acq)
				sacq = (cqe.status >> 1) & ST_MASK;
			usleep(200);
		}
	}
	CHECK(sb == NVME_SC_PREEMPT_ABORT);
	CHECK(sacq == 0);
	CHECK((nvme_host_rw(&b.h, 1, NVME_CMD_WRITE, 1, 9, 1, biova + 2048, 512) & ST_MASK) ==
	      NVME_SC_RESV_CONFLICT);
out:
	nvme_itest_detach(&b);
	ab_stop(&x);
}

static void ab_matrix(const char *build, const char *label, const char *const *args)
{
	unsigned int i = 0;

	printf("== %s\n", label);
	for (; args[i] && i < 15; i++)
		nvme_itest_mode_args[i] = args[i];
	nvme_itest_mode_args[i] = NULL;
	itest_run("abort_unfetched", test_abort_unfetched, build);
	itest_run("preempt_abort_two_ctrls", test_preempt_abort_two_ctrls, build);
	itest_run("preempt_abort_waits_writes", test_preempt_abort_waits_writes, build);
}

int main(int argc, char **argv)
{
	static const char *const trap[] = { "--doorbells", "trap", NULL };
	static const char *const mmap_2pg[] = { "--doorbells", "mmap", "-m", "2", NULL };

	const char *build = argc > 1 ? argv[1] : "build";

	ab_matrix(build, "trap doorbells", trap);
	ab_matrix(build, "mmap doorbells, 2 poll groups", mmap_2pg);
	return itest_summary();
}
