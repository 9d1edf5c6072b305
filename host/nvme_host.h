/* host/nvme_host.h - the NVMe host driver shared by the integration tests, the unit tests'
 * loopback and nvme-emu-perf: controller bring-up through the registers, admin and I/O queue
 * pairs laid out in guest memory, SQE building (PRP and SGL data pointers), CQ reaping with the
 * phase tag, doorbells (plain, or shadow doorbells with event indices, NVMe Base 2.0 section
 * 5.8 Doorbell Buffer Config) and waiting for completions.
 *
 * The queue and command logic does not know how bytes reach the device: a transport
 * (struct nvme_host_ops) reads and writes registers, rings doorbells, translates guest memory
 * and lets the device make progress while the host waits. Two transports exist: vfio-user
 * (nvme_host_init, host/nvme_host_vfu.c: BAR0 region access, mmap'd or trapped doorbells,
 * MSI-X eventfds or polling) and the unit tests' loopback (tests/unit/controller/loopback.c),
 * which calls the controller core directly.
 *
 * Threads: a host is driven by one thread, except that different I/O queue pairs may be driven
 * by different threads at once with nvme_host_sq_put/sq_ring/cq_take/cq_ring when the
 * transport's ring is thread safe (vfio-user: yes). Calls block only in the waiting helpers
 * (nvme_host_cmd, enable/disable/shutdown), bounded by h->timeout_ms.
 * Errors: int functions return 0 (or a count / cid) or a negative errno; command helpers return
 * the NVMe status of the CQE without the phase bit (0 = success, > 0 = NVMe status). */
#ifndef NVME_EMU_HOST_NVME_HOST_H
#define NVME_EMU_HOST_NVME_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/nvme_spec.h"
#include "host/vfu_client.h"

#define NVME_HOST_MAX_QUEUES 65
#define NVME_HOST_PAGE 4096u
/* PRP entries of one list page (NVME_HOST_PAGE / 8): enough for 2 MiB transfers. */
#define NVME_HOST_PRP_LIST_ENTRIES (NVME_HOST_PAGE / 8u)

struct nvme_host;

/* The host's view of one queue pair. `depth` is the SQ's entry count; `cq_depth` the CQ's
 * (0: same as depth). */
struct nvme_host_queue {
	uint16_t qid, depth, cq_vector;
	bool irq;
	uint64_t sq_iova, cq_iova;
	struct nvme_sqe *sq;
	struct nvme_cqe *cq;
	uint16_t sq_tail, sq_head, cq_head, cid;
	uint8_t cq_phase;
	bool live;
	uint16_t cq_depth;
	uint32_t sq_alloc, cq_alloc; /* entries the rings were allocated for */
	/* Shadow doorbell and event index slots of this queue (NULL: ring the doorbell). */
	volatile uint32_t *sdb_sq, *sdb_cq, *ei_sq, *ei_cq;
	uint64_t rings, rings_skipped; /* doorbell writes made / saved by event indices */
};

/* How bytes reach the device. Every op gets the host; h->tctx is the transport's context. */
struct nvme_host_ops {
	/* Controller registers (offset < 0x1000), len 4 or 8. 0 or -errno. */
	int (*reg_read)(struct nvme_host *h, uint32_t off, void *buf, uint32_t len);
	int (*reg_write)(struct nvme_host *h, uint32_t off, const void *buf, uint32_t len);
	/* Doorbell `idx` (2*qid SQ tail, 2*qid+1 CQ head) := value. 0 or -errno. */
	int (*ring)(struct nvme_host *h, uint32_t idx, uint32_t value);
	/* Local pointer for guest memory [iova, +len), or NULL. */
	void *(*mem_ptr)(struct nvme_host *h, uint64_t iova, uint64_t len);
	/* Lets the device make progress for up to timeout_ms while the host waits for a
	 * completion on q (NULL: for a register change). 0 to look again, or a negative errno
	 * when nothing more can happen (the waiting helper then gives up with -ETIMEDOUT). */
	int (*wait)(struct nvme_host *h, struct nvme_host_queue *q, int timeout_ms);
	/* Optional: doorbell coalescing (nvme_host_db_coalesce). coalesce_ok says whether the
	 * transport can (0 or -EOPNOTSUPP); flush sends the doorbell writes held in h->db_pend
	 * (0 or -errno). With coalescing on, ring appends to h->db_pend and the transport flushes
	 * before any other access and before waiting, so device-visible order is kept. */
	int (*coalesce_ok)(struct nvme_host *h);
	int (*flush)(struct nvme_host *h);
};

/* Doorbell writes held for one message while coalescing. */
#define NVME_HOST_DB_PEND 64

struct nvme_host {
	const struct nvme_host_ops *ops;
	void *tctx;
	struct vfu_client *c;	    /* the vfio-user transport's client (NULL for others) */
	uint64_t ram_iova, ram_size, brk; /* bump allocator inside guest RAM */
	uint32_t dstrd;
	volatile uint32_t *db_page; /* vfio-user: mmap'd doorbell page, or NULL (trapped) */
	bool posted;		    /* vfio-user: trapped register/doorbell writes with NO_REPLY */
	struct nvme_host_queue q[NVME_HOST_MAX_QUEUES];
	uint64_t cap;
	int timeout_ms;
	/* Shadow doorbells (nvme_host_dbbuf_enable): the two pages in guest memory. */
	bool dbbuf;
	uint64_t dbbuf_iova, eventidx_iova;
	uint32_t *dbbuf_page, *eventidx_page;
	/* Doorbell coalescing (nvme_host_db_coalesce): writes held until the next flush, and
	 * how many writes went out in how many messages. */
	bool db_coalesce;
	uint32_t db_npend;
	struct {
		uint32_t idx, value;
	} db_pend[NVME_HOST_DB_PEND];
	uint64_t db_flushed_writes, db_flushes;
};

/* ---- Transports ---- */

/* The vfio-user transport: negotiated client `c` with guest RAM mapped at [ram_iova,
 * +ram_size). Learns BAR0 (mmaps the doorbell page when the server offers it), sets COMMAND.MEM
 * and BUS MASTER, enables MSI-X with eventfds for `vectors` vectors (0: none, polling only),
 * reads CAP. Does not enable the controller. */
int nvme_host_init(struct nvme_host *h, struct vfu_client *c, uint64_t ram_iova,
		   uint64_t ram_size, uint32_t vectors);
/* Any other transport: guest memory at [ram_iova, +ram_size) reached through ops->mem_ptr.
 * Reads CAP through ops->reg_read. */
int nvme_host_init_ops(struct nvme_host *h, const struct nvme_host_ops *ops, void *tctx,
		       uint64_t ram_iova, uint64_t ram_size);

/* Allocates len bytes of guest RAM, page aligned and zeroed; returns the iova (0 if full) and
 * the local pointer in *ptr. */
uint64_t nvme_host_alloc(struct nvme_host *h, uint64_t len, void **ptr);
/* Local pointer for [iova, +len) of guest memory, or NULL. */
void *nvme_host_ptr(struct nvme_host *h, uint64_t iova, uint64_t len);

/* ---- Controller ---- */

uint32_t nvme_host_reg_read32(struct nvme_host *h, uint32_t off); /* all-ones on error */
uint64_t nvme_host_reg_read64(struct nvme_host *h, uint32_t off);
int nvme_host_reg_write32(struct nvme_host *h, uint32_t off, uint32_t v);
int nvme_host_reg_write64(struct nvme_host *h, uint32_t off, uint64_t v);

/* CC.EN=0 and wait for RDY=0; then admin queues of `depth` entries, CC with IOSQES/IOCQES,
 * EN=1, wait RDY=1. Returns 0, -ETIMEDOUT, or -EIO if CSTS.CFS. */
int nvme_host_enable(struct nvme_host *h, uint16_t depth);
/* The same with CC.CSS css (0: NVM only; 6: every I/O command set the controller supports, ZNS
 * included). */
int nvme_host_enable_css(struct nvme_host *h, uint16_t depth, uint8_t css);
/* CC.EN=0, wait RDY=0; every I/O queue and the shadow doorbells are forgotten. */
int nvme_host_disable(struct nvme_host *h);
/* CC.SHN=normal, wait CSTS.SHST=complete. */
int nvme_host_shutdown(struct nvme_host *h);

/* ---- Queues and commands ---- */

/* Raw doorbell write: `value` to doorbell index idx (2*qid tail, 2*qid+1 head), nothing
 * checked (hostile tests use it for bad values). */
int nvme_host_ring(struct nvme_host *h, uint32_t idx, uint32_t value);
/* Doorbell coalescing: while on, doorbell writes are held (up to NVME_HOST_DB_PEND, then sent)
 * and nvme_host_db_flush sends them in one message; vfio-user: one REGION_WRITE_MULTI of the
 * trapped doorbells, which needs trapped doorbells and a server that offered write_multiple.
 * Everything else the host does (registers, waits) flushes first. For a host driven by one
 * thread. 0, or -EOPNOTSUPP when the transport cannot; turning it off flushes. */
int nvme_host_db_coalesce(struct nvme_host *h, bool on);
/* Sends the held doorbell writes (nothing when none are held). 0 or -errno. */
int nvme_host_db_flush(struct nvme_host *h);

/* Copies sqe (its CID as the caller set it) into qid's SQ at the tail and advances the tail,
 * without ringing. 0, -ENOENT (queue not live) or -EBUSY (SQ full). */
int nvme_host_sq_put(struct nvme_host *h, uint16_t qid, const struct nvme_sqe *sqe);
/* Tells the controller the SQ tail: through the shadow doorbell when enabled (ringing the
 * doorbell only when the event index asks for it), else the doorbell. 0 or -errno. */
int nvme_host_sq_ring(struct nvme_host *h, uint16_t qid);
/* Takes the next CQE of qid if its phase tag says it is new, without ringing the head
 * doorbell. Updates the host's SQ head from the CQE. 1 taken, 0 none. */
int nvme_host_cq_take(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe);
/* Tells the controller the CQ head (shadow doorbell aware, as sq_ring). 0 or -errno. */
int nvme_host_cq_ring(struct nvme_host *h, uint16_t qid);

/* Submits without waiting: assigns the next CID, puts the SQE, rings unless no_ring. Returns
 * the cid or -errno (-EBUSY: SQ full). */
int nvme_host_submit(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, bool no_ring);
/* Takes one CQE of qid if present and rings the head. 1, 0 or -errno. */
int nvme_host_reap(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe);
/* Submits and waits up to h->timeout_ms for its CQE (other commands' completions are skipped).
 * Returns the status (>= 0), or -errno (-ETIMEDOUT). cqe may be NULL. */
int nvme_host_cmd(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, struct nvme_cqe *cqe);

/* Data pointers. build_prps: PRP1/PRP2 for [iova, +len); a PRP list page (allocated from guest
 * RAM, to be given back by the caller through h->brk) when it spans more than two pages.
 * build_prps_list: the same with the caller's list page (list/list_iova), for data paths that
 * preallocate one per request. build_sgl: one SGL Data Block descriptor (PSDT 01) for the
 * contiguous [iova, +len). */
int nvme_host_build_prps(struct nvme_host *h, struct nvme_sqe *sqe, uint64_t iova, uint32_t len);
int nvme_host_build_prps_list(struct nvme_sqe *sqe, uint64_t iova, uint32_t len, uint64_t *list,
			      uint64_t list_iova);
void nvme_host_build_sgl(struct nvme_sqe *sqe, uint64_t iova, uint32_t len);
/* A Read/Write-family SQE: opcode, nsid, slba, nlb (1-based), no data pointer yet. */
void nvme_host_rw_sqe(struct nvme_sqe *sqe, uint8_t opc, uint32_t nsid, uint64_t slba,
		      uint32_t nlb);

/* ---- Admin helpers; return the NVMe status or -errno ---- */

int nvme_host_identify(struct nvme_host *h, uint8_t cns, uint32_t nsid, void *buf4k);
/* Create I/O CQ qid (interrupts on `vector` if irq) and SQ qid, `depth` entries each. */
int nvme_host_create_io_queues(struct nvme_host *h, uint16_t qid, uint16_t depth, bool irq,
			       uint16_t vector);
/* The same with different SQ and CQ sizes. */
int nvme_host_create_io_queues2(struct nvme_host *h, uint16_t qid, uint16_t sq_depth,
				uint16_t cq_depth, bool irq, uint16_t vector);
int nvme_host_delete_io_queues(struct nvme_host *h, uint16_t qid);
int nvme_host_set_num_queues(struct nvme_host *h, uint16_t nsq, uint16_t ncq, uint32_t *dw0);
/* Doorbell Buffer Config (admin 0x7C) with a shadow doorbell page and an event index page;
 * on success every I/O queue created afterwards (and those live now) uses them. */
int nvme_host_dbbuf_enable(struct nvme_host *h);
/* Read/Write of nlb blocks at slba on nsid through a PRP-described buffer at iova (PRP list
 * built in guest RAM when it spans more than two pages), waiting for the completion. */
int nvme_host_rw(struct nvme_host *h, uint16_t qid, uint8_t opc, uint32_t nsid, uint64_t slba,
		 uint32_t nlb, uint64_t iova, uint32_t len);

#endif
