/* tests/unit/dpa/poll_window_test.c - the adaptive burst window of a poller: it opens at the
 * floor, grows to cover gaps that arrive just after it closed, never beyond the ceiling, shrinks
 * after gaps no window could catch, and stays fixed when the ceiling is the floor. */
#include "common/evloop.h"
#include "dpa/dpa.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* One idle gap of gap_us starting at *t: the poller polls every us until the window closes (it
 * must spin exactly while now - start < window), then sleeps; work arrives at start + gap. Returns
 * how long it spun. */
static uint32_t idle_gap(struct dpa_poll_window *w, struct dpa *dpa, uint64_t *t, uint32_t gap_us)
{
	uint64_t start = *t, now = start;
	uint32_t spun = 0;

	while (now < start + gap_us) {
		uint32_t step = dpa_poll_window_idle(w, dpa, now, false);

		if (step) {
			CU_ASSERT(step >= 30);
			now += step;
			continue;
		}
		spun++;
		now++;
	}
	*t = start + gap_us;
	dpa_poll_window_work(w, dpa, *t);
	return spun;
}

static void test_window_adapts(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_poll_window w = {0};
	uint64_t t = 1000000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	CU_ASSERT_EQUAL(dpa_set_poll_window_max(dpa, 200), 0);
	CU_ASSERT_EQUAL(dpa_set_poll_window_max(dpa, 1000001), -EINVAL);
	CU_ASSERT_EQUAL(dpa_poll_window_max_us(dpa), 200);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);

	/* Gaps inside the window: caught by spinning, nothing changes. */
	CU_ASSERT_EQUAL(idle_gap(&w, dpa, &t, 20), 20);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);

	/* A gap of 80 us, missed by 50: the window covers it (80 + 25% = 100), and the next such
	 * gap is caught while spinning. */
	CU_ASSERT_EQUAL(idle_gap(&w, dpa, &t, 80), 50);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 100);
	CU_ASSERT_EQUAL(idle_gap(&w, dpa, &t, 80), 80);
	CU_ASSERT_EQUAL(w.grows, 1);

	/* A longer catchable gap: at least doubling, capped at the ceiling. */
	idle_gap(&w, dpa, &t, 190);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 200);

	/* Gaps beyond the ceiling: the spin was wasted; halve, down to the floor, never below. */
	idle_gap(&w, dpa, &t, 5000);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 100);
	idle_gap(&w, dpa, &t, 5000);
	idle_gap(&w, dpa, &t, 5000);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);
	CU_ASSERT_EQUAL(w.shrinks, 3);

	/* A reset forgets the gap: no adaptation from it. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t + 10, false), 0);
	dpa_poll_window_reset(&w);
	dpa_poll_window_work(&w, dpa, t + 150);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);

	/* A lowered ceiling applies at once to a wide window. */
	t += 1000;
	idle_gap(&w, dpa, &t, 150);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	CU_ASSERT_EQUAL(dpa_set_poll_window_max(dpa, 120), 0);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 120);

	/* Ceiling at (or below) the floor: a fixed window, whatever the gaps. */
	CU_ASSERT_EQUAL(dpa_set_poll_window_max(dpa, 0), 0);
	CU_ASSERT_EQUAL(idle_gap(&w, dpa, &t, 90), 50);
	CU_ASSERT_EQUAL(idle_gap(&w, dpa, &t, 90), 50);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* Stolen time during the spin narrows the window instead of widening it. */
static void test_contended_spin_narrows(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_poll_window w = {0};
	uint64_t t = 1000000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	idle_gap(&w, dpa, &t, 150);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* The same catchable gap, but 60 of the 187 us spun went to another thread. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, false), 0);
	w.stolen_us = 60;
	t += 150;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 93);
	CU_ASSERT_EQUAL(w.contended, 1);
	/* A little stolen time (under a quarter of the spin) does not count. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, false), 0);
	w.stolen_us = 10;
	t += 150;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* A new gap starts with nothing stolen. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, false), 0);
	CU_ASSERT_EQUAL(w.stolen_us, 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* A gap that begins with the host behind on completions: the floor, and no adaptation. */
static void test_backlog_gap_keeps_floor(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_poll_window w = {0};
	uint64_t t = 1000000, now;
	uint32_t spun = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	idle_gap(&w, dpa, &t, 150);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* Backlog: spins 50, not 187, and the gap of 150 teaches nothing. */
	CU_ASSERT_TRUE(dpa_poll_window_gap_starts(&w));
	for (now = t; now < t + 150; now++)
		if (!dpa_poll_window_idle(&w, dpa, now, true))
			spun++;
	CU_ASSERT_EQUAL(spun, 50);
	CU_ASSERT_FALSE(dpa_poll_window_gap_starts(&w));
	t += 150;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* Nor does a long one shrink it. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, true), 0);
	t += 5000;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

static _Atomic bool hog_stop;

static void *hog_main(void *arg)
{
	while (!atomic_load(&hog_stop))
		;
	return NULL;
}

/* A yield that lets a busy thread of the same CPU run is counted as stolen time. */
static void test_relax_counts_stolen_time(void)
{
	struct dpa_poll_window w = {0};
	cpu_set_t one, saved;
	pthread_attr_t attr;
	pthread_t hog;

	CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	CU_ASSERT_EQUAL_FATAL(sched_setaffinity(0, sizeof(one), &one), 0);
	atomic_store(&hog_stop, false);
	CU_ASSERT_EQUAL_FATAL(pthread_attr_init(&attr), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_attr_setaffinity_np(&attr, sizeof(one), &one), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&hog, &attr, hog_main, NULL), 0);
	pthread_attr_destroy(&attr);
	/* The hog shares our only CPU: some of these yields run it for a time slice. */
	for (int i = 0; i < 1000 && w.stolen_us < 1000; i++)
		dpa_poll_window_relax(&w, evloop_now_us());
	atomic_store(&hog_stop, true);
	pthread_join(hog, NULL);
	CU_ASSERT(w.stolen_us >= 1000);
	CU_ASSERT_EQUAL(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

CUNIT_SUITE(dpa_poll_window, NULL, NULL, {"window_adapts", test_window_adapts},
	    {"contended_spin_narrows", test_contended_spin_narrows},
	    {"backlog_gap_keeps_floor", test_backlog_gap_keeps_floor},
	    {"relax_counts_stolen_time", test_relax_counts_stolen_time})
