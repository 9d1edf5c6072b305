/* controller/zns_cmd.c - the Zoned Namespace Command Set's commands and hooks (NVMe ZNS 1.1):
 * Zone Management Send (3.4.3, with Set Zone Descriptor Extension), Zone Management Receive
 * (3.4.2, with Extended Report Zones), Zone Append (3.4.1), the Changed Zone List log and the
 * Zone Descriptor Changed notice, the zone rules in the NVM commands' paths, and Identify CNS
 * 05h/06h for CSI 2h, 07h per CSI and 1Ch (Base 2.0 5.17.2). The zone state machine itself is
 * zns.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"
#include "controller/core/core.h"
#include "controller/nvm/resv.h"
#include "controller/zns/zns.h"

bool ctrlr_zns_is_opcode(uint8_t opc)
{
	return opc == NVME_CMD_ZONE_MGMT_SEND || opc == NVME_CMD_ZONE_MGMT_RECV ||
	       opc == NVME_CMD_ZONE_APPEND;
}

uint32_t ctrlr_zns_effects(uint8_t opc)
{
	switch (opc) {
	case NVME_CMD_ZONE_MGMT_SEND:
	case NVME_CMD_ZONE_APPEND:
		return NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC;
	case NVME_CMD_ZONE_MGMT_RECV:
		return NVME_CMD_EFFECTS_CSUPP;
	default:
		return 0;
	}
}

static uint64_t ctrlr_zns_nlb(const struct ctrlr_req *req)
{
	return (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
}

/* ---- NVM command hooks ---- */

uint16_t ctrlr_zns_io_write(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	uint64_t lba;
	uint16_t st;

	if (!req->ns->zns)
		return NVME_SC_SUCCESS;
	st = ctrlr_zns_write_prep(req->ns->zns, slba, nlb, false, &lba);
	if (st) {
		req->error_lba = slba;
		req->error_loc = offsetof(struct nvme_sqe, cdw10);
	}
	return st;
}

void ctrlr_zns_io_write_failed(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	if (req->ns->zns)
		ctrlr_zns_write_undo(req->ns->zns, slba, nlb);
}

uint16_t ctrlr_zns_io_read(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	uint16_t st;

	if (!req->ns->zns)
		return NVME_SC_SUCCESS;
	st = ctrlr_zns_read_check(req->ns->zns, slba, nlb);
	if (st)
		req->error_lba = slba;
	return st;
}

uint16_t ctrlr_zns_io_read_done(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
				const struct iovec *iov, int iovcnt)
{
	if (!req->ns->zns)
		return NVME_SC_SUCCESS;
	return ctrlr_zns_read_fixup(req->ns->zns, slba, nlb, req->ns->block_size, iov, iovcnt);
}

/* ---- Zone Management Send ---- */

/* Set Zone Descriptor Extension (ZSA 10h): ZDES x 64 bytes from the host to one Empty zone. */
static void ctrlr_zns_set_zde_cmd(struct ctrlr_req *req, uint64_t slba, bool all)
{
	struct ctrlr_zns *zns = req->ns->zns;
	uint8_t *data;
	uint16_t st;

	/* Without extensions (ZDES 0) the action is not defined; it names one zone, so Select
	 * All is refused rather than applied to every Empty zone. */
	if (!zns->zdes_bytes || all)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw13));
	data = malloc(zns->zdes_bytes);
	if (!data)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	st = ctrlr_req_copy_from_host(req, data, zns->zdes_bytes);
	if (!st)
		st = ctrlr_zns_set_zde(zns, slba, data);
	free(data);
	if (st == NVME_SC_INVALID_FIELD)
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw10));
	if (st)
		req->error_lba = slba;
	ctrlr_req_complete(req, st);
}

static void ctrlr_zns_mgmt_send(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	bool all = sqe->cdw13 & NVME_ZMS_SELECT_ALL;
	uint8_t zsa = sqe->cdw13 & 0xff;
	uint16_t st;

	/* With Select All the SLBA is ignored (3.4.3); else it must be a zone's first LBA. */
	if (!all && slba >= __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED)) {
		req->error_lba = slba;
		return ctrlr_req_complete_err(req, NVME_SC_LBA_RANGE, offsetof(struct nvme_sqe, cdw10));
	}
	if (zsa == NVME_ZSA_SET_ZDE)
		return ctrlr_zns_set_zde_cmd(req, slba, all);
	st = ctrlr_zns_send(req->ns->zns, slba, zsa, all);
	if (st == NVME_SC_INVALID_FIELD)
		return ctrlr_req_complete_err(req, st,
					      zsa == NVME_ZSA_CLOSE || zsa == NVME_ZSA_FINISH ||
						      zsa == NVME_ZSA_OPEN || zsa == NVME_ZSA_RESET ||
						      zsa == NVME_ZSA_OFFLINE
						  ? offsetof(struct nvme_sqe, cdw10)
						  : offsetof(struct nvme_sqe, cdw13));
	if (st)
		req->error_lba = slba;
	ctrlr_req_complete(req, st);
}

/* ---- Zone Management Receive ---- */

static void ctrlr_zns_mgmt_recv(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	struct ctrlr_zns *zns = req->ns->zns;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	uint64_t len = ((uint64_t)sqe->cdw12 + 1) * 4, max, stride;
	uint8_t zra = sqe->cdw13 & 0xff, filter = (sqe->cdw13 >> 8) & 0xff;
	bool partial = sqe->cdw13 & NVME_ZMR_PARTIAL;
	struct nvme_zone_report_hdr *hdr;
	uint8_t *buf;
	uint16_t st;

	/* Extended reports carry the zone descriptor extensions: none to carry with ZDES 0. */
	if (zra != NVME_ZRA_REPORT && (zra != NVME_ZRA_EXT_REPORT || !zns->zdes_bytes))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw13));
	if (filter > NVME_ZRASF_OFFLINE)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw13) + 1);
	if (slba >= __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED)) {
		req->error_lba = slba;
		return ctrlr_req_complete_err(req, NVME_SC_LBA_RANGE, offsetof(struct nvme_sqe, cdw10));
	}
	if (len > ctrlr_mdts_bytes(req->sq->ctrlr))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12));
	buf = calloc(1, len < sizeof(*hdr) ? sizeof(*hdr) : len);
	if (!buf)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	hdr = (struct nvme_zone_report_hdr *)buf;
	stride = sizeof(struct nvme_zone_desc) + (zra == NVME_ZRA_EXT_REPORT ? zns->zdes_bytes : 0);
	max = len > sizeof(*hdr) ? (len - sizeof(*hdr)) / stride : 0;
	hdr->nr_zones = ctrlr_zns_report(zns, slba, filter, partial, zra == NVME_ZRA_EXT_REPORT,
					 buf + sizeof(*hdr), max);
	st = ctrlr_req_copy_to_host(req, buf, len);
	free(buf);
	ctrlr_req_complete(req, st);
}

/* ---- Zone Append ---- */

static void ctrlr_zns_append_done(struct ctrlr_req *req, int status)
{
	uint64_t lba = req->bio->offset_blocks, nlb = req->bio->num_blocks;
	uint16_t st = ctrlr_bdev_status(status, true);

	if (!st && ctrlr_uncor_clear(req->ns->uncor, lba, nlb))
		st = NVME_SC_INTERNAL;
	if (st) {
		ctrlr_zns_write_undo(req->ns->zns, lba, nlb);
		req->error_lba = lba;
		return ctrlr_req_complete(req, st);
	}
	/* The LBA the data went to: CQE DW0 low, DW1 high (3.4.1.1). */
	req->cdw0 = (uint32_t)lba;
	req->cdw1 = (uint32_t)(lba >> 32);
	CTRLR_SQ_STAT_ADD(req->sq, host_write_cmds, 1);
	CTRLR_SQ_STAT_ADD(req->sq, bytes_written, req->data_len);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

static void ctrlr_zns_append(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	uint64_t zslba = ctrlr_sqe_slba(sqe), nlb = ctrlr_zns_nlb(req), lba;
	struct bdev_io *bio = req->bio;
	uint16_t st;

	st = ctrlr_io_check_range(req, zslba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	/* ZASL is 0: appends are limited by MDTS, which the data mapping checks. Mapped before
	 * the write pointer moves, so a bad data pointer leaves the zone as it was. */
	st = ctrlr_req_map_data(req, nlb * req->ns->block_size, CTRLR_DMA_READ);
	if (st)
		return ctrlr_req_complete(req, st);
	st = ctrlr_zns_write_prep(req->ns->zns, zslba, nlb, true, &lba);
	if (st) {
		req->error_lba = zslba;
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw10));
	}
	bio->type = BDEV_IO_WRITE;
	bio->flags = (sqe->cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
	bio->offset_blocks = lba;
	bio->num_blocks = nlb;
	bio->iov = req->iov;
	bio->iovcnt = req->iovcnt;
	st = ctrlr_req_submit_bio(req, ctrlr_zns_append_done);
	if (st) {
		ctrlr_zns_write_undo(req->ns->zns, lba, nlb);
		ctrlr_req_complete(req, st);
	}
}

static void ctrlr_zns_run(struct ctrlr_req *req);

void ctrlr_zns_exec(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t opc = req->sqe.cdw0.bits.opc;
	uint16_t st;

	/* The ZNS command set is enabled only with CC.CSS 110b (Base 2.0 3.1.3.5). */
	if (ctrlr->cc.bits.css != NVME_CC_CSS_IOCS)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	st = ctrlr_req_get_ns(req);
	if (!st)
		st = ctrlr_resv_check_io(req, opc); /* Reservation Conflict (io_resv.c) */
	if (!st)
		st = ctrlr_san_io_check(req); /* Sanitize In Progress (after the reference) */
	if (st)
		return ctrlr_req_complete(req, st);
	/* Commands of a command set the namespace is not associated with. */
	if (!req->ns->zns)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_OPCODE, 0);
	/* Zone Append and Zone Management Send change zones: like writes they wait behind an
	 * overlapping fused Compare and Write (io_fused.c), which then sees the zone unchanged
	 * between its compare and its write. */
	if ((ctrlr_zns_effects(opc) & NVME_CMD_EFFECTS_LBCC) &&
	    ctrlr_caw_write_begin(req, ctrlr_zns_run))
		return;
	ctrlr_zns_run(req);
}

/* The command once it may run (at once, or resumed by the range locks). */
static void ctrlr_zns_run(struct ctrlr_req *req)
{
	switch (req->sqe.cdw0.bits.opc) {
	case NVME_CMD_ZONE_MGMT_SEND:
		return ctrlr_zns_mgmt_send(req);
	case NVME_CMD_ZONE_MGMT_RECV:
		return ctrlr_zns_mgmt_recv(req);
	default:
		return ctrlr_zns_append(req);
	}
}

/* ---- Identify ---- */

static void ctrlr_zns_identify_ns(const struct ctrlr_ns *ns, struct nvme_id_ns_zns *id)
{
	const struct ctrlr_zns *zns = ns->zns;

	/* ZOC 0 (no variable capacity, no zone excursions), OZCS 0 (reads do not cross zones,
	 * no ZRWA): what Linux drives. MAR/MOR are 0-based; FFFFFFFFh means no limit. */
	id->mar = zns->max_active ? zns->max_active - 1 : NVME_ZNS_NO_LIMIT;
	id->mor = zns->max_open ? zns->max_open - 1 : NVME_ZNS_NO_LIMIT;
	id->lbafe[0].zsze = zns->zsze;
	id->lbafe[0].zdes = (uint8_t)(zns->zdes_bytes / 64);
}

/* Active namespaces of command set csi with an id above `after` (CNS 07h). */
static void ctrlr_zns_ns_list(struct ctrlr *ctrlr, uint32_t after, uint8_t csi, uint32_t *list)
{
	uint32_t n = 0;

	for (uint32_t nsid = after + 1; nsid <= CTRLR_MAX_NAMESPACES && n < 1024; nsid++) {
		struct ctrlr_ns *ns = ctrlr->ns[nsid - 1];

		if (ns && (ns->zns ? NVME_CSI_ZNS : NVME_CSI_NVM) == csi)
			list[n++] = nsid;
	}
}

bool ctrlr_zns_identify(struct ctrlr_req *req, uint8_t cns, uint8_t csi, void *buf,
			uint16_t *st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t nsid = req->sqe.nsid;
	struct ctrlr_ns *ns;

	*st = NVME_SC_SUCCESS;
	switch (cns) {
	case NVME_CNS_IOCS: {
		/* One combination (index 0): NVM and Zoned Namespace (5.17.2.21). CNTID names
		 * this controller: the function has one. */
		uint64_t vec = NVME_IOCS_VECTOR_NVM | NVME_IOCS_VECTOR_ZNS;

		memcpy(buf, &vec, sizeof(vec));
		return true;
	}
	case NVME_CNS_CS_ACTIVE_NS_LIST:
		if (csi != NVME_CSI_NVM && csi != NVME_CSI_ZNS)
			return false;
		if (nsid >= 0xfffffffeu) {
			*st = NVME_SC_INVALID_NS;
			return true;
		}
		ctrlr_zns_ns_list(ctrlr, nsid, csi, buf);
		return true;
	case NVME_CNS_CS_CTRL:
		if (csi != NVME_CSI_ZNS)
			return false;
		((struct nvme_id_ctrl_zns *)buf)->zasl = 0; /* MDTS */
		return true;
	case NVME_CNS_CS_NS:
		if (csi != NVME_CSI_ZNS)
			return false;
		if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES) {
			*st = NVME_SC_INVALID_NS;
			return true;
		}
		ns = ctrlr_ns_get(ctrlr, nsid);
		if (!ns)
			return true; /* inactive: zeroes */
		if (ns->zns)
			ctrlr_zns_identify_ns(ns, buf);
		else
			*st = NVME_SC_INVALID_FIELD; /* not a zoned namespace */
		ctrlr_ns_put(ns);
		return true;
	default:
		return false;
	}
}

/* ---- Changed Zone List and Zone Descriptor Changed notices ---- */

void ctrlr_zns_ns_fini(struct ctrlr_ns *ns)
{
	free(ns->zchanged);
	ns->zchanged = NULL;
}

/* Adds zone zslba to the list of a controller namespace. The list is kept whether or not the
 * host enabled the notices: the log describes the changes, the notice only tells of them. */
static int ctrlr_zns_changed_add(struct ctrlr_ns *ns, uint64_t zslba)
{
	struct ctrlr_zns_changed *c = ns->zchanged;

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		ns->zchanged = c;
	}
	for (uint32_t i = 0; i < c->n; i++)
		if (c->zid[i] == zslba)
			return 0;
	if (c->n < NVME_ZNS_CHANGED_MAX)
		c->zid[c->n++] = zslba;
	else
		c->overflow = true;
	return 0;
}

static bool ctrlr_zns_changed_pending(const struct ctrlr_ns *ns)
{
	return ns->zchanged && (ns->zchanged->n || ns->zchanged->overflow);
}

int ctrlr_zone_set_state(struct ctrlr *ctrlr, uint32_t nsid, uint64_t zslba, bool offline)
{
	struct ctrlr_ns *ns;
	bool changed;
	int rc;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	if (!ns->zns)
		return -ENOTSUP;
	rc = ctrlr_zns_fail_zone(ns->zns, zslba, offline, &changed);
	if (rc || !changed)
		return rc;
	LOG_INFO(CTRLR_LOG, "%s ns %u: zone at LBA %llu is now %s", ctrlr->serial, nsid,
		   (unsigned long long)zslba, offline ? "offline" : "read only");
	/* The zones belong to the namespace: every controller attached to it lists the change
	 * (those sharing a namespace run their admin side on this thread). */
	for (struct ctrlr_ns *cns = ns->shared->nss; cns; cns = cns->share_next) {
		/* Without memory for the list the notice still goes out: the host finds the zone
		 * with Report Zones; the caller hears of it. */
		if (ctrlr_zns_changed_add(cns, zslba)) {
			LOG_ERR(CTRLR_LOG, "%s ns %u: out of memory for the Changed Zone List",
				cns->ctrlr->serial, cns->nsid);
			rc = -ENOMEM;
		}
		ctrlr_aer_report(cns->ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ZONE_CHANGED,
				 NVME_LOG_ZNS_CHANGED_ZONES);
	}
	return rc;
}

int ctrlr_zone_get(struct ctrlr *ctrlr, uint32_t nsid, uint64_t zslba, uint8_t *state,
		   uint64_t *wp)
{
	struct ctrlr_ns *ns;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	if (!ns->zns)
		return -ENOTSUP;
	return ctrlr_zns_zone_get(ns->zns, zslba, state, wp);
}

uint16_t ctrlr_zns_log_changed(struct ctrlr_req *req, uint8_t csi, uint8_t *buf, size_t *size,
			       uint32_t *loc)
{
	struct nvme_zns_changed_zone_log *log = (struct nvme_zns_changed_zone_log *)buf;
	uint32_t nsid = req->sqe.nsid;
	struct ctrlr_ns *ns;
	uint16_t st = NVME_SC_SUCCESS;

	/* An I/O Command Set specific page: BFh means nothing to the NVM command set. */
	if (csi != NVME_CSI_ZNS) {
		*loc = offsetof(struct nvme_sqe, cdw10);
		return NVME_SC_INVALID_LOG_PAGE;
	}
	/* Per namespace: a zoned namespace's id, not 0 or FFFFFFFFh. */
	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES) {
		*loc = offsetof(struct nvme_sqe, nsid);
		return NVME_SC_INVALID_NS;
	}
	ns = ctrlr_ns_get(req->sq->ctrlr, nsid);
	if (!ns) {
		*loc = offsetof(struct nvme_sqe, nsid);
		return NVME_SC_INVALID_NS;
	}
	if (!ns->zns) {
		*loc = offsetof(struct nvme_sqe, nsid);
		st = NVME_SC_INVALID_FIELD;
	} else if (ns->zchanged && ns->zchanged->overflow) {
		log->nrzid = NVME_ZNS_CHANGED_OVERFLOW;
	} else if (ns->zchanged) {
		log->nrzid = (uint16_t)ns->zchanged->n;
		memcpy(log->zid, ns->zchanged->zid, ns->zchanged->n * sizeof(log->zid[0]));
	}
	ctrlr_ns_put(ns);
	*size = sizeof(*log);
	return st;
}

void ctrlr_zns_log_changed_read(struct ctrlr *ctrlr, uint32_t nsid)
{
	struct ctrlr_ns *ns = ctrlr_ns_get(ctrlr, nsid);

	if (ns) {
		if (ns->zchanged) {
			ns->zchanged->n = 0;
			ns->zchanged->overflow = false;
		}
		ctrlr_ns_put(ns);
	}
	/* A notice queued while the type was masked told of changes this read returned. */
	ctrlr_aer_drop(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ZONE_CHANGED);
	ctrlr_aer_log_read(ctrlr, NVME_LOG_ZNS_CHANGED_ZONES);
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		ns = ctrlr->ns[i];
		if (ns && ctrlr_zns_changed_pending(ns)) {
			ctrlr_aer_report(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ZONE_CHANGED,
					 NVME_LOG_ZNS_CHANGED_ZONES);
			return;
		}
	}
}
