/* controller/virt/virt.c - Virtualization Management (admin 1Ch, NVMe Base 2.0 section 5.26) on a
 * primary controller, Identify CNS 14h (Primary Controller Capabilities) and 15h (Secondary
 * Controller List), and the primary's flexible resources (section 8.26): what it has now and what
 * it has after its next Controller Level Reset (Primary Controller Flexible Allocation takes
 * effect there), what each secondary controller has, and which are online. Bringing a
 * secondary online or offline is the transport's (ctrlr_virt_ops): the command completes once it
 * is done. Every change is written to the state file before the command completes. Admin thread.
 *
 * Choices where the specification leaves room, as QEMU's hw/nvme models them: a VQ resource is
 * a queue pair and a controller's admin queue takes one, so a secondary goes online with at least
 * 2 VQ (the admin queue and one I/O queue pair) and 1 VI resources; Secondary Controller Offline
 * returns its flexible resources to the pool. Unlike QEMU's SR-IOV model, a Controller Level
 * Reset of the primary leaves its secondaries as they are: each is a function of its own here,
 * which no reset of the primary's function takes away. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"
#include "controller/virt/virt.h"

/* One Virtualization Management command in the primary's queue. */
struct ctrlr_virt_op {
	struct ctrlr_req *req;
	uint8_t act;
	bool vi;
	uint16_t cntlid;
	uint16_t nr;
	/* What the command changed, to put back when it cannot be made durable or done. */
	struct ctrlr_virt_sec before;
	uint16_t prim_next_before;
	struct ctrlr_virt_sec *sec;
	struct ctrlr_virt_op *next;
};

static void ctrlr_virt_run(struct ctrlr *ctrlr);

uint32_t ctrlr_virt_assigned(const struct ctrlr_virt *v, bool vi)
{
	uint32_t n = 0;

	for (uint16_t i = 0; i < v->cfg.nr_secondaries; i++)
		n += vi ? v->sec[i].nvi : v->sec[i].nvq;
	return n;
}

struct ctrlr_virt_sec *ctrlr_virt_find(struct ctrlr_virt *v, uint16_t scid)
{
	for (uint16_t i = 0; i < v->cfg.nr_secondaries; i++)
		if (v->sec[i].scid == scid)
			return &v->sec[i];
	return NULL;
}

void ctrlr_virt_apply(struct ctrlr *ctrlr)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	/* The admin queue's VQ is one of the private ones. */
	ctrlr->res_io_queues = (uint16_t)(v->vqprt + v->vqrfap - 1u);
	ctrlr->res_vectors = (uint16_t)(v->viprt + v->virfap);
}

/* Resources of a type not in use anywhere: neither the primary's (now or after its reset,
 * whichever is more) nor a secondary's. */
static uint32_t ctrlr_virt_free(const struct ctrlr_virt *v, bool vi)
{
	uint16_t now = ctrlr_virt_prim(v, vi, false), next = ctrlr_virt_prim(v, vi, true);
	uint32_t used = ctrlr_virt_assigned(v, vi) + (now > next ? now : next);

	return ctrlr_virt_total(v, vi) > used ? ctrlr_virt_total(v, vi) - used : 0;
}

/* ---- binding ---- */

int ctrlr_virt_bind(struct ctrlr *ctrlr, const struct ctrlr_virt_config *cfg,
		    const struct ctrlr_virt_ops *ops, void *ctx, char *why, size_t why_len)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	const char *reason = NULL;
	int rc;

	if (v->primary || v->secondary) {
		snprintf(why, why_len, "controller %u is a %s controller already", ctrlr->cfg.cntlid,
			 v->primary ? "primary" : "secondary");
		return -EBUSY;
	}
	if (!ops || !ops->set_online) {
		snprintf(why, why_len, "no transport to bring secondary controllers online");
		return -EINVAL;
	}
	if (cfg->nr_secondaries < 1 || cfg->nr_secondaries > CTRLR_VIRT_MAX_SECONDARIES) {
		snprintf(why, why_len, "%u secondary controllers: 1 to %u", cfg->nr_secondaries,
			 CTRLR_VIRT_MAX_SECONDARIES);
		return -EINVAL;
	}
	for (uint16_t i = 0; i < cfg->nr_secondaries; i++) {
		if (cfg->scid[i] == ctrlr->cfg.cntlid || cfg->scid[i] >= 0xfff0) {
			snprintf(why, why_len, "CNTLID %u cannot be a secondary controller's",
				 cfg->scid[i]);
			return -EINVAL;
		}
		for (uint16_t j = 0; j < i; j++) {
			if (cfg->scid[j] == cfg->scid[i]) {
				snprintf(why, why_len, "CNTLID %u is given twice", cfg->scid[i]);
				return -EINVAL;
			}
		}
	}
	/* The primary keeps its admin queue and one I/O queue pair, and one vector. */
	if (cfg->vq_flexible > ctrlr->cfg.max_io_queues - 1u) {
		snprintf(why, why_len,
			 "%u flexible VQ resources: the primary has %u I/O queue pairs and keeps one",
			 cfg->vq_flexible, ctrlr->cfg.max_io_queues);
		return -EINVAL;
	}
	if (cfg->vi_flexible > ctrlr->cfg.num_vectors - 1u) {
		snprintf(why, why_len,
			 "%u flexible VI resources: the primary has %u vectors and keeps one",
			 cfg->vi_flexible, ctrlr->cfg.num_vectors);
		return -EINVAL;
	}
	if (cfg->max_vq < 2 || cfg->max_vq > cfg->vq_flexible) {
		snprintf(why, why_len,
			 "%u VQ resources at most per secondary: 2 (an admin and an I/O queue pair) "
			 "to the %u flexible ones",
			 cfg->max_vq, cfg->vq_flexible);
		return -EINVAL;
	}
	if (cfg->max_vi < 1 || cfg->max_vi > cfg->vi_flexible) {
		snprintf(why, why_len,
			 "%u VI resources at most per secondary: 1 to the %u flexible ones",
			 cfg->max_vi, cfg->vi_flexible);
		return -EINVAL;
	}
	v->cfg = *cfg;
	v->ops = ops;
	v->ops_ctx = ctx;
	v->vqprt = (uint16_t)(ctrlr->cfg.max_io_queues + 1u - cfg->vq_flexible);
	v->viprt = (uint16_t)(ctrlr->cfg.num_vectors - cfg->vi_flexible);
	for (uint16_t i = 0; i < cfg->nr_secondaries; i++)
		v->sec[i] = (struct ctrlr_virt_sec){.scid = cfg->scid[i]};
	/* A new device gives its flexible resources to its secondaries: the primary has its
	 * private ones until the host allocates it more. */
	v->vqrfap = v->vqrfap_next = v->virfap = v->virfap_next = 0;
	rc = ctrlr_virt_state_load(ctrlr, &reason);
	if (rc) {
		snprintf(why, why_len, "controller state file %s: %s", ctrlr->cfg.state_file,
			 reason ? reason : strerror(-rc));
		memset(v, 0, sizeof(*v));
		return rc;
	}
	v->primary = true;
	ctrlr_virt_apply(ctrlr);
	LOG_INFO(CTRLR_LOG,
		 "%s: controller %u is primary to %u secondary controllers (VQ: %u private, %u "
		 "flexible, %u its own; VI: %u private, %u flexible, %u its own)",
		 ctrlr->serial, ctrlr->cfg.cntlid, cfg->nr_secondaries, v->vqprt, cfg->vq_flexible,
		 v->vqrfap, v->viprt, cfg->vi_flexible, v->virfap);
	return 0;
}

int ctrlr_virt_set_secondary(struct ctrlr *ctrlr, uint16_t pcid, uint16_t nvq, uint16_t nvi)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	if (v->primary)
		return -EBUSY;
	v->secondary = true;
	v->pcid = pcid;
	v->nvq = nvq;
	v->nvi = nvi;
	return 0;
}

void ctrlr_virt_set_offline(struct ctrlr *ctrlr, uint16_t scid)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	struct ctrlr_virt_sec *s = v->primary ? ctrlr_virt_find(v, scid) : NULL;

	if (s && s->online) {
		LOG_WARN(CTRLR_LOG, "%s: secondary controller %u is offline: it could not be "
				    "served again",
			 ctrlr->serial, scid);
		s->online = false;
	}
}

void ctrlr_virt_get_info(const struct ctrlr *ctrlr, struct ctrlr_virt_info *out)
{
	const struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	memset(out, 0, sizeof(*out));
	if (!v->primary)
		return;
	out->primary = true;
	out->cfg = v->cfg;
	out->vqprt = v->vqprt;
	out->viprt = v->viprt;
	out->vqrfap = v->vqrfap;
	out->virfap = v->virfap;
	out->vqrfap_next = v->vqrfap_next;
	out->virfap_next = v->virfap_next;
	out->vqrfa = ctrlr_virt_assigned(v, false);
	out->virfa = ctrlr_virt_assigned(v, true);
	out->io_queues = ctrlr->res_io_queues;
	out->vectors = ctrlr->res_vectors;
	for (uint16_t i = 0; i < v->cfg.nr_secondaries; i++) {
		out->sec[i].nvq = v->sec[i].nvq;
		out->sec[i].nvi = v->sec[i].nvi;
		out->sec[i].online = v->sec[i].online;
	}
}

/* ---- Identify ---- */

void ctrlr_virt_identify_ctrl(const struct ctrlr *ctrlr, struct nvme_id_ctrl *id)
{
	if (ctrlr_virt_of(ctrlr)->primary)
		id->oacs |= NVME_OACS_VIRT_MGMT;
}

static void ctrlr_virt_pri_cap(const struct ctrlr *ctrlr, struct nvme_pri_ctrl_cap *cap)
{
	const struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	cap->cntlid = ctrlr->cfg.cntlid;
	cap->portid = 0;
	cap->crt = NVME_CRT_VQ | NVME_CRT_VI;
	if (v->secondary) {
		/* A secondary's resources are all its own: what it was brought online with. */
		cap->vqprt = v->nvq;
		cap->viprt = v->nvi;
		return;
	}
	cap->vqfrt = v->cfg.vq_flexible;
	cap->vqrfa = ctrlr_virt_assigned(v, false);
	cap->vqrfap = v->vqrfap;
	cap->vqprt = v->vqprt;
	cap->vqfrsm = v->cfg.max_vq;
	cap->vqgran = 1;
	cap->vifrt = v->cfg.vi_flexible;
	cap->virfa = ctrlr_virt_assigned(v, true);
	cap->virfap = v->virfap;
	cap->viprt = v->viprt;
	cap->vifrsm = v->cfg.max_vi;
	cap->vigran = 1;
}

/* Entries with SCID >= cntid, in SCID order, 127 at most. A secondary lists none. */
static void ctrlr_virt_sec_list(const struct ctrlr *ctrlr, uint16_t cntid,
				struct nvme_sec_ctrl_list *list)
{
	const struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	uint32_t last = 0; /* one above the SCID listed last */

	if (!v->primary)
		return;
	while (list->num < NVME_SEC_CTRL_LIST_MAX) {
		const struct ctrlr_virt_sec *best = NULL;
		struct nvme_sec_ctrl_entry *e;

		for (uint16_t i = 0; i < v->cfg.nr_secondaries; i++) {
			const struct ctrlr_virt_sec *s = &v->sec[i];

			if (s->scid >= cntid && s->scid >= last && (!best || s->scid < best->scid))
				best = s;
		}
		if (!best)
			break;
		last = best->scid + 1u;
		e = &list->e[list->num++];
		e->scid = best->scid;
		e->pcid = ctrlr->cfg.cntlid;
		e->scs = best->online ? 1 : 0;
		e->vfn = 0; /* a function of its own, not an SR-IOV VF */
		e->nvq = best->nvq;
		e->nvi = best->nvi;
	}
}

uint16_t ctrlr_virt_identify(const struct ctrlr *ctrlr, uint8_t cns, uint16_t cntid, void *buf)
{
	const struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	if (!v->primary && !v->secondary)
		return NVME_SC_INVALID_FIELD;
	if (cns == NVME_CNS_PRI_CTRL_CAP)
		ctrlr_virt_pri_cap(ctrlr, buf);
	else
		ctrlr_virt_sec_list(ctrlr, cntid, buf);
	return NVME_SC_SUCCESS;
}

/* ---- Virtualization Management ---- */

static void ctrlr_virt_finish(struct ctrlr *ctrlr, uint16_t status, uint16_t loc)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	struct ctrlr_virt_op *op = v->ops_head;
	struct ctrlr_req *req = op->req;

	v->ops_head = op->next;
	if (!v->ops_head)
		v->ops_tail = NULL;
	if (!status)
		req->cdw0 = op->nr; /* resources allocated or assigned (section 5.26, Figure 386) */
	free(op);
	if (loc != 0xffff)
		ctrlr_req_complete_err(req, status, loc);
	else
		ctrlr_req_complete(req, status);
	if (v->ops_head)
		ctrlr_virt_run(ctrlr);
}

/* Puts back what the command changed. */
static void ctrlr_virt_undo(struct ctrlr *ctrlr, struct ctrlr_virt_op *op)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	if (op->sec)
		*op->sec = op->before;
	else if (op->vi)
		v->virfap_next = op->prim_next_before;
	else
		v->vqrfap_next = op->prim_next_before;
}

static void ctrlr_virt_failed_saved(struct ctrlr_req *req, uint16_t st)
{
	(void)st; /* the command fails either way; the state file says the state before it */
	ctrlr_virt_finish(req->sq->ctrlr, NVME_SC_INTERNAL, 0xffff);
}

static void ctrlr_virt_set_done(void *arg, int rc)
{
	struct ctrlr_req *req = arg;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_virt_op *op = ctrlr_virt_of(ctrlr)->ops_head;

	if (!rc) {
		LOG_INFO(CTRLR_LOG, "%s: secondary controller %u %s", ctrlr->serial, op->cntlid,
			 op->act == NVME_VIRT_ACT_SEC_ONLINE ? "online" : "offline");
		return ctrlr_virt_finish(ctrlr, NVME_SC_SUCCESS, 0xffff);
	}
	if (op->act == NVME_VIRT_ACT_SEC_OFFLINE) {
		/* Its function is closed whatever the unplug said (the transport's report). */
		LOG_WARN(CTRLR_LOG, "%s: secondary controller %u offline: %s", ctrlr->serial,
			 op->cntlid, strerror(-rc));
		return ctrlr_virt_finish(ctrlr, NVME_SC_SUCCESS, 0xffff);
	}
	LOG_ERR(CTRLR_LOG, "%s: secondary controller %u cannot go online: %s", ctrlr->serial,
		op->cntlid, strerror(-rc));
	ctrlr_virt_undo(ctrlr, op);
	ctrlr_state_save(req, ctrlr_virt_failed_saved);
}

/* The change is durable: the transport's part, or the end. */
static void ctrlr_virt_saved(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	struct ctrlr_virt_op *op = v->ops_head;

	if (st) {
		ctrlr_virt_undo(ctrlr, op);
		return ctrlr_virt_finish(ctrlr, st, 0xffff);
	}
	if (op->act != NVME_VIRT_ACT_SEC_ONLINE && op->act != NVME_VIRT_ACT_SEC_OFFLINE)
		return ctrlr_virt_finish(ctrlr, NVME_SC_SUCCESS, 0xffff);
	v->ops->set_online(v->ops_ctx, op->cntlid, op->act == NVME_VIRT_ACT_SEC_ONLINE,
			   op->sec->nvq, op->sec->nvi, ctrlr_virt_set_done, req);
}

/* Checks the command against the state as the commands before it left it, changes the state,
 * and returns 0 with the change to make durable, a status with *loc, or 0xffff: nothing to do
 * (success). */
static uint16_t ctrlr_virt_exec(struct ctrlr *ctrlr, struct ctrlr_virt_op *op, uint16_t *loc)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	struct ctrlr_virt_sec *s;
	uint16_t have;

	*loc = offsetof(struct nvme_sqe, cdw10) + 2; /* CNTLID */
	if (op->act == NVME_VIRT_ACT_PRI_FLEX_ALLOC) {
		if (op->cntlid != ctrlr->cfg.cntlid)
			return NVME_SC_INVALID_CTRL_ID;
		*loc = offsetof(struct nvme_sqe, cdw11);
		/* What is not a secondary's may be the primary's. */
		if (op->nr > ctrlr_virt_total(v, op->vi) - ctrlr_virt_assigned(v, op->vi))
			return NVME_SC_INVALID_NUM_CTRL_RES;
		op->prim_next_before = ctrlr_virt_prim(v, op->vi, true);
		if (op->vi)
			v->virfap_next = op->nr;
		else
			v->vqrfap_next = op->nr;
		return 0;
	}
	s = ctrlr_virt_find(v, op->cntlid);
	if (!s)
		return NVME_SC_INVALID_CTRL_ID;
	op->sec = s;
	op->before = *s;
	switch (op->act) {
	case NVME_VIRT_ACT_SEC_ASSIGN:
		/* Resources change only while the secondary is offline. */
		if (s->online) {
			*loc = offsetof(struct nvme_sqe, cdw10);
			return NVME_SC_INVALID_SEC_CTRL_STATE;
		}
		*loc = offsetof(struct nvme_sqe, cdw11);
		have = op->vi ? s->nvi : s->nvq;
		if (op->nr > (op->vi ? v->cfg.max_vi : v->cfg.max_vq) ||
		    (op->nr > have && (uint32_t)(op->nr - have) > ctrlr_virt_free(v, op->vi)))
			return NVME_SC_INVALID_NUM_CTRL_RES;
		if (op->vi)
			s->nvi = op->nr;
		else
			s->nvq = op->nr;
		return 0;
	case NVME_VIRT_ACT_SEC_ONLINE:
		op->nr = 0;
		if (s->online)
			return 0xffff;
		/* An admin queue and an I/O queue pair, and a vector. */
		if (s->nvq < 2 || s->nvi < 1) {
			*loc = offsetof(struct nvme_sqe, cdw10);
			return NVME_SC_INVALID_SEC_CTRL_STATE;
		}
		s->online = true;
		return 0;
	default: /* NVME_VIRT_ACT_SEC_OFFLINE: its flexible resources go back to the pool */
		op->nr = 0;
		if (!s->online && !s->nvq && !s->nvi)
			return 0xffff;
		s->online = false;
		s->nvq = s->nvi = 0;
		return 0;
	}
}

static void ctrlr_virt_run(struct ctrlr *ctrlr)
{
	struct ctrlr_virt_op *op = ctrlr_virt_of(ctrlr)->ops_head;
	uint16_t loc, st = ctrlr_virt_exec(ctrlr, op, &loc);

	if (st == 0xffff)
		return ctrlr_virt_finish(ctrlr, NVME_SC_SUCCESS, 0xffff);
	if (st)
		return ctrlr_virt_finish(ctrlr, st, loc);
	/* Going offline: nothing it had is left in the state, even if the unplug is slow. */
	ctrlr_state_save(op->req, ctrlr_virt_saved);
}

void ctrlr_admin_virt_mgmt(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	uint32_t cdw10 = req->sqe.cdw10;
	uint8_t act = cdw10 & 0xf, rt = (cdw10 >> 8) & 0x7;
	struct ctrlr_virt_op *op;

	if (act != NVME_VIRT_ACT_PRI_FLEX_ALLOC && act != NVME_VIRT_ACT_SEC_OFFLINE &&
	    act != NVME_VIRT_ACT_SEC_ASSIGN && act != NVME_VIRT_ACT_SEC_ONLINE)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	/* The resource type matters to the actions that move resources. */
	if ((act == NVME_VIRT_ACT_PRI_FLEX_ALLOC || act == NVME_VIRT_ACT_SEC_ASSIGN) &&
	    rt != NVME_VIRT_RT_VQ && rt != NVME_VIRT_RT_VI)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_RESOURCE_ID,
					      offsetof(struct nvme_sqe, cdw10) + 1);
	op = calloc(1, sizeof(*op));
	if (!op)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	op->req = req;
	op->act = act;
	op->vi = rt == NVME_VIRT_RT_VI;
	op->cntlid = (uint16_t)(cdw10 >> 16);
	op->nr = (uint16_t)(req->sqe.cdw11 & 0xffff);
	/* One at a time: each command sees what the one before left, and an online or offline
	 * is over before the next starts. */
	if (v->ops_tail)
		v->ops_tail->next = op;
	else
		v->ops_head = op;
	v->ops_tail = op;
	if (v->ops_head == op)
		ctrlr_virt_run(ctrlr);
}

/* ---- the module ---- */

/* A Controller Level Reset of the primary: its flexible allocation takes effect. */
static void ctrlr_virt_reset_done(struct ctrlr *ctrlr)
{
	struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);

	if (!v->primary)
		return;
	if (v->vqrfap != v->vqrfap_next || v->virfap != v->virfap_next)
		LOG_INFO(CTRLR_LOG, "%s: primary controller %u now has %u flexible VQ and %u VI "
				    "resources",
			 ctrlr->serial, ctrlr->cfg.cntlid, v->vqrfap_next, v->virfap_next);
	v->vqrfap = v->vqrfap_next;
	v->virfap = v->virfap_next;
	ctrlr_virt_apply(ctrlr);
}

/* Virtualization Management exists on a primary controller (OACS bit 7). */
static bool ctrlr_virt_supported(const struct ctrlr *ctrlr)
{
	return ctrlr_virt_of(ctrlr)->primary;
}

static const struct ctrlr_cmd ctrlr_virt_admin_cmds[256] = {
    /* Resources change for the primary after its reset, and secondaries come and go: the
     * controller's capabilities change (CCC). */
    [NVME_ADM_VIRT_MGMT] = {.exec = ctrlr_admin_virt_mgmt,
			    .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_CCC,
			    .supported = ctrlr_virt_supported},
};

const struct ctrlr_module ctrlr_virt_module = {
    .name = "virt",
    .ctrlr_size = sizeof(struct ctrlr_virt),
    .admin_cmds = ctrlr_virt_admin_cmds,
    .reset_done = ctrlr_virt_reset_done,
};
