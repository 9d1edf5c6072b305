/* controller/pool/ns_mgmt.c - Namespace Management (admin 0Dh, NVMe Base 2.0 section 5.23) and
 * Namespace Attachment (15h, section 5.22) over the subsystem's capacity pool (pool.c), and
 * what Identify reports of them (CNS 10h-13h, TNVMCAP/UNVMCAP). Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"
#include "controller/nvm/nvm.h"
#include "controller/pool/pool.h"

enum ctrlr_nsm_kind {
	CTRLR_NSM_CREATE,
	CTRLR_NSM_DELETE,
	CTRLR_NSM_ATTACH,
	CTRLR_NSM_DETACH,
};

/* One command. The pool runs them one at a time, in arrival order: each sees the state the
 * previous one left, and a header write never races a later change. */
struct ctrlr_nsm_op {
	struct ctrlr_req *req;
	struct ctrlr_ns_pool *pool;
	struct ctrlr_nsm_op *next;
	enum ctrlr_nsm_kind kind;
	uint32_t nsid; /* NVME_NSID_ALL: every namespace of the pool (delete) */
	struct ctrlr_pool_ns params;
	uint64_t nsze; /* create: the host's NSZE (params.nsze counts region blocks) */
	bool del[CTRLR_MAX_NAMESPACES]; /* delete: the namespaces going */
	uint32_t releases;		/* bdev releases still awaited (+1 while starting) */
	uint16_t status;
	struct ctrlr_pool_waiter w;
};

static void ctrlr_nsm_run(struct ctrlr_ns_pool *pool);

/* Ends the command at the head of the queue and starts the next. */
static void ctrlr_nsm_finish(struct ctrlr_nsm_op *op, uint16_t status, uint16_t loc)
{
	struct ctrlr_ns_pool *pool = op->pool;
	struct ctrlr_req *req = op->req;

	pool->ops_head = op->next;
	if (!pool->ops_head)
		pool->ops_tail = NULL;
	if (!status && op->kind == CTRLR_NSM_CREATE)
		req->cdw0 = op->nsid; /* the NSID created (section 5.23, Figure 372) */
	/* Persistent Event Log: Change Namespace. */
	if (!status && (op->kind == CTRLR_NSM_CREATE || op->kind == CTRLR_NSM_DELETE))
		ctrlr_pel_change_ns(req->sq->ctrlr, req->sqe.cdw10, op->nsid, op->nsze,
				    op->params.flbas, op->params.dps, op->params.nmic);
	free(op);
	if (loc != 0xffff)
		ctrlr_req_complete_err(req, status, loc);
	else
		ctrlr_req_complete(req, status);
	if (pool->ops_head)
		ctrlr_nsm_run(pool);
	else if (pool->destroy_when_idle)
		ctrlr_ns_pool_destroy(pool);
}

static void ctrlr_nsm_synced(void *arg, int rc)
{
	struct ctrlr_nsm_op *op = arg;

	if (rc) {
		LOG_ERR(CTRLR_LOG, "namespace management: the pool layout is not saved: %d", rc);
		if (op->kind == CTRLR_NSM_CREATE) {
			/* Not durable: the namespace is not there after all. */
			ctrlr_pool_free(op->pool, op->nsid);
		}
		ctrlr_nsm_finish(op, NVME_SC_INTERNAL, 0xffff);
		return;
	}
	ctrlr_nsm_finish(op, op->status, 0xffff);
}

static void ctrlr_nsm_sync(struct ctrlr_nsm_op *op)
{
	op->w.fn = ctrlr_nsm_synced;
	op->w.arg = op;
	ctrlr_pool_sync(op->pool, &op->w);
}

/* ---- create ---- */

static void ctrlr_nsm_create_run(struct ctrlr_nsm_op *op)
{
	uint32_t nsid = 0;
	int rc;

	rc = ctrlr_pool_alloc(op->pool, &op->params, &nsid);
	if (rc == -ENOSPC)
		return ctrlr_nsm_finish(op, NVME_SC_NS_INSUFFICIENT_CAP, 0xffff);
	if (rc == -EMLINK)
		return ctrlr_nsm_finish(op, NVME_SC_NS_ID_UNAVAILABLE, 0xffff);
	if (rc) {
		LOG_ERR(CTRLR_LOG, "namespace management: cannot create a namespace: %d", rc);
		return ctrlr_nsm_finish(op, NVME_SC_INTERNAL, 0xffff);
	}
	op->nsid = nsid;
	LOG_INFO(CTRLR_LOG, "namespace %u created by the host: %lu blocks in LBA format %u", nsid,
		 (unsigned long)op->nsze, (op->params.flbas & 0xfu) | (op->params.flbas >> 5 & 3u) << 4);
	ctrlr_nsm_sync(op);
}

/* Section 5.23.1: the host data is an Identify Namespace structure of the command set (CSI);
 * the fields the host sets are checked, the others ignored (Figure 374). Returns a status, with
 * *loc the offending SQE field's offset (0xffff: none). */
static uint16_t ctrlr_nsm_create(struct ctrlr_req *req, struct ctrlr_nsm_op *op, uint16_t *loc)
{
	uint8_t csi = req->sqe.cdw11 >> 24;
	struct nvme_id_ns id;
	uint32_t stride;
	uint16_t st;

	*loc = offsetof(struct nvme_sqe, dptr);
	if (csi != NVME_CSI_NVM) {
		*loc = offsetof(struct nvme_sqe, cdw11) + 3;
		return NVME_SC_IOCS_NOT_SUPPORTED;
	}
	st = ctrlr_req_copy_from_host(req, &id, sizeof(id));
	if (st)
		return st;
	if (!id.nsze || !id.ncap || id.ncap > id.nsze)
		return NVME_SC_INVALID_FIELD;
	/* Capacity is reserved whole: NCAP below NSZE would need thin provisioning. */
	if (id.ncap < id.nsze)
		return NVME_SC_THIN_PROV_NOT_SUPP;
	/* Any format a pool region offers (those Identify reports for NSID FFFFFFFFh), with a PI
	 * type only where the metadata holds its tuple (DPS bits 2:0). */
	if ((id.dps & ~0xfu) ||
	    !ctrlr_flbas_valid(CTRLR_POOL_REGION_BS, id.flbas, id.dps, &stride))
		return NVME_SC_INVALID_FORMAT;
	if (id.nmic & ~NVME_NMIC_SHARED)
		return NVME_SC_INVALID_FIELD;
	/* No ANA (CMIC bit 3 clear), no NVM Sets or Endurance Groups (NSETIDMAX/ENDGIDMAX 0). */
	if (id.anagrpid)
		return NVME_SC_ANA_GROUP_ID_INVALID;
	if (id.nvmsetid || id.endgid)
		return NVME_SC_INVALID_FIELD;
	/* The region is packed: a logical block takes its data and metadata size (stride), no
	 * padding, so NSZE x (data + metadata) bytes, rounded up to the granule, is what the
	 * namespace costs of UNVMCAP. The namespace's NSZE follows from its format. */
	if (id.nsze > UINT64_MAX / stride)
		return NVME_SC_NS_INSUFFICIENT_CAP;
	op->kind = CTRLR_NSM_CREATE;
	op->nsze = id.nsze;
	op->params.nsze = id.nsze * (stride / CTRLR_POOL_REGION_BS);
	op->params.block_size = CTRLR_POOL_REGION_BS;
	op->params.flbas = id.flbas;
	op->params.dps = id.dps;
	op->params.nmic = id.nmic & NVME_NMIC_SHARED;
	return NVME_SC_SUCCESS;
}

/* ---- delete, detach: wait for the controller to let go of the bdev ---- */

static void ctrlr_nsm_delete_finish(struct ctrlr_nsm_op *op)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		if (!op->del[i])
			continue;
		LOG_INFO(CTRLR_LOG, "namespace %u deleted by the host", i + 1);
		ctrlr_pool_free(op->pool, i + 1);
	}
	ctrlr_nsm_sync(op);
}

static void ctrlr_nsm_released(void *arg)
{
	struct ctrlr_nsm_op *op = arg;

	if (--op->releases)
		return;
	if (op->kind == CTRLR_NSM_DELETE)
		ctrlr_nsm_delete_finish(op);
	else
		ctrlr_nsm_sync(op);
}

static void ctrlr_nsm_delete_run(struct ctrlr_nsm_op *op)
{
	struct ctrlr_ns_pool *pool = op->pool;
	uint32_t nsid = op->nsid;

	if (nsid != NVME_NSID_ALL) {
		/* Operator namespaces (RPC) are not the host's to delete. */
		if (!ctrlr_ns_pool_owns(pool, nsid))
			return ctrlr_nsm_finish(op, NVME_SC_INVALID_FIELD,
						offsetof(struct nvme_sqe, nsid));
		op->del[nsid - 1] = true;
	} else {
		for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
			op->del[i] = pool->ns[i].nsid != 0;
	}
	/* Section 8.11: a namespace being deleted is detached from every controller first. */
	op->releases = 1;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_pool_ns *e = &pool->ns[i];

		if (!op->del[i] || !e->attached)
			continue;
		e->attached = false;
		if (pool->ctrlr) {
			op->releases++;
			if (ctrlr_ns_detach(pool->ctrlr, e->nsid, ctrlr_nsm_released, op))
				op->releases--;
		}
	}
	ctrlr_nsm_released(op);
}

/* ---- attach, detach ---- */

static void ctrlr_nsm_attach_run(struct ctrlr_nsm_op *op)
{
	struct ctrlr_ns_pool *pool = op->pool;
	struct ctrlr *ctrlr = op->req->sq->ctrlr;
	struct ctrlr_pool_ns *e;
	int rc;

	if (!ctrlr_ns_pool_owns(pool, op->nsid)) {
		/* The operator's namespaces are attached for good; anything else is not
		 * allocated. */
		if (ctrlr_pool_reserved(pool, op->nsid))
			return ctrlr_nsm_finish(op,
						op->kind == CTRLR_NSM_ATTACH
						    ? NVME_SC_NS_ALREADY_ATTACHED
						    : NVME_SC_INVALID_FIELD,
						op->kind == CTRLR_NSM_ATTACH
						    ? 0xffff
						    : offsetof(struct nvme_sqe, nsid));
		return ctrlr_nsm_finish(op, NVME_SC_INVALID_FIELD,
					offsetof(struct nvme_sqe, nsid));
	}
	e = &pool->ns[op->nsid - 1];
	if (op->kind == CTRLR_NSM_ATTACH) {
		if (e->attached)
			return ctrlr_nsm_finish(op, NVME_SC_NS_ALREADY_ATTACHED, 0xffff);
		/* A private namespace attaches to one controller at most (NMIC bit 0): with
		 * the one controller of the subsystem, "attached" above covers it. */
		rc = ctrlr_pool_ns_attach(ctrlr, e);
		if (rc < 0) {
			LOG_ERR(CTRLR_LOG, "namespace %u: cannot attach: %d", op->nsid, rc);
			return ctrlr_nsm_finish(op, NVME_SC_INTERNAL, 0xffff);
		}
		e->attached = true;
		return ctrlr_nsm_sync(op);
	}
	if (!e->attached)
		return ctrlr_nsm_finish(op, NVME_SC_NS_NOT_ATTACHED, 0xffff);
	e->attached = false;
	op->releases = 1;
	if (!ctrlr_ns_detach(ctrlr, op->nsid, ctrlr_nsm_released, op))
		op->releases++;
	ctrlr_nsm_released(op);
}

static void ctrlr_nsm_run(struct ctrlr_ns_pool *pool)
{
	struct ctrlr_nsm_op *op = pool->ops_head;

	switch (op->kind) {
	case CTRLR_NSM_CREATE:
		return ctrlr_nsm_create_run(op);
	case CTRLR_NSM_DELETE:
		return ctrlr_nsm_delete_run(op);
	case CTRLR_NSM_ATTACH:
	case CTRLR_NSM_DETACH:
		return ctrlr_nsm_attach_run(op);
	}
}

static void ctrlr_nsm_queue(struct ctrlr_ns_pool *pool, struct ctrlr_nsm_op *op)
{
	op->pool = pool;
	/* Parked: no data in use while it waits (the host data was copied already). */
	ctrlr_req_data_done(op->req);
	if (pool->ops_tail)
		pool->ops_tail->next = op;
	else
		pool->ops_head = op;
	pool->ops_tail = op;
	if (pool->ops_head == op)
		ctrlr_nsm_run(pool);
}

/* NSID rules shared by delete and attach: 0 and out of range are invalid (Invalid Namespace or
 * Format); FFFFFFFFh only where allowed. */
static bool ctrlr_nsm_nsid_ok(uint32_t nsid, bool all_ok)
{
	if (nsid == NVME_NSID_ALL)
		return all_ok;
	return nsid && nsid <= CTRLR_MAX_NAMESPACES;
}

void ctrlr_admin_ns_mgmt(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t sel = req->sqe.cdw10 & 0xf;
	struct ctrlr_nsm_op *op;

	if (!ctrlr_pool_of(ctrlr))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	if (sel != NVME_NS_MGMT_SEL_CREATE && sel != NVME_NS_MGMT_SEL_DELETE)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if (sel == NVME_NS_MGMT_SEL_DELETE && !ctrlr_nsm_nsid_ok(req->sqe.nsid, true))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_NS,
					      offsetof(struct nvme_sqe, nsid));
	op = calloc(1, sizeof(*op));
	if (!op)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	op->req = req;
	if (sel == NVME_NS_MGMT_SEL_CREATE) {
		uint16_t loc, st = ctrlr_nsm_create(req, op, &loc);

		if (st) {
			free(op);
			return ctrlr_req_complete_err(req, st, loc);
		}
	} else {
		op->kind = CTRLR_NSM_DELETE;
		op->nsid = req->sqe.nsid;
	}
	ctrlr_nsm_queue(ctrlr_pool_of(ctrlr), op);
}

void ctrlr_admin_ns_attach(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t sel = req->sqe.cdw10 & 0xf;
	uint32_t nsid = req->sqe.nsid;
	uint16_t list[NVME_CTRL_LIST_MAX + 1], n;
	struct ctrlr_nsm_op *op;
	uint16_t st;

	if (!ctrlr_pool_of(ctrlr))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	if (sel != NVME_NS_ATTACH_SEL_ATTACH && sel != NVME_NS_ATTACH_SEL_DETACH)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	/* The command acts on one namespace: FFFFFFFFh is not one (Invalid Field). */
	if (nsid == NVME_NSID_ALL)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, nsid));
	if (!ctrlr_nsm_nsid_ok(nsid, false))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_NS,
					      offsetof(struct nvme_sqe, nsid));
	st = ctrlr_req_copy_from_host(req, list, sizeof(list));
	if (st)
		return ctrlr_req_complete(req, st);
	/* Section 5.22: the Controller List names controllers of this NVM subsystem, each
	 * once; here the subsystem has one, this controller. */
	n = list[0];
	if (n == 0 || n > NVME_CTRL_LIST_MAX)
		return ctrlr_req_complete(req, NVME_SC_CTRL_LIST_INVALID);
	for (uint16_t i = 1; i <= n; i++) {
		if (list[i] != ctrlr->cfg.cntlid)
			return ctrlr_req_complete(req, NVME_SC_CTRL_LIST_INVALID);
		for (uint16_t j = 1; j < i; j++)
			if (list[j] == list[i])
				return ctrlr_req_complete(req, NVME_SC_CTRL_LIST_INVALID);
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	op->req = req;
	op->kind = sel == NVME_NS_ATTACH_SEL_ATTACH ? CTRLR_NSM_ATTACH : CTRLR_NSM_DETACH;
	op->nsid = nsid;
	ctrlr_nsm_queue(ctrlr_pool_of(ctrlr), op);
}

/* ---- Identify ---- */

static void ctrlr_nsm_le128_put(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

void ctrlr_nsm_identify_ctrl(struct ctrlr *ctrlr, struct nvme_id_ctrl *id)
{
	struct ctrlr_ns_pool_info info;
	uint64_t total;

	if (!ctrlr_pool_of(ctrlr))
		return;
	id->oacs |= NVME_OACS_NS_MGMT;
	ctrlr_ns_pool_get_info(ctrlr_pool_of(ctrlr), &info);
	/* Base 2.0 section 5.17.2.1: TNVMCAP is all the NVM of the subsystem, the pool's
	 * namespace area plus the operator's namespaces (their bdevs: data and metadata);
	 * UNVMCAP what is not allocated to a namespace, so that TNVMCAP is UNVMCAP plus the
	 * NVMCAP of every namespace. A host can create UNVMCAP / (data + metadata size) blocks,
	 * rounded down to the granule, in any format (the regions are packed). */
	total = info.total_bytes;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (ns && !ctrlr_ns_pool_owns(ctrlr_pool_of(ctrlr), ns->nsid))
			total += bdev_get_num_blocks(ns->bdev) * bdev_get_block_size(ns->bdev);
	}
	ctrlr_nsm_le128_put(id->tnvmcap, total);
	ctrlr_nsm_le128_put(id->unvmcap, info.free_bytes);
	/* Namespaces are made in FLBAS's format only (FNA bit 0: Format applies per namespace). */
}

bool ctrlr_nsm_ns_nvmcap(struct ctrlr *ctrlr, uint32_t nsid, uint64_t *bytes)
{
	struct ctrlr_ns_pool *pool = ctrlr_pool_of(ctrlr);

	if (!pool || !ctrlr_ns_pool_owns(pool, nsid))
		return false;
	/* The extent: whole granules, the NVM no other namespace can have. */
	*bytes = pool->ns[nsid - 1].len;
	return true;
}

void ctrlr_nsm_allocated_list(struct ctrlr *ctrlr, uint32_t after, uint32_t *list)
{
	uint32_t n = 0;

	/* Allocated: the pool's namespaces, attached or not, and the operator's (always
	 * attached). */
	for (uint32_t nsid = after + 1; nsid <= CTRLR_MAX_NAMESPACES && n < 1024; nsid++)
		if (ctrlr->ns[nsid - 1] || (ctrlr_pool_of(ctrlr) && ctrlr_ns_pool_owns(ctrlr_pool_of(ctrlr), nsid)))
			list[n++] = nsid;
}

bool ctrlr_nsm_ns_snapshot(struct ctrlr *ctrlr, uint32_t nsid, struct ctrlr_ns *out)
{
	const struct ctrlr_pool_ns *e;

	if (!ctrlr_pool_of(ctrlr) || !ctrlr_ns_pool_owns(ctrlr_pool_of(ctrlr), nsid))
		return false;
	e = &ctrlr_pool_of(ctrlr)->ns[nsid - 1];
	memset(out, 0, sizeof(*out));
	out->ctrlr = ctrlr;
	out->nsid = nsid;
	out->bdev = e->bdev;
	/* In the format it was created or formatted in. */
	ctrlr_ns_formats_init(out);
	if (ctrlr_ns_set_flbas(out, e->flbas, e->dps))
		LOG_ERR(CTRLR_LOG, "namespace %u: its pool entry has an unknown format", nsid);
	out->nmic = e->nmic;
	out->has_unmap = bdev_io_type_supported(e->bdev, BDEV_IO_UNMAP);
	out->has_write_zeroes = bdev_io_type_supported(e->bdev, BDEV_IO_WRITE_ZEROES);
	/* The identifiers ctrlr_ns_add derives from the UUID when attached. */
	memcpy(out->uuid, e->uuid, 16);
	memcpy(out->nguid, e->uuid, 16);
	out->eui64[0] = 0x02;
	out->eui64[1] = 0x4e;
	out->eui64[2] = 0x58;
	memcpy(&out->eui64[3], &e->uuid[11], 5);
	return true;
}

/* ---- the module ---- */

/* Namespace Management and Attachment exist on a controller bound to a pool (OACS bit 3). */
static bool ctrlr_nsm_supported(const struct ctrlr *ctrlr)
{
	return ctrlr_pool_of(ctrlr) != NULL;
}

/* The namespace inventory changes; Namespace Management changes Identify Controller's UNVMCAP. */
static const struct ctrlr_cmd ctrlr_pool_admin_cmds[256] = {
    [NVME_ADM_NS_MGMT] = {.exec = ctrlr_admin_ns_mgmt,
			  .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_NIC |
				     NVME_CMD_EFFECTS_NCC | NVME_CMD_EFFECTS_CCC,
			  .supported = ctrlr_nsm_supported},
    [NVME_ADM_NS_ATTACH] = {.exec = ctrlr_admin_ns_attach,
			    .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_NIC,
			    .supported = ctrlr_nsm_supported},
};

const struct ctrlr_module ctrlr_pool_module = {
    .name = "pool",
    .ctrlr_size = sizeof(struct ctrlr_pool_ctrlr),
    .admin_cmds = ctrlr_pool_admin_cmds,
    .destroy = ctrlr_pool_unbind,
};
