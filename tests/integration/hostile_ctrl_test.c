/* tests/integration/hostile_ctrl_test.c - the hostile-client findings of issue 11, each through
 * the real socket: one daemon serves function A (the hostile client's) and function B (a
 * "witness" thread doing verified I/O all along). Every case checks that the daemon survives,
 * that the hostile client gets an error or is cut off, that B's I/O never stalls (max latency
 * under a second) and - under the ASan build - that nothing is reported (the daemon's exit status
 * says so). */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK ITEST_CHECK
#define ST_MASK 0x7ff
#define WITNESS_NQN "nqn.2026-11.io.nvme-emu:witness"
/*
 * A hang guard, not a speed bound: below Linux's 30 s I/O timeout, so a witness I/O held by the
 * hostile function (a synchronous wait, a stalled thread) fails here. Progress after each hostile
 * step is checked by witness_progress; one I/O took 1.1 s under ASan at load 8 with nothing stalled.
 */
#define WITNESS_MAX_LAT_US 25000000u
#define EXTRA_IOVA 0x40000000ull /* windows of our own, away from the harness's RAM */

static const char *g_build;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- the daemon with two functions ---- */

struct two {
	struct nvme_itest t; /* function A: t.sock, the hostile client's */
	char rpc[160], wsock[160];
};

/* Runs nvme-emu-rpc against the daemon; 0 when it exits 0. */
static int rpc_cli(struct two *x, const char *const *args)
{
	return nvme_itest_rpc(g_build, x->rpc, args, NULL, 0);
}

/* Starts the daemon: A from the command line (extra args added), B through JSON-RPC. */
static bool two_start(struct two *x, const char *const *extra)
{
	const char *args[24] = { "--malloc", "16M", "--serial", "HOSTILE-A" };
	int n = 4;
	char dir[64];

	for (int i = 0; extra && extra[i] && n < 20; i++)
		args[n++] = extra[i];
	/* nvme_itest_start makes the directory: the RPC socket goes beside A's. */
	snprintf(x->rpc, sizeof(x->rpc), "/tmp/.hostile-rpc-%d-%ld.sock", getpid(), (long)now_us());
	args[n++] = "-r";
	args[n++] = x->rpc;
	args[n] = NULL;
	if (!CHECK(nvme_itest_start(&x->t, g_build, args) == 0))
		return false;
	snprintf(dir, sizeof(dir), "%s", x->t.dir);
	snprintf(x->wsock, sizeof(x->wsock), "%s/witness.sock", dir);
	{
		const char *m1[] = { "bdev_malloc_create", "--name", "W0", "--num_blocks", "8192",
				     "--block_size", "512", NULL };
		const char *m2[] = { "nvmf_create_subsystem", "--nqn", WITNESS_NQN, "--serial_number",
				     "\"WITNESS-1\"", NULL };
		const char *m3[] = { "nvmf_subsystem_add_ns", "--nqn", WITNESS_NQN,
				     "--namespace.bdev_name", "W0", NULL };
		const char *m4[] = { "nvmf_subsystem_add_listener", "--nqn", WITNESS_NQN,
				     "--listen_address.trtype", "PCIE_EMU",
				     "--listen_address.traddr", x->wsock, NULL };

		if (!CHECK(rpc_cli(x, m1) == 0) || !CHECK(rpc_cli(x, m2) == 0) ||
		    !CHECK(rpc_cli(x, m3) == 0) || !CHECK(rpc_cli(x, m4) == 0)) {
			nvme_itest_stop(&x->t, true);
			return false;
		}
	}
	return true;
}

static void two_stop(struct two *x)
{
	bool alive = nvme_itest_alive(&x->t);

	CHECK(alive);
	/* Exit status 0 also means ASan/UBSan found nothing in the ASan build. */
	CHECK(nvme_itest_stop(&x->t, !alive || getenv("ITEST_SHOW_LOG")) == 0);
	unlink(x->rpc);
}

/* ---- the witness: verified 4 KiB writes and reads on function B, all along ---- */

struct witness {
	pthread_t th;
	struct vfu_client *c;
	struct nvme_host h;
	bool stop; /* atomic */
	uint64_t ios, errors, max_lat_us; /* atomic */
	bool running;
};

static void *witness_main(void *arg)
{
	struct witness *w = arg;
	uint8_t *buf, *expect = malloc(4096);
	uint64_t iova = nvme_host_alloc(&w->h, 4096, (void **)&buf);
	uint32_t seed = 1;

	for (uint64_t i = 0; expect && iova && !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE); i++) {
		uint64_t lba = (i % 512) * 8, t0 = now_us(), lat;
		int st;

		for (unsigned int k = 0; k < 4096; k++) {
			seed = seed * 1103515245u + 12345u;
			expect[k] = buf[k] = (uint8_t)(seed >> 16);
		}
		st = nvme_host_rw(&w->h, 1, NVME_CMD_WRITE, 1, lba, 8, iova, 4096);
		memset(buf, 0, 4096);
		if (!st)
			st = nvme_host_rw(&w->h, 1, NVME_CMD_READ, 1, lba, 8, iova, 4096);
		if (st || memcmp(buf, expect, 4096))
			__atomic_add_fetch(&w->errors, 1, __ATOMIC_RELAXED);
		lat = now_us() - t0;
		if (lat > __atomic_load_n(&w->max_lat_us, __ATOMIC_RELAXED))
			__atomic_store_n(&w->max_lat_us, lat, __ATOMIC_RELAXED);
		__atomic_add_fetch(&w->ios, 1, __ATOMIC_RELEASE);
	}
	free(expect);
	return NULL;
}

static bool witness_start(struct witness *w, const char *sock)
{
	memset(w, 0, sizeof(*w));
	w->c = vfu_client_connect(sock, 5000);
	if (!CHECK(w->c != NULL))
		return false;
	if (!CHECK(vfu_client_negotiate(w->c) == 0) ||
	    !CHECK(vfu_client_ram_create(w->c, NVME_ITEST_RAM_IOVA, 4u << 20) == 0) ||
	    !CHECK(nvme_host_init(&w->h, w->c, NVME_ITEST_RAM_IOVA, 4u << 20, 2) == 0) ||
	    !CHECK(nvme_host_enable(&w->h, 32) == 0) ||
	    !CHECK(nvme_host_create_io_queues(&w->h, 1, 32, true, 1) == 0) ||
	    !CHECK(pthread_create(&w->th, NULL, witness_main, w) == 0)) {
		vfu_client_close(w->c);
		return false;
	}
	w->running = true;
	return true;
}

/* I/O the witness completed so far. */
static uint64_t witness_ios(struct witness *w)
{
	return __atomic_load_n(&w->ios, __ATOMIC_ACQUIRE);
}

/* Waits (bounded) until the witness completed `n` more I/Os: it was not stalled. */
static bool witness_progress(struct witness *w, uint64_t n)
{
	uint64_t start = witness_ios(w), deadline = now_us() + 5000000;

	while (witness_ios(w) < start + n && now_us() < deadline)
		usleep(1000);
	return witness_ios(w) >= start + n;
}

static void witness_stop(struct witness *w)
{
	if (!w->running)
		return;
	__atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
	pthread_join(w->th, NULL);
	CHECK(w->ios > 0);
	CHECK(w->errors == 0);
	if (!CHECK(w->max_lat_us < WITNESS_MAX_LAT_US))
		fprintf(stderr, "  witness max latency %llu us\n", (unsigned long long)w->max_lat_us);
	vfu_client_close(w->c);
	w->running = false;
}

/* ---- helpers of the hostile client ---- */

/* A sealed memfd of `size` bytes mapped here too (the "guest memory" of an extra window). */
static int sealed_memfd(size_t size, void **local)
{
	int fd = memfd_create("hostile-win", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	*local = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return *local == MAP_FAILED ? -1 : fd;
}

/* Enabled controller, I/O queue pair 1 in the harness RAM. */
static bool a_setup(struct two *x, uint32_t vectors)
{
	int rc = nvme_itest_attach(&x->t, vectors);

	if (!CHECK(rc == 0)) {
		fprintf(stderr, "  attach: %s\n", strerror(-rc));
		return false;
	}
	return CHECK(nvme_host_enable(&x->t.h, 32) == 0) &&
	       CHECK(nvme_host_create_io_queues(&x->t.h, 1, 32, vectors > 1, 1) == 0);
}

static int a_rw(struct two *x, uint16_t qid, uint8_t opc)
{
	uint8_t *buf;
	uint64_t iova = nvme_host_alloc(&x->t.h, 4096, (void **)&buf);

	return iova ? nvme_host_rw(&x->t.h, qid, opc, 1, 0, 8, iova, 4096) : -ENOMEM;
}

/* Places queue qid's rings in [iova, iova + 8 KiB) of an extra window (local view `local`):
 * nvme_host_create_io_queues then uses them. */
static void a_rings_at(struct two *x, uint16_t qid, uint64_t iova, uint8_t *local)
{
	struct nvme_host_queue *q = &x->t.h.q[qid];

	q->sq_iova = iova;
	q->sq = (struct nvme_sqe *)local;
	q->cq_iova = iova + 4096;
	q->cq = (struct nvme_cqe *)(local + 4096);
	q->depth = 32;
}

/* ---- finding 1: shadow doorbells and rings used after their memory was unmapped ---- */

static void test_unmap_dbbuf_and_rings(const char *build)
{
	static const char *const mmap_args[] = { NULL };
	struct two x;
	struct witness w;
	uint8_t *win, *rings;
	int fd, rfd;
	uint16_t cid;
	struct nvme_sqe sqe = { 0 };
	struct nvme_cqe cqe;

	if (!two_start(&x, mmap_args))
		return;
	if (!witness_start(&w, x.wsock) || !a_setup(&x, 3))
		goto out;
	/* Shadow doorbell pages in a window of their own. */
	fd = sealed_memfd(0x10000, (void **)&win);
	CHECK(fd >= 0);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, fd, 0) == 0);
	sqe.cdw0.bits.opc = NVME_ADM_DBBUF;
	sqe.dptr.prp.prp1 = EXTRA_IOVA;
	sqe.dptr.prp.prp2 = EXTRA_IOVA + 0x1000;
	CHECK(nvme_host_cmd(&x.t.h, 0, &sqe, NULL) == 0);
	/* The host keeps the shadow tail current, as Linux does. */
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_CMD_READ;
	sqe.nsid = 1;
	sqe.cdw12 = 7;
	nvme_host_build_prps(&x.t.h, &sqe, NVME_ITEST_RAM_IOVA + (8u << 20), 4096);
	cid = (uint16_t)nvme_host_submit(&x.t.h, 1, &sqe, true);
	((volatile uint32_t *)win)[2] = x.t.h.q[1].sq_tail;
	nvme_host_ring(&x.t.h, 2, x.t.h.q[1].sq_tail);
	for (int i = 0; i < 1000 && nvme_host_reap(&x.t.h, 1, &cqe) == 0; i++)
		usleep(1000);
	CHECK(cqe.cid == cid && (cqe.status >> 1) == 0);
	/* The guest takes the pages away: the controller drops shadow doorbells and never
	 * touches them again (SEGV in ctrlr_cq_dbbuf_attach / ctrlr_sq_refresh_tail before). */
	CHECK(vfu_client_dma_unmap(x.t.c, EXTRA_IOVA, 0x10000, 0) == 0);
	memset(win, 0xee, 0x2000);
	for (int i = 0; i < 20; i++)
		CHECK(a_rw(&x, 1, i & 1 ? NVME_CMD_READ : NVME_CMD_WRITE) == 0);
	for (unsigned int i = 0; i < 0x2000; i++)
		if (win[i] != 0xee) {
			CHECK(!"shadow doorbell page written after its unmap");
			break;
		}
	munmap(win, 0x10000);
	close(fd);

	/* Rings in a window of their own: unmapped with a command queued, the queue is
	 * detached (doorbells do nothing); mapped again (same memory), it resumes. */
	rfd = sealed_memfd(0x2000, (void **)&rings);
	CHECK(rfd >= 0);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA + 0x100000, 0x2000, 3, rfd, 0) == 0);
	a_rings_at(&x, 2, EXTRA_IOVA + 0x100000, rings);
	CHECK(nvme_host_create_io_queues(&x.t.h, 2, 32, false, 0) == 0);
	CHECK(a_rw(&x, 2, NVME_CMD_WRITE) == 0);
	CHECK(vfu_client_dma_unmap(x.t.c, EXTRA_IOVA + 0x100000, 0x2000, 0) == 0);
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_CMD_READ;
	sqe.nsid = 1;
	sqe.cdw12 = 7;
	nvme_host_build_prps(&x.t.h, &sqe, NVME_ITEST_RAM_IOVA + (9u << 20), 4096);
	cid = (uint16_t)nvme_host_submit(&x.t.h, 2, &sqe, false);
	usleep(20000);
	CHECK(nvme_host_reap(&x.t.h, 2, &cqe) == 0); /* detached: nothing fetched */
	CHECK(witness_progress(&w, 20));
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA + 0x100000, 0x2000, 3, rfd, 0) == 0);
	for (int i = 0; i < 2000 && nvme_host_reap(&x.t.h, 2, &cqe) == 0; i++)
		usleep(1000);
	CHECK(cqe.cid == cid && (cqe.status >> 1) == 0);
	CHECK(a_rw(&x, 2, NVME_CMD_READ) == 0);
	munmap(rings, 0x2000);
	close(rfd);
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- finding 2: which fds the client may share as guest memory ---- */

/* Files of tmpfs and hugetlbfs are taken, sealed or not (a truncation under our mapping is
 * contained: see shrunk_memory); files of other file systems, whose page faults would wait for
 * their I/O in a device thread, and device nodes only with --allow-any-dma-fd. */
static void test_dma_fd_policy(const char *build)
{
	struct two x;
	struct witness w;
	void *local;
	char path[96];
	int fd, plain, disk, dev;

	snprintf(path, sizeof(path), "/var/tmp/hostile-disk-%d.img", getpid());
	if (!two_start(&x, NULL))
		return;
	if (!witness_start(&w, x.wsock) || !a_setup(&x, 0))
		goto out;
	disk = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(disk >= 0 && ftruncate(disk, 0x10000) == 0);
	dev = open("/dev/zero", O_RDWR | O_CLOEXEC);
	CHECK(dev >= 0);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, disk, 0) == -EPERM);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, dev, 0) == -EPERM);
	/* A sealed memfd is taken, and the client cannot shrink it any more. */
	fd = sealed_memfd(0x10000, &local);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, fd, 0) == 0);
	CHECK(ftruncate(fd, 0) == -1 && errno == EPERM);
	/* A command with data there works. */
	{
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = NVME_CMD_READ;
		sqe.nsid = 1;
		sqe.cdw12 = 7;
		sqe.dptr.prp.prp1 = EXTRA_IOVA;
		CHECK(nvme_host_cmd(&x.t.h, 1, &sqe, NULL) == 0);
	}
	/* So is an unsealed one (DPDK's hugepage files, memory-backend-file on /dev/shm). */
	plain = memfd_create("hostile-plain", MFD_CLOEXEC);
	CHECK(plain >= 0 && ftruncate(plain, 0x10000) == 0);
	CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA + 0x100000, 0x10000, 3, plain, 0) == 0);
	CHECK(witness_progress(&w, 10));
	munmap(local, 0x10000);
	close(fd);
	close(plain);
	witness_stop(&w);
	two_stop(&x);
	/* The operator may trust the VMM with any fd. */
	{
		static const char *const trust[] = { "--allow-any-dma-fd", NULL };

		if (two_start(&x, trust)) {
			if (CHECK(nvme_itest_attach(&x.t, 0) == 0)) {
				CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, disk, 0) ==
				      0);
				CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA + 0x100000, 0x10000, 3,
							 dev, 0) == 0);
			}
			two_stop(&x);
		}
	}
	close(disk);
	close(dev);
	unlink(path);
	return;
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- guest memory truncated under the device's mapping (SIGBUS) ---- */

/* True once the daemon has hung up on function A's client (bounded wait). */
static bool a_dropped(struct two *x)
{
	for (int i = 0; i < 500; i++) {
		uint32_t csts;

		if (vfu_client_region_read(x->t.c, 0, 0x1c, &csts, sizeof(csts)) < 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* Whether a line of the daemon's log holds `needle` (the whole log, however long). */
static bool log_has(struct two *x, const char *needle)
{
	FILE *f = fopen(x->t.log, "r");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) >= 0)
		found = strstr(line, needle) != NULL;
	free(line);
	fclose(f);
	return found;
}

/* The client truncates an unsealed memfd after DMA_MAP, then points the device at it: the
 * bdev's copy into a data buffer (round 0), the SQ fetch of a queue whose rings are there
 * (round 1), the copy out of a buffer for a write (round 2). Any of them took the daemon down
 * with SIGBUS. Now the window turns into anonymous memory, the client is dropped with a log line
 * naming the window, the other function never stalls, and the function serves the next client. */
static void test_shrunk_memory(const char *build)
{
	static const char *const trust[] = { "--allow-unsealed-dma", NULL };
	struct two x;
	struct witness w;
	uint64_t faults_seen = 0;

	/* With the flag of old too (then the only way to map an unsealed fd). */
	for (int cfg = 0; cfg < 2; cfg++) {
		if (!two_start(&x, cfg ? trust : NULL))
			return;
		if (!witness_start(&w, x.wsock))
			goto out;
		for (int round = 0; round < 3; round++) {
			struct nvme_sqe sqe = { 0 };
			int plain = memfd_create("hostile-shrunk", MFD_CLOEXEC);
			uint8_t *rings;

			if (!CHECK(a_setup(&x, 0)) || !CHECK(plain >= 0) ||
			    !CHECK(ftruncate(plain, 0x10000) == 0))
				break;
			CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 0x10000, 3, plain, 0) == 0);
			sqe.nsid = 1;
			sqe.cdw12 = 7;
			if (round == 1) {
				rings = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED, plain,
					     0);
				CHECK(rings != MAP_FAILED);
				a_rings_at(&x, 2, EXTRA_IOVA, rings);
				CHECK(nvme_host_create_io_queues(&x.t.h, 2, 32, false, 0) == 0);
				CHECK(a_rw(&x, 2, NVME_CMD_WRITE) == 0);
				munmap(rings, 0x2000);
				CHECK(ftruncate(plain, 0) == 0);
				/* A tail the device must fetch from the gone ring. */
				nvme_host_ring(&x.t.h, 4, (uint16_t)((x.t.h.q[2].sq_tail + 1) % 32));
			} else {
				sqe.cdw0.bits.opc = NVME_CMD_READ;
				sqe.dptr.prp.prp1 = EXTRA_IOVA;
				CHECK(nvme_host_cmd(&x.t.h, 1, &sqe, NULL) == 0);
				CHECK(ftruncate(plain, 0) == 0);
				sqe.cdw0.bits.opc = round ? NVME_CMD_WRITE : NVME_CMD_READ;
				nvme_host_submit(&x.t.h, 1, &sqe, false);
			}
			CHECK(a_dropped(&x));
			CHECK(nvme_itest_alive(&x.t));
			nvme_itest_detach(&x.t);
			close(plain);
			faults_seen++;
			CHECK(witness_progress(&w, 10));
		}
		CHECK(log_has(&x, "lost its memory under a device access"));
		{
			static const char *const stats[] = { "nvmf_get_stats", NULL };
			char out[65536];

			CHECK(nvme_itest_rpc(g_build, x.rpc, stats, out, sizeof(out)) == 0);
			CHECK(strstr(out, "\"dma_faults\": 3") != NULL);
		}
		/* The function serves the next client. */
		if (a_setup(&x, 0))
			CHECK(a_rw(&x, 1, NVME_CMD_READ) == 0);
		CHECK(faults_seen == 3);
		faults_seen = 0;
out:
		witness_stop(&w);
		two_stop(&x);
	}
}

/* ---- finding 3: our own BAR memfd shrunk by the client (SIGBUS) ---- */

static void test_bar_memfd_sealed(const char *build)
{
	static const char *const mmap_args[] = { "--doorbells", "mmap", NULL };
	struct vfu_client_region r;
	struct two x;
	struct witness w;

	if (!two_start(&x, mmap_args))
		return;
	if (!witness_start(&w, x.wsock) || !a_setup(&x, 0))
		goto out;
	CHECK(vfu_client_region_info(x.t.c, 0, &r) == 0);
	/* The query mapped the areas afresh: the host driver's doorbell pointer moves too. */
	x.t.h.db_page = vfu_client_region_ptr(x.t.c, 0, 0x1000, 0x1000);
	CHECK(x.t.h.db_page != NULL);
	if (CHECK(r.fd >= 0)) {
		int seals = fcntl(r.fd, F_GET_SEALS);

		CHECK(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW));
		CHECK(ftruncate(r.fd, 0) == -1 && errno == EPERM);
		CHECK(ftruncate(r.fd, 1 << 20) == -1 && errno == EPERM);
	}
	/* The doorbell page still works. */
	for (int i = 0; i < 10; i++)
		CHECK(a_rw(&x, 1, NVME_CMD_WRITE) == 0);
	CHECK(witness_progress(&w, 10));
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- finding 4: a blocking fd as interrupt fd stalls the whole daemon ---- */

static void test_irq_fds(const char *build)
{
	static const char *const rpc_ping[] = { "rpc_get_methods", NULL };
	struct two x;
	struct witness w;
	int p[2], sv[2], efd;
	uint32_t flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;

	if (!two_start(&x, NULL))
		return;
	if (!witness_start(&w, x.wsock) || !a_setup(&x, 3))
		goto out;
	CHECK(pipe(p) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* Only eventfds: a pipe or a socket could fill up and block a write. */
	CHECK(vfu_client_set_irqs(x.t.c, flags, 2, 1, 1, &p[1], 1, NULL) == -EINVAL);
	CHECK(vfu_client_set_irqs(x.t.c, flags, 2, 1, 1, &sv[0], 1, NULL) == -EINVAL);
	CHECK(vfu_client_set_irqs(x.t.c, flags, 4 /* ERR */, 0, 1, &p[1], 1, NULL) == -EINVAL);
	/* An eventfd whose counter is full: raising must not block (EAGAIN = pending). */
	efd = eventfd(0, EFD_CLOEXEC);
	{
		uint64_t full = 0xfffffffffffffffeull;

		CHECK(write(efd, &full, sizeof(full)) == sizeof(full));
	}
	CHECK(vfu_client_set_irqs(x.t.c, flags, 2, 1, 1, &efd, 1, NULL) == 0);
	for (int i = 0; i < 50; i++)
		CHECK(a_rw(&x, 1, NVME_CMD_WRITE) == 0);
	/* Meanwhile the rest of the daemon answers: JSON-RPC and the other function. */
	CHECK(rpc_cli(&x, rpc_ping) == 0);
	CHECK(witness_progress(&w, 10));
	close(efd);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- finding 5: FLR then hang-up with backend I/O in flight ---- */

static void test_flr_then_hangup(const char *build)
{
	char file[128], arg[160];
	const char *aio_args[] = { "--aio", arg, NULL };
	struct two x;
	struct witness w;

	snprintf(file, sizeof(file), "/tmp/hostile-aio-%d.img", getpid());
	snprintf(arg, sizeof(arg), "%s:64M", file);
	if (!two_start(&x, aio_args))
		goto out_file;
	if (!witness_start(&w, x.wsock))
		goto out;
	for (int round = 0; round < 4; round++) {
		if (!a_setup(&x, 2))
			break;
		/* 48 writes of 64 KiB at the backend, then an FLR, then gone. */
		for (int i = 0; i < 48; i++) {
			struct nvme_sqe sqe = { 0 };

			sqe.cdw0.bits.opc = NVME_CMD_WRITE;
			sqe.nsid = 1;
			sqe.cdw10 = (uint32_t)i * 128;
			sqe.cdw12 = 127;
			nvme_host_build_prps(&x.t.h, &sqe, NVME_ITEST_RAM_IOVA + (uint64_t)i * 65536,
					     65536);
			nvme_host_submit(&x.t.h, 1, &sqe, false);
		}
		{
			uint16_t flr = 0x8000;

			vfu_client_region_write(x.t.c, 7, 0x48 + 8, &flr, 2, true);
		}
		nvme_itest_detach(&x.t);
		CHECK(nvme_itest_alive(&x.t));
	}
	/* The function is usable afterwards. */
	if (a_setup(&x, 2))
		CHECK(a_rw(&x, 1, NVME_CMD_READ) == 0);
	CHECK(witness_progress(&w, 10));
out:
	witness_stop(&w);
	two_stop(&x);
out_file:
	unlink(file);
}

/* ---- finding 6: DMA_MAP flood ---- */

static void test_dma_map_flood(const char *build)
{
	struct two x;
	struct witness w;
	int ok = 0, fd;
	void *local;

	if (!two_start(&x, NULL))
		return;
	if (!witness_start(&w, x.wsock) || !a_setup(&x, 0))
		goto out;
	/* fd-less windows: the per-client limit (256 windows, the harness RAM is one). */
	for (int i = 0; i < 1000; i++) {
		int rc = vfu_client_dma_map(x.t.c, EXTRA_IOVA + (uint64_t)i * 0x2000, 0x1000, 3, -1,
					    0);

		if (rc) {
			CHECK(rc == -ENOSPC);
			break;
		}
		ok++;
	}
	CHECK(ok == 255);
	CHECK(witness_progress(&w, 10));
	/* A queue whose ring cannot be mapped fails its Create with the status the spec names
	 * (Invalid Field in Command), instead of never completing. */
	{
		struct nvme_sqe sqe = { 0 };

		sqe.cdw0.bits.opc = NVME_ADM_CREATE_CQ;
		sqe.dptr.prp.prp1 = 0x7fff0000000ull;
		sqe.cdw10 = 31u << 16 | 2;
		sqe.cdw11 = 1;
		CHECK((nvme_host_cmd(&x.t.h, 0, &sqe, NULL) & ST_MASK) == NVME_SC_INVALID_FIELD);
		/* In an fd-less window: not something the controller can pin either. */
		sqe.dptr.prp.prp1 = EXTRA_IOVA;
		CHECK((nvme_host_cmd(&x.t.h, 0, &sqe, NULL) & ST_MASK) == NVME_SC_INVALID_FIELD);
	}
	CHECK(vfu_client_dma_unmap(x.t.c, 0, 0, VFIO_USER_DMA_UNMAP_ALL) == 0);
	/* The byte limit holds for fd-backed windows. */
	witness_stop(&w);
	nvme_itest_detach(&x.t);
	two_stop(&x);
	{
		static const char *const small[] = { "--max-dma-bytes", "96M", NULL };

		if (!two_start(&x, small))
			return;
		if (CHECK(nvme_itest_attach(&x.t, 0) == 0)) { /* 64 MiB of RAM */
			fd = sealed_memfd(64u << 20, &local);
			CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 64u << 20, 3, fd, 0) ==
			      -ENOSPC);
			CHECK(vfu_client_dma_map(x.t.c, EXTRA_IOVA, 16u << 20, 3, fd, 0) == 0);
			munmap(local, 64u << 20);
			close(fd);
		}
		two_stop(&x);
	}
	return;
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- finding 9: reconnects with I/O in flight, many times ---- */

static void test_reconnect_inflight(const char *build)
{
	struct two x;
	struct witness w;

	if (!two_start(&x, NULL))
		return;
	if (!witness_start(&w, x.wsock))
		goto out;
	for (int round = 0; round < 20; round++) {
		if (!a_setup(&x, 2))
			break;
		/* The first write after (re)connecting must work: the flaky failure. */
		if (!CHECK(a_rw(&x, 1, NVME_CMD_WRITE) == 0))
			break;
		for (int i = 0; i < 16; i++) {
			struct nvme_sqe sqe = { 0 };

			sqe.cdw0.bits.opc = i & 1 ? NVME_CMD_READ : NVME_CMD_WRITE;
			sqe.nsid = 1;
			sqe.cdw10 = (uint32_t)i * 8;
			sqe.cdw12 = 7;
			nvme_host_build_prps(&x.t.h, &sqe, NVME_ITEST_RAM_IOVA + (uint64_t)i * 4096,
					     4096);
			nvme_host_submit(&x.t.h, 1, &sqe, false);
		}
		nvme_itest_detach(&x.t);
	}
	CHECK(witness_progress(&w, 10));
out:
	witness_stop(&w);
	two_stop(&x);
}

/* ---- admin completions nobody consumes, then gone (found by h14f) ---- */

/* The client rings the admin SQ tail round and round (the ring holds its old commands) and never
 * reads the admin CQ: once the CQ is full the controller holds the completions (it may not
 * overwrite), up to every request of the admin SQ. Then it hangs up. The reset that follows waited
 * for the held admin commands to finish, which only the gone host could allow: the function never
 * came back and the daemon could not stop. A reset discards them. */
static void test_admin_cq_never_consumed(const char *build)
{
	struct two x;
	struct witness w;

	if (!two_start(&x, NULL))
		return;
	if (!witness_start(&w, x.wsock))
		goto out;
	for (int round = 0; round < 3; round++) {
		if (!a_setup(&x, 2))
			break;
		for (uint32_t k = 1; k <= 200; k++)
			nvme_host_ring(&x.t.h, 0, k % 32);
		nvme_itest_detach(&x.t);
		CHECK(nvme_itest_alive(&x.t));
	}
	/* The function is usable afterwards (the reset finished), and the daemon stops cleanly. */
	if (a_setup(&x, 2))
		CHECK(a_rw(&x, 1, NVME_CMD_READ) == 0);
	CHECK(witness_progress(&w, 10));
out:
	witness_stop(&w);
	two_stop(&x);
}

static void run_mode(const char *label, const char *const *mode)
{
	unsigned int i = 0;

	printf("== %s\n", label);
	for (; mode[i] && i < 15; i++)
		nvme_itest_mode_args[i] = mode[i];
	nvme_itest_mode_args[i] = NULL;
	itest_run("unmap_dbbuf_and_rings", test_unmap_dbbuf_and_rings, g_build);
	itest_run("dma_fd_policy", test_dma_fd_policy, g_build);
	itest_run("shrunk_memory", test_shrunk_memory, g_build);
	itest_run("bar_memfd_sealed", test_bar_memfd_sealed, g_build);
	itest_run("irq_fds", test_irq_fds, g_build);
	itest_run("flr_then_hangup", test_flr_then_hangup, g_build);
	itest_run("dma_map_flood", test_dma_map_flood, g_build);
	itest_run("reconnect_inflight", test_reconnect_inflight, g_build);
	itest_run("admin_cq_never_consumed", test_admin_cq_never_consumed, g_build);
}

int main(int argc, char **argv)
{
	static const char *const trap_fused[] = { "--doorbells", "trap", NULL };
	static const char *const mmap_hart[] = { "--doorbells", "mmap", "--dpa-harts", "1", "-m",
						 "2", NULL };
	static const char *const mmap_fused[] = { "--doorbells", "mmap", "--dpa-harts", "0", NULL };

	g_build = argc > 1 ? argv[1] : "build";
	signal(SIGPIPE, SIG_IGN);
	run_mode("trap doorbells, fused DPA", trap_fused);
	run_mode("mmap doorbells, 1 DPA hart, 2 poll groups", mmap_hart);
	run_mode("mmap doorbells, fused DPA", mmap_fused);
	return itest_summary();
}
