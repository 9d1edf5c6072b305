/* dpa/thread.c - DPA threads: create, run on a hart (or fused), kick,
 * activate, poll (fused mode), destroy. */
#include "dpa/dpa_internal.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct dpa_thread *dpa_thread_create(struct dpa *dpa, dpa_thread_fn fn, const void *arg,
				     size_t arg_size)
{
	struct dpa_thread *t;

	if (!dpa || !fn || (arg_size && !arg)) {
		errno = EINVAL;
		return NULL;
	}
	if (posix_memalign((void **)&t, DPA_CACHELINE, sizeof(*t)))
		goto out_nomem;
	memset(t, 0, sizeof(*t));
	t->dpa = dpa;
	t->fn = fn;
	t->efd = -1;
	/* Not running counts as scheduled: kicks before dpa_thread_run push
	 * nothing; run activates the thread once, which covers them. */
	atomic_init(&t->scheduled, 1);
	atomic_init(&t->hart, NULL);
	atomic_init(&t->wakers, 0);
	if (arg_size) {
		t->arg = malloc(arg_size);
		if (!t->arg)
			goto out_free_thread;
		memcpy(t->arg, arg, arg_size);
	}
	if (!dpa->n_harts) {
		t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->efd < 0)
			goto out_free_arg;
	}
	atomic_fetch_add(&dpa->n_objects, 1);
	return t;

out_free_arg:
	free(t->arg);
out_free_thread:
	free(t);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

static void dpa_thread_signal_efd(struct dpa_thread *t)
{
	uint64_t one = 1;

	if (atomic_exchange(&t->efd_signalled, true))
		return;
	/* A system call here and another in dpa_thread_poll: counted, as the fused mode's wakes are
	 * meant to avoid them when the consumer wakes itself. */
	dpa_counter_add_shared(&t->dpa->fused_eventfd_wakes, 1);
	if (write(t->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		LOG_ERR("dpa", "eventfd write: %s", strerror(errno));
}

int dpa_thread_run(struct dpa_thread *thread, int hart)
{
	struct dpa *dpa = thread->dpa;
	struct dpa_hart *h;
	unsigned int i;

	if (thread->running)
		return -EALREADY;
	if (!dpa->n_harts) {
		if (hart != -1)
			return -EINVAL;
		thread->running = true;
		dpa_thread_signal_efd(thread);
		return 0;
	}
	if (hart < -1 || hart >= (int)dpa->n_harts)
		return -EINVAL;
	if (hart == -1) {
		hart = 0;
		for (i = 1; i < dpa->n_harts; i++)
			if (atomic_load(&dpa->harts[i].nthreads) <
			    atomic_load(&dpa->harts[hart].nthreads))
				hart = (int)i;
	}
	h = &dpa->harts[hart];
	atomic_fetch_add(&h->nthreads, 1);
	thread->running = true;
	/* scheduled is still 1 (see create): publish the hart, then queue the
	 * first activation ourselves. The release pairs with the acquire load
	 * in dpa_thread_wake. */
	atomic_store_explicit(&thread->hart, h, memory_order_release);
	dpa_hart_enqueue(h, thread, false);
	return 0;
}

void dpa_thread_stop(struct dpa_thread *thread)
{
	struct dpa_hart *h;

	if (!thread->running)
		return;
	h = atomic_load(&thread->hart);
	if (h)
		dpa_hart_detach(h, thread);
	else
		atomic_store(&thread->scheduled, 1);
	thread->running = false;
}

int dpa_thread_destroy(struct dpa_thread *thread)
{
	if (!thread)
		return 0;
	if (atomic_load(&thread->refs))
		return -EBUSY;
	dpa_thread_stop(thread);
	atomic_fetch_sub(&thread->dpa->n_objects, 1);
	if (thread->efd >= 0)
		close(thread->efd);
	free(thread->arg);
	free(thread);
	return 0;
}

void *dpa_thread_arg(struct dpa_thread *thread)
{
	return thread->arg;
}

int dpa_thread_hart(const struct dpa_thread *thread)
{
	struct dpa_hart *h = atomic_load(&((struct dpa_thread *)thread)->hart);

	return h ? (int)h->idx : -1;
}

void dpa_thread_wake(struct dpa_thread *thread, bool local)
{
	struct dpa_hart *h;

	if (local && !thread->dpa->n_harts) {
		/* Fused, from inside dpa_thread_poll or from its caller before it calls it again
		 * (dpa_msgq_send_polled): the caller runs the program and looks at `scheduled`
		 * before it sleeps, and no hart can take or drop the thread, so there is
		 * no queueing to win and no detach to fence: plain stores. A wake from another
		 * thread at the same moment may also see 0 and signal the eventfd, a wake-up too
		 * many at worst. */
		counter_add_owned_atomic(&thread->counters.kicks_local, 1);
		atomic_store_explicit(&thread->scheduled, 1, memory_order_relaxed);
		return;
	}
	dpa_counter_add_shared(&thread->counters.kicks, 1);
	/* Only the 0 -> 1 transition queues the thread: it is on a run queue
	 * at most once. seq_cst: pairs with the store of 0 in
	 * dpa_thread_activate, which precedes the program's reads. */
	if (atomic_load_explicit(&thread->scheduled, memory_order_relaxed))
		return;
	/* Counted before the exchange (seq_cst both): a detach that stores scheduled after our
	 * exchange then sees us and waits until the thread is queued, to take it off again. */
	atomic_fetch_add(&thread->wakers, 1);
	if (atomic_exchange(&thread->scheduled, 1)) {
		atomic_fetch_sub(&thread->wakers, 1);
		return;
	}
	h = atomic_load_explicit(&thread->hart, memory_order_acquire);
	if (h)
		dpa_hart_enqueue(h, thread, local);
	else if (!local && thread->efd >= 0)
		dpa_thread_signal_efd(thread);
	atomic_fetch_sub(&thread->wakers, 1);
}

void dpa_thread_kick(struct dpa_thread *thread)
{
	dpa_thread_wake(thread, false);
}

void dpa_thread_activate(struct dpa_thread *thread)
{
	/* Cleared before the program runs so that a kick during the run
	 * queues another activation (nothing is lost). */
	atomic_store(&thread->scheduled, 0);
	DPA_COUNT(thread, activations, 1);
	thread->fn(thread, thread->arg);
}

int dpa_thread_poll(struct dpa_thread *thread)
{
	uint64_t v;

	if (thread->dpa->n_harts || !thread->running)
		return -EINVAL;
	if (thread->polled.count)
		dpa_poll_list_scan(&thread->polled);
	if (atomic_load_explicit(&thread->efd_signalled, memory_order_relaxed) &&
	    atomic_exchange(&thread->efd_signalled, false)) {
		if (read(thread->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			LOG_ERR("dpa", "eventfd read: %s", strerror(errno));
	}
	if (!atomic_load(&thread->scheduled))
		return 0;
	dpa_thread_activate(thread);
	return 1;
}

int dpa_thread_event_fd(const struct dpa_thread *thread)
{
	return thread->efd >= 0 ? thread->efd : -EINVAL;
}

bool dpa_thread_has_polled_dbs(const struct dpa_thread *thread)
{
	struct dpa_hart *h = atomic_load(&((struct dpa_thread *)thread)->hart);
	const struct dpa_poll_list *list = h ? &h->polled : &thread->polled;

	return __atomic_load_n(&list->count, __ATOMIC_RELAXED) != 0;
}

struct dpa_poll_list *dpa_thread_poll_list(struct dpa_thread *thread)
{
	struct dpa_hart *h = atomic_load_explicit(&thread->hart, memory_order_relaxed);

	return h ? &h->polled : &thread->polled;
}
