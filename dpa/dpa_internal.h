/* dpa/dpa_internal.h - private types of the DPA model shared by the dpa/ sources. */
#ifndef NVME_EMU_DPA_DPA_INTERNAL_H
#define NVME_EMU_DPA_DPA_INTERNAL_H

#include "common/counter.h"
#include "dpa/dpa.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define DPA_CACHELINE 64

/* Counters with a single writer (the thread running the program, or the
 * hart) are bumped with counter_add_owned_atomic: no locked instruction on the
 * data path; readers on other threads see a value that is at most slightly
 * stale. Counters with many writers use dpa_counter_add_shared(). */
struct dpa_counters {
	_Atomic uint64_t activations;
	_Atomic uint64_t kicks;
	_Atomic uint64_t kicks_local; /* fused, from the consumer itself: single writer */
	_Atomic uint64_t db_completions;
	_Atomic uint64_t msgs_sent;
	_Atomic uint64_t msgs_received;
	_Atomic uint64_t msix_raised;
	_Atomic uint64_t msix_pended;
	_Atomic uint64_t msix_dropped;
	_Atomic uint64_t polls;
	_Atomic uint64_t sleeps;
	_Atomic uint64_t asleep_us;
};

static inline void dpa_counter_add_shared(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void dpa_counters_snapshot(const struct dpa_counters *c, struct dpa_stats *stats);

/* The intrusive list of mmap-mode DBs a poller watches (a hart's, or a
 * fused thread's). Owned by the poller thread: bind/unbind run there too. */
struct dpa_poll_list {
	struct dpa_db *first;
	uint32_t count;
};

/* Returns the number of completions produced. Poller thread only. */
uint32_t dpa_poll_list_scan(struct dpa_poll_list *list);
void dpa_poll_list_add(struct dpa_poll_list *list, struct dpa_db *db);
void dpa_poll_list_del(struct dpa_poll_list *list, struct dpa_db *db);

struct dpa_hart_req;

struct dpa_hart {
	struct dpa *dpa;
	unsigned int idx;
	pthread_t tid;
	int efd;
	/* Written by kickers on any thread: its own cache line. */
	_Alignas(DPA_CACHELINE) _Atomic(struct dpa_thread *) runq; /* Treiber stack */
	_Atomic bool sleeping;
	_Atomic bool has_req;
	_Atomic bool stop;
	/* Hart-private from here. */
	_Alignas(DPA_CACHELINE) struct dpa_poll_list polled;
	struct dpa_counters counters;
	/* Control-plane requests (detach), under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dpa_hart_req *reqs;
	_Atomic uint32_t nthreads; /* attached DPA threads, for placement */
};

struct dpa {
	unsigned int n_harts;
	struct dpa_hart *harts;
	_Atomic uint32_t burst_us;
	_Atomic uint32_t burst_max_us;
	_Atomic uint32_t sleep_step_us;
	_Atomic uint32_t backoff_after_us;
	_Atomic uint32_t max_step_us;
	_Atomic uint32_t n_objects; /* DPA threads + message queues alive */
	_Atomic uint64_t fused_eventfd_wakes; /* see dpa_fused_eventfd_wakes */
};

struct dpa_thread {
	struct dpa *dpa;
	dpa_thread_fn fn;
	void *arg;
	/* 1 while queued for an activation, and while not running (so that
	 * kicks before dpa_thread_run or after detach push nothing). */
	_Atomic int scheduled;
	/* Wakes between taking `scheduled` and queueing the thread on its hart: a detach waits
	 * for them to finish (dpa_hart_do_detach), or a late one would queue a stopped thread. */
	_Atomic unsigned int wakers;
	struct dpa_thread *runq_next;
	_Atomic(struct dpa_hart *) hart; /* NULL: not running or fused */
	bool running;
	/* Fused mode: the consumer's eventfd and whether it holds a count. */
	int efd;
	_Atomic bool efd_signalled;
	struct dpa_poll_list polled; /* fused mode only */
	struct dpa_db_comp *comp;
	_Atomic uint32_t refs; /* DB completion context + message queues naming it */
	struct dpa_counters counters;
};

/* Requests one activation. `local`: the caller is the thread that runs the
 * program (the hart, or the fused consumer inside dpa_thread_poll or about to
 * call it, see dpa_msgq_send_polled), which will look at the run state again
 * before sleeping, so no wake-up is needed. */
void dpa_thread_wake(struct dpa_thread *thread, bool local);

/* The poll list for mmap-mode DBs bound by this thread's program. */
struct dpa_poll_list *dpa_thread_poll_list(struct dpa_thread *thread);

/* Counts on the thread and, when it runs on a hart, on the hart too. */
#define DPA_COUNT(thread, field, n)                                                                \
	do {                                                                                       \
		struct dpa_thread *t_ = (thread);                                                  \
		struct dpa_hart *h_ = atomic_load_explicit(&t_->hart, memory_order_relaxed);       \
		counter_add_owned_atomic(&t_->counters.field, (n));                                \
		if (h_)                                                                            \
			counter_add_owned_atomic(&h_->counters.field, (n));                        \
	} while (0)

/* Hart plumbing (hart.c). */
int dpa_hart_start(struct dpa *dpa, struct dpa_hart *hart, unsigned int idx);
void dpa_hart_stop(struct dpa_hart *hart);
/* Puts a thread whose scheduled flag the caller set on the hart's run queue
 * and wakes the hart if it sleeps (unless local). */
void dpa_hart_enqueue(struct dpa_hart *hart, struct dpa_thread *thread, bool local);
/* Removes the thread from the hart (blocking handshake with the hart). */
void dpa_hart_detach(struct dpa_hart *hart, struct dpa_thread *thread);
/* Runs one activation of the thread's program. Program thread. */
void dpa_thread_activate(struct dpa_thread *thread);

/* DB completion states (struct dpa_db.state). */
enum {
	DPA_DB_IDLE = 0,   /* a completion was fetched, not re-armed */
	DPA_DB_ARMED = 1,  /* the next write produces a completion */
	DPA_DB_QUEUED = 2, /* a completion is on its way to the program */
};

#define DPA_DB_MAGIC 0x44504144u /* "DPAD" */

struct dpa_db {
	uint32_t magic;
	struct dpa_db_comp *comp;
	struct hw_db *hw;
	volatile const uint32_t *value_ptr;
	uint32_t db_id;
	bool polled;
	_Atomic bool bound; /* written by the program, read by destroy */
	_Atomic int state;
	uint32_t last_seen;  /* poller/program private: last value read */
	uint32_t comp_value; /* written by the producer before the push */
	uint64_t user;
	struct dpa_db *next;		      /* completion stack / ready list */
	struct dpa_db *poll_next, *poll_prev; /* poll list */
};

struct dpa_db_comp {
	struct dpa_thread *thread;
	_Alignas(DPA_CACHELINE) _Atomic(struct dpa_db *) stack; /* pushed by producers */
	_Atomic bool armed;
	/* Program-private from here. */
	_Alignas(DPA_CACHELINE) struct dpa_db *ready_head, *ready_tail;
	uint32_t unacked;
	_Atomic uint32_t n_dbs;
};

/* Produces a completion for db if it is armed (ARMED -> QUEUED) and, if the
 * context is armed, wakes its thread (`local`: see dpa_thread_wake). Returns
 * true if a completion was produced. Any thread. */
bool dpa_db_complete(struct dpa_db *db, uint32_t value, bool local);

#endif
