/* tests/integration/nvme_itest.c - spawns nvme-emu and attaches the test
 * client and host driver (see nvme_itest.h). */
#include "tests/integration/nvme_itest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *nvme_itest_mode_args[16];

int nvme_itest_start(struct nvme_itest *t, const char *build, const char *const *extra)
{
	const char *argv[40];
	char prog[256];
	int argc = 0;

	memset(t, 0, sizeof(*t));
	t->pid = -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/nvme-itest-XXXXXX");
	if (!mkdtemp(t->dir))
		return -errno;
	snprintf(t->sock, sizeof(t->sock), "%s/nvme.sock", t->dir);
	snprintf(t->log, sizeof(t->log), "%s/daemon.log", t->dir);
	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu", build);
	argv[argc++] = prog;
	argv[argc++] = "--socket";
	argv[argc++] = t->sock;
	for (int i = 0; nvme_itest_mode_args[i] && argc < 20; i++)
		argv[argc++] = nvme_itest_mode_args[i];
	for (int i = 0; extra && extra[i] && argc < 38; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (t->pid == 0) {
		int fd = open(t->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct stat st;

		if (stat(t->sock, &st) == 0)
			return 0;
		if (!nvme_itest_alive(t))
			break;
		usleep(10000);
	}
	nvme_itest_stop(t, true);
	return -ETIMEDOUT;
}

int nvme_itest_up(struct nvme_itest *t, const char *build, const char *const *extra,
		  uint32_t vectors, uint16_t depth)
{
	int rc = nvme_itest_start(t, build, extra);

	if (rc)
		return rc;
	rc = nvme_itest_attach(t, vectors);
	if (!rc)
		rc = nvme_host_enable(&t->h, depth);
	if (rc)
		nvme_itest_stop(t, true);
	return rc;
}

bool nvme_itest_alive(struct nvme_itest *t)
{
	int status;

	if (t->pid <= 0)
		return false;
	if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
		t->pid = -1;
		fprintf(stderr, "  daemon exited (status 0x%x)\n", status);
		return false;
	}
	return true;
}

int nvme_itest_attach(struct nvme_itest *t, uint32_t vectors)
{
	int rc;

	t->c = vfu_client_connect(t->sock, 5000);
	if (!t->c)
		return -errno;
	rc = vfu_client_negotiate(t->c);
	if (!rc)
		rc = vfu_client_ram_create(t->c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE);
	if (!rc)
		rc = nvme_host_init(&t->h, t->c, NVME_ITEST_RAM_IOVA, NVME_ITEST_RAM_SIZE, vectors);
	if (rc) {
		vfu_client_close(t->c);
		t->c = NULL;
	}
	return rc;
}

void nvme_itest_detach(struct nvme_itest *t)
{
	if (t->c)
		vfu_client_close(t->c);
	t->c = NULL;
}

int nvme_itest_stop(struct nvme_itest *t, bool show_log)
{
	int status = 0, rc = -1;

	nvme_itest_detach(t);
	if (t->pid > 0) {
		kill(t->pid, SIGTERM);
		for (int i = 0; i < 500; i++) {
			if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
				rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
				t->pid = -1;
				break;
			}
			usleep(10000);
		}
		if (t->pid > 0) {
			fprintf(stderr, "  daemon did not stop on SIGTERM: killed\n");
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
			t->pid = -1;
		}
	}
	if (show_log || rc != 0) {
		const char *lines = getenv("ITEST_LOG_LINES");
		char cmd[256];

		/* ITEST_LOG_LINES=N shows more of the log (with NVME_EMU_LOG_LEVEL=debug). */
		fprintf(stderr, "  ---- daemon log tail (%s, exit %d)\n", t->log, rc);
		snprintf(cmd, sizeof(cmd), "tail -n %d %s >&2", lines ? atoi(lines) : 30, t->log);
		if (system(cmd) != 0)
			fprintf(stderr, "  (no log)\n");
	}
	unlink(t->sock);
	unlink(t->log);
	rmdir(t->dir);
	return rc;
}

int nvme_itest_rpc(const char *build, const char *rpc_sock, const char *const *args, char *out,
		   size_t cap)
{
	const char *argv[32];
	char prog[256];
	int argc = 0, status, pfd[2];
	size_t len = 0;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/bin/nvme-emu-rpc", build);
	argv[argc++] = prog;
	argv[argc++] = "-s";
	argv[argc++] = rpc_sock;
	for (int i = 0; args[i] && argc < 31; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	if (pipe(pfd))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int rc = -errno;

		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	/* Read to the end whether or not it is kept, so the child never blocks on a full pipe. */
	for (;;) {
		char sink[4096];
		char *dst = out && len + 1 < cap ? out + len : sink;
		size_t room = out && len + 1 < cap ? cap - 1 - len : sizeof(sink);
		ssize_t n = read(pfd[0], dst, room);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			len += (size_t)n;
	}
	close(pfd[0]);
	if (out && cap)
		out[len] = 0;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

void nvme_itest_each_mode(const char *build, void (*tests)(const char *build))
{
	static const char *const modes[2][8] = {
	    {"--doorbells", "trap", NULL},
	    {"--doorbells", "mmap", "-m", "2", NULL},
	};

	for (int m = 0; m < 2; m++) {
		unsigned int i = 0;

		printf("== %s\n", m ? "mmap doorbells, 2 poll groups" : "trap doorbells");
		for (; modes[m][i]; i++)
			nvme_itest_mode_args[i] = modes[m][i];
		nvme_itest_mode_args[i] = NULL;
		tests(build);
	}
}
