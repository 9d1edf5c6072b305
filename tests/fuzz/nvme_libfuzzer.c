/* tests/fuzz/nvme_libfuzzer.c - libFuzzer target over the whole function in this process: the
 * vfio-user endpoint, the device model, the NVMe controller with a poll group and its DPA
 * threads, on a RAM bdev. Each input is one client session: the first byte picks a prelude
 * (negotiate; map guest RAM, a sealed memfd; enable the controller and create an I/O queue pair
 * with the host driver), then the rest goes to the socket as raw messages - lifecycle ones
 * included (tests/fuzz/nvme.dict: DMA_MAP/UNMAP, DEVICE_RESET, SET_IRQS, config FLR, CC writes,
 * doorbells) - and the session hangs up. The server must answer or drop us, never hang (every
 * session bounded), crash, leak or touch memory it should not (ASan/UBSan). */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"
#include "host/nvme_host.h"
#include "host/vfu_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FUZZ_RAM_IOVA 0x100000ull
#define FUZZ_RAM_SIZE (4u << 20)

struct fuzz_server {
	struct evloop *loop;
	pthread_t thread;
	struct dpa *dpa;
	struct pcie_poll_groups *pgs;
	struct pcie_ctrlr *pc;
	char path[108];
	bool ready; /* atomic */
	int rc;
};

static struct fuzz_server srv;

/* The server thread owns everything it creates (as the daemon's main thread does). */
static void *fuzz_server_main(void *arg)
{
	struct fuzz_server *s = arg;
	struct pcie_ctrlr_opts o = {
	    .vuid = "fuzz-0",
	    .socket_path = s->path,
	    .db_mode = HW_DB_MODE_TRAP,
	    .profile = hw_profile_find("unlimited"),
	    .ctrlr = {.serial = "FUZZ0001", .max_io_queues = 4},
	};
	struct bdev *bdev;

	s->dpa = dpa_create(0);
	s->pgs = s->dpa ? pcie_poll_groups_create(1, s->dpa) : NULL;
	s->rc = !s->pgs || bdev_malloc_create("fuzz0", 8192, 512, NULL, &bdev) ||
		pcie_ctrlr_create(s->loop, s->pgs, s->dpa, &o, &s->pc) ||
		ctrlr_ns_add(pcie_ctrlr_core(s->pc), 1, bdev, NULL) != 1 || pcie_ctrlr_start(s->pc);
	__atomic_store_n(&s->ready, true, __ATOMIC_RELEASE);
	if (!s->rc)
		evloop_run(s->loop);
	return NULL;
}

static void fuzz_start(void)
{
	log_set_level(LOG_LEVEL_DISABLE);
	snprintf(srv.path, sizeof(srv.path), "/tmp/nvme-libfuzzer-%d.sock", (int)getpid());
	srv.loop = evloop_create();
	if (!srv.loop || pthread_create(&srv.thread, NULL, fuzz_server_main, &srv))
		abort();
	while (!__atomic_load_n(&srv.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (srv.rc)
		abort();
}

/* Sends data while draining replies, then half-closes and reads until the server closes (it
 * must: EOF on its side ends the session). A signal interrupting poll is not a hang. */
static void fuzz_stream(int sock, const uint8_t *data, size_t len)
{
	uint8_t junk[65536];
	size_t sent = 0;
	bool shut = false;

	for (;;) {
		struct pollfd p = {.fd = sock, .events = POLLIN | (shut ? 0 : POLLOUT)};
		int rc = poll(&p, 1, 10000);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			fprintf(stderr, "server stuck (poll %d)\n", rc);
			abort();
		}
		if (p.revents & POLLIN) {
			ssize_t n = recv(sock, junk, sizeof(junk), MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				return;
		}
		if (!shut && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = 0;

			if (sent < len)
				n = send(sock, data + sent, len - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return;
			if (n > 0)
				sent += (size_t)n;
			if (sent == len) {
				shutdown(sock, SHUT_WR);
				shut = true;
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfu_client *c;
	struct nvme_host h;
	uint8_t mode;

	if (!srv.loop)
		fuzz_start();
	if (!size)
		return 0;
	mode = data[0];
	/* The previous session is torn down asynchronously: this connection waits in the
	 * backlog until then, so negotiate with a bound that would only be hit by a hang. */
	c = vfu_client_connect(srv.path, 10000);
	if (!c)
		abort();
	vfu_client_set_timeout(c, 10000);
	if (mode & 1) {
		if (vfu_client_negotiate(c))
			abort();
		if ((mode & 2) && vfu_client_ram_create(c, FUZZ_RAM_IOVA, FUZZ_RAM_SIZE))
			abort();
		/* A working controller and queue pair, so doorbells and commands get far. */
		if ((mode & 6) == 6) {
			if (nvme_host_init(&h, c, FUZZ_RAM_IOVA, FUZZ_RAM_SIZE, (mode & 8) ? 3 : 0))
				abort();
			h.timeout_ms = 2000;
			if (nvme_host_enable(&h, 32) ||
			    nvme_host_create_io_queues(&h, 1, 32, (mode & 8) != 0, 1))
				abort();
		}
	}
	fuzz_stream(vfu_client_fd(c), data + 1, size - 1);
	vfu_client_close(c);
	return 0;
}
