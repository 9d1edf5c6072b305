/* tests/fuzz/vfu_libfuzzer.c - libFuzzer target (`make fuzz`, clang): each
 * input is a byte stream sent on a fresh connection to an endpoint with the
 * fake device (optionally after a valid VERSION); the server must answer or
 * drop us, never hang, crash or leak. */
#include "host/vfu_client.h"
#include "tests/unit/vfu/fake_dev.h"

#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct fake_dev *fuzz_dev;
static char fuzz_path[108];
static uint64_t fuzz_conns;

static void fuzz_fini(void)
{
	fake_dev_stop(fuzz_dev);
}

/* Sends data while draining replies, then half-closes and reads until the
 * server closes (it must: EOF on its side ends the session). */
static void fuzz_stream(int sock, const uint8_t *data, size_t len)
{
	uint8_t junk[65536];
	size_t sent = 0;
	bool shut = false;

	for (;;) {
		struct pollfd p = {.fd = sock, .events = POLLIN | (shut ? 0 : POLLOUT)};
		int rc = poll(&p, 1, 10000);

		/* A signal (libFuzzer's timers) interrupting poll is not a hang. */
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
				n = send(sock, data + sent, len - sent,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
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

	if (!fuzz_dev) {
		log_set_level(LOG_LEVEL_DISABLE);
		snprintf(fuzz_path, sizeof(fuzz_path), "/tmp/vfu-libfuzzer-%d.sock", (int)getpid());
		fuzz_dev = fake_dev_start(fuzz_path);
		if (!fuzz_dev)
			abort();
		atexit(fuzz_fini);
	}
	if (!size)
		return 0;
	/* Every earlier connection torn down: this one is not a second client. */
	if (!fake_dev_wait_disconnects(fuzz_dev, fuzz_conns, 10000))
		abort();
	c = vfu_client_connect(fuzz_path, 5000);
	if (!c)
		abort();
	fuzz_conns++;
	/* First byte: negotiate first or not, so both states get explored. */
	if (!(data[0] & 1) && vfu_client_negotiate(c))
		abort();
	fuzz_stream(vfu_client_fd(c), data + 1, size - 1);
	vfu_client_close(c);
	return 0;
}
