/* dpa/hart.c - harts: host threads that run DPA threads, poll mmap-mode
 * doorbells adaptively and sleep on an eventfd when idle. */
#include "dpa/dpa_internal.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* A control-plane request handed to the hart (only detach today). */
struct dpa_hart_req {
	struct dpa_thread *thread;
	bool done;
	struct dpa_hart_req *next;
};

static void dpa_hart_efd_signal(int efd)
{
	uint64_t one = 1;

	/* EAGAIN means the counter is saturated: the reader wakes anyway. */
	if (write(efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_ERR("dpa", "eventfd write: %s", strerror(errno));
}

static void dpa_hart_efd_drain(int efd)
{
	uint64_t v;

	if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		LOG_ERR("dpa", "eventfd read: %s", strerror(errno));
}

void dpa_hart_enqueue(struct dpa_hart *hart, struct dpa_thread *thread, bool local)
{
	struct dpa_thread *head = atomic_load_explicit(&hart->runq, memory_order_relaxed);

	/* Push-only Treiber stack: the hart takes the whole stack with one
	 * exchange, so there is no ABA. seq_cst CAS: pairs with the hart's
	 * store of `sleeping` followed by its load of runq in dpa_hart_sleep. */
	do {
		thread->runq_next = head;
	} while (!atomic_compare_exchange_weak(&hart->runq, &head, thread));
	if (local)
		return;
	if (atomic_load(&hart->sleeping) && atomic_exchange(&hart->sleeping, false)) {
		dpa_counter_add_shared(&hart->counters.kicks, 1);
		dpa_hart_efd_signal(hart->efd);
	}
}

/* Runs every thread queued so far, oldest kick first. Returns how many. */
static uint32_t dpa_hart_run_queue(struct dpa_hart *hart)
{
	struct dpa_thread *list, *rev = NULL, *t;
	uint32_t n = 0;

	list = atomic_exchange_explicit(&hart->runq, NULL, memory_order_acquire);
	while (list) {
		t = list->runq_next;
		list->runq_next = rev;
		rev = list;
		list = t;
	}
	while (rev) {
		t = rev;
		rev = rev->runq_next;
		dpa_thread_activate(t);
		n++;
	}
	return n;
}

/* Takes the thread off this hart, or returns false to be called again on a later turn: a wake
 * that took `scheduled` before this store may not have queued the thread yet, and would queue it
 * after the run queue was cleaned (the stopped thread's program ran again: dpa_hart_test
 * stop_while_kicked). */
static bool dpa_hart_do_detach(struct dpa_hart *hart, struct dpa_thread *thread)
{
	struct dpa_thread *list, *t, *next;

	/* From now on kicks of the thread push nothing (scheduled stays 1); then
	 * take it off the run queue if a kick had put it there. seq_cst store, then
	 * load: pairs with the waker's count before its exchange. */
	atomic_store(&thread->scheduled, 1);
	if (atomic_load(&thread->wakers))
		return false;
	list = atomic_exchange(&hart->runq, NULL);
	for (t = list; t; t = next) {
		next = t->runq_next;
		if (t != thread)
			dpa_hart_enqueue(hart, t, true);
	}
	atomic_store_explicit(&thread->hart, NULL, memory_order_release);
	return true;
}

static void dpa_hart_handle_requests(struct dpa_hart *hart)
{
	struct dpa_hart_req *req, **pp = &hart->reqs;
	bool again = false;

	pthread_mutex_lock(&hart->lock);
	atomic_store(&hart->has_req, false);
	while ((req = *pp)) {
		if (!dpa_hart_do_detach(hart, req->thread)) {
			/* A wake in flight: the next turn (the hart does not sleep meanwhile). */
			pp = &req->next;
			again = true;
			continue;
		}
		*pp = req->next;
		req->done = true;
	}
	if (again)
		atomic_store(&hart->has_req, true);
	pthread_cond_broadcast(&hart->cond);
	pthread_mutex_unlock(&hart->lock);
}

/* Sleeps until kicked, or for at most timeout_us when >= 0. */
static void dpa_hart_sleep(struct dpa_hart *hart, int64_t timeout_us)
{
	struct pollfd pfd = {.fd = hart->efd, .events = POLLIN};
	struct timespec ts;
	uint64_t t0;
	int rc;

	/* seq_cst store, then seq_cst loads: pairs with the enqueuer's CAS on
	 * runq followed by its load of `sleeping` (Dekker): either it sees us
	 * asleep and signals, or we see its thread and do not sleep. */
	atomic_store(&hart->sleeping, true);
	if (atomic_load(&hart->runq) || atomic_load(&hart->has_req) || atomic_load(&hart->stop)) {
		atomic_store(&hart->sleeping, false);
		return;
	}
	if (timeout_us >= 0) {
		ts.tv_sec = timeout_us / 1000000;
		ts.tv_nsec = (timeout_us % 1000000) * 1000;
	}
	/* Counted on the way in, so an observer sees a sleeping hart. */
	counter_add_owned_atomic(&hart->counters.sleeps, 1);
	t0 = evloop_now_us();
	rc = ppoll(&pfd, 1, timeout_us >= 0 ? &ts : NULL, NULL);
	atomic_store(&hart->sleeping, false);
	if (rc > 0)
		dpa_hart_efd_drain(hart->efd);
	counter_add_owned_atomic(&hart->counters.asleep_us, evloop_now_us() - t0);
}

static void *dpa_hart_main(void *arg)
{
	struct dpa_hart *hart = arg;
	struct dpa *dpa = hart->dpa;
	struct dpa_poll_window window = {0};
	uint32_t work, step;
	uint64_t now;
	char name[16];

	snprintf(name, sizeof(name), "dpa-hart%u", hart->idx);
	pthread_setname_np(pthread_self(), name);
	/* Sleeps of tens of microseconds need a small timer slack (the default
	 * 50 us would double them). */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	while (!atomic_load_explicit(&hart->stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&hart->has_req, memory_order_relaxed))
			dpa_hart_handle_requests(hart);
		work = 0;
		if (hart->polled.count) {
			work += dpa_poll_list_scan(&hart->polled);
			counter_add_owned_atomic(&hart->counters.polls, 1);
		}
		if (atomic_load_explicit(&hart->runq, memory_order_relaxed))
			work += dpa_hart_run_queue(hart);
		if (work) {
			dpa_poll_window_work(&window, dpa, evloop_now_us());
			continue;
		}
		/* Idle: keep polling while the (adaptive) burst window after the
		 * last activity is open, then sleep: in short steps while
		 * mmap-mode DBs need watching, else until kicked. */
		/* A hart cannot see the host's completion backlog: its window stays at the floor. */
		now = evloop_now_us();
		step = dpa_poll_window_idle(&window, dpa, now, DPA_GAP_HOST_POLLING);
		if (!step) {
			dpa_poll_window_relax(&window, now);
			continue;
		}
		dpa_hart_sleep(hart, hart->polled.count ? (int64_t)step : -1);
	}
	return NULL;
}

int dpa_hart_start(struct dpa *dpa, struct dpa_hart *hart, unsigned int idx)
{
	int rc;

	memset(hart, 0, sizeof(*hart));
	hart->dpa = dpa;
	hart->idx = idx;
	atomic_init(&hart->runq, NULL);
	hart->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (hart->efd < 0)
		return -errno;
	pthread_mutex_init(&hart->lock, NULL);
	pthread_cond_init(&hart->cond, NULL);
	rc = pthread_create(&hart->tid, NULL, dpa_hart_main, hart);
	if (rc)
		goto out_close;
	return 0;

out_close:
	pthread_cond_destroy(&hart->cond);
	pthread_mutex_destroy(&hart->lock);
	close(hart->efd);
	return -rc;
}

void dpa_hart_stop(struct dpa_hart *hart)
{
	atomic_store(&hart->stop, true);
	dpa_hart_efd_signal(hart->efd);
	pthread_join(hart->tid, NULL);
	pthread_cond_destroy(&hart->cond);
	pthread_mutex_destroy(&hart->lock);
	close(hart->efd);
}

void dpa_hart_detach(struct dpa_hart *hart, struct dpa_thread *thread)
{
	struct dpa_hart_req req = {.thread = thread};

	pthread_mutex_lock(&hart->lock);
	req.next = hart->reqs;
	hart->reqs = &req;
	atomic_store(&hart->has_req, true);
	pthread_mutex_unlock(&hart->lock);
	dpa_hart_efd_signal(hart->efd);
	pthread_mutex_lock(&hart->lock);
	while (!req.done)
		pthread_cond_wait(&hart->cond, &hart->lock);
	pthread_mutex_unlock(&hart->lock);
	atomic_fetch_sub(&hart->nthreads, 1);
}
