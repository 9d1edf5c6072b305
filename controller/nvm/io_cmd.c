/* controller/nvm/io_cmd.c - NVM command set I/O commands (NVM Command Set 1.0 section 3): Read,
 * Write (FUA), Flush (one or all namespaces), Write Zeroes (DEAC), Dataset Management
 * (deallocate), Compare, Verify, Write Uncorrectable, against the namespace's bdev (Copy: copy.c;
 * formats with metadata and protection information: md.c). Logical block i is bdev blocks
 * [i * bpl, (i + 1) * bpl) of the format. Owner thread of the SQ. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/ctrlr_iostat.h"
#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"

static void ctrlr_io_rw(struct ctrlr_req *req);
static void ctrlr_io_flush(struct ctrlr_req *req);
static void ctrlr_io_write_zeroes(struct ctrlr_req *req);
static void ctrlr_io_dsm(struct ctrlr_req *req);
static void ctrlr_io_compare(struct ctrlr_req *req);
static void ctrlr_io_verify(struct ctrlr_req *req);
static void ctrlr_io_write_uncor(struct ctrlr_req *req);

/* Opcode-indexed: the NVM command set's I/O commands for the core's dispatch (core/req.c: the
 * namespace, reservation access and gate checks come first) and the Commands Supported and
 * Effects log. Access groups (NVM Command Set 2.0, Reservations): reads are Read, Compare,
 * Verify; writes are Write, Write Uncorrectable, Write Zeroes, Dataset Management, Copy, Flush.
 * In the statistics (ctrlr_iostat.h) Read, Write and Flush have classes of their own. */
#define NVM_CMD(fn, eff, acc) {.exec = (fn), .effects = NVME_CMD_EFFECTS_CSUPP | (eff), .access = (acc)}
const struct ctrlr_cmd ctrlr_nvm_io_cmds[256] = {
    [NVME_CMD_FLUSH] = {.exec = ctrlr_io_flush, .effects = NVME_CMD_EFFECTS_CSUPP,
			.access = CTRLR_ACCESS_WRITE, .any_nsid = true, .stat = CTRLR_IO_FLUSH},
    [NVME_CMD_WRITE] = {.exec = ctrlr_io_rw,
			.effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC,
			.access = CTRLR_ACCESS_WRITE, .stat = CTRLR_IO_WRITE},
    [NVME_CMD_READ] = {.exec = ctrlr_io_rw, .effects = NVME_CMD_EFFECTS_CSUPP,
		       .access = CTRLR_ACCESS_READ, .stat = CTRLR_IO_READ},
    [NVME_CMD_COMPARE] = NVM_CMD(ctrlr_io_compare, 0, CTRLR_ACCESS_READ),
    [NVME_CMD_WRITE_ZEROES] = NVM_CMD(ctrlr_io_write_zeroes, NVME_CMD_EFFECTS_LBCC,
				      CTRLR_ACCESS_WRITE),
    [NVME_CMD_DSM] = NVM_CMD(ctrlr_io_dsm, NVME_CMD_EFFECTS_LBCC, CTRLR_ACCESS_WRITE),
    [NVME_CMD_VERIFY] = NVM_CMD(ctrlr_io_verify, 0, CTRLR_ACCESS_READ),
    [NVME_CMD_WRITE_UNCOR] = NVM_CMD(ctrlr_io_write_uncor, NVME_CMD_EFFECTS_LBCC,
				     CTRLR_ACCESS_WRITE),
    [NVME_CMD_COPY] = NVM_CMD(ctrlr_io_copy, NVME_CMD_EFFECTS_LBCC, CTRLR_ACCESS_WRITE),
    /* Reservations (resv.c): no reservation refuses them. */
    [NVME_CMD_RESV_REGISTER] = NVM_CMD(ctrlr_io_resv, 0, 0),
    [NVME_CMD_RESV_REPORT] = NVM_CMD(ctrlr_io_resv, 0, 0),
    [NVME_CMD_RESV_ACQUIRE] = NVM_CMD(ctrlr_io_resv, 0, 0),
    [NVME_CMD_RESV_RELEASE] = NVM_CMD(ctrlr_io_resv, 0, 0),
};

/* Reads of blocks marked by Write Uncorrectable fail with Unrecovered Read Error, the first
 * such LBA in the error log entry. */
static uint16_t ctrlr_io_check_uncor(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	uint64_t bad;

	if (!ctrlr_uncor_overlaps(ctrlr_nvm_ns(req->ns)->uncor, slba, nlb, &bad))
		return NVME_SC_SUCCESS;
	req->error_lba = bad;
	return NVME_SC_UNRECOVERED_READ;
}

/* Blocks written (Write, Write Zeroes, deallocation) are no longer uncorrectable. */
static uint16_t ctrlr_io_written(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	return ctrlr_uncor_clear(ctrlr_nvm_ns(req->ns)->uncor, slba, nlb) ? NVME_SC_INTERNAL : NVME_SC_SUCCESS;
}

static void ctrlr_io_fail(struct ctrlr_req *req, uint16_t st)
{
	if (st && !req->error_lba)
		req->error_lba = ctrlr_sqe_slba(&req->sqe);
	ctrlr_req_complete(req, st);
}

/* ---- Read / Write ---- */

static void ctrlr_io_rw_done(struct ctrlr_req *req, int status)
{
	bool write = req->sqe.cdw0.bits.opc == NVME_CMD_WRITE;
	uint16_t st = ctrlr_bdev_status(status, write);

	if (!st && write)
		st = ctrlr_io_written(req, ctrlr_sqe_slba(&req->sqe),
				      (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1);
	else if (!st)
		st = ctrlr_nvm_zoned_read_done(req->ns, ctrlr_sqe_slba(&req->sqe),
					    (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1, req->iov,
					    req->iovcnt);
	if (!st) {
		if (write) {
			CTRLR_SQ_STAT_ADD(req->sq, host_write_cmds, 1);
			CTRLR_SQ_STAT_ADD(req->sq, bytes_written, req->data_len);
		} else {
			CTRLR_SQ_STAT_ADD(req->sq, host_read_cmds, 1);
			CTRLR_SQ_STAT_ADD(req->sq, bytes_read, req->data_len);
		}
	}
	ctrlr_io_fail(req, st);
}

static void ctrlr_io_rw(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	bool write = sqe->cdw0.bits.opc == NVME_CMD_WRITE;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	uint64_t nlb = (sqe->cdw12 & NVME_RW_NLB_MASK) + 1;
	struct bdev_io *bio = req->bio;
	uint16_t st;

	if (ctrlr_io_has_md(req))
		return ctrlr_io_md_rw(req);
	st = ctrlr_io_check_range(req, slba, nlb);
	if (!st && !write)
		st = ctrlr_nvm_zoned_read(req, slba, nlb);
	if (!st && !write)
		st = ctrlr_io_check_uncor(req, slba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	st = ctrlr_req_map_data(req, nlb * req->lbaf->ds, write ? CTRLR_DMA_READ : CTRLR_DMA_WRITE);
	/* Zone write pointer rules once the data is mapped (a bad pointer moves no zone). */
	if (!st && write)
		st = ctrlr_nvm_zoned_write(req, slba, nlb);
	/* Data placement (a module's io_write_place: device/fdp.c): DTYPE/DSPEC checked, the
	 * bdev's placement handle chosen. */
	bio->placement = 0;
	if (!st && write && req->sq->ctrlr->io_write_place)
		st = req->sq->ctrlr->io_write_place(req, nlb * req->lbaf->ds, &bio->placement);
	if (st)
		return ctrlr_io_fail(req, st);
	/* No metadata: the data of consecutive blocks is contiguous on the bdev (zero copy). */
	bio->type = write ? BDEV_IO_WRITE : BDEV_IO_READ;
	bio->flags = write && (sqe->cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
	bio->offset_blocks = ctrlr_req_bdev_blocks(req, slba);
	bio->num_blocks = ctrlr_req_bdev_blocks(req, nlb);
	bio->iov = req->iov;
	bio->iovcnt = req->iovcnt;
	st = ctrlr_req_submit_bio(req, ctrlr_io_rw_done);
	if (st)
		ctrlr_io_fail(req, st);
}

/* ---- Flush ---- */

static void ctrlr_io_flush_next(struct ctrlr_req *req);

/* One namespace flushed (st): the next one, or the end. */
static void ctrlr_io_flush_ns_done(struct ctrlr_req *req, uint16_t st)
{
	if (st || req->sqe.nsid != NVME_NSID_ALL)
		return ctrlr_req_complete(req, st);
	req->ns = NULL;
	ctrlr_io_flush_next(req);
}

static void ctrlr_io_flush_done(struct ctrlr_req *req, int status)
{
	ctrlr_io_flush_ns_done(req, ctrlr_bdev_status(status, true));
}

static void ctrlr_io_flush_submit(struct ctrlr_req *req)
{
	uint16_t st;

	/* A zoned namespace flushes its data and then makes its zone state durable. */
	if (ctrlr_nvm_zoned_flush(req, ctrlr_io_flush_ns_done))
		return;
	memset(req->bio, 0, sizeof(*req->bio));
	req->bio->type = BDEV_IO_FLUSH;
	st = ctrlr_req_submit_bio(req, ctrlr_io_flush_done);
	if (st)
		ctrlr_req_complete(req, st);
}

/* NSID FFFFFFFFh (VWC bits 2:1 = 11b): flush every namespace, one after the other. */
static void ctrlr_io_flush_next(struct ctrlr_req *req)
{
	while (req->step.index < CTRLR_MAX_NAMESPACES) {
		struct ctrlr_ns *ns = ctrlr_req_ns_lookup(req, ++req->step.index);

		if (ns) {
			req->ns = ns;
			return ctrlr_io_flush_submit(req);
		}
	}
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

static void ctrlr_io_flush(struct ctrlr_req *req)
{
	if (req->sqe.nsid != NVME_NSID_ALL)
		return ctrlr_io_flush_submit(req);
	req->step.index = 0;
	ctrlr_io_flush_next(req);
}

/* ---- Write Zeroes ---- */

static void ctrlr_io_write_zeroes_done(struct ctrlr_req *req, int status)
{
	uint16_t st = ctrlr_bdev_status(status, true);
	const struct nvme_sqe *sqe = &req->sqe;

	if (!st)
		st = ctrlr_io_written(req, ctrlr_sqe_slba(sqe), (sqe->cdw12 & NVME_RW_NLB_MASK) + 1);
	ctrlr_io_fail(req, st);
}

static void ctrlr_io_write_zeroes(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	uint64_t nlb = (sqe->cdw12 & NVME_RW_NLB_MASK) + 1;
	struct bdev_io *bio = req->bio;
	uint16_t st;

	st = ctrlr_io_check_range(req, slba, nlb);
	if (!st)
		st = ctrlr_nvm_zoned_write(req, slba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	/* PRACT on a protected format: the blocks get generated protection information. */
	if (req->fmt.f.pi && (CTRLR_PRINFO(sqe->cdw12) & CTRLR_PRINFO_PRACT))
		return ctrlr_io_md_write_zeroes(req);
	memset(bio, 0, sizeof(*bio));
	/* DEAC: deallocating reads back as zeroes here (DLFEAT), so it is a valid way to zero. Zeroed
	 * metadata reads back as the escape tuple on protected formats (io_md.c). */
	if ((sqe->cdw12 & NVME_WZ_DEAC) && req->ns->has_unmap && !(sqe->cdw12 & NVME_RW_FUA)) {
		req->step.ranges[0].offset_blocks = ctrlr_req_bdev_blocks(req, slba);
		req->step.ranges[0].num_blocks = ctrlr_req_bdev_blocks(req, nlb);
		bio->type = BDEV_IO_UNMAP;
		bio->ranges = req->step.ranges;
		bio->nranges = 1;
	} else {
		bio->type = BDEV_IO_WRITE_ZEROES;
		bio->flags = (sqe->cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
		bio->offset_blocks = ctrlr_req_bdev_blocks(req, slba);
		bio->num_blocks = ctrlr_req_bdev_blocks(req, nlb);
	}
	st = ctrlr_req_submit_bio(req, ctrlr_io_write_zeroes_done);
	if (st)
		ctrlr_io_fail(req, st);
}

/* ---- Dataset Management ---- */

/* Copies between buf and bytes [off, +len) of the command's mapped data, in either direction. */
static void ctrlr_io_dsm_next(struct ctrlr_req *req);

static void ctrlr_io_dsm_done(struct ctrlr_req *req, int status)
{
	uint16_t st = ctrlr_bdev_status(status, true);

	/* Deallocated blocks read back as zeroes (DLFEAT): no longer uncorrectable. */
	for (uint32_t i = 0; !st && i < req->bio->nranges; i++)
		st = ctrlr_io_written(req, req->bio->ranges[i].offset_blocks / req->lbaf->bpl,
				      req->bio->ranges[i].num_blocks / req->lbaf->bpl);
	if (st)
		return ctrlr_io_fail(req, st);
	ctrlr_io_dsm_next(req);
}

/* Deallocates the ranges in batches of CTRLR_DSM_BATCH; each range is read from guest memory
 * once, copied, and checked before use. */
static void ctrlr_io_dsm_next(struct ctrlr_req *req)
{
	uint32_t n = 0;
	uint16_t st;

	while (req->step.index < req->step.count && n < CTRLR_DSM_BATCH) {
		struct nvme_dsm_range r;

		ctrlr_req_iov_read(req, (uint64_t)req->step.index * sizeof(r), &r, sizeof(r));
		req->step.index++;
		if (r.nlb == 0)
			continue;
		st = ctrlr_io_check_range(req, r.slba, r.nlb);
		if (st)
			return ctrlr_req_complete(req, st);
		req->step.ranges[n].offset_blocks = ctrlr_req_bdev_blocks(req, r.slba);
		req->step.ranges[n].num_blocks = ctrlr_req_bdev_blocks(req, r.nlb);
		n++;
	}
	if (n == 0)
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	memset(req->bio, 0, sizeof(*req->bio));
	req->bio->type = BDEV_IO_UNMAP;
	req->bio->ranges = req->step.ranges;
	req->bio->nranges = n;
	st = ctrlr_req_submit_bio(req, ctrlr_io_dsm_done);
	if (st)
		ctrlr_req_complete(req, st);
}

static void ctrlr_io_dsm(struct ctrlr_req *req)
{
	uint32_t nr = (req->sqe.cdw10 & NVME_DSM_NR_MASK) + 1;
	uint16_t st;

	st = ctrlr_req_map_data(req, (uint64_t)nr * sizeof(struct nvme_dsm_range), CTRLR_DMA_READ);
	if (st)
		return ctrlr_req_complete(req, st);
	/* Only deallocate has an effect; the other attributes are hints (NVM 3.2.3). */
	if (!(req->sqe.cdw11 & NVME_DSM_AD) || !req->ns->has_unmap)
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	req->step.index = 0;
	req->step.count = nr;
	ctrlr_io_dsm_next(req);
}

/* ---- chunked range reads (Verify, Compare, vendor commands) ---- */

static void ctrlr_io_range_submit(struct ctrlr_req *req);

static void ctrlr_io_range_finish(struct ctrlr_req *req, uint16_t st)
{
	free(req->step.buf);
	req->step.buf = NULL;
	req->step.range_done(req, st);
}

static void ctrlr_io_range_chunk_done(struct ctrlr_req *req, int status)
{
	uint16_t st = ctrlr_bdev_status(status, false);

	/* Zoned namespaces have format 0 only: logical blocks are the bdev's blocks. */
	if (!st)
		st = ctrlr_nvm_zoned_read_done(req->ns, req->step.lba, req->bio->num_blocks,
					    &req->step.biov, 1);
	if (st)
		return ctrlr_io_range_finish(req, st);
	uint64_t n = req->bio->num_blocks / req->lbaf->bpl;
	uint32_t ds = req->lbaf->ds, stride = req->lbaf->stride;
	char *b = req->step.buf;

	/* Only the data goes to chunk_fn: squeeze out each block's metadata and padding. */
	for (uint64_t i = 1; stride != ds && i < n; i++)
		memmove(b + i * ds, b + i * stride, ds);
	req->step.chunk_fn(req, req->step.buf, n * req->lbaf->ds);
	req->step.lba += n;
	req->step.remaining -= n;
	if (!req->step.remaining)
		return ctrlr_io_range_finish(req, NVME_SC_SUCCESS);
	ctrlr_io_range_submit(req);
}

static void ctrlr_io_range_submit(struct ctrlr_req *req)
{
	uint32_t per = CTRLR_CHUNK_BYTES / req->lbaf->stride;
	uint64_t n = req->step.remaining < per ? req->step.remaining : per;
	uint16_t st;

	memset(req->bio, 0, sizeof(*req->bio));
	req->step.biov.iov_base = req->step.buf;
	req->step.biov.iov_len = n * req->lbaf->stride;
	req->bio->type = BDEV_IO_READ;
	req->bio->offset_blocks = ctrlr_req_bdev_blocks(req, req->step.lba);
	req->bio->num_blocks = ctrlr_req_bdev_blocks(req, n);
	req->bio->iov = &req->step.biov;
	req->bio->iovcnt = 1;
	st = ctrlr_req_submit_bio(req, ctrlr_io_range_chunk_done);
	if (st)
		ctrlr_io_range_finish(req, st);
}

uint16_t ctrlr_io_read_range(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
			     void (*chunk_fn)(struct ctrlr_req *req, const void *data, size_t len),
			     void (*range_done)(struct ctrlr_req *req, uint16_t status))
{
	uint16_t st = ctrlr_io_check_range(req, slba, nlb);

	if (!st)
		st = ctrlr_nvm_zoned_read(req, slba, nlb);
	if (!st)
		st = ctrlr_io_check_uncor(req, slba, nlb);
	if (st)
		return st;
	/* A bounce buffer for commands that read without a host buffer: rare commands, so it is
	 * allocated per command rather than kept per request; zeroed, as a bdev may leave a read
	 * buffer as it is (the null bdev). */
	req->step.buf = calloc(1, CTRLR_CHUNK_BYTES);
	if (!req->step.buf)
		return NVME_SC_INTERNAL;
	req->step.lba = slba;
	req->step.remaining = nlb;
	req->step.chunk_fn = chunk_fn;
	req->step.range_done = range_done;
	ctrlr_io_range_submit(req);
	return NVME_SC_SUCCESS;
}

/* ---- Verify ---- */

static void ctrlr_io_verify_chunk(struct ctrlr_req *req, const void *data, size_t len)
{
	/* Verify reads the media and checks it is readable; no data goes to the host. */
	CTRLR_SQ_STAT_ADD(req->sq, bytes_read, len);
}

static void ctrlr_io_verify_done(struct ctrlr_req *req, uint16_t st)
{
	if (!st)
		CTRLR_SQ_STAT_ADD(req->sq, host_read_cmds, 1);
	ctrlr_io_fail(req, st);
}

static void ctrlr_io_verify(struct ctrlr_req *req)
{
	uint64_t nlb = (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;

	if (ctrlr_io_has_md(req))
		return ctrlr_io_md_verify(req);
	st = ctrlr_io_read_range(req, ctrlr_sqe_slba(&req->sqe), nlb, ctrlr_io_verify_chunk,
				 ctrlr_io_verify_done);
	if (st)
		ctrlr_req_complete(req, st);
}

/* ---- Compare ---- */

static void ctrlr_io_compare_chunk(struct ctrlr_req *req, const void *data, size_t len)
{
	uint64_t off = (req->step.lba - ctrlr_sqe_slba(&req->sqe)) * req->lbaf->ds;
	const char *d = data;

	/* A first mismatch is remembered in step.crc; later chunks are still read. */
	for (int i = 0; i < req->iovcnt && len && !req->step.crc; i++) {
		size_t il = req->iov[i].iov_len;

		if (off >= il) {
			off -= il;
			continue;
		}
		size_t c = il - off < len ? il - off : len;

		if (memcmp((char *)req->iov[i].iov_base + off, d, c))
			req->step.crc = 1;
		d += c;
		len -= c;
		off = 0;
	}
}

static void ctrlr_io_compare_done(struct ctrlr_req *req, uint16_t st)
{
	if (!st && req->step.crc)
		st = NVME_SC_COMPARE_FAILED;
	if (!st)
		CTRLR_SQ_STAT_ADD(req->sq, host_read_cmds, 1);
	ctrlr_io_fail(req, st);
}

static void ctrlr_io_compare(struct ctrlr_req *req)
{
	uint64_t slba = ctrlr_sqe_slba(&req->sqe);
	uint64_t nlb = (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;

	if (ctrlr_io_has_md(req))
		return ctrlr_io_md_compare(req);
	st = ctrlr_io_check_range(req, slba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	st = ctrlr_req_map_data(req, nlb * req->lbaf->ds, CTRLR_DMA_READ);
	if (st)
		return ctrlr_io_fail(req, st);
	req->step.crc = 0;
	st = ctrlr_io_read_range(req, slba, nlb, ctrlr_io_compare_chunk, ctrlr_io_compare_done);
	if (st)
		ctrlr_req_complete(req, st);
}

/* ---- Write Uncorrectable ---- */

/* Marks the blocks invalid: reads of them fail with Unrecovered Read Error until they are written
 * (NVM 3.3.7). The marks live in memory: a restart of the daemon forgets them. */
static void ctrlr_io_write_uncor(struct ctrlr_req *req)
{
	uint64_t slba = ctrlr_sqe_slba(&req->sqe);
	uint64_t nlb = (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;
	int rc;

	st = ctrlr_io_check_range(req, slba, nlb);
	if (!st) /* on a zoned namespace, a write at the write pointer (ZNS 1.1 3.4) */
		st = ctrlr_nvm_zoned_write(req, slba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	rc = ctrlr_uncor_add(ctrlr_nvm_ns(req->ns)->uncor, slba, nlb);
	if (rc == -ENOSPC)
		return ctrlr_io_fail(req, NVME_SC_CAP_EXCEEDED);
	if (rc)
		return ctrlr_io_fail(req, NVME_SC_INTERNAL);
	CTRLR_SQ_STAT_ADD(req->sq, host_write_cmds, 1);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}
