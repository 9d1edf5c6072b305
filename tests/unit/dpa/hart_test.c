/* tests/unit/dpa/hart_test.c - harts: activation on kick, sleeping when idle
 * and waking on a kick, placement, stop while being kicked, counters. */
#include "dpa/dpa.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 5000

struct signal_arg {
	int efd; /* signalled after every activation */
	_Atomic unsigned int *count;
};

static void signal_prog(struct dpa_thread *thread, void *arg)
{
	struct signal_arg *a = arg;
	uint64_t one = 1;

	atomic_fetch_add(a->count, 1);
	if (write(a->efd, &one, sizeof(one)) != sizeof(one))
		CU_FAIL("eventfd write");
}

/* Bounded wait for one activation signal. */
static bool wait_activation(int efd)
{
	struct pollfd pfd = {.fd = efd, .events = POLLIN};
	uint64_t v;

	if (poll(&pfd, 1, WAIT_MS) != 1)
		return false;
	return read(efd, &v, sizeof(v)) == sizeof(v);
}

/* Bounded wait until the hart has gone to sleep at least `n` times (there is
 * no event for "fell asleep"; this polls a counter with a deadline). */
static bool wait_sleeps(struct dpa *dpa, unsigned int hart, uint64_t n)
{
	struct timespec ts = {0, 200000};
	struct dpa_stats st;
	int i;

	for (i = 0; i < WAIT_MS * 5; i++) {
		dpa_hart_get_stats(dpa, hart, &st);
		if (st.sleeps >= n)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static void test_sleep_and_wake_on_kick(void)
{
	_Atomic unsigned int count = 0;
	struct signal_arg a = {.count = &count};
	struct dpa_stats st, ts;
	struct dpa_thread *t;
	struct dpa *dpa;

	a.efd = eventfd(0, EFD_NONBLOCK);
	CU_ASSERT_TRUE_FATAL(a.efd >= 0);
	dpa = dpa_create(1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_num_harts(dpa), 1);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 20, 30), 0);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 20, 0), -EINVAL);
	t = dpa_thread_create(dpa, signal_prog, &a, sizeof(a));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(dpa_thread_event_fd(t), -EINVAL); /* not fused */
	CU_ASSERT_EQUAL(dpa_thread_poll(t), -EINVAL);
	CU_ASSERT_EQUAL(dpa_thread_hart(t), -1);
	CU_ASSERT_EQUAL(dpa_thread_run(t, 1), -EINVAL);
	CU_ASSERT_EQUAL(dpa_thread_run(t, 0), 0);
	CU_ASSERT_EQUAL(dpa_thread_hart(t), 0);
	CU_ASSERT_TRUE(wait_activation(a.efd)); /* the first activation */

	/* With nothing to do (no mmap DBs) the hart sleeps until kicked. */
	CU_ASSERT_TRUE_FATAL(wait_sleeps(dpa, 0, 1));
	dpa_hart_get_stats(dpa, 0, &st);
	CU_ASSERT_EQUAL(atomic_load(&count), 1);
	dpa_thread_kick(t);
	CU_ASSERT_TRUE(wait_activation(a.efd));
	CU_ASSERT_TRUE_FATAL(wait_sleeps(dpa, 0, st.sleeps + 1));
	dpa_thread_kick(t);
	CU_ASSERT_TRUE(wait_activation(a.efd));
	CU_ASSERT_EQUAL(atomic_load(&count), 3);

	dpa_thread_get_stats(t, &ts);
	CU_ASSERT_EQUAL(ts.activations, 3);
	CU_ASSERT_TRUE(ts.kicks >= 2);
	dpa_hart_get_stats(dpa, 0, &st);
	CU_ASSERT_EQUAL(st.activations, 3);
	CU_ASSERT_TRUE(st.kicks >= 2); /* eventfd wake-ups */
	CU_ASSERT_EQUAL(st.polls, 0);  /* no mmap DBs: nothing polled */
	CU_ASSERT_EQUAL(dpa_hart_get_stats(dpa, 1, &st), -EINVAL);

	CU_ASSERT_EQUAL(dpa_thread_destroy(t), 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
	close(a.efd);
}

static void test_placement(void)
{
	_Atomic unsigned int count = 0;
	struct signal_arg a = {.count = &count};
	struct dpa_thread *t[4];
	struct dpa *dpa;
	int i, per_hart[2] = {0, 0};

	a.efd = eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE);
	CU_ASSERT_TRUE_FATAL(a.efd >= 0);
	CU_ASSERT_PTR_NULL(dpa_create(DPA_MAX_HARTS + 1));
	dpa = dpa_create(2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	for (i = 0; i < 4; i++) {
		t[i] = dpa_thread_create(dpa, signal_prog, &a, sizeof(a));
		CU_ASSERT_PTR_NOT_NULL_FATAL(t[i]);
		CU_ASSERT_EQUAL(dpa_thread_run(t[i], -1), 0);
		per_hart[dpa_thread_hart(t[i])]++;
	}
	/* Least loaded placement spreads them evenly. */
	CU_ASSERT_EQUAL(per_hart[0], 2);
	CU_ASSERT_EQUAL(per_hart[1], 2);
	for (i = 0; i < 4; i++)
		CU_ASSERT_TRUE(wait_activation(a.efd));
	CU_ASSERT_EQUAL(dpa_destroy(dpa), -EBUSY);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(dpa_thread_destroy(t[i]), 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
	close(a.efd);
}

struct kicker {
	struct dpa_thread *t;
	_Atomic bool stop;
	_Atomic uint64_t kicks;
};

static void *kicker_main(void *arg)
{
	struct kicker *k = arg;

	while (!atomic_load(&k->stop)) {
		dpa_thread_kick(k->t);
		atomic_fetch_add(&k->kicks, 1);
	}
	return NULL;
}

static void count_only(struct dpa_thread *thread, void *arg)
{
	_Atomic unsigned int **c = arg;

	atomic_fetch_add(*c, 1);
}

/* Stopping a thread that another thread keeps kicking: once stop returned,
 * the program never runs again. */
static void test_stop_while_kicked(void)
{
	_Atomic unsigned int count = 0, *cp = &count;
	struct kicker k = {0};
	unsigned int at_stop;
	struct dpa *dpa;
	pthread_t tid;

	dpa = dpa_create(1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	k.t = dpa_thread_create(dpa, count_only, &cp, sizeof(cp));
	CU_ASSERT_PTR_NOT_NULL_FATAL(k.t);
	CU_ASSERT_EQUAL(dpa_thread_run(k.t, -1), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, kicker_main, &k), 0);
	/* Kicked a lot, and run at least once: on a loaded machine the hart may not have been
	 * scheduled yet after 100000 kicks. */
	while (atomic_load(&k.kicks) < 100000 || atomic_load(&count) == 0)
		sched_yield();
	dpa_thread_stop(k.t);
	at_stop = atomic_load(&count);
	while (atomic_load(&k.kicks) < 200000)
		sched_yield();
	atomic_store(&k.stop, true);
	pthread_join(tid, NULL);
	CU_ASSERT_TRUE(at_stop > 0);
	CU_ASSERT_EQUAL(atomic_load(&count), at_stop);
	CU_ASSERT_EQUAL(dpa_thread_hart(k.t), -1);
	CU_ASSERT_EQUAL(dpa_thread_destroy(k.t), 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* The mmap step policy: short steps, then a doubling ramp to the cap. */
static void test_poll_step_backoff(void)
{
	struct dpa *dpa = dpa_create(0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	CU_ASSERT_EQUAL(dpa_set_poll_backoff(dpa, 1000, 200), 0);
	CU_ASSERT_EQUAL(dpa_set_poll_backoff(dpa, 1000, 0), -EINVAL);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 0), 30);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 999), 30);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 1000), 60);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 2000), 120);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 3000), 200); /* capped */
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, UINT64_MAX), 200);
	/* A cap below the step leaves the step alone. */
	CU_ASSERT_EQUAL(dpa_set_poll_backoff(dpa, 1000, 10), 0);
	CU_ASSERT_EQUAL(dpa_poll_step_us(dpa, 5000), 30);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

CUNIT_SUITE(dpa_hart, NULL, NULL, {"poll_step_backoff", test_poll_step_backoff},
	    {"sleep_and_wake_on_kick", test_sleep_and_wake_on_kick}, {"placement", test_placement},
	    {"stop_while_kicked", test_stop_while_kicked})
