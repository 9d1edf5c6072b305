/* controller/zns/zns.h - Zoned Namespaces (NVMe ZNS Command Set 1.1, CSI 2h) as a module of the
 * controller: the per-namespace zone state machine (zones.c: pure, thread-safe under the
 * namespace's zone lock), its state file (state_file.c), and what admin/ calls (Identify, the
 * Changed Zone List log). The NVM commands reach the zone rules through struct
 * ctrlr_nvm_zoned_ops (nvm/nvm.h). Not for use outside controller/. */
#ifndef NVME_EMU_CONTROLLER_ZNS_H
#define NVME_EMU_CONTROLLER_ZNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/bdev.h"
#include "common/syncer.h"
#include "controller/core/core.h"
#include "controller/module_ids.h"
#include "controller/nvme_spec.h"

struct ctrlr;
struct ctrlr_ns;
struct ctrlr_req;

struct ctrlr_zone {
	uint64_t wp;	  /* next LBA to reserve; blocks below it are written or being written */
	uint64_t wp_done; /* every write below it ended: the write pointer the state file records */
	uint32_t gen;	  /* counts the times the zone dropped its data (reset, offline): the end of
			   * a write reserved before is not the zone's any more */
	uint8_t state;	  /* enum nvme_zone_state */
	uint8_t za;	  /* zone attributes: NVME_ZA_ZDEV */
	bool finished;	  /* Full by Zone Management Send Finish, not by writes reaching ZCAP */
	bool explicit;	  /* opened or closed by the host since it was last Empty */
	struct ctrlr_req *held; /* writes that ended above wp_done, by LBA (req->hold.next) */
};

/* The zone state file of a zoned namespace (state_file.c), mapped: the live words change with
 * the zones under the zone lock; checkpoints are written by rounds (zone_sync.c). */
struct ctrlr_zns_file {
	char *path;
	int fd;
	uint8_t *map; /* the whole file, shared */
	size_t map_len;
	volatile uint64_t *live; /* one word per zone (state_file.c has the encoding) */
	uint8_t *snap;		 /* the checkpoint a round writes: its header and words */
	size_t slot_len;
	uint64_t slot_off[2];
	uint64_t image_id;
	uint64_t seq; /* of the newest checkpoint written */
};

/* A zoned namespace's zones. Every poll group writes to it: the lock covers the states, write
 * pointers, the resource counts, the held writes and the rounds (short sections, no I/O under
 * it). */
struct ctrlr_zns {
	pthread_mutex_t lock;
	uint64_t zsze, zcap;
	unsigned int zshift; /* log2(zsze) */
	uint32_t nr_zones;
	uint32_t max_open, max_active; /* 0: no limit */
	uint32_t nr_open, nr_active;   /* zones in ZSIO/ZSEO; in ZSIO/ZSEO/ZSC */
	uint64_t optimal_open;
	uint32_t zdes_bytes; /* zone descriptor extension size (ZDES x 64); 0: none */
	uint8_t *zde;	     /* nr_zones extensions of zdes_bytes, valid where ZDEV is set (in the
			      * state file's map when there is one) */
	struct ctrlr_zns_file *file; /* the state file, or NULL */
	/* Checkpoint rounds (zone_sync.c): one at a time; requests wait in these lists. */
	bool round_busy;
	struct ctrlr_req *round_cur;			  /* waiting for the round running */
	struct ctrlr_req *round_next_head, *round_next_tail; /* waiting for the next one */
	struct syncer_job round_job;
	struct iovec round_iov;
	struct ctrlr_zone zones[];
};

/* Creates the zones of a namespace with this geometry, all Empty, or as the state file
 * geom->state_file holds them (created when missing). 0, -EINVAL (bad geometry, a state file
 * for another geometry, damaged or inconsistent: logged), -ENOMEM, -errno (the file
 * unreadable). Blocks on the file (reads it, writes a first checkpoint): admin thread. */
int ctrlr_zns_create(const struct bdev_zone_geom *geom, struct ctrlr_zns **out);
/* Frees the zones (no write is in flight or held, no round runs). */
void ctrlr_zns_destroy(struct ctrlr_zns *zns);
/* state_file.c: opens (or creates) the file, takes the zones from it and maps it; closes it.
 * 0 or -errno (the reason logged). */
int ctrlr_zns_file_open(struct ctrlr_zns *zns, const char *path, const char *data_file);
void ctrlr_zns_file_close(struct ctrlr_zns *zns);
/* Zone zi changed: its live word follows (lock held; nothing without a file). */
void ctrlr_zns_file_record(struct ctrlr_zns *zns, uint32_t zi);
/* The live words as a checkpoint, into file->snap (lock held). */
void ctrlr_zns_file_capture(struct ctrlr_zns *zns);
/* The checkpoint captured, written to its slot and synced by the syncer; job->done on the
 * syncer thread. 0 or -errno. */
int ctrlr_zns_file_write(struct ctrlr_zns *zns, syncer_done_fn done);

/* ---- the state machine (ZNS 1.1 2.1.1); each returns an NVMe status ---- */

/* A write of nlb blocks at slba (append: at the write pointer of the zone starting at slba):
 * checks the zone's state, the write pointer and the zone capacity, opens the zone implicitly
 * (closing another implicitly opened zone when the open limit is reached), advances the write
 * pointer (Full at the capacity). The LBA written in *lba, the zone's generation in *gen (for
 * ctrlr_zns_write_end). The range is inside the namespace. */
uint16_t ctrlr_zns_write_prep(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb, bool append,
			      uint64_t *lba, uint32_t *gen);
/*
 * The write reserved at [lba, +nlb) in generation gen ended: ok, or it failed or was never sent
 * (then the write pointer goes back if nothing was reserved after it; else its blocks stay
 * written, as after a failed write on any zoned drive). Writes end in zone order: the recorded
 * write pointer (wp_done) moves over every write that ended below it. Returns true when req's end
 * is recorded (it may complete); false when it waits above a write still running (it is held in
 * the zone, and released by a later call). *ready gets the held writes this end released (a list
 * through req->hold.next, each with its status in hold.status). A write of an older generation
 * (the zone was reset meanwhile) just ends. req may be NULL (a failure with nothing to hold).
 */
bool ctrlr_zns_write_end(struct ctrlr_zns *zns, struct ctrlr_req *req, uint64_t lba, uint64_t nlb,
			 uint32_t gen, bool ok, struct ctrlr_req **ready);
/* A read of [slba, +nlb): Zone Boundary Error across zones (OZCS.RAZB is 0), Zone Is Offline. */
uint16_t ctrlr_zns_read_check(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb);
/* After a read of [slba, +nlb) into iov: blocks at or past their zone's write pointer read as
 * zeroes (they are deallocated: DLFEAT 001b); Zone Is Offline if a zone went offline. */
uint16_t ctrlr_zns_read_fixup(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb,
			      uint32_t block_size, const struct iovec *iov, int iovcnt);
/* Zone Management Send action zsa on the zone starting at slba, or on every zone (all). A zone
 * that drops its data (Reset, Offline) releases the writes held in it into *ready (as
 * ctrlr_zns_write_end; ready may be NULL when none can be held). */
uint16_t ctrlr_zns_send(struct ctrlr_zns *zns, uint64_t slba, uint8_t zsa, bool all,
			struct ctrlr_req **ready);
/* Report Zones from the zone containing slba: up to max descriptors matching filter (ZRASF) in
 * out (ext: Extended Report Zones, each descriptor followed by its zone descriptor extension,
 * zeroes where ZDEV is clear); returns the Number of Zones field (partial: the descriptors
 * returned). */
uint64_t ctrlr_zns_report(struct ctrlr_zns *zns, uint64_t slba, uint8_t filter, bool partial,
			  bool ext, void *out, uint64_t max);
/* Set Zone Descriptor Extension (ZSA 10h) on the zone starting at slba with zdes_bytes of
 * data: an Empty zone becomes Closed (taking an active resource) with ZDEV set. */
uint16_t ctrlr_zns_set_zde(struct ctrlr_zns *zns, uint64_t slba, const void *data);
/* Makes the zone starting at slba Read Only or Offline, as a media failure would (its
 * resources released); *changed: it was not in that state yet. 0, -EINVAL (not a zone start,
 * or offline -> read only). */
int ctrlr_zns_fail_zone(struct ctrlr_zns *zns, uint64_t slba, bool offline, bool *changed,
			struct ctrlr_req **ready);
/* The state and the write pointer of the zone starting at slba, as Report Zones gives them.
 * 0 or -EINVAL (not a zone start). */
int ctrlr_zns_zone_get(struct ctrlr_zns *zns, uint64_t slba, uint8_t *state, uint64_t *wp);

/* ---- zone_sync.c: the order of ends, durability ---- */

/* A write of req reserved [lba, +nlb) in generation gen: its completion will go through the
 * zone's order (and a round when it must be durable). Owner thread. */
void ctrlr_zns_hold(struct ctrlr_req *req, uint64_t lba, uint64_t nlb, uint32_t gen);
/* Posts the released writes of a list (ctrlr_zns_write_end, ctrlr_zns_send) to their owner
 * threads, where they complete. Any thread. */
void ctrlr_zns_release(struct ctrlr_req *ready);
/* req (on a zoned namespace with a state file) waits for a round: the namespace's data flushed,
 * then a checkpoint of the zones as they were before the flush written and synced; then
 * cont(req, status) on req's owner thread. Owner thread. */
void ctrlr_zns_sync(struct ctrlr_req *req, void (*cont)(struct ctrlr_req *req, uint16_t st));

/* ---- Changed Zone List (per controller namespace: each controller's host reads its own) ---- */

struct ctrlr_zns_changed {
	uint32_t n;    /* zone identifiers in zid */
	bool overflow; /* more than NVME_ZNS_CHANGED_MAX since the last read */
	uint64_t zid[NVME_ZNS_CHANGED_MAX];
};

/* ---- the module ---- */

extern const struct ctrlr_module ctrlr_zns_module;

/* The module's state in a controller's namespace: the shared namespace's zones (NULL: not
 * zoned) and this controller's Changed Zone List (allocated at the first change: each
 * controller's host reads and clears its own). */
struct ctrlr_zns_ns {
	struct ctrlr_zns *zns;
	struct ctrlr_zns_changed *zchanged;
};
static inline struct ctrlr_zns_ns *ctrlr_zns_ns(const struct ctrlr_ns *ns)
{
	return ctrlr_ns_mod(ns, CTRLR_MOD_ZNS);
}
/* The namespace's zones, or NULL when it is not zoned. */
static inline struct ctrlr_zns *ctrlr_zns_of(const struct ctrlr_ns *ns)
{
	return ctrlr_zns_ns(ns)->zns;
}
/* Get Log Page BFh into buf (4096 bytes, zeroed): the list of namespace NSID for CSI 2h. Returns
 * an NVMe status (with *loc, the offending field) or SUCCESS and *size. Admin thread. */
uint16_t ctrlr_zns_log_changed(struct ctrlr_req *req, uint8_t csi, uint8_t *buf, size_t *size,
			       uint32_t *loc);
/* After a read of log BFh with RAE cleared, completed: empties the list of nsid, drops a Zone
 * Descriptor Changed notice queued meanwhile, unmasks notices, and reports a new one if another
 * namespace still has changed zones (the host reads one list per namespace). Admin thread. */
void ctrlr_zns_log_changed_read(struct ctrlr *ctrlr, uint32_t nsid);

/* Identify CNS 05h/06h with CSI 2h, 07h (per CSI) and 1Ch into buf (4096 bytes). Returns false
 * when the CNS/CSI pair is not ZNS's to answer; else true with *st set. */
bool ctrlr_zns_identify(struct ctrlr_req *req, uint8_t cns, uint8_t csi, void *buf,
			uint16_t *st);

#endif
