/* transport/pcie_poll_group.c - poll-group threads: each owns some I/O queue
 * pairs, drains the messages its DPA channels send ({db id, value}, bind and
 * unbind replies), fetches and runs SQEs, reaps bdev completions, and sleeps
 * in epoll when there is nothing to do. */
#include "common/evloop.h"
#include "common/log.h"
#include "transport/pcie_internal.h"
#include "backend/bdev.h"
#include "dpa/nvme_dpa.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

void pcie_pg_post(struct pcie_poll_group *pg, struct evloop_msg *m, void (*fn)(void *), void *arg)
{
	evloop_post(pg->t.loop, m, fn, arg);
}

struct pcie_poll_group *pcie_pg_pick(struct pcie_poll_groups *pgs)
{
	return &pgs->pg[pgs->next_rr++ % pgs->n];
}

/* A bdev channel of this poll group has completions (its fd fired; pcie_chan.c). */
static void pcie_pg_chan_ready(struct pcie_thread *t, struct bdev_channel *ch)
{
	struct pcie_poll_group *pg = t->pg;

	counter_add_owned_atomic(&pg->bdev_polls, 1);
	pcie_pg_hold_wakeups(pg, true);
	/* One interrupt per CQ for everything this poll completes. */
	pcie_pg_batch(pg, true);
	bdev_channel_poll(ch);
	pcie_pg_batch(pg, false);
	/* Completions freed requests and CQ slots: fetch what waited. */
	pcie_pg_after_bdev_poll(pg);
	pcie_pg_settle(pg);
	pcie_pg_hold_wakeups(pg, false);
}

/* ---- SQ processing ---- */

static void pcie_pg_poll_sq(struct pcie_poll_group *pg, struct pcie_sq *psq)
{
	int n;

	if (psq->stopped)
		return;
	/* Stops when the SQ is empty or back-pressured (CQ full, no free
	 * request): a CQ doorbell or a completion resumes it. */
	while ((n = ctrlr_sq_poll(psq->sq, PCIE_SQ_BURST)) > 0)
		counter_add_owned_atomic(&pg->sqes, (uint64_t)n);
}

static void pcie_pg_poll_cq_sqs(struct pcie_poll_group *pg, struct pcie_cq *pcq)
{
	for (struct pcie_sq *psq = pcq->sqs; psq; psq = psq->next)
		if (!psq->stopped && ctrlr_sq_has_work(psq->sq))
			pcie_pg_poll_sq(pg, psq);
}

void pcie_pg_after_bdev_poll(struct pcie_poll_group *pg)
{
	for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next) {
		pcie_pg_poll_cq_sqs(pg, pcq);
		pcie_pg_update_irq_timer(pcq);
	}
}

/* Backend I/O of this poll group still in flight, all channels. */
static uint32_t pcie_pg_outstanding(const struct pcie_poll_group *pg)
{
	uint32_t n = 0;

	for (const struct pcie_chan_entry *e = pg->t.channels; e; e = e->next)
		n += bdev_channel_outstanding(e->ch);
	return n;
}

void pcie_pg_batch(struct pcie_poll_group *pg, bool begin)
{
	for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next) {
		if (begin)
			ctrlr_cq_batch_begin(pcq->cq);
		else
			ctrlr_cq_batch_end(pcq->cq);
	}
}

/* ---- Interrupt coalescing (Set Features 08h aggregation time) ---- */

static void pcie_pg_irq_timer_fired(void *arg)
{
	struct pcie_cq *pcq = arg;
	struct pcie_poll_group *pg = pcq->pg;

	pcq->irq_timer = NULL;
	pcq->irq_deadline = 0;
	if (pg->polling) {
		/* Polled doorbells, and the poller may be asleep: a settle, whose drain of the
		 * channels reads the doorbells the host rang meanwhile before it checks every held
		 * interrupt, since adaptive moderation waits for the host's next submissions
		 * (queue.c). pcq may be gone after the drain (its UNBIND_DONE). */
		pcie_pg_hold_wakeups(pg, true);
		pcie_pg_settle(pg);
		pcie_pg_hold_wakeups(pg, false);
		return;
	}
	pcie_pg_update_irq_timer(pcq);
}

int pcie_pg_arm_irq_timer(struct pcie_cq *pcq, uint64_t until_us)
{
	struct evloop_timer *t;
	uint64_t now;

	EVLOOP_ASSERT_OWNER(pcq->pg->t.loop);
	/* Detached: its queue is being deleted, and a timer would outlive it. */
	if (!pcq->attached || (pcq->irq_timer && pcq->irq_deadline <= until_us))
		return 0;
	now = evloop_now_us();
	t = evloop_timer_add(pcq->pg->t.loop, until_us > now ? until_us - now : 0,
			     pcie_pg_irq_timer_fired, pcq);
	if (!t)
		return -ENOMEM; /* the one armed before, if any, stays */
	if (pcq->irq_timer)
		evloop_timer_cancel(pcq->irq_timer);
	pcq->irq_timer = t;
	pcq->irq_deadline = until_us;
	return 0;
}

void pcie_pg_update_irq_timer(struct pcie_cq *pcq)
{
	/* A hold that goes on arms its timer itself (pcie_hold_irq). */
	if (ctrlr_cq_irq_held(pcq->cq))
		ctrlr_cq_irq_poll(pcq->cq, evloop_now_us());
}

static void pcie_pg_fused_poll_arm(struct pcie_poll_group *pg);

/* ---- Messages from the DPA ---- */

static void pcie_pg_handle_msg(struct pcie_poll_group *pg, const struct dpa_nvme_msg *m)
{
	switch (m->type) {
	case DPA_NVME_MSG_DB_VALUE: {
		enum pcie_q_kind *kind = (enum pcie_q_kind *)(uintptr_t)m->db.cookie;

		counter_add_owned_atomic(&pg->db_msgs, 1);
		if (*kind == PCIE_Q_SQ) {
			struct pcie_sq *psq = (struct pcie_sq *)kind;

			if (psq->stopped)
				break;
			if (ctrlr_sq_tail_doorbell(psq->sq, m->db.value) == 0)
				pcie_pg_poll_sq(pg, psq);
		} else {
			struct pcie_cq *pcq = (struct pcie_cq *)kind;

			if (ctrlr_cq_head_doorbell(pcq->cq, m->db.value) == 0)
				pcie_pg_poll_cq_sqs(pg, pcq);
		}
		break;
	}
	case DPA_NVME_MSG_BIND_DONE:
	case DPA_NVME_MSG_UNBIND_DONE: {
		enum pcie_q_kind *kind = (enum pcie_q_kind *)(uintptr_t)m->bind.cookie;
		struct pcie_bind *b = *kind == PCIE_Q_SQ ? &((struct pcie_sq *)kind)->bind
							  : &((struct pcie_cq *)kind)->bind;
		bool bind = m->type == DPA_NVME_MSG_BIND_DONE;

		if (bind && pg->pgs->fused &&
		    dpa_thread_has_polled_dbs(dpa_nvme_chan_thread(b->chan)))
			pcie_pg_fused_poll_arm(pg);
		/* The queue's flow goes on (pcie_queue.c). */
		b->done(b, bind ? m->status : 0);
		break;
	}
	default:
		LOG_ERR(PCIE_LOG, "poll group %u: unexpected DPA message %u", pg->idx, m->type);
	}
}

/* Drains one channel; returns the messages handled and DPA programs run. The CQ may be detached
 * (and the channel destroyed by the main thread) by its own UNBIND_DONE: nothing touches pcq
 * after it. */
static unsigned int pcie_pg_drain_chan(struct pcie_poll_group *pg, struct pcie_cq *pcq)
{
	struct dpa_nvme_chan *ch = pcq->chan;
	struct dpa_nvme_msg m;
	unsigned int work = 0;

	for (;;) {
		while (dpa_nvme_chan_recv(ch, &m) == 1) {
			bool last = m.type == DPA_NVME_MSG_UNBIND_DONE &&
				    m.bind.cookie == (uint64_t)(uintptr_t)pcq;

			work++;
			pcie_pg_handle_msg(pg, &m);
			if (last)
				return work;
		}
		if (pg->pgs->fused) {
			/* Fused: the DPA program runs here, then its replies. */
			if (dpa_nvme_chan_poll(ch) > 0) {
				work++;
				continue;
			}
			return work;
		}
		if (dpa_nvme_chan_arm(ch) == 0)
			return work;
	}
}

/* Fused: drains every channel of the group, running their DPA programs. */
static void pcie_pg_drain_chans(struct pcie_poll_group *pg)
{
	for (struct pcie_cq *pcq = pg->cqs, *next; pcq; pcq = next) {
		next = pcq->next;
		pcie_pg_drain_chan(pg, pcq);
	}
}

/* A handler that submits and then settles (pcie_pg_settle polls every channel with I/O in flight)
 * needs no eventfd round trip for completions its own submissions produced at once: the bdev
 * channels hold their wake-ups for the handler's duration, and the release writes an eventfd only
 * for what is still undelivered when the handler returns. */
void pcie_pg_hold_wakeups(struct pcie_poll_group *pg, bool hold)
{
	for (struct pcie_chan_entry *e = pg->t.channels; e; e = e->next) {
		if (hold)
			bdev_channel_hold_wakeups(e->ch);
		else
			bdev_channel_release_wakeups(e->ch);
	}
}

/* Polls every channel with I/O in flight once, inside one CQ batch (one interrupt per CQ for
 * what it completes); returns the callbacks run. */
static unsigned int pcie_pg_poll_channels(struct pcie_poll_group *pg)
{
	unsigned int n = 0;
	int rc;

	pcie_pg_batch(pg, true);
	for (struct pcie_chan_entry *e = pg->t.channels; e; e = e->next) {
		if (!bdev_channel_outstanding(e->ch))
			continue;
		rc = bdev_channel_poll(e->ch);
		if (rc > 0)
			n += (unsigned int)rc;
	}
	pcie_pg_batch(pg, false);
	return n;
}

/* Before the poll group sleeps again: reap what the backends finished
 * already (malloc and null complete at once, aio submits its batch here) and,
 * fused, run the DPA programs that got work meanwhile (MSI-X raises asked
 * for by those completions). Each saves a trip through epoll. */
void pcie_pg_settle(struct pcie_poll_group *pg)
{
	for (unsigned int round = 0; round < 4; round++) {
		bool busy = pcie_pg_outstanding(pg) != 0;

		if (busy) {
			pcie_pg_poll_channels(pg);
			pcie_pg_after_bdev_poll(pg);
		}
		if (pg->pgs->fused)
			pcie_pg_drain_chans(pg);
		if (!busy)
			break;
	}
	/* Interrupts held (coalescing, adaptive moderation) whose time is up by now are raised
	 * here rather than at their timer; every hold armed its own timer (pcie_hold_irq). */
	for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next)
		pcie_pg_update_irq_timer(pcq);
}

/* Only the channels: a settle's backend polls (io_getevents for aio) would be paid twice after
 * every handler that raised, and a handler that completes I/O settles already. Usually the settle
 * ran the programs, and this finds nothing to do. */
static void pcie_pg_deferred_drain(void *arg)
{
	struct pcie_poll_group *pg = arg;

	pg->drain_deferred = false;
	pcie_pg_drain_chans(pg);
}

int pcie_pg_defer_drain(struct pcie_poll_group *pg)
{
	int rc;

	EVLOOP_ASSERT_OWNER(pg->t.loop);
	if (pg->drain_deferred)
		return 0;
	rc = evloop_defer(pg->t.loop, pcie_pg_deferred_drain, pg);
	if (rc == 0)
		pg->drain_deferred = true;
	return rc;
}

static void pcie_pg_chan_readable(int fd, uint32_t events, void *arg)
{
	struct pcie_cq *pcq = arg;
	struct pcie_poll_group *pg = pcq->pg;

	counter_add_owned_atomic(&pg->wakeups, 1);
	if (!pg->pgs->fused)
		dpa_msgq_fd_clear(fd);
	pcie_pg_hold_wakeups(pg, true);
	pcie_pg_drain_chan(pg, pcq);
	pcie_pg_settle(pg);
	pcie_pg_hold_wakeups(pg, false);
}

/* A polling round without doorbell work: reaps what the backends finished meanwhile, once per
 * channel with I/O in flight, and returns how many. Settling after a round's work gives up after a
 * few rounds with I/O still in flight, whose completions then signal the channel's eventfd; but
 * while this poller spins the loop looks at fds only every EVLOOP_POLL_FD_EVERY rounds, tens of
 * microseconds. A client that waits for those completions before ringing again waited that long:
 * nvme-emu-perf with 4 commands over 2-4 queues ran at 0.24M IOPS (p99 65 us) instead of 1.6M, and
 * QD1 had a p50 of 0.83 us instead of 0.45. */
static unsigned int pcie_pg_reap(struct pcie_poll_group *pg)
{
	unsigned int n;

	if (!pcie_pg_outstanding(pg))
		return 0;
	n = pcie_pg_poll_channels(pg);
	if (n)
		pcie_pg_after_bdev_poll(pg);
	return n;
}

/* Fused mode with mmap doorbells: nothing wakes us for guest stores, so the poll group's loop
 * polls the DPA threads itself (an evloop poller), adaptively as a hart does: while there is work
 * and for the DPA's burst window after it the loop spins (no system call per command: doorbells,
 * SQEs and CQEs are all in shared memory), then it sleeps the DPA's step, which backs off as the
 * idle period lasts, so an idle daemon costs little CPU. */
static int64_t pcie_pg_fused_poll(void *arg)
{
	struct pcie_poll_group *pg = arg;
	struct dpa *dpa = pg->pgs->dpa;
	unsigned int work = 0;
	enum dpa_gap gap = DPA_GAP_HOST_WAITING;
	bool polled = false;
	uint32_t step;
	uint64_t now;

	pcie_pg_hold_wakeups(pg, true);
	for (struct pcie_cq *pcq = pg->cqs, *next; pcq; pcq = next) {
		next = pcq->next;
		if (dpa_thread_has_polled_dbs(dpa_nvme_chan_thread(pcq->chan))) {
			polled = true;
			work += pcie_pg_drain_chan(pg, pcq);
		}
	}
	if (!work)
		work = pcie_pg_reap(pg);
	if (work)
		/* Backend I/O still in flight after this is reaped by the next rounds. */
		pcie_pg_settle(pg);
	pcie_pg_hold_wakeups(pg, false);
	if (!polled) {
		/* The last polled doorbell went: events only (a bind re-installs us). */
		pg->polling = false;
		evloop_set_poller(pg->t.loop, NULL, NULL);
		return -1;
	}
	if (work) {
		/* The gap since we went idle adapts the burst window. */
		/* The clock read the window needs is also the round time of what follows. */
		dpa_poll_window_work(&pg->window, dpa, evloop_clock_refresh_us());
		return 0;
	}
	if (dpa_poll_window_gap_starts(&pg->window)) {
		/* The host's completion backlog as this gap begins, and how it learns of it (see
		 * dpa/poll_window.c). */
		for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next) {
			if (ctrlr_cq_unconsumed(pcq->cq) <= 1)
				continue;
			if (ctrlr_cq_irq_enabled(pcq->cq)) {
				gap = DPA_GAP_HOST_INTERRUPTED;
				break;
			}
			gap = DPA_GAP_HOST_POLLING;
		}
	}
	now = evloop_clock_refresh_us();
	step = dpa_poll_window_idle(&pg->window, dpa, now, gap);
	if (!step) {
		/* As a hart does: let a thread sharing this CPU (the client, a vCPU) run. */
		dpa_poll_window_relax(&pg->window, now);
		return 0;
	}
	return step;
}

/* Fused mode: (re)starts the polling of mmap doorbells. Called whenever a
 * doorbell gets bound: the DPA program binds it when it next runs, which may be
 * after a poll round that found nothing to poll and removed the poller. */
static void pcie_pg_fused_poll_arm(struct pcie_poll_group *pg)
{
	if (!pg->pgs->fused || pg->polling)
		return;
	pg->polling = true;
	dpa_poll_window_reset(&pg->window);
	evloop_set_poller(pg->t.loop, pcie_pg_fused_poll, pg);
}

void pcie_pg_cq_attach(struct pcie_cq *pcq)
{
	struct pcie_poll_group *pg = pcq->pg;
	int fd;

	if (pg->pgs->fused) {
		fd = dpa_thread_event_fd(dpa_nvme_chan_thread(pcq->chan));
	} else {
		fd = dpa_nvme_chan_fd(pcq->chan);
		dpa_nvme_chan_arm(pcq->chan);
	}
	pcq->watch = evloop_watch_add(pg->t.loop, fd, EPOLLIN, pcie_pg_chan_readable, pcq);
	if (!pcq->watch)
		LOG_ERR(PCIE_LOG, "poll group %u: cannot watch CQ %u", pg->idx,
			ctrlr_cq_get_qid(pcq->cq));
	pcq->next = pg->cqs;
	pg->cqs = pcq;
	pcq->attached = true;
	atomic_fetch_add(&pg->nr_cqs, 1);
	pcie_pg_fused_poll_arm(pg);
}

void pcie_pg_cq_detach(struct pcie_cq *pcq)
{
	struct pcie_poll_group *pg = pcq->pg;

	for (struct pcie_cq **pp = &pg->cqs; *pp; pp = &(*pp)->next) {
		if (*pp == pcq) {
			*pp = pcq->next;
			break;
		}
	}
	pcq->attached = false;
	evloop_watch_remove(pcq->watch);
	pcq->watch = NULL;
	if (pcq->irq_timer) {
		evloop_timer_cancel(pcq->irq_timer);
		pcq->irq_timer = NULL;
	}
	atomic_fetch_sub(&pg->nr_cqs, 1);
}

/* ---- Visits (ops->visit_queues) ---- */

/* Poll group: this thread's part of a visit of one controller's queues. Reaching here is the
 * quiescent point the visit needs: whatever the thread was doing when the visit began is done. */
static void pcie_pg_visit_msg(void *arg)
{
	struct pcie_visit_part *part = arg;
	struct pcie_poll_group *pg = part->pg;
	struct ctrlr_visit *v = part->v;

	EVLOOP_ASSERT_OWNER(pg->t.loop);
	for (struct pcie_cq *pcq = pg->cqs; pcq; pcq = pcq->next) {
		if (pcq->pc != part->pc)
			continue;
		ctrlr_visit_cq(v, pcq->cq);
		for (struct pcie_sq *psq = pcq->sqs; psq; psq = psq->next)
			ctrlr_visit_sq(v, psq->sq);
	}
	ctrlr_visit_release(v);
	/* Queues re-attached by the visit may have work waiting. */
	pcie_pg_after_bdev_poll(pg);
	pcie_pg_settle(pg);
}

void pcie_visit_queues(void *tctx, struct ctrlr_visit *v)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_visit_part *parts = pc->visit_parts[ctrlr_visit_slot(v)];

	EVLOOP_ASSERT_OWNER(pc->loop);
	for (unsigned int i = 0; i < pc->pgs->n; i++) {
		parts[i].v = v;
		ctrlr_visit_hold(v);
		pcie_pg_post(parts[i].pg, &parts[i].msg, pcie_pg_visit_msg, &parts[i]);
	}
}

/* ---- Threads ---- */

static void *pcie_pg_main(void *arg)
{
	struct pcie_poll_group *pg = arg;

	evloop_run(pg->t.loop);
	return NULL;
}

/* Poll group: its last message. Every controller is gone, so no queue is left. */
static void pcie_pg_stop_msg(void *arg)
{
	struct pcie_poll_group *pg = arg;

	if (pg->polling) {
		pg->polling = false;
		evloop_set_poller(pg->t.loop, NULL, NULL);
	}
	if (pg->cqs)
		LOG_ERR(PCIE_LOG, "poll group %u stops with queues still attached", pg->idx);
	pcie_thread_put_all(&pg->t);
	evloop_stop(pg->t.loop);
}

struct pcie_poll_groups *pcie_poll_groups_create(unsigned int n, struct dpa *dpa)
{
	struct pcie_poll_groups *pgs;
	unsigned int i;
	char name[16];

	if (n == 0 || n > 64 || !dpa) {
		errno = EINVAL;
		return NULL;
	}
	pgs = calloc(1, sizeof(*pgs));
	if (!pgs)
		return NULL;
	pgs->pg = calloc(n, sizeof(*pgs->pg));
	if (!pgs->pg)
		goto out_free;
	pgs->dpa = dpa;
	pgs->fused = dpa_num_harts(dpa) == 0;
	for (i = 0; i < n; i++) {
		struct pcie_poll_group *pg = &pgs->pg[i];

		pg->pgs = pgs;
		pg->idx = i;
		pg->t.pg = pg;
		pg->t.chan_ready = pcie_pg_chan_ready;
		pg->t.loop = evloop_create();
		if (!pg->t.loop)
			goto out_stop;
		if (pthread_create(&pg->thread, NULL, pcie_pg_main, pg)) {
			evloop_destroy(pg->t.loop);
			goto out_stop;
		}
		/* Named by its creator, so that the name is there when the transport is (ps, top and
		 * the pinning test find the poll groups by it; named by the thread itself, a reader
		 * right after creation could see the process's name). */
		snprintf(name, sizeof(name), "poll-group%u", i);
		pthread_setname_np(pg->thread, name);
		pgs->n++;
	}
	LOG_INFO(PCIE_LOG, "%u poll group(s), %s DPA", n,
		 pgs->fused ? "fused" : "separate-hart");
	return pgs;

out_stop:
	pcie_poll_groups_destroy(pgs);
	errno = ENOMEM;
	return NULL;
out_free:
	free(pgs);
	return NULL;
}

int pcie_poll_groups_pin(struct pcie_poll_groups *pgs, const unsigned int *cpus)
{
	for (unsigned int i = 0; i < pgs->n; i++) {
		cpu_set_t set;
		int rc;

		if (cpus[i] >= CPU_SETSIZE)
			return -EINVAL;
		CPU_ZERO(&set);
		CPU_SET(cpus[i], &set);
		rc = pthread_setaffinity_np(pgs->pg[i].thread, sizeof(set), &set);
		if (rc)
			return -rc;
	}
	return 0;
}

void pcie_poll_groups_destroy(struct pcie_poll_groups *pgs)
{
	if (!pgs)
		return;
	/* Process teardown: each thread runs its last message and leaves its loop; joining
	 * the threads is the end of the process's own lifetime, not a wait on work. */
	for (unsigned int i = 0; i < pgs->n; i++)
		pcie_pg_post(&pgs->pg[i], &pgs->pg[i].stop_msg, pcie_pg_stop_msg, &pgs->pg[i]);
	for (unsigned int i = 0; i < pgs->n; i++) {
		pthread_join(pgs->pg[i].thread, NULL);
		evloop_destroy(pgs->pg[i].t.loop);
	}
	free(pgs->pg);
	free(pgs);
}

unsigned int pcie_poll_groups_count(const struct pcie_poll_groups *pgs)
{
	return pgs->n;
}

struct evloop *pcie_poll_group_loop(const struct pcie_poll_groups *pgs, unsigned int i)
{
	return i < pgs->n ? pgs->pg[i].t.loop : NULL;
}

void pcie_poll_group_get_stats(const struct pcie_poll_groups *pgs, unsigned int i,
			       struct pcie_poll_group_stats *st)
{
	const struct pcie_poll_group *pg;
	clockid_t cpu_clock;
	struct timespec ts;

	*st = (struct pcie_poll_group_stats){ 0 };
	if (i >= pgs->n)
		return;
	pg = &pgs->pg[i];
	st->wakeups = atomic_load_explicit(&pg->wakeups, memory_order_relaxed);
	st->db_msgs = atomic_load_explicit(&pg->db_msgs, memory_order_relaxed);
	st->sqes = atomic_load_explicit(&pg->sqes, memory_order_relaxed);
	st->bdev_polls = atomic_load_explicit(&pg->bdev_polls, memory_order_relaxed);
	st->irqs = atomic_load_explicit(&pg->irqs, memory_order_relaxed);
	st->sqs = atomic_load(&pg->nr_sqs);
	st->cqs = atomic_load(&pg->nr_cqs);
	st->sleep_us = evloop_sleep_us(pg->t.loop);
	if (!pthread_getcpuclockid(pg->thread, &cpu_clock) && !clock_gettime(cpu_clock, &ts))
		st->cpu_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	if (pgs->fused) {
		st->poll_window_us = dpa_poll_window_us(&pg->window, pgs->dpa);
		st->poll_hits = atomic_load_explicit(&pg->window.hits, memory_order_relaxed);
		st->poll_misses = atomic_load_explicit(&pg->window.misses, memory_order_relaxed);
		st->poll_grows = atomic_load_explicit(&pg->window.grows, memory_order_relaxed);
		st->poll_shrinks = atomic_load_explicit(&pg->window.shrinks, memory_order_relaxed);
		st->poll_contended =
			atomic_load_explicit(&pg->window.contended, memory_order_relaxed);
		st->poll_naps = atomic_load_explicit(&pg->window.naps, memory_order_relaxed);
		st->poll_irq_contended_pct = atomic_load_explicit(&pg->window.irq_contended_share,
								  memory_order_relaxed) /
					     DPA_SHARE_PCT(1);
		st->poll_wait_naps =
			atomic_load_explicit(&pg->window.wait_naps, memory_order_relaxed);
		st->poll_wait_contended_pct = atomic_load_explicit(&pg->window.wait_contended_share,
								   memory_order_relaxed) /
					      DPA_SHARE_PCT(1);
	}
}
