/* app/rpc_server.c - the JSON-RPC 2.0 server: unix socket, connections, incremental parsing of
 * back-to-back JSON values (json_tokener), dispatch to methods, responses. */
#include "app/rpc.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define RPC_LOG "rpc"
#define RPC_READ_CHUNK 65536
/* A client that does not read its responses is dropped past this much queued output. */
#define RPC_MAX_OUTPUT (64u << 20)

struct rpc_client {
	struct rpc_server *srv;
	int fd;
	struct evloop_watch *watch;
	struct json_tokener *tok;
	char *in; /* bytes read and not yet parsed: in[in_off, in_len) */
	size_t in_off, in_len;
	size_t req_bytes; /* bytes of the value being parsed, so far */
	char *out;	  /* response bytes not yet written: out[out_off, out_len) */
	size_t out_off, out_len, out_cap;
	struct rpc_request *pending; /* the request being executed; reading waits for it */
	bool closing;		     /* close once the output is flushed */
	bool resume;		     /* on the server's resume list */
	bool in_dispatch;	     /* inside rpc_client_handle: its loop goes on by itself */
	struct rpc_client *next;
};

struct rpc_request {
	struct rpc_server *srv;
	struct rpc_client *client; /* NULL: gone, or an internal call */
	struct json_object *msg;   /* the whole request (owns params) */
	struct json_object *id;	   /* borrowed from msg; NULL for a notification */
	bool notification;
	rpc_call_done done; /* internal calls */
	void *done_arg;
	struct rpc_request *next_internal;
};

struct rpc_method_table {
	const struct rpc_method *methods;
	size_t n;
	struct rpc_method_table *next;
};

struct rpc_server {
	struct evloop *loop;
	void *ctx;
	char *path;
	int lfd;
	struct evloop_watch *lwatch;
	struct rpc_client *clients;
	unsigned int nr_clients;
	bool accept_paused; /* RPC_MAX_CLIENTS open: new clients wait in the listen backlog */
	struct rpc_method_table *tables;
	unsigned int state;
	struct evloop_timer *resume_timer;
	struct rpc_request *internal; /* internal calls not yet complete */
};

static void rpc_client_process(struct rpc_client *c);
static void rpc_client_update_events(struct rpc_client *c);

static int rpc_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* ---- methods ---- */

const struct rpc_method *rpc_server_find(const struct rpc_server *srv, const char *name)
{
	for (const struct rpc_method_table *t = srv->tables; t; t = t->next)
		for (size_t i = 0; i < t->n; i++)
			if (!strcmp(t->methods[i].name, name))
				return &t->methods[i];
	return NULL;
}

int rpc_server_register(struct rpc_server *srv, const struct rpc_method *methods, size_t n)
{
	struct rpc_method_table *t, **tail;

	for (size_t i = 0; i < n; i++)
		if (rpc_server_find(srv, methods[i].name))
			return -EEXIST;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->methods = methods;
	t->n = n;
	for (tail = &srv->tables; *tail; tail = &(*tail)->next)
		;
	*tail = t;
	return 0;
}

void rpc_server_foreach_method(const struct rpc_server *srv,
			       void (*fn)(const struct rpc_method *m, void *arg), void *arg)
{
	for (const struct rpc_method_table *t = srv->tables; t; t = t->next)
		for (size_t i = 0; i < t->n; i++)
			fn(&t->methods[i], arg);
}

void rpc_server_set_state(struct rpc_server *srv, unsigned int state)
{
	srv->state = state;
}

unsigned int rpc_server_get_state(const struct rpc_server *srv)
{
	return srv->state;
}

/* ---- output ---- */

/* At RPC_MAX_CLIENTS open connections the listening socket is no longer watched, so a client
 * that connects meanwhile waits in the backlog and is accepted as soon as one closes, rather
 * than being accepted and closed at once: a client closing and a new one connecting in the same
 * loop turn would otherwise race (the new one refused though a slot was freeing). */
static void rpc_server_accept_limit(struct rpc_server *srv)
{
	bool full = srv->nr_clients >= RPC_MAX_CLIENTS;
	int rc;

	if (full == srv->accept_paused || !srv->lwatch)
		return;
	rc = evloop_watch_modify(srv->lwatch, full ? 0 : EPOLLIN);
	if (rc) {
		/* Still watched: a client past the limit is accepted and closed at once. */
		LOG_ERR(RPC_LOG, "RPC socket: cannot %s accepting: %s", full ? "pause" : "resume",
			strerror(-rc));
		return;
	}
	srv->accept_paused = full;
	if (full)
		LOG_WARN(RPC_LOG, "%d RPC connections open: new ones wait until one closes",
			 RPC_MAX_CLIENTS);
}

static void rpc_client_close(struct rpc_client *c)
{
	struct rpc_server *srv = c->srv;
	struct rpc_client **pp;

	for (pp = &srv->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	srv->nr_clients--;
	rpc_server_accept_limit(srv);
	/* The method still runs; its completion finds no client and sends nothing. */
	if (c->pending)
		c->pending->client = NULL;
	evloop_watch_remove(c->watch);
	close(c->fd);
	json_tokener_free(c->tok);
	free(c->in);
	free(c->out);
	free(c);
}

/* Writes what it can. Returns 0, or -1 when the client was closed. */
static int rpc_client_flush(struct rpc_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			rpc_client_close(c);
			return -1;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		if (c->closing) {
			rpc_client_close(c);
			return -1;
		}
	}
	rpc_client_update_events(c);
	return 0;
}

static int rpc_client_queue(struct rpc_client *c, const char *s, size_t len)
{
	if (c->out_len + len + 1 > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *p;

		while (cap < c->out_len + len + 1)
			cap *= 2;
		if (cap > RPC_MAX_OUTPUT)
			return -ENOBUFS;
		p = realloc(c->out, cap);
		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out_len += len;
	c->out[c->out_len++] = '\n';
	return 0;
}

/* Queues and sends one response object (ownership taken). Returns 0, or -1 when the client was
 * closed. */
static int rpc_client_send(struct rpc_client *c, struct json_object *resp)
{
	size_t len;
	const char *s = json_object_to_json_string_length(resp, JSON_C_TO_STRING_PLAIN, &len);
	int rc = s ? rpc_client_queue(c, s, len) : -ENOMEM;

	json_object_put(resp);
	if (rc) {
		LOG_WARN(RPC_LOG, "dropping a client: cannot queue its response (%s)",
			 strerror(-rc));
		rpc_client_close(c);
		return -1;
	}
	return rpc_client_flush(c);
}

static struct json_object *rpc_response_new(struct json_object *id)
{
	struct json_object *resp = json_object_new_object();

	if (!resp)
		return NULL;
	json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(resp, "id", id ? json_object_get(id) : NULL);
	return resp;
}

static struct json_object *rpc_error_new(int code, const char *message)
{
	struct json_object *e = json_object_new_object();

	if (!e)
		return NULL;
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	return e;
}

/* Sends an error not tied to a parsed request (id null). Returns as rpc_client_send. */
static int rpc_client_send_error(struct rpc_client *c, struct json_object *id, int code,
				 const char *message)
{
	struct json_object *resp = rpc_response_new(id);

	if (!resp) {
		rpc_client_close(c);
		return -1;
	}
	json_object_object_add(resp, "error", rpc_error_new(code, message));
	return rpc_client_send(c, resp);
}

/* ---- resuming clients after an asynchronous completion ---- */

static void rpc_server_resume(void *arg)
{
	struct rpc_server *srv = arg;
	struct rpc_client *c, *next;

	srv->resume_timer = NULL;
	for (c = srv->clients; c; c = next) {
		next = c->next;
		if (!c->resume)
			continue;
		c->resume = false;
		/* Processing may close c or others: restart from the head after each one. */
		rpc_client_process(c);
		next = srv->clients;
	}
}

static void rpc_server_schedule_resume(struct rpc_server *srv, struct rpc_client *c)
{
	c->resume = true;
	if (!srv->resume_timer)
		srv->resume_timer = evloop_timer_add(srv->loop, 0, rpc_server_resume, srv);
}

/* ---- completing ---- */

static void rpc_request_free(struct rpc_request *req)
{
	json_object_put(req->msg);
	free(req);
}

static void rpc_request_finish(struct rpc_request *req, struct json_object *result, int code,
			       const char *message)
{
	struct rpc_client *c = req->client;

	if (req->done) {
		struct rpc_request **pp;

		for (pp = &req->srv->internal; *pp; pp = &(*pp)->next_internal) {
			if (*pp == req) {
				*pp = req->next_internal;
				break;
			}
		}
		req->done(req->done_arg, code ? NULL : result, code, message);
		json_object_put(result);
		rpc_request_free(req);
		return;
	}
	if (c) {
		c->pending = NULL;
		if (!req->notification) {
			struct json_object *resp = rpc_response_new(req->id);

			if (resp && code)
				json_object_object_add(resp, "error", rpc_error_new(code, message));
			else if (resp)
				json_object_object_add(resp, "result", json_object_get(result));
			if (!resp || rpc_client_send(c, resp))
				c = NULL;
		}
		/* Outside the client's own parsing loop, pick up its next request later. */
		if (c && !c->in_dispatch)
			rpc_server_schedule_resume(req->srv, c);
	}
	json_object_put(result);
	rpc_request_free(req);
}

void rpc_request_result(struct rpc_request *req, struct json_object *result)
{
	rpc_request_finish(req, result, 0, NULL);
}

void rpc_request_error(struct rpc_request *req, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rpc_request_finish(req, NULL, code ? code : RPC_ERR_INTERNAL, msg);
}

void rpc_request_errno(struct rpc_request *req, int rc, const char *what)
{
	rpc_request_error(req, rc < 0 ? rc : RPC_ERR_INTERNAL, "%s: %s", what,
			  strerror(rc < 0 ? -rc : EIO));
}

struct rpc_server *rpc_request_server(const struct rpc_request *req)
{
	return req->srv;
}

/* ---- dispatch ---- */

/* Validates a request object and runs its method. Takes the reference on msg. */
static void rpc_dispatch(struct rpc_server *srv, struct rpc_request *req)
{
	struct json_object *msg = req->msg, *v, *params = NULL;
	const struct rpc_method *m;
	const char *name;

	if (!json_object_is_type(msg, json_type_object)) {
		rpc_request_error(req, RPC_ERR_INVALID_REQUEST,
				  json_object_is_type(msg, json_type_array)
				      ? "Invalid request: batch requests are not supported"
				      : "Invalid request: not a JSON object");
		return;
	}
	if (json_object_object_get_ex(msg, "id", &v)) {
		if (v && !json_object_is_type(v, json_type_string) &&
		    !json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double)) {
			rpc_request_error(req, RPC_ERR_INVALID_REQUEST,
					  "Invalid request: id must be a string, number or null");
			return;
		}
		req->id = v;
	} else {
		req->notification = !req->done;
	}
	if (!json_object_object_get_ex(msg, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "2.0")) {
		rpc_request_error(req, RPC_ERR_INVALID_REQUEST,
				  "Invalid request: \"jsonrpc\" must be \"2.0\"");
		return;
	}
	if (!json_object_object_get_ex(msg, "method", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		rpc_request_error(req, RPC_ERR_INVALID_REQUEST,
				  "Invalid request: \"method\" must be a string");
		return;
	}
	name = json_object_get_string(v);
	if (json_object_object_get_ex(msg, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object) &&
	    !json_object_is_type(params, json_type_array)) {
		rpc_request_error(req, RPC_ERR_INVALID_REQUEST,
				  "Invalid request: \"params\" must be an object or an array");
		return;
	}
	m = rpc_server_find(srv, name);
	if (!m) {
		rpc_request_error(req, RPC_ERR_METHOD_NOT_FOUND, "Method not found: %s", name);
		return;
	}
	if (!srv->state) {
		rpc_request_error(req, -ESHUTDOWN, "the target is shutting down");
		return;
	}
	if (!(m->state_mask & srv->state)) {
		rpc_request_error(req, RPC_ERR_METHOD_NOT_FOUND,
				  srv->state == RPC_STARTUP
				      ? "Method %s may only be called after framework_start_init"
				      : "Method %s may only be called before framework_start_init",
				  name);
		return;
	}
	LOG_DBG(RPC_LOG, "request %s", name);
	m->fn(req, params, srv->ctx);
}

static bool rpc_client_alive(const struct rpc_server *srv, const struct rpc_client *c)
{
	for (const struct rpc_client *x = srv->clients; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

/* Handles one parsed value from a client (reference taken). */
static void rpc_client_handle(struct rpc_client *c, struct json_object *msg)
{
	struct rpc_request *req = calloc(1, sizeof(*req));
	struct rpc_server *srv = c->srv;

	if (!req) {
		json_object_put(msg);
		rpc_client_send_error(c, NULL, RPC_ERR_INTERNAL, "Out of memory");
		return;
	}
	req->srv = srv;
	req->client = c;
	req->msg = msg;
	c->pending = req;
	c->in_dispatch = true;
	rpc_dispatch(srv, req);
	/* A failed send of the response may have closed (freed) c. */
	if (rpc_client_alive(srv, c))
		c->in_dispatch = false;
}

static void rpc_client_update_events(struct rpc_client *c)
{
	uint32_t ev = 0;

	/* Read only when idle: one request at a time per connection, answered in order. */
	if (!c->pending && !c->closing && c->in_off == c->in_len)
		ev |= EPOLLIN;
	if (c->out_off < c->out_len)
		ev |= EPOLLOUT;
	evloop_watch_modify(c->watch, ev);
}

/* Parses and runs what is buffered, as long as no request is pending. */
static void rpc_client_process(struct rpc_client *c)
{
	struct rpc_server *srv = c->srv;

	while (!c->pending && !c->closing && c->in_off < c->in_len) {
		size_t avail = c->in_len - c->in_off, used;
		struct json_object *obj;
		enum json_tokener_error jerr;

		/* json_tokener takes at most INT_MAX bytes at once. */
		if (avail > RPC_READ_CHUNK)
			avail = RPC_READ_CHUNK;
		obj = json_tokener_parse_ex(c->tok, c->in + c->in_off, (int)avail);
		jerr = json_tokener_get_error(c->tok);
		if (jerr == json_tokener_continue) {
			c->in_off += avail;
			c->req_bytes += avail;
			if (c->req_bytes > RPC_MAX_REQUEST) {
				LOG_WARN(RPC_LOG, "dropping a client: request over %u bytes",
					 RPC_MAX_REQUEST);
				c->in_off = c->in_len;
				c->closing = true;
				rpc_client_send_error(c, NULL, RPC_ERR_PARSE,
						      "Parse error: request too large");
				return;
			}
			continue;
		}
		if (jerr != json_tokener_success) {
			char msg[128];

			snprintf(msg, sizeof(msg), "Parse error: %s",
				 json_tokener_error_desc(jerr));
			c->in_off = c->in_len;
			c->closing = true;
			rpc_client_send_error(c, NULL, RPC_ERR_PARSE, msg);
			return;
		}
		used = json_tokener_get_parse_end(c->tok);
		if (used > avail)
			used = avail;
		c->in_off += used;
		c->req_bytes += used;
		if (c->req_bytes > RPC_MAX_REQUEST) {
			json_object_put(obj);
			c->in_off = c->in_len;
			c->closing = true;
			rpc_client_send_error(c, NULL, RPC_ERR_PARSE,
					      "Parse error: request too large");
			return;
		}
		c->req_bytes = 0;
		json_tokener_reset(c->tok);
		rpc_client_handle(c, obj);
		/* The method may have completed and its response may have closed c. */
		if (!rpc_client_alive(srv, c))
			return;
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	rpc_client_update_events(c);
}

static void rpc_client_event(int fd, uint32_t events, void *arg)
{
	struct rpc_client *c = arg;

	if (events & EPOLLOUT) {
		if (rpc_client_flush(c))
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		ssize_t n;

		if (c->pending || c->in_off < c->in_len) {
			/* Not reading now: only a hang-up matters; drop the client, the
			 * pending request completes into nothing. */
			if (events & (EPOLLHUP | EPOLLERR))
				rpc_client_close(c);
			return;
		}
		n = recv(fd, c->in, RPC_READ_CHUNK, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			rpc_client_close(c);
			return;
		}
		c->in_off = 0;
		c->in_len = (size_t)n;
		rpc_client_process(c);
	}
}

static void rpc_server_accept(int fd, uint32_t events, void *arg)
{
	struct rpc_server *srv = arg;
	struct rpc_client *c;
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd < 0)
		return;
	if (srv->nr_clients >= RPC_MAX_CLIENTS) {
		LOG_WARN(RPC_LOG, "refusing a client: %d connections open", RPC_MAX_CLIENTS);
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_close;
	c->srv = srv;
	c->fd = cfd;
	c->in = malloc(RPC_READ_CHUNK);
	c->tok = json_tokener_new();
	if (!c->in || !c->tok)
		goto out_free;
	c->watch = evloop_watch_add(srv->loop, cfd, EPOLLIN, rpc_client_event, c);
	if (!c->watch)
		goto out_free;
	c->next = srv->clients;
	srv->clients = c;
	srv->nr_clients++;
	rpc_server_accept_limit(srv);
	return;

out_free:
	if (c->tok)
		json_tokener_free(c->tok);
	free(c->in);
	free(c);
out_close:
	close(cfd);
}

/* ---- internal calls ---- */

int rpc_server_call(struct rpc_server *srv, const char *method, struct json_object *params,
		    rpc_call_done done, void *arg)
{
	struct rpc_request *req = calloc(1, sizeof(*req));
	struct json_object *msg = json_object_new_object();

	if (!req || !msg) {
		free(req);
		json_object_put(msg);
		return -ENOMEM;
	}
	json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(msg, "method", json_object_new_string(method));
	json_object_object_add(msg, "id", json_object_new_int(0));
	if (params)
		json_object_object_add(msg, "params", json_object_get(params));
	req->srv = srv;
	req->msg = msg;
	req->done = done;
	req->done_arg = arg;
	req->next_internal = srv->internal;
	srv->internal = req;
	rpc_dispatch(srv, req);
	return 0;
}

/* ---- server ---- */

/* The socket: 0600 from bind on, in a directory no other user can race us in; a stale socket
 * of ours from a dead server is replaced, a live one or anything else is refused
 * (common/unix_socket.h). */
static int rpc_server_listen(struct rpc_server *srv, const char *path)
{
	char err[256];
	int fd = unix_socket_listen(path, 0600, 16, err, sizeof(err));

	if (fd < 0) {
		LOG_ERR(RPC_LOG, "%s", err);
		return fd;
	}
	srv->lfd = fd;
	return 0;
}

int rpc_server_create(struct evloop *loop, const char *path, void *ctx, struct rpc_server **out)
{
	struct rpc_server *srv = calloc(1, sizeof(*srv));
	int rc;

	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->ctx = ctx;
	srv->state = RPC_RUNTIME;
	srv->lfd = -1;
	srv->path = strdup(path);
	if (!srv->path) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = rpc_server_listen(srv, path);
	if (rc)
		goto out_free;
	rc = rpc_set_nonblock(srv->lfd);
	if (rc)
		goto out_close;
	srv->lwatch = evloop_watch_add(loop, srv->lfd, EPOLLIN, rpc_server_accept, srv);
	if (!srv->lwatch) {
		rc = -ENOMEM;
		goto out_close;
	}
	LOG_INFO(RPC_LOG, "JSON-RPC server listening on %s", path);
	*out = srv;
	return 0;

out_close:
	close(srv->lfd);
	unix_socket_unlink(path);
out_free:
	free(srv->path);
	free(srv);
	return rc;
}

void rpc_server_destroy(struct rpc_server *srv)
{
	if (!srv)
		return;
	while (srv->clients)
		rpc_client_close(srv->clients);
	/* Internal calls still running complete into nothing. */
	while (srv->internal) {
		struct rpc_request *req = srv->internal;

		srv->internal = req->next_internal;
		req->done = NULL;
	}
	if (srv->resume_timer)
		evloop_timer_cancel(srv->resume_timer);
	evloop_watch_remove(srv->lwatch);
	close(srv->lfd);
	unix_socket_unlink(srv->path);
	while (srv->tables) {
		struct rpc_method_table *t = srv->tables;

		srv->tables = t->next;
		free(t);
	}
	free(srv->path);
	free(srv);
}
