/* controller/ctrlr_vendor.h - what a vendor-specific command handler may call (see
 * ctrlr_vendor_register in ctrlr.h). Every function runs on the thread of the handler's queue. */
#ifndef NVME_EMU_CONTROLLER_CTRLR_VENDOR_H
#define NVME_EMU_CONTROLLER_CTRLR_VENDOR_H

#include <stddef.h>
#include <stdint.h>

#include "controller/ctrlr.h"
#include "controller/nvme_spec.h"

/* The command as fetched (a private copy: the guest cannot change it any more). */
const struct nvme_sqe *ctrlr_req_sqe(const struct ctrlr_req *req);
/* The controller the command came to. */
struct ctrlr *ctrlr_req_ctrlr(const struct ctrlr_req *req);
/* Sets Dword 0 of the CQE. */
void ctrlr_req_set_cdw0(struct ctrlr_req *req, uint32_t cdw0);

/* Copies `len` bytes to / from the command's data buffer (PRP, or SGL for I/O commands when
 * enabled). Returns an NVMe status (Data Transfer Error for memory outside the guest, Invalid
 * Field above MDTS); nothing is copied on failure. */
uint16_t ctrlr_req_copy_to_host(struct ctrlr_req *req, const void *buf, uint64_t len);
uint16_t ctrlr_req_copy_from_host(struct ctrlr_req *req, void *buf, uint64_t len);

/* Block size and count of the command's namespace (commands registered with needs_ns). */
uint32_t ctrlr_req_ns_block_size(const struct ctrlr_req *req);
uint64_t ctrlr_req_ns_num_blocks(const struct ctrlr_req *req);

/*
 * Reads LBAs [slba, slba + nlb) of the command's namespace through the bdev in chunks (at most
 * 128 KiB each), calling chunk_fn(req, data, len) for each in order, then done(req, status) once.
 * Returns an NVMe status: LBA Out of Range, Internal Error; on failure nothing was started and
 * neither callback runs. Only for commands registered with needs_ns.
 */
uint16_t ctrlr_req_read_lbas(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
			     void (*chunk_fn)(struct ctrlr_req *req, const void *data, size_t len),
			     void (*done)(struct ctrlr_req *req, uint16_t status));

/* Completes the command: exactly once per command, with an NVMe status (nvme_spec.h). */
void ctrlr_req_complete(struct ctrlr_req *req, uint16_t status);

#endif
