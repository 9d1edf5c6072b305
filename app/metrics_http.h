/* app/metrics_http.h - the HTTP/1.1 server of the metrics endpoint: GET (and HEAD) /metrics on a
 * TCP listener, served by the main thread's event loop without ever blocking it.
 *
 * Clients are not trusted: a request head is at most METRICS_HTTP_MAX_HEAD bytes (431 past it)
 * and must arrive within METRICS_HTTP_HEAD_TIMEOUT_MS of the connection or the previous response
 * (408), a response must be taken within METRICS_HTTP_WRITE_TIMEOUT_MS, an idle kept-alive
 * connection is closed after METRICS_HTTP_IDLE_TIMEOUT_MS, at most METRICS_HTTP_MAX_CONNS
 * connections are served at once (more are closed at once), requests with a body are refused
 * (400), other paths get 404 and other methods 405; every timer is an evloop timer. */
#ifndef NVME_EMU_APP_METRICS_HTTP_H
#define NVME_EMU_APP_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct evloop;
struct metrics_http;

#define METRICS_HTTP_MAX_HEAD 8192
#define METRICS_HTTP_MAX_CONNS 16
#define METRICS_HTTP_HEAD_TIMEOUT_MS 10000
#define METRICS_HTTP_WRITE_TIMEOUT_MS 30000
#define METRICS_HTTP_IDLE_TIMEOUT_MS 120000

/* Makes the body of GET /metrics: a malloc'ed text of `len` bytes. 0, or -errno (500). */
typedef int (*metrics_http_render_fn)(void *arg, char **body, size_t *len);

/* What the server did (for its own metrics). Main thread. */
struct metrics_http_stats {
	uint64_t connections;  /* accepted and served */
	uint64_t rejected;     /* closed at once: METRICS_HTTP_MAX_CONNS reached */
	uint64_t timeouts;     /* closed by a timer */
	uint64_t responses[6]; /* by status class: [2] 2xx, [4] 4xx, [5] 5xx */
};

/*
 * Listens on `addr`: "IP:PORT", "[IPv6]:PORT", ":PORT" (every address, IPv6 and IPv4) or
 * "localhost:PORT" (127.0.0.1); PORT 0 picks a free one (metrics_http_address tells it). Returns 0
 * and the server, or -EINVAL (a bad address), -ENOMEM or the socket's -errno, with a message in
 * err. Main thread; the loop must outlive the server.
 */
int metrics_http_create(struct evloop *loop, const char *addr, metrics_http_render_fn render,
			void *arg, struct metrics_http **out, char *err, size_t err_len);
/* Closes the listener and every connection. NULL is accepted. */
void metrics_http_destroy(struct metrics_http *h);
/* The address listened on, as "IP:PORT" ("[IPv6]:PORT"), with the port actually bound. */
const char *metrics_http_address(const struct metrics_http *h);
/* The address as it was asked for. */
const char *metrics_http_requested(const struct metrics_http *h);
void metrics_http_get_stats(const struct metrics_http *h, struct metrics_http_stats *st);

#endif
