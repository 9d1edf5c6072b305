/* controller/req.c - requests: the per-SQ pool, the single completion funnel (CQE, error log,
 * counters, trace), data pointer mapping and copies, namespace lookups and epochs, bdev
 * submission. */
#include <errno.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/ctrlr_internal.h"

struct ctrlr_req *ctrlr_req_get(struct ctrlr_sq *sq)
{
	struct ctrlr_req *req = sq->free_list;

	if (!req)
		return NULL;
	sq->free_list = req->next;
	sq->inflight++;
	sq->cq->inflight++;
	req->cq_open = true;
	req->next = NULL;
	req->state = CTRLR_REQ_EXEC;
	req->epoch = sq->epoch;
	sq->epoch_users[req->epoch]++;
	/* Owner-thread counts, not a reference on the namespace: see ctrlr.c, grace periods. */
	req->ns_epoch = sq->ns_epoch;
	sq->ns_users[req->ns_epoch]++;
	req->cdw0 = 0;
	req->cdw1 = 0;
	req->t_start_ns = evloop_clock_ns();
	req->status = 0;
	req->error_loc = 0xffff;
	req->error_lba = 0;
	req->ns = NULL;
	req->lbaf = NULL;
	req->iovcnt = 0;
	req->data_len = 0;
	req->io_done = NULL;
	req->step.buf = NULL;
	req->fused = NULL;
	req->caw_state = CTRLR_CAW_NONE;
	return req;
}

void ctrlr_req_ns_end(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;
	uint8_t ep = req->ns_epoch;

	if (ep == CTRLR_NS_EPOCH_NONE)
		return;
	req->ns_epoch = CTRLR_NS_EPOCH_NONE;
	if (--sq->ns_users[ep] == 0 && sq->ns_fence && ep != sq->ns_epoch) {
		struct ctrlr_visit *v = sq->ns_fence;

		sq->ns_fence = NULL;
		ctrlr_visit_release(v);
	}
}

void ctrlr_req_free(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;

	ctrlr_req_data_done(req);
	ctrlr_req_ns_end(req);
	ctrlr_cq_req_close(sq->cq, req);
	req->state = CTRLR_REQ_FREE;
	req->next = sq->free_list;
	sq->free_list = req;
	if (--sq->inflight == 0 && sq->stop_done) {
		void (*done)(void *arg) = sq->stop_done;

		sq->stop_done = NULL;
		done(sq->stop_arg);
	}
}

void ctrlr_error_log_add(struct ctrlr *ctrlr, const struct ctrlr_req *req, uint16_t status)
{
	/* Any thread: a ticket picks the slot, so concurrent failures never share one. A reader on
	 * the admin thread may see an entry being written; the count still says what happened. */
	ctrlr_error_log_put(ctrlr, req->sq->qid, req->sqe.cdw0.bits.cid, status, req->error_loc,
			    req->error_lba, req->sqe.nsid);
}

void ctrlr_error_log_put(struct ctrlr *ctrlr, uint16_t sqid, uint16_t cid, uint16_t status,
			 uint16_t loc, uint64_t lba, uint32_t nsid)
{
	uint64_t n = __atomic_add_fetch(&ctrlr->error_count, 1, __ATOMIC_RELAXED);
	struct nvme_error_log_entry *e = &ctrlr->error_log[(n - 1) % CTRLR_ERROR_LOG_ENTRIES];

	memset(e, 0, sizeof(*e));
	e->error_count = n;
	e->sqid = sqid;
	e->cid = cid;
	e->status = (uint16_t)(status << 1);
	e->param_error_location = loc;
	e->lba = lba;
	e->nsid = nsid;
}

/* Statuses the host may retry: no DNR. */
static bool ctrlr_status_retryable(uint16_t status)
{
	return status == NVME_SC_INTERNAL || status == NVME_SC_ABORT_SQ_DELETION ||
	       status == NVME_SC_ABORT_REQ || status == NVME_SC_CMD_INTERRUPTED;
}

void ctrlr_req_complete_err(struct ctrlr_req *req, uint16_t status, uint16_t loc)
{
	req->error_loc = loc;
	ctrlr_req_complete(req, status);
}

void ctrlr_req_complete(struct ctrlr_req *req, uint16_t status)
{
	struct ctrlr_sq *sq = req->sq;
	struct ctrlr *ctrlr = sq->ctrlr;
	uint16_t abort_st;

	/* A write ends its part in the namespace's range locks (io_fused.c). */
	if (req->caw_state)
		ctrlr_caw_write_end(req);
	/* Whatever the command did with guest data is over (a fence may be waiting for it). */
	ctrlr_req_data_done(req);
	abort_st = ctrlr_abort_seal(req);
	if (abort_st)
		status = abort_st;
	if (status && !ctrlr_status_retryable(status & 0x7ff))
		status |= NVME_DNR;
	req->status = status;
	/* Done with namespaces before the CQE, which may wait for room as long as the host likes:
	 * a removal's grace period does not wait for it. */
	if (req->ns) {
		if (!sq->qid)
			ctrlr_ns_put(req->ns);
		req->ns = NULL;
	}
	ctrlr_req_ns_end(req);
	ctrlr_iostat_complete(req, status);
	if (sq->qid)
		CTRLR_SQ_STAT_ADD(sq, io_cmds, 1);
	else
		CTRLR_SQ_STAT_ADD(sq, admin_cmds, 1);
	if (status) {
		CTRLR_SQ_STAT_ADD(sq, errors, 1);
		if (NVME_STATUS_SCT(status) == NVME_SCT_MEDIA) {
			CTRLR_SQ_STAT_ADD(sq, media_errors, 1);
			ctrlr_pel_media_error_async(ctrlr, status);
		}
		ctrlr_error_log_add(ctrlr, req, status);
	}
	LOG_TRACE(CTRLR_LOG, "done qid %u cid %u opc 0x%02x nsid %u status 0x%04x cdw0 0x%x",
		  sq->qid, req->sqe.cdw0.bits.cid, req->sqe.cdw0.bits.opc, req->sqe.nsid, status,
		  req->cdw0);
	/* Nothing reaches guest memory once the SQ is being deleted or the controller resets. */
	if (CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED) {
		ctrlr_req_free(req);
		return;
	}
	ctrlr_cq_post(sq->cq, req);
}

static void *ctrlr_req_mem_map(void *mctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	struct ctrlr *ctrlr = mctx;

	return ctrlr->ops->mem_map(ctrlr->tctx, addr, len, dir);
}

uint64_t ctrlr_mdts_bytes(const struct ctrlr *ctrlr)
{
	return ((uint64_t)1 << ctrlr->cfg.mdts) << (CTRLR_PAGE_SHIFT_MIN + CTRLR_MPSMIN);
}

uint16_t ctrlr_req_map_data(struct ctrlr_req *req, uint64_t len, unsigned int dir)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	const struct nvme_sqe *sqe = &req->sqe;
	uint16_t st;

	req->iovcnt = 0;
	req->data_len = len;
	if (len > ctrlr_mdts_bytes(ctrlr)) {
		req->error_loc = offsetof(struct nvme_sqe, cdw12);
		return NVME_SC_INVALID_FIELD;
	}
	switch (sqe->cdw0.bits.psdt) {
	case NVME_PSDT_PRP:
		st = ctrlr_prp_map(ctrlr_req_mem_map, ctrlr, sqe->dptr.prp.prp1, sqe->dptr.prp.prp2,
				   len, ctrlr->page_size, dir, req->iov, (int)req->sq->max_iov,
				   &req->iovcnt);
		break;
	case NVME_PSDT_SGL_MPTR_CONTIG:
	case NVME_PSDT_SGL_MPTR_SGL:
		/* SGLs are for I/O commands only over PCIe (section 4.1.2). */
		if (!ctrlr->cfg.sgl || req->sq->qid == 0) {
			req->error_loc = 1; /* PSDT lives in byte 1 of CDW0 */
			return NVME_SC_INVALID_FIELD;
		}
		st = ctrlr_sgl_map(ctrlr_req_mem_map, ctrlr, &sqe->dptr.sgl, len, dir, req->iov,
				   (int)req->sq->max_iov, &req->iovcnt);
		break;
	default:
		req->error_loc = 1;
		return NVME_SC_INVALID_FIELD;
	}
	if (st && req->error_loc == 0xffff)
		req->error_loc = offsetof(struct nvme_sqe, dptr);
	return st;
}

/* The metadata pointer (Base 2.0 section 4.2, MPTR): with PRPs (PSDT 00b) a dword aligned
 * contiguous buffer; with SGLs a contiguous buffer (01b, any alignment: SGLS bit 17) or the
 * address of one SGL descriptor (10b, SGLS bit 19) walked like the data's first descriptor. */
uint16_t ctrlr_req_map_md(struct ctrlr_req *req, uint64_t len, unsigned int dir,
			  struct iovec *iov, int max_iov, int *iovcnt)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	const struct nvme_sqe *sqe = &req->sqe;
	struct nvme_sgl_desc d;
	const void *dp;
	void *p;
	uint16_t st;

	*iovcnt = 0;
	req->error_loc = offsetof(struct nvme_sqe, mptr);
	switch (sqe->cdw0.bits.psdt) {
	case NVME_PSDT_PRP:
		if (sqe->mptr & 3)
			return NVME_SC_INVALID_FIELD;
		/* fall through */
	case NVME_PSDT_SGL_MPTR_CONTIG:
		p = ctrlr_req_mem_map(ctrlr, sqe->mptr, len, dir);
		if (!p)
			return NVME_SC_DATA_XFER_ERROR;
		iov[0].iov_base = p;
		iov[0].iov_len = len;
		*iovcnt = 1;
		break;
	case NVME_PSDT_SGL_MPTR_SGL:
		if (!ctrlr->cfg.sgl || req->sq->qid == 0) {
			req->error_loc = 1;
			return NVME_SC_INVALID_FIELD;
		}
		dp = ctrlr_req_mem_map(ctrlr, sqe->mptr, sizeof(d), CTRLR_DMA_READ);
		if (!dp)
			return NVME_SC_DATA_XFER_ERROR;
		memcpy(&d, dp, sizeof(d)); /* read once: the guest may change it */
		st = ctrlr_sgl_map(ctrlr_req_mem_map, ctrlr, &d, len, dir, iov, max_iov, iovcnt);
		if (st == NVME_SC_SGL_INVALID_DATA_LEN)
			st = NVME_SC_SGL_INVALID_MD_LEN;
		if (st)
			return st;
		break;
	default:
		req->error_loc = 1;
		return NVME_SC_INVALID_FIELD;
	}
	req->error_loc = 0xffff;
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_req_copy_to_host(struct ctrlr_req *req, const void *buf, uint64_t len)
{
	uint16_t st = ctrlr_req_map_data(req, len, CTRLR_DMA_WRITE);
	const char *src = buf;

	if (st)
		return st;
	for (int i = 0; i < req->iovcnt; i++) {
		memcpy(req->iov[i].iov_base, src, req->iov[i].iov_len);
		src += req->iov[i].iov_len;
	}
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_req_copy_from_host(struct ctrlr_req *req, void *buf, uint64_t len)
{
	uint16_t st = ctrlr_req_map_data(req, len, CTRLR_DMA_READ);
	char *dst = buf;

	if (st)
		return st;
	for (int i = 0; i < req->iovcnt; i++) {
		memcpy(dst, req->iov[i].iov_base, req->iov[i].iov_len);
		dst += req->iov[i].iov_len;
	}
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_req_get_ns(struct ctrlr_req *req)
{
	/* The admin queue's commands may outlive a removal on this very thread (Format on a bdev):
	 * a reference. An I/O queue's are covered by their namespace epoch. */
	struct ctrlr_ns *ns = req->sq->qid ? ctrlr_req_ns_lookup(req, req->sqe.nsid)
					   : ctrlr_ns_get(req->sq->ctrlr, req->sqe.nsid);

	if (!ns) {
		req->error_loc = offsetof(struct nvme_sqe, nsid);
		return NVME_SC_INVALID_NS;
	}
	req->ns = ns;
	ctrlr_ns_fmt_load(req);
	return NVME_SC_SUCCESS;
}

static void ctrlr_req_bio_done(struct bdev_io *io, int status, void *cb_arg)
{
	struct ctrlr_req *req = cb_arg;

	req->io_done(req, status);
}

uint16_t ctrlr_req_submit_bio(struct ctrlr_req *req, ctrlr_req_io_done_fn done)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct bdev_channel *ch;

	ch = ctrlr->ops->get_channel(ctrlr->tctx, req->sq, req->ns->bdev);
	if (!ch)
		return NVME_SC_INTERNAL;
	req->io_done = done;
	req->bio->cb = ctrlr_req_bio_done;
	req->bio->cb_arg = req;
	bdev_submit(ch, req->bio);
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_bdev_status(int status, bool is_write)
{
	/* A status the bdev chose (error injection): given to the host as it is. */
	if (BDEV_STATUS_IS_NVME(status))
		return BDEV_STATUS_NVME_CODE(status);
	switch (status) {
	case 0:
		return NVME_SC_SUCCESS;
	case -ERANGE:
		return NVME_SC_LBA_RANGE;
	case -EINVAL:
		return NVME_SC_INVALID_FIELD;
	case -ENOTSUP:
		return NVME_SC_INVALID_OPCODE;
	case -ENOSPC:
		return NVME_SC_CAP_EXCEEDED;
	case -ENOMEM:
		return NVME_SC_INTERNAL;
	default:
		return is_write ? NVME_SC_WRITE_FAULT : NVME_SC_UNRECOVERED_READ;
	}
}

void ctrlr_copy_padded(char *dst, const char *src, size_t len)
{
	size_t n = src ? strnlen(src, len) : 0;

	/* Identify strings are space padded, not NUL terminated. */
	memset(dst, ' ', len);
	if (n)
		memcpy(dst, src, n);
}
