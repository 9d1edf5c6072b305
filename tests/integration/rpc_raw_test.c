/* tests/integration/rpc_raw_test.c - the nvme-emu JSON-RPC server spoken to on its raw socket:
 * framing (values split and joined across writes), every JSON-RPC error class, hostile input
 * (garbage, truncation, a 10 MB request, deep nesting, too many clients, clients vanishing
 * mid-request), and hotplug through a fake QEMU QMP server (device_add, error, device_del with
 * DEVICE_DELETED). Run as "rpc_raw_test <build dir>". */
#include "tests/integration/itest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#define RAW_TIMEOUT_MS 10000

static char raw_dir[48], raw_sock[96], raw_log[96], raw_qmp[96];
static pid_t raw_pid = -1;

/* ---- the daemon ---- */

static int raw_connect_path(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int raw_connect(void)
{
	return raw_connect_path(raw_sock);
}

static int raw_start(const char *build)
{
	char bin[256];

	snprintf(raw_dir, sizeof(raw_dir), "/tmp/nvme-emu-rpc-raw.XXXXXX");
	if (!mkdtemp(raw_dir))
		return -errno;
	snprintf(raw_sock, sizeof(raw_sock), "%s/rpc.sock", raw_dir);
	snprintf(raw_log, sizeof(raw_log), "%s/nvme-emu.log", raw_dir);
	snprintf(raw_qmp, sizeof(raw_qmp), "%s/qmp.sock", raw_dir);
	snprintf(bin, sizeof(bin), "%s/bin/nvme-emu", build);
	raw_pid = fork();
	if (raw_pid < 0)
		return -errno;
	if (!raw_pid) {
		int fd = open(raw_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin, bin, "-r", raw_sock, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		int fd = raw_connect();

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(raw_pid, NULL, WNOHANG) == raw_pid)
			break;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

/* Stops the daemon; returns its exit status (-1: killed or crashed). */
static int raw_stop(void)
{
	int st = 0;

	kill(raw_pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(raw_pid, &st, WNOHANG) == raw_pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(50000);
	}
	kill(raw_pid, SIGKILL);
	waitpid(raw_pid, &st, 0);
	return -1;
}

static bool raw_alive(void)
{
	return waitpid(raw_pid, NULL, WNOHANG) == 0;
}

/* ---- wire helpers ---- */

static int raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int raw_send_str(int fd, const char *s)
{
	return raw_send(fd, s, strlen(s));
}

/* A reader of consecutive JSON values on one connection. */
struct raw_reader {
	int fd;
	struct json_tokener *tok;
	char buf[65536];
	size_t off, len;
	bool eof;
};

static void raw_reader_init(struct raw_reader *r, int fd)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->tok = json_tokener_new();
}

static void raw_reader_fini(struct raw_reader *r)
{
	json_tokener_free(r->tok);
	close(r->fd);
}

/* The next value, or NULL on EOF / timeout (r->eof tells). */
static struct json_object *raw_read(struct raw_reader *r, int timeout_ms)
{
	for (;;) {
		while (r->off < r->len) {
			size_t avail = r->len - r->off;
			struct json_object *v =
			    json_tokener_parse_ex(r->tok, r->buf + r->off, (int)avail);
			enum json_tokener_error e = json_tokener_get_error(r->tok);

			if (e == json_tokener_continue) {
				r->off = r->len;
				break;
			}
			if (e != json_tokener_success)
				return NULL;
			r->off += json_tokener_get_parse_end(r->tok);
			json_tokener_reset(r->tok);
			return v;
		}
		struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return NULL;
		n = recv(r->fd, r->buf, sizeof(r->buf), 0);
		if (n <= 0) {
			r->eof = true;
			return NULL;
		}
		r->off = 0;
		r->len = (size_t)n;
	}
}

/* True when the peer closes the connection within the timeout (after any pending data). */
static bool raw_closed(struct raw_reader *r)
{
	struct json_object *v;

	while ((v = raw_read(r, RAW_TIMEOUT_MS)))
		json_object_put(v);
	return r->eof;
}

static int raw_error_code(struct json_object *resp)
{
	struct json_object *e, *c;

	if (!resp || !json_object_object_get_ex(resp, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c))
		return 0;
	return json_object_get_int(c);
}

static const char *raw_error_msg(struct json_object *resp)
{
	struct json_object *e, *m;

	if (!resp || !json_object_object_get_ex(resp, "error", &e) ||
	    !json_object_object_get_ex(e, "message", &m))
		return "";
	return json_object_get_string(m);
}

static bool raw_id_is(struct json_object *resp, int id)
{
	struct json_object *v;

	return resp && json_object_object_get_ex(resp, "id", &v) && v &&
	       json_object_get_int(v) == id;
}

static bool raw_id_null(struct json_object *resp)
{
	struct json_object *v;

	return resp && json_object_object_get_ex(resp, "id", &v) && !v;
}

/* One request on a fresh connection; the response (caller puts it) or NULL. */
static struct json_object *raw_call(const char *method, const char *params)
{
	struct raw_reader r;
	struct json_object *resp;
	char *req;
	int fd = raw_connect();

	if (fd < 0)
		return NULL;
	if (asprintf(&req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"%s%s}", method,
		     params ? ",\"params\":" : "", params ? params : "") < 0) {
		close(fd);
		return NULL;
	}
	raw_reader_init(&r, fd);
	resp = raw_send_str(fd, req) ? NULL : raw_read(&r, RAW_TIMEOUT_MS);
	free(req);
	raw_reader_fini(&r);
	return resp;
}

/* True when the call succeeds (has "result"). */
static bool raw_ok(const char *method, const char *params)
{
	struct json_object *resp = raw_call(method, params);
	bool ok = resp && json_object_object_get_ex(resp, "result", NULL);

	if (!ok)
		fprintf(stderr, "  %s failed: %s\n", method,
			resp ? json_object_to_json_string(resp) : "(no response)");
	json_object_put(resp);
	return ok;
}

/* The error code of a call (0 when it succeeded or did not answer). */
static int raw_code(const char *method, const char *params)
{
	struct json_object *resp = raw_call(method, params);
	int code = raw_error_code(resp);

	json_object_put(resp);
	return code;
}

/* ---- cases: framing ---- */

static void test_split_and_joined(const char *build)
{
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"spdk_get_version\"}";
	struct raw_reader r;
	struct json_object *v;
	int fd = raw_connect();

	ITEST_CHECK(fd >= 0);
	raw_reader_init(&r, fd);
	/* One byte per write: the server parses incrementally. */
	for (const char *p = req; *p; p++) {
		ITEST_CHECK(raw_send(fd, p, 1) == 0);
		usleep(200);
	}
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_id_is(v, 5) && json_object_object_get_ex(v, "result", NULL));
	json_object_put(v);
	/* Two requests and a notification in one write: answered in order, the
	 * notification not at all. */
	ITEST_CHECK(
	    raw_send_str(
		fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"log_get_level\"}"
		    " \n{\"jsonrpc\":\"2.0\",\"method\":\"log_get_level\"}"
		    "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"rpc_get_methods\"}") == 0);
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_id_is(v, 1));
	json_object_put(v);
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(v && json_object_is_type(json_object_object_get(v, "id"), json_type_string));
	ITEST_CHECK(v && json_object_is_type(json_object_object_get(v, "result"), json_type_array));
	json_object_put(v);
	/* Nothing else comes: the notification had no answer. */
	v = raw_read(&r, 300);
	ITEST_CHECK(!v && !r.eof);
	json_object_put(v);
	raw_reader_fini(&r);
}

/* ---- cases: error classes ---- */

/* Sends `text` on a fresh connection and returns the first response's code; *closed tells
 * whether the server closed the connection afterwards. */
static int raw_send_expect(const char *text, bool *closed, bool *id_null)
{
	struct raw_reader r;
	struct json_object *v;
	int code, fd = raw_connect();

	if (fd < 0)
		return 0;
	raw_reader_init(&r, fd);
	raw_send_str(fd, text);
	v = raw_read(&r, RAW_TIMEOUT_MS);
	code = raw_error_code(v);
	if (id_null)
		*id_null = raw_id_null(v);
	json_object_put(v);
	if (closed)
		*closed = raw_closed(&r);
	raw_reader_fini(&r);
	return code;
}

static void test_parse_errors(const char *build)
{
	bool closed = false, id_null = false;
	char deep[4096];

	ITEST_CHECK(raw_send_expect("hello, world\n", &closed, &id_null) == -32700);
	ITEST_CHECK(closed && id_null);
	ITEST_CHECK(raw_send_expect("{\"jsonrpc\":\"2.0\",,}", &closed, NULL) == -32700);
	ITEST_CHECK(closed);
	ITEST_CHECK(raw_send_expect("\x01\x02\xff\xfe", &closed, NULL) == -32700);
	ITEST_CHECK(closed);
	/* Nesting beyond the parser's depth limit. */
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	ITEST_CHECK(raw_send_expect(deep, &closed, NULL) == -32700);
	ITEST_CHECK(closed);
	ITEST_CHECK(raw_alive());
}

static void test_invalid_requests(const char *build)
{
	struct raw_reader r;
	struct json_object *v;
	int fd = raw_connect();

	/* An invalid request is answered and the connection stays: the next request on it is
	 * served. */
	ITEST_CHECK(fd >= 0);
	raw_reader_init(&r, fd);
	raw_send_str(fd, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]");
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_error_code(v) == -32600);
	json_object_put(v);
	raw_send_str(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"log_get_level\"}");
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_id_is(v, 2) && json_object_object_get_ex(v, "result", NULL));
	json_object_put(v);
	raw_reader_fini(&r);
	ITEST_CHECK(raw_send_expect("42 ", NULL, NULL) == -32600);
	ITEST_CHECK(raw_send_expect("\"text\"", NULL, NULL) == -32600);
	ITEST_CHECK(raw_send_expect("{\"id\":1,\"method\":\"spdk_get_version\"}", NULL, NULL) ==
		    -32600);
	ITEST_CHECK(
	    raw_send_expect("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"spdk_get_version\"}", NULL,
			    NULL) == -32600);
	ITEST_CHECK(raw_send_expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", NULL, NULL) ==
		    -32600);
	ITEST_CHECK(
	    raw_send_expect("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"spdk_get_version\"}", NULL,
			    NULL) == -32600);
	ITEST_CHECK(raw_send_expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"spdk_get_version\","
				    "\"params\":\"x\"}",
				    NULL, NULL) == -32600);
	ITEST_CHECK(raw_code("no_such_method", NULL) == -32601);
	ITEST_CHECK(raw_code("bdev_malloc_create", "[1, 2]") == -32602);
	ITEST_CHECK(raw_code("bdev_malloc_create", "{\"num_blocks\": true, \"block_size\": 512}") ==
		    -32602);
	ITEST_CHECK(raw_code("bdev_malloc_create", "{\"num_blocks\": 1.5, \"block_size\": 512}") ==
		    -32602);
	ITEST_CHECK(raw_code("bdev_malloc_create",
			     "{\"num_blocks\": 16, \"block_size\": 5000000000}") == -32602);
	ITEST_CHECK(raw_code("nvmf_subsystem_add_ns", "{\"nqn\": \"nqn.x:y\", \"namespace\": 3}") ==
		    -32602);
	/* Method errors are negative errnos with a message. */
	ITEST_CHECK(raw_code("bdev_get_bdevs", "{\"name\": \"nope\"}") == -ENODEV);
	ITEST_CHECK(raw_alive());
}

/* ---- cases: hostile clients ---- */

static void test_huge_request(const char *build)
{
	const size_t size = 10u << 20;
	char *big = malloc(size);
	struct raw_reader r;
	struct json_object *v;
	size_t sent = 0;
	int fd = raw_connect();

	ITEST_CHECK(big && fd >= 0);
	if (!big || fd < 0)
		return;
	/* A 10 MB string inside the params of a well-formed request. */
	static const char head[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bdev_get_bdevs\",\"params\":{\"name\":\"";

	memset(big, 'a', size);
	memcpy(big, head, sizeof(head) - 1);
	memcpy(big + size - 4, "\"}}\n", 4);
	raw_reader_init(&r, fd);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (sent < size) {
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		ssize_t n;

		if (poll(&pfd, 1, RAW_TIMEOUT_MS) <= 0)
			break;
		n = send(fd, big + sent, size - sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			break; /* the server gave up on us: expected */
		sent += (size_t)n;
	}
	fcntl(fd, F_SETFL, 0);
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_error_code(v) == -32700);
	ITEST_CHECK(strstr(raw_error_msg(v), "too large") != NULL);
	json_object_put(v);
	ITEST_CHECK(raw_closed(&r));
	raw_reader_fini(&r);
	free(big);
	ITEST_CHECK(raw_alive() && raw_ok("spdk_get_version", NULL));
}

static void test_disconnects(const char *build)
{
	/* Gone halfway through a request, and right after sending one. */
	for (int i = 0; i < 20; i++) {
		int fd = raw_connect();

		ITEST_CHECK(fd >= 0);
		raw_send_str(fd, i % 2
				     ? "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"save_con"
				     : "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"save_config\"}");
		close(fd);
	}
	ITEST_CHECK(raw_alive() && raw_ok("spdk_get_version", NULL));
}

static void test_many_clients(const char *build)
{
	int fds[80];
	unsigned int sent = 0, answered = 0, refused = 0;

	/* More than RPC_MAX_CLIENTS (64) at once: 64 are served, the others wait in the listen
	 * backlog until a slot frees (past the backlog a connect fails); none hangs, the server
	 * stays. */
	for (unsigned int i = 0; i < 80; i++)
		fds[i] = raw_connect();
	for (unsigned int i = 0; i < 80; i++)
		if (fds[i] >= 0 &&
		    !raw_send_str(fds[i],
				  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"log_get_level\"}"))
			sent++;
	for (unsigned int i = 0; i < 80; i++) {
		struct raw_reader r;
		struct json_object *v;

		if (fds[i] < 0) {
			refused++;
			continue;
		}
		raw_reader_init(&r, fds[i]);
		v = raw_read(&r, RAW_TIMEOUT_MS);
		if (raw_id_is(v, 3))
			answered++;
		else if (r.eof)
			refused++;
		json_object_put(v);
		raw_reader_fini(&r);
	}
	printf("  %u requests sent, %u answered, %u closed by the server\n", sent, answered,
	       refused);
	ITEST_CHECK(answered >= 64);
	ITEST_CHECK(answered + refused == 80);
	ITEST_CHECK(raw_alive() && raw_ok("spdk_get_version", NULL));
}

/* A client that connects while 64 are open waits for a slot instead of being closed: right
 * after clients close, a new one (nvme-emu-rpc run again at once) got "no response" when the
 * server saw its connect before their closes (a make test run failed that way). */
static void test_client_waits_for_slot(const char *build)
{
	int fds[64], late;
	struct raw_reader r;
	struct json_object *v;
	bool all = true;

	for (unsigned int i = 0; i < 64; i++) {
		fds[i] = raw_connect();
		all = all && fds[i] >= 0;
	}
	ITEST_CHECK(all);
	/* The 64 are the server's: each answers a request. */
	for (unsigned int i = 0; i < 64 && all; i++) {
		raw_reader_init(&r, fds[i]);
		all = !raw_send_str(fds[i], "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"log_get_level\"}");
		v = all ? raw_read(&r, RAW_TIMEOUT_MS) : NULL;
		all = all && raw_id_is(v, 5);
		json_object_put(v);
		json_tokener_free(r.tok); /* the fd stays open */
	}
	ITEST_CHECK(all);
	late = raw_connect();
	ITEST_CHECK(late >= 0);
	ITEST_CHECK(!raw_send_str(late, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"log_get_level\"}"));
	/* One slot frees; the waiting client takes it and is answered (not closed at accept). */
	close(fds[0]);
	raw_reader_init(&r, late);
	v = raw_read(&r, RAW_TIMEOUT_MS);
	ITEST_CHECK(raw_id_is(v, 6));
	json_object_put(v);
	raw_reader_fini(&r);
	for (unsigned int i = 1; i < 64; i++)
		close(fds[i]);
	ITEST_CHECK(raw_alive() && raw_ok("spdk_get_version", NULL));
}

/* ---- a fake QEMU on a QMP socket ---- */

/* FAKE_NULLS: before its answers, events with null, missing or mistyped fields (issue 11,
 * finding 7); FAKE_ERROR_NULL: an error whose desc is null. */
enum fake_mode { FAKE_OK, FAKE_ERROR, FAKE_HOLD, FAKE_NULLS, FAKE_ERROR_NULL };

struct fake_qmp {
	int lfd;
	pthread_t thread;
	pthread_mutex_t lock;
	enum fake_mode mode;
	int hold_pipe[2]; /* FAKE_HOLD: the answer waits for a byte here */
	char last[4096];  /* the last command received */
	unsigned int commands;
	bool stop;
};

static struct fake_qmp fake;

static void fake_send(int fd, const char *s)
{
	raw_send_str(fd, s);
}

/* Serves one QMP connection: greeting, capabilities, one command (device_add/device_del). */
static void fake_serve(int fd)
{
	struct raw_reader r;
	struct json_object *v, *exec, *args, *id;
	char buf[512];

	raw_reader_init(&r, fd);
	fake_send(
	    fd, "{\"QMP\": {\"version\": {\"qemu\": {\"major\": 11}}, \"capabilities\": []}}\r\n");
	v = raw_read(&r, RAW_TIMEOUT_MS);
	if (!v || !json_object_object_get_ex(v, "execute", &exec) ||
	    strcmp(json_object_get_string(exec), "qmp_capabilities"))
		goto out;
	json_object_put(v);
	fake_send(fd, "{\"return\": {}}\r\n");
	v = raw_read(&r, RAW_TIMEOUT_MS);
	if (!v)
		goto out;
	pthread_mutex_lock(&fake.lock);
	snprintf(fake.last, sizeof(fake.last), "%s",
		 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	fake.commands++;
	pthread_mutex_unlock(&fake.lock);
	if (fake.mode == FAKE_HOLD) {
		struct pollfd pfd = {.fd = fake.hold_pipe[0], .events = POLLIN};
		char c;

		if (poll(&pfd, 1, 3 * RAW_TIMEOUT_MS) > 0 && read(fake.hold_pipe[0], &c, 1) < 0)
			goto out;
	}
	if (fake.mode == FAKE_ERROR_NULL) {
		fake_send(fd, "{\"error\": {\"class\": null, \"desc\": null}}\r\n");
		goto out;
	}
	if (fake.mode == FAKE_NULLS) {
		fake_send(fd, "{\"event\": null}\r\n"
			      "{\"event\": 17, \"data\": {}}\r\n"
			      "{\"event\": \"DEVICE_DELETED\"}\r\n"
			      "{\"event\": \"DEVICE_DELETED\", \"data\": null}\r\n"
			      "{\"event\": \"DEVICE_DELETED\", \"data\": \"x\"}\r\n"
			      "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": null, "
			      "\"path\": null}}\r\n"
			      "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": 7, "
			      "\"path\": []}}\r\n");
	}
	if (fake.mode == FAKE_ERROR) {
		fake_send(fd, "{\"error\": {\"class\": \"GenericError\", "
			      "\"desc\": \"Bus 'hp0' not found\"}}\r\n");
		goto out;
	}
	/* An unrelated event first, as QEMU may interleave them. */
	fake_send(fd, "{\"event\": \"RTC_CHANGE\", \"data\": {\"offset\": 0}, "
		      "\"timestamp\": {\"seconds\": 1, \"microseconds\": 0}}\r\n");
	fake_send(fd, "{\"return\": {}}\r\n");
	json_object_object_get_ex(v, "execute", &exec);
	if (!strcmp(json_object_get_string(exec), "device_del") &&
	    json_object_object_get_ex(v, "arguments", &args) &&
	    json_object_object_get_ex(args, "id", &id)) {
		/* The child objects' deletion events first (no "device"), then ours. */
		fake_send(fd, "{\"event\": \"DEVICE_DELETED\", \"data\": {\"path\": "
			      "\"/machine/peripheral/x/virtio-backend\"}}\r\n");
		snprintf(buf, sizeof(buf),
			 "{\"event\": \"DEVICE_DELETED\", \"data\": {\"device\": \"%s\", "
			 "\"path\": \"/machine/peripheral/%s\"}}\r\n",
			 json_object_get_string(id), json_object_get_string(id));
		fake_send(fd, buf);
	}
out:
	json_object_put(v);
	raw_reader_fini(&r);
}

static void *fake_thread(void *arg)
{
	while (!fake.stop) {
		struct pollfd pfd = {.fd = fake.lfd, .events = POLLIN};
		int fd;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		fd = accept(fake.lfd, NULL, NULL);
		if (fd >= 0)
			fake_serve(fd);
	}
	return NULL;
}

static int fake_start(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	pthread_mutex_init(&fake.lock, NULL);
	if (pipe(fake.hold_pipe))
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", raw_qmp);
	fake.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fake.lfd < 0 || bind(fake.lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fake.lfd, 4))
		return -errno;
	return -pthread_create(&fake.thread, NULL, fake_thread, NULL);
}

static void fake_stop(void)
{
	fake.stop = true;
	pthread_join(fake.thread, NULL);
	close(fake.lfd);
	close(fake.hold_pipe[0]);
	close(fake.hold_pipe[1]);
	unlink(raw_qmp);
}

static bool fake_last_has(const char *needle)
{
	bool has;

	pthread_mutex_lock(&fake.lock);
	has = strstr(fake.last, needle) != NULL;
	pthread_mutex_unlock(&fake.lock);
	return has;
}

static void test_qmp_hotplug(const char *build)
{
	char params[512], fn[160], needle[256];
	struct json_object *resp;

	ITEST_CHECK(fake_start() == 0);
	ITEST_CHECK(raw_ok("nvmf_create_transport", "{\"trtype\": \"PCIE_EMU\"}"));
	snprintf(params, sizeof(params),
		 "{\"name\": \"qemu0\", \"qmp_socket\": \"%s\", \"hotplug_ports\": [\"hp0\"]}",
		 raw_qmp);
	ITEST_CHECK(raw_ok("nvmf_emu_create_manager", params));
	ITEST_CHECK(raw_ok("bdev_malloc_create",
			   "{\"name\": \"Q0\", \"num_blocks\": 2048, \"block_size\": 512}"));
	ITEST_CHECK(raw_ok("nvmf_create_subsystem", "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\"}"));
	ITEST_CHECK(raw_ok("nvmf_subsystem_add_ns", "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\", "
						    "\"namespace\": {\"bdev_name\": \"Q0\"}}"));
	snprintf(fn, sizeof(fn), "%s/fn0.sock", raw_dir);
	snprintf(params, sizeof(params),
		 "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\", \"manager\": \"qemu0\", "
		 "\"listen_address\": {\"trtype\": \"PCIE_EMU\", \"traddr\": \"%s\"}}",
		 fn);

	/* QEMU refuses the device: the listener is undone. */
	fake.mode = FAKE_ERROR;
	resp = raw_call("nvmf_subsystem_add_listener", params);
	ITEST_CHECK(raw_error_code(resp) < 0 && strstr(raw_error_msg(resp), "Bus 'hp0' not found"));
	json_object_put(resp);
	ITEST_CHECK(access(fn, F_OK) != 0);

	/* An error without a description is still an error, and nothing worse. */
	fake.mode = FAKE_ERROR_NULL;
	resp = raw_call("nvmf_subsystem_add_listener", params);
	ITEST_CHECK(raw_error_code(resp) < 0 && strstr(raw_error_msg(resp), "QMP error"));
	json_object_put(resp);
	ITEST_CHECK(raw_alive());
	ITEST_CHECK(access(fn, F_OK) != 0);

	/* QEMU accepts: device_add with our socket, on the manager's port. */
	fake.mode = FAKE_OK;
	ITEST_CHECK(raw_ok("nvmf_subsystem_add_listener", params));
	ITEST_CHECK(fake_last_has("\"execute\":\"device_add\""));
	ITEST_CHECK(fake_last_has("\"driver\":\"vfio-user-pci\""));
	ITEST_CHECK(fake_last_has("\"bus\":\"hp0\""));
	snprintf(needle, sizeof(needle), "\"path\":\"%s\"", fn);
	ITEST_CHECK(fake_last_has(needle));
	ITEST_CHECK(access(fn, F_OK) == 0);
	resp = raw_call("nvmf_emu_list_functions", NULL);
	ITEST_CHECK(resp && strstr(json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN),
				   "\"bus\":\"hp0\""));
	json_object_put(resp);

	/* The only port is taken. */
	ITEST_CHECK(raw_ok("nvmf_create_subsystem", "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp2\"}"));
	snprintf(params, sizeof(params),
		 "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp2\", \"manager\": \"qemu0\", "
		 "\"listen_address\": {\"trtype\": \"PCIE_EMU\", \"traddr\": \"%s/fn1.sock\"}}",
		 raw_dir);
	resp = raw_call("nvmf_subsystem_add_listener", params);
	ITEST_CHECK(raw_error_code(resp) == -ENOSPC);
	json_object_put(resp);

	/* device_del, then DEVICE_DELETED for our id: the endpoint closes. Before that QEMU (or
	 * whoever holds its QMP socket) sends events with null and mistyped fields: ignored. */
	fake.mode = FAKE_NULLS;
	snprintf(params, sizeof(params),
		 "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\", "
		 "\"listen_address\": {\"trtype\": \"PCIE_EMU\", \"traddr\": \"%s\"}}",
		 fn);
	ITEST_CHECK(raw_ok("nvmf_subsystem_remove_listener", params));
	ITEST_CHECK(raw_alive());
	fake.mode = FAKE_OK;
	ITEST_CHECK(fake_last_has("\"execute\":\"device_del\""));
	ITEST_CHECK(access(fn, F_OK) != 0);

	/* A client that leaves while device_add is in flight costs nothing: the
	 * hotplug completes and the next client sees it. */
	fake.mode = FAKE_HOLD;
	{
		char *req;
		int fd = raw_connect();

		snprintf(params, sizeof(params),
			 "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\", \"manager\": \"qemu0\", "
			 "\"listen_address\": {\"trtype\": \"PCIE_EMU\", \"traddr\": \"%s\"}}",
			 fn);
		ITEST_CHECK(asprintf(&req,
				     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
				     "\"nvmf_subsystem_add_listener\",\"params\":%s}",
				     params) > 0);
		ITEST_CHECK(fd >= 0 && raw_send_str(fd, req) == 0);
		free(req);
		for (int i = 0; i < 100 && !fake_last_has("device_add"); i++)
			usleep(20000);
		close(fd);
		/* Meanwhile the server answers others, and refuses a second listener. */
		resp = raw_call("nvmf_subsystem_add_listener", params);
		ITEST_CHECK(raw_error_code(resp) == -EEXIST);
		json_object_put(resp);
		ITEST_CHECK(write(fake.hold_pipe[1], "x", 1) == 1);
	}
	fake.mode = FAKE_OK;
	{
		bool live = false;

		/* Bounded wait for the held device_add to complete. */
		for (int i = 0; i < 100 && !live; i++) {
			resp = raw_call("nvmf_get_subsystems",
					"{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\"}");
			live = resp &&
			       strstr(json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN),
				      "\"state\":\"live\"");
			json_object_put(resp);
			if (!live)
				usleep(20000);
		}
		ITEST_CHECK(live);
	}
	/* Deleting the subsystem unplugs it first. */
	ITEST_CHECK(raw_ok("nvmf_delete_subsystem", "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp\"}"));
	ITEST_CHECK(fake_last_has("\"execute\":\"device_del\""));
	ITEST_CHECK(access(fn, F_OK) != 0);
	fake_stop();
	/* QEMU is gone: a manager without a QMP server fails add_listener cleanly. */
	snprintf(params, sizeof(params),
		 "{\"nqn\": \"nqn.2026-11.io.nvme-emu:qmp2\", \"manager\": \"qemu0\", "
		 "\"listen_address\": {\"trtype\": \"PCIE_EMU\", \"traddr\": \"%s\"}}",
		 fn);
	resp = raw_call("nvmf_subsystem_add_listener", params);
	ITEST_CHECK(raw_error_code(resp) == -ENOENT || raw_error_code(resp) == -ECONNREFUSED);
	json_object_put(resp);
	ITEST_CHECK(raw_alive());
}

static void test_daemon_exit(const char *build)
{
	/* Status 0 also means no leak: LeakSanitizer fails the exit under ASan. */
	ITEST_CHECK(raw_stop() == 0);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";
	int rc;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (raw_start(build)) {
		fprintf(stderr, "cannot start %s/bin/nvme-emu\n", build);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	itest_run("split_and_joined", test_split_and_joined, build);
	itest_run("parse_errors", test_parse_errors, build);
	itest_run("invalid_requests", test_invalid_requests, build);
	itest_run("huge_request", test_huge_request, build);
	itest_run("disconnects", test_disconnects, build);
	itest_run("many_clients", test_many_clients, build);
	itest_run("client_waits_for_slot", test_client_waits_for_slot, build);
	itest_run("qmp_hotplug", test_qmp_hotplug, build);
	itest_run("daemon_exit", test_daemon_exit, build);
	rc = itest_summary();
	if (rc) {
		char cmd[256];

		/* The daemon's side of the story. */
		snprintf(cmd, sizeof(cmd), "tail -n 40 %s", raw_log);
		if (system(cmd) < 0)
			perror("system");
	}
	unlink(raw_log);
	rmdir(raw_dir);
	return rc;
}
