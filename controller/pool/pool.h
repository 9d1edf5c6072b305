/* controller/pool/pool.h - Namespace Management and Attachment over a capacity pool as a module
 * of the controller (CTRLR_MOD_POOL): the pool itself (pool.c: extents, the header on the pool's
 * bdev, region bdevs; public API in ctrlr.h) and the two commands (ns_mgmt.c). It uses the core
 * and the NVM command set's formats; admin/ uses it for Identify and Format NVM. Not for use
 * outside controller/. */
#ifndef NVME_EMU_CONTROLLER_POOL_POOL_H
#define NVME_EMU_CONTROLLER_POOL_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "controller/core/core.h"
#include "controller/module_ids.h"

extern const struct ctrlr_module ctrlr_pool_module;

/* The module's state in a controller: the pool it is bound to (NULL: none; OACS bit 3 off). */
struct ctrlr_pool_ctrlr {
	struct ctrlr_ns_pool *pool;
};
static inline struct ctrlr_ns_pool *ctrlr_pool_of(const struct ctrlr *ctrlr)
{
	const struct ctrlr_pool_ctrlr *p = ctrlr_mod(ctrlr, CTRLR_MOD_POOL);

	return p ? p->pool : NULL;
}

#define CTRLR_POOL_GRANULE (1ull << 20) /* extents are whole MiB */
/* The block size of the region bdevs of the namespaces the host creates: packed, so that a
 * namespace of N logical blocks costs N x (data + metadata size) bytes, rounded up to the
 * granule (regions of 512 or 4096, in pools written before, pad each block to whole blocks). */
#define CTRLR_POOL_REGION_BS BDEV_PACKED_BLOCK_SIZE

/* A namespace of a pool; index nsid - 1 in the pool. */
struct ctrlr_pool_ns {
	uint32_t nsid; /* 0: free slot */
	uint64_t start, len; /* extent, bytes */
	uint64_t nsze;	     /* region blocks */
	uint32_t block_size; /* the region's: CTRLR_POOL_REGION_BS, or 512 / 4096 (padded) */
	uint8_t flbas, dps, nmic;
	bool attached;
	bool has_uuid;
	uint8_t uuid[16];
	struct bdev *bdev; /* region bdev, held open by the pool */
};

/* Someone waiting for the header to be written with the state as of its call. */
struct ctrlr_pool_waiter {
	void (*fn)(void *arg, int rc);
	void *arg;
	struct ctrlr_pool_waiter *next;
};

struct ctrlr_nsm_op;

struct ctrlr_ns_pool {
	struct bdev *base;
	struct evloop *loop;
	uint32_t max_nsid;
	bool format;
	uint64_t data_start, data_end; /* bytes */
	struct ctrlr_pool_ns ns[CTRLR_MAX_NAMESPACES];
	bool reserved[CTRLR_MAX_NAMESPACES]; /* operator namespaces' NSIDs */
	struct ctrlr *ctrlr;		     /* the bound controller */
	/* Header I/O: one at a time on the pool's channel. */
	struct bdev_channel *ch;
	struct evloop_watch *watch;
	struct bdev_io *io;
	struct iovec iov;
	uint8_t *buf;
	int io_state;
	uint64_t generation, writing_gen;
	struct ctrlr_pool_waiter *inflight, *waiting;
	struct ctrlr_pool_waiter format_waiter;
	bool destroy_when_idle;
	/* Creation. */
	ctrlr_ns_pool_done_fn create_done;
	void *create_arg;
	struct ctrlr_pool_ns seed[CTRLR_MAX_NAMESPACES];
	uint32_t num_seed;
	/* Namespace Management / Attachment commands, run one at a time in order. */
	struct ctrlr_nsm_op *ops_head, *ops_tail;
};

/* Best-fit extent of `len` bytes: 0 and *start, or -ENOSPC. */
int ctrlr_pool_find_extent(struct ctrlr_ns_pool *pool, uint64_t len, uint64_t *start);
/* Allocates a namespace as `req` describes (nsid 0: the lowest free one; nsze, block_size,
 * flbas, dps, nmic, attached; uuid if has_uuid): extent and region bdev. 0 and *nsid, -ENOSPC
 * (no extent large enough), -EMLINK (no NSID free, or req->nsid taken), other -errno. */
int ctrlr_pool_alloc(struct ctrlr_ns_pool *pool, const struct ctrlr_pool_ns *req,
		     uint32_t *nsid);
/* Deletes a namespace's region bdev (its controller must have released it) and its extent. */
void ctrlr_pool_free(struct ctrlr_ns_pool *pool, uint32_t nsid);
uint32_t ctrlr_pool_free_nsid(const struct ctrlr_ns_pool *pool);
bool ctrlr_pool_reserved(const struct ctrlr_ns_pool *pool, uint32_t nsid);
/* Writes the header; w->fn(w->arg, rc) once the state as of now is durable (or failed). */
void ctrlr_pool_sync(struct ctrlr_ns_pool *pool, struct ctrlr_pool_waiter *w);
/* Attaches a pool namespace to a controller (ctrlr_ns_add). nsid or -errno. */
int ctrlr_pool_ns_attach(struct ctrlr *ctrlr, const struct ctrlr_pool_ns *e);
/* ctrlr_destroy (the module's destroy hook): the controller leaves its pool. */
void ctrlr_pool_unbind(struct ctrlr *ctrlr);
/* Format NVM changed ns's format: true if ns is a namespace of ctrlr's pool, whose entry now
 * holds it (the caller syncs the header). */
bool ctrlr_pool_format_changed(struct ctrlr *ctrlr, const struct ctrlr_ns *ns);
void ctrlr_admin_ns_mgmt(struct ctrlr_req *req);
void ctrlr_admin_ns_attach(struct ctrlr_req *req);
/* Identify Controller's capacity fields (TNVMCAP, UNVMCAP) and CNS 10h-13h. */
void ctrlr_nsm_identify_ctrl(struct ctrlr *ctrlr, struct nvme_id_ctrl *id);
/* NVMCAP of namespace nsid (Identify Namespace): the bytes of the pool allocated to it when it
 * is a namespace of ctrlr's pool (true), else false. */
bool ctrlr_nsm_ns_nvmcap(struct ctrlr *ctrlr, uint32_t nsid, uint64_t *bytes);
/* CNS 10h: allocated NSIDs above `after`. */
void ctrlr_nsm_allocated_list(struct ctrlr *ctrlr, uint32_t after, uint32_t *list);
/* CNS 11h: a snapshot of an allocated namespace (attached or not) for Identify; false if the
 * NSID is not allocated. */
bool ctrlr_nsm_ns_snapshot(struct ctrlr *ctrlr, uint32_t nsid, struct ctrlr_ns *out);

#endif
