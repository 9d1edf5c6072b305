/* controller/ctrlr_iostat.h - a controller's I/O statistics per queue and namespace: commands by
 * class, bytes, errors by status, and latency histograms (common/lat_hist.h's log-linear buckets,
 * from the round that fetched a command to the round that completed it, evloop_clock_ns).
 *
 * Each (queue, namespace) has one block of counters, bumped by the queue's owner thread with a
 * relaxed load and store (common/counter.h) and read whole by readers: no locked instruction and
 * no lock on the data path. A queue's blocks live as long as the controller, so a queue deleted
 * and created again (every controller reset) keeps counting where it was: the counters are
 * monotonic for as long as the controller exists, as Prometheus wants them. A command counts
 * under the namespace it names (admin commands too: Identify, Format); one that names no attached
 * namespace (NSID 0 or FFFFFFFFh, a bad NSID) counts under NSID 0. */
#ifndef NVME_EMU_CONTROLLER_CTRLR_IOSTAT_H
#define NVME_EMU_CONTROLLER_CTRLR_IOSTAT_H

#include <stdint.h>

#include "common/lat_hist.h"

struct ctrlr;

/* Command classes: I/O Read; Write and Zone Append (data written); Flush; every other I/O
 * command; admin commands (the admin queue). */
enum ctrlr_io_class {
	CTRLR_IO_OTHER, /* 0: what a command table entry that says nothing counts as */
	CTRLR_IO_READ,
	CTRLR_IO_WRITE,
	CTRLR_IO_FLUSH,
	CTRLR_IO_ADMIN,
	CTRLR_IO_NR_CLASSES,
};

/* Latency histograms: reads, writes, everything else (flush, admin and the other I/O). */
enum ctrlr_lat_class {
	CTRLR_LAT_READ,
	CTRLR_LAT_WRITE,
	CTRLR_LAT_OTHER,
	CTRLR_LAT_NR,
};

/* Completions with an error, by status (NVMe Base 2.0, 4.6.1.2): the generic statuses a host
 * meets most, then one kind per remaining status code type. */
enum ctrlr_err_kind {
	CTRLR_ERR_INVALID_OPCODE,   /* 0/01h */
	CTRLR_ERR_INVALID_FIELD,    /* 0/02h */
	CTRLR_ERR_DATA_TRANSFER,    /* 0/04h */
	CTRLR_ERR_INTERNAL,	    /* 0/06h */
	CTRLR_ERR_ABORTED,	    /* 0/07h, 0/08h, 0/1Bh: Abort, SQ deletion, Preempt */
	CTRLR_ERR_INVALID_NS,	    /* 0/0Bh */
	CTRLR_ERR_LBA_RANGE,	    /* 0/80h, 0/81h: LBA out of range, capacity exceeded */
	CTRLR_ERR_NS_NOT_READY,	    /* 0/82h */
	CTRLR_ERR_RESV_CONFLICT,    /* 0/83h */
	CTRLR_ERR_GENERIC_OTHER,    /* any other generic status */
	CTRLR_ERR_COMMAND_SPECIFIC, /* SCT 1h */
	CTRLR_ERR_MEDIA,	    /* SCT 2h: media and data integrity (PI, unrecovered reads) */
	CTRLR_ERR_PATH,		    /* SCT 3h */
	CTRLR_ERR_VENDOR,	    /* SCT 7h and the reserved ones */
	CTRLR_ERR_NR,
};

struct ctrlr_iostat {
	uint64_t cmds[CTRLR_IO_NR_CLASSES]; /* completed, any status */
	uint64_t bytes_read, bytes_written; /* data of successful reads and writes */
	uint64_t errors[CTRLR_ERR_NR];
	uint64_t lat_sum_ns[CTRLR_LAT_NR];
	uint64_t lat[CTRLR_LAT_NR][LAT_HIST_WIN_BUCKETS]; /* window buckets (lat_hist.h) */
};

/* Names for labels: "read", "write", "flush", "other", "admin"; "read", "write", "other"; and
 * "invalid_opcode", "invalid_field", ... "vendor". */
const char *ctrlr_io_class_name(enum ctrlr_io_class c);
const char *ctrlr_lat_class_name(enum ctrlr_lat_class c);
const char *ctrlr_err_kind_name(enum ctrlr_err_kind k);
/* The error kind of a non-zero NVMe status (SCT << 8 | SC, DNR and More ignored). */
enum ctrlr_err_kind ctrlr_err_kind_of(uint16_t status);

/* A (queue, namespace) block read by ctrlr_iostat_foreach: `st` is a copy (each counter read
 * atomically, the block not as one), valid during the call. */
typedef void (*ctrlr_iostat_fn)(void *arg, uint16_t qid, uint32_t nsid,
				const struct ctrlr_iostat *st);
/*
 * Calls fn for every block of the controller, by qid then nsid. Returns 0 or -ENOMEM (nothing
 * called). The admin thread (the main thread), which creates and frees the blocks; never waits
 * for the owner threads.
 */
int ctrlr_iostat_foreach(const struct ctrlr *ctrlr, ctrlr_iostat_fn fn, void *arg);

/* Commands fetched from I/O or admin SQ `qid` and not completed yet; -ENOENT when the SQ does
 * not exist. Admin thread (a relaxed read of the owner's count). */
int ctrlr_get_sq_outstanding(const struct ctrlr *ctrlr, uint16_t qid, uint32_t *outstanding);

#endif
