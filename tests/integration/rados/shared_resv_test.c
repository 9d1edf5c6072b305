/* tests/integration/rados/shared_resv_test.c - one RBD image exported by two nvme-emu daemons
 * ("hosts" A and B) as a namespace with shared_reservations, each driven by its own NVMe host
 * through its own socket; the reservation state lives in RADOS (run by shared-resv.sh, which
 * starts the cluster, creates the image and sets CEPH_CONF).
 *  - Both daemons report the same namespace identifiers (derived from the image).
 *  - Register from both, Report from either lists both; A acquires Write Exclusive: B's write
 *    gets Reservation Conflict, B reads, A writes.
 *  - B's Preempt and Abort of A: the moment B's command completes, A's daemon refuses A's
 *    writes, and A's host has a Registration Preempted notification.
 *  - Fencing: A's daemon stopped (SIGSTOP) while B preempts A again: B's command completes after
 *    the notify timeout, with A's daemon blocklisted; resumed, none of A's writes lands.
 *  - B's daemon killed (SIGKILL) and started again: the state is intact.
 * Usage: shared_resv_test BUILD_DIR POOL/IMAGE. Ends with "N passed, N failed". */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "controller/nvme_spec.h"
#include "tests/integration/nvme_itest.h"

/* A failed check also has the daemons' logs shown when they stop. */
static bool g_fail;
#define CHECK(cond) (ITEST_CHECK(cond) || (g_fail = true, false))
#define ST_MASK 0x7ff
#define NQN "nqn.2026-11.io.nvme-emu:shared-resv"

static const char *g_build, *g_pool, *g_image;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One daemon and its host. */
struct host {
	struct nvme_itest t;
	char rpc[96], fn[120];
	uint8_t *buf;
	uint64_t iova;
	uint64_t hostid;
};

static int host_rpc(struct host *x, const char *const *args)
{
	return nvme_itest_rpc(g_build, x->rpc, args, NULL, 0);
}

static int host_hostid(struct host *x)
{
	struct nvme_sqe sqe = {0};

	memcpy(x->buf, &x->hostid, 8);
	sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
	sqe.cdw10 = NVME_FEAT_HOST_ID;
	sqe.dptr.prp.prp1 = x->iova;
	return nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

/* A reservation command on nsid 1 with two 8-byte keys as its data. */
static int host_resv(struct host *x, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = {0};
	int st;

	memcpy(x->buf, &k1, 8);
	memcpy(x->buf + 8, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 1, &sqe, NULL);
	return st < 0 ? st : st & ST_MASK;
}

/* A reservation command submitted without waiting (cid, or -errno); its status by host_wait. */
static int host_resv_submit(struct host *x, uint8_t opc, uint32_t cdw10, uint64_t k1, uint64_t k2)
{
	struct nvme_sqe sqe = {0};

	memcpy(x->buf + 1024, &k1, 8);
	memcpy(x->buf + 1032, &k2, 8);
	sqe.cdw0.bits.opc = opc;
	sqe.nsid = 1;
	sqe.cdw10 = cdw10;
	sqe.dptr.prp.prp1 = x->iova + 1024;
	return nvme_host_submit(&x->t.h, 1, &sqe, false);
}

static int host_wait(struct host *x, int cid)
{
	struct nvme_cqe cqe;

	if (cid < 0)
		return cid;
	for (uint64_t end = now_us() + 30000000; now_us() < end;) {
		if (nvme_host_reap(&x->t.h, 1, &cqe) == 1 && cqe.cid == cid)
			return (cqe.status >> 1) & ST_MASK;
		usleep(100);
	}
	return -ETIMEDOUT;
}

/* Reservation Report: generation, type and the number of registrants. */
static int host_report(struct host *x, uint32_t *gen, uint8_t *rtype, uint16_t *regctl)
{
	struct nvme_sqe sqe = {0};
	int st;

	memset(x->buf, 0, 4096);
	sqe.cdw0.bits.opc = NVME_CMD_RESV_REPORT;
	sqe.nsid = 1;
	sqe.cdw10 = 4096 / 4 - 1;
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 1, &sqe, NULL);
	if (st)
		return st < 0 ? st : st & ST_MASK;
	memcpy(gen, x->buf, 4);
	*rtype = x->buf[4];
	memcpy(regctl, x->buf + 5, 2);
	return 0;
}

/* One block at `lba`: a write of `fill`, or a read into buf+2048. NVMe status. */
static int host_write(struct host *x, uint64_t lba, uint8_t fill)
{
	memset(x->buf + 2048, fill, 512);
	return nvme_host_rw(&x->t.h, 1, NVME_CMD_WRITE, 1, lba, 1, x->iova + 2048, 512) & ST_MASK;
}

static int host_read(struct host *x, uint64_t lba)
{
	return nvme_host_rw(&x->t.h, 1, NVME_CMD_READ, 1, lba, 1, x->iova + 2048, 512) & ST_MASK;
}

/* Log page 80h (Reservation Notification): its type (0: none). */
static int host_resv_log(struct host *x, uint8_t *type)
{
	struct nvme_sqe sqe = {0};
	int st;

	memset(x->buf, 0, 64);
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.cdw10 = NVME_LOG_RESV_NOTIFY | ((64 / 4 - 1) << 16);
	sqe.dptr.prp.prp1 = x->iova;
	st = nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
	*type = x->buf[8];
	return st;
}

static bool host_up(struct host *x, const char *name, uint64_t hostid)
{
	const char *args[] = {"--malloc", "1M", "--serial", name, "-r", x->rpc, NULL};
	char pool[64], image[128];

	snprintf(x->rpc, sizeof(x->rpc), "/tmp/.shared-resv-%s-%d.sock", name, (int)getpid());
	x->hostid = hostid;
	if (!CHECK(nvme_itest_start(&x->t, g_build, args) == 0))
		return false;
	snprintf(x->fn, sizeof(x->fn), "%.64s/shared.sock", x->t.dir);
	snprintf(pool, sizeof(pool), "%s", g_pool);
	snprintf(image, sizeof(image), "%s", g_image);
	{
		const char *m1[] = {"bdev_rbd_create", "--name", "R0", "--pool_name", pool,
				    "--rbd_name", image, "--block_size", "512", NULL};
		const char *m2[] = {"nvmf_create_subsystem", "--nqn", NQN, "--serial_number",
				    "\"SHARED-1\"", NULL};
		const char *m3[] = {"nvmf_subsystem_add_ns", "--nqn", NQN,
				    "--namespace.bdev_name", "R0", "--namespace.nsid", "1",
				    "--namespace.shared_reservations", "true", NULL};
		const char *m4[] = {"nvmf_subsystem_add_listener", "--nqn", NQN,
				    "--listen_address.trtype", "PCIE_EMU",
				    "--listen_address.traddr", x->fn, NULL};

		if (!CHECK(host_rpc(x, m1) == 0) || !CHECK(host_rpc(x, m2) == 0) ||
		    !CHECK(host_rpc(x, m3) == 0) || !CHECK(host_rpc(x, m4) == 0))
			return false;
	}
	{
		/* save_config keeps the parameter (a restart from it shares again). */
		static char out[65536];
		const char *sc[] = {"save_config", NULL};

		CHECK(nvme_itest_rpc(g_build, x->rpc, sc, out, sizeof(out)) == 0 &&
		      strstr(out, "\"shared_reservations\": true"));
	}
	snprintf(x->t.sock, sizeof(x->t.sock), "%s", x->fn);
	if (!CHECK(nvme_itest_attach(&x->t, 2) == 0) || !CHECK(nvme_host_enable(&x->t.h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&x->t.h, 1, 32, true, 1) == 0))
		return false;
	x->iova = nvme_host_alloc(&x->t.h, 4096, (void **)&x->buf);
	if (!CHECK(host_hostid(x) == 0))
		return false;
	/* Until the daemon has read the shared record it refuses writes: wait for one through
	 * (a block nobody else uses). */
	for (uint64_t end = now_us() + 20000000; now_us() < end;) {
		if (host_write(x, 4000, 0x11) == 0)
			return true;
		usleep(50000);
	}
	CHECK(!"the shared record was read: writes admitted");
	return false;
}

/* The daemon's exit status (0: a clean stop; under ASan, nothing leaked). */
static int host_down(struct host *x, bool show_log)
{
	int rc;

	nvme_itest_detach(&x->t);
	rc = nvme_itest_stop(&x->t, show_log || g_fail);
	unlink(x->rpc);
	return rc;
}

static void test_shared(const char *build)
{
	static struct host a, b;
	uint32_t gen_a = 0, gen_b = 0;
	uint8_t rt_a = 0, rt_b = 0, type = 0;
	uint16_t n_a = 0, n_b = 0;
	static uint8_t ida[4096], idb[4096];
	uint64_t t0, t_fence;

	(void)build;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!host_up(&a, "A", 0xaaaa) || !host_up(&b, "B", 0xbbbb))
		goto out;

	/* The same identifiers on both. */
	CHECK(nvme_host_identify(&a.t.h, NVME_CNS_NS, 1, ida) == 0);
	CHECK(nvme_host_identify(&b.t.h, NVME_CNS_NS, 1, idb) == 0);
	{
		const struct nvme_id_ns *na = (const void *)ida, *nb = (const void *)idb;
		static const uint8_t zero[16];

		CHECK(!memcmp(na->nguid, nb->nguid, 16) && memcmp(na->nguid, zero, 16));
		CHECK(!memcmp(na->eui64, nb->eui64, 8));
		CHECK(na->nmic & 1);
	}

	/* Both register; either reports both; A holds Write Exclusive. */
	CHECK(host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa) == 0);
	CHECK(host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb) == 0);
	/* Both daemons change the record at once, round after round: every change counts once
	 * (PRGEN grows by one per Register), none is lost to the other's. */
	CHECK(host_report(&a, &gen_a, &rt_a, &n_a) == 0);
	{
		uint64_t ka = 0xa, kb = 0xb, t1 = now_us();
		bool ok = true;

		for (int i = 0; i < 30 && ok; i++) {
			int ca = host_resv_submit(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, ka,
						  ka + 0x100);
			int cb = host_resv_submit(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, kb,
						  kb + 0x100);

			ok = host_wait(&a, ca) == 0 && host_wait(&b, cb) == 0;
			ka += 0x100;
			kb += 0x100;
		}
		CHECK(ok);
		CHECK(host_report(&b, &gen_b, &rt_b, &n_b) == 0);
		printf("# 60 concurrent Replace commands (30 rounds of one per daemon): generation "
		       "%u -> %u, %.1f ms a round\n",
		       gen_a, gen_b, (now_us() - t1) / 30e3);
		CHECK(gen_b == gen_a + 60 && n_b == 2);
		CHECK(host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, ka, 0xa) == 0);
		CHECK(host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, kb, 0xb) == 0);
	}
	CHECK(host_resv(&a, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WRITE_EXCLUSIVE << 8, 0xa, 0) == 0);
	CHECK(host_report(&a, &gen_a, &rt_a, &n_a) == 0);
	CHECK(host_report(&b, &gen_b, &rt_b, &n_b) == 0);
	CHECK(n_a == 2 && n_b == 2 && gen_a == gen_b && rt_a == NVME_RESV_WRITE_EXCLUSIVE && rt_b == NVME_RESV_WRITE_EXCLUSIVE);
	/* B's own key again: Register of the same key is no change, Acquire by B conflicts. */
	CHECK(host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WRITE_EXCLUSIVE << 8, 0xb, 0) ==
	      NVME_SC_RESV_CONFLICT);
	CHECK(host_write(&b, 10, 0xbb) == NVME_SC_RESV_CONFLICT);
	CHECK(host_read(&b, 10) == 0);
	CHECK(host_write(&a, 10, 0xaa) == 0);

	/* B preempts A (and aborts A's commands): once B's command completed, A cannot write. */
	CHECK(host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WRITE_EXCLUSIVE << 8,
			0xb, 0xa) == 0);
	CHECK(host_write(&a, 11, 0xaa) == NVME_SC_RESV_CONFLICT);
	CHECK(host_write(&b, 11, 0xbb) == 0);
	CHECK(host_resv_log(&a, &type) == 0 && type == NVME_RESV_NOTIFY_REG_PREEMPTED);
	CHECK(host_report(&a, &gen_a, &rt_a, &n_a) == 0 && n_a == 1);

	/* Fencing: A registers again; its daemon stops answering; B's preempt fences it. */
	CHECK(host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa2) == 0);
	kill(a.t.pid, SIGSTOP);
	/* A host waits 30 s for a command (Linux's default); the fence takes the notify timeout. */
	b.t.h.timeout_ms = 30000;
	t0 = now_us();
	CHECK(host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WRITE_EXCLUSIVE << 8,
			0xb, 0xa2) == 0);
	t_fence = now_us() - t0;
	printf("# preempt of a silent daemon completed after %.1f s (fenced)\n", t_fence / 1e6);
	CHECK(t_fence >= 4000000); /* after the notify timeout: A was fenced, not asked */
	CHECK(host_write(&b, 12, 0xbb) == 0);
	kill(a.t.pid, SIGCONT);
	/* A's write: refused by its daemon or by the cluster, never landed; even A's read, which
	 * Write Exclusive allows a non-registrant, fails: the cluster refuses A's client. */
	CHECK(host_write(&a, 12, 0xaa) != 0);
	CHECK(host_read(&a, 12) != 0);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "grep -q 'blocklisted .* for 3600 s' %s", b.t.log);
		CHECK(system(cmd) == 0);
	}
	CHECK(host_read(&b, 12) == 0 && b.buf[2048] == 0xbb && b.buf[2559] == 0xbb);

	/* B's daemon killed and started again: the state is the cluster's. */
	kill(b.t.pid, SIGKILL);
	waitpid(b.t.pid, NULL, 0);
	b.t.pid = -1;
	nvme_itest_detach(&b.t);
	unlink(b.rpc);
	memset(&b, 0, sizeof(b));
	if (!host_up(&b, "B", 0xbbbb))
		goto out;
	CHECK(host_report(&b, &gen_b, &rt_b, &n_b) == 0);
	CHECK(rt_b == NVME_RESV_WRITE_EXCLUSIVE && n_b == 1);
	CHECK(host_write(&b, 13, 0xbb) == 0);

	/* B's daemon loses its watch for 3 s (a test fault): it may have missed changes, so it
	 * refuses B's writes until the watch is back and it has read the record again. */
	{
		const char *f[] = {"nvmf_emu_test_fault", "--fault", "lose_cluster_watch",
				   "--hold_ms", "3000", NULL};
		uint64_t t1;
		int st;

		CHECK(host_rpc(&b, f) == 0);
		CHECK(host_write(&b, 14, 0xbb) == NVME_SC_RESV_CONFLICT);
		t1 = now_us();
		while ((st = host_write(&b, 14, 0xbb)) == NVME_SC_RESV_CONFLICT &&
		       now_us() - t1 < 20000000)
			usleep(50000);
		printf("# writes refused for %.1f s more after the watch was lost\n",
		       (now_us() - t1) / 1e6);
		CHECK(st == 0);
	}
	/* The fenced daemon's end is its own business; the other stops cleanly. */
	host_down(&a, false);
	CHECK(host_down(&b, false) == 0);
	return;
out:
	host_down(&a, false);
	host_down(&b, false);
}

int main(int argc, char **argv)
{
	static char pool[64];
	const char *slash;

	if (argc < 3 || !(slash = strchr(argv[2], '/')) || slash - argv[2] >= (long)sizeof(pool)) {
		fprintf(stderr, "usage: shared_resv_test BUILD_DIR POOL/IMAGE\n");
		return 2;
	}
	g_build = argv[1];
	/* The daemons take test faults (lose_cluster_watch). */
	setenv("NVME_EMU_TEST_FAULTS", "1", 1);
	memcpy(pool, argv[2], (size_t)(slash - argv[2]));
	g_pool = pool;
	g_image = slash + 1;
	itest_run("shared_reservations_two_daemons", test_shared, g_build);
	return itest_summary();
}
