/* controller/nvm/resv_state.h - reservations (NVMe Base 2.0 section 8.19): the state machine
 * (resv_state.c: pure functions, unit-tested) and its Persist Through Power Loss file. The
 * commands, the access words and the notifications are resv.c's, declared in nvm.h. Not for
 * use outside controller/.
 *
 * Threads: a shared namespace and its reservation state belong to the admin thread, which all
 * controllers of one target share (the main thread). Reservation commands arrive on I/O queues:
 * the owner thread reads the command's data, posts the request to the admin thread
 * (ops->admin_post), which runs the state machine, then posts it back (ops->io_post) to
 * complete. The I/O path never reads the state: each controller's namespace carries an atomic
 * access word (ctrlr_ns.io_block) that the admin thread recomputes after every change, so the
 * conflict check is one atomic load. */
#ifndef NVME_EMU_CONTROLLER_NVM_RESV_STATE_H
#define NVME_EMU_CONTROLLER_NVM_RESV_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/nvme_spec.h"

/* Registrants (hosts) per namespace: a further Register fails with Internal Error (the spec names
 * no status for a full registrant table). */
#define CTRLR_RESV_MAX_REGS 64

/* Bits of the access word (ctrlr_resv_access): core/core.h's CTRLR_ACCESS_* (a reservation is
 * what refuses a host reads or writes). */
#define CTRLR_RESV_BLOCK_READ (1u << 0)
#define CTRLR_RESV_BLOCK_WRITE (1u << 1)

struct ctrlr_resv_reg {
	uint8_t hostid[16]; /* a 64-bit host identifier in bytes 0-7, the rest zero */
	uint64_t rkey;
};

/* A namespace's reservation state (section 8.19). For the All Registrants types every registrant
 * holds the reservation and `holder` is unused. */
struct ctrlr_resv {
	uint32_t gen;	/* PRGEN */
	uint8_t rtype;	/* enum nvme_resv_type, 0: no reservation */
	uint8_t holder[16];
	bool ptpl;	/* PTPLS: registrations and the reservation persist */
	bool ptpl_capable; /* a state file is configured (RESCAP bit 0) */
	uint32_t nregs;
	struct ctrlr_resv_reg regs[CTRLR_RESV_MAX_REGS];
};

/* Notifications a state change produces: hosts and the log page type each gets. */
struct ctrlr_resv_events {
	uint32_t n;
	struct {
		uint8_t hostid[16];
		uint8_t type; /* enum nvme_resv_notify_type */
	} e[CTRLR_RESV_MAX_REGS + 1];
};

/* The command's data (Register: CRKEY, NRKEY; Acquire: CRKEY, PRKEY; Release: CRKEY). */
struct ctrlr_resv_keys {
	uint64_t crkey;
	uint64_t nkey; /* NRKEY or PRKEY */
};

/* ---- The state machine (pure: no controller, no thread; section 8.19) ---- */
void ctrlr_resv_init(struct ctrlr_resv *r, bool ptpl_capable);
/* Each returns an NVMe status; on success the state changed as the spec says and `ev` lists the
 * notifications to send (ev->n is reset first). `persist` is set when something the PTPL file
 * holds changed. */
uint16_t ctrlr_resv_register(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			     const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			     bool *persist);
uint16_t ctrlr_resv_acquire(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			    const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			    bool *persist);
uint16_t ctrlr_resv_release(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			    const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			    bool *persist);
/* The registrant of hostid or NULL; whether hostid holds the reservation. */
const struct ctrlr_resv_reg *ctrlr_resv_find(const struct ctrlr_resv *r, const uint8_t hostid[16]);
bool ctrlr_resv_is_holder(const struct ctrlr_resv *r, const uint8_t hostid[16]);
/* CTRLR_RESV_BLOCK_* bits for commands of host `hostid` (Figure "Command Behavior in the
 * Presence of a Reservation"). */
uint32_t ctrlr_resv_access(const struct ctrlr_resv *r, const uint8_t hostid[16]);

/* ---- PTPL state file (JSON; see README "Reservations") ---- */
/* The state as the file holds it (malloc'ed text; NULL without memory). resv.c has it written by
 * the syncer (common/syncer.h), replacing the file whole. */
char *ctrlr_resv_encode(const struct ctrlr_resv *r);
/* Reads `path` into r (a missing file is an empty state, 0). 0, -EINVAL (bad content), -errno. */
int ctrlr_resv_load(struct ctrlr_resv *r, const char *path);

/* ---- the state shared by daemons on many hosts (resv_remote.c keeps it in a store) ---- */
/* The last changes the shared record carries, so a daemon learns the notifications it owes its
 * hosts for each change it did not make (and which were Preempt and Abort). */
#define CTRLR_RESV_CHANGES 16
struct ctrlr_resv_change {
	uint64_t seq;
	bool abort; /* a Preempt and Abort: the preempted hosts' commands end */
	struct ctrlr_resv_events ev;
};
struct ctrlr_resv_record {
	struct ctrlr_resv r;
	uint64_t seq; /* changes made since the record was created */
	uint32_t nchanges; /* the newest last */
	struct ctrlr_resv_change changes[CTRLR_RESV_CHANGES];
};
/* Appends a change (seq is record->seq + 1, which becomes the record's). */
void ctrlr_resv_record_add(struct ctrlr_resv_record *rec, bool abort,
			   const struct ctrlr_resv_events *ev);
/* The record as text (malloc'ed; NULL without memory): the whole state, PTPL or not. */
char *ctrlr_resv_record_encode(const struct ctrlr_resv_record *rec);
/* Parses text (len bytes; 0 bytes: a record nobody wrote, the empty state). 0 or -EINVAL. */
int ctrlr_resv_record_decode(struct ctrlr_resv_record *rec, const char *text, size_t len);

#endif
