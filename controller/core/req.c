/* controller/core/req.c - a request's life from the SQE the queue fetched to its CQE: dispatch
 * (parse: the fused pair, vendor commands, the module's command by opcode after the namespace,
 * access and gate checks; then the module's handler), the Abort tag it carries while it runs,
 * data pointer mapping and copies, namespace lookups, bdev submission, and the single completion
 * funnel (CQE, error log, counters, trace). The walk of one I/O: queue.c fetches into a request
 * of the SQ's pool (queue_mem.c), this file dispatches it to a module's handler (nvm/io_cmd.c),
 * maps its data and submits its bdev I/O; the handler's completion comes back to
 * ctrlr_req_complete, cq.c posts the CQE, the request returns to the pool. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

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

void ctrlr_req_post(struct ctrlr_req *req, void (*fn)(void *arg))
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	if (req->sq->qid)
		ctrlr->ops->io_post(ctrlr->tctx, req->sq, &req->hop, fn, req);
	else
		ctrlr->ops->admin_post(ctrlr->tctx, &req->hop, fn, req);
}

void ctrlr_req_complete(struct ctrlr_req *req, uint16_t status)
{
	struct ctrlr_sq *sq = req->sq;
	struct ctrlr *ctrlr = sq->ctrlr;
	uint16_t abort_st;

	/* The module's end of the command first, while req->ns is held (a write leaves the
	 * namespace's range locks, nvm/fused.c). */
	while (req->end_fn) {
		bool (*end)(struct ctrlr_req *req, uint16_t *status) = req->end_fn;

		req->end_fn = NULL;
		if (end(req, &status))
			return; /* held: the module completes it later */
	}
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
			CTRLR_MODULES_CALL(ctrlr, media_error, ctrlr, status);
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
	/* The format for the whole command (one word: a Format racing with I/O can garble data,
	 * never sizes). */
	req->fmt.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE);
	req->lbaf = &ns->lbafs[req->fmt.f.lbaf];
	return NVME_SC_SUCCESS;
}

static void ctrlr_req_iov_copy(const struct ctrlr_req *req, uint64_t off, char *buf, size_t len,
			      bool to_iov)
{
	for (int i = 0; i < req->iovcnt && len; i++) {
		size_t il = req->iov[i].iov_len;

		if (off >= il) {
			off -= il;
			continue;
		}
		size_t c = il - off < len ? il - off : len;
		char *at = (char *)req->iov[i].iov_base + off;

		memcpy(to_iov ? at : buf, to_iov ? buf : at, c);
		buf += c;
		len -= c;
		off = 0;
	}
}

void ctrlr_req_iov_read(const struct ctrlr_req *req, uint64_t off, void *dst, size_t len)
{
	ctrlr_req_iov_copy(req, off, dst, len, false);
}

void ctrlr_req_iov_write(struct ctrlr_req *req, uint64_t off, const void *src, size_t len)
{
	ctrlr_req_iov_copy(req, off, (char *)src, len, true);
}

static void ctrlr_req_bio_done(struct bdev_io *io, int status, void *cb_arg)
{
	struct ctrlr_req *req = cb_arg;

	io->placement = 0; /* the next use of the io places nothing unless it says so */
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

/* ---- Abort's tag: who ends a running command ---- */

void ctrlr_abort_arm(struct ctrlr_req *req)
{
	/* A new generation each time the slot is reused: a stale Abort cannot mark its successor. */
	req->abort_gen = (uint16_t)((req->abort_gen + 1) & 0x3fff);
	if (!req->abort_gen)
		req->abort_gen = 1;
	req->abort_tag = (uint32_t)req->abort_gen << 16 | req->sqe.cdw0.bits.cid;
}

uint16_t ctrlr_abort_seal(struct ctrlr_req *req)
{
	/* Owner-thread memory (marks are written here too, abort.c): no locked instruction. */
	uint32_t tag = req->abort_tag;

	req->abort_tag = 0;
	if (!(tag & CTRLR_ABORT_MARKS))
		return NVME_SC_SUCCESS;
	if (req->preempt_drain)
		ctrlr_abort_preempt_drained(req);
	return tag & CTRLR_ABORT_MARK ? NVME_SC_ABORT_REQ : NVME_SC_PREEMPT_ABORT;
}

/* ---- vendor-specific commands: the table (ctrlr.h) ---- */

static const struct ctrlr_vendor_cmd *ctrlr_vendor_lookup(const struct ctrlr *ctrlr, bool io,
						   uint8_t opcode)
{
	struct ctrlr_vendor_entry *e = CTRLR_LOAD(ctrlr->vendor[io][opcode]);

	return e ? &e->cmd : NULL;
}

uint32_t ctrlr_vendor_effects(const struct ctrlr *ctrlr, bool io, uint8_t opcode)
{
	const struct ctrlr_vendor_cmd *v = ctrlr_vendor_lookup(ctrlr, io, opcode);

	return v ? v->effects | NVME_CMD_EFFECTS_CSUPP : 0;
}

int ctrlr_vendor_register(struct ctrlr *ctrlr, const struct ctrlr_vendor_cmd *cmd)
{
	struct ctrlr_vendor_entry *e;

	if (!cmd || !cmd->fn)
		return -EINVAL;
	if (cmd->opcode < (cmd->io ? NVME_CMD_VENDOR_FIRST : NVME_ADM_VENDOR_FIRST))
		return -EINVAL;
	if (ctrlr->vendor[cmd->io][cmd->opcode])
		return -EEXIST;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cmd = *cmd;
	CTRLR_STORE(ctrlr->vendor[cmd->io][cmd->opcode], e);
	return 0;
}

int ctrlr_vendor_unregister(struct ctrlr *ctrlr, bool io, uint8_t opcode)
{
	struct ctrlr_vendor_entry *e = ctrlr->vendor[io][opcode];

	if (!e)
		return -ENOENT;
	CTRLR_STORE(ctrlr->vendor[io][opcode], NULL);
	/* An owner thread may have looked it up just before: keep it until destroy. */
	e->dead_next = ctrlr->dead_vendor;
	ctrlr->dead_vendor = e;
	return 0;
}

void ctrlr_vendor_free_all(struct ctrlr *ctrlr)
{
	for (int io = 0; io < 2; io++)
		for (int op = 0; op < 256; op++) {
			free(ctrlr->vendor[io][op]);
			ctrlr->vendor[io][op] = NULL;
		}
	while (ctrlr->dead_vendor) {
		struct ctrlr_vendor_entry *e = ctrlr->dead_vendor;

		ctrlr->dead_vendor = e->dead_next;
		free(e);
	}
}

void ctrlr_vendor_dispatch(struct ctrlr_req *req, bool io)
{
	const struct ctrlr_vendor_cmd *v = ctrlr_vendor_lookup(req->sq->ctrlr, io,
							       req->sqe.cdw0.bits.opc);
	uint16_t st;

	if (!v)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	st = v->needs_ns ? ctrlr_req_get_ns(req) : NVME_SC_SUCCESS;
	/* On an I/O queue: a reservation refuses writes if its effects say it changes the
	 * media, reads otherwise; then the gate, as for any I/O command (req.c). */
	if (io && !st && req->ns)
		st = ctrlr_req_check_access(req, (v->effects & NVME_CMD_EFFECTS_LBCC)
							 ? CTRLR_ACCESS_WRITE
							 : CTRLR_ACCESS_READ);
	if (io && !st)
		st = ctrlr_io_gate(req->sq->ctrlr);
	if (st)
		return ctrlr_req_complete(req, st);
	LOG_TRACE(CTRLR_LOG, "vendor %s command 0x%02x on qid %u", v->name ? v->name : "?",
		  v->opcode, req->sq->qid);
	v->fn(req, v->arg);
}

/* ---- dispatch: parse, then the module's handler ---- */

/* A fused first command and the second command in the next ring slot, taken together (Base 2.0
 * section 3.4.2); the module that runs fused operations gets both. */
static void ctrlr_req_fused(struct ctrlr_req *req)
{
	struct ctrlr_sq *sq = req->sq;
	uint32_t fuse = req->sqe.cdw0.bits.fuse;
	struct ctrlr_req *second;

	/* A second command is taken together with its first: met alone, its first is missing. */
	if (fuse == NVME_FUSE_SECOND)
		return ctrlr_req_complete(req, NVME_SC_FUSED_MISSING);
	if (fuse != NVME_FUSE_FIRST || !sq->ctrlr->io_fused)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD, 1);
	/* The host submits both together, the second in the next slot: it is in the ring already
	 * (the tail was read and fenced before this command was copied). */
	if (!sq->ring || sq->head == sq->tail ||
	    sq->ring[sq->head].cdw0.bits.fuse != NVME_FUSE_SECOND) {
		/* Only Compare may be a first command (FUSES): anything else is refused as such. */
		if (req->sqe.cdw0.bits.opc != NVME_CMD_COMPARE)
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD, 0);
		return ctrlr_req_complete(req, NVME_SC_FUSED_MISSING);
	}
	second = ctrlr_req_get(sq);
	if (!second) {
		/* More commands in flight than the queue holds (a host reusing slots early): the
		 * first asks for a retry; the second will then be met alone. */
		return ctrlr_req_complete(req, NVME_SC_CMD_INTERRUPTED);
	}
	memcpy(&second->sqe, &sq->ring[sq->head], sizeof(second->sqe));
	sq->head = (sq->head + 1) % sq->size;
	req->fused = second;
	second->fused = req;
	sq->ctrlr->io_fused(req, second);
}

void ctrlr_io_dispatch(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t opc = req->sqe.cdw0.bits.opc;
	const struct ctrlr_cmd *cmd;
	uint16_t st;

	LOG_TRACE(CTRLR_LOG, "io qid %u cid %u opc 0x%02x nsid %u", req->sq->qid,
		  req->sqe.cdw0.bits.cid, opc, req->sqe.nsid);
	ctrlr_abort_arm(req);
	if (req->sqe.cdw0.bits.fuse)
		return ctrlr_req_fused(req);
	if (opc >= NVME_CMD_VENDOR_FIRST)
		return ctrlr_vendor_dispatch(req, true);
	cmd = ctrlr->io_cmd[opc];
	/* A command of another I/O command set than NVM's exists only with CC.CSS 110b (Base 2.0
	 * 3.1.3.5). */
	if (!cmd || (cmd->csi != NVME_CSI_NVM && ctrlr->cc.bits.css != NVME_CC_CSS_IOCS))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	if (cmd->any_nsid && req->sqe.nsid == NVME_NSID_ALL) {
		st = ctrlr_io_gate(ctrlr);
		if (st)
			return ctrlr_req_complete(req, st);
		return cmd->exec(req);
	}
	st = ctrlr_req_get_ns(req);
	if (!st)
		st = ctrlr_req_check_access(req, cmd->access); /* Reservation Conflict */
	/* The gate (Sanitize) after the namespace was taken, which its drain waits for. */
	if (!st)
		st = ctrlr_io_gate(ctrlr);
	if (st)
		return ctrlr_req_complete(req, st);
	/* A command of a command set the namespace is not associated with. */
	if (cmd->csi != NVME_CSI_NVM && req->ns->csi != cmd->csi)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	/* Commands that change blocks wait behind an overlapping fused Compare and Write. */
	if ((cmd->effects & NVME_CMD_EFFECTS_LBCC) && ctrlr->io_write_begin &&
	    ctrlr->io_write_begin(req, cmd->exec))
		return;
	cmd->exec(req);
}

void ctrlr_admin_dispatch(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t opc = req->sqe.cdw0.bits.opc;
	uint16_t st = 0;

	LOG_TRACE(CTRLR_LOG, "admin cid %u opc 0x%02x nsid %u", req->sqe.cdw0.bits.cid, opc,
		  req->sqe.nsid);
	if (req->sqe.cdw0.bits.fuse)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD, 1);
	ctrlr_abort_arm(req);
	/* A module may hold admin commands back (Sanitize lets only a few through, 8.21). */
	for (uint32_t i = 0; !st && i < ctrlr->nr_modules; i++)
		if (ctrlr->modules[i] && ctrlr->modules[i]->admin_gate)
			st = ctrlr->modules[i]->admin_gate(req);
	if (st)
		return ctrlr_req_complete(req, st);
	if (opc >= NVME_ADM_VENDOR_FIRST)
		return ctrlr_vendor_dispatch(req, false);
	if (!ctrlr_admin_effects(ctrlr, opc))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	ctrlr->admin_cmd[opc]->exec(req);
}

uint32_t ctrlr_admin_effects(const struct ctrlr *ctrlr, uint8_t opcode)
{
	const struct ctrlr_cmd *cmd = ctrlr->admin_cmd[opcode];

	if (opcode >= NVME_ADM_VENDOR_FIRST)
		return ctrlr_vendor_effects(ctrlr, false, opcode);
	if (!cmd || (cmd->supported && !cmd->supported(ctrlr)))
		return 0;
	return cmd->effects;
}

uint32_t ctrlr_io_effects(const struct ctrlr *ctrlr, uint8_t csi, uint8_t opcode)
{
	const struct ctrlr_cmd *cmd = ctrlr->io_cmd[opcode];

	if (opcode >= NVME_CMD_VENDOR_FIRST)
		return ctrlr_vendor_effects(ctrlr, true, opcode);
	/* The NVM commands belong to every I/O command set; the others to their own. */
	if (!cmd || (cmd->csi != NVME_CSI_NVM && cmd->csi != csi))
		return 0;
	return cmd->effects;
}
