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
/* Controller Memory Buffer and Persistent Memory Region (NVMe over PCIe Transport 1.0 3.8):
 * each fills a 64-bit prefetchable BAR; the PMR registers are a stateful region of BAR0. */
#define PCIE_CMB_BAR 2
#define PCIE_PMR_BAR 4
#define PCIE_PMR_REGS_START 0x0e00
#define PCIE_PMR_REGS_SIZE 0x100

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

/* Controller memory the host addresses by a base address it set (CMBMSC.CBA, PMRMSC.CBA): the
 * device's own memory (hw_dev_memory), reached without a DMA window. `win` is the base | 1
 * while the controller decodes it, 0 otherwise: written on the main thread, read by any. */
struct pcie_devmem {
	uint8_t *mem;
	uint64_t size;
	uint64_t win;
};

/* The pin handle of a ring or shadow page in controller memory: nothing to release (the memory
 * lives as long as the function). */
extern char pcie_devmem_pin_tag;
#define PCIE_DEVMEM_PIN ((void *)&pcie_devmem_pin_tag)

/* A pointer into m for [addr, addr + len) when addr falls inside its enabled window (*hit set),
 * NULL when the range runs past its end (*hit set too: the access is an error, not host
 * memory). Any thread. */
static inline void *pcie_devmem_map(const struct pcie_devmem *m, uint64_t addr, uint64_t len,
				    bool *hit)
{
	uint64_t w = __atomic_load_n(&m->win, __ATOMIC_ACQUIRE), base = w & ~1ull;

	if (!(w & 1) || addr < base || addr - base >= m->size)
		return NULL;
	*hit = true;
	if (len > m->size - (addr - base))
		return NULL;
	return m->mem + (addr - base);
}

struct pcie_cmb;
struct pcie_pmr;

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
	bool attached; /* in pg->cqs (owner thread): a detached CQ arms no timer */
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
	/* Controller Memory Buffer, Persistent Memory Region (NULL: none). */
	struct pcie_cmb *cmb;
	struct pcie_pmr *pmr;
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
/* Owner thread: the CQ's held interrupt is polled at until_us at the latest (a timer already due
 * sooner stays). 0, or -ENOMEM (no timer). */
int pcie_pg_arm_irq_timer(struct pcie_cq *pcq, uint64_t until_us);
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

/* pcie_cmb.c: the Controller Memory Buffer (main thread unless said). */
int pcie_cmb_create(struct pcie_ctrlr *pc, uint64_t size);
void pcie_cmb_destroy(struct pcie_ctrlr *pc);
/* The register file 0x00..PCIE_REGS_SIZE as queried after a guest write: CMBMSC acted on,
 * CMBLOC/CMBSZ/CMBSTS and the reserved registers after ACQ restored. */
void pcie_cmb_regs_written(struct pcie_ctrlr *pc, const uint8_t *regs);
/* FLR: CMBMSC back to 0 (the register file is reset by hw/). */
void pcie_cmb_reset(struct pcie_ctrlr *pc);
/* Any thread: as pcie_devmem_map for the CMB (NULL, *hit untouched, without one). */
void *pcie_cmb_map(struct pcie_ctrlr *pc, uint64_t addr, uint64_t len, bool *hit);

/* pcie_pmr.c: the Persistent Memory Region (main thread unless said). */
/* Opens (creating or extending) the file and learns the size: before the type is built. */
int pcie_pmr_open(struct pcie_ctrlr *pc, const char *path, uint64_t size, char *err,
		  size_t err_len);
/* Once the function exists: loads the file into its memory, sets the register defaults. */
int pcie_pmr_attach(struct pcie_ctrlr *pc);
uint64_t pcie_pmr_size(const struct pcie_ctrlr *pc);
void pcie_pmr_regs_written(struct pcie_ctrlr *pc);
/* A driver read of BAR0 [offset, +len): 0, or HW_EVENT_ASYNC when it is a PMRSTS read that must
 * wait for a flush (hw_dev_read_done then). */
int pcie_pmr_read(struct pcie_ctrlr *pc, uint64_t offset, uint32_t len);
/* The PMR is disabled (FLR, destroy) and made persistent; done(arg) runs on the main thread
 * once its contents are in the file (maybe from inside this call: nothing to write). */
void pcie_pmr_quiesce(struct pcie_ctrlr *pc, void (*done)(void *arg), void *arg);
void pcie_pmr_close(struct pcie_ctrlr *pc);
void *pcie_pmr_map(struct pcie_ctrlr *pc, uint64_t addr, uint64_t len, bool *hit);

/* pcie_ctrlr.c */
struct hw_msix_vector *pcie_vector_get(struct pcie_ctrlr *pc, uint16_t vector);
extern const struct ctrlr_transport_ops pcie_transport_ops;

#endif
