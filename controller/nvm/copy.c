/* controller/nvm/copy.c - the Copy command (NVM Command Set 1.1 3.3.1): source ranges copied to a
 * contiguous destination, through a bounce buffer, one chunk read then written at a time.
 * Descriptor formats 0h (no or 16b Guard protection) and 1h (64b Guard) take their ranges from the
 * destination namespace; 2h and 3h (the same two with a Source Namespace Identifier per range,
 * OCFS bits 2-3, enabled by the host in Host Behavior Support's CDFE) from any active namespace
 * of the controller whose format matches the destination's (data and metadata size, protection
 * type and place, guard), or differs only by a tuple that PRACT inserts or strips, else
 * Incompatible Namespace or Format. Blocks move whole (data and metadata as stored); a protected
 * source block's protection information is checked as PRINFOR says against its range's expected
 * tags, then on a protected destination checked (PRACT 0) or generated anew with the
 * destination's reference tags (PRACT 1) as PRINFOW says (section 5.2.2). Owner thread of the
 * SQ: a source namespace's bdev is read through this thread's channel for it. */
#include <stdlib.h>
#include <string.h>

#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"

/* The command's state, allocated once it is valid: the host's source ranges, copied and checked
 * before any block moves (the guest cannot change them under us), and the bounce buffer. */
struct ctrlr_copy_range {
	uint64_t slba, nlb;
	ctrlr_pi_tags elbt;	/* expected storage and initial reference tags (ELBT) */
	uint16_t elbat, elbatm; /* expected application tag and its mask */
	uint32_t snsid;		/* formats 2h/3h: the source namespace; else the destination */
	uint16_t sopt;		/* formats 2h/3h: Source Options */
	uint8_t conv;		/* enum ctrlr_copy_conv */
	struct ctrlr_ns *ns;	/* another namespace (kept by the command, req.c), NULL: the destination */
	union ctrlr_ns_fmt fmt;	/* ns's format when the command started, and its LBA format */
	const struct ctrlr_lbaf *lbaf;
};

/* How a range's blocks become the destination's: as they are (the same format), or, between a
 * namespace without metadata and one whose metadata is just the protection information tuple,
 * with the tuple generated (PRINFOW.PRACT) or stripped after its checks (PRINFOR.PRACT). */
enum ctrlr_copy_conv {
	CTRLR_COPY_AS_IS = 0,
	CTRLR_COPY_INSERT,
	CTRLR_COPY_STRIP,
};

struct ctrlr_copy {
	uint32_t nr, idx;   /* source ranges, the one being copied */
	uint64_t src, left; /* next source LBA of range idx, blocks left in it */
	uint64_t dst;	    /* next destination LBA */
	uint64_t chunk;	    /* blocks in the bounce buffer */
	bool fua;
	uint16_t placement; /* the destination's bdev placement handle (io_write_place) */
	bool pi;	    /* the destination's format carries protection information */
	bool pract;	    /* PRINFOW.PRACT: the destination's tuples generated, not checked */
	bool rchk;	    /* range idx's source carries protection information (checked) */
	struct ctrlr_pi rpi, wpi; /* the source's checks (range idx's tags), the destination's */
	uint64_t rref, wref;	  /* reference tags of blocks src and dst */
	struct ctrlr_ns *sns;	  /* range idx's namespace (req->ns for its own ranges) */
	const struct ctrlr_lbaf *slbaf; /* its format: the same sizes, maybe another stride */
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
		CTRLR_SQ_STAT_ADD(req->sq, host_write_cmds, 1);
	}
	free(cp);
	req->step.buf = NULL;
	__atomic_sub_fetch(&ctrlr_nvm(req->sq->ctrlr)->copies_active, 1, __ATOMIC_RELAXED);
	ctrlr_req_complete(req, st);
}

static void ctrlr_copy_bio_done(struct bdev_io *io, int status, void *cb_arg)
{
	struct ctrlr_req *req = cb_arg;

	(void)io;
	req->io_done(req, status);
}

/* One chunk read from (range idx's namespace) or written to (the destination) the bounce
 * buffer, laid out in that namespace's stride; `done` runs with the bdev status. */
static uint16_t ctrlr_copy_submit(struct ctrlr_req *req, enum bdev_io_type type, uint64_t lba,
				  ctrlr_req_io_done_fn done)
{
	struct ctrlr_copy *cp = req->step.buf;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	bool rd = type == BDEV_IO_READ;
	struct ctrlr_ns *ns = rd ? cp->sns : req->ns;
	const struct ctrlr_lbaf *l = rd ? cp->slbaf : req->lbaf;
	struct bdev_io *bio = req->bio;
	struct bdev_channel *ch;

	/* The SQ's thread's channel for that namespace's bdev, as the I/O path's own. */
	ch = ctrlr->ops->get_channel(ctrlr->tctx, req->sq, ns->bdev);
	if (!ch)
		return NVME_SC_INTERNAL;
	memset(bio, 0, sizeof(*bio));
	req->step.biov.iov_base = cp->buf;
	req->step.biov.iov_len = cp->chunk * l->stride;
	bio->type = type;
	bio->flags = type == BDEV_IO_WRITE && cp->fua ? BDEV_IO_F_FUA : 0;
	bio->placement = type == BDEV_IO_WRITE ? cp->placement : 0;
	bio->offset_blocks = lba * l->bpl;
	bio->num_blocks = cp->chunk * l->bpl;
	bio->iov = &req->step.biov;
	bio->iovcnt = 1;
	req->io_done = done;
	bio->cb = ctrlr_copy_bio_done;
	bio->cb_arg = req;
	bdev_submit(ch, bio);
	return NVME_SC_SUCCESS;
}

/* A source namespace on a bdev of another block size stores the same blocks in another stride,
 * and one converted gains or loses the tuple: each block's data and the metadata both formats
 * have move to the destination's stride (the rest zeroed: the new tuple's place, the padding). */
static void ctrlr_copy_restride(struct ctrlr_copy *cp, const struct ctrlr_lbaf *d)
{
	const struct ctrlr_lbaf *s = cp->slbaf;
	uint32_t ss = s->stride, ds = d->stride, used = d->ds + (s->ms < d->ms ? s->ms : d->ms);
	char *b = cp->buf;

	if (ss == ds && s->ms == d->ms)
		return;
	if (ds <= ss) {
		for (uint64_t i = 0; i < cp->chunk; i++) {
			memmove(b + i * ds, b + i * ss, used);
			memset(b + i * ds + used, 0, ds - used);
		}
	} else {
		for (uint64_t i = cp->chunk; i-- > 0;) {
			memmove(b + i * ds, b + i * ss, used);
			memset(b + i * ds + used, 0, ds - used);
		}
	}
}

static void ctrlr_copy_write_done(struct ctrlr_req *req, int status)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint16_t st = ctrlr_bdev_status(status, true);

	if (st)
		return ctrlr_copy_finish(req, st);
	/* Written blocks are readable again, whatever Write Uncorrectable said of them. */
	if (ctrlr_uncor_clear(ctrlr_nvm_ns(req->ns)->uncor, cp->dst, cp->chunk))
		return ctrlr_copy_finish(req, NVME_SC_INTERNAL);
	CTRLR_SQ_STAT_ADD(req->sq, bytes_written, cp->chunk * req->lbaf->ds);
	cp->src += cp->chunk;
	cp->dst += cp->chunk;
	cp->left -= cp->chunk;
	ctrlr_copy_next(req);
}

/*
 * The protection information of a chunk read (section 5.2.2, Copy), in two passes around the
 * re-layout. The source's: each block's tuple checked as PRINFOR's PRCHK says against its
 * range's EILBRT/ELBAT/ELBATM, in the source's layout. The destination's: PRACT 1 generates a
 * new tuple (guard, LBAT, reference tags from the command's LBRT counting with the destination
 * LBA), PRACT 0 keeps the source's tuple and checks it as PRINFOW's PRCHK says against
 * LBRT/LBAT/LBATM. Tuples are stored inverted (pi.h).
 */
static uint16_t ctrlr_copy_pi_src(struct ctrlr_req *req, struct ctrlr_copy *cp)
{
	const struct ctrlr_lbaf *l = cp->slbaf;
	uint16_t st;

	for (uint64_t i = 0; i < cp->chunk; i++) {
		uint8_t *blk = (uint8_t *)cp->buf + i * l->stride, *md = blk + l->ds;

		ctrlr_pi_flip(&cp->rpi, md);
		st = ctrlr_pi_check(&cp->rpi, blk, md, cp->rref);
		if (st) {
			req->error_lba = cp->src + i;
			return st;
		}
		cp->rref = ctrlr_pi_ref_next(&cp->rpi, cp->rref);
	}
	return NVME_SC_SUCCESS;
}

static uint16_t ctrlr_copy_pi_dst(struct ctrlr_req *req, struct ctrlr_copy *cp)
{
	const struct ctrlr_lbaf *l = req->lbaf;
	uint16_t st;

	for (uint64_t i = 0; i < cp->chunk; i++) {
		uint8_t *blk = (uint8_t *)cp->buf + i * l->stride, *md = blk + l->ds;

		if (cp->pract) {
			ctrlr_pi_generate(&cp->wpi, blk, md, cp->wref);
		} else {
			st = ctrlr_pi_check(&cp->wpi, blk, md, cp->wref);
			if (st) {
				req->error_lba = cp->src + i;
				return st;
			}
		}
		ctrlr_pi_flip(&cp->wpi, md);
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
		st = ctrlr_nvm_zoned_read_done(cp->sns, cp->src, cp->chunk, &req->step.biov, 1);
	if (!st && cp->rchk)
		st = ctrlr_copy_pi_src(req, cp);
	if (!st)
		ctrlr_copy_restride(cp, req->lbaf);
	if (!st && cp->pi)
		st = ctrlr_copy_pi_dst(req, cp);
	if (st)
		return ctrlr_copy_finish(req, st);
	CTRLR_SQ_STAT_ADD(req->sq, bytes_read, cp->chunk * req->lbaf->ds);
	st = ctrlr_copy_submit(req, BDEV_IO_WRITE, cp->dst, ctrlr_copy_write_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

/* The checks of range r's source blocks into pi (section 5.2.2): its format's protection
 * information as PRINFOR says, against the range's expected tags. False when the source carries
 * none (nothing to check). */
static bool ctrlr_copy_src_pi(const struct ctrlr_req *req, const struct ctrlr_copy_range *r,
			      struct ctrlr_pi *pi)
{
	union ctrlr_ns_fmt f = r->ns ? r->fmt : req->fmt;
	const struct ctrlr_lbaf *l = r->ns ? r->lbaf : req->lbaf;

	memset(pi, 0, sizeof(*pi));
	if (!f.f.pi)
		return false;
	pi->type = f.f.pi;
	pi->pif = l->pif;
	pi->first = f.f.pi_first;
	pi->ds = l->ds;
	pi->ms = l->ms;
	pi->prchk = NVME_COPY_PRINFOR(req->sqe.cdw12) & 0x7;
	pi->apptag = r->elbat;
	pi->appmask = r->elbatm;
	/* STCR: the sources' storage tags are checked against their ELBT's. */
	pi->sts = l->sts;
	pi->stc = l->sts && (req->sqe.cdw12 & CTRLR_COPY_STCR);
	return true;
}

/* Range idx starts: its namespace, its first block, and the tags its blocks are checked
 * against. */
static void ctrlr_copy_range_start(struct ctrlr_req *req, struct ctrlr_copy *cp)
{
	const struct ctrlr_copy_range *r = &cp->r[cp->idx];

	cp->sns = r->ns ? r->ns : req->ns;
	cp->slbaf = r->ns ? r->lbaf : req->lbaf;
	cp->src = r->slba;
	cp->left = r->nlb;
	cp->rchk = ctrlr_copy_src_pi(req, r, &cp->rpi);
	cp->rref = ctrlr_pi_split_tags(&cp->rpi, r->elbt);
}

/* Next chunk: the rest of range idx, or the start of the next range. */
static void ctrlr_copy_next(struct ctrlr_req *req)
{
	struct ctrlr_copy *cp = req->step.buf;
	uint64_t per, bad;
	uint16_t st;

	while (!cp->left) {
		if (++cp->idx == cp->nr)
			return ctrlr_copy_finish(req, NVME_SC_SUCCESS);
		ctrlr_copy_range_start(req, cp);
	}
	/* The chunk fits the buffer in both namespaces' strides. */
	per = CTRLR_CHUNK_BYTES / (cp->slbaf->stride > req->lbaf->stride ? cp->slbaf->stride
									   : req->lbaf->stride);
	cp->chunk = cp->left < per ? cp->left : per;
	/* A block marked uncorrectable fails the copy at its range, as a read of it would. */
	if (ctrlr_uncor_overlaps(ctrlr_nvm_ns(cp->sns)->uncor, cp->src, cp->chunk, &bad)) {
		req->error_lba = bad;
		return ctrlr_copy_finish(req, NVME_SC_UNRECOVERED_READ);
	}
	st = ctrlr_copy_submit(req, BDEV_IO_READ, cp->src, ctrlr_copy_read_done);
	if (st)
		ctrlr_copy_finish(req, st);
}

/* The 80-bit big-endian ELBT of formats 1h/3h: the tags field of the 32b Guard, or of the 64b
 * Guard in its low 48 bits (split by the source's format later). */
static ctrlr_pi_tags ctrlr_copy_elbt(const uint8_t elbt[10])
{
	ctrlr_pi_tags v = 0;

	for (int b = 0; b < 10; b++)
		v = v << 8 | elbt[b];
	return v;
}

/* Source range i of the host's list (format desfmt) into r; formats 0h/1h name no namespace. */
static void ctrlr_copy_range_read(struct ctrlr_req *req, uint32_t desfmt, uint32_t i,
				  struct ctrlr_copy_range *r)
{
	memset(r, 0, sizeof(*r));
	r->snsid = req->sqe.nsid;
	if (desfmt == 0) {
		struct nvme_copy_range_fmt0 d;

		ctrlr_req_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		r->elbt = d.eilbrt;
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	} else if (desfmt == 1) {
		struct nvme_copy_range_fmt1 d;

		ctrlr_req_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		r->elbt = ctrlr_copy_elbt(d.elbt);
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	} else if (desfmt == 2) {
		struct nvme_copy_range_fmt2 d;

		ctrlr_req_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->snsid = d.snsid;
		r->sopt = d.sopt;
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		r->elbt = d.eilbrt;
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	} else {
		struct nvme_copy_range_fmt3 d;

		ctrlr_req_iov_read(req, (uint64_t)i * sizeof(d), &d, sizeof(d));
		r->snsid = d.snsid;
		r->sopt = d.sopt;
		r->slba = d.slba;
		r->nlb = (uint64_t)d.nlb + 1;
		r->elbt = ctrlr_copy_elbt(d.elbt);
		r->elbat = d.elbat;
		r->elbatm = d.elbatm;
	}
}

/* Whether blocks of format s (source) copy as they are into format d (destination): the same
 * data and metadata sizes and, with protection information, the same type, place and guard.
 * No conversion (inserting or stripping protection information) is done. */
static bool ctrlr_copy_fmt_match(union ctrlr_ns_fmt sf, const struct ctrlr_lbaf *s,
				 union ctrlr_ns_fmt df, const struct ctrlr_lbaf *d)
{
	if (s->ds != d->ds || s->ms != d->ms || sf.f.pi != df.f.pi)
		return false;
	return !df.f.pi ||
	       (sf.f.pi_first == df.f.pi_first && s->pif == d->pif && s->sts == d->sts);
}

/* How blocks of format s (source) become blocks of format d (destination), or -1: as they are
 * when the formats match; with the same data size, from no metadata to metadata that is just the
 * tuple with PRINFOW.PRACT (generated), or the reverse with PRINFOR.PRACT (stripped after the
 * source's checks). */
static int ctrlr_copy_conv_of(const struct ctrlr_req *req, union ctrlr_ns_fmt sf,
			      const struct ctrlr_lbaf *s)
{
	union ctrlr_ns_fmt df = req->fmt;
	const struct ctrlr_lbaf *d = req->lbaf;
	uint8_t prinfor = NVME_COPY_PRINFOR(req->sqe.cdw12), prinfow = CTRLR_PRINFO(req->sqe.cdw12);

	if (ctrlr_copy_fmt_match(sf, s, df, d))
		return CTRLR_COPY_AS_IS;
	if (s->ds != d->ds)
		return -1;
	if (!sf.f.pi && !s->ms && df.f.pi && d->ms == ctrlr_pi_tuple_size(d->pif) &&
	    (prinfow & CTRLR_PRINFO_PRACT))
		return CTRLR_COPY_INSERT;
	if (sf.f.pi && s->ms == ctrlr_pi_tuple_size(s->pif) && !df.f.pi && !d->ms &&
	    (prinfor & CTRLR_PRINFO_PRACT))
		return CTRLR_COPY_STRIP;
	return -1;
}

/* Range r's source: its own namespace, or (formats 2h/3h) the one SNSID names, which must be
 * active (Invalid Namespace or Format), readable by this host (Reservation Conflict, as a Read
 * would be) and of a format the copy can make the destination's (ctrlr_copy_conv_of; else
 * Incompatible Namespace or Format). A Fast Copy Only
 * range fails: this controller copies through a buffer, never fast (ONCS.NVMAFC 0). Takes a
 * another namespace into r->ns. Returns 0 or the status. */
static uint16_t ctrlr_copy_source(struct ctrlr_req *req, struct ctrlr_copy_range *r)
{
	struct ctrlr_ns *ns;
	int conv;

	if (r->sopt & NVME_COPY_SOPT_FCO)
		return NVME_SC_FAST_COPY_NOT_POSSIBLE;
	if (r->snsid == req->sqe.nsid)
		return NVME_SC_SUCCESS;
	ns = ctrlr_req_ns_lookup(req, r->snsid); /* valid until the command ends (req.c) */
	if (!ns)
		return NVME_SC_INVALID_NS;
	r->ns = ns;
	if (CTRLR_LOAD(ns->io_block) & CTRLR_ACCESS_READ)
		return NVME_SC_RESV_CONFLICT;
	r->fmt.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE);
	r->lbaf = &ns->lbafs[r->fmt.f.lbaf];
	conv = ctrlr_copy_conv_of(req, r->fmt, r->lbaf);
	if (conv < 0)
		return NVME_SC_INCOMPATIBLE_NS;
	r->conv = (uint8_t)conv;
	return NVME_SC_SUCCESS;
}

/* LBA range check of a source range against its namespace (LBA Out of Range). */
static uint16_t ctrlr_copy_check_source_range(struct ctrlr_req *req,
					      const struct ctrlr_copy_range *r)
{
	uint64_t nsze;

	if (!r->ns)
		return ctrlr_io_check_range(req, r->slba, r->nlb);
	/* Atomic: a resize (main thread) may grow it under I/O. */
	nsze = __atomic_load_n(&r->ns->num_blocks, __ATOMIC_RELAXED);
	if (r->slba >= nsze || r->nlb > nsze - r->slba) {
		req->error_lba = r->slba;
		return NVME_SC_LBA_RANGE;
	}
	return NVME_SC_SUCCESS;
}

/* The protection information settings of the destination, and the checks of the command's
 * fields (section 5.2.2): PRACT the same in PRINFOR and PRINFOW when a range's blocks keep their
 * format (protected on both sides), Type 1 reference tags that are the LBAs' when checked (LBRT
 * for the destination, each protected source's EILBRT). Returns 0 or the status. */
static uint16_t ctrlr_copy_pi_setup(struct ctrlr_req *req, struct ctrlr_copy *cp, uint64_t sdlba)
{
	const struct nvme_sqe *sqe = &req->sqe;
	const struct ctrlr_lbaf *l = req->lbaf;
	uint8_t prinfor = NVME_COPY_PRINFOR(sqe->cdw12), prinfow = CTRLR_PRINFO(sqe->cdw12);
	struct ctrlr_pi rpi;
	uint64_t lbrt;
	uint16_t st;

	memset(&cp->wpi, 0, sizeof(cp->wpi));
	cp->pi = req->fmt.f.pi != 0;
	cp->pract = false;
	for (uint32_t i = 0; i < cp->nr; i++) {
		if (!cp->pi || cp->r[i].conv != CTRLR_COPY_AS_IS)
			continue;
		if ((prinfor ^ prinfow) & CTRLR_PRINFO_PRACT) {
			req->error_loc = offsetof(struct nvme_sqe, cdw12);
			return NVME_SC_INVALID_FIELD;
		}
	}
	for (uint32_t i = 0; i < cp->nr; i++) {
		if (ctrlr_copy_src_pi(req, &cp->r[i], &rpi) &&
		    ctrlr_pi_check_ilbrt(&rpi, cp->r[i].slba,
					 ctrlr_pi_split_tags(&rpi, cp->r[i].elbt))) {
			req->error_lba = cp->r[i].slba;
			return NVME_SC_INVALID_PI;
		}
	}
	if (!cp->pi)
		return NVME_SC_SUCCESS;
	cp->pract = prinfow & CTRLR_PRINFO_PRACT;
	cp->wpi.type = req->fmt.f.pi;
	cp->wpi.pif = l->pif;
	cp->wpi.first = req->fmt.f.pi_first;
	cp->wpi.ds = l->ds;
	cp->wpi.ms = l->ms;
	cp->wpi.prchk = prinfow & 0x7;
	cp->wpi.apptag = (uint16_t)sqe->cdw15;
	cp->wpi.appmask = (uint16_t)(sqe->cdw15 >> 16);
	/* STCW: the storage tags written are checked against the command's (not when PRACT
	 * generates them from it). */
	cp->wpi.sts = l->sts;
	cp->wpi.stc = l->sts && (sqe->cdw12 & CTRLR_STC);
	/* The storage tag and LBRT, in CDW14, CDW3 and CDW2 as the format's tags field is wide,
	 * as Write's. */
	lbrt = ctrlr_pi_split_tags(&cp->wpi, ctrlr_pi_cmd_tags(l->pif, sqe->cdw2, sqe->cdw3,
							       sqe->cdw14));
	cp->wref = lbrt;
	/* Type 1 with the reference tag checked: LBRT is the SDLBA's low bits. */
	st = ctrlr_pi_check_ilbrt(&cp->wpi, sdlba, lbrt);
	if (st) {
		req->error_loc = offsetof(struct nvme_sqe, cdw14);
		return st;
	}
	/* Generated tuples check nothing of the source's on the write side. */
	if (cp->pract) {
		cp->wpi.prchk = 0;
		cp->wpi.stc = false;
	}
	return NVME_SC_SUCCESS;
}

/* Descriptor format checks (3.3.1): formats OCFS offers, 2h/3h only once the host enabled them
 * (Host Behavior Support CDFE, else Invalid Field), and the one that fits the destination's
 * protection information format: 0h/2h without or with the 16b Guard, 1h/3h with the 32b or 64b
 * Guard (else Invalid Format). Returns 0 or the status. */
static uint16_t ctrlr_copy_check_desfmt(struct ctrlr_req *req, uint32_t desfmt)
{
	uint16_t cdfe = CTRLR_LOAD(req->sq->ctrlr->feat.hbs_cdfe);

	if (desfmt > 3 || (desfmt >= 2 && !(cdfe & (1u << desfmt))))
		return NVME_SC_INVALID_FIELD;
	if ((desfmt & 1) != (req->lbaf->pif != CTRLR_PIF_16 ? 1u : 0u))
		return NVME_SC_INVALID_FORMAT;
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

	st = ctrlr_copy_check_desfmt(req, desfmt);
	if (st)
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw12) + 1);
	if (nr > CTRLR_COPY_MAX_RANGES)
		return ctrlr_req_complete(req, NVME_SC_CMD_SIZE_LIMIT);
	dsz = desfmt & 1 ? sizeof(struct nvme_copy_range_fmt1) : sizeof(struct nvme_copy_range_fmt0);
	st = ctrlr_req_map_data(req, (uint64_t)nr * dsz, CTRLR_DMA_READ);
	if (st)
		return ctrlr_req_complete(req, st);
	if (__atomic_add_fetch(&ctrlr_nvm(ctrlr)->copies_active, 1, __ATOMIC_RELAXED) > CTRLR_COPY_MAX_ACTIVE) {
		__atomic_sub_fetch(&ctrlr_nvm(ctrlr)->copies_active, 1, __ATOMIC_RELAXED);
		return ctrlr_req_complete(req, NVME_SC_CMD_INTERRUPTED);
	}
	/* Zeroed: a source bdev may leave a read buffer as it is (the null bdev), and what the
	 * bounce buffer holds is written to the destination. */
	cp = calloc(1, sizeof(*cp));
	if (!cp) {
		st = NVME_SC_INTERNAL;
		goto fail_count;
	}
	cp->nr = nr;
	cp->idx = 0;
	for (uint32_t i = 0; i < nr; i++) {
		ctrlr_copy_range_read(req, desfmt, i, &cp->r[i]);
		/* MSSRL, then MCL below: the same limits for every format. */
		if (cp->r[i].nlb > CTRLR_COPY_MSSRL) {
			st = NVME_SC_CMD_SIZE_LIMIT;
			goto fail;
		}
		st = ctrlr_copy_source(req, &cp->r[i]);
		if (!st)
			st = ctrlr_copy_check_source_range(req, &cp->r[i]);
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
		st = ctrlr_nvm_zoned_write(req, sdlba, total);
	/* Data placement: Copy's DTYPE/DSPEC (CDW12/CDW13 as a Write's) place the destination. */
	cp->placement = 0;
	if (!st && ctrlr->io_write_place)
		st = ctrlr->io_write_place(req, total * req->lbaf->ds, &cp->placement);
	if (st)
		goto fail;
	/* The descriptors are ours now: an unmap of their guest page need not wait for the copy. */
	ctrlr_req_data_done(req);
	cp->fua = sqe->cdw12 & NVME_RW_FUA;
	cp->dst = sdlba;
	cp->idx = 0;
	ctrlr_copy_range_start(req, cp);
	req->step.buf = cp;
	ctrlr_copy_next(req);
	return;

fail:
	/* Nothing was written: CDW0 stays 0 (the lowest range not copied). */
	free(cp);
fail_count:
	__atomic_sub_fetch(&ctrlr_nvm(ctrlr)->copies_active, 1, __ATOMIC_RELAXED);
	ctrlr_req_complete(req, st);
}
