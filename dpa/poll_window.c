/* dpa/poll_window.c - the adaptive polling window of a poller (a hart, or a poll group that polls
 * fused DPA threads): how long it keeps spinning after its last work before it sleeps.
 *
 * A fixed window loses both ways. Shorter than the client's think time between a completion and
 * its next doorbell (a QD1 guest under TCG: 50-150 us from our CQE to its next SQ tail) the poller
 * falls asleep just before every command and adds a sleep step and a wake-up to each one; longer,
 * it spins for nothing under a trickle. So the window follows the idle gaps it sees, the way KVM's
 * halt polling does: work that arrives after the window closed but within the ceiling grows the
 * window to cover that gap; a gap beyond the ceiling, which no window could have caught, halves
 * it back towards the floor. The floor is the instance's burst_us, the ceiling its
 * burst_max_us (equal: a fixed window).
 *
 * Only a host waiting for its next command is worth a wide window. A gap that begins with the host
 * behind on our completions (a batch posted, not yet consumed: queue depth above one) ends only
 * after the host worked through them on its own CPU, which a spin competes for: on a 2-core
 * machine a TCG guest at QD32 lost a third of its IOPS to a poller spinning 200 us windows. Such
 * gaps teach the window nothing, and how long they are spun depends on how the host learns of
 * the batch. A host that polls its CQs (a native client, SPDK) takes a batch within microseconds
 * and rings again soon after, so the floor window is spun: sleeping there would cost it four
 * fifths of its IOPS. A host that takes them by interrupt has to get the interrupt delivered and
 * its handler run first. A native client's thread (a KVM guest's vCPU should be alike) sleeps
 * meanwhile, on another CPU than ours, and then rings within microseconds: the floor is spun for
 * it too. A TCG guest's vCPU is a thread that keeps running guest code and shares the CPUs with
 * ours (2 cores here: two vCPUs, QEMU's main loop, this poller): the spin takes the CPU from the
 * very work it waits for. There the poller sleeps at once: the vCPUs get the CPU it would have
 * spun, and the commands they queue meanwhile are fetched in one batch, with one interrupt for
 * the lot (at QD32: 0.29-0.32 interrupts per I/O instead of 0.45-0.49, 12-14% more IOPS). Which
 * host it is, the poller learns from its own spins in such gaps: while a share of at least
 * DPA_IRQ_CONTENDED_PCT of them lost a quarter of their time to other threads of the CPU it
 * spins only one in DPA_IRQ_PROBE_EVERY (the probes tell it when the CPU is free again). The
 * poller tells what the host does (enum dpa_gap: the CQs' unconsumed entries and their IEN).
 *
 * Spinning is only free on an idle CPU. On a host with fewer cores than busy threads (a TCG
 * guest's vCPUs, QEMU's main loop and this poller on 2 cores), a wide window takes CPU time from
 * the very vCPUs whose work it waits for, and throughput drops. The spin yields each turn, and a
 * yield that comes back late means another thread ran on this CPU: when such stolen time is a
 * sizeable part of the spin, the window is not widened but halved, so a poller widens only while
 * its CPU is otherwise idle. Halved down to the floor, a waiting host's gaps are still spun 50 us
 * each; where at least DPA_WAIT_CONTENDED_PCT of the recent ones were contended (a TCG guest
 * writing 128 KiB at QD8: its vCPU is busy building the next commands between our completions,
 * and the spin takes CPU from it) they are slept at once, the same way, with the same probes:
 * 128 KiB writes +29% (14.4k against 11.2k IOPS, 67 instead of 90 us of guest CPU per I/O).
 * The spins of a native client's gaps, which end within microseconds, are never contended. */
#include "dpa/dpa_internal.h"
#include "common/evloop.h"

#include <sched.h>

/* How long a gap's spin stays tight (one pause a turn) before it relaxes. */
#define DPA_SPIN_TIGHT_US 10

/* While interrupted gaps are not spun, one in this many still is: a probe of the contention. */
#define DPA_IRQ_PROBE_EVERY 16

/* A yield that takes longer than this ran someone else (a bare sched_yield costs ~1 us). */
#define DPA_YIELD_RAN_OTHER_US 3

/* Counters and the window are written by the owner only; readers on other threads load them. */
#define DPA_WIN_LOAD(f) atomic_load_explicit(&(f), memory_order_relaxed)
#define DPA_WIN_SET(f, v) atomic_store_explicit(&(f), (v), memory_order_relaxed)
#define DPA_WIN_BUMP(f) DPA_WIN_SET(f, DPA_WIN_LOAD(f) + 1)

/* The window as it stands, within the instance's current bounds (they may change at any time). */
static uint32_t dpa_poll_window_cur(const struct dpa_poll_window *w, uint32_t floor,
				    uint32_t ceil)
{
	uint32_t win = DPA_WIN_LOAD(((struct dpa_poll_window *)w)->window_us);

	if (win < floor)
		return floor;
	return win > ceil ? ceil : win;
}

static void dpa_poll_window_bounds(const struct dpa *dpa, uint32_t *floor, uint32_t *ceil)
{
	struct dpa *d = (struct dpa *)dpa;

	*floor = atomic_load_explicit(&d->burst_us, memory_order_relaxed);
	*ceil = atomic_load_explicit(&d->burst_max_us, memory_order_relaxed);
	if (*ceil < *floor)
		*ceil = *floor;
}

void dpa_poll_window_reset(struct dpa_poll_window *w)
{
	w->idle_since = 0;
	w->stolen_us = 0;
	w->sampling = false;
}

/* Into a running share (DPA_SHARE_PCT units, 1/16 weight) of contended spins: one more spin,
 * contended or not. */
static void dpa_poll_window_share(_Atomic uint32_t *share, bool contended)
{
	uint32_t v = DPA_WIN_LOAD(*share);

	DPA_WIN_SET(*share, v - v / 16 + (contended ? DPA_SHARE_PCT(100) / 16 : 0));
}

/* An interrupted gap spun (to its end, or until work came): was the spin contended, over a
 * quarter of it given to other threads of this CPU? Into the running share of contended ones
 * (1/16 weight: a native client's thread, woken on our CPU now and then, gives a few
 * contended spins in a row at times). */
static void dpa_poll_window_irq_spun(struct dpa_poll_window *w, uint64_t spun_us)
{
	dpa_poll_window_share(&w->irq_contended_share, w->stolen_us * 4 > spun_us);
	w->sampling = false;
}

void dpa_poll_window_work(struct dpa_poll_window *w, const struct dpa *dpa, uint64_t now_us)
{
	uint32_t floor, ceil, win;
	uint64_t gap, grown;
	bool contended;

	if (!w->idle_since)
		return;
	gap = now_us > w->idle_since ? now_us - w->idle_since : 0;
	w->idle_since = 0;
	if (w->sampling)
		dpa_poll_window_irq_spun(w, gap);
	dpa_poll_window_bounds(dpa, &floor, &ceil);
	if (w->kind != DPA_GAP_HOST_WAITING || !w->spin_us) {
		/* The host was busy with our completions: this gap says nothing about how soon a
		 * host waiting for its next command rings. A napped gap was not spun: nothing
		 * learnt either. */
		w->stolen_us = 0;
		return;
	}
	win = dpa_poll_window_cur(w, floor, ceil);
	if (gap <= win)
		DPA_WIN_BUMP(w->hits);
	else
		DPA_WIN_BUMP(w->misses);
	contended = w->stolen_us * 4 > (gap < win ? gap : win);
	dpa_poll_window_share(&w->wait_contended_share, contended);
	if (contended) {
		/* Over a quarter of the spin went to other threads of this CPU: spinning competes
		 * with the host for the CPU; narrow, whatever the gap. */
		win = win / 2 > floor ? win / 2 : floor;
		DPA_WIN_BUMP(w->contended);
	} else if (gap > ceil) {
		/* Longer than any window: the spin was wasted. */
		win = win / 2 > floor ? win / 2 : floor;
		DPA_WIN_BUMP(w->shrinks);
	} else if (gap > win) {
		/* Missed by the window but catchable: cover this gap with a quarter to spare (the
		 * next one varies), at least doubling so a widening trend is followed quickly. */
		grown = gap + gap / 4;
		if (grown < 2ull * win)
			grown = 2ull * win;
		win = grown > ceil ? ceil : (uint32_t)grown;
		DPA_WIN_BUMP(w->grows);
	}
	DPA_WIN_SET(w->window_us, win);
	w->stolen_us = 0;
}

/* Whether a gap of a kind whose recent spins were contended (share at least pct) is slept at
 * once: yes, counted in naps, but for one in DPA_IRQ_PROBE_EVERY, the probe that tells when the
 * CPU is free again. */
static bool dpa_poll_window_nap(const _Atomic uint32_t *share, uint32_t pct, uint32_t *probes,
				_Atomic uint64_t *naps)
{
	if (DPA_WIN_LOAD(*share) >= DPA_SHARE_PCT(pct) && ++*probes < DPA_IRQ_PROBE_EVERY) {
		DPA_WIN_BUMP(*naps);
		return true;
	}
	*probes = 0;
	return false;
}

/* The start of a gap: how long it may be spun (UINT32_MAX: the adaptive window). */
static uint32_t dpa_poll_window_start(struct dpa_poll_window *w, uint32_t floor,
				      enum dpa_gap kind)
{
	w->kind = (uint8_t)kind;
	w->sampling = false;
	switch (kind) {
	case DPA_GAP_HOST_WAITING:
		return dpa_poll_window_nap(&w->wait_contended_share, DPA_WAIT_CONTENDED_PCT,
					   &w->wait_probes, &w->wait_naps)
			   ? 0
			   : UINT32_MAX;
	case DPA_GAP_HOST_POLLING:
		return floor;
	default:
		break;
	}
	if (dpa_poll_window_nap(&w->irq_contended_share, DPA_IRQ_CONTENDED_PCT, &w->probes,
				&w->naps))
		return 0;
	w->sampling = true;
	return floor;
}

uint32_t dpa_poll_window_idle(struct dpa_poll_window *w, const struct dpa *dpa, uint64_t now_us,
			      enum dpa_gap kind)
{
	uint32_t floor, ceil, win;

	dpa_poll_window_bounds(dpa, &floor, &ceil);
	if (!w->idle_since) {
		w->idle_since = now_us ? now_us : 1;
		w->stolen_us = 0;
		w->spin_us = dpa_poll_window_start(w, floor, kind);
	}
	win = w->spin_us == UINT32_MAX ? dpa_poll_window_cur(w, floor, ceil) : w->spin_us;
	if (now_us - w->idle_since < win)
		return 0;
	if (w->sampling)
		dpa_poll_window_irq_spun(w, win);
	return dpa_poll_step_us(dpa, now_us - w->idle_since);
}

uint32_t dpa_poll_window_us(const struct dpa_poll_window *w, const struct dpa *dpa)
{
	uint32_t floor, ceil;

	dpa_poll_window_bounds(dpa, &floor, &ceil);
	return dpa_poll_window_cur(w, floor, ceil);
}

void dpa_poll_window_relax(struct dpa_poll_window *w, uint64_t t0)
{
	uint64_t t;

	/* Tight for the first microseconds of a gap: a native client's next command is already on
	 * its way, so one pause a turn and no yield. sched_yield enters the scheduler even with
	 * nothing else to run, and a yield every turn held native QD1 at 0.90M IOPS, p50 0.83 us,
	 * against 1.83M, 0.35 us without (a thread that wakes on this CPU meanwhile preempts a
	 * spinner anyway). Then gentler: a burst of pauses and a yield per turn, so that a wide
	 * window costs less of the core's (or its SMT sibling's) time, which on this 2-core machine
	 * are the guest's vCPUs' (a TCG guest's 128 KiB writes: 0.83x QEMU's NVMe with one pause a
	 * turn, 0.94x with 32), and lets a thread sharing this CPU run. */
	if (!w->idle_since || t0 - w->idle_since <= DPA_SPIN_TIGHT_US) {
		__builtin_ia32_pause();
		return;
	}
	for (int i = 0; i < 32; i++)
		__builtin_ia32_pause();
	sched_yield();
	t = evloop_now_us();
	if (t - t0 > DPA_YIELD_RAN_OTHER_US)
		w->stolen_us += t - t0;
}
