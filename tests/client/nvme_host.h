/* tests/client/nvme_host.h - a small NVMe host driver over the vfio-user test
 * client: it lays queues and buffers out in the client's guest RAM, enables
 * the controller through BAR0, submits commands, rings doorbells (trapped
 * region writes, or stores into the mmap'd doorbell page when the server
 * offers one) and reaps completions by polling the CQ or waiting for its
 * MSI-X eventfd. Single-threaded; for integration tests and the perf tool.
 * Functions return 0 / a count, or a negative errno; NVMe statuses are
 * returned as the CQE status field without the phase bit (0 = success). */
#ifndef NVME_EMU_TESTS_CLIENT_NVME_HOST_H
#define NVME_EMU_TESTS_CLIENT_NVME_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/nvme_spec.h"
#include "tests/client/vfu_client.h"

#define NVME_HOST_MAX_QUEUES 65
#define NVME_HOST_PAGE 4096u

struct nvme_host_queue {
	uint16_t qid, depth, cq_vector;
	bool irq;
	uint64_t sq_iova, cq_iova;
	struct nvme_sqe *sq;
	struct nvme_cqe *cq;
	uint16_t sq_tail, sq_head, cq_head, cid;
	uint8_t cq_phase;
	bool live;
};

struct nvme_host {
	struct vfu_client *c;
	uint64_t ram_iova, ram_size, brk; /* bump allocator inside guest RAM */
	uint32_t dstrd;
	volatile uint32_t *db_page; /* mmap'd doorbell page, or NULL (trap) */
	bool posted;                /* ring trapped doorbells with NO_REPLY */
	struct nvme_host_queue q[NVME_HOST_MAX_QUEUES];
	uint64_t cap;
	int timeout_ms;
};

/* Negotiated client `c` with guest RAM mapped at [ram_iova, +ram_size). Sets up
 * MSI-X eventfds for `vectors` vectors (0: none, polling only), COMMAND.MEM and
 * BUS MASTER. Does not enable the controller. */
int nvme_host_init(struct nvme_host *h, struct vfu_client *c, uint64_t ram_iova,
		   uint64_t ram_size, uint32_t vectors);
/* Allocates len bytes of guest RAM, page aligned; returns the iova (0 if full)
 * and the local pointer in *ptr. */
uint64_t nvme_host_alloc(struct nvme_host *h, uint64_t len, void **ptr);

/* CC.EN=0 and wait for RDY=0; then admin queues of `depth` entries, CC with
 * IOSQES/IOCQES, EN=1, wait RDY=1. Returns 0, -ETIMEDOUT, or -EIO if CSTS.CFS. */
int nvme_host_enable(struct nvme_host *h, uint16_t depth);
int nvme_host_disable(struct nvme_host *h);
/* CC.SHN=normal, wait CSTS.SHST=complete. */
int nvme_host_shutdown(struct nvme_host *h);

uint32_t nvme_host_reg_read32(struct nvme_host *h, uint32_t off);
int nvme_host_reg_write32(struct nvme_host *h, uint32_t off, uint32_t v);

/* Writes `value` to doorbell index idx (2*qid tail, 2*qid+1 head). */
int nvme_host_ring(struct nvme_host *h, uint32_t idx, uint32_t value);

/* Submits without waiting: fills cid, copies the SQE, advances the tail and
 * rings the doorbell unless no_ring. Returns the cid or -EBUSY (SQ full). */
int nvme_host_submit(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, bool no_ring);
/* Reaps one CQE of qid if present (updates head + doorbell). 1, 0 or -errno. */
int nvme_host_reap(struct nvme_host *h, uint16_t qid, struct nvme_cqe *cqe);
/* Submits and waits up to h->timeout_ms for its CQE (polling the CQ, and the
 * vector's eventfd when interrupts are on). Returns the status (>= 0), or
 * -ETIMEDOUT. cqe may be NULL. */
int nvme_host_cmd(struct nvme_host *h, uint16_t qid, struct nvme_sqe *sqe, struct nvme_cqe *cqe);

/* Admin helpers; return the NVMe status or -errno. */
int nvme_host_identify(struct nvme_host *h, uint8_t cns, uint32_t nsid, void *buf4k);
int nvme_host_create_io_queues(struct nvme_host *h, uint16_t qid, uint16_t depth, bool irq,
			       uint16_t vector);
int nvme_host_delete_io_queues(struct nvme_host *h, uint16_t qid);
int nvme_host_set_num_queues(struct nvme_host *h, uint16_t nsq, uint16_t ncq, uint32_t *dw0);
/* Read/Write of nlb blocks at slba on nsid through a PRP-described buffer at
 * iova (PRP list built in guest RAM when it spans more than two pages). */
int nvme_host_rw(struct nvme_host *h, uint16_t qid, uint8_t opc, uint32_t nsid, uint64_t slba,
		 uint32_t nlb, uint64_t iova, uint32_t len);
/* Fills SQE data pointer fields for [iova, +len) with PRP1/PRP2/list. */
int nvme_host_build_prps(struct nvme_host *h, struct nvme_sqe *sqe, uint64_t iova, uint32_t len);

#endif
