/* tests/integration/torture_test.c - the lifecycle torture test: a client with I/O in flight on
 * several queues, driven through random interleavings (seeded; the seed and the step are printed
 * on failure) of DMA_UNMAP/DMA_MAP of its ring, data and shadow-doorbell windows, Doorbell Buffer
 * Config, CC.EN toggles, shutdowns, FLRs, SET_IRQS changes, queue creation/deletion,
 * hang-up/reconnect and truncation of the data window's memfd under I/O. Whatever happens, the daemon must stay up, every request must be answered
 * within a bound (no hang), and at the end a fresh client must get a working controller with
 * verified data; the ASan build's exit status says nothing leaked or was touched after free.
 *
 * TORTURE_STEPS (default 2000) and TORTURE_SEED (default: time) set the run; `make soak` runs
 * millions of steps. */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define WIN_BASE 0x40000000ull
#define WIN_STRIDE 0x100000ull
#define NQ 3		/* I/O queue pairs */
#define QDEPTH 32
#define DATA_SIZE (1u << 20)
#define STEP_BOUND_US 3000000u /* no step may take longer: it would be a hang */

enum { WIN_ADMIN, WIN_Q1, WIN_Q2, WIN_Q3, WIN_DATA, WIN_DBBUF, NWIN };

static const uint64_t win_size[NWIN] = { 0x2000, 0x2000, 0x2000, 0x2000, DATA_SIZE, 0x2000 };

struct win {
	int fd;
	uint8_t *local;
	bool mapped;
};

struct torture {
	struct nvme_itest t;
	struct win w[NWIN];
	uint32_t rng;
	uint64_t steps, submitted, done_ios, max_step_us, truncations, faults;
	bool enabled;
	bool qlive[NQ + 1];
	const char *last_step;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint32_t rnd(struct torture *x, uint32_t n)
{
	x->rng = x->rng * 1664525u + 1013904223u;
	return (x->rng >> 8) % n;
}

static uint64_t win_iova(unsigned int i)
{
	return WIN_BASE + i * WIN_STRIDE;
}

static int win_map(struct torture *x, unsigned int i)
{
	int rc = vfu_client_dma_map(x->t.c, win_iova(i), win_size[i], 3, x->w[i].fd, 0);

	if (!rc)
		x->w[i].mapped = true;
	return rc;
}

static int win_unmap(struct torture *x, unsigned int i)
{
	int rc = vfu_client_dma_unmap(x->t.c, win_iova(i), win_size[i], 0);

	if (!rc)
		x->w[i].mapped = false;
	return rc;
}

/* The host driver's queues live in our windows (their local views stay valid when unmapped). */
static void place_queues(struct torture *x)
{
	struct nvme_host *h = &x->t.h;

	for (unsigned int q = 0; q <= NQ; q++) {
		uint8_t *base = x->w[WIN_ADMIN + q].local;

		h->q[q].sq_iova = win_iova(WIN_ADMIN + q);
		h->q[q].sq = (struct nvme_sqe *)base;
		h->q[q].cq_iova = win_iova(WIN_ADMIN + q) + 0x1000;
		h->q[q].cq = (struct nvme_cqe *)(base + 0x1000);
		h->q[q].depth = QDEPTH;
	}
}

/* A new client: VERSION, the harness RAM, our windows as they were, MSI-X. */
static bool attach(struct torture *x)
{
	if (nvme_itest_attach(&x->t, NQ + 1))
		return false;
	x->t.h.timeout_ms = 300;
	vfu_client_set_timeout(x->t.c, STEP_BOUND_US / 1000);
	for (unsigned int i = 0; i < NWIN; i++)
		if (x->w[i].mapped && win_map(x, i))
			return false;
	place_queues(x);
	x->enabled = false;
	memset(x->qlive, 0, sizeof(x->qlive));
	return true;
}

/* ---- steps ---- */

static void st_enable(struct torture *x)
{
	place_queues(x);
	x->enabled = nvme_host_enable(&x->t.h, QDEPTH) == 0;
	memset(x->qlive, 0, sizeof(x->qlive));
}

static void st_create_queue(struct torture *x)
{
	uint16_t q = (uint16_t)(1 + rnd(x, NQ));

	if (!x->enabled || x->qlive[q])
		return;
	place_queues(x);
	x->qlive[q] = nvme_host_create_io_queues(&x->t.h, q, QDEPTH, rnd(x, 2), q) == 0;
}

static void st_delete_queue(struct torture *x)
{
	uint16_t q = (uint16_t)(1 + rnd(x, NQ));

	if (!x->enabled || !x->qlive[q])
		return;
	nvme_host_delete_io_queues(&x->t.h, q);
	x->qlive[q] = false;
	x->t.h.q[q].live = false;
}

/* A live queue, or 0. */
static uint16_t live_queue(struct torture *x)
{
	uint16_t live[NQ], n = 0;

	for (uint16_t q = 1; q <= NQ; q++)
		if (x->qlive[q])
			live[n++] = q;
	return n ? live[rnd(x, n)] : 0;
}

static void st_submit(struct torture *x)
{
	uint16_t q = live_queue(x);
	unsigned int n = 1 + rnd(x, 16);

	if (!q)
		return;
	for (unsigned int i = 0; i < n; i++) {
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = rnd(x, 2) ? NVME_CMD_READ : NVME_CMD_WRITE;
		sqe.nsid = 1;
		sqe.cdw10 = rnd(x, 4096) * 8;
		sqe.cdw12 = 7;
		/* Mostly in the data window, sometimes anywhere (unmapped, or a ring). */
		sqe.dptr.prp.prp1 = rnd(x, 8) ? win_iova(WIN_DATA) + rnd(x, DATA_SIZE / 4096) * 4096
					      : win_iova(rnd(x, NWIN)) + rnd(x, 2) * 4096;
		if (nvme_host_submit(&x->t.h, q, &sqe, false) < 0)
			break;
		x->submitted++;
	}
}

static void st_reap(struct torture *x)
{
	for (uint16_t q = 1; q <= NQ; q++) {
		struct nvme_cqe cqe;

		if (!x->qlive[q])
			continue;
		while (nvme_host_reap(&x->t.h, q, &cqe) == 1)
			x->done_ios++;
	}
}

static void st_toggle_window(struct torture *x)
{
	unsigned int i = rnd(x, NWIN);

	/* Memory comes back more often than it goes: queues live long enough for I/O. */
	if (!x->w[i].mapped)
		win_map(x, i);
	else if (!rnd(x, 3))
		win_unmap(x, i);
}

static void st_dbbuf(struct torture *x)
{
	struct nvme_sqe sqe = { 0 };

	if (!x->enabled)
		return;
	sqe.cdw0.bits.opc = NVME_ADM_DBBUF;
	sqe.dptr.prp.prp1 = win_iova(WIN_DBBUF);
	sqe.dptr.prp.prp2 = win_iova(WIN_DBBUF) + 0x1000;
	nvme_host_cmd(&x->t.h, 0, &sqe, NULL);
}

static void st_disable(struct torture *x)
{
	nvme_host_disable(&x->t.h);
	x->enabled = false;
	memset(x->qlive, 0, sizeof(x->qlive));
}

static void st_shutdown(struct torture *x)
{
	if (!x->enabled)
		return;
	nvme_host_shutdown(&x->t.h);
	x->enabled = false;
	memset(x->qlive, 0, sizeof(x->qlive));
}

static void st_flr(struct torture *x)
{
	uint16_t flr = 0x8000, cmd = 0x6;

	vfu_client_region_write(x->t.c, 7, 0x48 + 8, &flr, 2, rnd(x, 2));
	/* The FLR cleared COMMAND: memory space and bus master on again. */
	vfu_client_region_write(x->t.c, 7, 0x4, &cmd, 2, false);
	x->enabled = false;
	memset(x->qlive, 0, sizeof(x->qlive));
}

static void st_irqs(struct torture *x)
{
	if (rnd(x, 3))
		vfu_client_irq_eventfds(x->t.c, 2, rnd(x, NQ + 1), 1 + rnd(x, 2));
	else
		vfu_client_set_irqs(x->t.c, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 2, 0,
				    0, NULL, 0, NULL);
}

static void st_reconnect(struct torture *x)
{
	nvme_itest_detach(&x->t);
	if (!attach(x))
		CHECK(!"reattach after a hang-up");
}

/* The client truncates its data window (an unsealed memfd) under the device and points reads at
 * it: the daemon must turn its mapping into anonymous memory and drop this client, never die of
 * SIGBUS. The window gets its size back and the client reconnects. A drop is waited for a bounded
 * time: a queue the device no longer serves (its ring unmapped, a reset under way) never faults. */
static void st_truncate(struct torture *x)
{
	struct win *w = &x->w[WIN_DATA];
	uint16_t q = live_queue(x);
	bool dropped = false;

	if (!w->mapped || !q)
		return;
	if (ftruncate(w->fd, 0))
		abort();
	x->truncations++;
	for (int i = 0; i < 4; i++) {
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = NVME_CMD_READ;
		sqe.nsid = 1;
		sqe.cdw12 = 7;
		sqe.dptr.prp.prp1 = win_iova(WIN_DATA) + rnd(x, DATA_SIZE / 4096) * 4096;
		if (nvme_host_submit(&x->t.h, q, &sqe, false) < 0)
			break;
		x->submitted++;
	}
	for (int i = 0; i < 30 && !dropped; i++) {
		uint32_t csts;

		dropped = vfu_client_region_read(x->t.c, 0, 0x1c, &csts, sizeof(csts)) < 0;
		if (!dropped)
			usleep(10000);
	}
	if (ftruncate(w->fd, (off_t)win_size[WIN_DATA]))
		abort();
	if (dropped) {
		x->faults++;
		st_reconnect(x);
	}
}

static const struct {
	const char *name;
	void (*fn)(struct torture *x);
	unsigned int weight;
} steps[] = {
	{ "enable", st_enable, 4 },	      { "create_queue", st_create_queue, 8 },
	{ "delete_queue", st_delete_queue, 1 }, { "submit", st_submit, 30 },
	{ "reap", st_reap, 20 },	      { "toggle_window", st_toggle_window, 8 },
	{ "dbbuf", st_dbbuf, 3 },	      { "disable", st_disable, 1 },
	{ "shutdown", st_shutdown, 1 },	      { "flr", st_flr, 1 },
	{ "irqs", st_irqs, 3 },		      { "reconnect", st_reconnect, 1 },
	{ "truncate", st_truncate, 1 },
};

static void run(const char *build, const char *label, const char *const *mode, uint32_t seed,
		uint64_t nsteps)
{
	static const char *const ns[] = { "--malloc", "32M", "-q", "4", NULL };
	unsigned int total = 0, i;
	struct torture x = { .rng = seed };
	uint64_t start = now_us();

	printf("== %s: seed %u, %llu steps\n", label, seed, (unsigned long long)nsteps);
	for (i = 0; mode[i] && i < 15; i++)
		nvme_itest_mode_args[i] = mode[i];
	nvme_itest_mode_args[i] = NULL;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		total += steps[i].weight;
	for (i = 0; i < NWIN; i++) {
		/* Unsealed, as DPDK's hugepage files: st_truncate shrinks the data window. */
		x.w[i].fd = memfd_create("torture", MFD_CLOEXEC);
		if (x.w[i].fd < 0 || ftruncate(x.w[i].fd, (off_t)win_size[i]))
			abort();
		x.w[i].local = mmap(NULL, win_size[i], PROT_READ | PROT_WRITE, MAP_SHARED,
				    x.w[i].fd, 0);
		if (x.w[i].local == MAP_FAILED)
			abort();
		x.w[i].mapped = true;
	}
	if (!CHECK(nvme_itest_start(&x.t, build, ns) == 0))
		goto out_free;
	if (!CHECK(attach(&x)))
		goto out_stop;
	for (x.steps = 0; x.steps < nsteps; x.steps++) {
		unsigned int pick = rnd(&x, total), k = 0;
		uint64_t t0 = now_us(), dt;

		while (pick >= steps[k].weight)
			pick -= steps[k++].weight;
		x.last_step = steps[k].name;
		steps[k].fn(&x);
		dt = now_us() - t0;
		if (dt > x.max_step_us)
			x.max_step_us = dt;
		if (!nvme_itest_alive(&x.t) || !x.t.c || dt > STEP_BOUND_US) {
			fprintf(stderr, "  seed %u: step %llu (%s) %s after %llu us\n", seed,
				(unsigned long long)x.steps, x.last_step,
				x.t.c && nvme_itest_alive(&x.t) ? "took too long" : "lost the daemon",
				(unsigned long long)dt);
			CHECK(!"torture step");
			goto out_stop;
		}
	}
	/* Recovery: a fresh client with every window mapped gets a working controller. */
	nvme_itest_detach(&x.t);
	for (i = 0; i < NWIN; i++)
		x.w[i].mapped = true;
	if (CHECK(attach(&x))) {
		uint8_t *buf = x.w[WIN_DATA].local;

		x.t.h.timeout_ms = 5000;
		st_enable(&x);
		CHECK(x.enabled);
		place_queues(&x);
		CHECK(nvme_host_create_io_queues(&x.t.h, 1, QDEPTH, true, 1) == 0);
		for (unsigned int k = 0; k < 65536; k++)
			buf[k] = (uint8_t)(k * 7 + seed);
		CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_WRITE, 1, 1024, 128, win_iova(WIN_DATA),
				   65536) == 0);
		memset(buf, 0, 65536);
		CHECK(nvme_host_rw(&x.t.h, 1, NVME_CMD_READ, 1, 1024, 128, win_iova(WIN_DATA),
				   65536) == 0);
		for (unsigned int k = 0; k < 65536; k++)
			if (buf[k] != (uint8_t)(k * 7 + seed)) {
				CHECK(!"data read back after the torture");
				break;
			}
	}
	printf("  %llu steps in %.1f s, %llu I/O submitted, %llu completed, longest step %llu us, "
	       "%llu truncations (%llu faults: client dropped)\n",
	       (unsigned long long)x.steps, (now_us() - start) / 1e6,
	       (unsigned long long)x.submitted, (unsigned long long)x.done_ios,
	       (unsigned long long)x.max_step_us, (unsigned long long)x.truncations,
	       (unsigned long long)x.faults);
out_stop:
	{
		bool alive = nvme_itest_alive(&x.t);

		CHECK(alive);
		/* 0 also means the ASan build found nothing (the daemon's exit status). */
		CHECK(nvme_itest_stop(&x.t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
	}
out_free:
	for (i = 0; i < NWIN; i++) {
		munmap(x.w[i].local, win_size[i]);
		close(x.w[i].fd);
	}
}

static const char *g_build;
static uint64_t g_steps;
static uint32_t g_seed;

static void case_trap_fused(const char *build)
{
	static const char *const m[] = { "--doorbells", "trap", "--dpa-harts", "0", NULL };

	run(build, "trap doorbells, fused DPA", m, g_seed, g_steps);
}

static void case_mmap_harts(const char *build)
{
	static const char *const m[] = { "--doorbells", "mmap", "--dpa-harts", "2", "-m", "2",
					 NULL };

	run(build, "mmap doorbells, 2 DPA harts, 2 poll groups", m, g_seed + 1, g_steps);
}

static void case_mmap_fused(const char *build)
{
	static const char *const m[] = { "--doorbells", "mmap", "--dpa-harts", "0", NULL };

	run(build, "mmap doorbells, fused DPA", m, g_seed + 2, g_steps);
}

int main(int argc, char **argv)
{
	const char *s = getenv("TORTURE_STEPS"), *seed = getenv("TORTURE_SEED");

	g_build = argc > 1 ? argv[1] : "build";
	g_steps = s ? strtoull(s, NULL, 0) : 2000;
	g_seed = seed ? (uint32_t)strtoul(seed, NULL, 0) : (uint32_t)time(NULL);
	signal(SIGPIPE, SIG_IGN);
	itest_run("trap_fused", case_trap_fused, g_build);
	itest_run("mmap_harts", case_mmap_harts, g_build);
	itest_run("mmap_fused", case_mmap_fused, g_build);
	return itest_summary();
}
