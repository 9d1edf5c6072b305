/* app/metrics_http.c - the metrics endpoint's HTTP/1.1 server (RFC 9110, 9112) on the main event
 * loop: non-blocking sockets, one request head parsed at a time per connection (pipelined
 * requests wait in the buffer for their turn), every limit and timeout of metrics_http.h. */
#include "app/metrics_http.h"
#include "app/prom_text.h"
#include "common/evloop.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define METRICS_HTTP_LOG "metrics"

struct metrics_http_conn {
	struct metrics_http *h;
	int fd;
	struct evloop_watch *watch;
	struct evloop_timer *timer;
	char in[METRICS_HTTP_MAX_HEAD];
	size_t in_len;
	/* The response being written: its head, then its body; `off` counts both. */
	char head[512];
	size_t head_len;
	char *body;
	size_t body_len, off;
	bool body_owned;
	bool writing, close_after;
	struct metrics_http_conn *next, **pprev;
};

struct metrics_http {
	struct evloop *loop;
	int fd;
	struct evloop_watch *watch;
	metrics_http_render_fn render;
	void *arg;
	struct metrics_http_conn *conns;
	unsigned int nconns;
	char addr[INET6_ADDRSTRLEN + 16];
	char requested[128];
	struct metrics_http_stats st;
};

static const char metrics_http_index[] = "nvme-emu metrics exporter: the metrics are at /metrics\n";

static void metrics_http_close(struct metrics_http_conn *c)
{
	struct metrics_http *h = c->h;

	if (c->timer)
		evloop_timer_cancel(c->timer);
	evloop_watch_remove(c->watch);
	close(c->fd);
	if (c->body_owned)
		free(c->body);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	h->nconns--;
	free(c);
}

static void metrics_http_timer_fired(void *arg);

/* (Re)arms the connection's one timer. False when it could not: the connection is closed then
 * (without a timer a silent client would hold its slot for ever). */
static bool metrics_http_arm(struct metrics_http_conn *c, unsigned int ms)
{
	if (c->timer)
		evloop_timer_cancel(c->timer);
	c->timer = evloop_timer_add(c->h->loop, (uint64_t)ms * 1000u, metrics_http_timer_fired, c);
	if (!c->timer) {
		LOG_ERR(METRICS_HTTP_LOG, "no memory for a connection timer: connection closed");
		metrics_http_close(c);
		return false;
	}
	return true;
}

static const char *metrics_http_reason(int code)
{
	switch (code) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

static void metrics_http_want(struct metrics_http_conn *c, uint32_t events)
{
	if (evloop_watch_modify(c->watch, events))
		LOG_ERR(METRICS_HTTP_LOG, "cannot watch a connection: %s", strerror(errno));
}

static void metrics_http_try_parse(struct metrics_http_conn *c);

/* Writes what the socket takes; at the end, closes or waits for the next request. */
static void metrics_http_flush(struct metrics_http_conn *c)
{
	while (c->off < c->head_len + c->body_len) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (c->off < c->head_len) {
			iov[n].iov_base = c->head + c->off;
			iov[n++].iov_len = c->head_len - c->off;
			if (c->body_len) {
				iov[n].iov_base = c->body;
				iov[n++].iov_len = c->body_len;
			}
		} else {
			iov[n].iov_base = c->body + (c->off - c->head_len);
			iov[n++].iov_len = c->body_len - (c->off - c->head_len);
		}
		w = writev(c->fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			metrics_http_want(c, EPOLLOUT);
			return;
		}
		if (w < 0) {
			metrics_http_close(c); /* the client went away */
			return;
		}
		c->off += (size_t)w;
	}
	if (c->body_owned)
		free(c->body);
	c->body = NULL;
	c->body_owned = false;
	c->writing = false;
	if (c->close_after) {
		shutdown(c->fd, SHUT_WR);
		metrics_http_close(c);
		return;
	}
	metrics_http_want(c, EPOLLIN);
	/* Kept alive: a pipelined request may be waiting already. */
	if (metrics_http_arm(c, c->in_len ? METRICS_HTTP_HEAD_TIMEOUT_MS
					  : METRICS_HTTP_IDLE_TIMEOUT_MS) &&
	    c->in_len)
		metrics_http_try_parse(c);
}

/* Queues a response and starts writing it. `body` is borrowed unless `owned`. */
static void metrics_http_respond(struct metrics_http_conn *c, int code, const char *type,
				 char *body, size_t body_len, bool owned, bool head_only,
				 const char *extra)
{
	struct metrics_http *h = c->h;
	int n;

	h->st.responses[code / 100 < 6 ? code / 100 : 5]++;
	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Cache-Control: no-store\r\n%sConnection: %s\r\n\r\n",
		     code, metrics_http_reason(code), type, body_len, extra ? extra : "",
		     c->close_after ? "close" : "keep-alive");
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	if (head_only && owned)
		free(body);
	c->body = head_only ? NULL : body;
	c->body_len = head_only ? 0 : body_len;
	c->body_owned = owned && !head_only;
	c->off = 0;
	c->writing = true;
	if (metrics_http_arm(c, METRICS_HTTP_WRITE_TIMEOUT_MS))
		metrics_http_flush(c);
}

static void metrics_http_error(struct metrics_http_conn *c, int code, const char *why)
{
	char text[160];
	size_t len = (size_t)snprintf(text, sizeof(text), "%d %s: %s\n", code,
				      metrics_http_reason(code), why);
	char *body = strdup(text);

	/* A request the server could not read whole leaves the stream in an unknown state. */
	if (code != 404 && code != 405)
		c->close_after = true;
	if (!body) {
		c->close_after = true;
		metrics_http_respond(c, code, "text/plain; charset=utf-8", NULL, 0, false, false,
				     code == 405 ? "Allow: GET, HEAD\r\n" : NULL);
		return;
	}
	metrics_http_respond(c, code, "text/plain; charset=utf-8", body, len, true, false,
			     code == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

/* RFC 9110 5.6.2 token characters. */
static bool metrics_http_tchar(char ch)
{
	return isalnum((unsigned char)ch) || strchr("!#$%&'*+-.^_`|~", ch);
}

static bool metrics_http_token(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!metrics_http_tchar(s[i]))
			return false;
	return true;
}

/* Whether a header value (comma-separated tokens) lists `tok`, case-insensitively. */
static bool metrics_http_has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok), i = 0;

	while (i < n) {
		size_t start, end;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < n && v[i] != ',')
			i++;
		end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end - start == tl && !strncasecmp(v + start, tok, tl))
			return true;
	}
	return false;
}

/* One request head (`len` bytes, its blank line included). Responds (or closes). */
static void metrics_http_request(struct metrics_http_conn *c, const char *req, size_t len)
{
	const char *end = req + len, *line = req, *eol, *sp1, *sp2, *path;
	size_t path_len, mlen;
	bool http10, has_host = false, head_only;
	int minor;

	eol = memchr(line, '\n', (size_t)(end - line));
	if (!eol)
		return metrics_http_error(c, 400, "no request line");
	/* Request line: method SP target SP HTTP-version (RFC 9112 3). */
	sp1 = memchr(line, ' ', (size_t)(eol - line));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || !metrics_http_token(line, (size_t)(sp1 - line)) || sp2 == sp1 + 1)
		return metrics_http_error(c, 400, "malformed request line");
	{
		const char *v = sp2 + 1, *ve = eol > v && eol[-1] == '\r' ? eol - 1 : eol;

		if (ve - v != 8 || strncmp(v, "HTTP/", 5) || !isdigit((unsigned char)v[5]) ||
		    v[6] != '.' || !isdigit((unsigned char)v[7]))
			return metrics_http_error(c, 400, "malformed HTTP version");
		if (v[5] != '1')
			return metrics_http_error(c, 505, "HTTP/1.0 and HTTP/1.1 only");
		minor = v[7] - '0';
	}
	http10 = minor == 0;
	/* HTTP/1.0 closes unless it asks to keep the connection. */
	c->close_after = http10;
	path = sp1 + 1;
	path_len = (size_t)(sp2 - path);
	/* absolute-form (a proxy's request): the path after the authority. */
	if (path_len > 7 &&
	    (!strncasecmp(path, "http://", 7) || !strncasecmp(path, "https://", 8))) {
		const char *p = memchr(path + 8, '/', path_len - 8);

		path_len = p ? path_len - (size_t)(p - path) : 1;
		path = p ? p : "/";
	}
	if (path[0] != '/')
		return metrics_http_error(c, 400, "the target is not a path");
	for (size_t i = 0; i < path_len; i++) {
		if (path[i] == '?' || path[i] == '#') {
			path_len = i;
			break;
		}
	}
	/* Header fields (RFC 9112 5): name ":" OWS value OWS, up to the blank line. */
	for (line = eol + 1; line < end; line = eol + 1) {
		const char *colon, *v, *ve;
		size_t nlen;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			return metrics_http_error(c, 400, "unterminated header line");
		ve = eol > line && eol[-1] == '\r' ? eol - 1 : eol;
		if (ve == line)
			break; /* the blank line */
		if (*line == ' ' || *line == '\t')
			return metrics_http_error(c, 400, "obsolete header line folding");
		colon = memchr(line, ':', (size_t)(ve - line));
		if (!colon || !metrics_http_token(line, (size_t)(colon - line)))
			return metrics_http_error(c, 400, "malformed header field");
		nlen = (size_t)(colon - line);
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (nlen == 4 && !strncasecmp(line, "host", 4)) {
			if (has_host)
				return metrics_http_error(c, 400, "two Host fields");
			has_host = true;
		} else if (nlen == 14 && !strncasecmp(line, "content-length", 14)) {
			for (const char *d = v; d < ve; d++)
				if (!isdigit((unsigned char)*d))
					return metrics_http_error(c, 400, "bad Content-Length");
			for (const char *d = v; d < ve; d++)
				if (*d != '0')
					return metrics_http_error(
					    c, 400, "request bodies are not accepted");
			if (v == ve)
				return metrics_http_error(c, 400, "bad Content-Length");
		} else if (nlen == 17 && !strncasecmp(line, "transfer-encoding", 17)) {
			return metrics_http_error(c, 400, "request bodies are not accepted");
		} else if (nlen == 10 && !strncasecmp(line, "connection", 10)) {
			if (metrics_http_has_token(v, (size_t)(ve - v), "close"))
				c->close_after = true;
			else if (http10 &&
				 metrics_http_has_token(v, (size_t)(ve - v), "keep-alive"))
				c->close_after = false;
		}
	}
	if (!http10 && !has_host)
		return metrics_http_error(c, 400, "HTTP/1.1 needs a Host field");
	mlen = (size_t)(sp1 - req);
	head_only = mlen == 4 && !strncmp(req, "HEAD", 4);
	if (!(path_len == 8 && !strncmp(path, "/metrics", 8)) && !(path_len == 1 && *path == '/'))
		return metrics_http_error(c, 404, "the metrics are at /metrics");
	if (!head_only && !(mlen == 3 && !strncmp(req, "GET", 3)))
		return metrics_http_error(c, 405, "GET or HEAD");
	if (path_len == 1)
		return metrics_http_respond(c, 200, "text/plain; charset=utf-8",
					    (char *)metrics_http_index,
					    sizeof(metrics_http_index) - 1, false, head_only, NULL);
	{
		char *body = NULL;
		size_t blen = 0;
		int rc = c->h->render(c->h->arg, &body, &blen);

		if (rc) {
			LOG_ERR(METRICS_HTTP_LOG, "cannot render the metrics: %s", strerror(-rc));
			return metrics_http_error(c, 500, "the metrics could not be rendered");
		}
		metrics_http_respond(c, 200, PROM_CONTENT_TYPE, body, blen, true, head_only, NULL);
	}
}

/* A complete head in the buffer is served; a full buffer without one is refused. */
static void metrics_http_try_parse(struct metrics_http_conn *c)
{
	size_t head = 0, blank = 0;
	char copy[METRICS_HTTP_MAX_HEAD];

	/* Empty lines before a request line are ignored (RFC 9112 2.2). */
	while (blank < c->in_len && (c->in[blank] == '\r' || c->in[blank] == '\n'))
		blank++;
	if (blank) {
		memmove(c->in, c->in + blank, c->in_len - blank);
		c->in_len -= blank;
	}
	for (size_t i = 0; i + 1 < c->in_len; i++) {
		if (c->in[i] == '\n' && c->in[i + 1] == '\n') {
			head = i + 2;
			break;
		}
		if (c->in[i] == '\n' && c->in[i + 1] == '\r' && i + 2 < c->in_len &&
		    c->in[i + 2] == '\n') {
			head = i + 3;
			break;
		}
	}
	if (!head) {
		if (c->in_len == sizeof(c->in))
			metrics_http_error(c, 431, "the request head is larger than 8 KiB");
		return;
	}
	/* The head leaves the buffer before it is served: what follows is the next request. */
	memcpy(copy, c->in, head);
	memmove(c->in, c->in + head, c->in_len - head);
	c->in_len -= head;
	for (size_t i = 0; i < head; i++) {
		if (copy[i] == '\0') /* a NUL has no place in a head */
			return metrics_http_error(c, 400, "NUL in the request head");
	}
	metrics_http_request(c, copy, head);
}

static void metrics_http_conn_event(int fd, uint32_t events, void *arg)
{
	struct metrics_http_conn *c = arg;

	if (c->writing) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			metrics_http_flush(c);
		return;
	}
	for (;;) {
		ssize_t n;

		if (c->in_len == sizeof(c->in))
			break;
		n = read(fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			metrics_http_close(c); /* closed by the client, or reset */
			return;
		}
		/* The first bytes of a request: it has the head timeout from now. */
		if (!c->in_len && !metrics_http_arm(c, METRICS_HTTP_HEAD_TIMEOUT_MS))
			return;
		c->in_len += (size_t)n;
		if ((size_t)n < sizeof(c->in))
			break;
	}
	metrics_http_try_parse(c);
}

static void metrics_http_timer_fired(void *arg)
{
	struct metrics_http_conn *c = arg;

	c->timer = NULL;
	c->h->st.timeouts++;
	if (!c->writing && c->in_len) {
		/* A head that never ended: 408, best effort, then closed. */
		static const char r408[] = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n"
					   "Connection: close\r\n\r\n";

		c->h->st.responses[4]++;
		if (write(c->fd, r408, sizeof(r408) - 1) < 0) {
			/* the client is gone or not reading: closed below either way */
		}
	}
	metrics_http_close(c);
}

static void metrics_http_accept(int fd, uint32_t events, void *arg)
{
	struct metrics_http *h = arg;

	for (;;) {
		struct metrics_http_conn *c;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				LOG_WARN(METRICS_HTTP_LOG, "accept on %s: %s", h->addr,
					 strerror(errno));
			return;
		}
		if (h->nconns >= METRICS_HTTP_MAX_CONNS) {
			h->st.rejected++;
			close(cfd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			LOG_ERR(METRICS_HTTP_LOG, "no memory for a connection: closed");
			close(cfd);
			continue;
		}
		c->h = h;
		c->fd = cfd;
		c->watch = evloop_watch_add(h->loop, cfd, EPOLLIN, metrics_http_conn_event, c);
		if (!c->watch) {
			LOG_ERR(METRICS_HTTP_LOG, "cannot watch a connection: closed");
			close(cfd);
			free(c);
			continue;
		}
		c->next = h->conns;
		if (c->next)
			c->next->pprev = &c->next;
		c->pprev = &h->conns;
		h->conns = c;
		h->nconns++;
		h->st.connections++;
		if (!metrics_http_arm(c, METRICS_HTTP_HEAD_TIMEOUT_MS))
			continue; /* closed */
	}
}

/* "IP:PORT", "[IPv6]:PORT", ":PORT", "localhost:PORT": numeric only, so nothing here waits for
 * a name server. */
static int metrics_http_parse_addr(const char *addr, struct addrinfo **res, char *err,
				   size_t err_len)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
	char host[128];
	const char *port;
	size_t hlen;
	int rc;

	if (addr[0] == '[') {
		const char *close_b = strchr(addr, ']');

		if (!close_b || close_b[1] != ':')
			goto out_bad;
		hlen = (size_t)(close_b - addr - 1);
		if (hlen >= sizeof(host))
			goto out_bad;
		memcpy(host, addr + 1, hlen);
		port = close_b + 2;
		hints.ai_family = AF_INET6;
	} else {
		const char *colon = strrchr(addr, ':');

		if (!colon)
			goto out_bad;
		hlen = (size_t)(colon - addr);
		if (hlen >= sizeof(host))
			goto out_bad;
		memcpy(host, addr, hlen);
		port = colon + 1;
	}
	host[hlen] = '\0';
	if (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port) ||
	    atoi(port) > 65535)
		goto out_bad;
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	rc = getaddrinfo(hlen ? host : NULL, port, &hints, res);
	if (rc) {
		snprintf(err, err_len, "metrics address '%s': %s", addr, gai_strerror(rc));
		return -EINVAL;
	}
	return 0;

out_bad:
	snprintf(err, err_len,
		 "metrics address '%s': give IP:PORT, [IPv6]:PORT, :PORT or "
		 "localhost:PORT",
		 addr);
	return -EINVAL;
}

static int metrics_http_listen(struct metrics_http *h, const char *addr, char *err, size_t err_len)
{
	struct addrinfo *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	int rc = metrics_http_parse_addr(addr, &res, err, err_len), one = 1, zero = 0, fd = -1;

	if (rc)
		return rc;
	rc = -EADDRNOTAVAIL;
	/* AI_PASSIVE without a host lists the IPv4 and IPv6 wildcards: the first that works (an
	 * IPv6 one takes IPv4 too, V6ONLY off). */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 16))
			break;
		rc = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(-rc));
		return rc;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		rc = -errno;
		close(fd);
		snprintf(err, err_len, "cannot listen on %s: %s", addr, strerror(-rc));
		return rc;
	}
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(h->addr, sizeof(h->addr), "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(h->addr, sizeof(h->addr), "%s:%u", ip, ntohs(s4->sin_port));
	}
	h->fd = fd;
	return 0;
}

int metrics_http_create(struct evloop *loop, const char *addr, metrics_http_render_fn render,
			void *arg, struct metrics_http **out, char *err, size_t err_len)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	int rc;

	if (!h) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	h->loop = loop;
	h->render = render;
	h->arg = arg;
	h->fd = -1;
	snprintf(h->requested, sizeof(h->requested), "%s", addr);
	rc = metrics_http_listen(h, addr, err, err_len);
	if (rc)
		goto out_free;
	h->watch = evloop_watch_add(loop, h->fd, EPOLLIN, metrics_http_accept, h);
	if (!h->watch) {
		rc = -ENOMEM;
		snprintf(err, err_len, "cannot watch the metrics listener");
		goto out_close;
	}
	*out = h;
	return 0;

out_close:
	close(h->fd);
out_free:
	free(h);
	return rc;
}

void metrics_http_destroy(struct metrics_http *h)
{
	if (!h)
		return;
	while (h->conns)
		metrics_http_close(h->conns);
	evloop_watch_remove(h->watch);
	close(h->fd);
	free(h);
}

const char *metrics_http_address(const struct metrics_http *h)
{
	return h->addr;
}

const char *metrics_http_requested(const struct metrics_http *h)
{
	return h->requested;
}

void metrics_http_get_stats(const struct metrics_http *h, struct metrics_http_stats *st)
{
	*st = h->st;
}
