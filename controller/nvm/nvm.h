/* controller/nvm/nvm.h - the NVM Command Set (NVM Command Set 1.x) as a module of the controller:
 * its I/O commands (io_cmd.c, copy.c, md.c with pi.c, fused.c, resv.c), its LBA formats
 * (format.c), the media marks of Write Uncorrectable (uncor.c) and Get LBA Status (lba_status.c).
 * What the modules above it (zns/, device/, pool/, admin/) may use. It uses the core
 * (core/core.h) and nothing above it: a zoned namespace's rules reach the NVM commands through
 * the zoned ops that zns/ gives each of its namespaces. Not for use outside controller/. */
#ifndef NVME_EMU_CONTROLLER_NVM_NVM_H
#define NVME_EMU_CONTROLLER_NVM_NVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/syncer.h"
#include "controller/core/core.h"
#include "controller/module_ids.h"
#include "controller/nvm/resv_state.h"
#include "controller/nvm/uncor.h"

extern const struct ctrlr_module ctrlr_nvm_module;
extern const struct ctrlr_cmd ctrlr_nvm_io_cmds[256];

/* Copy limits (Identify Namespace MSRC, MSSRL, MCL) and the bounce buffers in use at once per
 * controller (past it Copy completes with Command Interrupted, which the host retries). */
#define CTRLR_COPY_MAX_RANGES 128u
#define CTRLR_COPY_MSSRL 65535u
#define CTRLR_COPY_MCL (1u << 20)
#define CTRLR_COPY_MAX_ACTIVE 64u

/* What a zoned namespace's command set adds to the NVM commands' paths (zns/ gives them to its
 * namespaces: ctrlr_nvm_ns.zoned). Owner thread. */
struct ctrlr_nvm_zoned_ops {
	/* A write of [slba, +nlb) of req's namespace is about to be sent: the zone's state and
	 * write pointer (the range is reserved until the command completes, whatever its status:
	 * a failed write gives it back). NVMe status. */
	uint16_t (*write)(struct ctrlr_req *req, uint64_t slba, uint64_t nlb);
	/* Flush of req's namespace: true when the zones take it over (the data and the zone state
	 * made durable, then cont(req, status) on the owner thread); false: a plain bdev flush. */
	bool (*flush)(struct ctrlr_req *req, void (*cont)(struct ctrlr_req *req, uint16_t st));
	/* A read of [slba, +nlb) is about to be sent. NVMe status. */
	uint16_t (*read)(struct ctrlr_req *req, uint64_t slba, uint64_t nlb);
	/* A read of [slba, +nlb) of ns landed in iov (logical blocks of ns's block size): blocks
	 * past a write pointer read as zeroes. NVMe status. */
	uint16_t (*read_done)(struct ctrlr_ns *ns, uint64_t slba, uint64_t nlb,
			      const struct iovec *iov, int iovcnt);
};

/* The module's state: per controller, per controller namespace, per shared namespace. */
#define CTRLR_RESV_LOG_MAX 32 /* Reservation Notification log pages queued per controller */
struct ctrlr_nvm_ctrlr {
	/* The Reservation Notification log queue (resv.c). Admin thread. */
	struct {
		uint8_t type;
		uint32_t nsid;
		uint64_t count;
	} resv_log[CTRLR_RESV_LOG_MAX];
	uint32_t resv_log_head, resv_log_n;
	uint64_t resv_log_count;
	uint32_t copies_active; /* atomic: Copy commands holding a bounce buffer (copy.c) */
};
struct ctrlr_nvm_shared {
	struct ctrlr_resv resv;	     /* reservations (resv.c) */
	char *ptpl_file;	     /* NULL: no Persist Through Power Loss */
	/* A change being written to the PTPL file (resv.c, admin thread): the state before it,
	 * its notifications, the job; the namespace's reservation commands wait meanwhile. */
	bool resv_saving;
	struct ctrlr_resv resv_before;
	struct ctrlr_resv_events resv_ev;
	char *resv_text;
	struct iovec resv_iov;
	struct syncer_job resv_job;
	void (*resv_saved)(struct ctrlr_req *req, int rc);
	struct ctrlr_req *resv_wait_head, *resv_wait_tail;
	/* Reservations in a store shared with daemons on other hosts (resv_remote.c; NULL: this
	 * daemon's own). Admin thread. While an operation runs through it, resv_saving is set and
	 * the namespace's reservation commands wait as for the PTPL file. */
	const struct ctrlr_resv_store_ops *store;
	void *store_ctx;
	struct ctrlr_ns_shared *store_ns; /* the namespace this state belongs to */
	bool store_watched;	/* the store tells of every change (its watch is up) */
	uint64_t store_version; /* of the record resv came from */
	uint64_t cmd_version;	/* of the record the running command read */
	uint64_t store_seq;	/* its last change applied here */
	bool store_stale;	/* no current record (not read yet, watch lost): writes refused */
	bool store_refreshing;	/* a read of the record to apply others' changes is under way */
	bool store_refresh;	/* ... and another must follow it */
	struct ctrlr_resv_record *store_rec; /* the record a command is changing */
	struct ctrlr_resv_record *refresh_rec; /* the record a refresh applies */
	struct ctrlr_req *store_req;	     /* the command running through the store, or NULL */
	uint64_t *store_tokens;		     /* changes to acknowledge once applied */
	uint32_t store_tokens_upto;	     /* store_tokens[0, this) are in the running refresh */
	uint32_t store_ntokens, store_tokens_cap;
	struct ctrlr_caw_locks *caw; /* fused Compare and Write range locks (fused.c) */
	struct ctrlr_uncor uncor;    /* unreadable blocks (uncor.c), whoever marked them */
};
struct ctrlr_nvm_ns {
	struct ctrlr_nvm_shared *sh; /* the shared namespace's */
	struct ctrlr_uncor *uncor;   /* &sh->uncor: one load on the I/O path */
	struct ctrlr_caw_locks *caw; /* sh->caw */
	uint32_t resv_mask;	     /* Reservation Notification Mask (Feature 82h) */
	const struct ctrlr_nvm_zoned_ops *zoned; /* a zoned namespace's rules, or NULL */
};

static inline struct ctrlr_nvm_ctrlr *ctrlr_nvm(const struct ctrlr *ctrlr)
{
	return ctrlr_mod(ctrlr, CTRLR_MOD_NVM);
}
static inline struct ctrlr_nvm_ns *ctrlr_nvm_ns(const struct ctrlr_ns *ns)
{
	return ctrlr_ns_mod(ns, CTRLR_MOD_NVM);
}
static inline struct ctrlr_nvm_shared *ctrlr_nvm_shared(const struct ctrlr_ns_shared *s)
{
	return s->mod[CTRLR_MOD_NVM];
}

/* The zoned rules of req's namespace, if any (no call on a namespace that is not zoned). */
static inline uint16_t ctrlr_nvm_zoned_write(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	const struct ctrlr_nvm_zoned_ops *z = ctrlr_nvm_ns(req->ns)->zoned;

	return z ? z->write(req, slba, nlb) : NVME_SC_SUCCESS;
}
static inline bool ctrlr_nvm_zoned_flush(struct ctrlr_req *req,
					 void (*cont)(struct ctrlr_req *req, uint16_t st))
{
	const struct ctrlr_nvm_zoned_ops *z = ctrlr_nvm_ns(req->ns)->zoned;

	return z && z->flush(req, cont);
}
static inline uint16_t ctrlr_nvm_zoned_read(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	const struct ctrlr_nvm_zoned_ops *z = ctrlr_nvm_ns(req->ns)->zoned;

	return z ? z->read(req, slba, nlb) : NVME_SC_SUCCESS;
}
static inline uint16_t ctrlr_nvm_zoned_read_done(struct ctrlr_ns *ns, uint64_t slba, uint64_t nlb,
						 const struct iovec *iov, int iovcnt)
{
	const struct ctrlr_nvm_zoned_ops *z = ctrlr_nvm_ns(ns)->zoned;

	return z ? z->read_done(ns, slba, nlb, iov, iovcnt) : NVME_SC_SUCCESS;
}

/* ---- io_cmd.c ---- */
/* LBA range check against req->ns; records the LBA for the error log. Any thread the request
 * runs on. */
static inline uint16_t ctrlr_io_check_range(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	/* Atomic: a resize (ctrlr_ns_resize, main thread) may grow it under I/O. */
	uint64_t nsze = __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED);

	if (slba >= nsze || nlb > nsze - slba) {
		req->error_lba = slba;
		req->error_loc = offsetof(struct nvme_sqe, cdw10);
		return NVME_SC_LBA_RANGE;
	}
	return NVME_SC_SUCCESS;
}
/* Reads LBAs [slba, slba + nlb) of req->ns in bounce-buffer chunks, calling chunk_fn for each,
 * then range_done(req, status) once (the owner thread). Returns an NVMe status; on failure
 * nothing was started. */
uint16_t ctrlr_io_read_range(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
			     void (*chunk_fn)(struct ctrlr_req *req, const void *data, size_t len),
			     void (*range_done)(struct ctrlr_req *req, uint16_t status));

/* ---- format.c: the LBA formats a bdev offers ---- */
/* The formats a bdev of block size bs offers, in Identify order: how many (<= CTRLR_MAX_LBAF). */
uint32_t ctrlr_lbafs_for(uint32_t bs, struct ctrlr_lbaf *out);
/* True if FLBAS/DPS (Identify Namespace encoding) name a format such a bdev offers, with room
 * for the PI type; *stride (may be NULL): the bytes one logical block takes. */
bool ctrlr_flbas_valid(uint32_t bs, uint8_t flbas, uint8_t dps, uint32_t *stride);
/* Fills ns->lbafs for its bdev and selects format 0 (the bdev's own block, no metadata); sets
 * block_size, lbads, num_blocks from the bdev. A zoned bdev offers its own block only. */
void ctrlr_ns_formats_init(struct ctrlr_ns *ns);
/* The namespace takes that format (capacity follows): 0 or -EINVAL. Before I/O can see it. */
int ctrlr_ns_set_flbas(struct ctrlr_ns *ns, uint8_t flbas, uint8_t dps);
void ctrlr_ns_get_flbas(const struct ctrlr_ns *ns, uint8_t *flbas, uint8_t *dps);

/* ---- md.c: Read, Write, Compare, Verify, Write Zeroes on formats with metadata ---- */
void ctrlr_io_md_rw(struct ctrlr_req *req);
void ctrlr_io_md_compare(struct ctrlr_req *req);
void ctrlr_io_md_verify(struct ctrlr_req *req);
void ctrlr_io_md_write_zeroes(struct ctrlr_req *req);
/* Frees the requests' metadata bounce state (SQ teardown). */
void ctrlr_io_md_sq_fini(struct ctrlr_sq *sq);

/* ---- copy.c ---- */
void ctrlr_io_copy(struct ctrlr_req *req);

/* ---- fused.c: fused Compare and Write (NVMe Base 2.0 section 3.4.2, NVM Command Set 3.2.x)
 * and the LBA range locks that make it atomic against other writes of any queue, any thread and
 * any controller of the namespace.
 *
 * Locks (one table per shared namespace, struct ctrlr_nvm_shared): while no Compare and Write
 * runs, a write only increments and decrements one atomic counter ("fast" writes). A Compare and
 * Write sets `cawing` first, then waits until the fast writes that started before it drained and
 * every earlier overlapping entry of the table finished; writes that start while `cawing` is set
 * go through the table and wait (FIFO, as queued requests, no thread ever sleeps) behind an
 * overlapping Compare and Write. Waiters are resumed on their own owner thread (ops->io_post).
 * The table's mutex is held only for list updates, never across I/O. ---- */
/* ctrlr_req.caw_state */
enum ctrlr_caw_state {
	CTRLR_CAW_NONE = 0,
	CTRLR_CAW_FAST,	   /* a write counted in `fast` */
	CTRLR_CAW_WAITING, /* in the table, waiting */
	CTRLR_CAW_ACTIVE,  /* in the table, running */
};

void ctrlr_io_fused(struct ctrlr_req *first, struct ctrlr_req *second);
int ctrlr_caw_locks_create(struct ctrlr_caw_locks **out);
void ctrlr_caw_locks_destroy(struct ctrlr_caw_locks *l);
/* A write-group command (req->ns set) is about to run `exec`: returns true when it must wait
 * (exec(req) then runs later on the owner thread), false to run now. Owner thread. */
bool ctrlr_caw_write_begin(struct ctrlr_req *req, ctrlr_req_exec_fn exec);

/* ---- resv.c: reservation commands, notifications, state shared by controllers ---- */
void ctrlr_io_resv(struct ctrlr_req *req);
/* The access word of host `hostid` on the shared namespace: what its reservation allows, and no
 * writes while a shared store's record is not current. */
uint32_t ctrlr_resv_host_access(const struct ctrlr_nvm_shared *sh, const uint8_t hostid[16]);
/* Shared by resv.c and resv_remote.c (admin thread): Report into req; the change's effects here
 * (access words, notifications, Preempt and Abort's fences: then(arg) once they are up);
 * completing a reservation command; the waiting commands' turn. */
uint16_t ctrlr_resv_report(struct ctrlr_req *req);
void ctrlr_resv_effects(struct ctrlr_ns_shared *s, struct ctrlr_req *req, bool abort,
			const struct ctrlr_resv_events *ev,
			void (*then)(void *arg), void *arg);
void ctrlr_resv_finish(struct ctrlr_req *req, uint16_t st);
/* Register, Acquire or Release (req's command, its keys in req->step.buf, its host the
 * controller's) run on r: the NVMe status (error location set); ev and persist as the state
 * machine's. */
uint16_t ctrlr_resv_change(struct ctrlr_resv *r, struct ctrlr_req *req,
			   struct ctrlr_resv_events *ev, bool *persist);
void ctrlr_resv_saved_next(struct ctrlr_nvm_shared *sh);
/* resv_remote.c: a command (or Set Features PTPL, req->sqe.cdw0.bits.opc the admin one) run
 * through the shared store; the store's teardown. */
void ctrlr_resv_remote_exec(struct ctrlr_req *req);
void ctrlr_resv_remote_fini(struct ctrlr_nvm_shared *sh);
/* Recomputes the access words of every controller namespace of s (after a change). */
void ctrlr_resv_update_access(struct ctrlr_ns_shared *s);
/* After a Host Identifier change: recompute the controller's access words. */
void ctrlr_resv_ctrlr_hostid_changed(struct ctrlr *ctrlr);
/* True if the controller's host is a registrant of any of its namespaces. */
bool ctrlr_resv_ctrlr_registered(struct ctrlr *ctrlr);
/* Get Log Page 80h: the Reservation Notification log page (consumes the oldest entry unless
 * rae). */
size_t ctrlr_log_resv_notify(struct ctrlr *ctrlr, uint8_t *buf, bool rae);
/* Persist Through Power Loss of ns (Feature 83h): the state, whether it can, and a change by
 * Set Features req (admin queue, req->ns held): written to the state file (by the syncer
 * thread, after the namespace's reservation changes before it) before it takes effect; then
 * done(req, status) on the admin thread (Internal Error, the state unchanged, when the file
 * cannot be written; Invalid Field when the namespace cannot persist). */
bool ctrlr_resv_ptpl(const struct ctrlr_ns *ns);
bool ctrlr_resv_ptpl_capable(const struct ctrlr_ns *ns);
void ctrlr_resv_set_ptpl(struct ctrlr_req *req, bool on,
			 void (*done)(struct ctrlr_req *req, uint16_t st));

/* ---- lba_status.c ---- */
void ctrlr_admin_get_lba_status(struct ctrlr_req *req);
/* Builds the LBA Status Information log in buf (size bytes at most); returns its length. */
size_t ctrlr_log_lba_status(struct ctrlr *ctrlr, uint8_t *buf, size_t size);

#endif
