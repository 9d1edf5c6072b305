/* tests/unit/app/qmp_test.c - the QMP client (app/qmp.c) against a scripted QEMU on a real unix
 * socket: the exchange, DEVICE_DELETED before and after the command's return, events and errors
 * with null or mistyped fields, garbage, oversized and non-object messages, hang-up, timeout,
 * cancel, and a socket nobody serves. The client runs on this thread's evloop; the fake QEMU on
 * its own thread. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "app/qmp.h"
#include "common/evloop.h"
#include "tests/unit/cunit_runner.h"

#define QT_WAIT_MS 10000

/* What the fake QEMU does: greeting, capabilities' return, then after the command `reply`
 * (several messages, or NULL for silence); it then holds the connection until told to stop,
 * or closes it at once when `close_after`. */
struct qt_script {
	const char *greeting;
	const char *reply;
	bool close_after;
};

static struct {
	char dir[32], path[64];
	int lfd;
	pthread_t thread;
	const struct qt_script *script;
	char cmd[1024]; /* the command the client sent */
	int stop_pipe[2];
} qt;

static struct evloop *qt_loop;

static void qt_send(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* Reads one JSON object (counting braces: the client sends plain objects) into buf. */
static bool qt_read_msg(int fd, char *buf, size_t size)
{
	size_t n = 0;
	int depth = 0;
	bool started = false;

	while (n + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&p, 1, QT_WAIT_MS) != 1 || recv(fd, &c, 1, 0) != 1)
			return false;
		buf[n++] = c;
		if (c == '{') {
			depth++;
			started = true;
		} else if (c == '}' && --depth == 0 && started) {
			buf[n] = 0;
			return true;
		}
	}
	return false;
}

static void *qt_qemu(void *arg)
{
	const struct qt_script *s = qt.script;
	char buf[1024];
	int fd = accept(qt.lfd, NULL, NULL);

	(void)arg;
	if (fd < 0)
		return NULL;
	qt_send(fd, s->greeting ? s->greeting
				: "{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n");
	if (!qt_read_msg(fd, buf, sizeof(buf)) || !strstr(buf, "qmp_capabilities"))
		goto out;
	qt_send(fd, "{\"return\": {}}\r\n");
	if (!qt_read_msg(fd, qt.cmd, sizeof(qt.cmd)))
		goto out;
	if (s->reply)
		qt_send(fd, s->reply);
	if (!s->close_after) {
		struct pollfd p = { .fd = qt.stop_pipe[0], .events = POLLIN };

		poll(&p, 1, QT_WAIT_MS);
	}
out:
	close(fd);
	return NULL;
}

struct qt_result {
	bool done;
	int rc;
	char msg[256];
};

static void qt_done(void *arg, int rc, const char *message)
{
	struct qt_result *r = arg;

	r->done = true;
	r->rc = rc;
	snprintf(r->msg, sizeof(r->msg), "%s", message ? message : "");
}

/* Runs one op against `script` with `wait_device` and `timeout_us`; the result in *r. */
static int qt_run(const struct qt_script *script, const char *wait_device, uint64_t timeout_us,
		  struct qt_result *r)
{
	struct json_object *cmd = json_tokener_parse(
	    "{\"execute\": \"device_del\", \"arguments\": {\"id\": \"nvme-emu-0\"}}");
	int rc;

	memset(r, 0, sizeof(*r));
	qt.script = script;
	qt.cmd[0] = 0;
	if (pthread_create(&qt.thread, NULL, qt_qemu, NULL))
		return -EAGAIN;
	rc = app_qmp_run(qt_loop, qt.path, cmd, wait_device, timeout_us, qt_done, r, NULL);
	for (int i = 0; !rc && !r->done && i < QT_WAIT_MS / 10; i++)
		evloop_run_once(qt_loop, 10);
	if (write(qt.stop_pipe[1], "x", 1) != 1)
		rc = -EIO;
	pthread_join(qt.thread, NULL);
	{
		char c;
		struct pollfd p = { .fd = qt.stop_pipe[0], .events = POLLIN };

		while (poll(&p, 1, 0) == 1 && read(qt.stop_pipe[0], &c, 1) == 1)
			;
	}
	return rc;
}

static int qt_init(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(qt.dir, sizeof(qt.dir), "/tmp/qmp-test.XXXXXX");
	if (!mkdtemp(qt.dir) || pipe(qt.stop_pipe))
		return -1;
	snprintf(qt.path, sizeof(qt.path), "%s/qmp.sock", qt.dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", qt.path);
	qt.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (qt.lfd < 0 || bind(qt.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(qt.lfd, 4))
		return -1;
	qt_loop = evloop_create();
	return qt_loop ? 0 : -1;
}

static int qt_cleanup(void)
{
	evloop_destroy(qt_loop);
	close(qt.lfd);
	close(qt.stop_pipe[0]);
	close(qt.stop_pipe[1]);
	unlink(qt.path);
	rmdir(qt.dir);
	return 0;
}

#define QT_RETURN "{\"return\": {}}\r\n"
#define QT_DELETED "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": \"nvme-emu-0\"}}\r\n"

static void test_command_sent(void)
{
	static const struct qt_script s = { .reply = QT_RETURN };
	struct qt_result r;

	CU_ASSERT_EQUAL_FATAL(qt_run(&s, NULL, 5000000, &r), 0);
	CU_ASSERT_TRUE(r.done);
	CU_ASSERT_EQUAL(r.rc, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(qt.cmd, "\"device_del\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(qt.cmd, "\"nvme-emu-0\""));
}

/* The deletion event may come after the return or before it; others' events do not count. */
static void test_wait_for_deletion(void)
{
	static const struct qt_script after = {
	    .reply = QT_RETURN "{\"event\": \"DEVICE_DELETED\", \"data\": {\"path\": \"/x\"}}\r\n"
			       "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": \"other\"}}\r\n"
			       QT_DELETED };
	static const struct qt_script before = { .reply = QT_DELETED QT_RETURN };
	static const struct qt_script never = {
	    .reply = QT_RETURN "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": \"other\"}}\r\n" };
	struct qt_result r;

	CU_ASSERT_EQUAL_FATAL(qt_run(&after, "nvme-emu-0", 5000000, &r), 0);
	CU_ASSERT_TRUE(r.done && r.rc == 0);
	CU_ASSERT_EQUAL_FATAL(qt_run(&before, "nvme-emu-0", 5000000, &r), 0);
	CU_ASSERT_TRUE(r.done && r.rc == 0);
	/* Not ours: the bounded wait ends it. */
	CU_ASSERT_EQUAL_FATAL(qt_run(&never, "nvme-emu-0", 200000, &r), 0);
	CU_ASSERT_TRUE(r.done);
	CU_ASSERT_EQUAL(r.rc, -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "DEVICE_DELETED"));
}

/* Issue 11 finding 7: fields that are null, missing or of another type are simply not ours. */
static void test_null_and_mistyped_fields(void)
{
	static const struct qt_script s = {
	    .reply = "{\"event\": null}\r\n"
		     "{\"event\": 3, \"data\": {\"device\": \"nvme-emu-0\"}}\r\n"
		     "{\"event\": \"DEVICE_DELETED\"}\r\n"
		     "{\"event\": \"DEVICE_DELETED\", \"data\": null}\r\n"
		     "{\"event\": \"DEVICE_DELETED\", \"data\": [\"nvme-emu-0\"]}\r\n"
		     "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": null}}\r\n"
		     "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": 0}}\r\n" QT_RETURN
			 QT_DELETED };
	static const struct qt_script err_null = {
	    .reply = "{\"error\": {\"class\": null, \"desc\": null}}\r\n" };
	static const struct qt_script err_mistyped = { .reply = "{\"error\": \"boom\"}\r\n" };
	static const struct qt_script err_desc = {
	    .reply = "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no bus\"}}\r\n" };
	struct qt_result r;

	CU_ASSERT_EQUAL_FATAL(qt_run(&s, "nvme-emu-0", 5000000, &r), 0);
	CU_ASSERT_TRUE(r.done && r.rc == 0);
	CU_ASSERT_EQUAL_FATAL(qt_run(&err_null, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "QMP error"));
	CU_ASSERT_EQUAL_FATAL(qt_run(&err_mistyped, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EIO);
	CU_ASSERT_EQUAL_FATAL(qt_run(&err_desc, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EIO);
	CU_ASSERT_STRING_EQUAL(r.msg, "QMP error: no bus");
}

static void test_bad_streams(void)
{
	static const struct qt_script not_object = { .reply = "[1, 2]\r\n" };
	static const struct qt_script garbage = { .reply = "{\"return\": }\r\n" };
	static const struct qt_script no_greeting = { .greeting = "{\"hello\": 1}\r\n" };
	static const struct qt_script hangup = { .reply = NULL, .close_after = true };
	struct qt_result r;
	static char huge[(1 << 20) + 64];

	CU_ASSERT_EQUAL_FATAL(qt_run(&not_object, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EPROTO);
	CU_ASSERT_EQUAL_FATAL(qt_run(&garbage, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EPROTO);
	CU_ASSERT_EQUAL_FATAL(qt_run(&no_greeting, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -EPROTO);
	CU_ASSERT_EQUAL_FATAL(qt_run(&hangup, NULL, 5000000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -ECONNRESET);
	/* One never-ending string: refused past the size limit, not buffered forever. */
	memset(huge, 'a', sizeof(huge) - 1);
	memcpy(huge, "{\"event\": \"", 11);
	{
		struct qt_script big = { .reply = huge };

		CU_ASSERT_EQUAL_FATAL(qt_run(&big, NULL, 5000000, &r), 0);
		CU_ASSERT_EQUAL(r.rc, -EPROTO);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "too large"));
	}
}

static void test_silence_and_no_server(void)
{
	static const struct qt_script silent = { .reply = NULL };
	struct qt_result r;
	struct json_object *cmd = json_tokener_parse("{\"execute\": \"query-status\"}");
	char missing[160];

	CU_ASSERT_EQUAL_FATAL(qt_run(&silent, NULL, 200000, &r), 0);
	CU_ASSERT_EQUAL(r.rc, -ETIMEDOUT);
	snprintf(missing, sizeof(missing), "%s/none.sock", qt.dir);
	CU_ASSERT_EQUAL(app_qmp_run(qt_loop, missing, cmd, NULL, 1000000, qt_done, &r, NULL),
			-ENOENT);
}

static void test_cancel(void)
{
	static const struct qt_script silent = { .reply = NULL };
	struct json_object *cmd = json_tokener_parse("{\"execute\": \"query-status\"}");
	struct app_qmp_op *op = NULL;
	struct qt_result r = { 0 };

	qt.script = &silent;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&qt.thread, NULL, qt_qemu, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(app_qmp_run(qt_loop, qt.path, cmd, NULL, 5000000, qt_done, &r, &op),
			      0);
	for (int i = 0; i < 20; i++)
		evloop_run_once(qt_loop, 10);
	CU_ASSERT_FALSE(r.done);
	app_qmp_cancel(op);
	CU_ASSERT_TRUE(r.done);
	CU_ASSERT_EQUAL(r.rc, -ECANCELED);
	CU_ASSERT_EQUAL(write(qt.stop_pipe[1], "x", 1), 1);
	pthread_join(qt.thread, NULL);
	{
		char c;

		CU_ASSERT_EQUAL(read(qt.stop_pipe[0], &c, 1), 1);
	}
}

CUNIT_SUITE(qmp, qt_init, qt_cleanup, {"command_sent", test_command_sent},
	    {"wait_for_deletion", test_wait_for_deletion},
	    {"null_and_mistyped_fields", test_null_and_mistyped_fields},
	    {"bad_streams", test_bad_streams}, {"silence_and_no_server", test_silence_and_no_server},
	    {"cancel", test_cancel})
