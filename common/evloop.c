/* common/evloop.c - epoll-based event loop with deferred calls, timers and a
 * cross-thread message queue woken through an eventfd. */
#include "common/evloop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Deferred calls and messages share the node type of evloop_post. */
#define evloop_call evloop_msg

struct evloop_watch {
	struct evloop *loop;
	int fd;
	evloop_fd_fn fn;
	void *arg;
	bool removed;
	struct evloop_watch *next_dead;
};

struct evloop_timer {
	struct evloop *loop;
	uint64_t deadline_us;
	evloop_fn fn;
	void *arg;
	struct evloop_timer *next;
};

struct evloop {
	int epfd;
	int wake_fd;
	atomic_bool stop;
	pthread_t thread;
	bool thread_known;
	/* deferred calls: loop thread only */
	struct evloop_call *defer_head, *defer_tail;
	/* messages from any thread */
	pthread_mutex_t msg_lock;
	struct evloop_call *msg_head, *msg_tail;
	/* timers sorted by deadline */
	struct evloop_timer *timers;
	/* watches removed during a dispatch round, freed after it */
	struct evloop_watch *dead;
	/* the poller (evloop_set_poller) and the rounds it has spun since fds were last checked */
	evloop_poll_fn poll_fn;
	void *poll_arg;
	unsigned int poll_spins;
	bool no_pwait2; /* the kernel lacks epoll_pwait2: millisecond waits */
	/* Nanoseconds spent in waits that could sleep (evloop_sleep_us): the loop thread writes,
	 * readers on any thread. */
	uint64_t sleep_ns;
};

__thread uint64_t evloop_tls_clock_ns;

/* While a poller keeps the loop spinning, fds, messages and timers are looked at once every this
 * many rounds: a non-blocking epoll_wait per round would be a system call per poll. */
#define EVLOOP_POLL_FD_EVERY 32

uint64_t evloop_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t evloop_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t evloop_clock_refresh_us(void)
{
	evloop_tls_clock_ns = evloop_now_ns();
	return evloop_tls_clock_ns / 1000u;
}

uint64_t evloop_sleep_us(const struct evloop *loop)
{
	return __atomic_load_n(&loop->sleep_ns, __ATOMIC_RELAXED) / 1000u;
}

struct evloop *evloop_create(void)
{
	struct evloop *loop = calloc(1, sizeof(*loop));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0)
		goto out_free;
	loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (loop->wake_fd < 0)
		goto out_close_ep;
	ev.data.ptr = NULL; /* NULL marks the wake fd */
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0)
		goto out_close_wake;
	pthread_mutex_init(&loop->msg_lock, NULL);
	return loop;

out_close_wake:
	close(loop->wake_fd);
out_close_ep:
	close(loop->epfd);
out_free:
	free(loop);
	return NULL;
}

static void evloop_free_calls(struct evloop_call *c)
{
	while (c) {
		struct evloop_call *next = c->next;

		if (c->heap)
			free(c);
		c = next;
	}
}

static void evloop_free_dead(struct evloop *loop)
{
	while (loop->dead) {
		struct evloop_watch *w = loop->dead;

		loop->dead = w->next_dead;
		free(w);
	}
}

void evloop_destroy(struct evloop *loop)
{
	if (!loop)
		return;
	evloop_free_calls(loop->defer_head);
	evloop_free_calls(loop->msg_head);
	while (loop->timers) {
		struct evloop_timer *t = loop->timers;

		loop->timers = t->next;
		free(t);
	}
	evloop_free_dead(loop);
	pthread_mutex_destroy(&loop->msg_lock);
	close(loop->wake_fd);
	close(loop->epfd);
	free(loop);
}

struct evloop_watch *evloop_watch_add(struct evloop *loop, int fd, uint32_t events,
				      evloop_fd_fn fn, void *arg)
{
	struct evloop_watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = events };

	if (!w)
		return NULL;
	w->loop = loop;
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(w);
		return NULL;
	}
	return w;
}

int evloop_watch_modify(struct evloop_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	return epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0 ? -errno : 0;
}

void evloop_watch_remove(struct evloop_watch *w)
{
	if (!w || w->removed)
		return;
	epoll_ctl(w->loop->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->removed = true;
	/* Freed after the dispatch round: an event for it may still be queued. */
	w->next_dead = w->loop->dead;
	w->loop->dead = w;
}

static int evloop_append(struct evloop_call **head, struct evloop_call **tail,
			 evloop_fn fn, void *arg)
{
	struct evloop_call *c = malloc(sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->next = NULL;
	c->heap = true;
	if (*tail)
		(*tail)->next = c;
	else
		*head = c;
	*tail = c;
	return 0;
}

int evloop_defer(struct evloop *loop, evloop_fn fn, void *arg)
{
	return evloop_append(&loop->defer_head, &loop->defer_tail, fn, arg);
}

static void evloop_wake(struct evloop *loop)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is saturated, the loop is woken anyway; the wake
	 * fd is ours and non-blocking, so nothing else can fail here. */
	if (write(loop->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		abort();
}

int evloop_send_msg(struct evloop *loop, evloop_fn fn, void *arg)
{
	int rc;

	pthread_mutex_lock(&loop->msg_lock);
	rc = evloop_append(&loop->msg_head, &loop->msg_tail, fn, arg);
	pthread_mutex_unlock(&loop->msg_lock);
	if (rc == 0)
		evloop_wake(loop);
	return rc;
}

void evloop_post(struct evloop *loop, struct evloop_msg *m, evloop_fn fn, void *arg)
{
	m->fn = fn;
	m->arg = arg;
	m->next = NULL;
	m->heap = false;
	pthread_mutex_lock(&loop->msg_lock);
	if (loop->msg_tail)
		loop->msg_tail->next = m;
	else
		loop->msg_head = m;
	loop->msg_tail = m;
	pthread_mutex_unlock(&loop->msg_lock);
	evloop_wake(loop);
}

struct evloop_timer *evloop_timer_add(struct evloop *loop, uint64_t usec, evloop_fn fn,
				      void *arg)
{
	struct evloop_timer *t = calloc(1, sizeof(*t)), **pp;

	if (!t)
		return NULL;
	t->loop = loop;
	t->deadline_us = evloop_now_us() + usec;
	t->fn = fn;
	t->arg = arg;
	for (pp = &loop->timers; *pp && (*pp)->deadline_us <= t->deadline_us; pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	return t;
}

void evloop_timer_cancel(struct evloop_timer *t)
{
	struct evloop_timer **pp;

	if (!t)
		return;
	for (pp = &t->loop->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			free(t);
			return;
		}
	}
}

static int evloop_run_deferred(struct evloop *loop)
{
	int n = 0;

	/* Calls deferred by these calls run in the same round. */
	while (loop->defer_head) {
		struct evloop_call *c = loop->defer_head;

		loop->defer_head = c->next;
		if (!loop->defer_head)
			loop->defer_tail = NULL;
		c->fn(c->arg);
		free(c); /* deferred calls are always heap nodes */
		n++;
	}
	return n;
}

static int evloop_run_msgs_now(struct evloop *loop)
{
	struct evloop_call *c;
	uint64_t cnt;
	int n = 0;

	if (read(loop->wake_fd, &cnt, sizeof(cnt)) < 0) {
		/* EAGAIN: nothing signalled; messages may still be queued */
	}
	pthread_mutex_lock(&loop->msg_lock);
	c = loop->msg_head;
	loop->msg_head = loop->msg_tail = NULL;
	pthread_mutex_unlock(&loop->msg_lock);
	while (c) {
		struct evloop_call *next = c->next;
		bool heap = c->heap;
		evloop_fn fn = c->fn;
		void *arg = c->arg;

		/* A posted node belongs to its sender again once its call starts
		 * (it may be re-posted or freed from inside). */
		if (heap)
			free(c);
		fn(arg);
		c = next;
		n++;
	}
	return n;
}

static int evloop_run_timers(struct evloop *loop)
{
	uint64_t now = evloop_now_us();
	int n = 0;

	while (loop->timers && loop->timers->deadline_us <= now) {
		struct evloop_timer *t = loop->timers;

		loop->timers = t->next;
		t->fn(t->arg);
		free(t);
		n++;
	}
	return n;
}

void evloop_set_poller(struct evloop *loop, evloop_poll_fn fn, void *arg)
{
	loop->poll_fn = fn;
	loop->poll_arg = arg;
	loop->poll_spins = 0;
}

/* epoll_wait with a timeout in microseconds (-1: none), so that a poller's short sleeps and
 * timers are not rounded up to the next millisecond. */
static int evloop_wait(struct evloop *loop, struct epoll_event *evs, int max, int64_t timeout_us)
{
	struct timespec ts;
	int n;

	if (!loop->no_pwait2) {
		if (timeout_us >= 0) {
			ts.tv_sec = timeout_us / 1000000;
			ts.tv_nsec = (timeout_us % 1000000) * 1000;
		}
		n = epoll_pwait2(loop->epfd, evs, max, timeout_us >= 0 ? &ts : NULL, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		loop->no_pwait2 = true;
	}
	return epoll_wait(loop->epfd, evs, max,
			  timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000));
}

int evloop_run_once(struct evloop *loop, int timeout_ms)
{
	struct epoll_event evs[64];
	int64_t timeout_us = timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000;
	int n, ran = 0;

	if (!loop->thread_known) {
		loop->thread = pthread_self();
		loop->thread_known = true;
	}
	if (loop->poll_fn) {
		int64_t p = loop->poll_fn(loop->poll_arg);

		if (p == 0) {
			/* Busy: poll again at once, and look at fds only now and then. */
			if (++loop->poll_spins < EVLOOP_POLL_FD_EVERY && !loop->defer_head)
				return 0;
			loop->poll_spins = 0;
			timeout_us = 0;
		} else if (p > 0 && (timeout_us < 0 || p < timeout_us)) {
			timeout_us = p;
		}
	}
	if (loop->defer_head)
		timeout_us = 0;
	if (loop->timers) {
		uint64_t now = evloop_now_us(), dl = loop->timers->deadline_us;
		int64_t t = dl <= now ? 0 : (int64_t)(dl - now);

		if (timeout_us < 0 || t < timeout_us)
			timeout_us = t;
	}
	if (timeout_us) {
		/* A wait that may sleep: its time is the thread's idle time, and whatever runs
		 * after it gets a fresh round time (two clock reads per sleep, none per spin). */
		uint64_t before = evloop_now_ns();

		n = evloop_wait(loop, evs, 64, timeout_us);
		evloop_tls_clock_ns = evloop_now_ns();
		__atomic_store_n(&loop->sleep_ns, loop->sleep_ns + (evloop_tls_clock_ns - before),
				 __ATOMIC_RELAXED);
	} else {
		n = evloop_wait(loop, evs, 64, 0);
	}
	if (n < 0) {
		if (errno != EINTR)
			return -errno;
		n = 0;
	}
	for (int i = 0; i < n; i++) {
		struct evloop_watch *w = evs[i].data.ptr;

		if (!w) {
			ran += evloop_run_msgs_now(loop);
		} else if (!w->removed) {
			w->fn(w->fd, evs[i].events, w->arg);
			ran++;
		}
		ran += evloop_run_deferred(loop);
	}
	ran += evloop_run_timers(loop);
	ran += evloop_run_deferred(loop);
	evloop_free_dead(loop);
	return ran;
}

int evloop_run(struct evloop *loop)
{
	loop->thread = pthread_self();
	loop->thread_known = true;
	while (!atomic_load(&loop->stop)) {
		int rc = evloop_run_once(loop, -1);

		if (rc < 0)
			return rc;
	}
	atomic_store(&loop->stop, false);
	return 0;
}

void evloop_stop(struct evloop *loop)
{
	uint64_t one = 1;

	atomic_store(&loop->stop, true);
	if (write(loop->wake_fd, &one, sizeof(one)) < 0) {
		/* counter full: the loop is awake anyway */
	}
}

bool evloop_is_loop_thread(struct evloop *loop)
{
	return !loop->thread_known || pthread_equal(loop->thread, pthread_self());
}

void evloop_owner_violation(const char *file, int line, const char *func)
{
	fprintf(stderr, "%s:%d: %s called on a thread that does not own the object\n", file, line,
		func);
	abort();
}
