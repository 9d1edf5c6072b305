/* app/qmp.c - asynchronous QMP client: greeting, capabilities negotiation, one command, and the
 * wait for a DEVICE_DELETED event, as a small state machine on the evloop. */
#include "app/qmp.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define QMP_LOG "qmp"
#define QMP_READ_CHUNK 4096
/* QMP replies and events are small; anything larger is not a QEMU we understand. */
#define QMP_MAX_MESSAGE (1u << 20)

enum app_qmp_state {
	APP_QMP_GREETING, /* waiting for {"QMP": ...} */
	APP_QMP_CAPS,	  /* sent qmp_capabilities, waiting for its return */
	APP_QMP_CMD,	  /* sent the command, waiting for its return */
	APP_QMP_EVENT,	  /* waiting for DEVICE_DELETED */
};

struct app_qmp_op {
	struct evloop *loop;
	int fd;
	struct evloop_watch *watch;
	struct evloop_timer *timer;
	struct json_tokener *tok;
	size_t msg_bytes;
	enum app_qmp_state state;
	struct json_object *cmd;
	char *wait_device;
	bool deleted; /* DEVICE_DELETED seen (it may come before the command's return) */
	app_qmp_done done;
	void *arg;
};

static void app_qmp_finish(struct app_qmp_op *op, int rc, const char *message)
{
	app_qmp_done done = op->done;
	void *arg = op->arg;

	if (op->timer)
		evloop_timer_cancel(op->timer);
	evloop_watch_remove(op->watch);
	close(op->fd);
	json_tokener_free(op->tok);
	json_object_put(op->cmd);
	free(op->wait_device);
	free(op);
	if (rc)
		LOG_WARN(QMP_LOG, "%s", message);
	done(arg, rc, message);
}

static int app_qmp_send(struct app_qmp_op *op, struct json_object *msg)
{
	size_t len;
	const char *s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN, &len);

	while (len) {
		ssize_t n = send(op->fd, s, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Member `key` of obj when obj is an object and the member a JSON string; NULL otherwise. QEMU's
 * messages are input like any other: a null, missing or mistyped field is not what we want. */
static const char *app_qmp_string(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool app_qmp_is_our_deletion(struct app_qmp_op *op, struct json_object *msg)
{
	struct json_object *data;
	const char *ev, *dev;

	if (!op->wait_device)
		return false;
	ev = app_qmp_string(msg, "event");
	if (!ev || strcmp(ev, "DEVICE_DELETED") || !json_object_object_get_ex(msg, "data", &data))
		return false;
	dev = app_qmp_string(data, "device");
	return dev && !strcmp(dev, op->wait_device);
}

/* Handles one message. Returns true when the op finished (and was freed). */
static bool app_qmp_message(struct app_qmp_op *op, struct json_object *msg)
{
	struct json_object *err;
	const char *desc_text;
	char text[512];
	int rc;

	if (!json_object_is_type(msg, json_type_object)) {
		app_qmp_finish(op, -EPROTO, "QMP: not a JSON object from QEMU");
		return true;
	}
	if (json_object_object_get_ex(msg, "event", NULL)) {
		if (app_qmp_is_our_deletion(op, msg))
			op->deleted = true;
		if (op->state == APP_QMP_EVENT && op->deleted) {
			app_qmp_finish(op, 0, NULL);
			return true;
		}
		return false;
	}
	if (json_object_object_get_ex(msg, "error", &err)) {
		desc_text = app_qmp_string(err, "desc");
		snprintf(text, sizeof(text), "QMP error: %s",
			 desc_text ? desc_text : json_object_to_json_string(err));
		app_qmp_finish(op, -EIO, text);
		return true;
	}
	switch (op->state) {
	case APP_QMP_GREETING: {
		struct json_object *caps;

		if (!json_object_object_get_ex(msg, "QMP", NULL)) {
			app_qmp_finish(op, -EPROTO, "QMP: no greeting from QEMU");
			return true;
		}
		caps = json_object_new_object();
		json_object_object_add(caps, "execute", json_object_new_string("qmp_capabilities"));
		rc = app_qmp_send(op, caps);
		json_object_put(caps);
		op->state = APP_QMP_CAPS;
		break;
	}
	case APP_QMP_CAPS:
		if (!json_object_object_get_ex(msg, "return", NULL))
			return false;
		rc = app_qmp_send(op, op->cmd);
		op->state = APP_QMP_CMD;
		break;
	case APP_QMP_CMD:
		if (!json_object_object_get_ex(msg, "return", NULL))
			return false;
		if (!op->wait_device || op->deleted) {
			app_qmp_finish(op, 0, NULL);
			return true;
		}
		op->state = APP_QMP_EVENT;
		return false;
	case APP_QMP_EVENT:
	default:
		return false;
	}
	if (rc) {
		snprintf(text, sizeof(text), "QMP: cannot send: %s", strerror(-rc));
		app_qmp_finish(op, rc, text);
		return true;
	}
	return false;
}

static void app_qmp_readable(int fd, uint32_t events, void *arg)
{
	struct app_qmp_op *op = arg;
	char buf[QMP_READ_CHUNK];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	size_t off = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		app_qmp_finish(op, -ECONNRESET, "QMP: QEMU closed the connection");
		return;
	}
	while (off < (size_t)n) {
		struct json_object *msg;
		enum json_tokener_error jerr;
		size_t used;
		bool finished;

		msg = json_tokener_parse_ex(op->tok, buf + off, (int)((size_t)n - off));
		jerr = json_tokener_get_error(op->tok);
		if (jerr == json_tokener_continue) {
			op->msg_bytes += (size_t)n - off;
			if (op->msg_bytes > QMP_MAX_MESSAGE)
				app_qmp_finish(op, -EPROTO, "QMP: message too large");
			return;
		}
		if (jerr != json_tokener_success) {
			app_qmp_finish(op, -EPROTO, "QMP: unparsable reply from QEMU");
			return;
		}
		used = json_tokener_get_parse_end(op->tok);
		off += used ? used : (size_t)n - off;
		op->msg_bytes = 0;
		json_tokener_reset(op->tok);
		finished = app_qmp_message(op, msg);
		json_object_put(msg);
		if (finished)
			return;
	}
}

static void app_qmp_timeout(void *arg)
{
	struct app_qmp_op *op = arg;

	op->timer = NULL;
	app_qmp_finish(op, -ETIMEDOUT,
		       op->state == APP_QMP_EVENT
			   ? "QMP: the guest did not release the device in time (no DEVICE_DELETED)"
			   : "QMP: no answer from QEMU in time");
}

int app_qmp_run(struct evloop *loop, const char *qmp_socket, struct json_object *cmd,
		const char *wait_device, uint64_t timeout_us, app_qmp_done done, void *arg,
		struct app_qmp_op **out)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct app_qmp_op *op;
	int rc;

	if (strlen(qmp_socket) >= sizeof(sa.sun_path)) {
		json_object_put(cmd);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, qmp_socket);
	op = calloc(1, sizeof(*op));
	if (!op) {
		json_object_put(cmd);
		return -ENOMEM;
	}
	op->loop = loop;
	op->cmd = cmd;
	op->done = done;
	op->arg = arg;
	op->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (op->fd < 0) {
		rc = -errno;
		goto out_free;
	}
	if (connect(op->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		rc = -errno;
		goto out_close;
	}
	op->tok = json_tokener_new();
	op->wait_device = wait_device ? strdup(wait_device) : NULL;
	if (!op->tok || (wait_device && !op->wait_device)) {
		rc = -ENOMEM;
		goto out_tok;
	}
	op->watch = evloop_watch_add(loop, op->fd, EPOLLIN, app_qmp_readable, op);
	if (!op->watch) {
		rc = -ENOMEM;
		goto out_tok;
	}
	op->timer = evloop_timer_add(loop, timeout_us, app_qmp_timeout, op);
	if (!op->timer) {
		rc = -ENOMEM;
		goto out_watch;
	}
	if (out)
		*out = op;
	return 0;

out_watch:
	evloop_watch_remove(op->watch);
out_tok:
	if (op->tok)
		json_tokener_free(op->tok);
	free(op->wait_device);
out_close:
	close(op->fd);
out_free:
	json_object_put(op->cmd);
	free(op);
	return rc;
}

void app_qmp_cancel(struct app_qmp_op *op)
{
	app_qmp_finish(op, -ECANCELED, "QMP: cancelled");
}
