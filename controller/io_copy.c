/* controller/io_copy.c - the Copy command (NVM Command Set 1.0 3.3.1): source ranges of one
 * namespace copied to a contiguous destination in the same namespace, through a bounce buffer,
 * one chunk read then written at a time. Descriptor format 0h only (OCFS bit 0): formats 1h-3h
 * are for 64-bit guard protection information and cross-namespace copies. Blocks move whole
 * (data and metadata as stored); on a protected format PRINFOR/PRINFOW processing is not done,
 * so a Copy asking for it is refused. Owner thread of the SQ. */
#include <stdlib.h>
#include <string.h>

#include "controller/ctrlr_internal.h"
#include "controller/pi.h"
#include "controller/zns.h"

/* The command's state, allocated once it is valid: the host's source ranges, copied and checked
 * before any block moves (the guest cannot change them under us), and the bounce buffer. */
struct ctrlr_copy {
	uint32_t nr, idx;   /* source ranges, the one being copied */
	uint64_t src, left; /* next source LBA of range idx, blocks left in it */
	uint64_t dst;	    /* next destination LBA */
	uint64_t chunk;	    /* blocks in the bounce buffer */
	bool fua;
	struct ctrlr_lba_range r[CTRLR_COPY_MAX_RANGES];
	char buf[CTRLR_CHUNK_BYTES];
};

static void ctrlr_copy_next(struct ctrlr_req *req);

/* Ends the command. On failure CDW0 holds the lowest source range not copied (NVM 3.3.1.1). */
static void ctrlr_copy_finish(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr_copy *cp = req->step.buf;

	req->cdw0 = st ? cp->idx : 0;
	if (!st) {
		CTRLR_STAT_ADD(req->sq->ctrlr->cnt.host_write_cmds, 1);
	}
	free(cp);
	req->step.buf = NULL;
	__atomic_sub_fetch(&req->sq->ctrlr->copies_active, 1, __ATOMIC_RELAXED);
	ctrlr_req_complete(req, st);
}

static uint16_t ctrlr_copy_submit(struct ctrlr_req *req, enum bdev_io_type type, uint64_t lba,
				  ctrlr_req_io_done_fn done)
{
	struct ctrlr_copy *cp = req->step.buf;
	struct bdev_io *bio = req->bio;

	memset(bio, 0, sizeof(*bio));
	req->step.biov.iov_base = cp->buf;
	req->step.biov.iov_len = cp->chunk * req->lbaf->stride;
	bio->type = type;
	bio->flags = type == BDEV_IO_WRITE && cp->fua ? BDEV_IO_F_FUA : 0;
	bio->offset_blocks = ctrlr_req_bdev_blocks(req, lba);
	bio->num_blocks = ctrlr_req_bdev_blocks(req, cp->chunk);
	bio->iov = &req->step.biov;
	bio->iovcnt = 1;
	return ctrlr_req_submit_bio(req, done);
}

static void ctrlr_copy_write_done(struct ctrlr_req *req, int status)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint16_t st = ctrlr_bdev_status(status, true);

	if (st)
		return ctrlr_copy_finish(req, st);
	/* Written blocks are readable again, whatever Write Uncorrectable said of them. */
	if (ctrlr_uncor_clear(&req->ns->uncor, cp->dst, cp->chunk))
		return ctrlr_copy_finish(req, NVME_SC_INTERNAL);
	CTRLR_STAT_ADD(req->sq->ctrlr->cnt.bytes_written, cp->chunk * req->lbaf->ds);
	cp->src += cp->chunk;
	cp->dst += cp->chunk;
	cp->left -= cp->chunk;
	ctrlr_copy_next(req);
}

static void ctrlr_copy_read_done(struct ctrlr_req *req, int status)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint16_t st = ctrlr_bdev_status(status, false);

	/* Zoned: blocks past a write pointer read as zeroes; an offline zone fails the copy. */
	if (!st)
		st = ctrlr_zns_io_read_done(req, cp->src, cp->chunk, &req->step.biov, 1);
	if (st)
		return ctrlr_copy_finish(req, st);
	CTRLR_STAT_ADD(req->sq->ctrlr->cnt.bytes_read, cp->chunk * req->lbaf->ds);
	st = ctrlr_copy_submit(req, BDEV_IO_WRITE, cp->dst, ctrlr_copy_write_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

/* Next chunk: the rest of range idx, or the start of the next range. */
static void ctrlr_copy_next(struct ctrlr_req *req)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint64_t per = CTRLR_CHUNK_BYTES / req->lbaf->stride, bad;
	uint16_t st;

	while (!cp->left) {
		if (++cp->idx == cp->nr)
			return ctrlr_copy_finish(req, NVME_SC_SUCCESS);
		cp->src = cp->r[cp->idx].slba;
		cp->left = cp->r[cp->idx].nlb;
	}
	cp->chunk = cp->left < per ? cp->left : per;
	/* A block marked uncorrectable fails the copy at its range, as a read of it would. */
	if (ctrlr_uncor_overlaps(&req->ns->uncor, cp->src, cp->chunk, &bad)) {
		req->error_lba = bad;
		return ctrlr_copy_finish(req, NVME_SC_UNRECOVERED_READ);
	}
	st = ctrlr_copy_submit(req, BDEV_IO_READ, cp->src, ctrlr_copy_read_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

void ctrlr_io_copy(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t nr = (sqe->cdw12 & NVME_COPY_NR_MASK) + 1;
	uint64_t sdlba = ctrlr_sqe_slba(sqe), total = 0;
	struct ctrlr_copy *cp;
	uint16_t st;

	/* PRINFOR (bits 15:12) and PRINFOW (bits 29:26) on a protected format. */
	if (NVME_COPY_DESFMT(sqe->cdw12) != 0 ||
	    (req->fmt.f.pi && (((sqe->cdw12 >> 12) & 0xf) || CTRLR_PRINFO(sqe->cdw12))))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12));
	if (nr > CTRLR_COPY_MAX_RANGES)
		return ctrlr_req_complete(req, NVME_SC_CMD_SIZE_LIMIT);
	st = ctrlr_req_map_data(req, (uint64_t)nr * sizeof(struct nvme_copy_range_fmt0),
				CTRLR_DMA_READ);
	if (st)
		return ctrlr_req_complete(req, st);
	if (__atomic_add_fetch(&ctrlr->copies_active, 1, __ATOMIC_RELAXED) > CTRLR_COPY_MAX_ACTIVE) {
		__atomic_sub_fetch(&ctrlr->copies_active, 1, __ATOMIC_RELAXED);
		return ctrlr_req_complete(req, NVME_SC_CMD_INTERRUPTED);
	}
	cp = malloc(sizeof(*cp));
	if (!cp) {
		st = NVME_SC_INTERNAL;
		goto fail_count;
	}
	cp->nr = nr;
	for (uint32_t i = 0; i < nr; i++) {
		struct nvme_copy_range_fmt0 d;

		ctrlr_io_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		cp->r[i].slba = d.slba;
		cp->r[i].nlb = (uint64_t)d.nlb + 1;
		if (cp->r[i].nlb > CTRLR_COPY_MSSRL) {
			st = NVME_SC_CMD_SIZE_LIMIT;
			goto fail;
		}
		st = ctrlr_io_check_range(req, d.slba, cp->r[i].nlb);
		if (st)
			goto fail;
		total += cp->r[i].nlb;
	}
	if (total > CTRLR_COPY_MCL) {
		st = NVME_SC_CMD_SIZE_LIMIT;
		goto fail;
	}
	st = ctrlr_io_check_range(req, sdlba, total);
	if (!st) /* zoned: the destination follows the write pointer rules (ZNS 1.1 3.4) */
		st = ctrlr_zns_io_write(req, sdlba, total);
	if (st)
		goto fail;
	/* The descriptors are ours now: an unmap of their guest page need not wait for the copy. */
	ctrlr_req_data_done(req);
	cp->fua = sqe->cdw12 & NVME_RW_FUA;
	cp->dst = sdlba;
	cp->idx = 0;
	cp->src = cp->r[0].slba;
	cp->left = cp->r[0].nlb;
	req->step.buf = cp;
	ctrlr_copy_next(req);
	return;

fail:
	/* Nothing was written: CDW0 stays 0. */
	free(cp);
fail_count:
	__atomic_sub_fetch(&ctrlr->copies_active, 1, __ATOMIC_RELAXED);
	ctrlr_req_complete(req, st);
}
