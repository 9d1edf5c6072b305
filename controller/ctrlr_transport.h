/* controller/ctrlr_transport.h - the seam between the NVMe controller core and a transport (the
 * PCIe-emulation transport in transport/pcie_*.c, or the loopback transport of the unit tests).
 *
 * Model (Linux nvmet's core + pci-epf ops, SPDK's ownership rules):
 *
 * - The core is transport-agnostic: it never touches hw/, dpa/ or a socket. The transport gives it
 *   an ops table (struct ctrlr_transport_ops) and calls the entry points below.
 * - Threads:
 *   "admin"  the controller's main thread: registers, the admin SQ/CQ, queue creation/deletion,
 *            reset/shutdown/FLR flows, namespaces, features, AER. One thread for the controller's
 *            life; every admin-thread function must be called from it.
 *   "owner"  the thread that owns an I/O queue pair (a poll group). An I/O SQ is owned by the
 *            thread that owns its CQ (the transport attaches the SQ to its CQ's poll group), so a
 *            CQ and all its SQs are touched by one thread: no locks on the I/O path. The admin
 *            queue pair's owner is the admin thread.
 *   "any"    any thread, never blocks.
 * - Cross-thread work goes through the transport (ops->admin_msg runs a function on the admin
 *   thread); the core itself creates no threads and takes no locks on the I/O path.
 * - Guest memory is reached only through the transport: ops->mem_map for command data (a NULL
 *   result becomes a Data Transfer Error, never an access; the pointer is valid until the next
 *   unmap finished, ctrlr_mem_unmap), and pins (ops->mem_pin) for what lives across commands:
 *   the SQ/CQ rings and the shadow doorbell pages, translated once. When the guest unmaps memory
 *   (ctrlr_mem_unmap), queues whose ring lies in it are detached (no fetch, completions held)
 *   and unpinned, shadow doorbells in it are dropped, and the call completes once every request
 *   that was in flight when it began has finished with its data; a later ctrlr_mem_mapped
 *   re-attaches detached queues whose memory is back (a rebooting guest remaps its RAM). Memory
 *   is thus never used after the client took it away, and never unmapped under a user.
 * - Completions into guest memory stop when a queue is deleted or the controller reset finished:
 *   requests still in flight at that point are completed internally (their CQE is dropped).
 *
 * Lifecycle of an I/O queue (Create/Delete I/O SQ/CQ, and every reset):
 *   create CQ: core checks the command, builds the CQ mirror, calls ops->create_cq(cq). The
 *     transport picks a poll group, wires the CQ head doorbell and the MSI-X vector, then calls
 *     ctrlr_cq_create_done(cq, 0 or -errno) on the admin thread (it may do so from inside
 *     create_cq). The core then posts the admin CQE.
 *   create SQ: likewise with ops->create_sq / ctrlr_sq_create_done; the transport binds the SQ
 *     tail doorbell and attaches the SQ to the poll group of ctrlr_sq_get_cq(sq).
 *   delete SQ: core calls ops->delete_sq(sq). The transport stops the doorbell, then on the SQ's
 *     owner thread calls ctrlr_sq_stop(sq, done, arg): the core stops fetching and calls done(arg)
 *     on that thread as soon as no request of the SQ is in flight (possibly at once). The
 *     transport unbinds and calls ctrlr_sq_delete_done(sq) on the admin thread; the core frees the
 *     SQ and posts the admin CQE. After ctrlr_sq_stop the transport must not call ctrlr_sq_poll
 *     or ctrlr_sq_tail_doorbell for that SQ any more.
 *   delete CQ: ops->delete_cq(cq) (only called once no SQ uses it); the transport stops the
 *     doorbell and the vector, then calls ctrlr_cq_delete_done(cq) on the admin thread.
 *   Queue pointers stay valid until the matching *_delete_done call returns.
 *
 * Reset (CC.EN 1->0), shutdown (CC.SHN), FLR (ctrlr_flr): the core deletes every I/O SQ then every
 * I/O CQ through the same ops, drops the admin queue, then updates CSTS through ops->write_regs.
 */
#ifndef NVME_EMU_CONTROLLER_CTRLR_TRANSPORT_H
#define NVME_EMU_CONTROLLER_CTRLR_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bdev;
struct bdev_channel;
struct evloop_msg;
struct ctrlr;
struct ctrlr_sq;
struct ctrlr_cq;

/* Direction of a guest-memory access, as seen by the controller (same values as hw/'s
 * HW_MMAP_READ / HW_MMAP_WRITE). */
enum ctrlr_dma_dir {
	CTRLR_DMA_READ = 1,  /* the controller reads guest memory (host -> device) */
	CTRLR_DMA_WRITE = 2, /* the controller writes guest memory (device -> host) */
};

/* A run of a core function over every I/O queue on its owner thread (ops->visit_queues). */
struct ctrlr_visit;

struct ctrlr_transport_ops {
	/*
	 * Translates guest address range [addr, addr + len) to a local pointer when it lies wholly
	 * in guest memory that the controller may access in direction `dir` (a CTRLR_DMA_* value).
	 * Returns NULL otherwise. For command data (PRP/SGL pages, lists): the pointer is valid
	 * until the next ctrlr_mem_unmap of that memory finished. Thread: any (admin and every
	 * owner thread, concurrently). Must not block or lock. Required.
	 */
	void *(*mem_map)(void *tctx, uint64_t addr, uint64_t len, unsigned int dir);

	/*
	 * Pins [addr, addr + len) (one contiguous piece of guest memory, accessible in `dir`):
	 * returns the local pointer and stores a pin handle in *pin; the pointer stays valid until
	 * mem_unpin(pin), even after the guest unmapped the memory. NULL when the range is not
	 * mapped that way (nothing pinned). Thread: admin, or an owner thread (a thread that takes
	 * part in every ctrlr_mem_unmap visit). Required.
	 */
	void *(*mem_pin)(void *tctx, uint64_t addr, uint64_t len, unsigned int dir, void **pin);
	/* Releases a pin; NULL is fine. Thread: any. Required. */
	void (*mem_unpin)(void *tctx, void *pin);

	/*
	 * Raises the MSI-X vector of `cq` (the core already applied IEN, INTMS and interrupt
	 * coalescing). Thread: the owner thread of `cq` (the admin thread for the admin CQ). Must
	 * not block. Required.
	 */
	void (*raise_irq)(void *tctx, struct ctrlr_cq *cq);
	/*
	 * The core holds the interrupt of `cq` (Set Features 08h aggregation, adaptive moderation)
	 * until `until_us` (evloop_now_us() clock), unless a completion or a head doorbell before
	 * then raises it: the transport calls ctrlr_cq_irq_poll() for `cq` on its owner thread by
	 * then (a timer; one already due sooner stays). Called from whatever posted the CQEs, a
	 * backend's poll or a message to the owner thread, so that no hold depends on the
	 * transport looking afterwards. Returns 0, or -errno when it cannot (the core raises the
	 * interrupt at once). Thread: the owner thread of `cq` (never the admin CQ). Must not
	 * block. Required.
	 */
	int (*hold_irq)(void *tctx, struct ctrlr_cq *cq, uint64_t until_us);

	/*
	 * Writes `len` bytes at register offset `offset` (BAR0 0x00..0x37) back into the register
	 * file the guest reads (CSTS after state changes, read-only fields restored after a guest
	 * write). Thread: admin. Required.
	 */
	void (*write_regs)(void *tctx, uint32_t offset, const void *buf, size_t len);

	/* Queue lifecycle, see the top of this file. Thread: admin. Each returns 0 when the
	 * transport accepted the work (then it calls the matching *_done later or from inside) or a
	 * -errno when it refuses at once (then it calls nothing and the core fails the command with
	 * Internal Error). Required. */
	int (*create_cq)(void *tctx, struct ctrlr_cq *cq);
	int (*create_sq)(void *tctx, struct ctrlr_sq *sq);
	int (*delete_sq)(void *tctx, struct ctrlr_sq *sq);
	int (*delete_cq)(void *tctx, struct ctrlr_cq *cq);

	/*
	 * Runs ctrlr_visit_cq(v, cq) for each I/O CQ and ctrlr_visit_sq(v, sq) for each I/O SQ of
	 * the controller that the transport has attached to an owner thread, on that thread, and
	 * passes every owner thread through a quiescent point: each thread the transport runs I/O
	 * queues on (those without queues of this controller too) takes ctrlr_visit_hold(v),
	 * handles the controller's queues it owns in one go, after finishing the work it was doing
	 * when the visit began, then ctrlr_visit_release(v). Cannot fail: at most one visit per
	 * ctrlr_visit_slot(v) runs at a time, so the transport preallocates what each slot needs.
	 * Thread: admin. Required.
	 */
	void (*visit_queues)(void *tctx, struct ctrlr_visit *v);

	/*
	 * Like admin_msg, with storage the caller provides (it must stay valid until fn starts):
	 * for the steps of flows that must not be lost. Thread: any. Required.
	 */
	void (*admin_post)(void *tctx, struct evloop_msg *m, void (*fn)(void *arg), void *arg);

	/*
	 * Returns the calling thread's I/O channel on `bdev` (the transport keeps one per thread
	 * and bdev, creates it on first use, polls its fd and calls bdev_channel_poll() from that
	 * thread), or NULL when none can be created (the command then fails with Internal Error).
	 * `sq` is the queue the I/O is for (the admin SQ for admin commands that do I/O, e.g.
	 * Format NVM). Thread: the owner thread of `sq`. Required.
	 */
	struct bdev_channel *(*get_channel)(void *tctx, struct ctrlr_sq *sq, struct bdev *bdev);

	/*
	 * The core stopped using `bdev` (namespace removed, controller destroyed): destroy every
	 * channel on it (none has core I/O in flight when this is called), then call done(arg) on
	 * the admin thread; the core closes the bdev only then. Thread: admin. Returns 0 (done will
	 * run, possibly from inside) or -ENOMEM (nothing done). Required.
	 */
	int (*put_bdev)(void *tctx, struct bdev *bdev, void (*done)(void *arg), void *arg);

	/*
	 * Runs fn(arg) later on the admin thread (an evloop message). Used by owner threads to
	 * report asynchronous events (invalid doorbell values) and namespace I/O drain. Thread:
	 * any. Returns 0 or -ENOMEM (the event is then lost and counted). Required.
	 */
	int (*admin_msg)(void *tctx, void (*fn)(void *arg), void *arg);

	/*
	 * Runs fn(arg) later on the owner thread of I/O queue `sq`, with storage the caller
	 * provides (as admin_post). The core uses it to come back from the admin thread to complete
	 * a command there (reservations) and to resume a command that waited for a range lock held
	 * by another thread (fused Compare and Write). Thread: any. Required.
	 */
	void (*io_post)(void *tctx, struct ctrlr_sq *sq, struct evloop_msg *m, void (*fn)(void *arg),
			void *arg);
	/*
	 * Shadow doorbells were enabled (Doorbell Buffer Config) or disabled (reset, unmap): while
	 * enabled the guest may update tails only in the shadow page and ring the real doorbell
	 * only when it crosses the event index the core armed, so the transport should call
	 * ctrlr_sq_poll() on doorbell activity and keep polling for a short window after the last
	 * activity. Thread: admin. Optional (NULL).
	 */
	void (*dbbuf_changed)(void *tctx, bool enabled);
	/*
	 * The host set the Keep Alive Timer (KATO): the transport (re)arms a timer on the admin
	 * thread for ctrlr_keep_alive_check() microseconds and calls it again when it fires.
	 * Thread: admin. Optional (NULL: keep alive never expires).
	 */
	void (*keep_alive_changed)(void *tctx);
};

/* ---- Entry points: registers and controller state (admin thread) ---- */

/* The Keep Alive Timer (keep_alive.c): microseconds until the next Keep Alive is due, or 0 when
 * nothing is due (KATO off, controller not enabled, or it just expired: CSTS.CFS set). */
uint64_t ctrlr_keep_alive_check(struct ctrlr *ctrlr);

/* Copies the current register image (offsets 0x00..0x37, NVME_REG_END bytes) for the transport to
 * seed its register file (stateful region default); bytes past 0x37 are not touched. INTMS and
 * INTMC read as 0 (the core keeps the mask: a rewrite of the same value must stay visible as a
 * write). Thread: admin. */
void ctrlr_regs_read(struct ctrlr *ctrlr, uint32_t offset, void *buf, size_t len);

/*
 * The guest wrote registers. `regs` is the whole register file as the transport queried it
 * (NVME_REG_END bytes, offsets 0x00..0x37, little endian). The core compares with its copy and
 * acts on what changed: CC (enable, reset, shutdown edges), AQA/ASQ/ACQ (stored), INTMS/INTMC
 * (write 1 to set/clear mask bits), and restores read-only fields via ops->write_regs. Enable is
 * synchronous; reset and shutdown complete asynchronously through queue deletion and end with a
 * CSTS write-back. Thread: admin.
 */
void ctrlr_regs_written(struct ctrlr *ctrlr, const void *regs);

/*
 * Function level reset (or the client went away): the same flow as CC.EN 1->0, then the register
 * file returns to its power-on values (written back through ops->write_regs). `done(arg)` runs on
 * the admin thread when nothing will touch guest memory any more (possibly before this returns).
 * Thread: admin.
 */
void ctrlr_flr(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg);

/*
 * The guest unmapped [iova, iova + len): nothing of it is translated any more (ops->mem_map
 * already fails for it). Detaches the queues whose ring lies in it (they fetch nothing and hold
 * their completions until their memory comes back) and releases their pins, drops the shadow
 * doorbells if their pages lie in it, and calls done(arg) on the admin thread once every request
 * in flight when this was called has finished with its data and every owner thread passed a
 * quiescent point (ops->visit_queues): from then on the core holds no pointer into the range.
 * One unmap at a time per controller. Thread: admin.
 */
void ctrlr_mem_unmap(struct ctrlr *ctrlr, uint64_t iova, uint64_t len, void (*done)(void *arg),
		     void *arg);
/* The guest mapped memory: queues detached by an unmap whose ring is mapped again are
 * re-attached on their owner threads. Thread: admin. */
void ctrlr_mem_mapped(struct ctrlr *ctrlr);
/* PCI Bus Master Enable cleared: as ctrlr_mem_unmap of all memory (ops->mem_map and mem_pin
 * already fail), logged as what it is; the shadow doorbell buffer is dropped with it (the host
 * configures it again, as after a reset). ctrlr_mem_mapped resumes once the bit is set again.
 * Thread: admin. */
void ctrlr_dma_stop(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg);

/* ---- Visits (ops->visit_queues) ---- */

/* Transport, on the owner thread, inside a visit: hand each of the controller's I/O queues it
 * owns to the visit. */
void ctrlr_visit_cq(struct ctrlr_visit *v, struct ctrlr_cq *cq);
void ctrlr_visit_sq(struct ctrlr_visit *v, struct ctrlr_sq *sq);
/* A part of the visit in progress: the visit ends (on the admin thread) after the last release.
 * Thread: any. */
void ctrlr_visit_hold(struct ctrlr_visit *v);
void ctrlr_visit_release(struct ctrlr_visit *v);
/* Which kind of visit this is (0 .. CTRLR_VISIT_SLOTS_MAX - 1): at most one of each runs at a
 * time per controller. Thread: any. */
unsigned int ctrlr_visit_slot(const struct ctrlr_visit *v);
#define CTRLR_VISIT_SLOTS_MAX 4

/* A doorbell write for a queue that does not exist or for the admin queue: the transport routes
 * every doorbell it has no live I/O queue for here. `db_index` = (offset - 0x1000) / (4 << DSTRD):
 * 2*qid for an SQ tail, 2*qid+1 for a CQ head. Handles the admin SQ/CQ, and raises the "invalid
 * doorbell register" asynchronous event for the rest. Thread: admin. */
void ctrlr_doorbell_write(struct ctrlr *ctrlr, uint32_t db_index, uint32_t value);

/* ---- Entry points: queues ---- */

/* Queue facts for the transport (any thread while the queue exists). */
uint16_t ctrlr_sq_get_qid(const struct ctrlr_sq *sq);
uint16_t ctrlr_cq_get_qid(const struct ctrlr_cq *cq);
struct ctrlr_cq *ctrlr_sq_get_cq(const struct ctrlr_sq *sq);
uint16_t ctrlr_cq_get_vector(const struct ctrlr_cq *cq);
/* Completions posted that the host has not consumed yet (by its head doorbell, or its shadow
 * head). A poller uses it to tell a host waiting for its next command (0-1: it consumed what we
 * gave it, or is about to) from one with a backlog of completions to work through first.
 * Owner thread. */
uint32_t ctrlr_cq_unconsumed(struct ctrlr_cq *cq);
bool ctrlr_cq_irq_enabled(const struct ctrlr_cq *cq);
uint32_t ctrlr_sq_get_size(const struct ctrlr_sq *sq); /* entries (1-based) */
uint32_t ctrlr_cq_get_size(const struct ctrlr_cq *cq);
struct ctrlr *ctrlr_sq_get_ctrlr(const struct ctrlr_sq *sq);
struct ctrlr *ctrlr_cq_get_ctrlr(const struct ctrlr_cq *cq);
/* A transport-private pointer per queue (e.g. its poll group binding). */
void ctrlr_sq_set_tctx(struct ctrlr_sq *sq, void *ctx);
void *ctrlr_sq_get_tctx(const struct ctrlr_sq *sq);
void ctrlr_cq_set_tctx(struct ctrlr_cq *cq, void *ctx);
void *ctrlr_cq_get_tctx(const struct ctrlr_cq *cq);

/* Completions of the asynchronous queue ops (admin thread). status: 0 or -errno; on error the
 * core frees the mirror and fails the admin command with Internal Error. */
void ctrlr_cq_create_done(struct ctrlr_cq *cq, int status);
void ctrlr_sq_create_done(struct ctrlr_sq *sq, int status);
void ctrlr_sq_delete_done(struct ctrlr_sq *sq);
void ctrlr_cq_delete_done(struct ctrlr_cq *cq);

/*
 * Stops an SQ on its owner thread: no more SQEs are fetched; in-flight requests complete into the
 * CQ until the SQ is deleted. done(arg) runs on the owner thread when the SQ has no request in
 * flight (from inside this call if it has none already, else from the bdev completion that
 * drains it). Thread: owner.
 */
void ctrlr_sq_stop(struct ctrlr_sq *sq, void (*done)(void *arg), void *arg);

/*
 * The guest wrote the SQ tail doorbell of I/O SQ `sq`. Checks the value (>= queue size is an
 * invalid doorbell write: the event is reported and the value ignored). Does not fetch: call
 * ctrlr_sq_poll() afterwards. Returns 0 or -EINVAL. Thread: owner.
 */
int ctrlr_sq_tail_doorbell(struct ctrlr_sq *sq, uint32_t value);

/*
 * The guest wrote the CQ head doorbell of I/O CQ `cq`. Checks the value (outside the queue, or
 * beyond the entries the controller posted, is an invalid doorbell write), frees the slots, posts
 * completions held back while the CQ was full. Returns 0 or -EINVAL. Thread: owner.
 */
int ctrlr_cq_head_doorbell(struct ctrlr_cq *cq, uint32_t value);

/*
 * Fetches up to `budget` new SQEs (from the doorbell value, or from the shadow doorbell when
 * Doorbell Buffer Config is active, re-arming its event index), and starts each command. Fetching
 * stops early when the SQ's request pool is empty: every request is in flight or holds a
 * completion that a full CQ cannot take yet (back-pressure, never an overwrite). Returns the number
 * of commands started (>= 0). Interrupts for commands that completed during the call are raised
 * once at its end. Thread: owner.
 */
int ctrlr_sq_poll(struct ctrlr_sq *sq, unsigned int budget);

/* True when the SQ has SQEs that were not fetched yet (per doorbell or shadow doorbell) and a
 * free request to run one: the transport should call ctrlr_sq_poll again. False while the SQ's
 * request pool is exhausted (commands in flight or completions held by a full CQ): the transport
 * re-checks after bdev_channel_poll() and after ctrlr_cq_head_doorbell() for the SQs of that CQ.
 * Thread: owner. */
bool ctrlr_sq_has_work(struct ctrlr_sq *sq);

/*
 * Interrupt batching: between ctrlr_cq_batch_begin and ctrlr_cq_batch_end (e.g. around a
 * bdev_channel_poll that completes many requests), interrupts of `cq` are raised once at the end
 * instead of once per CQE. Thread: owner. Nesting allowed.
 */
void ctrlr_cq_batch_begin(struct ctrlr_cq *cq);
void ctrlr_cq_batch_end(struct ctrlr_cq *cq);

/*
 * Interrupt coalescing timer (Set Features 08h with a non-zero aggregation time, or the adaptive
 * moderation holding completions while the host has not consumed the last interrupt's): raises
 * the CQ's interrupt when its time expired. `now_us` is evloop_now_us(). Returns the
 * evloop_now_us() value at which it must be called again, or 0 when no held interrupt is
 * pending. Thread: owner.
 */
uint64_t ctrlr_cq_irq_poll(struct ctrlr_cq *cq, uint64_t now_us);
/* True when CQEs wait for an interrupt outside a batch (ctrlr_cq_irq_poll has work): lets the
 * transport skip the clock read otherwise. Thread: owner. */
bool ctrlr_cq_irq_held(const struct ctrlr_cq *cq);

/*
 * The controller's clock: the modules that keep time without a host asking (the SMART / Health
 * model: the temperature follows the command rate, and warnings that appear raise their events
 * without a host reading SMART) take a step. Returns the microseconds until the next call: the
 * soonest any module asks for, CTRLR_TICK_IDLE_US when none asks. Call it first CTRLR_TICK_US
 * after creation. Thread: admin.
 */
#define CTRLR_TICK_US 1000000ull
#define CTRLR_TICK_IDLE_US 10000000ull
uint64_t ctrlr_tick(struct ctrlr *ctrlr);

#endif
