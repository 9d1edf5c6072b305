/* controller/admin/log.c - Get Log Page (NVMe Base 2.0 section 5.16): supported log pages, error
 * information ring, SMART / health with live counters, firmware slot, changed namespace list,
 * commands supported and effects (generated from the opcode tables), LBA status information
 * (lba_status.c), the ZNS Changed Zone List (zns_cmd.c), Endurance Group Information and Event
 * Aggregate (endgrp.c). Admin thread. */
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "controller/admin/admin.h"
#include "controller/device/device.h"
#include "controller/nvm/nvm.h"
#include "controller/zns/zns.h"

#define CTRLR_LOG_MAX_SIZE 4096

static const uint8_t ctrlr_log_ids[] = {
    NVME_LOG_SUPPORTED, NVME_LOG_ERROR,	     NVME_LOG_SMART,
    NVME_LOG_FW_SLOT,	NVME_LOG_CHANGED_NS, NVME_LOG_CMD_EFFECTS,
    NVME_LOG_LBA_STATUS, NVME_LOG_RESV_NOTIFY, NVME_LOG_SELF_TEST, NVME_LOG_TELEMETRY_HOST,
    NVME_LOG_TELEMETRY_CTRL, NVME_LOG_PERSISTENT_EVENT, NVME_LOG_SANITIZE, NVME_LOG_ENDGRP,
    NVME_LOG_ENDGRP_EVENTS, NVME_LOG_FID_EFFECTS,
};

/* Per I/O command set (CSI in CDW14): the Zoned Namespace set adds its Changed Zone List. */
static size_t ctrlr_log_supported(struct ctrlr *ctrlr, uint8_t *buf, uint8_t csi)
{
	uint32_t *lids = (uint32_t *)buf;

	for (size_t i = 0; i < CTRLR_ARRAY_SIZE(ctrlr_log_ids); i++)
		lids[ctrlr_log_ids[i]] = NVME_LOG_SUPPORTED_LSUPP;
	if (csi == NVME_CSI_ZNS)
		lids[NVME_LOG_ZNS_CHANGED_ZONES] = NVME_LOG_SUPPORTED_LSUPP;
	if (ctrlr_fdp_supported(ctrlr))
		for (uint8_t lid = NVME_LOG_FDP_CONFIGS; lid <= NVME_LOG_FDP_EVENTS; lid++)
			lids[lid] = NVME_LOG_SUPPORTED_LSUPP;
	return 256 * sizeof(uint32_t);
}

static size_t ctrlr_log_error(struct ctrlr *ctrlr, uint8_t *buf)
{
	struct nvme_error_log_entry *out = (struct nvme_error_log_entry *)buf;
	uint64_t count = __atomic_load_n(&ctrlr->error_count, __ATOMIC_ACQUIRE);
	uint32_t n = count < CTRLR_ERROR_LOG_ENTRIES ? (uint32_t)count : CTRLR_ERROR_LOG_ENTRIES;

	/* Newest first (section 5.16.1.2). */
	for (uint32_t i = 0; i < n; i++)
		out[i] = ctrlr->error_log[(count - 1 - i) % CTRLR_ERROR_LOG_ENTRIES];
	return CTRLR_ERROR_LOG_ENTRIES * sizeof(*out);
}

static size_t ctrlr_log_changed_ns(struct ctrlr *ctrlr, uint8_t *buf, bool rae)
{
	uint32_t *list = (uint32_t *)buf;

	if (ctrlr->changed_ns_overflow)
		list[0] = NVME_CHANGED_NS_OVERFLOW;
	else
		memcpy(list, ctrlr->changed_ns, ctrlr->num_changed_ns * sizeof(uint32_t));
	if (!rae) {
		ctrlr->num_changed_ns = 0;
		ctrlr->changed_ns_overflow = false;
	}
	return NVME_CHANGED_NS_MAX * sizeof(uint32_t);
}

/* Per I/O command set (CSI in CDW14): the Zoned Namespace set is the NVM set plus its own. */
static size_t ctrlr_log_effects(struct ctrlr *ctrlr, uint8_t *buf, uint8_t csi)
{
	struct nvme_effects_log *e = (struct nvme_effects_log *)buf;

	for (unsigned int op = 0; op < 256; op++) {
		e->acs[op] = ctrlr_admin_effects(ctrlr, (uint8_t)op);
		e->iocs[op] = ctrlr_io_effects(ctrlr, csi, (uint8_t)op);
	}
	return sizeof(*e);
}

void ctrlr_admin_get_log_page(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	const struct nvme_sqe *sqe = &req->sqe;
	uint8_t lid = sqe->cdw10 & 0xff;
	bool rae = sqe->cdw10 & (1u << 15);
	uint64_t numd = ((uint64_t)(sqe->cdw11 & 0xffff) << 16 | (sqe->cdw10 >> 16)) + 1;
	uint64_t len = numd * 4;
	uint64_t off = (uint64_t)sqe->cdw12 | ((uint64_t)sqe->cdw13 << 32);
	uint8_t csi = sqe->cdw14 >> 24;
	uint8_t *buf;
	size_t size;
	uint16_t st;

	if (sqe->cdw14 & (1u << 23)) /* offset type "index": not supported */
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw14));
	if (off & 3)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12));
	buf = calloc(1, CTRLR_LOG_MAX_SIZE);
	if (!buf)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	switch (lid) {
	case NVME_LOG_SUPPORTED:
		size = ctrlr_log_supported(ctrlr, buf, csi);
		break;
	case NVME_LOG_ERROR:
		size = ctrlr_log_error(ctrlr, buf);
		break;
	case NVME_LOG_SMART: {
		struct ctrlr_ns *ns = NULL;

		if (sqe->nsid && sqe->nsid != NVME_NSID_ALL) {
			ns = ctrlr_ns_get(ctrlr, sqe->nsid);
			if (!ns) {
				free(buf);
				return ctrlr_req_complete_err(req, NVME_SC_INVALID_NS,
							      offsetof(struct nvme_sqe, nsid));
			}
		}
		size = ctrlr_log_smart(ctrlr, ns, buf);
		if (ns)
			ctrlr_ns_put(ns);
		break;
	}
	case NVME_LOG_FW_SLOT:
		size = ctrlr_log_fw_slot(ctrlr, buf);
		break;
	case NVME_LOG_CHANGED_NS:
		size = ctrlr_log_changed_ns(ctrlr, buf, rae);
		break;
	case NVME_LOG_CMD_EFFECTS:
		if (csi != NVME_CSI_NVM && csi != NVME_CSI_ZNS) {
			free(buf);
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
						      offsetof(struct nvme_sqe, cdw14) + 3);
		}
		size = ctrlr_log_effects(ctrlr, buf, csi);
		break;
	case NVME_LOG_FID_EFFECTS: /* features.c */
		size = ctrlr_log_fid_effects(ctrlr, buf);
		break;
	case NVME_LOG_LBA_STATUS:
		size = ctrlr_log_lba_status(ctrlr, buf, CTRLR_LOG_MAX_SIZE);
		break;
	case NVME_LOG_ENDGRP: /* the group in the Log Specific Identifier (CDW11 bits 31:16) */
		size = ctrlr_log_endgrp(ctrlr, sqe->cdw11 >> 16, buf);
		if (!size) {
			free(buf);
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
						      offsetof(struct nvme_sqe, cdw11) + 2);
		}
		break;
	case NVME_LOG_ENDGRP_EVENTS:
		size = ctrlr_log_endgrp_events(ctrlr, buf, rae);
		break;
	case NVME_LOG_FDP_CONFIGS:
	case NVME_LOG_FDP_RUH_USAGE:
	case NVME_LOG_FDP_STATS:
	case NVME_LOG_FDP_EVENTS:
		size = ctrlr_log_fdp(req, lid, buf, CTRLR_LOG_MAX_SIZE, &st);
		if (st) {
			free(buf);
			return ctrlr_req_complete_err(req, st, st == NVME_SC_INVALID_LOG_PAGE
								  ? offsetof(struct nvme_sqe, cdw10)
								  : offsetof(struct nvme_sqe, cdw11) + 2);
		}
		break;
	case NVME_LOG_ZNS_CHANGED_ZONES: { /* zns_cmd.c */
		uint32_t loc = 0;

		st = ctrlr_zns_log_changed(req, csi, buf, &size, &loc);
		if (st) {
			free(buf);
			return ctrlr_req_complete_err(req, st, loc);
		}
		break;
	}
	case NVME_LOG_RESV_NOTIFY: /* io_resv.c */
		size = ctrlr_log_resv_notify(ctrlr, buf, rae);
		break;
	case NVME_LOG_SELF_TEST:
	case NVME_LOG_TELEMETRY_HOST:
	case NVME_LOG_TELEMETRY_CTRL:
	case NVME_LOG_PERSISTENT_EVENT:
	case NVME_LOG_SANITIZE:
		/* admin_bg.c: sizes of their own (telemetry and the event log grow). */
		free(buf);
		buf = NULL;
		st = ctrlr_log_device(req, lid, &buf, &size);
		if (st)
			return ctrlr_req_complete(req, st);
		break;
	default:
		free(buf);
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_LOG_PAGE,
					      offsetof(struct nvme_sqe, cdw10));
	}
	if (off > size) {
		free(buf);
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12));
	}
	/* Exactly NUMD dwords from the offset; bytes past the end of the log read as zero. */
	st = ctrlr_req_map_data(req, len, CTRLR_DMA_WRITE);
	if (!st) {
		uint64_t pos = off;

		for (int i = 0; i < req->iovcnt; i++) {
			uint64_t n = req->iov[i].iov_len, have = pos < size ? size - pos : 0;
			uint64_t c = n < have ? n : have;

			memcpy(req->iov[i].iov_base, buf + pos, c);
			memset((char *)req->iov[i].iov_base + c, 0, n - c);
			pos += n;
		}
	}
	free(buf);
	ctrlr_req_complete(req, st);
	/* After the log's own CQE: an event this read unmasks is posted behind it. */
	if (!st && !rae) {
		if (lid == NVME_LOG_ZNS_CHANGED_ZONES)
			ctrlr_zns_log_changed_read(ctrlr, sqe->nsid); /* also unmasks */
		else
			ctrlr_aer_log_read(ctrlr, lid);
	}
}
