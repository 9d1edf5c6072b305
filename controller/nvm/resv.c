/* controller/nvm/resv.c - reservations (NVMe Base 2.0 section 8.19; commands 7.2-7.5) on the
 * controller: the access words of the I/O path (ctrlr_ns.io_block), notifications (log page 80h,
 * AEN), the four commands, which hop from the I/O queue's owner thread to the admin thread and
 * back (see resv_state.h), Preempt and Abort's marks and fences, and the PTPL feature. The state
 * machine itself is resv_state.c; the state lives in the shared namespace (struct
 * ctrlr_nvm_shared), so every controller of the namespace sees one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"

/* ---- the access words ---- */

uint32_t ctrlr_resv_host_access(const struct ctrlr_nvm_shared *sh, const uint8_t hostid[16])
{
	return ctrlr_resv_access(&sh->resv, hostid) | (sh->store_stale ? CTRLR_RESV_BLOCK_WRITE : 0);
}

void ctrlr_resv_update_access(struct ctrlr_ns_shared *s)
{
	const struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);

	for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
		CTRLR_STORE(ns->io_block, ctrlr_resv_host_access(sh, ns->ctrlr->hostid));
}

void ctrlr_resv_ctrlr_hostid_changed(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (ns && ns->shared)
			CTRLR_STORE(ns->io_block,
				    ctrlr_resv_host_access(ctrlr_nvm_ns(ns)->sh, ctrlr->hostid));
	}
}

bool ctrlr_resv_ctrlr_registered(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (ns && ns->shared && ctrlr_resv_find(&ctrlr_nvm_ns(ns)->sh->resv, ctrlr->hostid))
			return true;
	}
	return false;
}

/* ---- notifications (section 8.19.x, log page 80h) ---- */

static uint32_t ctrlr_resv_mask_bit(uint8_t type)
{
	switch (type) {
	case NVME_RESV_NOTIFY_REG_PREEMPTED:
		return NVME_RESV_MASK_REGPRE;
	case NVME_RESV_NOTIFY_RELEASED:
		return NVME_RESV_MASK_RESREL;
	default:
		return NVME_RESV_MASK_RESPRE;
	}
}

/* Queues a log page on ctrlr and reports Reservation Log Page Available. A full queue drops the
 * page, but the count still moves on: the host sees the gap in Log Page Count. */
static void ctrlr_resv_log_add(struct ctrlr *ctrlr, uint8_t type, uint32_t nsid)
{
	struct ctrlr_nvm_ctrlr *n = ctrlr_nvm(ctrlr);
	uint64_t count = ++n->resv_log_count;

	if (!count) /* 0 means "no page": the count wraps to 1 */
		count = n->resv_log_count = 1;
	if (n->resv_log_n < CTRLR_RESV_LOG_MAX) {
		uint32_t at = (n->resv_log_head + n->resv_log_n++) % CTRLR_RESV_LOG_MAX;

		n->resv_log[at].type = type;
		n->resv_log[at].nsid = nsid;
		n->resv_log[at].count = count;
	} else {
		CTRLR_STAT_ADD(ctrlr->cnt.lost_events, 1);
	}
	if (ctrlr->state == CTRLR_ST_ENABLED)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_IO_SPECIFIC, NVME_AER_IO_RESV_LOG,
				 NVME_LOG_RESV_NOTIFY);
}

/* Every controller of the namespace whose host is in ev gets its page, unless it masked it. */
static void ctrlr_resv_notify(struct ctrlr_ns_shared *s, const struct ctrlr_resv_events *ev)
{
	for (uint32_t i = 0; i < ev->n; i++)
		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
			if (!memcmp(ns->ctrlr->hostid, ev->e[i].hostid, 16) &&
			    !(ctrlr_nvm_ns(ns)->resv_mask & ctrlr_resv_mask_bit(ev->e[i].type)))
				ctrlr_resv_log_add(ns->ctrlr, ev->e[i].type, ns->nsid);
}

size_t ctrlr_log_resv_notify(struct ctrlr *ctrlr, uint8_t *buf, bool rae)
{
	struct nvme_resv_notify_log *l = (struct nvme_resv_notify_log *)buf;
	struct ctrlr_nvm_ctrlr *n = ctrlr_nvm(ctrlr);

	memset(l, 0, sizeof(*l));
	if (n->resv_log_n) {
		uint32_t at = n->resv_log_head;
		uint32_t left = n->resv_log_n - 1;

		l->count = n->resv_log[at].count;
		l->type = n->resv_log[at].type;
		l->nsid = n->resv_log[at].nsid;
		l->nr_avail = (uint8_t)(left > 255 ? 255 : left);
		/* Reading the page consumes it (section 5.16.1.24), unless Retain Asynchronous
		 * Event. */
		if (!rae) {
			n->resv_log_head = (at + 1) % CTRLR_RESV_LOG_MAX;
			n->resv_log_n--;
		}
	}
	return sizeof(*l);
}

/* ---- the commands ---- */

/* Bytes of the command's data: Register and Acquire 16, Release 8 (Figures of 7.2-7.5). */
static uint32_t ctrlr_resv_data_len(uint8_t opc)
{
	return opc == NVME_CMD_RESV_RELEASE ? 8 : 16;
}

/* Back on the owner thread: copy the report out, complete. */
static void ctrlr_resv_done_owner(void *arg)
{
	struct ctrlr_req *req = arg;
	uint16_t st = (uint16_t)req->step.index;

	if (!st && req->step.buf)
		ctrlr_req_iov_write(req, 0, req->step.buf, req->step.count);
	free(req->step.buf);
	req->step.buf = NULL;
	ctrlr_req_complete(req, st);
}

void ctrlr_resv_finish(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	req->step.index = st;
	ctrlr->ops->io_post(ctrlr->tctx, req->sq, &req->hop, ctrlr_resv_done_owner, req);
}

/* Reservation Report (section 7.4): header, then one entry per controller of the subsystem
 * attached to this namespace whose host is a registrant; a registrant with no such controller
 * (restored from the PTPL file) is listed once with CNTLID FFFFh. */
uint16_t ctrlr_resv_report(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_ns_shared *s = req->ns->shared;
	const struct ctrlr_resv *r = &ctrlr_nvm_shared(s)->resv;
	bool eds = req->sqe.cdw11 & NVME_RESV_REPORT_EDS;
	size_t hdr = eds ? NVME_RESV_EXT_HDR_SIZE : sizeof(struct nvme_resv_status_hdr);
	size_t esz = eds ? sizeof(struct nvme_resv_ctrl_ext) : sizeof(struct nvme_resv_ctrl);
	size_t len = req->step.count, max, n = 0;
	struct nvme_resv_status_hdr *h;
	uint8_t *buf;

	/* The data structure carries the host identifiers in the format the host uses: 128-bit
	 * ones only in the extended structure, 64-bit ones only in the other (section 7.4). */
	if (eds != ctrlr->hostid_ext) {
		req->error_loc = offsetof(struct nvme_sqe, cdw11);
		return NVME_SC_HOSTID_INCONSISTENT;
	}
	max = 0;
	for (uint32_t i = 0; i < r->nregs; i++) {
		uint32_t c = 0;

		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
			c += !memcmp(ns->ctrlr->hostid, r->regs[i].hostid, 16);
		max += c ? c : 1;
	}
	buf = calloc(1, hdr + max * esz);
	if (!buf)
		return NVME_SC_INTERNAL;
	h = (struct nvme_resv_status_hdr *)buf;
	h->gen = r->gen;
	h->rtype = r->rtype;
	h->ptpls = r->ptpl;
	for (uint32_t i = 0; i < r->nregs; i++) {
		const struct ctrlr_resv_reg *reg = &r->regs[i];
		uint8_t rcsts = ctrlr_resv_is_holder(r, reg->hostid) ? 1 : 0;
		struct ctrlr_ns *ns = s->nss;
		bool any = false;

		for (;;) {
			uint16_t cntlid;

			while (ns && memcmp(ns->ctrlr->hostid, reg->hostid, 16))
				ns = ns->share_next;
			if (!ns && any)
				break;
			cntlid = ns ? ns->ctrlr->cfg.cntlid : NVME_RESV_CNTLID_UNKNOWN;
			if (eds) {
				struct nvme_resv_ctrl_ext *e =
				    (struct nvme_resv_ctrl_ext *)(buf + hdr + n * esz);

				e->cntlid = cntlid;
				e->rcsts = rcsts;
				e->rkey = reg->rkey;
				memcpy(e->hostid, reg->hostid, 16);
			} else {
				struct nvme_resv_ctrl *e = (struct nvme_resv_ctrl *)(buf + hdr + n * esz);

				e->cntlid = cntlid;
				e->rcsts = rcsts;
				e->rkey = reg->rkey;
				memcpy(&e->hostid, reg->hostid, 8);
			}
			n++;
			any = true;
			if (!ns)
				break;
			ns = ns->share_next;
		}
	}
	h->regctl = (uint16_t)n;
	/* Exactly NUMD dwords: what does not fit is cut, the rest of the buffer zeroed. */
	req->step.buf = calloc(1, len);
	if (!req->step.buf) {
		free(buf);
		return NVME_SC_INTERNAL;
	}
	memcpy(req->step.buf, buf, len < hdr + n * esz ? len : hdr + n * esz);
	free(buf);
	return NVME_SC_SUCCESS;
}

/* Preempt and Abort (section 8.19, Preempting a Reservation or Registration): the hosts whose
 * registration was preempted (ev) lose the commands their controllers started on this namespace
 * and have not completed: each ends with Command Aborted due to Preempt and Abort. A command
 * whose bdev I/O is in flight ends so when that I/O returns (it cannot be recalled: a write may
 * have reached the media). Commands still in their SQs (between the head and the tail each
 * SQ's owner thread has seen) end so when fetched, without running; the Acquire completes once
 * every such fence is up, so the ones submitted after it meet the new access rules (Reservation
 * Conflict where the reservation excludes them). The new access
 * words are in place first, so nothing of theirs starts on the namespace after the marks unless
 * the reservation allows it. */
/* A Reservation Acquire (Preempt and Abort) waiting for the preempted controllers' SQs to put up
 * their fences (core/abort.c) before it completes. Admin thread. */
struct ctrlr_preempt_op {
	void (*then)(void *arg);
	void *arg;
	uint32_t pending; /* fences not up yet, + 1 while they are being posted */
};

/* One fence is up (or the posting ended): the last one lets the change's caller go on. */
static void ctrlr_resv_preempt_put(void *arg)
{
	struct ctrlr_preempt_op *op = arg;

	if (--op->pending)
		return;
	op->then(op->arg);
	free(op);
}

static void ctrlr_resv_preempt_abort(struct ctrlr_ns_shared *s, const struct ctrlr_resv_events *ev,
				     struct ctrlr_preempt_op *op)
{
	for (uint32_t i = 0; i < ev->n; i++) {
		if (ev->e[i].type != NVME_RESV_NOTIFY_REG_PREEMPTED)
			continue;
		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next) {
			if (memcmp(ns->ctrlr->hostid, ev->e[i].hostid, 16))
				continue;
			if (op)
				op->pending += ctrlr_abort_preempt_queued(
				    ns->ctrlr, ns->nsid, ctrlr_resv_preempt_put, op);
			else
				ctrlr_abort_preempt_queued(ns->ctrlr, ns->nsid, NULL, NULL);
		}
	}
}

void ctrlr_resv_effects(struct ctrlr_ns_shared *s, struct ctrlr_req *req, bool abort,
			const struct ctrlr_resv_events *ev, void (*then)(void *arg), void *arg)
{
	struct ctrlr_preempt_op *op;

	ctrlr_resv_update_access(s);
	if (!abort) {
		ctrlr_resv_notify(s, ev);
		return then(arg);
	}
	op = calloc(1, sizeof(*op));
	/* Without memory for the wait, the fences still go up; the caller just does not wait
	 * for them. */
	if (!op)
		LOG_ERR(CTRLR_LOG, "ns %u: preempt and abort goes on before its fences",
			req ? req->ns->nsid : 0);
	else
		*op = (struct ctrlr_preempt_op){.then = then, .arg = arg, .pending = 1};
	ctrlr_resv_preempt_abort(s, ev, op);
	ctrlr_resv_notify(s, ev);
	if (op)
		return ctrlr_resv_preempt_put(op);
	then(arg);
}

/* ---- the PTPL file: each change written (by the syncer thread) before it takes effect ---- */

static void ctrlr_resv_exec(struct ctrlr_req *req);
static void ctrlr_resv_set_ptpl_exec(struct ctrlr_req *req);


/* Admin thread: a command of a namespace whose change is being saved waits for it, in order
 * (Report too: it must not show what is not durable yet). */
static bool ctrlr_resv_wait(struct ctrlr_nvm_shared *sh, struct ctrlr_req *req)
{
	if (!sh->resv_saving)
		return false;
	req->hold.next = NULL;
	if (sh->resv_wait_tail)
		sh->resv_wait_tail->hold.next = req;
	else
		sh->resv_wait_head = req;
	sh->resv_wait_tail = req;
	return true;
}

/* The save ended: the commands that waited run, until one starts a save of its own. */
void ctrlr_resv_saved_next(struct ctrlr_nvm_shared *sh)
{
	sh->resv_saving = false;
	while (!sh->resv_saving && sh->resv_wait_head) {
		struct ctrlr_req *req = sh->resv_wait_head;

		sh->resv_wait_head = req->hold.next;
		if (!sh->resv_wait_head)
			sh->resv_wait_tail = NULL;
		if (req->sq->qid)
			ctrlr_resv_exec(req);
		else
			ctrlr_resv_set_ptpl_exec(req);
	}
}

/* Admin thread, after the syncer: the command's continuation, then the next commands. */
static void ctrlr_resv_saved_msg(void *arg)
{
	struct ctrlr_req *req = arg;
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;
	int rc = sh->resv_job.rc;

	free(sh->resv_text);
	sh->resv_text = NULL;
	if (rc)
		LOG_ERR(CTRLR_LOG, "ns %u: cannot write reservation state %s: %s", req->ns->nsid,
			sh->ptpl_file, strerror(-rc));
	sh->resv_saved(req, rc);
	ctrlr_resv_saved_next(sh);
}

static void ctrlr_resv_saved_job(struct syncer_job *job, int rc)
{
	struct ctrlr_req *req = job->arg;
	struct ctrlr *ctrlr = req->sq->ctrlr;

	(void)rc; /* in job->rc */
	ctrlr->ops->admin_post(ctrlr->tctx, &req->hop, ctrlr_resv_saved_msg, req);
}

/* Writes the namespace's state (as it is now) to its PTPL file, replacing it whole and durably;
 * done(req, rc) on the admin thread. While it runs, the namespace's reservation commands wait. */
static void ctrlr_resv_save(struct ctrlr_req *req, void (*done)(struct ctrlr_req *req, int rc))
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;
	int rc;

	sh->resv_text = ctrlr_resv_encode(&sh->resv);
	if (!sh->resv_text)
		return done(req, -ENOMEM);
	sh->resv_iov = (struct iovec){.iov_base = sh->resv_text, .iov_len = strlen(sh->resv_text)};
	sh->resv_job = (struct syncer_job){.op = SYNCER_REPLACE,
					   .path = sh->ptpl_file,
					   .iov = &sh->resv_iov,
					   .iovcnt = 1,
					   .done = ctrlr_resv_saved_job,
					   .arg = req};
	sh->resv_saved = done;
	sh->resv_saving = true;
	rc = syncer_submit(&sh->resv_job);
	if (rc) {
		sh->resv_saving = false;
		free(sh->resv_text);
		sh->resv_text = NULL;
		done(req, rc);
	}
}

/* The change is durable (or needed no saving): it takes effect, the command completes. */
static void ctrlr_resv_applied(void *arg)
{
	ctrlr_resv_finish(arg, NVME_SC_SUCCESS);
}

static void ctrlr_resv_apply(struct ctrlr_req *req, const struct ctrlr_resv_events *ev)
{
	bool abort = req->sqe.cdw0.bits.opc == NVME_CMD_RESV_ACQUIRE &&
		     (req->sqe.cdw10 & 0x7) == NVME_RACQA_PREEMPT_ABORT;

	ctrlr_resv_effects(req->ns->shared, req, abort, ev, ctrlr_resv_applied, req);
}

static void ctrlr_resv_exec_saved(struct ctrlr_req *req, int rc)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;

	/* Not durable: the change is undone and the command fails. */
	if (rc) {
		sh->resv = sh->resv_before;
		return ctrlr_resv_finish(req, NVME_SC_INTERNAL);
	}
	ctrlr_resv_apply(req, &sh->resv_ev);
}

uint16_t ctrlr_resv_change(struct ctrlr_resv *r, struct ctrlr_req *req,
			   struct ctrlr_resv_events *ev, bool *persist)
{
	const uint8_t *hostid = req->sq->ctrlr->hostid;
	const struct ctrlr_resv_keys *k = req->step.buf;
	uint32_t cdw10 = req->sqe.cdw10;
	uint16_t st;

	switch (req->sqe.cdw0.bits.opc) {
	case NVME_CMD_RESV_REGISTER:
		st = ctrlr_resv_register(r, hostid, cdw10, k, ev, persist);
		break;
	case NVME_CMD_RESV_ACQUIRE:
		st = ctrlr_resv_acquire(r, hostid, cdw10, k, ev, persist);
		break;
	default:
		st = ctrlr_resv_release(r, hostid, cdw10, k, ev, persist);
		break;
	}
	if (st == NVME_SC_INVALID_FIELD)
		req->error_loc = offsetof(struct nvme_sqe, cdw10);
	return st;
}

/* On the admin thread: run the state machine against the shared namespace. */
static void ctrlr_resv_exec(struct ctrlr_req *req)
{
	struct ctrlr_nvm_shared *ns_sh = ctrlr_nvm_ns(req->ns)->sh;
	struct ctrlr_resv_events ev = {0};
	bool persist = false, was_ptpl = ns_sh->resv.ptpl;
	uint16_t st;

	if (ns_sh->store)
		return ctrlr_resv_remote_exec(req);
	if (req->sqe.cdw0.bits.opc != NVME_CMD_RESV_REPORT)
		ns_sh->resv_before = ns_sh->resv;
	if (req->sqe.cdw0.bits.opc == NVME_CMD_RESV_REPORT) {
		free(req->step.buf);
		req->step.buf = NULL;
		return ctrlr_resv_finish(req, ctrlr_resv_report(req));
	}
	st = ctrlr_resv_change(&ns_sh->resv, req, &ev, &persist);
	free(req->step.buf);
	req->step.buf = NULL;
	if (st)
		return ctrlr_resv_finish(req, st);
	/* With PTPL on (or just turned off) the file takes the change before it takes effect
	 * (write-ahead): the command completes once it is durable. */
	if (persist && ns_sh->ptpl_file && (ns_sh->resv.ptpl || was_ptpl)) {
		ns_sh->resv_ev = ev;
		return ctrlr_resv_save(req, ctrlr_resv_exec_saved);
	}
	ctrlr_resv_apply(req, &ev);
}

static void ctrlr_resv_exec_admin(void *arg)
{
	struct ctrlr_req *req = arg;

	if (!ctrlr_resv_wait(ctrlr_nvm_ns(req->ns)->sh, req))
		ctrlr_resv_exec(req);
}

void ctrlr_io_resv(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t opc = req->sqe.cdw0.bits.opc;
	uint16_t st;

	req->step.buf = NULL;
	if (opc == NVME_CMD_RESV_REPORT) {
		uint64_t len = ((uint64_t)req->sqe.cdw10 + 1) * 4;

		if (len > ctrlr_mdts_bytes(ctrlr))
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
						      offsetof(struct nvme_sqe, cdw10));
		st = ctrlr_req_map_data(req, len, CTRLR_DMA_WRITE);
		if (st)
			return ctrlr_req_complete(req, st);
		req->step.count = (uint32_t)len;
	} else {
		uint32_t len = ctrlr_resv_data_len(opc);
		struct ctrlr_resv_keys *k = calloc(1, sizeof(*k));
		uint8_t data[16];

		if (!k)
			return ctrlr_req_complete(req, NVME_SC_INTERNAL);
		st = ctrlr_req_copy_from_host(req, data, len);
		if (st) {
			free(k);
			return ctrlr_req_complete(req, st);
		}
		memcpy(&k->crkey, data, 8);
		if (len == 16)
			memcpy(&k->nkey, data + 8, 8);
		req->step.buf = k;
	}
	ctrlr->ops->admin_post(ctrlr->tctx, &req->hop, ctrlr_resv_exec_admin, req);
}

/* ---- Persist Through Power Loss (Feature 83h) ---- */

bool ctrlr_resv_ptpl(const struct ctrlr_ns *ns)
{
	return ctrlr_nvm_ns(ns)->sh->resv.ptpl;
}

bool ctrlr_resv_ptpl_capable(const struct ctrlr_ns *ns)
{
	return ctrlr_nvm_ns(ns)->sh->resv.ptpl_capable;
}

static void ctrlr_resv_set_ptpl_saved(struct ctrlr_req *req, int rc)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;

	if (rc)
		sh->resv.ptpl = !sh->resv.ptpl;
	req->hold.cont(req, rc ? NVME_SC_INTERNAL : NVME_SC_SUCCESS);
}

static void ctrlr_resv_set_ptpl_exec(struct ctrlr_req *req)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;
	bool on = req->hold.lba;

	if (sh->store)
		return ctrlr_resv_remote_exec(req);

	if (on == sh->resv.ptpl)
		return req->hold.cont(req, NVME_SC_SUCCESS);
	sh->resv.ptpl = on;
	ctrlr_resv_save(req, ctrlr_resv_set_ptpl_saved);
}

void ctrlr_resv_set_ptpl(struct ctrlr_req *req, bool on,
			 void (*done)(struct ctrlr_req *req, uint16_t st))
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(req->ns)->sh;

	req->hold.lba = on;
	req->hold.cont = done;
	if (on && !sh->resv.ptpl_capable)
		return done(req, NVME_SC_INVALID_FIELD);
	if (!ctrlr_resv_wait(sh, req))
		ctrlr_resv_set_ptpl_exec(req);
}
