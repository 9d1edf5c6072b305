/* controller/io_copy.c - the Copy command (NVM Command Set 1.0 3.3.1): source ranges of one
 * namespace copied to a contiguous destination in the same namespace, through a bounce buffer,
 * one chunk read then written at a time. Descriptor formats 0h (no or 16b Guard protection) and
 * 1h (64b Guard), OCFS bits 0-1; the cross-namespace formats 2h/3h are not offered. Blocks move
 * whole (data and metadata as stored); on a protected format each block's protection
 * information is checked as PRINFOR says against its range's expected tags, then checked
 * (PRACT 0) or generated anew with the destination's reference tags (PRACT 1) as PRINFOW says
 * (section 5.2.2). Owner thread of the SQ. */
#include <stdlib.h>
#include <string.h>

#include "controller/ctrlr_internal.h"
#include "controller/pi.h"
#include "controller/zns.h"

/* The command's state, allocated once it is valid: the host's source ranges, copied and checked
 * before any block moves (the guest cannot change them under us), and the bounce buffer. */
struct ctrlr_copy_range {
	uint64_t slba, nlb;
	uint64_t eilbrt;	/* expected initial reference tag of the source blocks */
	uint16_t elbat, elbatm; /* expected application tag and its mask */
};

struct ctrlr_copy {
	uint32_t nr, idx;   /* source ranges, the one being copied */
	uint64_t src, left; /* next source LBA of range idx, blocks left in it */
	uint64_t dst;	    /* next destination LBA */
	uint64_t chunk;	    /* blocks in the bounce buffer */
	bool fua;
	bool pi;	    /* the namespace's format carries protection information */
	bool pract;	    /* PRINFOW.PRACT: the destination's tuples generated, not checked */
	struct ctrlr_pi rpi, wpi; /* the source's checks (range idx's tags), the destination's */
	uint64_t rref, wref;	  /* reference tags of blocks src and dst */
	struct ctrlr_copy_range r[CTRLR_COPY_MAX_RANGES];
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
	if (ctrlr_uncor_clear(req->ns->uncor, cp->dst, cp->chunk))
		return ctrlr_copy_finish(req, NVME_SC_INTERNAL);
	CTRLR_STAT_ADD(req->sq->ctrlr->cnt.bytes_written, cp->chunk * req->lbaf->ds);
	cp->src += cp->chunk;
	cp->dst += cp->chunk;
	cp->left -= cp->chunk;
	ctrlr_copy_next(req);
}

/*
 * The protection information of a chunk read (section 5.2.2, Copy): each source block's tuple is
 * checked as PRINFOR's PRCHK says against its range's EILBRT/ELBAT/ELBATM; then, for the
 * destination, PRACT 1 generates a new tuple (guard, LBAT, reference tags from the command's
 * LBRT counting with the destination LBA) and PRACT 0 keeps the source's tuple and checks it as
 * PRINFOW's PRCHK says against LBRT/LBAT/LBATM. Tuples are stored inverted (pi.h).
 */
static uint16_t ctrlr_copy_pi(struct ctrlr_req *req, struct ctrlr_copy *cp)
{
	const struct ctrlr_lbaf *l = req->lbaf;
	uint16_t st;

	for (uint64_t i = 0; i < cp->chunk; i++) {
		uint8_t *blk = (uint8_t *)cp->buf + i * l->stride, *md = blk + l->ds;

		ctrlr_pi_flip(&cp->rpi, md);
		st = ctrlr_pi_check(&cp->rpi, blk, md, cp->rref);
		if (!st && cp->pract)
			ctrlr_pi_generate(&cp->wpi, blk, md, cp->wref);
		else if (!st)
			st = ctrlr_pi_check(&cp->wpi, blk, md, cp->wref);
		if (st) {
			req->error_lba = cp->src + i;
			return st;
		}
		ctrlr_pi_flip(&cp->wpi, md);
		cp->rref = ctrlr_pi_ref_next(&cp->rpi, cp->rref);
		cp->wref = ctrlr_pi_ref_next(&cp->wpi, cp->wref);
	}
	return NVME_SC_SUCCESS;
}

static void ctrlr_copy_read_done(struct ctrlr_req *req, int status)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint16_t st = ctrlr_bdev_status(status, false);

	/* Zoned: blocks past a write pointer read as zeroes; an offline zone fails the copy. */
	if (!st)
		st = ctrlr_zns_io_read_done(req, cp->src, cp->chunk, &req->step.biov, 1);
	if (!st && cp->pi)
		st = ctrlr_copy_pi(req, cp);
	if (st)
		return ctrlr_copy_finish(req, st);
	CTRLR_STAT_ADD(req->sq->ctrlr->cnt.bytes_read, cp->chunk * req->lbaf->ds);
	st = ctrlr_copy_submit(req, BDEV_IO_WRITE, cp->dst, ctrlr_copy_write_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

/* Range idx starts: its first block, and the tags its blocks are checked against. */
static void ctrlr_copy_range_start(struct ctrlr_copy *cp)
{
	const struct ctrlr_copy_range *r = &cp->r[cp->idx];

	cp->src = r->slba;
	cp->left = r->nlb;
	cp->rpi.apptag = r->elbat;
	cp->rpi.appmask = r->elbatm;
	cp->rref = r->eilbrt & ctrlr_pi_ref_mask(cp->rpi.pif);
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
		ctrlr_copy_range_start(cp);
	}
	cp->chunk = cp->left < per ? cp->left : per;
	/* A block marked uncorrectable fails the copy at its range, as a read of it would. */
	if (ctrlr_uncor_overlaps(req->ns->uncor, cp->src, cp->chunk, &bad)) {
		req->error_lba = bad;
		return ctrlr_copy_finish(req, NVME_SC_UNRECOVERED_READ);
	}
	st = ctrlr_copy_submit(req, BDEV_IO_READ, cp->src, ctrlr_copy_read_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

/* Source range idx of the host's list (format 0h or 1h) into r. */
static void ctrlr_copy_range_read(struct ctrlr_req *req, uint32_t desfmt, uint32_t i,
				  struct ctrlr_copy_range *r)
{
	if (desfmt == 0) {
		struct nvme_copy_range_fmt0 d;

		ctrlr_io_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		r->eilbrt = d.eilbrt;
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	} else {
		struct nvme_copy_range_fmt1 d;

		ctrlr_io_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		/* Big-endian 80 bits; with STS 0 the reference tag is the low 48 (masked later). */
		r->eilbrt = 0;
		for (int b = 2; b < 10; b++)
			r->eilbrt = r->eilbrt << 8 | d.elbt[b];
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	}
}

/* The protection information settings of both sides, and the checks of the command's fields
 * (section 5.2.2): PRACT the same in PRINFOR and PRINFOW (one namespace, one format), Type 1
 * reference tags that are the LBAs' when checked. Returns 0 or the status. */
static uint16_t ctrlr_copy_pi_setup(struct ctrlr_req *req, struct ctrlr_copy *cp, uint64_t sdlba)
{
	const struct nvme_sqe *sqe = &req->sqe;
	const struct ctrlr_lbaf *l = req->lbaf;
	uint8_t prinfor = NVME_COPY_PRINFOR(sqe->cdw12), prinfow = CTRLR_PRINFO(sqe->cdw12);
	uint64_t lbrt;
	uint16_t st;

	memset(&cp->rpi, 0, sizeof(cp->rpi));
	cp->pi = req->fmt.f.pi != 0;
	cp->pract = false;
	cp->wpi = cp->rpi;
	if (!cp->pi)
		return NVME_SC_SUCCESS;
	if ((prinfor ^ prinfow) & CTRLR_PRINFO_PRACT) {
		req->error_loc = offsetof(struct nvme_sqe, cdw12);
		return NVME_SC_INVALID_FIELD;
	}
	cp->pract = prinfow & CTRLR_PRINFO_PRACT;
	cp->rpi.type = req->fmt.f.pi;
	cp->rpi.pif = l->pif;
	cp->rpi.first = req->fmt.f.pi_first;
	cp->rpi.ds = l->ds;
	cp->rpi.ms = l->ms;
	cp->wpi = cp->rpi;
	cp->rpi.prchk = prinfor & 0x7;
	cp->wpi.prchk = prinfow & 0x7;
	cp->wpi.apptag = (uint16_t)sqe->cdw15;
	cp->wpi.appmask = (uint16_t)(sqe->cdw15 >> 16);
	/* LBRT: CDW14, bits 47:32 in CDW3 for the 64b Guard (STS 0), as Write's ILBRT. */
	lbrt = sqe->cdw14;
	if (l->pif == CTRLR_PIF_64)
		lbrt |= (uint64_t)(sqe->cdw3 & 0xffff) << 32;
	cp->wref = lbrt & ctrlr_pi_ref_mask(l->pif);
	/* Type 1 with the reference tag checked: LBRT is the SDLBA's low bits. */
	st = ctrlr_pi_check_ilbrt(&cp->wpi, sdlba, lbrt);
	if (st) {
		req->error_loc = offsetof(struct nvme_sqe, cdw14);
		return st;
	}
	/* Generated tuples check nothing of the source's on the write side. */
	if (cp->pract)
		cp->wpi.prchk = 0;
	for (uint32_t i = 0; i < cp->nr; i++) {
		if (ctrlr_pi_check_ilbrt(&cp->rpi, cp->r[i].slba, cp->r[i].eilbrt)) {
			req->error_lba = cp->r[i].slba;
			return NVME_SC_INVALID_PI;
		}
	}
	return NVME_SC_SUCCESS;
}

void ctrlr_io_copy(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t nr = (sqe->cdw12 & NVME_COPY_NR_MASK) + 1;
	uint32_t desfmt = NVME_COPY_DESFMT(sqe->cdw12);
	uint64_t sdlba = ctrlr_sqe_slba(sqe), total = 0;
	size_t dsz;
	struct ctrlr_copy *cp;
	uint16_t st;

	/* Formats 0h and 1h only (OCFS); the one that fits the namespace's protection
	 * information format: 0h without or with the 16b Guard, 1h with the 64b Guard (3.3.1,
	 * else Invalid Format). */
	if (desfmt > 1)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12) + 1);
	if (desfmt != (req->lbaf->pif == CTRLR_PIF_64 ? 1u : 0u))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FORMAT,
					      offsetof(struct nvme_sqe, cdw12) + 1);
	if (nr > CTRLR_COPY_MAX_RANGES)
		return ctrlr_req_complete(req, NVME_SC_CMD_SIZE_LIMIT);
	dsz = desfmt ? sizeof(struct nvme_copy_range_fmt1) : sizeof(struct nvme_copy_range_fmt0);
	st = ctrlr_req_map_data(req, (uint64_t)nr * dsz, CTRLR_DMA_READ);
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
	cp->idx = 0;
	for (uint32_t i = 0; i < nr; i++) {
		ctrlr_copy_range_read(req, desfmt, i, &cp->r[i]);
		/* MSSRL, then MCL below: the same limits for both formats. */
		if (cp->r[i].nlb > CTRLR_COPY_MSSRL) {
			st = NVME_SC_CMD_SIZE_LIMIT;
			goto fail;
		}
		st = ctrlr_io_check_range(req, cp->r[i].slba, cp->r[i].nlb);
		if (st)
			goto fail;
		total += cp->r[i].nlb;
	}
	if (total > CTRLR_COPY_MCL) {
		st = NVME_SC_CMD_SIZE_LIMIT;
		goto fail;
	}
	st = ctrlr_copy_pi_setup(req, cp, sdlba);
	if (st)
		goto fail;
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
	ctrlr_copy_range_start(cp);
	req->step.buf = cp;
	ctrlr_copy_next(req);
	return;

fail:
	/* Nothing was written: CDW0 stays 0 (the lowest range not copied). */
	free(cp);
fail_count:
	__atomic_sub_fetch(&ctrlr->copies_active, 1, __ATOMIC_RELAXED);
	ctrlr_req_complete(req, st);
}
