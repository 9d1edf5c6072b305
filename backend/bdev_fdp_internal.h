/* backend/bdev_fdp_internal.h - the placement bdev's state, shared by its two files:
 * bdev_fdp.c (the owner thread's data path: placement, the map's group commit, reclaim units,
 * garbage collection, flushes; the bdev ops) and bdev_fdp_create.c (creation and the load of
 * the layout). Not for use outside them. */
#ifndef NVME_EMU_BACKEND_BDEV_FDP_INTERNAL_H
#define NVME_EMU_BACKEND_BDEV_FDP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/bdev_vbdev.h"
#include "common/evloop.h"

#define FDP_MAGIC "NVMEEMU-FDP-MAP1"
#define FDP_VERSION 1
#define FDP_SPARE_EXTRA 2u   /* spare RUs besides one per handle: the GC's and one more */
#define FDP_GC_BATCH 64	     /* blocks per GC copy */
#define FDP_GC_INFLIGHT 4    /* GC copies in flight */
#define FDP_NONE UINT64_MAX

struct fdp_sb {
	char magic[16];
	uint32_t version;
	uint32_t block_size;
	uint32_t nruh;
	uint32_t pad;
	uint64_t ru_blocks;
	uint64_t nru;
	uint64_t num_blocks; /* exposed */
	uint64_t map_off;
	uint64_t map_blocks;
	uint64_t data_off;
	/* Statistics as of the last host Flush (written before that flush of the base): a
	 * restart goes on from them (what was counted after that Flush may be lost). */
	uint64_t host_bytes, media_bytes, erased_bytes;
};
#define FDP_SB_GEOM offsetof(struct fdp_sb, host_bytes) /* what must match at load */

enum fdp_ru_state { FDP_RU_FREE, FDP_RU_OPEN, FDP_RU_CLOSED };

struct fdp_ru {
	uint8_t state;
	uint16_t owner;	   /* the handle (nruh: the GC) it was opened for */
	uint64_t wp;	   /* blocks handed out (OPEN) */
	uint64_t valid;	   /* map entries pointing here */
	uint32_t writers;  /* data writes in flight into it */
	uint32_t readers;  /* reads in flight from it */
	uint64_t free_seq; /* FREE: the map batch that carries the change that freed it */
};

enum fdp_op_kind { FDP_OP_WRITE, FDP_OP_READ, FDP_OP_MAP, FDP_OP_FLUSH, FDP_OP_GC_READ,
		   FDP_OP_GC_WRITE, FDP_OP_LOAD, FDP_OP_SB };

/* The owner thread's load of the layout at creation (one base io at a time). */
enum fdp_load_phase { FDP_LOAD_SB, FDP_LOAD_FORMAT, FDP_LOAD_SB_WRITE, FDP_LOAD_MAP };

struct fdp;

/* One base io of the owner thread. */
struct fdp_op {
	struct fdp *f;
	enum fdp_op_kind kind;
	struct bdev_io *upper; /* WRITE, READ, FLUSH (NULL: an internal flush) */
	uint64_t lba, phys, n;
	uint64_t covers;   /* FLUSH: the map batch it makes durable */
	uint64_t *lbas;	   /* GC: the LBAs of the blocks copied */
	void *buf;	   /* MAP, GC: owned */
	struct iovec *iov; /* WRITE, READ: a slice of the upper io's, owned */
	struct iovec one;
	struct bdev_io *bio; /* bdev_io_size(base) bytes after this struct */
};

/* The own part of an upper io's driver_ctx. */
struct fdp_io {
	struct fdp_io *next; /* inbox, then the owner's queues */
	struct bdev_io *io;
	uint64_t placed;  /* WRITE: blocks placed so far */
	uint32_t pending; /* base ios in flight */
	int status;
	bool fua;
};

struct fdp {
	struct bdev_module_ops ops;
	struct bdev *bdev, *base;
	struct bdev_placement_geom geom;
	uint32_t bs;
	uint64_t map_off, map_blocks, data_off, epb; /* entries per map block */
	uint64_t *map;	/* per exposed LBA: physical block + 1, 0 unmapped */
	uint64_t *rmap; /* per physical block: its LBA or FDP_NONE */
	struct fdp_ru *ru;
	uint64_t *cur;	/* per handle (and [nruh]: GC): its OPEN RU or FDP_NONE */
	/* Shared with other threads. */
	struct fdp_io *inbox;	   /* __atomic */
	uint8_t *update;	   /* per handle: an RUH Update asked (__atomic) */
	uint64_t *ruamw;	   /* per handle: blocks left in its RU (__atomic) */
	struct bdev_placement_stats st; /* __atomic fields */
	bool stop;		   /* __atomic */
	int wake;		   /* eventfd */
	pthread_t thread;
	/* Creation (asynchronous): the owner loads the layout on its own channel and reports to
	 * the creating thread's loop (created_msg); a failed creation's owner exits and reports
	 * that (exit_msg), after which it is joined and everything freed. A deletion ends the
	 * same way: the owner drains its ios, exits and reports (exit_msg) on this loop, which
	 * must outlive the bdev (the daemon's main loop). */
	struct evloop *loop;
	bdev_create_cb done;
	void *done_arg;
	struct fdp *next_pending; /* main thread: creations not reported yet */
	bool creating;		  /* __atomic: not registered yet (its exit is reported) */
	bool deleting;		  /* __atomic: bdev_delete stopped it (its exit is reported) */
	bool cancelled;		  /* main thread */
	bool loading;		  /* owner */
	bool load_failed;	  /* owner (create_rc, create_msg say why) */
	enum fdp_load_phase load_phase;
	uint64_t load_next; /* FORMAT, MAP: the next map block */
	bool fresh;
	int create_rc;
	char create_msg[256];
	struct evloop_msg created_msg, exit_msg;
	/* Owner thread. */
	struct bdev_channel *base_ch;
	struct fdp_io *qhead, *qtail; /* ios not started (FIFO) */
	uint32_t ops_inflight;
	/* Map group commit. */
	uint8_t *dirty;
	uint64_t *dirty_list, ndirty;
	struct fdp_io *waiters, *batch_waiters;
	bool waiters_fua;
	uint32_t batch_inflight;
	int batch_status;
	uint64_t map_seq_next, map_seq_done, durable_seq;
	bool flush_inflight; /* an internal flush */
	/* Host flushes: the superblock (statistics) written first, one write at a time so an
	 * older one never lands last; sb_batch waits for the write in flight, sb_waiters for the
	 * next. */
	struct fdp_io *sb_batch, *sb_waiters;
	bool sb_inflight;
	/* FREE RUs, and those of them whose freeing is not durable yet (the smallest map batch
	 * among them): the per-wake checks need no scan of every RU. */
	uint64_t nfree, npending, min_pending_seq;
	/* GC. */
	uint64_t gc_victim, gc_scan;
	uint32_t gc_inflight;
	uint64_t gc_moved, gc_first_lba; /* of the victim so far */
	/* Reclaimed units (Media Reallocated), a ring under ev_lock: written once per unit by
	 * the owner, read by the controller's log. */
	pthread_mutex_t ev_lock;
	struct bdev_placement_event ev[BDEV_PLACEMENT_EVENTS];
	uint64_t nev;
};

static inline uint64_t fdp_ru_of(const struct fdp *f, uint64_t phys)
{
	return phys / f->geom.ru_blocks;
}

/* ---- bdev_fdp.c ---- */
extern const struct bdev_module_ops fdp_ops;
/* The owner thread's base ios: op_new allocates one (with its bdev_io), op_submit sends it on
 * the owner's channel, its completion dispatched by kind; op_free frees it. */
struct fdp_op *fdp_op_new(struct fdp *f, enum fdp_op_kind kind);
void fdp_op_free(struct fdp_op *op);
void fdp_op_submit(struct fdp_op *op, enum bdev_io_type type, uint64_t off, uint64_t n,
		   uint32_t flags);
/* The owner thread: loads the layout (fdp_load_step), then serves ios until stopped. */
void *fdp_main(void *arg);
void fdp_free(struct fdp *f);

/* ---- bdev_fdp_create.c ---- */
/* The superblock this bdev's parameters and statistics give. */
void fdp_sb_make(const struct fdp *f, struct fdp_sb *sb);
/* Owner: the next io of the load, or the end (created_msg posted to the creator). */
void fdp_load_step(struct fdp *f);
void fdp_load_done(struct fdp *f, struct fdp_op *op, int status);
/* Creator's loop: the layout loaded (register and report), or the owner exited after a failure
 * (join, report, free). */
void fdp_created_msg(void *arg);
void fdp_exit_msg(void *arg);

#endif
