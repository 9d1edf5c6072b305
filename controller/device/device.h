/* controller/device/device.h - what the device does for itself, as one module of the controller
 * (CTRLR_MOD_DEVICE, module.c): the SMART / Health model (health.c) and its endurance group
 * (endgrp.c), firmware slots (fw.c), the Persistent Event Log (pel.c), Telemetry
 * (telemetry.c), and the background operations Device Self-test (selftest.c) and Sanitize
 * (sanitize.c) with their bdev request (bg.c). It uses the core and the command sets below it
 * (nvm/, zns/); admin/ uses it for Identify and Get Log Page. Not for use outside controller/.
 * Admin thread unless said otherwise. */
#ifndef NVME_EMU_CONTROLLER_DEVICE_DEVICE_H
#define NVME_EMU_CONTROLLER_DEVICE_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/syncer.h"
#include "controller/core/core.h"
#include "controller/module_ids.h"
#include "controller/nvme_spec.h"

/* Firmware slots and the image being downloaded (fw.c). */
#define CTRLR_FW_SLOTS 3
#define CTRLR_FW_GRAN 4096u	 /* FWUG: 4 KiB units */
#define CTRLR_FW_MAX (32u << 20) /* largest image */
struct ctrlr_fw {
	char rev[CTRLR_FW_SLOTS][9]; /* "" for an empty slot */
	uint8_t active;		     /* 1..3 */
	uint8_t next;		     /* activated at the next reset (0: none) */
	uint8_t *stage;
	size_t stage_len, stage_cap;
	bool overlap;
	uint8_t have[CTRLR_FW_MAX / CTRLR_FW_GRAN / 8]; /* units received */
};

/* The SMART / Health model and what an operator injected (health.c). */
struct ctrlr_health {
	uint16_t temp_k;	/* the modelled composite temperature */
	uint16_t forced_temp_k; /* 0: the model's */
	int16_t forced_spare;	/* -1: 100 % (nothing wears here) */
	int16_t forced_used;	/* -1: from the bytes written */
	uint64_t last_us, last_cmds; /* the previous evaluation */
	uint64_t media_errors;	     /* injected ranges' blocks read since (counted as errors) */
	uint8_t critical_warning;    /* SMART Critical Warning bits raised */
	/* Endurance group 1 (endgrp.c): its critical warning bits as last evaluated, and whether
	 * it has an entry in the Endurance Group Event Aggregate log. */
	uint8_t eg_warning;
	bool eg_aggregate;
};
#define CTRLR_HEALTH_IDLE_K 313	   /* 40 C */
#define CTRLR_HEALTH_LOAD_MAX_K 30 /* at most +30 K under load */
#define CTRLR_HEALTH_SPARE_THRESH 10
/* Rated endurance: this many writes of the controller's whole capacity. */
#define CTRLR_HEALTH_RATED_WRITES 3000
/* The model's clock (ctrlr_tick): every second while commands flow or the temperature has not
 * settled, every 10 s otherwise. */
#define CTRLR_HEALTH_TICK_US 1000000ull
#define CTRLR_HEALTH_IDLE_TICK_US 10000000ull

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
	/* The operations that use the request, in priority order (module.c sets them: sanitize,
	 * then self-test): each takes its next step if it has one waiting, and says so. */
	bool (*steps[2])(struct ctrlr *ctrlr);
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
	 * it is replaced by buf's events (by the syncer) when it grows past twice the log. */
	char *path;
	int fd;
	size_t file_len;
	bool file_failed; /* a write failed (logged once); the log goes on in memory */
	/* Durability (pel.c): events counted since the controller was made: added to the log,
	 * written to the file (behind `added` only while a replacement is wanted or running),
	 * synced. An admin command ends once every event added before its end is synced: its
	 * completion waits in waiters (req->hold, its mark in hold.lba) for the syncer's job
	 * (one at a time: an fdatasync of a duplicate of fd, or the file replaced whole with the
	 * snapshot in `snap`), whose end comes back as msg. */
	uint64_t added, written, synced;
	bool replace_wanted, busy;
	struct ctrlr_req *wait_head, *wait_tail;
	struct syncer_job job;
	struct iovec iov[2];
	uint8_t *snap;
	uint64_t job_mark;
	size_t job_len; /* a replacement: the new file's length */
	struct evloop_msg msg;
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

/* The module's state in a controller. */
/* Flexible Data Placement (fdp.c). The reclaim units, their write pointers and the byte
 * counters of log 22h are the namespaces' placement bdevs' (backend/bdev_fdp.c); the rest is the
 * admin thread's. */
#define CTRLR_FDP_EVENTS 63 /* a 4 KiB log: 64-byte header and events */
struct ctrlr_fdp {
	uint16_t nruh; /* 0: no FDP */
	uint64_t runs;
	bool enabled;
	uint8_t events[CTRLR_FDP_MAX_RUH]; /* per placement handle: event types enabled (bits) */
	/* Host events (log 23h, LSP 0): the newest CTRLR_FDP_EVENTS, oldest first. */
	struct nvme_fdp_event ev[CTRLR_FDP_EVENTS];
	uint32_t nev;
};

/* The controller's state file (state.c): the features saved with SV, the write in flight and
 * the commands waiting for the next one (through req->hold). */
#define CTRLR_SAVED_FEATS 32
struct ctrlr_saved_feat {
	uint8_t fid, sub; /* sub: what else names the value (Temperature Threshold: TMPSEL, THSEL) */
	uint32_t value;
};
struct ctrlr_saved_feats {
	uint32_t n;
	struct ctrlr_saved_feat f[CTRLR_SAVED_FEATS];
};
/* A section of the state file a module above device/ keeps (virt/): its name and what writes
 * it. */
#define CTRLR_STATE_SECTIONS 4
struct json_object;
struct ctrlr_state_section {
	const char *name;
	struct json_object *(*encode)(struct ctrlr *ctrlr);
};
struct ctrlr_dev_state {
	char *path; /* NULL: nothing outlives the daemon */
	struct ctrlr_saved_feats feats;
	/* The file as it was read (NULL: none), for the sections of the modules above. */
	struct json_object *loaded;
	struct ctrlr_state_section sections[CTRLR_STATE_SECTIONS];
	uint32_t nr_sections;
	bool busy;
	struct ctrlr_req *cur, *next_head, *next_tail;
	char *text;
	struct iovec iov;
	struct syncer_job job;
	struct evloop_msg msg;
};

struct ctrlr_device {
	struct ctrlr_health health;
	struct ctrlr_fdp fdp;
	struct ctrlr_fw fw;
	struct ctrlr_dev_state state;
	struct ctrlr_bg_io bg;
	struct ctrlr_dst dst;
	struct ctrlr_san san;
	struct ctrlr_telemetry tel;
	struct ctrlr_pel pel;
	/* A notable event (a warning, a failed operation): telemetry takes its snapshot
	 * (module.c sets it to ctrlr_telemetry_event). */
	void (*notable)(struct ctrlr *ctrlr, const char *reason);
};

extern const struct ctrlr_module ctrlr_device_module;

static inline struct ctrlr_device *ctrlr_dev(const struct ctrlr *ctrlr)
{
	return ctrlr_mod(ctrlr, CTRLR_MOD_DEVICE);
}

static inline void ctrlr_device_notable(struct ctrlr *ctrlr, const char *reason)
{
	struct ctrlr_device *d = ctrlr_dev(ctrlr);

	if (d->notable)
		d->notable(ctrlr, reason);
}

/* ---- bg.c ---- */
/* The background request's buffers (creation) and their release (destruction). */
int ctrlr_bg_init(struct ctrlr *ctrlr);
void ctrlr_bg_fini(struct ctrlr *ctrlr);
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

/* ---- admin_selftest.c ---- */
void ctrlr_admin_self_test(struct ctrlr_req *req);
void ctrlr_dst_step(struct ctrlr *ctrlr);
/* The background request's next step of a self-test in progress, if one is: true. */
bool ctrlr_dst_bg_step(struct ctrlr *ctrlr);
/* Ends the operation in progress (if any) with `result` (enum nvme_dst_res). */
void ctrlr_dst_abort(struct ctrlr *ctrlr, uint8_t result);
size_t ctrlr_log_self_test(struct ctrlr *ctrlr, uint8_t *buf);
uint16_t ctrlr_dst_edstt(const struct ctrlr *ctrlr);

/* ---- admin_sanitize.c ---- */
void ctrlr_admin_sanitize(struct ctrlr_req *req);
void ctrlr_san_step(struct ctrlr *ctrlr);
size_t ctrlr_log_sanitize(struct ctrlr *ctrlr, uint8_t *buf);
uint32_t ctrlr_sanicap(const struct ctrlr *ctrlr);
/* Admin commands a sanitize operation (or its failure) refuses: the status, or 0. (I/O
 * commands meet the controller's io_gate, which the operation closes.) */
uint16_t ctrlr_san_admin_check(struct ctrlr_req *req);
/* The background request's next step of a running sanitize, if one runs: true. */
bool ctrlr_san_bg_step(struct ctrlr *ctrlr);
/* A sanitize waits for the commands that took a namespace before it to end (a namespace grace
 * period, admin references); their end calls ctrlr_san_ns_idle (any thread). */
bool ctrlr_san_draining(const struct ctrlr *ctrlr);
void ctrlr_san_ns_idle(struct ctrlr *ctrlr);
/* The controller joined its subsystem (it follows a sanitize running or failed there) or left
 * subsystem cs (the followers of an operation it ran fail it; a runner it followed re-checks its
 * drain). */
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
/* The device module's gate for every admin command: its completion waits for the events logged
 * before it to be synced (pel.c). */
void ctrlr_pel_admin_begin(struct ctrlr_req *req);
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

/* The logs of the device (06h, 07h, 08h, 0Dh, 81h) for Get Log Page: allocated in *out.
 * Status. */
uint16_t ctrlr_log_device(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len);

/* ---- health.c ---- */
/* Resets the model (controller creation). */
void ctrlr_health_init(struct ctrlr *ctrlr);
/* The current temperature, spare and percentage used. */
uint16_t ctrlr_health_temp(const struct ctrlr *ctrlr);
uint8_t ctrlr_health_spare(const struct ctrlr *ctrlr);
uint8_t ctrlr_health_used(const struct ctrlr *ctrlr);
/* Re-evaluates the model and the critical warnings, raising SMART events for warnings that
 * appear (enabled by Asynchronous Event Configuration). */
void ctrlr_health_eval(struct ctrlr *ctrlr);
/* The clock (the module's tick): microseconds until the next evaluation. */
uint64_t ctrlr_health_tick(struct ctrlr *ctrlr);
/* The temperature against the thresholds (Feature 04h): the critical warning, its event. */
void ctrlr_health_check_temperature(struct ctrlr *ctrlr);
/* The SMART / Health log (Base 2.0 5.16.1.3) of the controller (ns NULL) or of a namespace:
 * its length. */
size_t ctrlr_log_smart(struct ctrlr *ctrlr, struct ctrlr_ns *ns, uint8_t *buf);


/* ---- state.c: the controller's state file (ctrlr_config.state_file) ---- */
/* Reads the firmware slots and the saved features (a missing file: nothing; a bad one is refused,
 * logged, nothing taken: -EINVAL). 0 or -errno. Creation, after ctrlr_fw_init. */
int ctrlr_state_load(struct ctrlr *ctrlr);
void ctrlr_state_fini(struct ctrlr *ctrlr);
/* The saved value of feature fid (sub: the part of it, 0 for most): true and *value, or false. */
bool ctrlr_saved_feat_get(const struct ctrlr *ctrlr, uint8_t fid, uint8_t sub, uint32_t *value);
/* Keeps value as the saved one (in memory: ctrlr_state_save writes it). */
void ctrlr_saved_feat_put(struct ctrlr *ctrlr, uint8_t fid, uint8_t sub, uint32_t value);
void ctrlr_saved_feat_del(struct ctrlr *ctrlr, uint8_t fid, uint8_t sub);
/* Writes the state as it is now (the firmware slots, the saved features) to the file, durably,
 * by the syncer thread, then done(req, status) on the admin thread: Internal Error if it could
 * not be written (the caller undoes its change). Without a file: done at once. Admin thread. */
void ctrlr_state_save(struct ctrlr_req *req, void (*done)(struct ctrlr_req *req, uint16_t st));
/* Sections of the file a module above device/ keeps (virt/: the secondary controllers). get:
 * what the file held under `name` when the controller was made (NULL: nothing; the module checks
 * it; the object stays the state's until fini). take: from now on every write holds `name` as
 * encode(ctrlr) returns it (a new object; NULL: no memory, the write fails); a section no module
 * took is written back as it was read. take: 0 or -ENOSPC (CTRLR_STATE_SECTIONS taken). Admin
 * thread, before the host may change anything. */
struct json_object *ctrlr_state_section_get(struct ctrlr *ctrlr, const char *name);
int ctrlr_state_section_take(struct ctrlr *ctrlr, const char *name,
			     struct json_object *(*encode)(struct ctrlr *ctrlr));

/* ---- endgrp.c: the controller's one Endurance Group (ENDGID 1), holding every namespace it
 * has; its warnings are the health model's (spare, reliability). ---- */
#define CTRLR_ENDGID 1
/* Re-evaluates the group's critical warnings (from ctrlr_health_eval): a warning that appears
 * and Feature 18h enables adds the group to the Event Aggregate log, with its notice. */
void ctrlr_endgrp_eval(struct ctrlr *ctrlr);
/* Endurance Group Information (09h) of `endgid`: its length, 0 for an unknown group. */
size_t ctrlr_log_endgrp(struct ctrlr *ctrlr, uint16_t endgid, uint8_t *buf);
/* Endurance Group Event Aggregate (0Fh): its length; read without RAE, the entries go. */
size_t ctrlr_log_endgrp_events(struct ctrlr *ctrlr, uint8_t *buf, bool rae);
/* Identify CNS 19h: the groups from `from` on. */
void ctrlr_identify_endgrp_list(struct ctrlr *ctrlr, uint16_t from, uint16_t *list);

/* ---- fdp.c: Flexible Data Placement in the endurance group ---- */
void ctrlr_fdp_init(struct ctrlr *ctrlr);
bool ctrlr_fdp_supported(const struct ctrlr *ctrlr);
/* Logs 20h-23h (LSI: the endurance group): the length, 0 with *st set on an error. */
size_t ctrlr_log_fdp(struct ctrlr_req *req, uint8_t lid, uint8_t *buf, size_t cap, uint16_t *st);
/* Features 1Dh/1Eh: status. */
uint16_t ctrlr_feat_fdp_get(struct ctrlr_req *req, uint8_t fid, bool dflt, uint32_t *cdw0);
/* *changed: Feature 1Dh turned FDP on or off, or 1Eh changed a handle's events (the state
 * file keeps both: ctrlr_state_save). */
uint16_t ctrlr_feat_fdp_set(struct ctrlr_req *req, uint8_t fid, bool *changed);
bool ctrlr_fdp_enabled(const struct ctrlr *ctrlr);
/* Sets the enable state (a state file read, a save undone). Admin thread. */
void ctrlr_fdp_set_enabled(struct ctrlr *ctrlr, bool on);
/* Feature 1Eh's event types of placement handle ph (bits: 0 RU Not Fully Written, 1 Invalid
 * Placement Identifier, 2 Media Reallocated), for the state file; set: -EINVAL for other
 * bits, a handle past the configuration ignored. Admin thread. */
uint8_t ctrlr_fdp_events_of(const struct ctrlr *ctrlr, uint16_t ph);
int ctrlr_fdp_set_events(struct ctrlr *ctrlr, uint16_t ph, uint8_t bits);
void ctrlr_admin_directive_recv(struct ctrlr_req *req);
void ctrlr_admin_directive_send(struct ctrlr_req *req);
/* A write of `bytes` (I/O thread, the module's io_write_place): its DTYPE/DSPEC checked, the
 * bdev placement handle it goes to in *placement. Status. */
uint16_t ctrlr_fdp_write(struct ctrlr_req *req, uint64_t bytes, uint16_t *placement);
/* A namespace attached while FDP is enabled must be on a placement bdev of the configuration's
 * geometry (ns_attach): 0 or -EINVAL. */
int ctrlr_fdp_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts);
extern const struct ctrlr_cmd ctrlr_fdp_io_cmds[256];

/* ---- fw.c: slots at creation / destruction; a Controller Level Reset activates the committed
 * image; the Firmware Slot log; the two commands. ---- */
/* At creation, after the state file: the active slot (or the one committed for the next reset,
 * which a power cycle activates) is the running firmware. */
void ctrlr_fw_power_on(struct ctrlr *ctrlr);
void ctrlr_fw_init(struct ctrlr *ctrlr);
void ctrlr_fw_fini(struct ctrlr *ctrlr);
void ctrlr_fw_reset(struct ctrlr *ctrlr);
size_t ctrlr_log_fw_slot(struct ctrlr *ctrlr, uint8_t *buf);
void ctrlr_admin_fw_download(struct ctrlr_req *req);
void ctrlr_admin_fw_commit(struct ctrlr_req *req);

#endif
