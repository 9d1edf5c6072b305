/* controller/nvm/md.c - Read, Write, Compare, Verify and Write Zeroes (PRACT) on LBA formats with
 * metadata (NVM Command Set 1.0 sections 3.3, 5.2): the metadata travels in extended LBAs or in
 * the separate buffer at MPTR, protection information is generated, checked, inserted or stripped
 * as PRINFO says. Blocks move through a bounce buffer laid out as the bdev holds them (each block
 * its data, its metadata, zero padding to whole bdev blocks), a chunk at a time. Owner thread of
 * the SQ. */
#include <stdlib.h>
#include <string.h>

#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"

#define CTRLR_MD_CHUNK (64u * 1024) /* bounce bytes: at least 7 blocks of the largest stride */
#define CTRLR_MD_MAX_IOV 16	    /* pieces of a metadata SGL */

enum ctrlr_md_op {
	CTRLR_MD_READ = 0,
	CTRLR_MD_WRITE,
	CTRLR_MD_COMPARE,
	CTRLR_MD_VERIFY,
	CTRLR_MD_ZEROES, /* Write Zeroes with PRACT: zero data, generated protection information */
};

/* One request's metadata state, allocated the first time the request carries such a command
 * and kept with it until its SQ goes (no allocation on the data path after warm-up). */
struct ctrlr_md_io {
	uint16_t placement; /* Write: the bdev placement handle (io_write_place) */
	unsigned char *buf; /* CTRLR_MD_CHUNK bytes, 4 KiB aligned (O_DIRECT bdevs) */
	struct iovec biov;
	struct iovec md_iov[CTRLR_MD_MAX_IOV]; /* the host's separate metadata buffer */
	int md_iovcnt;
	enum ctrlr_md_op op;
	bool write;	/* the bdev is written */
	bool xfer_md;	/* the host's buffers hold metadata (not PRACT with a tuple-only ms) */
	bool ext;	/* ... at the end of each block's data (else at MPTR) */
	bool mismatch;	/* Compare: a difference seen */
	uint64_t slba, lba, left; /* the command's first block, the chunk's, blocks left after it */
	uint32_t chunk;		  /* blocks in buf */
	uint64_t ref;		  /* reference tag of block `lba` */
	struct ctrlr_pi pi;
};

void ctrlr_io_md_sq_fini(struct ctrlr_sq *sq)
{
	for (uint32_t i = 0; sq->reqs && i < sq->size; i++) {
		struct ctrlr_md_io *m = sq->reqs[i].md;

		if (m) {
			free(m->buf);
			free(m);
			sq->reqs[i].md = NULL;
		}
	}
}

static struct ctrlr_md_io *ctrlr_md_get(struct ctrlr_req *req)
{
	struct ctrlr_md_io *m = req->md;

	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->buf = aligned_alloc(4096, CTRLR_MD_CHUNK);
	if (!m->buf) {
		free(m);
		return NULL;
	}
	/* A bdev may leave a read buffer as it is (the null bdev): what the host can ever read
	 * from here is zeroes or what its own commands put here, never the daemon's heap. */
	memset(m->buf, 0, CTRLR_MD_CHUNK);
	req->md = m;
	return m;
}

/* Copies between buf and bytes [off, +len) of an iovec, in either direction. */
static void ctrlr_md_iov_copy(const struct iovec *iov, int cnt, uint64_t off, void *buf, size_t len,
			      bool to_iov)
{
	char *b = buf;

	for (int i = 0; i < cnt && len; i++) {
		size_t il = iov[i].iov_len;

		if (off >= il) {
			off -= il;
			continue;
		}
		size_t c = il - off < len ? il - off : len;
		char *at = (char *)iov[i].iov_base + off;

		memcpy(to_iov ? at : b, to_iov ? b : at, c);
		b += c;
		len -= c;
		off = 0;
	}
}

static bool ctrlr_md_iov_equal(const struct iovec *iov, int cnt, uint64_t off, const void *buf,
			       size_t len)
{
	const char *b = buf;

	for (int i = 0; i < cnt && len; i++) {
		size_t il = iov[i].iov_len;

		if (off >= il) {
			off -= il;
			continue;
		}
		size_t c = il - off < len ? il - off : len;

		if (memcmp((char *)iov[i].iov_base + off, b, c))
			return false;
		b += c;
		len -= c;
		off = 0;
	}
	return true;
}

/* Where block k (of the command) sits in the host's buffers. */
static uint64_t ctrlr_md_data_off(const struct ctrlr_req *req, const struct ctrlr_md_io *m,
				  uint64_t k)
{
	return k * (req->lbaf->ds + (m->ext && m->xfer_md ? req->lbaf->ms : 0));
}

static void ctrlr_md_finish(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr_md_io *m = req->md;

	if (!st && m->op == CTRLR_MD_COMPARE && m->mismatch)
		st = NVME_SC_COMPARE_FAILED;
	if (!st && m->op != CTRLR_MD_ZEROES) {
		if (m->write) {
			CTRLR_SQ_STAT_ADD(req->sq, host_write_cmds, 1);
			CTRLR_SQ_STAT_ADD(req->sq, bytes_written, req->data_len);
		} else {
			CTRLR_SQ_STAT_ADD(req->sq, host_read_cmds, 1);
			CTRLR_SQ_STAT_ADD(req->sq, bytes_read, req->data_len);
		}
	}
	if (st && !req->error_lba)
		req->error_lba = m->slba;
	ctrlr_req_complete(req, st);
}

static void ctrlr_md_submit(struct ctrlr_req *req);

/* Fills the chunk from the host (Write) or zeroes (Write Zeroes), with protection information
 * checked or generated, then stored inverted. Returns 0 or the status of the first bad block. */
static uint16_t ctrlr_md_fill(struct ctrlr_req *req, struct ctrlr_md_io *m)
{
	const struct ctrlr_lbaf *l = req->lbaf;
	bool pract = CTRLR_PRINFO(req->sqe.cdw12) & CTRLR_PRINFO_PRACT;
	uint64_t ref = m->ref;
	uint16_t st;

	memset(m->buf, 0, (size_t)m->chunk * l->stride);
	for (uint32_t i = 0; i < m->chunk; i++) {
		unsigned char *blk = m->buf + (size_t)i * l->stride, *md = blk + l->ds;
		uint64_t k = m->lba - m->slba + i, off = ctrlr_md_data_off(req, m, k);

		if (m->op == CTRLR_MD_WRITE) {
			ctrlr_req_iov_read(req, off, blk, l->ds);
			if (m->xfer_md && m->ext)
				ctrlr_req_iov_read(req, off + l->ds, md, l->ms);
			else if (m->xfer_md)
				ctrlr_md_iov_copy(m->md_iov, m->md_iovcnt, k * l->ms, md, l->ms, false);
		}
		if (req->fmt.f.pi) {
			if (pract) {
				ctrlr_pi_generate(&m->pi, blk, md, ref);
			} else {
				st = ctrlr_pi_check(&m->pi, blk, md, ref);
				if (st) {
					req->error_lba = m->lba + i;
					return st;
				}
			}
			ctrlr_pi_flip(&m->pi, md);
			ref = ctrlr_pi_ref_next(&m->pi, ref);
		}
	}
	m->ref = ref;
	return NVME_SC_SUCCESS;
}

/* A chunk read from the bdev: protection information checked, then data and metadata to the
 * host (Read), compared with the host's (Compare) or nothing more (Verify). */
static uint16_t ctrlr_md_drain(struct ctrlr_req *req, struct ctrlr_md_io *m)
{
	const struct ctrlr_lbaf *l = req->lbaf;
	uint64_t ref = m->ref;
	uint16_t st;

	for (uint32_t i = 0; i < m->chunk; i++) {
		unsigned char *blk = m->buf + (size_t)i * l->stride, *md = blk + l->ds;
		uint64_t k = m->lba - m->slba + i, off = ctrlr_md_data_off(req, m, k);

		if (req->fmt.f.pi) {
			ctrlr_pi_flip(&m->pi, md);
			st = ctrlr_pi_check(&m->pi, blk, md, ref);
			if (st) {
				req->error_lba = m->lba + i;
				return st;
			}
			ref = ctrlr_pi_ref_next(&m->pi, ref);
		}
		if (m->op == CTRLR_MD_READ) {
			ctrlr_req_iov_write(req, off, blk, l->ds);
			if (m->xfer_md && m->ext)
				ctrlr_req_iov_write(req, off + l->ds, md, l->ms);
			else if (m->xfer_md)
				ctrlr_md_iov_copy(m->md_iov, m->md_iovcnt, k * l->ms, md, l->ms, true);
		} else if (m->op == CTRLR_MD_COMPARE && !m->mismatch) {
			if (!ctrlr_md_iov_equal(req->iov, req->iovcnt, off, blk, l->ds))
				m->mismatch = true;
			else if (m->xfer_md && m->ext &&
				 !ctrlr_md_iov_equal(req->iov, req->iovcnt, off + l->ds, md, l->ms))
				m->mismatch = true;
			else if (m->xfer_md && !m->ext &&
				 !ctrlr_md_iov_equal(m->md_iov, m->md_iovcnt, k * l->ms, md, l->ms))
				m->mismatch = true;
		}
	}
	m->ref = ref;
	return NVME_SC_SUCCESS;
}

static void ctrlr_md_chunk_done(struct ctrlr_req *req, int status)
{
	struct ctrlr_md_io *m = req->md;
	uint16_t st = ctrlr_bdev_status(status, m->write);

	if (!st && m->write && ctrlr_uncor_clear(ctrlr_nvm_ns(req->ns)->uncor, m->lba, m->chunk))
		st = NVME_SC_INTERNAL; /* written blocks are readable again */
	if (!st && !m->write)
		st = ctrlr_md_drain(req, m);
	if (st)
		return ctrlr_md_finish(req, st);
	m->lba += m->chunk;
	if (!m->left)
		return ctrlr_md_finish(req, NVME_SC_SUCCESS);
	ctrlr_md_submit(req);
}

static void ctrlr_md_submit(struct ctrlr_req *req)
{
	struct ctrlr_md_io *m = req->md;
	const struct ctrlr_lbaf *l = req->lbaf;
	uint32_t per = CTRLR_MD_CHUNK / l->stride;
	struct bdev_io *bio = req->bio;
	uint16_t st;

	m->chunk = (uint32_t)(m->left < per ? m->left : per);
	m->left -= m->chunk;
	if (m->write) {
		st = ctrlr_md_fill(req, m);
		if (st)
			return ctrlr_md_finish(req, st);
	}
	memset(bio, 0, sizeof(*bio));
	m->biov.iov_base = m->buf;
	m->biov.iov_len = (size_t)m->chunk * l->stride;
	bio->type = m->write ? BDEV_IO_WRITE : BDEV_IO_READ;
	bio->flags = m->write && (req->sqe.cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
	bio->placement = m->write ? m->placement : 0;
	bio->offset_blocks = ctrlr_req_bdev_blocks(req, m->lba);
	bio->num_blocks = ctrlr_req_bdev_blocks(req, m->chunk);
	bio->iov = &m->biov;
	bio->iovcnt = 1;
	st = ctrlr_req_submit_bio(req, ctrlr_md_chunk_done);
	if (st)
		ctrlr_md_finish(req, st);
}

/* Checks and maps the command, then moves its first chunk. */
static void ctrlr_md_start(struct ctrlr_req *req, enum ctrlr_md_op op)
{
	const struct nvme_sqe *sqe = &req->sqe;
	const struct ctrlr_lbaf *l = req->lbaf;
	uint64_t slba = ctrlr_sqe_slba(sqe), nlb = (sqe->cdw12 & NVME_RW_NLB_MASK) + 1;
	uint8_t prinfo = CTRLR_PRINFO(sqe->cdw12);
	bool to_dev = op == CTRLR_MD_WRITE || op == CTRLR_MD_ZEROES;
	bool xfer = op == CTRLR_MD_READ || op == CTRLR_MD_WRITE || op == CTRLR_MD_COMPARE;
	unsigned int dir = op == CTRLR_MD_READ ? CTRLR_DMA_WRITE : CTRLR_DMA_READ;
	struct ctrlr_md_io *m;
	uint64_t ilbrt;
	uint16_t st;

	st = ctrlr_io_check_range(req, slba, nlb);
	if (!st && !to_dev && ctrlr_uncor_overlaps(ctrlr_nvm_ns(req->ns)->uncor, slba, nlb, &req->error_lba))
		st = NVME_SC_UNRECOVERED_READ;
	if (st)
		return ctrlr_req_complete(req, st);
	m = ctrlr_md_get(req);
	if (!m)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	m->op = op;
	m->write = to_dev;
	m->placement = 0;
	m->ext = req->fmt.f.ext;
	m->mismatch = false;
	m->slba = m->lba = slba;
	m->left = nlb;
	m->md_iovcnt = 0;
	memset(&m->pi, 0, sizeof(m->pi));
	/* PRACT with metadata that is only the tuple: the host's buffers carry none (inserted on
	 * writes, stripped on reads, section 5.2.1.2). */
	m->xfer_md = xfer && !(req->fmt.f.pi && (prinfo & CTRLR_PRINFO_PRACT) &&
			       l->ms == ctrlr_pi_tuple_size(l->pif));
	if (req->fmt.f.pi) {
		m->pi.type = req->fmt.f.pi;
		m->pi.pif = l->pif;
		m->pi.first = req->fmt.f.pi_first;
		m->pi.ds = l->ds;
		m->pi.ms = l->ms;
		m->pi.prchk = prinfo & 0x7;
		m->pi.apptag = (uint16_t)sqe->cdw15;
		m->pi.appmask = (uint16_t)(sqe->cdw15 >> 16);
		m->pi.sts = l->sts;
		/* STC: the storage tag is checked (written as given with PRACT; ignored without
		 * one in the format). */
		m->pi.stc = l->sts && (sqe->cdw12 & CTRLR_STC);
		/* The (expected) storage tag and initial reference tag: CDW14, with CDW3 and CDW2
		 * as the format's tags field is wide. */
		ilbrt = ctrlr_pi_split_tags(&m->pi, ctrlr_pi_cmd_tags(l->pif, sqe->cdw2, sqe->cdw3,
								      sqe->cdw14));
		m->ref = ilbrt;
		st = ctrlr_pi_check_ilbrt(&m->pi, slba, ilbrt);
		/* Generating blocks (PRACT on writes) checks nothing that came from the host. */
		if (to_dev && (prinfo & CTRLR_PRINFO_PRACT)) {
			m->pi.prchk = 0;
			m->pi.stc = false;
		}
		if (st) {
			req->error_loc = offsetof(struct nvme_sqe, cdw14);
			return ctrlr_req_complete(req, st);
		}
	}
	if (xfer) {
		st = ctrlr_req_map_data(req, ctrlr_md_data_off(req, m, nlb), dir);
		if (!st && m->xfer_md && !m->ext)
			st = ctrlr_req_map_md(req, nlb * l->ms, dir, m->md_iov, CTRLR_MD_MAX_IOV,
					      &m->md_iovcnt);
		if (st)
			return ctrlr_md_finish(req, st);
	} else {
		req->data_len = nlb * l->ds;
	}
	/* Data placement (a module's io_write_place): DTYPE/DSPEC checked, the handle chosen. */
	if (op == CTRLR_MD_WRITE && req->sq->ctrlr->io_write_place) {
		st = req->sq->ctrlr->io_write_place(req, nlb * l->ds, &m->placement);
		if (st)
			return ctrlr_md_finish(req, st);
	}
	ctrlr_md_submit(req);
}

void ctrlr_io_md_rw(struct ctrlr_req *req)
{
	ctrlr_md_start(req, req->sqe.cdw0.bits.opc == NVME_CMD_WRITE ? CTRLR_MD_WRITE
								     : CTRLR_MD_READ);
}

void ctrlr_io_md_compare(struct ctrlr_req *req)
{
	ctrlr_md_start(req, CTRLR_MD_COMPARE);
}

void ctrlr_io_md_verify(struct ctrlr_req *req)
{
	ctrlr_md_start(req, CTRLR_MD_VERIFY);
}

void ctrlr_io_md_write_zeroes(struct ctrlr_req *req)
{
	ctrlr_md_start(req, CTRLR_MD_ZEROES);
}
