/* dpa/dpa.h - the BlueField DPA offload model: harts, DPA threads, doorbell
 * completion contexts, SPSC message queues and MSI-X raise.
 *
 * The model follows DOCA's split between the control plane (the "Arm": the
 * main thread and the poll groups) and the data-path accelerator:
 *
 * - An instance (struct dpa) owns N *harts*: host pthreads that each run many
 *   DPA threads. With N == 0 the instance is *fused*: DPA threads run inline
 *   when their consumer calls dpa_thread_poll() from its own loop, so the cost
 *   of the split can be measured.
 * - A *DPA thread* is created by the control plane with a program function
 *   and an argument block (copied, like DOCA copies arguments to DPA memory),
 *   run (attached to a hart) and destroyed. The program is called once per
 *   *activation*: when its DB completion context or one of its consumer
 *   message queues has work, or when dpa_thread_kick() was called. Programs
 *   never create or destroy resources; the control plane hands them over.
 * - A *DB completion context* (struct dpa_db_comp) belongs to one DPA thread.
 *   The control plane creates DB objects on it (dpa_db_create wraps
 *   hw_db_create with the context's notify hook); the program binds them by
 *   handle, fetches completion elements, acks them, re-arms notification on
 *   the context and on each DB, and reads each DB's latest value.
 * - *Message queues* (struct dpa_msgq) carry fixed-size messages in a
 *   single-producer / single-consumer lock-free ring. Each side is either a
 *   DPA thread (woken by a kick) or the Arm (woken through an eventfd it can
 *   epoll on). The consumer completion wakes the consumer when a message
 *   arrives; the producer completion wakes the producer when the consumer
 *   freed room.
 * - *MSI-X raise* from a DPA thread: dpa_msix_raise() -> hw_msix_vector_raise().
 *
 * Doorbell delivery (DESIGN.md section 7). A DB is watched the way its device
 * delivers doorbells (hw_dev_db_mode() when dpa_db_create() runs):
 * - trap: hw/ calls the DB's notify hook on the device's loop thread; the hook
 *   produces a completion and kicks the DPA thread. Nothing spins.
 * - mmap: the hart (or dpa_thread_poll() in fused mode) polls the values of
 *   the bound DBs: it spins for a short window after activity, then sleeps in
 *   short steps (tens of microseconds). The last value written is always
 *   delivered; intermediate values may coalesce.
 *
 * Completion semantics (DOCA's DB completion): a DB produces at most one
 * completion until the program re-arms it with dpa_db_request_notification();
 * the context kicks its thread at most once until the program calls
 * dpa_db_comp_request_notification(). Re-arm first, then read the value with
 * dpa_db_get_value(): a write that lands between the two is seen by the read,
 * and a write after the re-arm produces a new completion, so none is lost.
 *
 * Threads, in the libvfio-user style of each function's comment:
 * - "control": any one control-plane thread at a time (the main thread);
 *   these functions may block briefly to hand work to a hart.
 * - "loop": the thread running the hw_dev's evloop (hw/ rules).
 * - "program": only from inside the DPA thread's program function (on its
 *   hart, or inside dpa_thread_poll() in fused mode).
 * - "any": any thread, never blocks.
 *
 * Errors: functions returning int give 0 (or a count) or a negative errno;
 * functions returning a pointer give NULL and set errno.
 */
#ifndef NVME_EMU_DPA_DPA_H
#define NVME_EMU_DPA_DPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hw_dev;
struct hw_db;
struct hw_msix_vector;

struct dpa;
struct dpa_thread;
struct dpa_db_comp;
struct dpa_db;
struct dpa_msgq;

/* ------------------------------------------------------------------------ */
/* Instance and harts.                                                      */

/* Upper bound of n_harts in dpa_create(). */
#define DPA_MAX_HARTS 64

/* Creates an instance with n_harts hart pthreads (0 = fused mode: no hart,
 * DPA threads run inside dpa_thread_poll()). Harts start asleep.
 * Returns NULL with errno EINVAL (n_harts > DPA_MAX_HARTS), ENOMEM, or the
 * error of eventfd/pthread_create. Thread: control. */
struct dpa *dpa_create(unsigned int n_harts);

/* Stops the harts and frees the instance. Every DPA thread and message queue
 * must have been destroyed first. Returns 0, or -EBUSY (nothing freed) if
 * some still exist. Thread: control; blocks until the harts have exited. */
int dpa_destroy(struct dpa *dpa);

/* Number of harts (0 in fused mode). Thread: any. */
unsigned int dpa_num_harts(const struct dpa *dpa);

/* Adaptive polling of a hart (and of dpa_thread_poll's advice in fused mode):
 * after the last activity the hart keeps polling for burst_us microseconds,
 * then, if it has mmap-mode DBs to watch, sleeps sleep_step_us between polls;
 * with none, it sleeps on its eventfd until kicked. Defaults: 50 and 30.
 * Returns 0 or -EINVAL (burst_us > 1000000, sleep_step_us 0 or > 1000000).
 * Thread: any; takes effect at the next idle period. */
int dpa_set_poll_params(struct dpa *dpa, uint32_t burst_us, uint32_t sleep_step_us);

/* Back-off of the step sleeps in mmap mode: after idle_after_us without
 * activity each further step sleep doubles, up to max_step_us, so a long
 * idle costs little CPU; the first activity resets it. Defaults: 10000 and
 * 2000 (a 200 us ceiling cost 6% of a core idle on this 2-core VM, each wake-up ~13 us; 2 ms
 * keeps it under 1%, and only the first command after 60 ms of silence waits for it). Returns 0 or -EINVAL (max_step_us 0 or > 1000000). Thread: any. */
int dpa_set_poll_backoff(struct dpa *dpa, uint32_t idle_after_us, uint32_t max_step_us);

/* The ceiling of the adaptive burst window (struct dpa_poll_window): a poller whose work keeps
 * arriving just after its window closed widens the window up to max_us; max_us equal to (or below)
 * burst_us keeps the window fixed. Default 200 (KVM's halt-polling ceiling on x86; the gaps of a QD1
 * guest under TCG are 50-150 us). Returns 0 or -EINVAL (max_us > 1000000). Thread: any. */
int dpa_set_poll_window_max(struct dpa *dpa, uint32_t max_us);
uint32_t dpa_poll_window_max_us(const struct dpa *dpa);

/* A poller's adaptive burst window (dpa/poll_window.c). Owned by the poller's thread; zeroed is
 * a poller that has not been idle yet. The window and the counters may be read from any thread
 * (relaxed atomics, written only by the owner). */
struct dpa_poll_window {
	uint64_t idle_since; /* start of the current idle gap (us), 0 while working */
	uint64_t stolen_us;  /* of this idle gap's spin, time other threads ran on our CPU */
	uint8_t kind;	     /* enum dpa_gap of this gap, told at its first idle round */
	uint32_t spin_us;    /* how long this gap is spun (UINT32_MAX: the adaptive window) */
	bool sampling;	     /* an interrupted gap spun: is the spin contended? */
	uint32_t probes;     /* interrupted gaps since the last spun one */
	uint32_t wait_probes; /* waiting gaps since the last spun one */
	/* Of the recent interrupted gaps spun, and of the waiting ones, the share whose spin was
	 * contended (DPA_SHARE_PCT units). */
	_Atomic uint32_t irq_contended_share;
	_Atomic uint32_t wait_contended_share;
	_Atomic uint32_t window_us; /* the window now, within [burst_us, burst_max_us] */
	_Atomic uint64_t hits;	    /* work found while the window was open */
	_Atomic uint64_t misses;    /* work found after it closed (the poller slept) */
	_Atomic uint64_t grows;	    /* widened to cover a gap */
	_Atomic uint64_t shrinks;   /* narrowed after a gap no window could catch */
	_Atomic uint64_t contended; /* narrowed because the spin took CPU time from other threads */
	_Atomic uint64_t naps;	    /* gaps slept at once: the host had interrupts of ours to take */
	_Atomic uint64_t wait_naps; /* waiting gaps slept at once: spinning them was contended */
};

/* What the host is doing as an idle gap begins, as far as the poller can tell (from the CQs'
 * unconsumed entries; dpa/poll_window.c says why each gets the spin it gets). */
enum dpa_gap {
	/* Waiting for us: everything consumed but the last CQE at most (QD1). The adaptive
	 * window, or no spin where such spins compete with the host for the CPU
	 * (DPA_WAIT_CONTENDED_PCT). */
	DPA_GAP_HOST_WAITING,
	/* Working through a batch of completions that it polls, or the poller cannot see (a
	 * hart): the floor window, not adapted. */
	DPA_GAP_HOST_POLLING,
	/* Working through a batch of completions that it takes by interrupt: the floor window,
	 * or no spin where such spins compete with the host for the CPU
	 * (DPA_IRQ_CONTENDED_PCT). */
	DPA_GAP_HOST_INTERRUPTED,
};

/* A running share of spins, in 1/256 of a percent: fine enough that a run of uncontended spins
 * takes it to (nearly) 0 and a run of contended ones to 100%. Kept in whole percent, the rounding
 * of each 1/16-weight step sticks a few points short (at 8% after any number of uncontended
 * spins, rounding to nearest) or biases it (about 7 points low, rounding down). */
#define DPA_SHARE_PCT(pct) ((uint32_t)(pct) * 256u)

/* Interrupted gaps are not spun while at least this share (percent) of the recent spun ones were
 * contended: a native client with interrupts (nvme-emu-perf -I, QD8-32) had 4-16%, a TCG guest's
 * fio (QD32, 128 KiB writes at QD8) 16-90%, mostly over 40. */
#define DPA_IRQ_CONTENDED_PCT 35

/* Waiting gaps are not spun while at least this share (percent) of the recent spun ones were
 * contended (a TCG guest writing 128 KiB at QD8, its vCPU busy between our completions). */
#define DPA_WAIT_CONTENDED_PCT 50

/* Work found at now_us: the gap since the poller went idle adapts the window. */
void dpa_poll_window_work(struct dpa_poll_window *w, const struct dpa *dpa, uint64_t now_us);

/* A round without work at now_us: 0 to keep spinning (the window is open), else the microseconds
 * to sleep before the next poll (dpa_poll_step_us of the idle time). `kind` (enum dpa_gap) is
 * read at the first idle round of a gap only. */
uint32_t dpa_poll_window_idle(struct dpa_poll_window *w, const struct dpa *dpa, uint64_t now_us,
			      enum dpa_gap kind);

/* True when the next dpa_poll_window_idle call starts a gap (the caller tells its kind). */
static inline bool dpa_poll_window_gap_starts(const struct dpa_poll_window *w)
{
	return !w->idle_since;
}

/* One turn of the spin while the window is open: pauses (one, or 32 once the gap is 10 us old) and
 * a yield to any thread sharing this CPU (the client, a vCPU: on a host with fewer cores than busy
 * threads a pure spin would only delay the work it waits for), timed from now_us (the clock the
 * caller just read for dpa_poll_window_idle), so time given to them counts as contention. */
void dpa_poll_window_relax(struct dpa_poll_window *w, uint64_t now_us);

/* Forgets the current idle gap without adapting (the poller was re-armed). */
void dpa_poll_window_reset(struct dpa_poll_window *w);

/* The window as it stands now. */
uint32_t dpa_poll_window_us(const struct dpa_poll_window *w, const struct dpa *dpa);

/* The step a poller idle for idle_us should sleep next under the instance's
 * parameters (what harts do; fused consumers may follow it for their mmap
 * DBs). Thread: any. */
uint32_t dpa_poll_step_us(const struct dpa *dpa, uint64_t idle_us);

/* ------------------------------------------------------------------------ */
/* DPA threads.                                                             */

/* A DPA program: called once per activation with the thread's argument block
 * (the copy made by dpa_thread_create). It must return promptly; work left
 * over is picked up by re-arming or by dpa_thread_kick(thread). */
typedef void (*dpa_thread_fn)(struct dpa_thread *thread, void *arg);

/* Creates a DPA thread running `fn`, with a private copy of the arg_size
 * bytes at arg (arg may be NULL when arg_size is 0). The thread is not run
 * until dpa_thread_run(). Returns NULL with errno EINVAL or ENOMEM.
 * Thread: control. */
struct dpa_thread *dpa_thread_create(struct dpa *dpa, dpa_thread_fn fn, const void *arg,
				     size_t arg_size);

/* Attaches the thread to hart `hart` (-1: the hart running the fewest DPA
 * threads) and makes it runnable; it is activated once at once, so the
 * program can pick up work that arrived before. In fused mode `hart` must be
 * -1 and activations happen in dpa_thread_poll(). Returns 0, -EINVAL (bad
 * hart) or -EALREADY (already running). Thread: control. */
int dpa_thread_run(struct dpa_thread *thread, int hart);

/* Stops the thread: detaches it from its hart, waiting for a running
 * activation to end; it is never activated again (kicks are ignored, and
 * dpa_thread_poll returns -EINVAL). Call it before destroying the resources
 * the program uses (its DB completion context, its message queues).
 * Idempotent. Thread: control; blocks until the hart let go. In fused mode
 * it must not race with dpa_thread_poll() of the same thread. */
void dpa_thread_stop(struct dpa_thread *thread);

/* Stops the thread (dpa_thread_stop) and frees it. Its DB completion context
 * and the message queues that name it must have been destroyed first
 * (otherwise returns -EBUSY and does nothing). Returns 0. Thread: control. */
int dpa_thread_destroy(struct dpa_thread *thread);

/* The thread's copy of its argument block. Thread: any. */
void *dpa_thread_arg(struct dpa_thread *thread);

/* The hart the thread runs on, or -1 (not running, or fused mode).
 * Thread: any. */
int dpa_thread_hart(const struct dpa_thread *thread);

/* Requests one more activation of the thread (wakes its hart, or makes its
 * fused event fd readable). Thread: any, including the program itself. */
void dpa_thread_kick(struct dpa_thread *thread);

/* Fused mode only: runs the thread's program if it has work (it was kicked,
 * its DB context completed, or a polled mmap-mode DB changed). Returns 1 if
 * the program ran, 0 if there was nothing to do, -EINVAL if the instance has
 * harts or the thread is not running. Thread: the one consumer thread that
 * owns this DPA thread (e.g. its poll group); never blocks. */
int dpa_thread_poll(struct dpa_thread *thread);

/* Fused mode only: an eventfd that becomes readable when the thread has work
 * to run (kicked by a trap-mode doorbell, a message or dpa_thread_kick). Add
 * it to the consumer's epoll set; dpa_thread_poll() drains it. It does not
 * fire for mmap-mode DBs: while dpa_thread_has_polled_dbs() is true the
 * consumer must also call dpa_thread_poll() at least every sleep_step_us.
 * Returns the fd (owned by the thread) or -EINVAL. Thread: any. */
int dpa_thread_event_fd(const struct dpa_thread *thread);

/* True when the thread has bound mmap-mode DBs that only polling detects.
 * Thread: the owning consumer (fused) or any (approximate). */
bool dpa_thread_has_polled_dbs(const struct dpa_thread *thread);

/* ------------------------------------------------------------------------ */
/* Doorbell completion context and DB objects.                             */

/* A completion element: which DB completed. `value` is the DB's value when
 * the completion was produced; the program must still re-arm the DB and read
 * dpa_db_get_value() (DOCA's order) to get the latest one. */
struct dpa_db_comp_elem {
	struct dpa_db *db;
	uint32_t db_id;
	uint32_t value;
	uint64_t user; /* the `user` word given to dpa_db_comp_bind */
};

/* Creates the DB completion context of `thread` (one per thread) and arms it.
 * Returns NULL with errno EEXIST (the thread has one) or ENOMEM.
 * Thread: control, before or after dpa_thread_run. */
struct dpa_db_comp *dpa_db_comp_create(struct dpa_thread *thread);

/* Destroys the context. Every DB created on it must have been destroyed
 * (returns -EBUSY otherwise), and the program must no longer use it (stop
 * the thread first, or make the program forget it). Returns 0.
 * Thread: control. */
int dpa_db_comp_destroy(struct dpa_db_comp *comp);

/* DBs created on the context and not yet destroyed. Thread: any. */
uint32_t dpa_db_comp_num_dbs(const struct dpa_db_comp *comp);

/* The DPA thread the context activates. Thread: any. */
struct dpa_thread *dpa_db_comp_thread(const struct dpa_db_comp *comp);

/* A DB's handle: what the control plane passes to the program (e.g. in a
 * message) so it can bind the DB. Opaque; 0 is never a valid handle. */
typedef uint64_t dpa_db_handle_t;

/* Creates DB `db_id` of `dev` for the context (DOCA's db_create_on_dpa): it
 * calls hw_db_create() with the context's notify hook and remembers how the
 * device delivers doorbells (hw_dev_db_mode()). The DB is stopped and
 * unbound. Returns NULL with errno from hw_db_create or ENOMEM.
 * Thread: loop (of dev). */
struct dpa_db *dpa_db_create(struct dpa_db_comp *comp, struct hw_dev *dev, uint32_t db_id);

/* Starts the DB (hw_db_start). As in DOCA, starting produces one completion
 * at once if the DB is bound and armed, so the program reads the current
 * value. Bind first, then start. Returns 0 or the hw_db_start error.
 * Thread: loop. */
int dpa_db_start(struct dpa_db *db);

/* Stops the DB (hw_db_stop): once it returns no trap-mode completion is in
 * flight for it. Writes are still stored. Returns 0 or the hw error.
 * Thread: loop. */
int dpa_db_stop(struct dpa_db *db);

/* Destroys the DB and its hw_db. It must be unbound (returns -EBUSY
 * otherwise and frees nothing). Returns 0. Thread: loop. */
int dpa_db_destroy(struct dpa_db *db);

/* The underlying hw/ doorbell, its id and its handle. Thread: any. */
struct hw_db *dpa_db_hw(const struct dpa_db *db);
uint32_t dpa_db_id(const struct dpa_db *db);
dpa_db_handle_t dpa_db_get_handle(const struct dpa_db *db);
/* True when the DB is watched by polling (its device was in mmap mode). */
bool dpa_db_is_polled(const struct dpa_db *db);

/* Binds the DB named by `handle` to the context and arms it; `user` comes
 * back in its completion elements. Returns 0, -EINVAL (not a DB of this
 * context) or -EALREADY (already bound). Thread: program. */
int dpa_db_comp_bind(struct dpa_db_comp *comp, dpa_db_handle_t handle, uint64_t user);

/* Unbinds: the DB produces no more completions and a completion of it not
 * yet fetched is dropped. Ack what was fetched first (DOCA: stop, ack,
 * unbind). Returns 0, -EINVAL (not a DB of this context), -ENOENT (not bound:
 * unbinding twice is refused) or -EBUSY (fetched completions not acked).
 * Thread: program. */
int dpa_db_comp_unbind(struct dpa_db_comp *comp, dpa_db_handle_t handle);

/* Fetches the next completion element. Returns 1 (elem filled) or 0 (none).
 * Counted as a DB completion of the thread and its hart. Thread: program. */
int dpa_db_comp_get_completion(struct dpa_db_comp *comp, struct dpa_db_comp_elem *elem);

/* Acknowledges the n oldest fetched elements. Returns 0 or -EINVAL (n is
 * more than the fetched, unacked count). Thread: program. */
int dpa_db_comp_ack(struct dpa_db_comp *comp, uint32_t n);

/* Re-arms the context: the next completion activates the thread. If
 * completions are already waiting the thread is kicked at once (re-check
 * after arming: nothing is lost). Thread: program. */
void dpa_db_comp_request_notification(struct dpa_db_comp *comp);

/* Re-arms one bound DB: its next write produces a completion. Call it before
 * dpa_db_get_value(). Thread: program. */
void dpa_db_request_notification(struct dpa_db *db);

/* The DB's latest value (read after a full barrier that pairs with the one in
 * the notify hook, or the acquire in the poller). Thread: program. */
uint32_t dpa_db_get_value(struct dpa_db *db);

/* ------------------------------------------------------------------------ */
/* Message queues.                                                          */

/* Message sizes and depth limits. */
#define DPA_MSGQ_MIN_MSG_SIZE 8
#define DPA_MSGQ_MAX_MSG_SIZE 256
#define DPA_MSGQ_MAX_DEPTH 65536

struct dpa_msgq_config {
	uint32_t msg_size; /* bytes, multiple of 8, 8..256 */
	uint32_t depth;	   /* slots, power of two, 2..65536 */
	/* The DPA thread on each side, or NULL for the Arm side (woken through
	 * the eventfd of dpa_msgq_consumer_fd / dpa_msgq_producer_fd). */
	struct dpa_thread *producer;
	struct dpa_thread *consumer;
	/* Both sides run on one OS thread (fused mode, where the Arm-side owner runs the DPA
	 * program itself): program order alone orders the ring and the arming flags, so the
	 * full barriers a cross-thread handshake needs are left out. */
	bool single_thread;
};

/* Creates a queue. Both completions start armed. Returns NULL with errno
 * EINVAL (bad size/depth, both sides NULL is allowed) or ENOMEM.
 * Thread: control. */
struct dpa_msgq *dpa_msgq_create(struct dpa *dpa, const struct dpa_msgq_config *config);

/* Frees the queue; messages still in it are dropped. Neither side may use it
 * any more (stop a DPA thread side with dpa_thread_stop first).
 * Thread: control. */
void dpa_msgq_destroy(struct dpa_msgq *q);

uint32_t dpa_msgq_msg_size(const struct dpa_msgq *q);
uint32_t dpa_msgq_depth(const struct dpa_msgq *q);

/* Producer side. Copies msg_size bytes into the ring and publishes them
 * (release). If the consumer completion is armed, it fires: the consumer
 * thread is kicked or the consumer eventfd signalled. Returns 0 or -EAGAIN
 * (full; arm the producer completion and retry when it fires).
 * Thread: the producer (its program, or the one Arm thread owning that side). */
int dpa_msgq_send(struct dpa_msgq *q, const void *msg);

/* Fused mode, single-thread queue to a DPA thread: like dpa_msgq_send, but a consumer completion
 * that fires marks the thread to run with a plain store, and its eventfd is not signalled (the
 * write and the read that drains it are two system calls per message). The caller promises what
 * the eventfd would have got it: it calls dpa_thread_poll() for the consumer before its loop next
 * sleeps, as a loop polling the thread's mmap-mode DBs does on every round. Returns 0, -EAGAIN
 * (full), or -EINVAL (not single-thread, the consumer is the Arm side, or the instance has harts).
 * Thread: the producer. */
int dpa_msgq_send_polled(struct dpa_msgq *q, const void *msg);

/* Consumer side. Copies the oldest message out. If the producer completion
 * is armed and this freed a slot, it fires. Returns 1 (got one) or 0 (empty).
 * Thread: the consumer. */
int dpa_msgq_recv(struct dpa_msgq *q, void *msg);

/* Consumer side: arms the consumer completion (the next send wakes the
 * consumer). Returns 0 when armed on an empty queue (safe to sleep), or
 * -EAGAIN when messages are already waiting (the completion is still armed;
 * drain before sleeping). Thread: the consumer. */
int dpa_msgq_consumer_arm(struct dpa_msgq *q);

/* Producer side: arms the producer completion (the next recv wakes the
 * producer). Returns 0 when the queue is full (safe to wait), or -EAGAIN
 * when room is already available. Thread: the producer. */
int dpa_msgq_producer_arm(struct dpa_msgq *q);

/* Arm-side eventfds (non-blocking, EFD_NONBLOCK): readable when the consumer
 * (producer) completion fired. dpa_msgq_fd_clear() reads it to zero.
 * Return the fd or -EINVAL when that side is a DPA thread. Thread: any. */
int dpa_msgq_consumer_fd(const struct dpa_msgq *q);
int dpa_msgq_producer_fd(const struct dpa_msgq *q);
void dpa_msgq_fd_clear(int fd);

/* ------------------------------------------------------------------------ */
/* MSI-X.                                                                   */

/* Raises `vec` from a DPA thread through hw_msix_vector_raise() and counts
 * it (raised, pended or dropped). Returns what hw_msix_vector_raise returns:
 * 0 signalled, 1 pended, -ENODEV dropped. Thread: program. */
int dpa_msix_raise(struct dpa_thread *thread, struct hw_msix_vector *vec);

/* ------------------------------------------------------------------------ */
/* Counters.                                                                */

/* A snapshot of counters (each read atomically; the set is not a transaction). */
struct dpa_stats {
	uint64_t activations;	 /* program runs */
	uint64_t kicks;		 /* wake requests received */
	uint64_t db_completions; /* elements fetched by programs */
	uint64_t msgs_sent;	 /* messages a DPA thread produced */
	uint64_t msgs_received;	 /* messages a DPA thread consumed */
	uint64_t msix_raised;	 /* dpa_msix_raise calls that signalled */
	uint64_t msix_pended;	 /* ... that set a PBA bit */
	uint64_t msix_dropped;	 /* ... that were dropped (MSI-X off, no fd) */
	uint64_t polls;		 /* mmap-mode poll passes (harts only) */
	uint64_t sleeps;	 /* times the hart went to sleep (harts only) */
	uint64_t asleep_us;	 /* microseconds spent asleep (harts only) */
};

/* Fused mode: wake-ups of DPA threads that went through their eventfd (a write by the waker and a
 * read in dpa_thread_poll, two system calls) since the instance was created. Wake-ups the consumer
 * makes from its own loop (DB completions it polls, dpa_msgq_send_polled) need none and are not
 * counted. Thread: any. */
uint64_t dpa_fused_eventfd_wakes(const struct dpa *dpa);

/* Counters of one DPA thread. Thread: any. */
void dpa_thread_get_stats(const struct dpa_thread *thread, struct dpa_stats *stats);

/* Counters of hart `hart` (the sum over its life, threads included).
 * Returns 0 or -EINVAL. Thread: any. */
int dpa_hart_get_stats(const struct dpa *dpa, unsigned int hart, struct dpa_stats *stats);

#endif
