/* controller/ctrlr.h - the NVMe controller's public API (for app/ and the transport): create a
 * controller from a config, namespaces, vendor-specific commands, statistics.
 *
 * Every function here runs on the controller's admin thread (see ctrlr_transport.h) unless
 * marked otherwise, and none blocks. Plumbing returns 0 or a negative errno.
 */
#ifndef NVME_EMU_CONTROLLER_CTRLR_H
#define NVME_EMU_CONTROLLER_CTRLR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/ctrlr_transport.h"

struct bdev;
struct ctrlr_req;

#define CTRLR_MAX_NAMESPACES 32	 /* NN */
#define CTRLR_MAX_IO_QUEUES 1023 /* I/O queue pairs a config may ask for */
#define CTRLR_MAX_QUEUE_ENTRIES 4096

struct ctrlr_config {
	const char *serial;	  /* up to 20 ASCII characters (required) */
	const char *model;	  /* up to 40 (NULL: "nvme-emu") */
	const char *firmware_rev; /* up to 8 (NULL: "1.0") */
	const char *subnqn;	  /* up to 223 (NULL: "nqn.2026-11.io.nvme-emu:<serial>") */
	uint16_t cntlid;	  /* controller id (0 is fine) */
	uint16_t max_io_queues; /* I/O SQs = I/O CQs the controller allows, 1..CTRLR_MAX_IO_QUEUES;
				 * MSI-X vectors needed: max_io_queues + 1 */
	uint16_t num_vectors;	/* MSI-X vectors the function has (0: max_io_queues + 1) */
	uint32_t max_queue_entries; /* CAP.MQES + 1, 2..CTRLR_MAX_QUEUE_ENTRIES (0: 1024) */
	uint8_t mdts;		    /* max transfer 2^mdts pages of CAP.MPSMIN, 1..10 (0: 5) */
	bool sgl;		    /* advertise and accept SGLs for I/O commands */
	bool no_dbbuf;		    /* do not offer Doorbell Buffer Config (OACS bit 8) */
	/* Identify Controller VID and SSVID: the function's PCI vendor and subsystem vendor IDs. */
	uint16_t pci_vid, pci_ssvid;
	/* CAP.CMBS and CAP.PMRS: the transport has a Controller Memory Buffer (with CMBMSC) and a
	 * Persistent Memory Region, whose registers it keeps itself. */
	bool cap_cmbs, cap_pmrs;
	/* The Persistent Event Log's state file (NULL: the log lives in memory only): read at
	 * creation, appended to with every event, so the log outlives a daemon restart. */
	const char *pel_file;
	/* Flexible Data Placement (device/fdp.c): reclaim unit handles of the endurance group's one
	 * configuration (0: no FDP, up to CTRLR_FDP_MAX_RUH) and the reclaim unit size in bytes
	 * (0: 16 MiB). FDP starts enabled; Set Features 1Dh turns it off or on while the group
	 * has no namespace. */
	uint16_t fdp_nruh;
	uint64_t fdp_runs;
	/* The controller's state file (NULL: none): firmware slots and activation, features saved
	 * with SV; read at creation (a bad file fails it), written before each change completes. */
	const char *state_file;
};
#define CTRLR_FDP_MAX_RUH 128

/*
 * Creates a controller, disabled (CSTS.RDY 0), with no namespace. `ops`/`tctx` are the transport
 * (kept, not copied: they must outlive the controller). Returns 0 and the controller in *out,
 * -EINVAL for a bad config, -ENOMEM. The calling thread becomes the admin thread.
 */
int ctrlr_create(const struct ctrlr_config *config, const struct ctrlr_transport_ops *ops,
		 void *tctx, struct ctrlr **out);

/*
 * Destroys a controller: releases the namespaces' bdevs (ops->put_bdev, then bdev_release and
 * bdev_close), frees the controller, then calls done(arg) (NULL: no call) on the admin thread,
 * possibly from inside this call. The transport must have stopped every queue first (run
 * ctrlr_flr and waited for its done) and must run every ops->admin_msg callback the core posted
 * before done is called (they point at the controller; the core posts none after this call).
 * Returns 0 (done will run), or -EBUSY with queues still alive or a reset in progress (nothing
 * done). NULL: returns 0 and calls done.
 */
int ctrlr_destroy(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg);

/* ---- Namespaces ---- */

struct ctrlr_ns_opts {
	const uint8_t *nguid; /* 16 bytes, or NULL: derived from the bdev UUID */
	const uint8_t *eui64; /* 8 bytes, or NULL: derived from the bdev UUID */
	const uint8_t *uuid;  /* 16 bytes, or NULL: the bdev UUID */
	/* What this namespace shares with the other controllers of the subsystem that attach the
	 * same bdev (reservations, PTPL file, fused Compare and Write locks), or NULL: a private
	 * one. Controllers sharing one must run their admin side on the same thread. */
	struct ctrlr_ns_shared *shared;
	uint8_t nmic;	      /* Identify Namespace NMIC (bit 0: may be shared) */
	/* The LBA format it starts in (Identify Namespace FLBAS and DPS), when set_format; else
	 * format 0 (or the format the other controllers of a shared namespace have). */
	bool set_format;
	uint8_t flbas, dps;
};

/*
 * A namespace's state shared by several controllers (NVMe Base 2.0 section 8.19: reservations
 * belong to the namespace; each controller has its host's identifier): reservations, the bdev
 * claim (taken by the first controller that attaches the namespace, dropped with the last), the
 * fused Compare and Write range locks. `ptpl_file` (NULL: none) is where Persist Through Power
 * Loss keeps registrants and the reservation: read here if it exists, rewritten on each change
 * while PTPL is on. Returns 0, -EINVAL (unreadable content), -ENOMEM, -errno. Admin thread.
 */
struct ctrlr_ns_shared;
int ctrlr_ns_shared_create(const char *ptpl_file, struct ctrlr_ns_shared **out);
/* What a shared namespace is created with (the modules' shared_init hooks read it). */
struct ctrlr_ns_shared_opts {
	const char *ptpl_file;
};
/* Drops the creator's reference; the object goes with the last controller namespace. */
void ctrlr_ns_shared_put(struct ctrlr_ns_shared *s);

/*
 * Reservations shared with daemons on other hosts (issue 31): instead of this daemon's memory and
 * PTPL file, the namespace's reservation state is a record in a store every daemon of the
 * namespace reaches (app/ binds one kept in a RADOS object, cluster/rados_obj.h). The controller
 * reads the record, runs the command's change on it, writes it back only if nobody changed it
 * since (else reads again and reruns), applies it here, and publishes it: publish completes once
 * every other daemon applied the change (or was fenced), and only then the command completes.
 * The I/O path never waits for the store: it checks the access word each change leaves.
 * Callbacks of the store run on the admin thread; so do these calls.
 */
struct ctrlr_resv_store_ops {
	/* Reads the record: cb(arg, 0, data, len, version) (len 0: never written), or -errno. */
	int (*read)(void *ctx, void (*cb)(void *arg, int rc, const void *data, size_t len,
					  uint64_t version),
		    void *arg);
	/* Replaces it if still at `version`: cb(arg, 0, new version), -ECANCELED when another
	 * daemon wrote first, or -errno. */
	int (*write)(void *ctx, uint64_t version, const void *data, size_t len,
		     void (*cb)(void *arg, int rc, uint64_t version), void *arg);
	/* Tells every daemon: cb(arg, 0) once all applied it or were fenced, -errno if the fence
	 * failed (the change is made; whoever did not answer may still act on the old state). */
	int (*publish)(void *ctx, void (*cb)(void *arg, int rc), void *arg);
	/* Acknowledges a change told by ctrlr_resv_store_changed (token 0: none to acknowledge). */
	void (*ack)(void *ctx, uint64_t token);
	/* The namespace is gone: no call after this, and no callback may reach it any more. */
	void (*release)(void *ctx);
};
/* Binds the store (before a controller attaches the namespace). Until the first record is read
 * the namespace refuses writes (Reservation Conflict): it does not know who may write. */
void ctrlr_ns_shared_set_resv_store(struct ctrlr_ns_shared *s, const struct ctrlr_resv_store_ops *ops,
				    void *ctx);
/* The store's events. changed: the record changed (another daemon's change, token to
 * acknowledge once applied) or must be read again (watch back, token 0). stale: changes may be
 * missed from now on (watch lost): writes are refused until `changed` brought the record. */
void ctrlr_resv_store_changed(struct ctrlr_ns_shared *s, uint64_t token);
void ctrlr_resv_store_stale(struct ctrlr_ns_shared *s);
/* The subsystem has (true) or may have only one (false) controller: CMIC bit 1 in Identify. Set
 * it before the host probes the controller (ctrlr_subsys_join does). */
void ctrlr_set_multi_ctrl(struct ctrlr *ctrlr, bool multi);

/*
 * An NVM subsystem's controllers (controller/subsys.c): several controllers (one per listener,
 * each its own CNTLID) with the same NQN, serial and model, sharing namespaces through
 * ctrlr_ns_shared. Membership makes a controller report CMIC bit 1 and answer Identify CNS 12h
 * and 13h with every member. The subsystem and its members run on one thread.
 */
struct ctrlr_subsys;
int ctrlr_subsys_create(struct ctrlr_subsys **out);
/* -EBUSY while it has members; NULL is fine. */
int ctrlr_subsys_destroy(struct ctrlr_subsys *cs);
/* Adds a controller (before its host probes it): 0, -EEXIST (its CNTLID is taken), -EALREADY.
 * ctrlr_destroy takes it out. */
int ctrlr_subsys_join(struct ctrlr_subsys *cs, struct ctrlr *ctrlr);
void ctrlr_subsys_leave(struct ctrlr *ctrlr);
uint32_t ctrlr_subsys_count(const struct ctrlr_subsys *cs);
struct ctrlr *ctrlr_subsys_find(struct ctrlr_subsys *cs, uint16_t cntlid);
/* The Host Identifier the host set (Set Features 81h) as hex text (16 or 32 digits), or "" while
 * it is zero. out: at least 33 bytes. */
void ctrlr_get_hostid_text(const struct ctrlr *ctrlr, char *out);

/*
 * Attaches `bdev` as namespace `nsid` (1..CTRLR_MAX_NAMESPACES; 0 = the lowest free id). Opens and
 * claims the bdev. If the controller is enabled, a Namespace Attribute Changed event is reported.
 * Returns the nsid (> 0) or -EINVAL (bad nsid, bad block size), -EEXIST (nsid in use), -EBUSY
 * (bdev claimed), -ENOMEM.
 */
int ctrlr_ns_add(struct ctrlr *ctrlr, uint32_t nsid, struct bdev *bdev,
		 const struct ctrlr_ns_opts *opts);
/* Whether bdev can be namespace nsid of ctrlr as far as Flexible Data Placement goes: 0, or
 * -EINVAL and why (FDP enabled and the bdev places nothing, or another handle count or reclaim
 * unit size) in why[len]. What ctrlr_ns_add refuses with -EINVAL for that. Same thread as
 * ctrlr_ns_add. */
int ctrlr_ns_placement_check(struct ctrlr *ctrlr, uint32_t nsid, const struct bdev *bdev,
			     char *why, size_t len);

/*
 * Detaches namespace `nsid`: new commands to it fail with Invalid Namespace at once; the bdev is
 * released (ops->put_bdev, bdev_release, bdev_close) once its in-flight I/O drained, which may be
 * after this returns. A Namespace Attribute Changed event is reported. Returns 0 or -ENOENT.
 */
int ctrlr_ns_remove(struct ctrlr *ctrlr, uint32_t nsid);
/* The namespace's bdev grew to num_blocks: Identify reports it (NSZE/NCAP/NUSE) and the host gets
 * a Namespace Attribute Changed event with nsid in the Changed Namespace List (NVMe Base 2.0,
 * 5.2.2 / 5.16.1.5). Returns 0, -ENOENT (no such namespace) or -EINVAL (smaller: I/O in flight
 * may address the blocks a shrink would remove; refused). Same thread as ctrlr_ns_add. */
int ctrlr_ns_resize(struct ctrlr *ctrlr, uint32_t nsid, uint64_t num_blocks);

/* ---- health (SMART / Health model and injection, controller/device/health.c) ---- */

/* What an operator sets: temp_k 0 and spare/used -1 leave the model's value; reset first
 * returns everything (and the injected media error count) to the model. */
struct ctrlr_health_set {
	bool reset;
	uint32_t temp_k; /* composite temperature, kelvin (1..65534) */
	int spare;	 /* Available Spare, 0..100 % (below 10 %: critical warning bit 0) */
	int used;	 /* Percentage Used, 0..255 (100 and above: bit 2) */
};
/* Applies it, re-evaluates the warnings (SMART events as enabled). 0 or -EINVAL. Same thread as
 * ctrlr_ns_add. */
int ctrlr_health_set(struct ctrlr *ctrlr, const struct ctrlr_health_set *s);
/* Makes [slba, +nlb) of namespace nsid unreadable (Unrecovered Read Error) until written, as a
 * media defect would; counts them as media errors (critical warning bit 2). 0, -ENOENT (no such
 * namespace), -ERANGE, -ENOSPC (too many ranges). */
int ctrlr_inject_media_error(struct ctrlr *ctrlr, uint32_t nsid, uint64_t slba, uint64_t nlb);
struct ctrlr_health_info {
	uint16_t temp_k;
	uint8_t spare, spare_thresh, used, critical_warning;
	uint64_t injected_media_error_blocks;
};
/* Evaluates the model and reports it. */
void ctrlr_health_get(struct ctrlr *ctrlr, struct ctrlr_health_info *out);

/* Number of attached namespaces. */
uint32_t ctrlr_ns_count(const struct ctrlr *ctrlr);

/* ---- zoned namespaces (controller/zns/zns_cmd.c) ---- */

/*
 * Makes the zone of namespace nsid that starts at zslba Read Only (offline false) or Offline, as
 * a failing medium would (NVMe ZNS 1.1 zone states ZSRO, ZSO): writes to it then fail with Zone
 * Is Read Only, any access to an offline zone with Zone Is Offline. The zone enters the Changed
 * Zone List (log BFh) of every controller attached to the namespace, each told by a Zone
 * Descriptor Changed notice if its host enabled them. A zone already in that state: nothing
 * happens. Returns 0, -ENOENT (no namespace nsid), -ENOTSUP (not zoned), -EINVAL (not a zone's
 * first LBA, or Offline -> Read Only), -ENOMEM (the change is made, a list could not be).
 */
int ctrlr_zone_set_state(struct ctrlr *ctrlr, uint32_t nsid, uint64_t zslba, bool offline);
/* The zone's state (the ZS value: 1h Empty .. Fh Offline) and write pointer as Report Zones
 * shows them. 0, -ENOENT, -ENOTSUP, -EINVAL as ctrlr_zone_set_state. */
int ctrlr_zone_get(struct ctrlr *ctrlr, uint32_t nsid, uint64_t zslba, uint8_t *state,
		   uint64_t *wp);

/* ---- Namespace Management capacity pool (controller/pool/) ---- */

/*
 * A capacity pool is one bdev (512-byte blocks) out of which the host creates namespaces with
 * Namespace Management and attaches them with Namespace Attachment (OACS bit 3). Each namespace
 * is a region bdev (module BDEV_REGION_MODULE, named <pool bdev>n<nsid>) over a contiguous
 * extent of the pool, so no data is copied. The layout lives in the first 8 KiB of the pool
 * bdev (two alternating header copies; namespaces from 1 MiB on, in 1 MiB units), so a pool on
 * a file keeps its namespaces, their data and their attachment across restarts. A pool belongs
 * to one NVM subsystem and outlives its controllers. Main (admin) thread only.
 */
struct ctrlr_ns_pool;
struct evloop;

/* One namespace of a pool, as reported (and as a configuration lists it to re-create it). */
struct ctrlr_ns_pool_ns_info {
	uint32_t nsid;
	uint64_t offset_bytes, size_bytes; /* the extent in the pool */
	uint64_t num_blocks;
	uint32_t block_size;
	bool attached; /* to the subsystem's controller */
	bool shared;   /* NMIC bit 0 */
	uint8_t flbas, dps; /* its LBA format (Identify Namespace encoding) */
	uint8_t uuid[16];
	char bdev_name[64];
};

struct ctrlr_ns_pool_info {
	char bdev_name[64];
	uint64_t total_bytes, free_bytes, largest_free_bytes; /* of the namespace area */
	uint64_t granule;				      /* allocation unit, bytes */
	uint64_t generation;				      /* header updates */
	uint32_t max_nsid, num_ns;
};

struct ctrlr_ns_pool_opts {
	struct bdev *bdev;    /* the pool (claimed and held open by it) */
	struct evloop *loop;  /* the main thread's loop: header I/O */
	uint32_t max_nsid;    /* NSIDs handed out: 1..max_nsid (0: CTRLR_MAX_NAMESPACES) */
	const bool *reserved; /* [CTRLR_MAX_NAMESPACES]: NSIDs the operator's namespaces hold, or NULL */
	bool format;	      /* use a bdev that holds data but no pool header (it is overwritten) */
	/* Namespaces to lay out again when the bdev holds no header (a RAM pool restored from a
	 * configuration); ignored when it does (the header is the truth). */
	const struct ctrlr_ns_pool_ns_info *ns;
	uint32_t num_ns;
};

/* How a pool creation ended: rc 0 and the pool, or -errno and a message for people. */
typedef void (*ctrlr_ns_pool_done_fn)(void *arg, int rc, const char *msg,
				      struct ctrlr_ns_pool *pool);

/*
 * Creates a pool on o->bdev: reads its header asynchronously (a blank bdev is formatted), then
 * done(arg, ...) runs on the loop, never from inside this call. Returns 0 (done will run) or
 * -EINVAL (bad options, block size not 512), -ENOSPC (smaller than 2 MiB), -EBUSY (bdev
 * claimed), -ENOMEM, without calling done.
 */
int ctrlr_ns_pool_create(const struct ctrlr_ns_pool_opts *o, ctrlr_ns_pool_done_fn done,
			 void *arg);
/* Deletes the namespaces' region bdevs and frees the pool (the bdev itself stays). -EBUSY while
 * a controller is bound or a command is using it. */
int ctrlr_ns_pool_destroy(struct ctrlr_ns_pool *pool);
/* Binds the subsystem's controller (after its operator namespaces were added): the pool's
 * namespaces marked attached are attached to it, and it advertises Namespace Management. The
 * binding ends with ctrlr_destroy. 0 or -errno (-EBUSY: already bound). */
int ctrlr_ns_pool_bind(struct ctrlr_ns_pool *pool, struct ctrlr *ctrlr);
/* Marks an NSID as held (or no longer) by an operator namespace: the pool never hands it out. */
void ctrlr_ns_pool_reserve(struct ctrlr_ns_pool *pool, uint32_t nsid, bool reserved);
/* True when `nsid` is a namespace of the pool. */
bool ctrlr_ns_pool_owns(const struct ctrlr_ns_pool *pool, uint32_t nsid);
void ctrlr_ns_pool_get_info(const struct ctrlr_ns_pool *pool, struct ctrlr_ns_pool_info *info);
/* Fills *out for namespace `nsid` of the pool; false if it has none. */
bool ctrlr_ns_pool_get_ns(const struct ctrlr_ns_pool *pool, uint32_t nsid,
			  struct ctrlr_ns_pool_ns_info *out);

/* ---- Secondary controllers (Virtualization Enhancements, controller/virt/) ---- */

/*
 * A primary controller shares flexible resources with its secondary controllers (NVMe Base 2.0
 * section 8.26): VQ resources (a submission and completion queue pair; a controller's admin
 * queue takes one) and VI resources (an MSI-X vector). The host assigns them with
 * Virtualization Management (OACS bit 7) and brings a secondary online, which the transport
 * does by serving it as a controller of its own (over vfio-user a function of its own). The
 * assignment is device state: kept in the primary's state file (ctrlr_config.state_file),
 * written before the command that changed it completes.
 */
#define CTRLR_VIRT_MAX_SECONDARIES 127 /* a Secondary Controller List holds 127 entries */

struct ctrlr_virt_config {
	uint16_t nr_secondaries;			/* 1..CTRLR_VIRT_MAX_SECONDARIES */
	uint16_t scid[CTRLR_VIRT_MAX_SECONDARIES];	/* their CNTLIDs, distinct, not the primary's */
	/* VQFRT, VIFRT: the primary's queue pairs and vectors it may give away (it keeps the
	 * rest as private resources, at least its admin queue and one I/O queue pair, and one
	 * vector). */
	uint16_t vq_flexible, vi_flexible;
	/* VQFRSM, VIFRSM: most one secondary may have (VQ: at least 2, the admin queue and one I/O
	 * queue pair; VI: at least 1). */
	uint16_t max_vq, max_vi;
};

/* The transport's side: brings secondary scid online with nvq VQ resources (nvq - 1 I/O queue
 * pairs) and nvi VI resources (nvi MSI-X vectors), or offline (nvq, nvi 0); calls done(arg, 0)
 * once it is (its function serving, plugged where a manager plugs it; or unplugged and closed),
 * or done(arg, -errno). done runs on the admin thread, maybe from inside the call. */
struct ctrlr_virt_ops {
	void (*set_online)(void *ctx, uint16_t scid, bool online, uint16_t nvq, uint16_t nvi,
			   void (*done)(void *arg, int rc), void *arg);
};

/*
 * Makes ctrlr a primary controller with cfg's secondaries (before its host may reach it): reads
 * the assignment its state file keeps (a file that does not fit cfg is refused: -EINVAL and the
 * reason in why), and brings the secondaries the file says are online back online through ops
 * (from a later turn of the admin thread's loop: the caller finishes first). 0, -EINVAL (bad cfg
 * or file; why says which), -EBUSY (bound already, or a secondary). why: at least 128 bytes.
 */
int ctrlr_virt_bind(struct ctrlr *ctrlr, const struct ctrlr_virt_config *cfg,
		    const struct ctrlr_virt_ops *ops, void *ctx, char *why, size_t why_len);
/* Makes ctrlr the secondary controller of primary CNTLID pcid, created with nvq VQ and nvi VI
 * resources (its max_io_queues nvq - 1 and its vectors nvi): Identify CNS 14h reports them.
 * 0 or -EBUSY (a primary already). */
int ctrlr_virt_set_secondary(struct ctrlr *ctrlr, uint16_t pcid, uint16_t nvq, uint16_t nvi);

/* The transport could not bring secondary scid of primary ctrlr back online (after a restart):
 * it is offline, its resources still assigned (the state file says so with its next write). */
void ctrlr_virt_set_offline(struct ctrlr *ctrlr, uint16_t scid);

/* What a primary has, as CNS 14h and 15h report it. */
struct ctrlr_virt_info {
	bool primary;
	uint16_t vqprt, viprt, vqrfap, virfap, vqrfap_next, virfap_next;
	uint32_t vqrfa, virfa;
	uint16_t io_queues, vectors; /* what the primary has now */
	struct ctrlr_virt_config cfg;
	struct {
		uint16_t nvq, nvi;
		bool online;
	} sec[CTRLR_VIRT_MAX_SECONDARIES];
};
void ctrlr_virt_get_info(const struct ctrlr *ctrlr, struct ctrlr_virt_info *out);

/* ---- Vendor-specific commands (admin 0xC0-0xFF, I/O 0x80-0xFF) ---- */

/*
 * A vendor command handler. Runs on the thread of the queue the command came from (admin thread
 * for admin, owner thread for I/O). It must end - now or later, on that thread - in exactly one
 * ctrlr_req_complete(req, status). Return value: none; statuses are NVMe statuses (nvme_spec.h).
 * Helpers for handlers (ctrlr_vendor.h): ctrlr_req_sqe(), ctrlr_req_set_cdw0(),
 * ctrlr_req_copy_to_host(), ctrlr_req_copy_from_host(), ctrlr_req_ns_block_size(),
 * ctrlr_req_ns_num_blocks(), ctrlr_req_read_lbas(), ctrlr_req_complete().
 */
typedef void (*ctrlr_vendor_fn)(struct ctrlr_req *req, void *arg);

struct ctrlr_vendor_cmd {
	uint8_t opcode;
	bool io;       /* false: admin (0xC0-0xFF), true: I/O (0x80-0xFF) */
	bool needs_ns; /* the command addresses a namespace: NSID is checked before the handler */
	uint32_t effects; /* NVME_CMD_EFFECTS_* bits for the Commands Supported and Effects log
			   * (CSUPP is added) */
	const char *name;
	ctrlr_vendor_fn fn;
	void *arg;
};

/*
 * Registers a vendor command (copied). Returns 0, -EINVAL (opcode outside the vendor range, no
 * fn), -EEXIST (opcode taken). Registered commands appear in the effects log at once.
 */
int ctrlr_vendor_register(struct ctrlr *ctrlr, const struct ctrlr_vendor_cmd *cmd);
/* Removes one; returns 0 or -ENOENT. Commands already dispatched to it still complete (the entry
 * is freed with the controller). */
int ctrlr_vendor_unregister(struct ctrlr *ctrlr, bool io, uint8_t opcode);
/* Registers the shipped examples: admin 0xC0 (controller-info blob, CDW0 = namespace count) and
 * I/O 0x80 (CRC-32C of an LBA range in CDW0). ctrlr_create calls it; 0 or -errno. */
int ctrlr_vendor_register_defaults(struct ctrlr *ctrlr);

/* ---- Statistics ---- */

struct ctrlr_stats {
	uint64_t admin_cmds, io_cmds; /* commands completed */
	uint64_t errors;	      /* completions with a non-zero status */
	uint64_t data_units_read;     /* 1000 x 512 bytes, as in SMART (rounded up) */
	uint64_t data_units_written;
	uint64_t host_read_cmds, host_write_cmds;
	uint64_t media_errors;
	uint64_t invalid_db_writes;
	uint64_t aer_sent;
	uint64_t irqs_raised;
	/* Adaptive moderation (queue.c): interrupts that waited for the host to submit up to its
	 * depth, those waits that ended by time, and the times the rule went off for a while. */
	uint64_t irq_depth_waits, irq_depth_misses, irq_depth_backoffs;
	uint64_t cq_full_holds; /* completions held back by a full CQ */
	uint64_t resets, shutdowns;
	uint64_t flrs; /* function level resets (also counted in resets) */
	/* Completions that an interrupt announced, or that the host took before one was due: less
	 * irqs_raised, those that shared an interrupt (coalesced). */
	uint64_t irq_cqes;
	uint32_t io_sqs, io_cqs; /* live I/O queues */
	bool enabled;		 /* CSTS.RDY */
};

/* Snapshot of the counters (each one read atomically). Thread: any. */
void ctrlr_get_stats(const struct ctrlr *ctrlr, struct ctrlr_stats *stats);

/* The ids of the live submission queues (0 is the admin queue), ascending, at most max of them;
 * returns how many were stored. Admin thread (it owns queue creation and deletion). */
int ctrlr_get_sq_ids(const struct ctrlr *ctrlr, uint16_t *qids, int max);

#endif
