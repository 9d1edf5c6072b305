/* tests/integration/crash/crash_admin.c - the crash torture's admin strand: one admin operation
 * in flight at a time (firmware, features with SV, namespace management and attachment, Format,
 * reservations), its model, and the device state read back after a restart. */
#include "tests/integration/crash/crash.h"

/* ---- the admin strand: device state other than data and zones ---- */

/* A command's CQE status (without the phase) and dw0, synchronously; -errno. */
static int ct_cmd_dw0(uint16_t qid, struct nvme_sqe *sqe, uint32_t *dw0)
{
	struct nvme_cqe cqe;
	int rc = nvme_host_cmd(&ct.h, qid, sqe, &cqe);

	if (!rc && dw0)
		*dw0 = cqe.dw0;
	return rc;
}

static void ct_fw_rev_str(char out[9], const char *frs)
{
	memcpy(out, frs, 8);
	out[8] = 0;
	for (int i = 7; i >= 0 && (out[i] == ' ' || !out[i]); i--)
		out[i] = 0;
}

/* What the device holds now, read back (after a restart). 0 or -1 (and a failure said). */
int ct_adm_read(struct ct_adm *a)
{
	struct nvme_sqe sqe = {0};
	uint32_t list[1024], active[1024], dw0 = 0;
	int rc;

	memset(a, 0, sizeof(*a));
	/* Firmware Slot Information. */
	sqe.cdw0.bits.opc = NVME_ADM_GET_LOG_PAGE;
	sqe.cdw10 = NVME_LOG_FW_SLOT | (512 / 4 - 1) << 16;
	sqe.dptr.prp.prp1 = ct.rbuf_iova;
	if ((rc = ct_cmd(0, &sqe))) {
		ct_fail("Get Log Page firmware slots: %d", rc);
		return -1;
	}
	{
		const struct nvme_fw_slot_log *fw = (const void *)ct.rbuf;

		a->fw_active = fw->afi & 7;
		a->fw_next = (fw->afi >> 4) & 7;
		ct_fw_rev_str(a->fw[0], fw->frs[1]);
		ct_fw_rev_str(a->fw[1], fw->frs[2]);
	}
	/* Features: the current values, and the saved ones must be the same. */
	for (int sel = 0; sel <= 2; sel += 2) {
		uint32_t arb = 0, tover = 0;

		memset(&sqe, 0, sizeof(sqe));
		sqe.cdw0.bits.opc = NVME_ADM_GET_FEATURES;
		sqe.cdw10 = NVME_FEAT_ARBITRATION | (uint32_t)sel << 8;
		rc = ct_cmd_dw0(0, &sqe, &arb);
		sqe.cdw10 = NVME_FEAT_TEMP_THRESH | (uint32_t)sel << 8;
		sqe.cdw11 = 0;
		rc = rc ?: ct_cmd_dw0(0, &sqe, &tover);
		if (rc) {
			ct_fail("Get Features (select %d): %d", sel, rc);
			return -1;
		}
		if (sel == 0)
			a->arb = arb, a->tover = tover & 0xffff;
		else if (arb != a->arb || (tover & 0xffff) != a->tover) {
			ct_fail("features: current %#x/%#x, saved %#x/%#x", a->arb, a->tover, arb,
				tover & 0xffff);
			return -1;
		}
	}
	/* The pool's namespaces: allocated, attached, format. */
	if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ALLOC_NS_LIST, 0, ct.rbuf))) {
		ct_fail("Identify allocated namespaces: %d", rc);
		return -1;
	}
	memcpy(list, ct.rbuf, sizeof(list));
	if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ACTIVE_NS_LIST, 0, ct.rbuf))) {
		ct_fail("Identify active namespaces: %d", rc);
		return -1;
	}
	memcpy(active, ct.rbuf, sizeof(active));
	for (unsigned int i = 0; i < 1024 && list[i]; i++) {
		uint32_t nsid = list[i];

		if (nsid < 3)
			continue;
		if (nsid > CT_MAXNS) {
			ct_fail("namespace %u allocated: never created", nsid);
			return -1;
		}
		a->ns[nsid].alloc = true;
		if ((rc = nvme_host_identify(&ct.h, NVME_CNS_ALLOC_NS, nsid, ct.rbuf))) {
			ct_fail("Identify namespace %u: %d", nsid, rc);
			return -1;
		}
		a->ns[nsid].lbaf = ((const struct nvme_id_ns *)ct.rbuf)->flbas & 0xf;
	}
	for (unsigned int i = 0; i < 1024 && active[i]; i++) {
		if (active[i] < 3)
			continue;
		if (active[i] > CT_MAXNS || !a->ns[active[i]].alloc) {
			ct_fail("namespace %u active, not allocated", active[i]);
			return -1;
		}
		a->ns[active[i]].att = true;
	}
	/* The reservation of namespace 2. */
	memset(&sqe, 0, sizeof(sqe));
	sqe.cdw0.bits.opc = NVME_CMD_RESV_REPORT;
	sqe.nsid = 2;
	sqe.cdw10 = 4096 / 4 - 1;
	sqe.dptr.prp.prp1 = ct.rbuf_iova;
	if ((rc = ct_cmd_dw0(1, &sqe, &dw0))) {
		ct_fail("Reservation Report: %d", rc);
		return -1;
	}
	{
		const struct nvme_resv_status_hdr *hdr = (const void *)ct.rbuf;
		const struct nvme_resv_ctrl *rc0 = (const void *)(ct.rbuf + sizeof(*hdr));

		a->ptpl = hdr->ptpls & 1;
		a->rtype = hdr->rtype;
		if (hdr->regctl > 1 || (hdr->regctl && rc0->hostid != CT_HOSTID)) {
			ct_fail("reservation: %u registrants (host %#" PRIx64 ")", hdr->regctl,
				rc0->hostid);
			return -1;
		}
		a->reg = hdr->regctl == 1;
		a->key = a->reg ? rc0->rkey : 0;
		if (a->rtype && (!a->reg || !(rc0->rcsts & 1))) {
			ct_fail("reservation type %u held by no registrant of ours", a->rtype);
			return -1;
		}
	}
	return 0;
}

/* What a restart (a power cycle) makes of a state: the firmware committed for the next reset
 * runs. */
static void ct_adm_restart(struct ct_adm *a)
{
	if (a->fw_next)
		a->fw_active = a->fw_next;
	a->fw_next = 0;
}

static bool ct_adm_eq(const struct ct_adm *x, const struct ct_adm *y)
{
	if (strcmp(x->fw[0], y->fw[0]) || strcmp(x->fw[1], y->fw[1]) ||
	    x->fw_active != y->fw_active || x->fw_next != y->fw_next || x->arb != y->arb ||
	    x->tover != y->tover || x->reg != y->reg || x->ptpl != y->ptpl || x->key != y->key ||
	    x->rtype != y->rtype)
		return false;
	for (uint32_t n = 3; n <= CT_MAXNS; n++)
		if (x->ns[n].alloc != y->ns[n].alloc ||
		    (x->ns[n].alloc && (x->ns[n].att != y->ns[n].att || x->ns[n].lbaf != y->ns[n].lbaf)))
			return false;
	return true;
}

/* A created namespace's NSID is in its CQE: one in doubt may be at any free NSID. */
static bool ct_adm_eq_created(const struct ct_adm *obs, const struct ct_adm *before)
{
	struct ct_adm t = *before;

	for (uint32_t n = 3; n <= CT_MAXNS; n++) {
		if (obs->ns[n].alloc && !before->ns[n].alloc) {
			t.ns[n].alloc = true;
			t.ns[n].att = false;
			t.ns[n].lbaf = 0;
			return ct_adm_eq(obs, &t);
		}
	}
	return false;
}

void ct_adm_show(const char *what, const struct ct_adm *a)
{
	fprintf(stderr, "  %s: fw [%s|%s] active %u next %u, arb %#x tover %u, resv reg %d key %#" PRIx64
		" type %u ptpl %d, ns", what, a->fw[0], a->fw[1], a->fw_active, a->fw_next, a->arb,
		a->tover, a->reg, a->key, a->rtype, a->ptpl);
	for (uint32_t n = 3; n <= CT_MAXNS; n++)
		if (a->ns[n].alloc)
			fprintf(stderr, " %u%s/f%u", n, a->ns[n].att ? "a" : "", a->ns[n].lbaf);
	fprintf(stderr, "\n");
}

/* After a restart: the device's state is the model's, or, with an operation in doubt, the
 * model's with that operation whole; the model takes what was found. */
void ct_adm_verify(void)
{
	struct ct_adm obs, before = ct.adm, after = ct.aop.after;

	if (ct_adm_read(&obs))
		return;
	ct_adm_restart(&before);
	ct_adm_restart(&after);
	if (ct_adm_eq(&obs, &before)) {
		ct.adm_doubt_absent += ct.aop.busy;
	} else if (ct.aop.busy && (ct.aop.kind == CT_A_CREATE ? ct_adm_eq_created(&obs, &before)
							 : ct_adm_eq(&obs, &after))) {
		ct.adm_doubt_whole++;
	} else {
		ct_fail("device state after the restart is neither the acknowledged one nor that with "
			"the operation in doubt (kind %d%s) whole", ct.aop.kind,
			ct.aop.busy ? "" : ", none in doubt");
		ct_adm_show("found", &obs);
		ct_adm_show("acknowledged", &before);
		if (ct.aop.busy)
			ct_adm_show("with the one in doubt", &after);
		return;
	}
	ct.adm = obs;
	ct.aop.busy = false;
}

/* Picks an admin-strand operation the model allows and submits it; false when none. */
bool ct_adm_submit(void)
{
	struct ct_aop *op = &ct.aop;
	struct ct_adm *a = &op->after;
	struct nvme_sqe sqe = {0};
	uint32_t free_ns = 0, alloc_ns[CT_MAXNS + 1], nalloc = 0, att_ns[CT_MAXNS + 1], natt = 0;
	int cid;

	if (op->busy)
		return false;
	*a = ct.adm;
	for (uint32_t n = 3; n <= CT_MAXNS; n++) {
		if (!ct.adm.ns[n].alloc)
			free_ns++;
		else {
			alloc_ns[nalloc++] = n;
			if (ct.adm.ns[n].att)
				att_ns[natt++] = n;
		}
	}
	op->kind = (enum ct_akind)ct_below(CT_A_NKINDS);
	op->qid = 0;
	memset(op->buf, 0, 4096);
	switch (op->kind) {
	case CT_A_FW: {
		/* Download an image (its revision: 8 printable bytes), commit it to slot 2 or 3 to
		 * run at the next reset; or commit an existing slot for the next reset. */
		uint8_t slot = (uint8_t)(2 + ct_below(2));
		char rev[9];

		if (ct_below(3) || !ct.adm.fw[slot - 2][0]) {
			snprintf(rev, sizeof(rev), "C%07" PRIu64, ct_below(10000000));
			memset(op->buf, 0x5a, 4096);
			memcpy(op->buf, rev, 8);
			sqe.cdw0.bits.opc = NVME_ADM_FW_DOWNLOAD;
			sqe.cdw10 = 4096 / 4 - 1;
			sqe.dptr.prp.prp1 = op->iova;
			if (ct_cmd(0, &sqe)) {
				ct_fail("Firmware Image Download failed");
				return false;
			}
			memset(&sqe, 0, sizeof(sqe));
			sqe.cdw10 = slot | 1u << 3; /* CA 001b: replace, activate at the next reset */
			memcpy(a->fw[slot - 2], rev, 9);
		} else {
			sqe.cdw10 = slot | 2u << 3; /* CA 010b: activate the slot at the next reset */
		}
		sqe.cdw0.bits.opc = NVME_ADM_FW_COMMIT;
		a->fw_next = slot;
		break;
	}
	case CT_A_FEAT:
		sqe.cdw0.bits.opc = NVME_ADM_SET_FEATURES;
		if (ct_below(2)) {
			sqe.cdw10 = NVME_FEAT_ARBITRATION | 1u << 31;
			sqe.cdw11 = (uint32_t)ct_rand() & 0xffffff07u;
			a->arb = sqe.cdw11;
		} else {
			sqe.cdw10 = NVME_FEAT_TEMP_THRESH | 1u << 31;
			sqe.cdw11 = (uint32_t)(350 + ct_below(100)); /* Kelvin, over, composite */
			a->tover = sqe.cdw11;
		}
		break;
	case CT_A_CREATE: {
		struct nvme_id_ns *id = (struct nvme_id_ns *)op->buf;

		if (!free_ns || nalloc >= 7)
			return false;
		id->nsze = id->ncap = 2048; /* 1 MiB in format 0 */
		sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
		sqe.cdw10 = NVME_NS_MGMT_SEL_CREATE;
		sqe.dptr.prp.prp1 = op->iova;
		break;
	}
	case CT_A_DELETE:
	case CT_A_ATTACH:
	case CT_A_DETACH:
	case CT_A_FORMAT: {
		uint32_t nsid;

		if (op->kind == CT_A_DELETE || op->kind == CT_A_ATTACH) {
			if (!nalloc)
				return false;
			nsid = alloc_ns[ct_below(nalloc)];
		} else {
			if (!natt)
				return false;
			nsid = att_ns[ct_below(natt)];
		}
		sqe.nsid = nsid;
		if (op->kind == CT_A_DELETE) {
			sqe.cdw0.bits.opc = NVME_ADM_NS_MGMT;
			sqe.cdw10 = NVME_NS_MGMT_SEL_DELETE;
			a->ns[nsid].alloc = a->ns[nsid].att = false;
			a->ns[nsid].lbaf = 0;
		} else if (op->kind == CT_A_FORMAT) {
			/* Format 0 or 1 (both offered on a 512-byte pool), no PI, no secure erase. */
			uint8_t lbaf = (uint8_t)ct_below(2);

			sqe.cdw0.bits.opc = NVME_ADM_FORMAT_NVM;
			sqe.cdw10 = lbaf;
			a->ns[nsid].lbaf = lbaf;
		} else {
			uint16_t *l = (uint16_t *)op->buf;

			if (op->kind == CT_A_ATTACH && ct.adm.ns[nsid].att)
				return false;
			l[0] = 1;
			l[1] = ct.cntlid;
			sqe.cdw0.bits.opc = NVME_ADM_NS_ATTACH;
			sqe.cdw10 = op->kind == CT_A_ATTACH ? NVME_NS_ATTACH_SEL_ATTACH
							    : NVME_NS_ATTACH_SEL_DETACH;
			sqe.dptr.prp.prp1 = op->iova;
			a->ns[nsid].att = op->kind == CT_A_ATTACH;
		}
		break;
	}
	case CT_A_REG:
	case CT_A_UNREG:
	case CT_A_ACQUIRE:
	case CT_A_RELEASE: {
		uint64_t nkey = 1 + ct_below(1u << 30), *d = (uint64_t *)op->buf;

		op->qid = 1;
		sqe.nsid = 2;
		sqe.dptr.prp.prp1 = op->iova;
		if (op->kind == CT_A_REG) {
			/* Register, or replace the key; Persist Through Power Loss on (CPTPL 11b). */
			sqe.cdw0.bits.opc = NVME_CMD_RESV_REGISTER;
			sqe.cdw10 = (ct.adm.reg ? 2u : 0u) | 3u << 30;
			d[0] = ct.adm.key;
			d[1] = nkey;
			a->reg = a->ptpl = true;
			a->key = nkey;
		} else if (op->kind == CT_A_UNREG) {
			if (!ct.adm.reg)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_REGISTER;
			sqe.cdw10 = 1u;
			d[0] = ct.adm.key;
			a->reg = false;
			a->key = 0;
			a->rtype = 0; /* the holder unregistered: the reservation is released */
		} else if (op->kind == CT_A_ACQUIRE) {
			if (!ct.adm.reg || ct.adm.rtype)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_ACQUIRE;
			a->rtype = (uint8_t)(NVME_RESV_WRITE_EXCLUSIVE + ct_below(2));
			sqe.cdw10 = (uint32_t)a->rtype << 8;
			d[0] = ct.adm.key;
		} else {
			if (!ct.adm.rtype)
				return false;
			sqe.cdw0.bits.opc = NVME_CMD_RESV_RELEASE;
			sqe.cdw10 = (uint32_t)ct.adm.rtype << 8;
			d[0] = ct.adm.key;
			a->rtype = 0;
		}
		break;
	}
	default:
		return false;
	}
	cid = nvme_host_submit(&ct.h, op->qid, &sqe, false);
	if (cid < 0)
		return false;
	op->cid = (uint16_t)cid;
	op->busy = true;
	return true;
}

/* The admin-strand operation's CQE: the model takes its effect. */
void ct_adm_acked(const struct nvme_cqe *cqe)
{
	uint16_t st = (cqe->status >> 1) & 0x7ff;
	struct ct_aop *op = &ct.aop;

	op->busy = false;
	ct.acked++;
	if (st) {
		ct_fail("admin-strand operation (kind %d) failed: status %#x", op->kind, st);
		return;
	}
	if (op->kind == CT_A_CREATE) {
		uint32_t nsid = cqe->dw0;

		if (nsid < 3 || nsid > CT_MAXNS || ct.adm.ns[nsid].alloc) {
			ct_fail("Namespace Management created namespace %u", nsid);
			return;
		}
		op->after.ns[nsid].alloc = true;
		op->after.ns[nsid].att = false;
		op->after.ns[nsid].lbaf = 0;
	}
	ct.adm = op->after;
	ct.adm_acked[op->kind]++;
}

