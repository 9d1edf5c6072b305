/* controller/core/core.h - the controller core's objects (controller, namespaces, queues,
 * requests), the functions its files share, and the seam above it: the modules (command sets and
 * features: nvm/, zns/, device/, pool/, admin/) that the core knows only through struct
 * ctrlr_module tables, assembled by controller/modules.c. The core names no module: what a
 * module must do when a controller is created, reset, enabled or destroyed, when a namespace is
 * attached or erased, it does from its hooks, and what it keeps it keeps in its state slots
 * (ctrlr->mod[], ns->mod[], shared->mod[]). Not for use outside controller/. */
#ifndef NVME_EMU_CONTROLLER_CORE_CORE_H
#define NVME_EMU_CONTROLLER_CORE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/bdev.h"
#include "common/counter.h"
#include "common/evloop.h"
#include "controller/ctrlr.h"
#include "controller/ctrlr_transport.h"
#include "controller/nvme_spec.h"

#define CTRLR_LOG "ctrlr"
#define CTRLR_PAGE_SHIFT_MIN 12
#define CTRLR_MPSMIN 0	 /* 4 KiB */
#define CTRLR_MPSMAX 4	 /* 64 KiB */
#define CTRLR_MAX_MDTS 8 /* bounds the per-request iovec array */
#define CTRLR_ADMIN_MAX_ENTRIES 4096
#define CTRLR_AERL 3			/* 0-based: four outstanding AERs */
#define CTRLR_ACL 3			/* 0-based abort command limit */
#define CTRLR_PREEMPT_NSIDS 8		/* namespaces one SQ's preempt fence covers at once */
#define CTRLR_ERROR_LOG_ENTRIES 64	/* ELPE + 1 */
#define CTRLR_AER_QUEUE 16		/* events waiting for an AER command */
#define CTRLR_BDEV_CTX_MAX 512		/* largest backend per-I/O context accepted */
#define CTRLR_DSM_BATCH 16		/* ranges per bdev request (req->step.ranges) */
#define CTRLR_CHUNK_BYTES (128u * 1024) /* bounce size of chunked reads (Verify, vendor, self-test) */
#define CTRLR_SGL_MAX_SEGMENTS 64
#define CTRLR_SGL_MAX_DESCS 4096 /* descriptors walked per command, all segments */
#define CTRLR_MODULES_MAX 8	 /* modules a controller may have (controller/module_ids.h) */

#define CTRLR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Relaxed counters shared by threads: no locks on the I/O path. */
#define CTRLR_STAT_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)
/* A counter of one SQ (ctrlr_sq.cnt), bumped by the queue's owner thread alone: a load and a
 * store, no locked instruction per command (two of those per read cost a tenth of a poll
 * group's time at QD32). ctrlr_get_stats adds every SQ's to the controller's own. */
#define CTRLR_SQ_STAT_ADD(sq, field, n) counter_add_owned(&(sq)->cnt.field, (n))
#define CTRLR_LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define CTRLR_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

struct ctrlr;
struct ctrlr_req;
struct ctrlr_module;
struct ctrlr_iostat_q;

/* Guest-memory translator, injected into the PRP/SGL walkers (ops->mem_map). */
typedef void *(*ctrlr_map_fn)(void *mctx, uint64_t addr, uint64_t len, unsigned int dir);

/* ---- Namespaces (ns.c) ---- */

/* LBA formats. A namespace's command set (nvm/format.c) fills the formats its bdev offers when
 * the namespace is attached; logical block i occupies bdev blocks [i * bpl, (i + 1) * bpl): its
 * data, its metadata right after, zero padding to the end (see docs/DESIGN.md). */

#define CTRLR_MAX_LBAF 16
struct ctrlr_lbaf {
	uint32_t ds;  /* data bytes */
	uint16_t ms;  /* metadata bytes */
	uint8_t lbads;
	uint8_t pif;  /* protection information format when PI is on (CTRLR_PIF_16/32/64) */
	uint8_t sts;  /* storage tag size in bits (ELBAF STS), 0: none */
	bool qual;    /* reported as the Qualified Type (ELBAF PIF 11b, QPIF = pif) */
	uint8_t rp;   /* relative performance (space efficiency here) */
	uint16_t bpl; /* bdev blocks per logical block */
	uint32_t stride; /* bpl * the bdev's block size: bytes a logical block takes */
};
/* The namespace's current format in one word, loaded once per command (ctrlr_req_get_ns). */
union ctrlr_ns_fmt {
	uint64_t raw;
	struct {
		uint8_t lbaf;	  /* index into ns->lbafs */
		uint8_t pi;	  /* protection type 0 (none) .. 3 */
		uint8_t ext;	  /* FLBAS bit 4: metadata travels at the end of each block's data */
		uint8_t pi_first; /* DPS bit 3: the tuple is the first metadata bytes */
		uint8_t rsvd[4];
	} f;
};


/* What a reservation may refuse a host (ctrlr_ns.io_block) and what a command needs
 * (ctrlr_cmd.access). */
#define CTRLR_ACCESS_READ (1u << 0)
#define CTRLR_ACCESS_WRITE (1u << 1)

struct ctrlr_ns {
	struct ctrlr *ctrlr;
	uint32_t nsid;
	struct bdev *bdev;
	uint8_t csi; /* its I/O command set (NVME_CSI_*), set by the module that takes it */
	uint32_t block_size;
	uint8_t lbads;
	uint64_t num_blocks;
	uint8_t nguid[16];
	uint8_t eui64[8];
	uint8_t uuid[16];
	bool has_unmap;
	bool has_write_zeroes;
	uint8_t nmic;
	/* Namespace Attachment / Management waiting for the bdev's release (pool/). */
	void (*released_fn)(void *arg);
	void *released_arg;
	/* Removal without a shared counter on the I/O path (ns.c, "grace periods"): commands
	 * on I/O queues hold no reference, their SQ's namespace epoch keeps the namespace; the
	 * admin thread's users count in admin_refs. Removal NULLs ctrlr->ns[], asks for a grace
	 * period (ticket `grace`) and releases the bdev once it passed and admin_refs is 0.
	 * All admin thread. */
	uint32_t admin_refs;
	uint32_t grace;
	bool removing;
	bool released;
	uint32_t err_recovery; /* Error Recovery feature (TLER), per namespace */
	/* LBA formats (fixed at attachment) and the current one (union ctrlr_ns_fmt, atomic: Format
	 * NVM on the admin thread changes it, with block_size, lbads and num_blocks). */
	struct ctrlr_lbaf lbafs[CTRLR_MAX_LBAF];
	uint8_t nlbaf; /* formats in lbafs */
	uint64_t fmt;
	/* The state shared with the other controllers attached to the same bdev. */
	struct ctrlr_ns_shared *shared;
	struct ctrlr_ns *share_next;
	/* Accesses this controller's host is refused (CTRLR_ACCESS_*; atomic, written by the admin
	 * thread: a reservation held by another host): one load per command. */
	uint32_t io_block;
	/* The modules' state for this controller's view of the namespace (ns_size bytes each). */
	void *mod[CTRLR_MODULES_MAX];
	/* Removed namespaces stay allocated until the controller is destroyed: an owner thread
	 * may still hold the pointer it loaded just before the removal. */
	struct ctrlr_ns *dead_next;
};

/* A namespace as every controller attached to its bdev sees it (NVMe Base 2.0: reservations,
 * zones, formats belong to the namespace, not to a controller): the bdev claim, taken by the
 * first controller that attaches it and dropped with the last, the list of the controllers'
 * namespaces, and the modules' shared state (shared_size bytes each: reservations, range locks,
 * zones, media marks). Admin thread (all its controllers share it). */
struct ctrlr_ns_shared {
	uint32_t refs;	   /* the creator's and one per controller namespace attached */
	struct bdev *bdev; /* claimed by the first controller that attached it */
	uint32_t claims;   /* attached controller namespaces using the claim */
	const struct ctrlr_module *const *modules; /* the modules it was made with */
	uint32_t nr_modules;
	struct ctrlr_ns *nss; /* controller namespaces attached (ctrlr_ns.share_next) */
	void *mod[CTRLR_MODULES_MAX];
};

/* ---- Visits of every queue on its owner thread (queue_mem.c) ---- */
enum ctrlr_visit_slot {
	CTRLR_VISIT_UNMAP = 0, /* ctrlr_mem_unmap */
	CTRLR_VISIT_REMAP,     /* ctrlr_mem_mapped */
	CTRLR_VISIT_DBBUF,     /* Doorbell Buffer Config */
	CTRLR_VISIT_NS_GRACE,  /* namespace grace period (ns.c) */
	CTRLR_VISIT_SLOTS,
};

struct ctrlr_cq;
struct ctrlr_sq;

struct ctrlr_visit {
	struct ctrlr *ctrlr;
	enum ctrlr_visit_slot slot;
	unsigned int pending; /* atomic: holds of the parts still running */
	void (*cq_fn)(struct ctrlr_cq *cq, struct ctrlr_visit *v);
	void (*sq_fn)(struct ctrlr_sq *sq, struct ctrlr_visit *v);
	void (*done)(struct ctrlr *ctrlr);
	struct evloop_msg done_msg; /* the hop back to the admin thread */
};

/* ---- Queues ---- */
enum ctrlr_q_state {
	CTRLR_Q_CREATING = 0,
	CTRLR_Q_LIVE,
	CTRLR_Q_STOPPED,
	CTRLR_Q_DELETING,
};

struct ctrlr_cq {
	struct ctrlr *ctrlr;
	uint16_t qid;
	uint16_t vector;
	bool ien;
	uint8_t phase;
	uint32_t size; /* entries */
	uint64_t dma_addr;
	/* The ring, pinned once (ops->mem_pin); NULL while detached by an unmap. Owner thread. */
	struct nvme_cqe *ring;
	void *ring_pin;
	/* Shadow doorbell slots (Doorbell Buffer Config): NULL when off. Owner thread. */
	volatile uint32_t *shadow_head;
	volatile uint32_t *head_eventidx;
	uint32_t tail; /* next slot the controller writes */
	uint32_t head; /* last head the guest reported */
	enum ctrlr_q_state state;
	uint32_t sq_refs;			 /* SQs bound to this CQ */
	struct ctrlr_req *held_head, *held_tail; /* completions waiting for room */
	uint32_t irq_pending;			 /* CQEs posted since the last interrupt */
	uint64_t irq_first_us; /* when the first of them was posted (coalescing time) */
	/* Adaptive moderation (queue.c): the tail when the last interrupt was raised, while the
	 * host has not consumed up to it (its handler is still to run or running). */
	bool irq_unacked;
	uint32_t irq_ack_tail;
	/* Adaptive moderation, the host's depth (queue.c): commands fetched from this CQ's SQs
	 * whose CQE is not written yet; the most the host has had outstanding and not yet
	 * announced by an interrupt; the waits for it in a row that missed; the running share of
	 * missed waits (1/16 percent units), interrupts left with the rule off, the next such
	 * backoff, waits since the last; while an interrupt waits for the host to submit up to
	 * the mark, the outstanding count last seen and when it last grew. When the hold of the
	 * interrupt pending ends (either rule). */
	uint32_t inflight;
	uint32_t depth_mark;
	uint32_t depth_misses;
	uint32_t depth_miss_share;
	uint32_t depth_off;
	uint32_t depth_backoff;
	uint32_t depth_ok;
	uint32_t depth_seen;
	uint64_t depth_since_us;
	uint64_t irq_hold_until_us;
	int batch;
	void *tctx;
	struct ctrlr_req *create_req; /* the admin command waiting for create/delete done */
};

struct ctrlr_counters {
	uint64_t admin_cmds, io_cmds, errors;
	uint64_t bytes_read, bytes_written;
	uint64_t host_read_cmds, host_write_cmds;
	uint64_t media_errors;
	uint64_t invalid_db_writes;
	uint64_t aer_sent;
	uint64_t irqs_raised;
	uint64_t irq_depth_waits, irq_depth_misses, irq_depth_backoffs;
	uint64_t cq_full_holds;
	uint64_t resets, shutdowns;
	uint64_t lost_events;
	/* Completions an interrupt announced or that needed none (the host took them first), and
	 * FLRs: per interrupt and per FLR, not per command. */
	uint64_t irq_cqes, flrs;
};
/* Summed and folded as a run of counters (common/counter.h): no other member type may join. */
_Static_assert(sizeof(struct ctrlr_counters) == 20 * sizeof(uint64_t),
	       "struct ctrlr_counters is a run of uint64_t counters");

struct ctrlr_sq {
	struct ctrlr *ctrlr;
	uint16_t qid;
	uint16_t cqid;
	struct ctrlr_cq *cq;
	uint32_t size;
	uint64_t dma_addr;
	/* The ring, pinned once (ops->mem_pin); NULL while detached by an unmap. Owner thread. */
	const struct nvme_sqe *ring;
	void *ring_pin;
	uint32_t head; /* next SQE to fetch */
	uint32_t tail; /* last tail the guest reported */
	uint8_t qprio;
	enum ctrlr_q_state state;
	/* Request pool sized to the queue depth, with iovecs and backend context. */
	struct ctrlr_req *reqs;
	unsigned char *bio_mem;
	struct iovec *iov_mem;
	struct ctrlr_req *free_list;
	uint32_t inflight;
	/* Fence (ctrlr_mem_unmap): requests still using their data, counted by the epoch they
	 * started in; a fence flips the epoch and waits for the old one to empty. Owner thread. */
	uint8_t epoch;
	uint32_t epoch_users[2];
	struct ctrlr_visit *fence;
	/* Namespace grace periods (ns.c): requests counted by the namespace epoch they started
	 * in (ctrlr_req_get until ctrlr_req_ns_end); a grace period flips the epoch and waits for
	 * the old one to empty. Owner thread, so no atomics per command. */
	uint8_t ns_epoch;
	uint32_t ns_users[2];
	struct ctrlr_visit *ns_fence;
	uint32_t max_iov;
	void (*stop_done)(void *arg);
	void *stop_arg;
	void *tctx;
	struct ctrlr_req *create_req;
	/* Shadow doorbells (Doorbell Buffer Config): NULL when off. */
	volatile uint32_t *shadow_db;
	volatile uint32_t *eventidx;
	/* Aborts of SQEs not fetched yet (abort.c); owner thread. NULL: the fetch path
	 * pays one test. */
	struct ctrlr_abort_rec *abort_armed;
	/* Preempt and Abort of SQEs not fetched yet (abort.c), owner thread: the next
	 * preempt_left SQEs after ring slot preempt_head were in the ring when it came; those of
	 * namespaces preempt_nsid[] end with Command Aborted due to Preempt and Abort. */
	uint32_t preempt_left;
	uint32_t preempt_head;
	uint32_t preempt_nsid[CTRLR_PREEMPT_NSIDS];
	uint32_t preempt_n;
	/* Writes of preempted hosts still running (their bdev I/O may yet land), and the fences
	 * whose Acquire waits until there are none (abort.c), owner thread. */
	uint32_t preempt_writes;
	struct ctrlr_preempt_fence *preempt_waiters;
	/* Per-command counters of this queue (CTRLR_SQ_STAT_ADD), on the controller's stat_sqs
	 * from ctrlr_sq_init to ctrlr_sq_fini, which adds them to ctrlr.cnt (common/counter.h). */
	struct ctrlr_counters cnt;
	struct counter_block stat_block;
	/* The queue's I/O statistics by namespace (iostat.c), kept by the controller per qid. */
	struct ctrlr_iostat_q *iostat;
};

/* ---- Requests ---- */
enum ctrlr_req_state {
	CTRLR_REQ_FREE = 0,
	CTRLR_REQ_EXEC,
	CTRLR_REQ_PARKED, /* waiting for an event with no data in use (AER) */
	CTRLR_REQ_HELD,	  /* completed, waiting for CQ room */
};

typedef void (*ctrlr_req_exec_fn)(struct ctrlr_req *req);
typedef void (*ctrlr_req_io_done_fn)(struct ctrlr_req *req, int status);

struct ctrlr_req {
	struct ctrlr_sq *sq;
	struct nvme_sqe sqe;
	enum ctrlr_req_state state;
	bool cq_open; /* counted in its CQ's inflight: no CQE written yet (queue.c) */
	uint8_t epoch; /* the SQ's fence epoch when the request started */
	uint8_t ns_epoch; /* the SQ's namespace epoch it counts in; CTRLR_NS_EPOCH_NONE: ended */
	uint32_t cdw0;
	uint32_t cdw1; /* CQE DW1 (Zone Append's LBA, high half) */
	uint64_t t_start_ns; /* the owner's round time when fetched (evloop_clock_ns) */
	uint16_t status;
	uint16_t error_loc; /* byte offset of the bad field in the SQE, 0xffff if none */
	uint64_t error_lba;
	struct ctrlr_ns *ns; /* its namespace: admin queue, a reference (admin_refs); I/O, none
			      * needed (the request's namespace epoch keeps it) */
	union ctrlr_ns_fmt fmt;	       /* ns's format when the command started (ctrlr_req_get_ns) */
	const struct ctrlr_lbaf *lbaf; /* its LBA format */
	/* The command set's bounce state for this request slot, kept between commands (metadata
	 * formats: nvm/md.c); freed by the modules' sq_fini hooks. */
	void *md;
	struct ctrlr_req *next;
	struct iovec *iov;
	int iovcnt;
	uint64_t data_len;
	struct bdev_io *bio;
	ctrlr_req_io_done_fn io_done;
	struct evloop_msg hop; /* a hop to another thread and back (reservations, fused locks) */
	/* Runs first in ctrlr_req_complete when set (a module's end of the command: a write leaves
	 * the namespace's range locks, nvm/fused.c; a zone write ends in zone order, zns/); the core
	 * clears it before the call, and runs it again if the call set another (a chain). It may
	 * change *status; it returns true to hold the completion back, and then calls
	 * ctrlr_req_complete again itself, later. */
	bool (*end_fn)(struct ctrlr_req *req, uint16_t *status);
	/* A completion a module holds back, the module's to use (zns/zone_sync.c: the writes of a
	 * zone end in zone order, and after the zone state they changed is recorded, or durable).
	 * Cleared when the request starts. */
	struct {
		bool active;  /* a reservation the module must be told the end of */
		bool durable; /* the end waits for the state to be durable (FUA, no write cache) */
		uint16_t status;
		uint32_t gen;
		uint64_t lba, nlb;
		struct ctrlr_req *next;
		bool (*prev_end)(struct ctrlr_req *req, uint16_t *status); /* the chain's next */
		void (*cont)(struct ctrlr_req *req, uint16_t status); /* after a wait */
	} hold;
	/* A fused pair (req.c takes both commands): the other command of the pair. */
	struct ctrlr_req *fused;
	/* Range locks (nvm/fused.c, nvm/nvm.h): the lock state, the range held or waited for, the command to
	 * resume, the table's list. */
	uint8_t caw_state;
	bool caw_is_pair;
	uint64_t caw_slba, caw_end;
	void (*caw_resume)(struct ctrlr_req *req);
	struct ctrlr_req *caw_next;
	uint32_t abort_tag; /* generation << 16 | CID while abortable (abort.c); owner thread */
	uint16_t abort_gen;
	bool preempt_drain; /* a write a Preempt and Abort waits for (sq->preempt_writes) */
	/* Per-command scratch for multi-step commands (DSM, Verify, Compare, Flush all, Format,
	 * vendor). */
	struct {
		uint64_t lba;
		uint64_t remaining;
		uint32_t index;
		uint32_t count;
		void *buf;
		uint32_t crc;
		struct bdev_range ranges[CTRLR_DSM_BATCH];
		struct iovec biov;
		void (*chunk_fn)(struct ctrlr_req *req, const void *data, size_t len);
		void (*range_done)(struct ctrlr_req *req, uint16_t status);
	} step;
};

/* A registered vendor command; unregistered ones are kept until destroy like namespaces. */
struct ctrlr_vendor_entry {
	struct ctrlr_vendor_cmd cmd;
	struct ctrlr_vendor_entry *dead_next;
};

/* Keep Alive Timer (keep_alive.c): KATO as granted (0: off), when the next Keep Alive is due
 * (evloop_now_us clock) and whether it expired (CSTS.CFS set, until the host resets). */
struct ctrlr_keep_alive {
	uint32_t kato_ms;
	uint64_t deadline_us;
	bool expired;
};

/* ---- Controller ---- */
enum ctrlr_state {
	CTRLR_ST_DISABLED = 0,
	CTRLR_ST_ENABLED,
	CTRLR_ST_RESETTING, /* CC.EN 1->0, FLR, or shutdown: deleting queues */
	CTRLR_ST_FAILED,    /* enable failed: CSTS.CFS */
};

struct ctrlr_aer_event {
	uint8_t type;
	uint8_t info;
	uint8_t lid;
};

struct ctrlr_features {
	uint32_t arbitration;
	uint32_t power_mgmt;
	uint16_t temp_over[9]; /* per sensor; [0] composite */
	uint16_t temp_under[9];
	uint32_t vwc;	     /* WCE bit */
	uint32_t num_queues; /* granted, 0-based NSQA | NCQA << 16 */
	bool num_queues_set;
	uint32_t irq_coalesce; /* THR | TIME << 8 */
	uint32_t write_atomic;
	uint32_t err_recovery_all; /* Error Recovery last set with NSID FFFFFFFFh: NSID 0h reads it */
	uint32_t async_event;
	uint32_t apst;
	uint8_t apst_table[NVME_APST_DATA_SIZE];
	uint64_t timestamp_ms;	   /* value set by the host */
	uint64_t timestamp_set_us; /* evloop_now_us() when set, 0 = never set */
	uint8_t *irq_cd;	   /* per vector: coalescing disabled (CD) */
	/* Host Behavior Support: ACRE, LBAFEE as the host set them (information only) and CDFE,
	 * the Copy descriptor formats it enabled (atomic: read by the owner threads, io_copy.c). */
	uint8_t hbs_acre, hbs_lbafee;
	uint16_t hbs_cdfe;
	/* Endurance Group Event Configuration (18h) of group 1: the warnings that make events. */
	uint8_t endgrp_event;
};


/* One command of a command set: its handler and its line in the Commands Supported and Effects
 * log, and for I/O commands what the core checks before the handler runs (req.c,
 * ctrlr_io_dispatch). Modules give them as 256-entry tables indexed by opcode. */
struct ctrlr_cmd {
	ctrlr_req_exec_fn exec;
	uint32_t effects; /* NVME_CMD_EFFECTS_* (CSUPP included) */
	/* Admin: the command exists only when this says so (NULL: always). */
	bool (*supported)(const struct ctrlr *ctrlr);
	/* I/O: the command set it belongs to: NVME_CSI_NVM commands run on every namespace (the
	 * other I/O command sets include them), the others only on namespaces of their set and
	 * only with CC.CSS 110b (Base 2.0 3.1.3.5). */
	uint8_t csi;
	/* I/O: what a reservation held by another host may refuse (CTRLR_ACCESS_*, 0: nothing). */
	uint8_t access;
	/* I/O: NSID FFFFFFFFh goes to the handler (no namespace looked up). */
	bool any_nsid;
	/* I/O: what its completions count as in the statistics (enum ctrlr_io_class of
	 * ctrlr_iostat.h; 0, CTRLR_IO_OTHER, unless the module says read, write or flush). */
	uint8_t stat;
};

/*
 * A module: a command set or a feature of the controller (controller/modules.c lists them).
 * Hooks run on the admin thread unless said otherwise, in table order (teardown in reverse);
 * NULL hooks are skipped. State: before init the core allocates ctrlr_size zeroed bytes at
 * ctrlr->mod[id] (id: the module's place in the table), before ns_attach ns_size bytes at
 * ns->mod[id], before shared_init shared_size bytes at shared->mod[id]; it frees them after
 * fini, ns_free and shared_fini. A module with size 0 may keep a pointer of its own in its slot
 * (it frees what it points to).
 */
struct ctrlr_module {
	const char *name;
	size_t ctrlr_size, ns_size, shared_size;
	/* Commands: opcode-indexed tables (NULL: none). */
	const struct ctrlr_cmd *admin_cmds;
	const struct ctrlr_cmd *io_cmds;

	/* The controller is created: 0, or -errno to fail ctrlr_create (the module undoes its own
	 * part, the modules before it are finished). fini: it is freed, its namespaces
	 * released. */
	int (*init)(struct ctrlr *ctrlr);
	void (*fini)(struct ctrlr *ctrlr);
	/* ctrlr_destroy starts (before the namespaces are released). */
	void (*destroy)(struct ctrlr *ctrlr);
	/* A Controller Level Reset starts (CC.EN 1->0, shutdown, FLR). */
	void (*reset)(struct ctrlr *ctrlr);
	/* The module has I/O of its own in flight that a reset or ctrlr_destroy must wait for;
	 * when it ends the module calls ctrlr_reset_continue. */
	bool (*busy)(const struct ctrlr *ctrlr);
	/* The reset finished (no queue left), before CSTS is written: settings back to their
	 * defaults, a committed firmware image activated. */
	void (*reset_done)(struct ctrlr *ctrlr);
	/* CC.EN 0->1 succeeded (CSTS.RDY set) / failed (CSTS.CFS set). */
	void (*enabled)(struct ctrlr *ctrlr);
	void (*enable_failed)(struct ctrlr *ctrlr);
	/* The transport's clock (ctrlr_tick): microseconds until the module wants the next tick,
	 * or 0 for no wish. */
	uint64_t (*tick)(struct ctrlr *ctrlr);
	/* A command completed with a Media and Data Integrity Errors status. Any thread. */
	void (*media_error)(struct ctrlr *ctrlr, uint16_t status);
	/* The controller joined or left an NVM subsystem (ctrlr_subsys_join / leave). */
	void (*subsys_joined)(struct ctrlr *ctrlr);
	void (*subsys_left)(struct ctrlr *ctrlr, struct ctrlr_subsys *cs);
	/* An admin command is about to run: the status it gets instead, or 0. */
	uint16_t (*admin_gate)(struct ctrlr_req *req);
	/* Commands that took a namespace before some moment may have ended: a namespace grace
	 * period passed, or the last admin reference to a namespace went. */
	void (*ns_quiet)(struct ctrlr *ctrlr);

	/* Namespaces. ns_attach: the namespace is being added (not visible yet): the module may
	 * take it (ns->csi, formats, zones); -errno fails ctrlr_ns_add. ns_free: it is freed. */
	int (*ns_attach)(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts);
	void (*ns_free)(struct ctrlr_ns *ns);
	/* The namespace's user data was erased (Format NVM, Sanitize): what the module knows of
	 * its blocks goes (media marks, zone states). Admin thread. */
	void (*ns_erased)(struct ctrlr_ns *ns);
	/* A shared namespace is created (-errno fails its creation: the module undoes its own
	 * part) / freed. */
	int (*shared_init)(struct ctrlr_ns_shared *s, const struct ctrlr_ns_shared_opts *opts);
	void (*shared_fini)(struct ctrlr_ns_shared *s);

	/* I/O: the fused pair (first, second) the core took from an SQ (req.c); the module runs
	 * both and completes both. Owner thread. At most one module has it. */
	void (*io_fused)(struct ctrlr_req *first, struct ctrlr_req *second);
	/* I/O: a command that changes blocks (effects LBCC) is about to run `exec`: true when it
	 * must wait (the module runs exec(req) later on the owner thread). Owner thread. At most
	 * one module has it. */
	bool (*io_write_begin)(struct ctrlr_req *req, ctrlr_req_exec_fn exec);
	/* I/O: a Write of `bytes` is about to go to the bdev: its directive checked (a status
	 * other than 0 fails it) and the bdev placement handle it goes to in *placement (Flexible
	 * Data Placement). Owner thread. At most one module has it. */
	uint16_t (*io_write_place)(struct ctrlr_req *req, uint64_t bytes, uint16_t *placement);
	/* An SQ is freed (its owner stopped it): the module's per-request state in its requests
	 * goes. */
	void (*sq_fini)(struct ctrlr_sq *sq);
};

/* An Abort of a command still in its SQ (not fetched yet): the ring slot the command sits in.
 * CTRLR_ACL + 1 of them per controller (the Abort Command Limit). abort.c. */
struct ctrlr_abort_rec {
	uint32_t busy; /* atomic: taken by an owner thread, freed by it or the admin thread */
	struct ctrlr_sq *sq;
	uint32_t slot;
	uint16_t cid;
	struct ctrlr_abort_rec *next; /* the SQ's armed list (owner thread) */
};

struct ctrlr {
	const struct ctrlr_transport_ops *ops;
	void *tctx;
	struct ctrlr_config cfg;
	char serial[21], model[41], fwrev[9], subnqn[224];
	enum ctrlr_state state;

	/* The modules (controller/modules.c) and their state (ctrlr_size bytes each). */
	const struct ctrlr_module *const *modules;
	uint32_t nr_modules;
	void *mod[CTRLR_MODULES_MAX];
	/* The commands of every module, by opcode (NULL: not supported), and the two I/O hooks. */
	const struct ctrlr_cmd *admin_cmd[256];
	const struct ctrlr_cmd *io_cmd[256];
	void (*io_fused)(struct ctrlr_req *first, struct ctrlr_req *second);
	bool (*io_write_begin)(struct ctrlr_req *req, ctrlr_req_exec_fn exec);
	uint16_t (*io_write_place)(struct ctrlr_req *req, uint64_t bytes, uint16_t *placement);
	/* A status every I/O command gets instead of running (0: none); atomic, sequentially
	 * consistent: a module that closes it (Sanitize) then waits for a namespace grace period,
	 * after which no command that read it open is still running. */
	uint32_t io_gate;
	/* Register file (little-endian host). */
	union nvme_cap cap;
	uint32_t vs;
	uint32_t intm; /* interrupt mask (INTMS/INTMC) */
	union nvme_cc cc;
	union nvme_csts csts;
	union nvme_aqa aqa;
	uint64_t asq, acq;
	uint32_t page_size; /* from CC.MPS at enable */

	/* Queues: index = qid; [0] the admin queue. */
	struct ctrlr_sq **sqs;
	struct ctrlr_cq **cqs;
	uint32_t num_queues; /* max_io_queues + 1 */
	/* The I/O queue pairs and interrupt vectors the controller has now (what Number of Queues
	 * grants, the vectors Create I/O CQ takes): the configuration's, unless a module lowered
	 * them (virt/: a primary controller's private and flexible resources, set at a reset).
	 * Admin thread. */
	uint16_t res_io_queues, res_vectors;
	uint32_t io_sqs, io_cqs;
	uint32_t queue_ops_pending; /* create/delete in the transport */

	/* Namespaces: index = nsid - 1. */
	struct ctrlr_ns *ns[CTRLR_MAX_NAMESPACES];
	uint32_t changed_ns[CTRLR_MAX_NAMESPACES];
	uint32_t num_changed_ns;
	bool changed_ns_overflow;

	/* Asynchronous events. */
	struct ctrlr_req *aer_reqs[CTRLR_AERL + 1];
	uint32_t num_aer_reqs;
	struct ctrlr_aer_event aer_queue[CTRLR_AER_QUEUE];
	uint32_t aer_count;
	uint32_t aer_masked;	   /* bit per event type: reported, log page not read yet */
	uint32_t aer_pending_bits; /* from owner threads: (type << 8 | info) bits, atomic */
	bool aer_msg_queued;	   /* atomic */
	struct ctrlr_abort_rec abort_recs[CTRLR_ACL + 1]; /* abort.c */

	/* Error log ring (written by any thread on failure). */
	struct nvme_error_log_entry error_log[CTRLR_ERROR_LOG_ENTRIES];
	uint64_t error_count;

	struct ctrlr_features feat;
	struct ctrlr_keep_alive ka; /* keep_alive.c, admin thread */
	struct ctrlr_counters cnt; /* CTRLR_STAT_ADD; and what deleted SQs counted (ctrlr_sq_fini) */
	struct counter_block *stat_sqs; /* live SQs' counters, which add to these (queue.c) */
	struct ctrlr_iostat_q **iostat; /* per qid, made with the queue's first SQ (iostat.c) */

	/* The Host Identifier (kept across resets: it is the host's identity for its registrations)
	 * and whether the subsystem has several controllers (CMIC bit 1, NMIC bit 0). Admin
	 * thread. */
	uint8_t hostid[16];
	bool hostid_ext; /* 128-bit (EXHID) */
	bool multi_ctrl;
	/* The NVM subsystem's member list (subsys.c), or NULL; set by ctrlr_subsys_join. */
	struct ctrlr_subsys *subsys;
	struct ctrlr *subsys_next;
	uint64_t created_us;

	/* Doorbell Buffer Config: both pages pinned; NULL when off (or dropped by an unmap). Queues
	 * copy their slots' pointers (ctrlr_*_dbbuf_attach) on the thread that owns them. */
	uint64_t dbbuf_shadow, dbbuf_eventidx;
	volatile uint32_t *dbbuf_shadow_ptr;
	volatile uint32_t *dbbuf_eventidx_ptr;
	void *dbbuf_shadow_pin, *dbbuf_eventidx_pin;
	void *dbbuf_old_pins[2]; /* replaced pages, released once every queue moved off them */
	uint32_t dbbuf_bytes;	 /* bytes pinned at each of the two pointers */
	bool dbbuf_live;	 /* queues going live now take shadow slots (admin thread) */
	struct ctrlr_req *dbbuf_req, *dbbuf_next; /* the Doorbell Buffer Config(s) in progress */

	/* Guest memory going away (ctrlr_mem_unmap): one at a time. */
	struct {
		bool active;
		bool dbbuf; /* the shadow doorbell pages are in the range */
		bool master_off; /* all of it: bus mastering was disabled (ctrlr_dma_stop) */
		uint64_t iova, len;
		void (*done)(void *arg);
		void *arg;
	} unmap;
	bool remap_again; /* a map arrived while the remap visit ran */

	/* One visit per kind at a time, preallocated: the flows that need them cannot fail. */
	struct ctrlr_visit visits[CTRLR_VISIT_SLOTS];
	struct ctrlr_visit admin_fence;

	/* Vendor commands: [0] admin, [1] I/O, indexed by opcode. */
	struct ctrlr_vendor_entry *vendor[2][256];
	struct ctrlr_vendor_entry *dead_vendor; /* unregistered, freed at destroy (as dead_ns) */
	struct ctrlr_ns *dead_ns;

	/* Reset / shutdown / FLR flow. */
	bool reset_shutdown; /* set SHST complete when the flow ends */
	bool reset_flr;
	void (*flr_done)(void *arg);
	void *flr_arg;
	bool destroying;
	uint32_t puts_pending; /* atomic: namespace bdevs being put by the transport */
	/* Namespace grace periods (ns.c): tickets asked, the one the running visit covers,
	 * the last passed. Admin thread. */
	uint32_t ns_grace_asked, ns_grace_cur, ns_grace_done;
	void (*destroy_done)(void *arg);
	void *destroy_arg;
	struct evloop_msg destroy_msg;
	/* Continuations left by a flow above for the floors below it to call: the reset waiting for
	 * the visits of the queues to end (regs.c, queue_mem.c), ctrlr_destroy waiting for the last
	 * namespace bdev to be put (ctrlr.c, ns.c). NULL: nobody waits. Admin thread. */
	void (*visits_waiter)(struct ctrlr *ctrlr);
	void (*puts_done)(struct ctrlr *ctrlr);
};
/* ---- prp.c / sgl.c: data pointers to iovecs (pure functions) ---- */

/* Maps a PRP pair for `len` bytes at page size `page_size` into iov[0..max_iov). Returns an NVMe
 * status: SUCCESS with *iovcnt set, PRP Offset Invalid, Data Transfer Error (unmapped page or
 * list), Invalid Field (too many pieces). */
uint16_t ctrlr_prp_map(ctrlr_map_fn map, void *mctx, uint64_t prp1, uint64_t prp2, uint64_t len,
		       uint32_t page_size, unsigned int dir, struct iovec *iov, int max_iov,
		       int *iovcnt);

/* Maps an SGL (first descriptor from the SQE) for `len` bytes. Data blocks and bit buckets (reads
 * only: sink memory), segments and last segments. Returns an NVMe status. */
uint16_t ctrlr_sgl_map(ctrlr_map_fn map, void *mctx, const struct nvme_sgl_desc *sgl, uint64_t len,
		       unsigned int dir, struct iovec *iov, int max_iov, int *iovcnt);
/* ---- queue.c ---- */
int ctrlr_cq_init(struct ctrlr *ctrlr, struct ctrlr_cq *cq, uint16_t qid, uint64_t addr,
		  uint32_t size, uint16_t vector, bool ien);
int ctrlr_sq_init(struct ctrlr *ctrlr, struct ctrlr_sq *sq, uint16_t qid, struct ctrlr_cq *cq,
		  uint64_t addr, uint32_t size, uint8_t qprio);
void ctrlr_sq_fini(struct ctrlr_sq *sq);
/* The controller's counters with every live SQ's added (ctrlr.cnt alone lacks them). Any
 * thread. */
void ctrlr_counters_get(const struct ctrlr *ctrlr, struct ctrlr_counters *out);
/* Reads the shadow SQ tail (Doorbell Buffer Config), if any, into sq->tail: with shadow doorbells
 * the current tail lives in the shadow page. Owner thread. */
static inline void ctrlr_sq_refresh_tail(struct ctrlr_sq *sq)
{
	volatile uint32_t *shadow = CTRLR_LOAD(sq->shadow_db);
	uint32_t tail;

	if (!shadow)
		return;
	tail = __atomic_load_n(shadow, __ATOMIC_ACQUIRE);
	if (tail < sq->size)
		sq->tail = tail;
}
/* Whether queue `qid`'s two shadow slots lie inside the pages the host gave (the admin queue
 * always rings BAR0). */
static inline bool ctrlr_dbbuf_covers(const struct ctrlr *ctrlr, uint16_t qid)
{
	return qid != 0 && (nvme_db_index(qid, true) + 1) * 4 <= ctrlr->dbbuf_bytes;
}
/* The host moved the CQ's head to `value` (checked by the doorbell, queue.c). Owner thread. */
void ctrlr_cq_head_moved(struct ctrlr_cq *cq, uint32_t value);
/* Posts (or holds) the CQE of a completed request. Owner thread. */
void ctrlr_cq_post(struct ctrlr_cq *cq, struct ctrlr_req *req);

/* Ends a request's count in its CQ's inflight (adaptive moderation): when its CQE is written, or
 * when it is freed without one. */
static inline void ctrlr_cq_req_close(struct ctrlr_cq *cq, struct ctrlr_req *req)
{
	if (req->cq_open) {
		req->cq_open = false;
		cq->inflight--;
	}
}

/* Frees the completions held in cq (waiting for room) of requests of sq: the host expects none
 * (the SQ is being deleted, the controller reset). Owner thread. */
void ctrlr_cq_drop_held(struct ctrlr_cq *cq, struct ctrlr_sq *sq);
bool ctrlr_cq_is_full(struct ctrlr_cq *cq);
void ctrlr_cq_irq_raise_now(struct ctrlr_cq *cq);
/* Re-evaluates masked interrupts after INTMC cleared mask bits. Admin thread. */
void ctrlr_cq_irq_unmasked(struct ctrlr_cq *cq);
/* Shadow doorbell slots for this queue from the controller's pinned pages (or none): on the admin
 * thread before the queue goes live, on its owner thread after. */
void ctrlr_sq_dbbuf_attach(struct ctrlr_sq *sq);
void ctrlr_cq_dbbuf_attach(struct ctrlr_cq *cq);
/* Posts completions held while the CQ was full or detached. Owner thread. */
void ctrlr_cq_drain_held(struct ctrlr_cq *cq);
/* Releases the CQ's ring pin (it is being freed). */
void ctrlr_cq_fini(struct ctrlr_cq *cq);
/* ---- queue_mem.c: pinned rings, unmaps, fences, visits ---- */
/* Pins the queue's ring (creation, re-attach). 0 or -EFAULT. Admin thread before the queue goes
 * live, owner thread after. */
int ctrlr_sq_ring_attach(struct ctrlr_sq *sq);
int ctrlr_cq_ring_attach(struct ctrlr_cq *cq);
/* Unpins the ring (deletion, reset). Owner thread. */
void ctrlr_sq_ring_detach(struct ctrlr_sq *sq);
void ctrlr_cq_ring_detach(struct ctrlr_cq *cq);
/* Drops the controller's pinned shadow doorbell pages (queues must have dropped their slots). */
void ctrlr_dbbuf_release(struct ctrlr *ctrlr);
/* A request stopped using its data (completed, or parked waiting for an event): ends its part in
 * a fence. Owner thread. */
void ctrlr_req_data_done(struct ctrlr_req *req);
/* Inside a visit, on the owner thread: the visit ends only once every request of sq that
 * started before now is done with its data. */
void ctrlr_sq_fence(struct ctrlr_sq *sq, struct ctrlr_visit *v);
/* Starts the visit of kind `slot` (not running already) of every I/O queue on its owner thread
 * (ops->visit_queues): cq_fn / sq_fn run there for each queue (either may be NULL; they may
 * ctrlr_visit_hold the visit to finish later), then done(ctrlr) on the admin thread. Cannot
 * fail. Admin thread. */
void ctrlr_visit_start(struct ctrlr *ctrlr, enum ctrlr_visit_slot slot,
		       void (*cq_fn)(struct ctrlr_cq *, struct ctrlr_visit *),
		       void (*sq_fn)(struct ctrlr_sq *, struct ctrlr_visit *),
		       void (*done)(struct ctrlr *));
bool ctrlr_visit_running(const struct ctrlr *ctrlr, enum ctrlr_visit_slot slot);
/* The request pool (queue_mem.c): a request of sq for a fetched SQE (NULL: all in flight). */
#define CTRLR_NS_EPOCH_NONE 0xff
struct ctrlr_req *ctrlr_req_get(struct ctrlr_sq *sq);
/* The request no longer uses namespaces: leaves its SQ's namespace epoch (a grace period may be
 * waiting for it). Idempotent. Owner thread. */
void ctrlr_req_ns_end(struct ctrlr_req *req);
/* Returns a request to its pool; signals ctrlr_sq_stop's done when the SQ drained. */
void ctrlr_req_free(struct ctrlr_req *req);

/* ---- req.c ---- */
/* The single completion funnel: fills the CQE, the error log, the counters, the trace, then posts
 * (or drops it if the queue or controller is going away) and frees the request. */
void ctrlr_req_complete(struct ctrlr_req *req, uint16_t status);
/* Runs fn(req) later on the owner thread of req's queue (the admin thread for the admin queue),
 * through req->hop: the request must not be posted again until fn started. Any thread. */
void ctrlr_req_post(struct ctrlr_req *req, void (*fn)(void *arg));

/* ---- iostat.c: per queue and namespace statistics (ctrlr_iostat.h) ---- */
/* The blocks of queue qid, made with its first SQ (slot 0 and the namespaces attached); NULL
 * without memory. Admin thread. */
struct ctrlr_iostat_q *ctrlr_iostat_queue(struct ctrlr *ctrlr, uint16_t qid);
/* A namespace was attached: every queue gets its block. Admin thread. */
void ctrlr_iostat_ns_added(struct ctrlr *ctrlr, uint32_t nsid);
void ctrlr_iostat_fini(struct ctrlr *ctrlr);
/* Counts a completion (class, bytes, error, latency). The SQ's owner thread. */
void ctrlr_iostat_complete(struct ctrlr_req *req, uint16_t status);
/* Same, recording the failing field's offset in the SQE for the error log. */
void ctrlr_req_complete_err(struct ctrlr_req *req, uint16_t status, uint16_t loc);
/* Maps the command's data pointer (PRP or SGL per PSDT) for `len` bytes into req->iov. */
uint16_t ctrlr_req_map_data(struct ctrlr_req *req, uint64_t len, unsigned int dir);
/* Maps the command's metadata pointer (MPTR per PSDT) for `len` bytes into iov. NVMe status. */
uint16_t ctrlr_req_map_md(struct ctrlr_req *req, uint64_t len, unsigned int dir,
			  struct iovec *iov, int max_iov, int *iovcnt);
/* Copies between a local buffer and the command's data (maps first). NVMe status. */
uint16_t ctrlr_req_copy_to_host(struct ctrlr_req *req, const void *buf, uint64_t len);
uint16_t ctrlr_req_copy_from_host(struct ctrlr_req *req, void *buf, uint64_t len);
/* Looks up the namespace for the SQE's NSID into req->ns (a reference on the admin queue). */
uint16_t ctrlr_req_get_ns(struct ctrlr_req *req);
/* Submits req->bio (filled by the caller except cb) to the namespace's bdev on this thread's
 * channel; `done` runs on completion with the bdev status. Returns NVMe status (failure: nothing
 * submitted). */
uint16_t ctrlr_req_submit_bio(struct ctrlr_req *req, ctrlr_req_io_done_fn done);
/* bdev status (-errno) -> NVMe status. */
uint16_t ctrlr_bdev_status(int status, bool is_write);
uint64_t ctrlr_mdts_bytes(const struct ctrlr *ctrlr);
void ctrlr_error_log_add(struct ctrlr *ctrlr, const struct ctrlr_req *req, uint16_t status);
/* An entry not tied to a command (sqid 0, cid FFFFh for a controller event). Any thread. */
void ctrlr_error_log_put(struct ctrlr *ctrlr, uint16_t sqid, uint16_t cid, uint16_t status,
			 uint16_t loc, uint64_t lba, uint32_t nsid);
/* The command's namespace access (CTRLR_ACCESS_*) against what its host is refused:
 * SUCCESS or Reservation Conflict. Owner thread. */
static inline uint16_t ctrlr_req_check_access(struct ctrlr_req *req, uint32_t access)
{
	if (!(CTRLR_LOAD(req->ns->io_block) & access))
		return NVME_SC_SUCCESS;
	req->error_loc = 0; /* the opcode */
	return NVME_SC_RESV_CONFLICT;
}
/* The status every I/O command gets now instead of running (ctrlr.io_gate), or 0. */
static inline uint16_t ctrlr_io_gate(const struct ctrlr *ctrlr)
{
	return (uint16_t)__atomic_load_n(&ctrlr->io_gate, __ATOMIC_SEQ_CST);
}
/* Dispatch of a fetched command (parse, then the module's handler): admin, I/O. */
void ctrlr_admin_dispatch(struct ctrlr_req *req);
void ctrlr_io_dispatch(struct ctrlr_req *req);
/* Effects-log entries (0: not supported): admin; I/O for command set csi. */
uint32_t ctrlr_admin_effects(const struct ctrlr *ctrlr, uint8_t opcode);
uint32_t ctrlr_io_effects(const struct ctrlr *ctrlr, uint8_t csi, uint8_t opcode);
/* Copies `len` bytes at byte `off` of the command's mapped data (short data reads as is), or to
 * byte `off` (what does not fit is dropped). */
void ctrlr_req_iov_read(const struct ctrlr_req *req, uint64_t off, void *dst, size_t len);
void ctrlr_req_iov_write(struct ctrlr_req *req, uint64_t off, const void *src, size_t len);


/* ---- admin_cmds.c: the core's own commands ---- */
extern const struct ctrlr_module ctrlr_core_module;
void ctrlr_admin_create_cq(struct ctrlr_req *req);
void ctrlr_admin_create_sq(struct ctrlr_req *req);
void ctrlr_admin_delete_cq(struct ctrlr_req *req);
void ctrlr_admin_delete_sq(struct ctrlr_req *req);
void ctrlr_admin_dbbuf(struct ctrlr_req *req);

/* ---- abort.c: Abort, and Preempt and Abort ---- */
void ctrlr_admin_abort(struct ctrlr_req *req);
/* The SQE of ring slot `slot` was just fetched into req and an Abort is armed on its SQ or a
 * Preempt and Abort fence is up (called only while sq->abort_armed or sq->preempt_left is set):
 * true if the command was aborted (completed with Command Abort Requested or Command Aborted
 * due to Preempt and Abort, not executed). Owner thread. */
bool ctrlr_abort_fetched(struct ctrlr_req *req, uint32_t slot);
/* The SQ is being freed: its armed Aborts are dropped (their commands were never fetched).
 * Admin thread, once the owner thread stopped the SQ. */
void ctrlr_abort_sq_gone(struct ctrlr_sq *sq);
/* Tag bits (ctrlr_req.abort_tag): 31 an Abort's mark, 30 a Preempt and Abort's mark, 29:16 the
 * generation, 15:0 the CID. A command's tag is set when it starts (req.c, ctrlr_abort_arm) and
 * cleared when it completes (ctrlr_abort_seal); an Abort or a Preempt and Abort marks it on the
 * same thread (the SQ's owner), so whichever comes first decides how the command ends. */
#define CTRLR_ABORT_MARK 0x80000000u
#define CTRLR_ABORT_MARK_PREEMPT 0x40000000u
#define CTRLR_ABORT_MARKS (CTRLR_ABORT_MARK | CTRLR_ABORT_MARK_PREEMPT)
/* A command starts executing: Abort may find it by its CID from now on. Its owner thread. */
void ctrlr_abort_arm(struct ctrlr_req *req);
/* A command completes: returns the status it ends with instead of its own when an Abort
 * (Command Abort Requested) or a Preempt and Abort (Command Aborted due to Preempt and Abort)
 * marked it, else 0. Its owner thread. */
uint16_t ctrlr_abort_seal(struct ctrlr_req *req);
/* A write a Preempt and Abort waits for ended (called by ctrlr_abort_seal). Owner thread. */
void ctrlr_abort_preempt_drained(struct ctrlr_req *req);
/* Reservation Acquire, Preempt and Abort: on each of ctrlr's live I/O SQs, its owner thread
 * marks every command on namespace nsid that started and has not completed (each ends with
 * Command Aborted due to Preempt and Abort, after its bdev I/O, if any, returned) and puts up a
 * fence over the SQEs between its head and the tail it has seen (those end the same way when
 * fetched); then, once none of the marked commands that write (LBCC effects) is still running,
 * so that no write of the preempted host can land after the Acquire completes, up(arg) runs on
 * the admin thread (up NULL: nobody waits). Returns how many
 * fences were posted (up runs that many times, never from inside this call). Admin thread. */
uint32_t ctrlr_abort_preempt_queued(struct ctrlr *ctrlr, uint32_t nsid, void (*up)(void *arg),
				    void *arg);

/* ---- keep_alive.c (admin thread) ---- */
/* Identify Controller KAS (granularity of KATO, in 100 ms units). */
uint16_t ctrlr_kas(void);
/* Set Features KATO: rounded up to KAS, the timer restarted (0: off). NVMe status. */
uint16_t ctrlr_keep_alive_set(struct ctrlr *ctrlr, uint32_t kato_ms);
uint32_t ctrlr_keep_alive_kato(const struct ctrlr *ctrlr);
void ctrlr_admin_keep_alive(struct ctrlr_req *req);
/* Controller reset: KATO back to 0. */
void ctrlr_keep_alive_reset(struct ctrlr *ctrlr);

/* ---- regs.c ---- */
void ctrlr_regs_init(struct ctrlr *ctrlr);
void ctrlr_regs_write_csts(struct ctrlr *ctrlr);
/* CC.EN 0 -> 1 (or re-enable after a reset that the guest overtook). */
void ctrlr_enable(struct ctrlr *ctrlr);

/* ---- ctrlr.c: the controller, its modules; regs.c: the reset flow ---- */
/* Creates a controller with these modules (controller/modules.c gives its table: ctrlr_create).
 * As ctrlr_create otherwise. */
int ctrlr_core_create(const struct ctrlr_config *config, const struct ctrlr_transport_ops *ops,
		      void *tctx, const struct ctrlr_module *const *modules, uint32_t nr_modules,
		      struct ctrlr **out);
/* Starts (or continues) the teardown of every queue; ends in the reset's finish. */
void ctrlr_reset_start(struct ctrlr *ctrlr, bool shutdown);
void ctrlr_reset_continue(struct ctrlr *ctrlr);
/* A visit of the queues, or an unmap, is running / a module has I/O of its own in flight: a
 * reset or ctrlr_destroy waits. */
bool ctrlr_visits_running(const struct ctrlr *ctrlr);
bool ctrlr_modules_busy(const struct ctrlr *ctrlr);
/* Every module's hook `hook` (a member of struct ctrlr_module) with these arguments, in table
 * order. */
#define CTRLR_MODULES_CALL(ctrlr, hook, ...)                                                        \
	do {                                                                                       \
		for (uint32_t mod_i_ = 0; mod_i_ < (ctrlr)->nr_modules; mod_i_++)                   \
			if ((ctrlr)->modules[mod_i_] && (ctrlr)->modules[mod_i_]->hook)             \
				(ctrlr)->modules[mod_i_]->hook(__VA_ARGS__);                        \
	} while (0)

/* ---- ns.c: namespaces ---- */
/* A namespace for the admin thread: takes a reference (admin_refs) that holds its removal
 * back until ctrlr_ns_put. NULL if not attached. Admin thread only. */
struct ctrlr_ns *ctrlr_ns_get(struct ctrlr *ctrlr, uint32_t nsid);
void ctrlr_ns_put(struct ctrlr_ns *ns);
/* A namespace for an I/O queue's command: a plain load, valid until the request completes (its
 * namespace epoch holds removal's grace period back), nothing to drop. NULL if not attached.
 * Any thread the request runs on. */
static inline struct ctrlr_ns *ctrlr_req_ns_lookup(const struct ctrlr_req *req, uint32_t nsid)
{
	if (nsid - 1u >= CTRLR_MAX_NAMESPACES)
		return NULL;
	return CTRLR_LOAD(req->sq->ctrlr->ns[nsid - 1]);
}
/* Asks for a namespace grace period: once ticket t passed (ctrlr_ns_grace_passed), no command
 * of an I/O queue still uses a namespace pointer it loaded before the call. Passes at once when
 * the controller has no I/O queue; else a visit of the queues (CTRLR_VISIT_NS_GRACE). Admin
 * thread. */
uint32_t ctrlr_ns_grace_ask(struct ctrlr *ctrlr);
bool ctrlr_ns_grace_passed(const struct ctrlr *ctrlr, uint32_t t);
/* True when no command may use a namespace it took before the last grace period asked (every
 * ticket passed, no admin reference): the sanitize drain. Admin thread. */
bool ctrlr_ns_quiet(const struct ctrlr *ctrlr);
/* Detaches a namespace like ctrlr_ns_remove; released(arg) runs on the admin thread once its
 * bdev is released (closed by the controller), maybe from inside this call. 0 or -ENOENT. */
int ctrlr_ns_detach(struct ctrlr *ctrlr, uint32_t nsid, void (*released)(void *arg), void *arg);
/* The namespace list changed for this nsid (attached, detached, attributes): Changed Namespace
 * List and Namespace Attribute Changed, once the controller is enabled. */
void ctrlr_ns_changed(struct ctrlr *ctrlr, uint32_t nsid);
/* Format NVM gave ns a new format: the other controllers attached to its shared namespace take
 * it and report Namespace Attribute Changed. */
void ctrlr_ns_format_changed(struct ctrlr_ns *ns);
/* The modules forget what they knew of the namespace's blocks (ns_erased hooks): Format NVM
 * and Sanitize erased its user data. */
void ctrlr_ns_erased(struct ctrlr_ns *ns);
/* Frees a removed or destroyed namespace (the modules' ns_free first). */
void ctrlr_ns_free(struct ctrlr_ns *ns);
/* Releases the namespace's bdev: the transport's channels first, asynchronously (ctrlr.c;
 * counted in puts_pending until done). */
void ctrlr_ns_release(struct ctrlr_ns *ns);
/* A controller attaching a namespace others have takes their current format (the modules'
 * ns_attach, after the formats were filled). */
void ctrlr_ns_format_join(struct ctrlr_ns *ns);
/* Creates a shared namespace with these modules (ctrlr_ns_shared_create gives the table). */
int ctrlr_core_ns_shared_create(const struct ctrlr_module *const *modules, uint32_t nr_modules,
				const struct ctrlr_ns_shared_opts *opts,
				struct ctrlr_ns_shared **out);
/* A controller namespace attaches to / detaches from its shared object (admin thread; attach
 * claims the bdev on first use, detach releases the claim with the last user). unlink takes it
 * out of the list of namespaces attached (removal), keeping the claim until detach; idempotent. */
int ctrlr_ns_shared_attach(struct ctrlr_ns_shared *s, struct ctrlr_ns *ns, const char *owner);
void ctrlr_ns_shared_detach(struct ctrlr_ns *ns);
void ctrlr_ns_shared_unlink(struct ctrlr_ns *ns);

/* The namespace's current LBA format (any thread; a command uses its snapshot req->lbaf). */
static inline const struct ctrlr_lbaf *ctrlr_ns_lbaf(const struct ctrlr_ns *ns)
{
	union ctrlr_ns_fmt f = {.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE)};

	return &ns->lbafs[f.f.lbaf];
}
/* Logical blocks of the current format that fit in bdev_blocks bdev blocks. */
static inline uint64_t ctrlr_ns_blocks_for(const struct ctrlr_ns *ns, uint64_t bdev_blocks)
{
	return bdev_blocks / ctrlr_ns_lbaf(ns)->bpl;
}
/* The namespace takes format word f: block size, capacity, then the word I/O loads. */
void ctrlr_ns_take_format(struct ctrlr_ns *ns, union ctrlr_ns_fmt f);
/* Bdev blocks of n logical blocks of the command's format. */
static inline uint64_t ctrlr_req_bdev_blocks(const struct ctrlr_req *req, uint64_t n)
{
	return n * req->lbaf->bpl;
}
/* True when the command's namespace format has metadata (the bounce path must be used). */
static inline bool ctrlr_io_has_md(const struct ctrlr_req *req)
{
	return req->lbaf->ms != 0;
}

/* A module's state in a controller, a namespace, a shared namespace (its id: its place in the
 * table). */
static inline void *ctrlr_mod(const struct ctrlr *ctrlr, unsigned int id)
{
	return ctrlr->mod[id];
}
static inline void *ctrlr_ns_mod(const struct ctrlr_ns *ns, unsigned int id)
{
	return ns->mod[id];
}


/* ---- subsys.c ---- */
/* The first member of a subsystem (then ctrlr.subsys_next), for operations with subsystem scope. */
struct ctrlr *ctrlr_subsys_members(const struct ctrlr_subsys *cs);
/* Identify CNS 12h (nsid != 0: controllers attached to it) and 13h (nsid 0: all controllers of
 * the subsystem), identifiers >= first. Fills a Controller List. */
void ctrlr_subsys_ctrl_list(struct ctrlr *ctrlr, uint32_t nsid, uint16_t first, uint16_t *list);

/* ---- aer.c ---- */
void ctrlr_aer_request(struct ctrlr_req *req);
void ctrlr_aer_abort(struct ctrlr_req *req);
/* Queues an event (admin thread) and completes a waiting AER if allowed. */
void ctrlr_aer_report(struct ctrlr *ctrlr, uint8_t type, uint8_t info, uint8_t lid);
/* From an owner thread: posts to the admin thread. Only error events (type ERROR). */
void ctrlr_aer_report_async(struct ctrlr *ctrlr, uint8_t info);
/* The host read log page `lid` with RAE 0: unmask its event type. */
void ctrlr_aer_log_read(struct ctrlr *ctrlr, uint8_t lid);
/* Forgets the queued (not yet posted) events of this type and information: what they tell is
 * already in a log the host just read (a new one is reported if there is more to read). */
void ctrlr_aer_drop(struct ctrlr *ctrlr, uint8_t type, uint8_t info);
/* Drops outstanding AER commands and queued events (reset). */
void ctrlr_aer_reset(struct ctrlr *ctrlr);

/* The vendor-specific command table (ctrlr.h; req.c): frees the entries (destroy). */
void ctrlr_vendor_free_all(struct ctrlr *ctrlr);

/* Little helpers. */
static inline uint64_t ctrlr_sqe_slba(const struct nvme_sqe *sqe)
{
	return (uint64_t)sqe->cdw10 | ((uint64_t)sqe->cdw11 << 32);
}

void ctrlr_copy_padded(char *dst, const char *src, size_t len);

#endif
