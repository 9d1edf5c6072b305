/* tests/unit/dpa/poll_window_test.c - the adaptive burst window of a poller: it opens at the
 * floor, grows to cover gaps that arrive just after it closed, never beyond the ceiling, shrinks
 * after gaps no window could catch, and stays fixed when the ceiling is the floor; a host busy
 * with our completions gets the floor, or no spin when it takes them by interrupt and the spins
 * compete with it for the CPU. */
#include "common/evloop.h"
#include "dpa/dpa.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* One idle gap of gap_us starting at *t, of the given kind (told at its start only: a later one
 * must not matter): the poller polls every us until the window closes (it must spin exactly while
 * now - start < window), `stolen` us of its spin given to other threads, then sleeps its steps;
 * work arrives at start + gap. Returns how long it spun. */
static uint32_t busy_gap(struct dpa_poll_window *w, struct dpa *dpa, uint64_t *t, uint32_t gap_us,
			 enum dpa_gap kind, uint32_t stolen)
{
	uint64_t start = *t, now = start;
	uint32_t spun = 0;

	CU_ASSERT_TRUE(dpa_poll_window_gap_starts(w));
	while (now < start + gap_us) {
		uint32_t step = dpa_poll_window_idle(w, dpa, now,
						     now == start ? kind : DPA_GAP_HOST_WAITING);

		if (step) {
			CU_ASSERT(step >= 30);
			now += step;
			continue;
		}
		spun++;
		w->stolen_us = spun < stolen ? spun : stolen;
		now++;
	}
	CU_ASSERT_FALSE(dpa_poll_window_gap_starts(w));
	*t = start + gap_us;
	dpa_poll_window_work(w, dpa, *t);
	return spun;
}

/* A gap of a host waiting for its next command, nothing stolen. */
static uint32_t idle_gap(struct dpa_poll_window *w, struct dpa *dpa, uint64_t *t, uint32_t gap_us)
{
	return busy_gap(w, dpa, t, gap_us, DPA_GAP_HOST_WAITING, 0);
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
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t + 10, DPA_GAP_HOST_WAITING), 0);
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
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, DPA_GAP_HOST_WAITING), 0);
	w.stolen_us = 60;
	t += 150;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 93);
	CU_ASSERT_EQUAL(w.contended, 1);
	/* A little stolen time (under a quarter of the spin) does not count. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, DPA_GAP_HOST_WAITING), 0);
	w.stolen_us = 10;
	t += 150;
	dpa_poll_window_work(&w, dpa, t);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* A new gap starts with nothing stolen. */
	CU_ASSERT_EQUAL(dpa_poll_window_idle(&w, dpa, t, DPA_GAP_HOST_WAITING), 0);
	CU_ASSERT_EQUAL(w.stolen_us, 0);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* A gap that begins with the host behind on completions: the floor when it polls them, or when it
 * takes them by interrupt and the spin does not compete with it for the CPU; no spin when it
 * does, but for one probe in 16. None adapts the window. */
static void test_busy_host_gaps(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_poll_window w = {0};
	uint64_t t = 1000000;
	uint32_t spun = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	idle_gap(&w, dpa, &t, 150);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	/* Polling host: spins 50, not 187, and the gap of 150 teaches nothing; nor does a long
	 * one shrink it, nor contention count. */
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_POLLING, 40), 50);
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 20, DPA_GAP_HOST_POLLING, 0), 20);
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 5000, DPA_GAP_HOST_POLLING, 0), 50);
	CU_ASSERT(w.irq_contended_share < DPA_SHARE_PCT(1));

	/* Interrupted host, spins uncontended (or barely: 10 of 50 us): the floor. */
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_INTERRUPTED, 10), 50);
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 3, DPA_GAP_HOST_INTERRUPTED, 0), 3);
	CU_ASSERT(w.irq_contended_share < DPA_SHARE_PCT(1));
	CU_ASSERT_EQUAL(w.naps, 0);
	/* Six contended spins are not enough... */
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_INTERRUPTED, 20), 50);
	CU_ASSERT(w.irq_contended_share > 0 &&
		  w.irq_contended_share < DPA_SHARE_PCT(DPA_IRQ_CONTENDED_PCT));
	/* ...a seventh (cut short by work: a quarter of what was spun) is: then it sleeps at once
	 * (a nap), but for one gap in 16. */
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 20, DPA_GAP_HOST_INTERRUPTED, 6), 20);
	CU_ASSERT(w.irq_contended_share >= DPA_SHARE_PCT(DPA_IRQ_CONTENDED_PCT));
	for (int i = 0; i < 32; i++)
		spun += busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_INTERRUPTED, 30);
	CU_ASSERT_EQUAL(spun, 2 * 50);
	CU_ASSERT_EQUAL(w.naps, 30);
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 5, DPA_GAP_HOST_INTERRUPTED, 0), 0);

	/* The CPU free again: the probes see it, and spinning resumes. */
	for (int i = 0; i < 200; i++)
		spun = busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_INTERRUPTED, 0);
	CU_ASSERT_EQUAL(spun, 50);
	CU_ASSERT(w.irq_contended_share < DPA_SHARE_PCT(1));

	/* None of these moved the window; a waiting host gets it. */
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 187);
	CU_ASSERT_EQUAL(w.grows, 1);
	CU_ASSERT_EQUAL(w.shrinks + w.contended, 0);
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_WAITING, 0), 150);
	CU_ASSERT_EQUAL(dpa_destroy(dpa), 0);
}

/* A waiting host whose gaps' spins keep losing the CPU to other threads (a TCG guest's vCPU busy
 * preparing its next commands on the CPUs the spin shares): the window narrows to the floor, and
 * once half of the recent spins were contended the gaps are slept at once, but for one probe in
 * 16. Napped gaps teach the window nothing; spins uncontended again bring the share down and the
 * spin back. A waiting host whose spins are not contended never naps, whatever its gaps. */
static void test_contended_waiting_gaps(void)
{
	struct dpa *dpa = dpa_create(0);
	struct dpa_poll_window w = {0};
	uint64_t t = 1000000;
	uint32_t spun = 0, grows;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dpa);
	CU_ASSERT_EQUAL(dpa_set_poll_params(dpa, 50, 30), 0);
	for (i = 0; i < 100; i++)
		idle_gap(&w, dpa, &t, i % 2 ? 5000 : 150);
	CU_ASSERT(w.wait_contended_share < DPA_SHARE_PCT(1));
	CU_ASSERT_EQUAL(w.wait_naps, 0);

	/* Contended spins (a third of each stolen): narrowed at once; ten are not enough to nap... */
	for (i = 0; i < 10; i++)
		CU_ASSERT(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_WAITING, 50) >= 50);
	CU_ASSERT(w.wait_contended_share < DPA_SHARE_PCT(DPA_WAIT_CONTENDED_PCT));
	/* ...eleven are: then the gaps are slept at once, but for one in 16. */
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_WAITING, 50), 50);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);
	CU_ASSERT(w.wait_contended_share >= DPA_SHARE_PCT(DPA_WAIT_CONTENDED_PCT));
	CU_ASSERT_EQUAL(w.wait_naps, 0);
	grows = (uint32_t)w.grows;
	for (i = 0; i < 32; i++)
		spun += busy_gap(&w, dpa, &t, 80, DPA_GAP_HOST_WAITING, 20);
	CU_ASSERT_EQUAL(spun, 2 * 50);
	CU_ASSERT_EQUAL(w.wait_naps, 30);
	/* The 80 us gaps napped through did not widen the 50 us window. */
	CU_ASSERT_EQUAL(w.grows, grows);
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 50);
	/* Other kinds of gap are not napped for it. */
	CU_ASSERT_EQUAL(busy_gap(&w, dpa, &t, 150, DPA_GAP_HOST_POLLING, 0), 50);

	/* The CPU free again: the probes see it, and the window opens and adapts again. */
	for (i = 0; i < 400; i++)
		spun = idle_gap(&w, dpa, &t, 80);
	CU_ASSERT_EQUAL(spun, 80);
	CU_ASSERT(w.wait_contended_share < DPA_SHARE_PCT(1));
	CU_ASSERT_EQUAL(dpa_poll_window_us(&w, dpa), 100);
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
	/* Past the tight first microseconds of a gap, where a turn does not yield. */
	w.idle_since = 1;
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
	    {"busy_host_gaps", test_busy_host_gaps},
	    {"contended_waiting_gaps", test_contended_waiting_gaps},
	    {"relax_counts_stolen_time", test_relax_counts_stolen_time})
