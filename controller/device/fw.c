/* controller/device/fw.c - Firmware Image Download (11h) and Firmware Commit (10h) (NVMe Base 2.0,
 * 5.11 and 5.12). Three slots: slot 1 is read-only and holds the shipped revision; an image is
 * downloaded in pieces of whole 4 KiB units (FWUG), committed to slot 2 or 3, and activated at
 * the next Controller Level Reset (commit actions 1 and 2) or at once (action 3, with the
 * Firmware Activation Starting notice). An image's revision is its first 8 bytes, printable
 * ASCII; anything else is an Invalid Firmware Image. With a controller state file (state.c) the
 * slots, the active one and the one committed for the next reset are written before the commit
 * completes, and a restart (a power cycle: a reset) finds them; without one a restart is a new
 * device with its shipped firmware. Admin thread. */
#include "controller/device/device.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t ctrlr_fw_units(const struct ctrlr_fw *fw)
{
	return (uint32_t)((fw->stage_len + CTRLR_FW_GRAN - 1) / CTRLR_FW_GRAN);
}

void ctrlr_fw_init(struct ctrlr *ctrlr)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;

	memset(fw, 0, sizeof(*fw));
	snprintf(fw->rev[0], sizeof(fw->rev[0]), "%s", ctrlr->fwrev);
	fw->active = 1;
}

void ctrlr_fw_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;

	free(fw->stage);
	fw->stage = NULL;
}

static void ctrlr_fw_activate(struct ctrlr *ctrlr, uint8_t slot)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;

	fw->active = slot;
	snprintf(ctrlr->fwrev, sizeof(ctrlr->fwrev), "%s", fw->rev[slot - 1]);
	LOG_INFO(CTRLR_LOG, "%s: firmware slot %u active, revision %s", ctrlr->serial, slot,
		 ctrlr->fwrev);
}

void ctrlr_fw_reset(struct ctrlr *ctrlr)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;

	/* A Controller Level Reset activates what was committed for it. */
	if (fw->next) {
		ctrlr_fw_activate(ctrlr, fw->next);
		fw->next = 0;
	}
}

void ctrlr_fw_power_on(struct ctrlr *ctrlr)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;

	/* A power cycle is a reset: what was committed for the next one runs now. */
	ctrlr_fw_activate(ctrlr, fw->next ? fw->next : fw->active);
	fw->next = 0;
}

size_t ctrlr_log_fw_slot(struct ctrlr *ctrlr, uint8_t *buf)
{
	const struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	struct nvme_fw_slot_log *f = (struct nvme_fw_slot_log *)buf;

	f->afi = (uint8_t)(fw->active | (fw->next << 4));
	for (int i = 0; i < CTRLR_FW_SLOTS; i++)
		if (fw->rev[i][0])
			ctrlr_copy_padded(f->frs[i], fw->rev[i], sizeof(f->frs[i]));
	return sizeof(*f);
}

void ctrlr_admin_fw_download(struct ctrlr_req *req)
{
	struct ctrlr_fw *fw = &ctrlr_dev(req->sq->ctrlr)->fw;
	uint64_t len = ((uint64_t)req->sqe.cdw10 + 1) * 4, off = (uint64_t)req->sqe.cdw11 * 4;
	uint16_t st;

	/* Whole FWUG units, inside the largest image we take. */
	if (len % CTRLR_FW_GRAN)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if (off % CTRLR_FW_GRAN || off + len > CTRLR_FW_MAX)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw11));
	if (off + len > fw->stage_cap) {
		size_t cap = fw->stage_cap ? fw->stage_cap : 1u << 20;
		uint8_t *p;

		while (cap < off + len)
			cap *= 2;
		p = realloc(fw->stage, cap);
		if (!p)
			return ctrlr_req_complete(req, NVME_SC_INTERNAL);
		memset(p + fw->stage_cap, 0, cap - fw->stage_cap);
		fw->stage = p;
		fw->stage_cap = cap;
	}
	st = ctrlr_req_copy_from_host(req, fw->stage + off, len);
	if (st)
		return ctrlr_req_complete(req, st);
	for (uint64_t u = off / CTRLR_FW_GRAN; u < (off + len) / CTRLR_FW_GRAN; u++) {
		if (fw->have[u / 8] & (1u << (u % 8)))
			fw->overlap = true;
		fw->have[u / 8] |= (uint8_t)(1u << (u % 8));
	}
	if (off + len > fw->stage_len)
		fw->stage_len = off + len;
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

/* The staged image is whole (no gap, no overlap) and names its revision. Returns a status. */
static uint16_t ctrlr_fw_check_image(struct ctrlr_fw *fw, char rev[9])
{
	if (!fw->stage_len)
		return NVME_SC_INVALID_FW_IMAGE;
	if (fw->overlap)
		return NVME_SC_FW_OVERLAPPING_RANGE;
	for (uint32_t u = 0; u < ctrlr_fw_units(fw); u++)
		if (!(fw->have[u / 8] & (1u << (u % 8))))
			return NVME_SC_INVALID_FW_IMAGE;
	for (int i = 0; i < 8; i++)
		if (fw->stage[i] < 0x20 || fw->stage[i] > 0x7e)
			return NVME_SC_INVALID_FW_IMAGE;
	memcpy(rev, fw->stage, 8);
	rev[8] = '\0';
	/* Trailing spaces are padding. */
	for (int i = 7; i > 0 && rev[i] == ' '; i--)
		rev[i] = '\0';
	return NVME_SC_SUCCESS;
}

static void ctrlr_fw_clear_stage(struct ctrlr_fw *fw)
{
	free(fw->stage);
	fw->stage = NULL;
	fw->stage_len = fw->stage_cap = 0;
	fw->overlap = false;
	memset(fw->have, 0, sizeof(fw->have));
}

/* What a commit changed, to undo it when its state cannot be written. */
struct ctrlr_fw_undo {
	char rev[CTRLR_FW_SLOTS][9];
	uint8_t active, next;
	char committed[9];
};

/* The commit's state was written (st 0), or not: the commit is undone and fails. */
static void ctrlr_fw_commit_saved(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	struct ctrlr_fw_undo *u = req->step.buf;
	uint8_t ca = (req->sqe.cdw10 >> 3) & 7, fs = (uint8_t)req->step.index;

	req->step.buf = NULL;
	if (st) {
		memcpy(fw->rev, u->rev, sizeof(fw->rev));
		fw->next = u->next;
		if (fw->active != u->active)
			ctrlr_fw_activate(ctrlr, u->active);
		free(u);
		return ctrlr_req_complete(req, st);
	}
	if (ca != 2) {
		LOG_INFO(CTRLR_LOG, "%s: firmware %s committed to slot %u (action %u)",
			 ctrlr->serial, u->committed, fs, ca);
		/* Activation without reset (FRMW bit 4): the host is told. */
		if (ca == 3 && (ctrlr->feat.async_event & NVME_AEC_FW_ACT))
			ctrlr_aer_report(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_FW_ACT_START,
					 NVME_LOG_FW_SLOT);
		ctrlr_pel_fw_commit(ctrlr, u->committed, ca, fs);
	}
	free(u);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

void ctrlr_admin_fw_commit(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	uint32_t cdw10 = req->sqe.cdw10;
	uint8_t fs = cdw10 & 7, ca = (cdw10 >> 3) & 7;
	struct ctrlr_fw_undo *u;
	char rev[9];
	uint16_t st;

	/* Boot partitions (BPID, CA 6 and 7) are not implemented; CA 4 and 5 neither. */
	if ((cdw10 >> 31) || ca > 3)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if (fs > CTRLR_FW_SLOTS)
		return ctrlr_req_complete(req, NVME_SC_INVALID_FW_SLOT);
	u = calloc(1, sizeof(*u));
	if (!u)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	memcpy(u->rev, fw->rev, sizeof(u->rev));
	u->active = fw->active;
	u->next = fw->next;
	if (ca == 2) {
		/* Activate what a slot holds, at the next reset. */
		if (!fs || !fw->rev[fs - 1][0]) {
			free(u);
			return ctrlr_req_complete(req, NVME_SC_INVALID_FW_SLOT);
		}
		fw->next = fs == fw->active ? 0 : fs;
	} else {
		/* CA 0, 1, 3: the downloaded image goes to a slot. 0: ours to choose (not the
		 * active one). */
		if (!fs)
			fs = fw->active == 2 ? 3 : 2;
		if (fs == 1) {
			free(u);
			return ctrlr_req_complete(req, NVME_SC_INVALID_FW_SLOT); /* read-only */
		}
		st = ctrlr_fw_check_image(fw, rev);
		if (st) {
			/* A bad image is dropped: the host downloads again from scratch. */
			ctrlr_fw_clear_stage(fw);
			free(u);
			return ctrlr_req_complete(req, st);
		}
		memcpy(fw->rev[fs - 1], rev, sizeof(rev));
		memcpy(u->committed, rev, sizeof(rev));
		ctrlr_fw_clear_stage(fw);
		if (ca == 1) {
			fw->next = fs;
		} else if (ca == 3) {
			fw->next = 0;
			ctrlr_fw_activate(ctrlr, fs);
		}
	}
	/* Durable before the commit completes (state.c; at once without a state file). */
	req->step.buf = u;
	req->step.index = fs;
	ctrlr_state_save(req, ctrlr_fw_commit_saved);
}
