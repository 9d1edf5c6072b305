/* common/evloop.h - the main ("Arm control") thread's event loop: fd
 * watches, deferred calls, timers and messages from other threads. */
#ifndef NVME_EMU_COMMON_EVLOOP_H
#define NVME_EMU_COMMON_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>

struct evloop;
struct evloop_watch;
struct evloop_timer;

/* Called on the loop thread with the epoll events (EPOLLIN, ...) seen. */
typedef void (*evloop_fd_fn)(int fd, uint32_t events, void *arg);
typedef void (*evloop_fn)(void *arg);

/* Creates a loop. Returns NULL on failure (errno set). */
struct evloop *evloop_create(void);
/* Destroys a loop; watches and timers still registered are freed, pending
 * messages are dropped without being run. */
void evloop_destroy(struct evloop *loop);

/* Watches fd for events (EPOLLIN etc.). Loop thread only. Returns NULL on
 * failure. The fd stays owned by the caller. */
struct evloop_watch *evloop_watch_add(struct evloop *loop, int fd, uint32_t events,
				      evloop_fd_fn fn, void *arg);
int evloop_watch_modify(struct evloop_watch *w, uint32_t events);
/* Removes a watch; safe from inside its own callback. */
void evloop_watch_remove(struct evloop_watch *w);

/* Runs fn(arg) on the loop thread after the current callback returns, before
 * the loop sleeps again. Loop thread only. Returns 0 or -ENOMEM. */
int evloop_defer(struct evloop *loop, evloop_fn fn, void *arg);

/* Runs fn(arg) on the loop thread. Any thread; wakes the loop. Messages run
 * in the order they were sent. Returns 0 or -ENOMEM. */
int evloop_send_msg(struct evloop *loop, evloop_fn fn, void *arg);

/* A message whose storage the sender provides, typically embedded in the
 * object it is about: posting it cannot fail, so a flow that must finish
 * (a reset, an unmap, a teardown) never loses a step to an allocation. */
struct evloop_msg {
	evloop_fn fn;
	void *arg;
	struct evloop_msg *next;
	bool heap; /* allocated by evloop_send_msg (internal) */
};
/* Like evloop_send_msg with the caller's storage: m must stay valid and not be
 * posted again until fn(arg) has started. Any thread. */
void evloop_post(struct evloop *loop, struct evloop_msg *m, evloop_fn fn, void *arg);

/* One-shot timer firing after `usec` microseconds; cancel before it fires
 * with evloop_timer_cancel (the timer is freed either way). Loop thread only. */
struct evloop_timer *evloop_timer_add(struct evloop *loop, uint64_t usec, evloop_fn fn,
				      void *arg);
void evloop_timer_cancel(struct evloop_timer *t);

/* A poller runs at the start of every loop iteration, on the loop thread, for work that no fd
 * announces (doorbells in shared memory). It returns how long the loop may sleep before calling
 * it again, in microseconds: 0 keeps the loop spinning (fds, messages and timers are then looked
 * at without blocking every few rounds), -1 lets it sleep until an event. One per loop; fn NULL
 * removes it. Loop thread only. */
typedef int64_t (*evloop_poll_fn)(void *arg);
void evloop_set_poller(struct evloop *loop, evloop_poll_fn fn, void *arg);

/* Runs one iteration: waits up to timeout_ms (-1 forever) for events, then
 * runs callbacks, messages, timers and deferred calls. Returns the number of
 * callbacks run, or -errno. */
int evloop_run_once(struct evloop *loop, int timeout_ms);
/* Runs until evloop_stop. Returns 0. */
int evloop_run(struct evloop *loop);
/* Makes evloop_run return; any thread. */
void evloop_stop(struct evloop *loop);
/* True when called on the thread running the loop (or before it ever ran). */
bool evloop_is_loop_thread(struct evloop *loop);

/* Ownership checks: every object has one owner thread, the one running its
 * loop. Debug builds (NVME_EMU_DEBUG, set by `make SAN=1`) abort on a call
 * from any other thread, so a wrong-thread call fails a test instead of
 * racing; release builds compile them out. */
#ifdef NVME_EMU_DEBUG
#define EVLOOP_ASSERT_OWNER(loop)                                                                  \
	do {                                                                                       \
		if (!evloop_is_loop_thread(loop))                                                  \
			evloop_owner_violation(__FILE__, __LINE__, __func__);                      \
	} while (0)
#else
#define EVLOOP_ASSERT_OWNER(loop) ((void)(loop))
#endif
/* Reports a call on the wrong thread and aborts (debug builds). */
void evloop_owner_violation(const char *file, int line, const char *func)
    __attribute__((noreturn));

/* Monotonic clock in microseconds. */
uint64_t evloop_now_us(void);
/* Monotonic clock in nanoseconds. */
uint64_t evloop_now_ns(void);

/* The time of the calling thread's current loop round, in nanoseconds of the monotonic clock,
 * for stamps on the data path that must not read the clock per command (per-command latencies,
 * controller/core/iostat.c). A loop refreshes it after every wait that may have slept, and a poller
 * that reads the clock each round anyway publishes that reading with evloop_clock_refresh_us, so
 * it is at most one round old. 0 on a thread that never ran a loop round. */
extern __thread uint64_t evloop_tls_clock_ns;
static inline uint64_t evloop_clock_ns(void)
{
	return evloop_tls_clock_ns;
}
/* Reads the clock, makes it the calling thread's round time and returns it in microseconds (as
 * evloop_now_us). */
uint64_t evloop_clock_refresh_us(void);

/* Microseconds the loop's thread has spent waiting for events with a timeout other than zero
 * (asleep in epoll), since the loop was created. Any thread (a relaxed read). */
uint64_t evloop_sleep_us(const struct evloop *loop);

#endif
