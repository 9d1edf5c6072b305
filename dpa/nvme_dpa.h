/* dpa/nvme_dpa.h - the NVMe DPA program and its full-duplex channel to the
 * owning poll group (the device-side half of DOCA's NVMe emulation data path).
 *
 * One channel = one DPA thread (one per I/O CQ, as the DOCA app does; the
 * admin queue pair may have its own) + its DB completion context + two
 * message queues of struct dpa_nvme_msg:
 * - to DPA (producer: the Arm-side owner, consumer: the DPA thread):
 *   BIND_DB, UNBIND_DB, RAISE_MSIX;
 * - to Arm (producer: the DPA thread, consumer: the Arm-side owner):
 *   DB_VALUE, BIND_DONE, UNBIND_DONE.
 *
 * The program, per activation: drains requests (bind -> bind + BIND_DONE;
 * unbind -> ack what it fetched, unbind, UNBIND_DONE; raise -> remembered),
 * then fetches DB completions, acks them, re-arms the context and each DB,
 * reads each DB's latest value and sends {db_id, value, cookie}; finally it
 * raises each requested MSI-X vector once (coalesced per vector per
 * activation) and re-arms its queues. When the to-Arm queue is full it keeps
 * the DBs dirty and the replies held, arms the producer completion and
 * resumes when the Arm drained (latest values are sent; intermediate ones
 * coalesce, never a value that was not written).
 *
 * SQ/CQ create flow (DOCA): control creates the DB with dpa_db_create() on
 * dpa_nvme_chan_db_comp(ch); the owner sends BIND_DB; on BIND_DONE control
 * calls dpa_db_start(). Delete: dpa_db_stop(), UNBIND_DB, on UNBIND_DONE
 * dpa_db_destroy(). MSI-X: the owner sends RAISE_MSIX with a vector the
 * control plane created; the vector must stay alive until the channel has
 * processed the message (destroy vectors after the channel, or after an
 * UNBIND round trip that follows the last RAISE_MSIX).
 *
 * Threads: "control" and "owner" below. The owner is the one Arm-side thread
 * (a poll group, or the main thread for the admin queue) that sends to and
 * receives from the channel: the queues are single-producer/single-consumer.
 * The owner must keep draining messages from the DPA even while its own
 * sends are refused (-EAGAIN): a DPA thread whose replies cannot leave stops
 * taking requests until they can.
 *
 * Fused mode (dpa_create(0)): the owner runs the program itself with
 * dpa_nvme_chan_poll(), waking on dpa_thread_event_fd() of
 * dpa_nvme_chan_thread() (trap-mode doorbells, requests) and, while
 * dpa_thread_has_polled_dbs(), every dpa_poll_step_us() for mmap doorbells;
 * the messages the program produced are then ready for dpa_nvme_chan_recv().
 */
#ifndef NVME_EMU_DPA_NVME_DPA_H
#define NVME_EMU_DPA_NVME_DPA_H

#include "dpa/dpa.h"

#include <assert.h>
#include <stdint.h>

/* Bound DBs per channel: the CQ head DB plus the tail DBs of its SQs. */
#define DPA_NVME_MAX_DBS 64
/* Distinct MSI-X vectors coalesced in one activation (more are raised early). */
#define DPA_NVME_MAX_MSIX_COALESCE 8

enum dpa_nvme_msg_type {
	/* Arm -> DPA */
	DPA_NVME_MSG_BIND_DB = 1,    /* bind.db_handle, bind.cookie */
	DPA_NVME_MSG_UNBIND_DB = 2,  /* bind.db_handle, bind.cookie */
	DPA_NVME_MSG_RAISE_MSIX = 3, /* msix.vec */
	/* DPA -> Arm */
	DPA_NVME_MSG_DB_VALUE = 16,    /* db.db_id, db.value, db.cookie */
	DPA_NVME_MSG_BIND_DONE = 17,   /* bind.*, status */
	DPA_NVME_MSG_UNBIND_DONE = 18, /* bind.*, status */
};

/* One message in either direction: 32 bytes, fixed. */
struct dpa_nvme_msg {
	uint16_t type; /* enum dpa_nvme_msg_type */
	uint16_t rsvd0;
	int32_t status; /* replies: 0 or -errno (of dpa_db_comp_bind/unbind) */
	union {
		struct {
			dpa_db_handle_t db_handle; /* dpa_db_get_handle() */
			uint64_t cookie;	   /* the owner's, echoed in replies and DB_VALUE */
		} bind;
		struct {
			uint32_t db_id;
			uint32_t value;
			uint64_t cookie; /* the cookie given at BIND_DB */
		} db;
		struct {
			uint64_t vec; /* (uintptr_t)struct hw_msix_vector * */
		} msix;
		uint8_t raw[24];
	};
};
static_assert(sizeof(struct dpa_nvme_msg) == 32, "dpa_nvme_msg is 32 bytes");

struct dpa_nvme_chan;

/* Creates a channel: the DPA thread running the NVMe program, its DB
 * completion context and both queues (`depth` slots each, a power of two
 * 2..65536), and runs it on `hart` (-1: least loaded; must be -1 in fused
 * mode). Returns NULL with errno EINVAL or ENOMEM. Thread: control. */
struct dpa_nvme_chan *dpa_nvme_chan_create(struct dpa *dpa, int hart, uint32_t depth);

/* Destroys the thread, context and queues. Every DB created on the context
 * must have been unbound and destroyed first (-EBUSY otherwise, nothing
 * freed). Returns 0. Thread: control (no owner call may race with it). */
int dpa_nvme_chan_destroy(struct dpa_nvme_chan *ch);

/* The context to create the channel's DBs on (dpa_db_create) and the DPA
 * thread (for stats, and for dpa_thread_poll in fused mode). Thread: any. */
struct dpa_db_comp *dpa_nvme_chan_db_comp(const struct dpa_nvme_chan *ch);
struct dpa_thread *dpa_nvme_chan_thread(const struct dpa_nvme_chan *ch);

/* Owner: sends one request. Returns 0 or -EAGAIN (to-DPA queue full: wait for
 * dpa_nvme_chan_send_fd, after dpa_nvme_chan_send_arm returned 0), -EINVAL
 * for a type that does not go to the DPA. */
int dpa_nvme_chan_send(struct dpa_nvme_chan *ch, const struct dpa_nvme_msg *msg);
/* Owner: helpers that build and send BIND_DB / UNBIND_DB / RAISE_MSIX. */
int dpa_nvme_chan_bind_db(struct dpa_nvme_chan *ch, struct dpa_db *db, uint64_t cookie);
int dpa_nvme_chan_unbind_db(struct dpa_nvme_chan *ch, struct dpa_db *db, uint64_t cookie);
int dpa_nvme_chan_raise_msix(struct dpa_nvme_chan *ch, struct hw_msix_vector *vec);
/* Owner, fused mode, when it runs the program (dpa_nvme_chan_poll) before its loop next sleeps,
 * as a loop polling the channel's mmap-mode DBs does: RAISE_MSIX without the eventfd round trip
 * (dpa_msgq_send_polled). Same returns, and -EINVAL when the instance has harts. */
int dpa_nvme_chan_raise_msix_polled(struct dpa_nvme_chan *ch, struct hw_msix_vector *vec);

/* Owner: receives one message from the DPA. Returns 1 or 0 (none). */
int dpa_nvme_chan_recv(struct dpa_nvme_chan *ch, struct dpa_nvme_msg *msg);

/* Owner: arms the wake-up for messages from the DPA: 0 = armed and empty,
 * safe to sleep on dpa_nvme_chan_fd(); -EAGAIN = messages waiting. */
int dpa_nvme_chan_arm(struct dpa_nvme_chan *ch);
/* Owner: eventfd readable when messages from the DPA arrived (after arming);
 * clear it with dpa_msgq_fd_clear(). Thread: any. */
int dpa_nvme_chan_fd(const struct dpa_nvme_chan *ch);

/* Owner: arms / gives the eventfd for "room freed in the to-DPA queue"
 * (same conventions as dpa_msgq_producer_arm / dpa_msgq_producer_fd). */
int dpa_nvme_chan_send_arm(struct dpa_nvme_chan *ch);
int dpa_nvme_chan_send_fd(const struct dpa_nvme_chan *ch);

/* Owner, fused mode only: runs the DPA program if it has work
 * (dpa_thread_poll). Returns 1, 0 or -EINVAL. */
int dpa_nvme_chan_poll(struct dpa_nvme_chan *ch);

#endif
