/* tests/unit/controller/loopback.h - a synchronous loopback transport for the controller core,
 * driven by the project's one NVMe host driver (host/nvme_host.h) through a host transport of
 * its own: guest memory is a plain buffer, interrupts are counted, queue operations and admin
 * messages are queued and run by lb_pump(), register writes and doorbells go straight to the
 * core's entry points. Single-threaded: the test thread is the admin and every owner thread. */
#ifndef NVME_EMU_TESTS_UNIT_CONTROLLER_LOOPBACK_H
#define NVME_EMU_TESTS_UNIT_CONTROLLER_LOOPBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/bdev.h"
#include "controller/ctrlr.h"
#include "controller/nvme_spec.h"
#include "host/nvme_host.h"

#define LB_MEM_BASE 0x100000ull /* guest address of the first byte of guest memory */
#define LB_MEM_SIZE (8u << 20)
#define LB_MAX_QUEUES 16
#define LB_MAX_VECTORS 64
#define LB_MAX_THUNKS 256
#define LB_NO_CQE 0xffffu

struct lb_thunk {
	void (*fn)(void *arg);
	void *arg;
};

struct lb {
	struct ctrlr *ctrlr;
	uint8_t *mem;
	uint8_t regs[NVME_REG_END];
	uint32_t irqs[LB_MAX_VECTORS];
	uint32_t irq_holds; /* interrupts the core held (hold_irq calls) */
	struct lb_thunk thunks[LB_MAX_THUNKS];
	unsigned int nthunks;
	struct ctrlr_sq *sqs[LB_MAX_QUEUES];
	struct ctrlr_cq *cqs[LB_MAX_QUEUES];
	struct nvme_host h; /* the host driver: its q[] is the host's view of every queue */
	struct {
		struct bdev *bdev;
		struct bdev_channel *ch;
	} chans[8];
	int fail_create;      /* next create_* op returns this -errno at once (then resets) */
	int fail_create_done; /* next create_* completes with this status */
	bool hold_queue_ops;  /* leave queue ops queued until lb_release_queue_ops() */
	struct lb_thunk held_ops[LB_MAX_THUNKS];
	unsigned int nheld;
	unsigned int dbbuf_changes;
	bool dbbuf_on;
	bool flr_done;
	bool destroyed;
	uint64_t hole_start, hole_len; /* guest memory the transport refuses to map (len 0: none) */
	int pins;		       /* pins the core holds (mem_pin - mem_unpin) */
	unsigned int visits;	       /* visit_queues calls */
};

/* Creates the transport and a controller with `cfg` (NULL: defaults below). 0 or -errno. */
int lb_init(struct lb *lb, const struct ctrlr_config *cfg);
/* Resets the controller through FLR, destroys it and the channels, frees the memory. */
void lb_fini(struct lb *lb);
/* Runs queued queue operations, admin messages and bdev completions until nothing is left. */
void lb_pump(struct lb *lb);
void lb_release_queue_ops(struct lb *lb);

/* Guest memory. */
uint64_t lb_alloc(struct lb *lb, uint64_t bytes); /* 4 KiB aligned, zeroed */
void *lb_ptr(struct lb *lb, uint64_t gaddr);

/* Registers as the guest sees them; writes notify the core. */
void lb_reg_write32(struct lb *lb, uint32_t off, uint32_t v);
void lb_reg_write64(struct lb *lb, uint32_t off, uint64_t v);
uint32_t lb_reg_read32(struct lb *lb, uint32_t off);
uint64_t lb_reg_read64(struct lb *lb, uint32_t off);

/* AQA/ASQ/ACQ for `entries`-deep admin queues, then CC (EN, MPS 0, IOSQES 6, IOCQES 4). Returns
 * CSTS after the write. */
uint32_t lb_enable(struct lb *lb, uint32_t entries);
/* CC.EN 1 -> 0 and pump; returns CSTS. */
uint32_t lb_disable(struct lb *lb);

/* The host driver's helpers over the loopback. */
/* Writes an SQE at the host tail of queue `qid` (sets its CID), rings the tail. The cid, or
 * LB_NO_CQE when the host refused (queue not live, SQ full). */
uint16_t lb_submit(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe);
/* Rings qid's SQ tail doorbell with `value` without adding an SQE (for invalid values). */
void lb_ring_sq(struct lb *lb, uint16_t qid, uint32_t value);
/* Takes the next CQE of qid if its phase says it is new (then rings the CQ head unless
 * no_ring). Returns true if one was taken. */
bool lb_reap(struct lb *lb, uint16_t qid, struct nvme_cqe *cqe, bool no_ring);
/* submit + pump + reap: returns the status (without phase; DNR included) or LB_NO_CQE. */
uint16_t lb_cmd(struct lb *lb, uint16_t qid, struct nvme_sqe *sqe, uint32_t *cdw0);

/* Number of Queues, Create I/O CQ + SQ of `entries` with `vector` (IEN as given). Status. */
uint16_t lb_create_qpair(struct lb *lb, uint16_t qid, uint32_t entries, uint16_t vector, bool ien);
/* Creates a malloc bdev and attaches it as namespace nsid. Returns nsid or -errno. */
int lb_add_malloc_ns(struct lb *lb, const char *name, uint32_t nsid, uint64_t blocks,
		     uint32_t block_size);

/* Default controller config used by lb_init(NULL). */
void lb_default_config(struct ctrlr_config *cfg);

/* An SQE with opcode and nsid set, the rest zero. */
struct nvme_sqe lb_sqe(uint8_t opc, uint32_t nsid);

#endif
