/* tests/integration/rados/shared_resv_test.c - one RBD image exported by two nvme-emu daemons
 * ("hosts" A and B) as a namespace with shared_reservations, each driven by its own NVMe host
 * through its own socket; the reservation state lives in RADOS (run by shared-resv.sh, which
 * starts the cluster, creates the image and sets CEPH_CONF).
 *  - Both daemons report the same namespace identifiers (derived from the image).
 *  - Register from both, Report from either lists both; A acquires Write Exclusive: B's write
 *    gets Reservation Conflict, B reads, A writes.
 *  - B's Preempt and Abort of A: the moment B's command completes, A's daemon refuses A's
 *    writes, and A's host has a Registration Preempted notification.
 *  - A read of the record that fails and passes is tried again: A's daemon, failing its next
 *    three reads (a test fault), still applies and acknowledges B's change and is not fenced.
 *  - Fencing: A's daemon stopped (SIGSTOP) while B preempts A again: B's command completes after
 *    the notify timeout, with A's daemon blocklisted; resumed, none of A's writes lands.
 *  - B's daemon killed (SIGKILL) and started again: the state is intact.
 *  - PTPL set by B's Register (CPTPL 11b); both daemons killed and started again: the
 *    registration, the reservation and PTPL itself (Get Features 83h) are found by both.
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
#include "tests/integration/rados/resv_host.h"

/* A failed check also has the daemons' logs shown when they stop. */
static bool g_fail;
#define CHECK(cond) (ITEST_CHECK(cond) || (g_fail = true, false))
#define ST_MASK 0x7ff

static const char *g_build, *g_pool, *g_image;

static uint64_t now_us(void)
{
	return resv_host_now_us();
}

/* Daemon `name` and its host up (its CNTLID from the cluster), as a check. */
static bool host_up(struct resv_host *x, const char *name, uint64_t hostid)
{
	const char *why = "";
	int rc = resv_host_up(x, g_build, name, hostid, 0, g_pool, g_image, false, &why);

	if (rc)
		fprintf(stderr, "  daemon %s: %s: %s\n", name, why, strerror(-rc));
	if (!CHECK(rc == 0))
		return false;
	{
		/* save_config keeps the parameter (a restart from it shares again). */
		static char out[65536];
		const char *sc[] = {"save_config", NULL};

		CHECK(resv_host_rpc(x, g_build, sc, out, sizeof(out)) == 0 &&
		      strstr(out, "\"shared_reservations\": true"));
	}
	return true;
}

/* Lines of daemon x's log holding `text`, or -1. */
static int log_count(const struct resv_host *x, const char *text)
{
	char cmd[512];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "grep -c -- '%s' %s", text, x->t.log);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

static int host_down(struct resv_host *x, bool show_log)
{
	return resv_host_down(x, show_log || g_fail);
}

/* The controller's CNTLID (Identify Controller), or 0. */
static uint16_t cntlid_of(struct resv_host *x)
{
	static uint8_t id[4096];

	if (nvme_host_identify(&x->t.h, NVME_CNS_CTRL, 0, id))
		return 0;
	return (uint16_t)(id[78] | id[79] << 8);
}

/* Get Features Reservation Persistence of namespace 1: the PTPL bit, or -1. */
static int get_ptpl(struct resv_host *x)
{
	struct nvme_sqe sqe = {0};
	struct nvme_cqe cqe = {0};

	sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
	sqe.nsid = 1;
	sqe.cdw10 = NVME_FEAT_RESV_PERSIST;
	if (nvme_host_cmd(&x->t.h, 0, &sqe, &cqe))
		return -1;
	return (int)(cqe.dw0 & 1);
}

/* Daemon x killed with SIGKILL and started again (name, hostid as before), as a check. */
static bool host_restart(struct resv_host *x, const char *name, uint64_t hostid)
{
	if (x->t.pid > 0) {
		kill(x->t.pid, SIGKILL);
		waitpid(x->t.pid, NULL, 0);
	}
	x->t.pid = -1;
	nvme_itest_detach(&x->t);
	unlink(x->rpc);
	memset(x, 0, sizeof(*x));
	return host_up(x, name, hostid);
}

static void test_shared(const char *build)
{
	static struct resv_host a, b;
	uint32_t gen_a = 0, gen_b = 0;
	uint8_t rt_a = 0, rt_b = 0, type = 0;
	uint16_t n_a = 0, n_b = 0;
	static uint8_t ida[4096], idb[4096];
	uint64_t t0, t_fence;
	uint16_t cntlid_a = 0, cntlid_b = 0;

	(void)build;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (!host_up(&a, "A", 0xaaaa) || !host_up(&b, "B", 0xbbbb))
		goto out;
	/* One subsystem across the daemons: CNTLIDs from the cluster, A's first. */
	cntlid_a = cntlid_of(&a);
	cntlid_b = cntlid_of(&b);
	printf("# CNTLIDs from the cluster: A %u, B %u\n", cntlid_a, cntlid_b);
	CHECK(cntlid_a == 1 && cntlid_b == 2);

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
	CHECK(resv_host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa) == 0);
	CHECK(resv_host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xb) == 0);
	/* Both daemons change the record at once, round after round: every change counts once
	 * (PRGEN grows by one per Register), none is lost to the other's. */
	CHECK(resv_host_report(&a, &gen_a, &rt_a, &n_a) == 0);
	{
		uint64_t ka = 0xa, kb = 0xb, t1 = now_us();
		bool ok = true;

		for (int i = 0; i < 30 && ok; i++) {
			int ca = resv_host_resv_submit(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, ka,
						  ka + 0x100);
			int cb = resv_host_resv_submit(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, kb,
						  kb + 0x100);

			ok = resv_host_wait(&a, ca) == 0 && resv_host_wait(&b, cb) == 0;
			ka += 0x100;
			kb += 0x100;
		}
		CHECK(ok);
		CHECK(resv_host_report(&b, &gen_b, &rt_b, &n_b) == 0);
		printf("# 60 concurrent Replace commands (30 rounds of one per daemon): generation "
		       "%u -> %u, %.1f ms a round\n",
		       gen_a, gen_b, (now_us() - t1) / 30e3);
		CHECK(gen_b == gen_a + 60 && n_b == 2);
		CHECK(resv_host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, ka, 0xa) == 0);
		CHECK(resv_host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, kb, 0xb) == 0);
	}
	CHECK(resv_host_resv(&a, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WRITE_EXCLUSIVE << 8, 0xa, 0) == 0);
	CHECK(resv_host_report(&a, &gen_a, &rt_a, &n_a) == 0);
	CHECK(resv_host_report(&b, &gen_b, &rt_b, &n_b) == 0);
	CHECK(n_a == 2 && n_b == 2 && gen_a == gen_b && rt_a == NVME_RESV_WRITE_EXCLUSIVE && rt_b == NVME_RESV_WRITE_EXCLUSIVE);
	/* B's own key again: Register of the same key is no change, Acquire by B conflicts. */
	CHECK(resv_host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RESV_WRITE_EXCLUSIVE << 8, 0xb, 0) ==
	      NVME_SC_RESV_CONFLICT);
	CHECK(resv_host_write(&b, 10, 0xbb) == NVME_SC_RESV_CONFLICT);
	CHECK(resv_host_read(&b, 10) == 0);
	CHECK(resv_host_write(&a, 10, 0xaa) == 0);

	/* B preempts A (and aborts A's commands): once B's command completed, A cannot write. */
	CHECK(resv_host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WRITE_EXCLUSIVE << 8,
			0xb, 0xa) == 0);
	CHECK(resv_host_write(&a, 11, 0xaa) == NVME_SC_RESV_CONFLICT);
	CHECK(resv_host_write(&b, 11, 0xbb) == 0);
	CHECK(resv_host_resv_log(&a, &type) == 0 && type == NVME_RESV_NOTIFY_REG_PREEMPTED);
	CHECK(resv_host_report(&a, &gen_a, &rt_a, &n_a) == 0 && n_a == 1);

	/* A's daemon fails its next 3 reads of the record (a test fault): B's change makes A's
	 * daemon read it, the read is tried again (100, 200, 400 ms) and passes, A's daemon
	 * acknowledges, and nobody is fenced. */
	{
		const char *f[] = {"nvmf_emu_test_fault", "--fault", "fail_cluster_reads", "--count",
				   "3", NULL};

		CHECK(resv_host_rpc(&a, g_build, f, NULL, 0) == 0);
		CHECK(resv_host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, 0xb, 0xb3) == 0);
		CHECK(log_count(&a, "read failed (Input/output error)") == 3);
		CHECK(log_count(&b, "blocklisted") == 0);
		CHECK(resv_host_report(&a, &gen_a, &rt_a, &n_a) == 0 && n_a == 1);
		CHECK(resv_host_report(&b, &gen_b, &rt_b, &n_b) == 0 && gen_a == gen_b);
		CHECK(resv_host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE, 0xb3, 0xb) == 0);
		CHECK(resv_host_write(&b, 11, 0xbb) == 0);
	}

	/* Fencing: A registers again; its daemon stops answering; B's preempt fences it. */
	CHECK(resv_host_resv(&a, NVME_CMD_RESV_REGISTER, NVME_RREGA_REGISTER, 0, 0xa2) == 0);
	kill(a.t.pid, SIGSTOP);
	/* A host waits 30 s for a command (Linux's default); the fence takes the notify timeout. */
	b.t.h.timeout_ms = 30000;
	t0 = now_us();
	CHECK(resv_host_resv(&b, NVME_CMD_RESV_ACQUIRE, NVME_RACQA_PREEMPT_ABORT | NVME_RESV_WRITE_EXCLUSIVE << 8,
			0xb, 0xa2) == 0);
	t_fence = now_us() - t0;
	printf("# preempt of a silent daemon completed after %.1f s (fenced)\n", t_fence / 1e6);
	CHECK(t_fence >= 4000000); /* after the notify timeout: A was fenced, not asked */
	CHECK(resv_host_write(&b, 12, 0xbb) == 0);
	kill(a.t.pid, SIGCONT);
	/* A's write: refused by its daemon or by the cluster, never landed; even A's read, which
	 * Write Exclusive allows a non-registrant, fails: the cluster refuses A's client. */
	CHECK(resv_host_write(&a, 12, 0xaa) != 0);
	CHECK(resv_host_read(&a, 12) != 0);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "grep -q 'blocklisted .* for 3600 s' %s", b.t.log);
		CHECK(system(cmd) == 0);
	}
	CHECK(resv_host_read(&b, 12) == 0 && b.buf[2048] == 0xbb && b.buf[2559] == 0xbb);

	/* B's daemon killed and started again: the state is the cluster's. */
	if (!host_restart(&b, "B", 0xbbbb))
		goto out;
	CHECK(cntlid_of(&b) == cntlid_b); /* taken back from the cluster */
	CHECK(resv_host_report(&b, &gen_b, &rt_b, &n_b) == 0);
	CHECK(rt_b == NVME_RESV_WRITE_EXCLUSIVE && n_b == 1);
	CHECK(resv_host_write(&b, 13, 0xbb) == 0);

	/* B's daemon loses its watch for 3 s (a test fault): it may have missed changes, so it
	 * refuses B's writes until the watch is back and it has read the record again. */
	{
		const char *f[] = {"nvmf_emu_test_fault", "--fault", "lose_cluster_watch",
				   "--hold_ms", "3000", NULL};
		uint64_t t1;
		int st;

		CHECK(resv_host_rpc(&b, g_build, f, NULL, 0) == 0);
		CHECK(resv_host_write(&b, 14, 0xbb) == NVME_SC_RESV_CONFLICT);
		t1 = now_us();
		while ((st = resv_host_write(&b, 14, 0xbb)) == NVME_SC_RESV_CONFLICT &&
		       now_us() - t1 < 20000000)
			usleep(50000);
		printf("# writes refused for %.1f s more after the watch was lost\n",
		       (now_us() - t1) / 1e6);
		CHECK(st == 0);
	}
	/* PTPL: B sets it with a Register (Replace, CPTPL 11b); then every daemon exporting the
	 * namespace dies at once (SIGKILL: A's daemon is also still fenced) and starts again. */
	CHECK(get_ptpl(&b) == 0);
	/* A's daemon, fenced, does not acknowledge: B's change waits the notify timeout. */
	b.t.h.timeout_ms = 30000;
	CHECK(resv_host_resv(&b, NVME_CMD_RESV_REGISTER, NVME_RREGA_REPLACE | 3u << 30, 0xb, 0xb) == 0);
	CHECK(get_ptpl(&b) == 1);
	if (!host_restart(&a, "A", 0xaaaa) || !host_restart(&b, "B", 0xbbbb))
		goto out;
	CHECK(get_ptpl(&a) == 1 && get_ptpl(&b) == 1);
	CHECK(cntlid_of(&a) == cntlid_a && cntlid_of(&b) == cntlid_b);
	CHECK(resv_host_report(&a, &gen_a, &rt_a, &n_a) == 0);
	CHECK(resv_host_report(&b, &gen_b, &rt_b, &n_b) == 0);
	CHECK(gen_a == gen_b && rt_a == NVME_RESV_WRITE_EXCLUSIVE && rt_b == NVME_RESV_WRITE_EXCLUSIVE &&
	      n_a == 1 && n_b == 1);
	CHECK(resv_host_write(&b, 15, 0xbb) == 0);
	CHECK(resv_host_write(&a, 15, 0xaa) == NVME_SC_RESV_CONFLICT);
	CHECK(host_down(&a, false) == 0);
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
