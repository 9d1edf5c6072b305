/* tests/integration/nvme_itest.h - harness of the controller integration
 * tests: the real nvme-emu daemon as a child process on a temporary socket,
 * a vfio-user test client with guest RAM, and the test NVMe host driver. */
#ifndef NVME_EMU_TESTS_INTEGRATION_NVME_ITEST_H
#define NVME_EMU_TESTS_INTEGRATION_NVME_ITEST_H

#include <sys/types.h>

#include "host/nvme_host.h"
#include "tests/integration/itest.h"

#define NVME_ITEST_RAM_IOVA 0x100000ull
#define NVME_ITEST_RAM_SIZE (64ull << 20)

struct nvme_itest {
	pid_t pid;
	char dir[64], sock[128], log[128];
	struct vfu_client *c;
	struct nvme_host h;
};

/* Daemon arguments every test adds to (set by main from the matrix). */
extern const char *nvme_itest_mode_args[16];

/* Starts build/bin/nvme-emu with the mode args + extra args (NULL-ended),
 * waits for its socket. 0 or -errno. */
int nvme_itest_start(struct nvme_itest *t, const char *build, const char *const *extra);
/* Connects a client, maps guest RAM, sets up `vectors` MSI-X eventfds and
 * the host driver (controller not enabled). 0 or -errno. */
int nvme_itest_attach(struct nvme_itest *t, uint32_t vectors);
void nvme_itest_detach(struct nvme_itest *t);
/* nvme_itest_start, then nvme_itest_attach with `vectors` and the controller enabled with an
 * admin queue of `depth`; the daemon is stopped (its log shown) on failure. 0 or -errno. */
int nvme_itest_up(struct nvme_itest *t, const char *build, const char *const *extra,
		  uint32_t vectors, uint16_t depth);
/* True while the daemon runs. */
bool nvme_itest_alive(struct nvme_itest *t);
/* Stops the daemon (SIGTERM, then SIGKILL after a bound); returns its exit
 * status, or -1 if it had to be killed or died of a signal. Prints its log
 * tail when `show_log`. */
int nvme_itest_stop(struct nvme_itest *t, bool show_log);

/* Calls tests(build) twice, with nvme_itest_mode_args set to trap doorbells, then to mmap
 * doorbells and two poll groups (a "== ..." line before each). */
void nvme_itest_each_mode(const char *build, void (*tests)(const char *build));

/* Runs build/bin/nvme-emu-rpc -s rpc_sock args... (NULL-ended); its standard output goes to
 * out (cap bytes, NUL-terminated; NULL: discarded). 0 when it exits 0, -EIO otherwise. */
int nvme_itest_rpc(const char *build, const char *rpc_sock, const char *const *args, char *out,
		   size_t cap);

#endif
