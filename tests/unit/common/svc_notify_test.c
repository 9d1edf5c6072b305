/* tests/unit/common/svc_notify_test.c - the notification protocol against real datagram sockets
 * standing for the service manager: a path and an abstract name, one datagram per send, no
 * manager (no-op), bad variables refused, and the watchdog's environment. */
#include "common/svc_notify.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A manager's socket at `name` (a path, or '@' and an abstract name). */
static int manager_socket(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, name, strlen(name));
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		len++;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void expect_datagram(int fd, const char *text)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	CU_ASSERT_EQUAL_FATAL(n, (ssize_t)strlen(text));
	buf[n] = '\0';
	CU_ASSERT_STRING_EQUAL(buf, text);
}

static void test_path_and_abstract(void)
{
	char path[64], abstract[64];
	struct svc_notify *n;
	int fd;

	snprintf(path, sizeof(path), "/tmp/svc-notify-test.%d", (int)getpid());
	unlink(path);
	fd = manager_socket(path);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	setenv("NOTIFY_SOCKET", path, 1);
	CU_ASSERT_EQUAL_FATAL(svc_notify_open(&n), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(svc_notify_send(n, "READY=1\nSTATUS=serving"), 0);
	expect_datagram(fd, "READY=1\nSTATUS=serving");
	CU_ASSERT_EQUAL(svc_notify_send(n, "WATCHDOG=1"), 0);
	expect_datagram(fd, "WATCHDOG=1");
	svc_notify_close(n);
	close(fd);
	unlink(path);
	/* Nobody listens any more: the send fails, nothing blocks. */
	setenv("NOTIFY_SOCKET", path, 1);
	CU_ASSERT_EQUAL_FATAL(svc_notify_open(&n), 0);
	CU_ASSERT_TRUE(svc_notify_send(n, "READY=1") < 0);
	svc_notify_close(n);

	snprintf(abstract, sizeof(abstract), "@svc-notify-test/%d", (int)getpid());
	fd = manager_socket(abstract);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	setenv("NOTIFY_SOCKET", abstract, 1);
	CU_ASSERT_EQUAL_FATAL(svc_notify_open(&n), 0);
	CU_ASSERT_EQUAL(svc_notify_send(n, "STOPPING=1"), 0);
	expect_datagram(fd, "STOPPING=1");
	svc_notify_close(n);
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_no_manager_and_bad_names(void)
{
	struct svc_notify *n = (struct svc_notify *)1;

	unsetenv("NOTIFY_SOCKET");
	CU_ASSERT_EQUAL(svc_notify_open(&n), 0);
	CU_ASSERT_PTR_NULL(n);
	CU_ASSERT_EQUAL(svc_notify_send(NULL, "READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CU_ASSERT_EQUAL(svc_notify_open(&n), 0);
	CU_ASSERT_PTR_NULL(n);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	CU_ASSERT_EQUAL(svc_notify_open(&n), -EINVAL);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	CU_ASSERT_EQUAL(svc_notify_open(&n), -EAFNOSUPPORT);
	{
		char longname[200];

		memset(longname, 'x', sizeof(longname) - 1);
		longname[0] = '/';
		longname[sizeof(longname) - 1] = '\0';
		setenv("NOTIFY_SOCKET", longname, 1);
		CU_ASSERT_EQUAL(svc_notify_open(&n), -ENAMETOOLONG);
	}
	unsetenv("NOTIFY_SOCKET");
}

static void test_watchdog_env(void)
{
	char pid[32];

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "3000000", 1);
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 3000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 3000000);
	/* Meant for another process (a child would inherit the variables). */
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "3s", 1);
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "-5", 1);
	CU_ASSERT_EQUAL(svc_notify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

CUNIT_SUITE(svc_notify, NULL, NULL, {"path_and_abstract", test_path_and_abstract},
	    {"no_manager_and_bad_names", test_no_manager_and_bad_names},
	    {"watchdog_env", test_watchdog_env})
