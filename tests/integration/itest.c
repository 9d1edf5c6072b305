/* tests/integration/itest.c - harness of the hw integration tests (see
 * itest.h): the sample device as a child process, its control lines, test
 * clients, check counting. */
#include "tests/integration/itest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned int itest_passed, itest_failed;
static unsigned int itest_case_failures;

static int64_t itest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool itest_check(bool ok, const char *expr, const char *file, int line)
{
	if (!ok) {
		fprintf(stderr, "  CHECK FAILED %s:%d: %s\n", file, line, expr);
		itest_case_failures++;
	}
	return ok;
}

void itest_run(const char *name, void (*fn)(const char *build), const char *build)
{
	const char *only = getenv("ITEST_ONLY");

	/* ITEST_ONLY=name runs that case alone (debugging, soak loops). */
	if (only && *only && strcmp(only, name))
		return;
	itest_case_failures = 0;
	printf("  Test: %s ...\n", name);
	fflush(stdout);
	fn(build);
	if (itest_case_failures) {
		itest_failed++;
		printf("  Test: %s FAILED (%u checks)\n", name, itest_case_failures);
	} else {
		itest_passed++;
		printf("  Test: %s passed\n", name);
	}
	fflush(stdout);
}

int itest_summary(void)
{
	printf("%u passed, %u failed\n", itest_passed, itest_failed);
	return itest_failed ? 1 : 0;
}

int itest_sample_start(struct itest_sample *s, const char *build, const char *const *args)
{
	int in[2], out[2];
	char prog[256], line[256];
	const char *argv[24];
	int argc = 0;

	memset(s, 0, sizeof(*s));
	s->pid = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/hw-itest-XXXXXX");
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->log_path, sizeof(s->log_path), "%s/device.log", s->dir);
	snprintf(prog, sizeof(prog), "%s/bin/hw-sample-device", build);
	argv[argc++] = prog;
	argv[argc++] = "--socket-dir";
	argv[argc++] = s->dir;
	for (int i = 0; args && args[i] && argc < 22; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		int log = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		if (log >= 0)
			dup2(log, STDERR_FILENO);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->in_fd = in[1];
	s->out_fd = out[0];
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	return itest_sample_expect(s, "READY", line, sizeof(line), ITEST_TIMEOUT_MS);
}

static void itest_dump_log(const struct itest_sample *s)
{
	char buf[4096];
	FILE *f = fopen(s->log_path, "r");
	size_t n;

	if (!f)
		return;
	fprintf(stderr, "---- device log %s ----\n", s->log_path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stderr);
	fprintf(stderr, "---- end of device log ----\n");
	fclose(f);
}

void itest_sample_stop(struct itest_sample *s)
{
	int64_t deadline = itest_now_ms() + ITEST_TIMEOUT_MS;
	char path[256];
	int status = -1;

	if (s->pid > 0) {
		itest_sample_cmd(s, "quit");
		close(s->in_fd);
		while (waitpid(s->pid, &status, WNOHANG) == 0) {
			if (itest_now_ms() > deadline) {
				kill(s->pid, SIGKILL);
				waitpid(s->pid, &status, 0);
				break;
			}
			poll(NULL, 0, 10);
		}
		/* The device must exit cleanly (under ASan: no leak reports). */
		ITEST_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(s->out_fd);
		s->pid = -1;
	}
	if (itest_case_failures)
		itest_dump_log(s);
	unlink(s->log_path);
	for (unsigned int i = 0; i < 64; i++) {
		itest_sample_sock(s, i, path, sizeof(path));
		unlink(path);
	}
	rmdir(s->dir);
}

int itest_sample_cmd(struct itest_sample *s, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return -EINVAL;
	line[n++] = '\n';
	return write(s->in_fd, line, (size_t)n) == n ? 0 : -EPIPE;
}

/* Takes one complete line out of the buffer, if there is one. */
static bool itest_take_line(struct itest_sample *s, char *line, size_t cap)
{
	char *nl = memchr(s->buf, '\n', s->len);
	size_t n;

	if (!nl)
		return false;
	n = (size_t)(nl - s->buf);
	snprintf(line, cap, "%.*s", (int)n, s->buf);
	s->len -= n + 1;
	memmove(s->buf, nl + 1, s->len);
	return true;
}

int itest_sample_expect(struct itest_sample *s, const char *prefix, char *line, size_t cap,
			int timeout_ms)
{
	int64_t deadline = itest_now_ms() + timeout_ms;

	for (;;) {
		while (itest_take_line(s, line, cap))
			if (!strncmp(line, prefix, strlen(prefix)))
				return 0;
		int64_t left = deadline - itest_now_ms();
		struct pollfd p = {.fd = s->out_fd, .events = POLLIN};

		if (left < 0)
			left = 0;
		if (poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		ssize_t n = read(s->out_fd, s->buf + s->len, sizeof(s->buf) - s->len);

		if (n == 0)
			return -EPIPE;
		if (n > 0)
			s->len += (size_t)n;
		if (s->len == sizeof(s->buf))
			s->len = 0; /* a line longer than the buffer: drop it */
	}
}

void itest_sample_sock(const struct itest_sample *s, unsigned int i, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/sample-%u.sock", s->dir, i);
}

struct vfu_client *itest_attach(struct itest_sample *s, unsigned int i)
{
	char path[256], want[64], line[256];
	struct vfu_client *c;

	itest_sample_sock(s, i, path, sizeof(path));
	c = vfu_client_connect(path, ITEST_TIMEOUT_MS);
	if (!ITEST_CHECK(c != NULL))
		return NULL;
	if (!ITEST_CHECK(vfu_client_negotiate(c) == 0)) {
		vfu_client_close(c);
		return NULL;
	}
	/* Prefix match would also take POWER_ON_PENDING: compare whole lines. */
	snprintf(want, sizeof(want), "EVENT sample-%u hotplug POWER_ON", i);
	for (;;) {
		if (!ITEST_CHECK(
			itest_sample_expect(s, want, line, sizeof(line), ITEST_TIMEOUT_MS) == 0)) {
			vfu_client_close(c);
			return NULL;
		}
		if (strcmp(line, want))
			continue; /* POWER_ON_PENDING */
		/* As a driver's pci_enable_device + pci_set_master: the function decodes its
		 * BARs and may DMA only with COMMAND's memory space and bus master bits set. */
		if (itest_enable(c)) {
			vfu_client_close(c);
			return NULL;
		}
		return c;
	}
}

int itest_enable(struct vfu_client *c)
{
	return itest_cfg_wr(c, ITEST_PCI_COMMAND, ITEST_PCI_COMMAND_MEM | ITEST_PCI_COMMAND_MASTER, 2);
}

uint32_t itest_bar_rd32(struct vfu_client *c, uint64_t off)
{
	uint32_t v = 0xdeadbeef;

	ITEST_CHECK(vfu_client_region_read(c, 0, off, &v, 4) == 0);
	return v;
}

int itest_bar_wr32(struct vfu_client *c, uint64_t off, uint32_t v, bool posted)
{
	int rc = vfu_client_region_write(c, 0, off, &v, 4, posted);

	ITEST_CHECK(rc == 0);
	return rc;
}

uint32_t itest_cfg_rd(struct vfu_client *c, uint32_t off, uint32_t len)
{
	uint32_t v = 0;

	ITEST_CHECK(vfu_client_region_read(c, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, len) == 0);
	return v;
}

int itest_cfg_wr(struct vfu_client *c, uint32_t off, uint32_t v, uint32_t len)
{
	int rc = vfu_client_region_write(c, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, len, false);

	ITEST_CHECK(rc == 0);
	return rc;
}

bool itest_wait_reg(struct vfu_client *c, uint64_t off, uint32_t want, int timeout_ms)
{
	int64_t deadline = itest_now_ms() + timeout_ms;

	for (;;) {
		uint32_t v = 0;

		if (vfu_client_region_read(c, 0, off, &v, 4) == 0 && v == want)
			return true;
		if (itest_now_ms() > deadline)
			return false;
		vfu_client_serve(c, 10);
	}
}
