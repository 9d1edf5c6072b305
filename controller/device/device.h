/* controller/admin_ext.h - state and entry points of the background admin operations (Device
 * Self-test, Sanitize), the Telemetry logs, the Persistent Event Log and Abort of queued
 * commands. Included by ctrlr_internal.h; not for use outside controller/. Admin thread unless
 * said otherwise. */
#ifndef NVME_EMU_CONTROLLER_ADMIN_EXT_H
#define NVME_EMU_CONTROLLER_ADMIN_EXT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/bdev.h"
#include "common/evloop.h"
#include "controller/nvme_spec.h"

struct ctrlr;
struct ctrlr_ns;
struct ctrlr_req;

/* One bdev request the controller issues on its own (self-test reads, sanitize writes) from the
 * admin thread, on the admin queue's channel. One at a time per controller. */
struct ctrlr_bg_io {
	struct bdev_io *bio; /* with CTRLR_BDEV_CTX_MAX bytes of backend context */
	void *buf;	     /* CTRLR_CHUNK_BYTES */
	struct iovec iov;
	struct bdev_range range;
	struct ctrlr_ns *ns; /* referenced while in flight */
	bool busy;
	uint32_t gen; /* the operation that submitted it (stale completions are dropped) */
	void (*done)(struct ctrlr *ctrlr, int status);
};

/* Device Self-test (admin_selftest.c). */
struct ctrlr_dst {
	uint8_t stc;	  /* operation in progress (NVME_DST_SHORT/EXTENDED), 0: none */
	uint32_t nsid;	  /* what the command named: 0, one namespace or FFFFFFFFh */
	uint8_t segment;  /* segment running (1..9) */
	uint32_t ns_next; /* scan: the namespace being read */
	uint64_t lba, end;
	uint64_t done, total; /* blocks read / to read (progress) */
	uint32_t gen;
	struct nvme_dst_result results[NVME_DST_LOG_ENTRIES]; /* newest first */
};

/* Sanitize (admin_sanitize.c). */
enum ctrlr_san_state {
	CTRLR_SAN_IDLE = 0,
	CTRLR_SAN_RUNNING, /* I/O and most admin commands: Sanitize In Progress */
	CTRLR_SAN_FAILED,  /* failure mode: Sanitize Failed */
};
enum ctrlr_san_phase {
	CTRLR_SAN_DRAIN = 0, /* waiting for commands already running on the namespaces */
	CTRLR_SAN_ERASE,     /* block erase (deallocate, or write zeroes) */
	CTRLR_SAN_OVERWRITE,
	CTRLR_SAN_DEALLOC, /* after an overwrite without No-Deallocate */
};
struct ctrlr_san {
	uint32_t state; /* enum ctrlr_san_state; atomic: read by every owner thread */
	enum ctrlr_san_phase phase;
	uint32_t cdw10, pattern;
	bool ause;     /* the failed operation allows Exit Failure Mode */
	uint8_t passes, pass;
	uint32_t ns_next; /* namespace being worked on (1-based, 0: none yet) */
	uint64_t lba;
	uint64_t done, total; /* blocks, every pass and phase counted */
	uint16_t sstat;	      /* the log's SSTAT */
	uint32_t scdw10;
	bool gde;		/* no user data written since the last sanitize (not tracked: 0) */
	uint64_t writes_at_end; /* bdev writes when it last succeeded (GDE) */
	uint32_t drain_poked;	/* atomic: a drain check is queued */
	struct evloop_msg drain_msg;
	uint32_t gen;
	/* Sanitize is an NVM subsystem operation (Base 2.0 8.21): while another controller of the
	 * subsystem runs one, this one follows it (its state, phase and status mirrored here) and
	 * `runner` is that controller. NULL when this controller runs it or none runs. */
	struct ctrlr *runner;
};

/* Telemetry (admin_telemetry.c): the host-initiated snapshot and the controller-initiated one. */
struct ctrlr_telemetry_snap {
	uint8_t *data; /* header + data areas, whole 512-byte blocks */
	size_t len;
};
struct ctrlr_telemetry {
	struct ctrlr_telemetry_snap host, ctrl;
	uint8_t host_gen, ctrl_gen;
	bool ctrl_avail;
	char ctrl_reason[64];
};

/* Persistent Event Log (pel.c): a ring of encoded events, the reader's context. */
#define CTRLR_PEL_MAX_BYTES (64u * 1024)
struct ctrlr_pel {
	uint8_t *buf; /* events back to back, oldest first */
	size_t len;
	uint32_t count;
	uint8_t *ctx; /* the snapshot a host established (header + events), NULL: none */
	size_t ctx_len;
	uint16_t gen;
	uint64_t power_cycles;
	/* The state file (ctrlr_config.pel_file), NULL: none. Events are appended as they come;
	 * it is rewritten from buf when it grows past twice the log. */
	char *path;
	int fd;
	size_t file_len;
	bool file_failed; /* a write failed (logged once); the log goes on in memory */
	/* Media and Data Integrity errors counted by owner threads (atomic), reported as one
	 * Hardware Error event at most every second. */
	uint32_t media_errors;
	uint32_t media_status;
	bool media_msg_queued;
	uint64_t media_last_us;
	/* Unsafe Shutdown: the controller was enabled and no shutdown notification (CC.SHN)
	 * came since (the shutdown count did not move) when it goes away. */
	bool enabled_once;
	uint64_t shutdowns_at_enable;
};

struct ctrlr_ext {
	struct ctrlr_bg_io bg;
	struct ctrlr_dst dst;
	struct ctrlr_san san;
	struct ctrlr_telemetry tel;
	struct ctrlr_pel pel;
};

/* ---- admin_bg.c ---- */
int ctrlr_ext_init(struct ctrlr *ctrlr);
void ctrlr_ext_fini(struct ctrlr *ctrlr);
/* Submits one bdev request of `type` over [lba, +nlb) of namespace `nsid` (READ/WRITE use
 * bg.buf); done(ctrlr, status) runs on completion unless the operation moved on (gen). NVMe
 * status; on failure nothing was submitted. */
uint16_t ctrlr_bg_submit(struct ctrlr *ctrlr, uint32_t nsid, enum bdev_io_type type, uint64_t lba,
			 uint64_t nlb, uint32_t gen, void (*done)(struct ctrlr *ctrlr, int status));
/* Runs the next step of whatever background operation waits (sanitize first, then self-test),
 * when the controller can do I/O and no background request is in flight. */
void ctrlr_bg_kick(struct ctrlr *ctrlr);
/* A background request is in flight (a reset or destroy waits for it). */
bool ctrlr_bg_inflight(const struct ctrlr *ctrlr);
/* Controller Level Reset: self-test aborted; sanitize goes on after the next enable. */
void ctrlr_ext_reset(struct ctrlr *ctrlr);
/* The controller became ready: background operations resume. */
void ctrlr_ext_enabled(struct ctrlr *ctrlr);

/* ---- admin_selftest.c ---- */
void ctrlr_admin_self_test(struct ctrlr_req *req);
void ctrlr_dst_step(struct ctrlr *ctrlr);
/* Ends the operation in progress (if any) with `result` (enum nvme_dst_res). */
void ctrlr_dst_abort(struct ctrlr *ctrlr, uint8_t result);
size_t ctrlr_log_self_test(struct ctrlr *ctrlr, uint8_t *buf);
uint16_t ctrlr_dst_edstt(const struct ctrlr *ctrlr);

/* ---- admin_sanitize.c ---- */
void ctrlr_admin_sanitize(struct ctrlr_req *req);
void ctrlr_san_step(struct ctrlr *ctrlr);
size_t ctrlr_log_sanitize(struct ctrlr *ctrlr, uint8_t *buf);
uint32_t ctrlr_sanicap(const struct ctrlr *ctrlr);
/* Admin commands a sanitize operation (or its failure) refuses: the status, or 0. */
uint16_t ctrlr_san_admin_check(struct ctrlr_req *req);
/* I/O commands, after the namespace reference was taken: the status, or 0. Owner thread. */
uint16_t ctrlr_san_io_check(struct ctrlr_req *req);
/* A sanitize waits for the commands that took a namespace before it to end (a namespace grace
 * period, admin references); their end calls ctrlr_san_ns_idle (any thread). */
bool ctrlr_san_draining(const struct ctrlr *ctrlr);
void ctrlr_san_ns_idle(struct ctrlr *ctrlr);
/* subsys.c: a controller joined its subsystem (it follows a sanitize running or failed there) or
 * left subsystem cs (the followers of an operation it ran fail it; a runner it followed re-checks
 * its drain). */
struct ctrlr_subsys;
void ctrlr_san_joined(struct ctrlr *ctrlr);
void ctrlr_san_left(struct ctrlr *ctrlr, struct ctrlr_subsys *cs);

/* ---- admin_telemetry.c ---- */
/* Builds log 07h/08h (allocated in *out, *len bytes). NVMe status. */
uint16_t ctrlr_log_telemetry(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len);
/* A notable event: captures the Controller-Initiated data, tells the host (AEN if enabled). */
void ctrlr_telemetry_event(struct ctrlr *ctrlr, const char *reason);

/* ---- pel.c ---- */
int ctrlr_pel_init(struct ctrlr *ctrlr);
void ctrlr_pel_fini(struct ctrlr *ctrlr);
/* Appends an event of `type` with `len` bytes of type-specific data. */
void ctrlr_pel_add(struct ctrlr *ctrlr, uint8_t type, const void *data, uint16_t len);
/* Firmware Commit of revision `rev` with action `ca` to slot `fs` (the revision running before
 * is the event's old one, ctrlr->fwrev the new). Timestamp Change (before the new value). */
void ctrlr_pel_fw_commit(struct ctrlr *ctrlr, const char *rev, uint8_t ca, uint8_t fs);
void ctrlr_pel_timestamp_change(struct ctrlr *ctrlr);
/* Format NVM Start (done false) or Completion (done true, st its status) of namespace nsid
 * (FFFFFFFFh: all). */
void ctrlr_pel_format(struct ctrlr *ctrlr, bool done, uint32_t nsid, uint32_t cdw10, uint16_t st);
/* A Thermal Excursion event: the temperature went over a threshold. */
void ctrlr_pel_thermal(struct ctrlr *ctrlr, uint16_t temp_k, uint16_t thresh_k);
/* Change Namespace: a Namespace Management command (its CDW10) created or deleted nsid (its size
 * and format for a creation, else 0). */
void ctrlr_pel_change_ns(struct ctrlr *ctrlr, uint32_t cdw10, uint32_t nsid, uint64_t nsze,
			 uint8_t flbas, uint8_t dps, uint8_t nmic);
/* Set Feature: a Set Features command that succeeded (its CDW10-15). */
void ctrlr_pel_set_feature(struct ctrlr *ctrlr, const struct nvme_sqe *sqe);
/* NVM Subsystem Hardware Error `code` (NVME_PEL_HWE_*) with `len` bytes of additional
 * information. */
void ctrlr_pel_hw_error(struct ctrlr *ctrlr, uint16_t code, const void *info, uint16_t len);
/* A command completed with a Media and Data Integrity status. Any thread. */
void ctrlr_pel_media_error_async(struct ctrlr *ctrlr, uint16_t status);
uint16_t ctrlr_log_pel(struct ctrlr_req *req, uint8_t **out, size_t *len);

/* ---- admin_abort.c ---- */
/* An Abort of a command still in its SQ (not fetched yet): the ring slot the command sits in.
 * CTRLR_ACL + 1 of them per controller (the Abort Command Limit). */
struct ctrlr_sq;
struct ctrlr_abort_rec {
	uint32_t busy; /* atomic: taken by an owner thread, freed by it or the admin thread */
	struct ctrlr_sq *sq;
	uint32_t slot;
	uint16_t cid;
	struct ctrlr_abort_rec *next; /* the SQ's armed list (owner thread) */
};
void ctrlr_admin_abort(struct ctrlr_req *req);
/* The SQE of ring slot `slot` was just fetched into req and an Abort is armed on its SQ or a
 * Preempt and Abort fence is up (called only while sq->abort_armed or sq->preempt_left is set):
 * true if the command was aborted (completed with Command Abort Requested or Command Aborted
 * due to Preempt and Abort, not executed). Owner thread. */
bool ctrlr_abort_fetched(struct ctrlr_req *req, uint32_t slot);
/* The SQ is being freed: its armed Aborts are dropped (their commands were never fetched).
 * Admin thread, once the owner thread stopped the SQ. */
void ctrlr_abort_sq_gone(struct ctrlr_sq *sq);
/* A command starts executing: Abort may find it by its CID from now on. Its owner thread. */
void ctrlr_abort_arm(struct ctrlr_req *req);
/* A command completes: returns the status it ends with instead of its own when an Abort
 * (Command Abort Requested) or a Preempt and Abort (Command Aborted due to Preempt and Abort)
 * marked it, else 0. Its owner thread. */
uint16_t ctrlr_abort_seal(struct ctrlr_req *req);
/* Reservation Acquire, Preempt and Abort: marks every command of ctrlr's I/O queues on
 * namespace nsid that started and has not completed; each ends with Command Aborted due to
 * Preempt and Abort (after its bdev I/O, if any, returned). Returns how many. Admin thread. */
uint32_t ctrlr_abort_preempted(struct ctrlr *ctrlr, uint32_t nsid);
/* The same for the commands of ctrlr's I/O SQs on nsid that are in the rings, not fetched yet:
 * each SQ's owner thread puts up a fence over the SQEs between its head and the tail it has
 * seen, then tells op (ctrlr_resv_preempt_put; op NULL: nobody waits). Admin thread. */
struct ctrlr_preempt_op;
void ctrlr_abort_preempt_queued(struct ctrlr *ctrlr, uint32_t nsid, struct ctrlr_preempt_op *op);
/* A SMART critical warning appeared: telemetry and persistent event log snapshots. */
void ctrlr_ext_health_event(struct ctrlr *ctrlr, uint8_t new_bits);

/* The extended logs (06h, 07h, 08h, 0Dh, 81h) for Get Log Page: allocated in *out. Status. */
uint16_t ctrlr_log_ext(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len);

#endif
