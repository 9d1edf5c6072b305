/* tests/integration/itest.h - harness of the hw integration tests: spawns
 * hw-sample-device on a temporary socket directory, talks to its stdin /
 * stdout control interface, attaches test clients, counts test cases. */
#ifndef NVME_EMU_TESTS_INTEGRATION_ITEST_H
#define NVME_EMU_TESTS_INTEGRATION_ITEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "host/vfu_client.h"

#define ITEST_TIMEOUT_MS 5000

struct itest_sample {
	pid_t pid;
	int in_fd, out_fd;
	char buf[16384];
	size_t len;
	char dir[128];
	char log_path[192];
};

/* Starts build/bin/hw-sample-device with --socket-dir <tmp> and the extra
 * arguments (NULL-terminated), waits for its READY line. 0 or -errno. */
int itest_sample_start(struct itest_sample *s, const char *build, const char *const *args);
/* Asks it to quit, reaps it (killing it after a bound), removes the dir. */
void itest_sample_stop(struct itest_sample *s);
/* Sends one command line. */
int itest_sample_cmd(struct itest_sample *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reads output lines until one starts with prefix (others are skipped),
 * copying it to line. 0, or -ETIMEDOUT after timeout_ms (0: only what is
 * already there), -EPIPE if the device exited. */
int itest_sample_expect(struct itest_sample *s, const char *prefix, char *line, size_t cap,
			int timeout_ms);
/* Socket path of device i. */
void itest_sample_sock(const struct itest_sample *s, unsigned int i, char *buf, size_t cap);
/* Connects to device i, negotiates and waits for its POWER_ON event. */
struct vfu_client *itest_attach(struct itest_sample *s, unsigned int i);

/* Sets COMMAND memory space + bus master (done by itest_attach; again after an FLR). */
#define ITEST_PCI_COMMAND 0x04u
#define ITEST_PCI_COMMAND_MEM 0x2u
#define ITEST_PCI_COMMAND_MASTER 0x4u
int itest_enable(struct vfu_client *c);
uint32_t itest_bar_rd32(struct vfu_client *c, uint64_t off);
int itest_bar_wr32(struct vfu_client *c, uint64_t off, uint32_t v, bool posted);
uint32_t itest_cfg_rd(struct vfu_client *c, uint32_t off, uint32_t len);
int itest_cfg_wr(struct vfu_client *c, uint32_t off, uint32_t v, uint32_t len);
/* Polls a BAR0 register until it reads `want` (serving server DMA requests
 * meanwhile), for up to timeout_ms. true when reached. */
bool itest_wait_reg(struct vfu_client *c, uint64_t off, uint32_t want, int timeout_ms);

/* Checks and cases: a case passes when none of its checks failed. */
bool itest_check(bool ok, const char *expr, const char *file, int line);
#define ITEST_CHECK(cond) itest_check((cond), #cond, __FILE__, __LINE__)
void itest_run(const char *name, void (*fn)(const char *build), const char *build);
/* Prints "N passed, N failed" and returns the exit status. */
int itest_summary(void);

#endif
