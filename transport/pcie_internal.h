/* transport/pcie_internal.h - objects of the PCIe-emulation transport shared
 * by transport/pcie_*.c. Not for use outside the transport.
 *
 * Ownership: a pcie_ctrlr belongs to the main thread (its evloop); a poll
 * group, and every pcie_cq/pcie_sq attached to it, to the poll group's thread.
 * Work for another thread is a message: every step of a flow that must not
 * be lost (queue create/delete, visits, teardown) posts a node embedded in
 * the object it is about (evloop_post), so it cannot fail for lack of memory.
 * EVLOOP_ASSERT_OWNER checks the rule in debug builds. */
#ifndef NVME_EMU_CONTROLLER_PCIE_INTERNAL_H
#define NVME_EMU_CONTROLLER_PCIE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/counter.h"
#include "common/evloop.h"
#include "transport/pcie.h"
#include "dpa/dpa.h"

#define PCIE_LOG "pcie"

/* BAR0 layout (DESIGN.md section 6). */
/* Default PCI IDs (pcie_ctrlr_opts overrides them): a vendor ID the PCI-SIG has assigned to
 * nobody, so that no guest names a real company's product and no driver quirk table (Linux
 * nvme's keys on vendor:device) applies; drivers bind by class code 010802h. */
#define PCIE_NVME_VENDOR_ID 0xfffe
#define PCIE_NVME_DEVICE_ID 0x00e1
#define PCIE_BAR0_LOG_SIZE 14
#define PCIE_REGS_START 0x0000
#define PCIE_REGS_SIZE 0x100
#define PCIE_DB_START 0x1000
#define PCIE_DB_SIZE 0x1000
#define PCIE_MSIX_TABLE_START 0x2000
#define PCIE_MSIX_TABLE_SIZE 0x1000
#define PCIE_MSIX_PBA_START 0x3000
#define PCIE_MSIX_PBA_SIZE 0x1000

/* Messages each DPA channel queue holds. */
#define PCIE_CHAN_DEPTH 256
/* SQEs fetched per SQ per poll round (round-robin arbitration burst). */
#define PCIE_SQ_BURST 32

struct bdev;
struct bdev_channel;
struct dpa_nvme_chan;
struct dpa_db;
struct evloop_watch;
struct evloop_timer;

/* A thread that may own bdev channels: the main thread of a controller, or a
 * poll group. Channels are created on first use and live on that thread. */
struct pcie_chan_entry {
	struct bdev *bdev;
	struct bdev_channel *ch;
	struct evloop_watch *watch;
	struct pcie_thread *thread;
	struct pcie_chan_entry *next;
};

struct pcie_thread {
	struct evloop *loop;
	struct pcie_poll_group *pg; /* NULL on the main thread */
	struct pcie_chan_entry *channels;
	/* A channel's fd fired: reap it (NULL: just poll it). The poll group batches interrupts
	 * and fetches what waited around it. */
	void (*chan_ready)(struct pcie_thread *t, struct bdev_channel *ch);
};

/* Cookie of a DPA binding: which queue a DB_VALUE or BIND/UNBIND reply is for. */
enum pcie_q_kind { PCIE_Q_SQ = 1, PCIE_Q_CQ = 2 };

/* A bind or unbind of one doorbell, sent from the queue's poll group and
 * retried from its loop while the to-DPA queue is full. One per queue: a
 * queue is bound once and unbound once. */
struct pcie_bind {
	struct pcie_poll_group *pg;
	struct dpa_nvme_chan *chan;
	struct dpa_db *db;
	void *cookie;
	bool bind;
	/* The reply (status: 0 or -errno) goes on with the queue's flow (pcie_queue.c). */
	void (*done)(struct pcie_bind *b, int status);
	struct evloop_msg retry;
};

struct pcie_cq;

struct pcie_sq {
	enum pcie_q_kind kind; /* first: the cookie's tag */
	struct pcie_ctrlr *pc;
	struct ctrlr_sq *sq;
	struct pcie_cq *pcq;
	struct dpa_db *db;
	bool stopped; /* owner: ctrlr_sq_stop called, ignore further doorbells */
	struct pcie_sq *next;
	struct pcie_bind bind;
	struct evloop_msg msg; /* its lifecycle's hops, one at a time */
	int status;	       /* of the bind, carried to the main thread */
};

struct pcie_cq {
	enum pcie_q_kind kind;
	struct pcie_ctrlr *pc;
	struct ctrlr_cq *cq;
	struct pcie_poll_group *pg;
	struct dpa_nvme_chan *chan;
	struct dpa_db *db;
	struct hw_msix_vector *vec; /* NULL when interrupts are off (IEN 0) */
	struct evloop_watch *watch; /* chan fd (harts) or DPA thread fd (fused) */
	struct evloop_timer *irq_timer;
	uint64_t irq_deadline;
	struct pcie_sq *sqs;  /* owner thread */
	struct pcie_cq *next; /* in pg->cqs, owner thread */
	struct pcie_bind bind;
	struct evloop_msg msg;
	int status;
};

struct pcie_poll_group {
	struct pcie_poll_groups *pgs;
	unsigned int idx;
	pthread_t thread;
	struct pcie_thread t;
	bool polling;	    /* fused mode with polled (mmap) DBs: the loop's poller is ours */
	bool drain_deferred; /* fused: pcie_pg_defer_drain's call is pending */
	struct dpa_poll_window window; /* the poller's adaptive burst window */
	struct pcie_cq *cqs;
	struct evloop_msg stop_msg;
	/* Written by the group's own thread only (counter_add_owned_atomic), read by any. */
	_Atomic uint64_t wakeups, db_msgs, sqes, bdev_polls, irqs;
	atomic_uint nr_sqs, nr_cqs;
};

struct pcie_poll_groups {
	struct dpa *dpa;
	bool fused;
	unsigned int n;
	unsigned int next_rr;
	struct pcie_poll_group *pg;
};

/* One poll group's part of a visit of the controller's queues (ops->visit_queues). */
struct pcie_visit_part {
	struct evloop_msg msg;
	struct pcie_ctrlr *pc;
	struct pcie_poll_group *pg;
	struct ctrlr_visit *v;
};

struct pcie_ctrlr {
	struct evloop *loop;
	struct pcie_poll_groups *pgs;
	struct dpa *dpa;
	struct hw_pci_type *type;
	struct hw_dev *dev;
	struct ctrlr *ctrlr;
	char *vuid, *socket_path;
	uint16_t num_msix;
	struct hw_mmap *map;	   /* the client's memory, while one is attached */
	struct hw_db *admin_db[2]; /* SQ0 tail, CQ0 head */
	uint32_t admin_db_seen[2]; /* mmap mode: last values handed to the core */
	struct evloop_timer *admin_timer;
	struct evloop_timer *tick_timer; /* ctrlr_tick, while a client is attached */
	struct evloop_timer *ka_timer;	   /* ctrlr_keep_alive_check, while KATO runs */
	uint64_t admin_last_activity_us;
	struct hw_msix_vector **vectors; /* created on first use, main thread */
	struct pcie_thread main_t;
	bool cc_en; /* CC.EN as last seen, for the enable edge */
	/* COMMAND Bus Master Enable clear (power-on, FLR, or the host's write): no translation
	 * of host memory succeeds. Written on the main thread, read by any. */
	bool dma_off;
	/* Preallocated parts of each kind of visit (one per poll group). */
	struct pcie_visit_part *visit_parts[CTRLR_VISIT_SLOTS_MAX];
	/* Teardown (pcie_ctrlr_destroy): unplug, then the core, then the rest. */
	bool destroying, destroy_continued;
	void (*destroy_done)(void *arg);
	void *destroy_arg;
};

/* pcie_poll_group.c */
/* Posts fn(arg) to the poll group with the caller's node (cannot fail). */
void pcie_pg_post(struct pcie_poll_group *pg, struct evloop_msg *m, void (*fn)(void *), void *arg);
struct pcie_poll_group *pcie_pg_pick(struct pcie_poll_groups *pgs);
void pcie_pg_cq_attach(struct pcie_cq *pcq);	    /* owner thread */
void pcie_pg_cq_detach(struct pcie_cq *pcq);	    /* owner thread */
void pcie_pg_update_irq_timer(struct pcie_cq *pcq); /* owner thread */
/* Poll group: reap finished backend I/O (and run fused DPA programs) before sleeping. */
void pcie_pg_settle(struct pcie_poll_group *pg);
/* Fused: drains the group's DPA channels (their programs run) before its loop sleeps again, once
 * however often it is asked in one callback. 0, or -ENOMEM (nothing was deferred). */
int pcie_pg_defer_drain(struct pcie_poll_group *pg);
/* Poll group: fetch from SQs that have work, after completions freed room. */
void pcie_pg_after_bdev_poll(struct pcie_poll_group *pg);
/* Poll group: holds (true) or releases (false) the wake-ups of its bdev channels around a handler
 * that submits and then settles (bdev_channel_hold_wakeups). */
void pcie_pg_hold_wakeups(struct pcie_poll_group *pg, bool hold);
/* Poll group: interrupt batching around a burst of completions. */
void pcie_pg_batch(struct pcie_poll_group *pg, bool begin);
/* Transport op visit_queues: a part per poll group, from pc->visit_parts. */
void pcie_visit_queues(void *tctx, struct ctrlr_visit *v);

/* pcie_chan.c: bdev channels of a thread. */
struct bdev_channel *pcie_thread_get_channel(struct pcie_thread *t, struct bdev *bdev);
void pcie_thread_put_bdev(struct pcie_thread *t, struct bdev *bdev);
void pcie_thread_put_all(struct pcie_thread *t);
/* Transport op put_bdev: every poll group drops its channels on bdev, then the
 * main thread's, then done(arg). 0 or -ENOMEM. */
int pcie_put_bdev(void *tctx, struct bdev *bdev, void (*done)(void *arg), void *arg);

/* pcie_ctrlr.c */
struct hw_msix_vector *pcie_vector_get(struct pcie_ctrlr *pc, uint16_t vector);
extern const struct ctrlr_transport_ops pcie_transport_ops;

#endif
