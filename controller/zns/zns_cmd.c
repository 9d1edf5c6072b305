/* controller/zns/zns_cmd.c - the Zoned Namespace Command Set as a module of the controller
 * (CTRLR_MOD_ZNS, NVMe ZNS 1.1): Zone Management Send (3.4.3, with Set Zone Descriptor
 * Extension), Zone Management Receive (3.4.2, with Extended Report Zones), Zone Append (3.4.1),
 * the Changed Zone List log and the Zone Descriptor Changed notice, the zone rules it gives the
 * NVM commands' paths of its namespaces (struct ctrlr_nvm_zoned_ops), and Identify CNS 05h/06h
 * for CSI 2h, 07h per CSI and 1Ch (Base 2.0 5.17.2). A namespace is zoned when its bdev has a
 * zone geometry; its zones belong to the shared namespace. The zone state machine itself is
 * zones.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/ctrlr_iostat.h"
#include "controller/nvm/nvm.h"
#include "controller/zns/zns.h"

static uint64_t ctrlr_zns_nlb(const struct ctrlr_req *req)
{
	return (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
}

/* ---- NVM command hooks ---- */

static uint16_t ctrlr_zns_io_write(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	uint64_t lba;
	uint32_t gen;
	uint16_t st;

	if (!ctrlr_zns_of(req->ns))
		return NVME_SC_SUCCESS;
	st = ctrlr_zns_write_prep(ctrlr_zns_of(req->ns), slba, nlb, false, &lba, &gen);
	if (st) {
		req->error_lba = slba;
		req->error_loc = offsetof(struct nvme_sqe, cdw10);
		return st;
	}
	ctrlr_zns_hold(req, lba, nlb, gen);
	return NVME_SC_SUCCESS;
}

/* Flush: the data, then the zone state (zone_sync.c); without a state file, a plain flush. */
static bool ctrlr_zns_io_flush(struct ctrlr_req *req,
			       void (*cont)(struct ctrlr_req *req, uint16_t st))
{
	struct ctrlr_zns *zns = ctrlr_zns_of(req->ns);

	if (!zns || !zns->file)
		return false;
	ctrlr_zns_sync(req, cont);
	return true;
}

static uint16_t ctrlr_zns_io_read(struct ctrlr_req *req, uint64_t slba, uint64_t nlb)
{
	uint16_t st;

	if (!ctrlr_zns_of(req->ns))
		return NVME_SC_SUCCESS;
	st = ctrlr_zns_read_check(ctrlr_zns_of(req->ns), slba, nlb);
	if (st)
		req->error_lba = slba;
	return st;
}

static uint16_t ctrlr_zns_io_read_done(struct ctrlr_ns *ns, uint64_t slba, uint64_t nlb,
				       const struct iovec *iov, int iovcnt)
{
	if (!ctrlr_zns_of(ns))
		return NVME_SC_SUCCESS;
	return ctrlr_zns_read_fixup(ctrlr_zns_of(ns), slba, nlb, ns->block_size, iov, iovcnt);
}

/* What the NVM commands do differently on a zoned namespace (nvm.h). */
static const struct ctrlr_nvm_zoned_ops ctrlr_zns_nvm_ops = {
    .write = ctrlr_zns_io_write,
    .flush = ctrlr_zns_io_flush,
    .read = ctrlr_zns_io_read,
    .read_done = ctrlr_zns_io_read_done,
};

/* ---- Zone Management Send ---- */

/* Set Zone Descriptor Extension (ZSA 10h): ZDES x 64 bytes from the host to one Empty zone. */
static void ctrlr_zns_sync_done(struct ctrlr_req *req, uint16_t st)
{
	ctrlr_req_complete(req, st);
}

/* A zone management change took effect (its writes released): it completes once durable. */
static void ctrlr_zns_changed_complete(struct ctrlr_req *req, struct ctrlr_req *ready)
{
	ctrlr_zns_release(ready);
	if (ctrlr_zns_of(req->ns)->file)
		return ctrlr_zns_sync(req, ctrlr_zns_sync_done);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

static void ctrlr_zns_set_zde_cmd(struct ctrlr_req *req, uint64_t slba, bool all)
{
	struct ctrlr_zns *zns = ctrlr_zns_of(req->ns);
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
	if (st) {
		req->error_lba = slba;
		return ctrlr_req_complete(req, st);
	}
	ctrlr_zns_changed_complete(req, NULL);
}

static void ctrlr_zns_mgmt_send(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	bool all = sqe->cdw13 & NVME_ZMS_SELECT_ALL;
	uint8_t zsa = sqe->cdw13 & 0xff;
	struct ctrlr_req *ready;
	uint16_t st;

	/* With Select All the SLBA is ignored (3.4.3); else it must be a zone's first LBA. */
	if (!all && slba >= __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED)) {
		req->error_lba = slba;
		return ctrlr_req_complete_err(req, NVME_SC_LBA_RANGE, offsetof(struct nvme_sqe, cdw10));
	}
	if (zsa == NVME_ZSA_SET_ZDE)
		return ctrlr_zns_set_zde_cmd(req, slba, all);
	st = ctrlr_zns_send(ctrlr_zns_of(req->ns), slba, zsa, all, &ready);
	/* Select All may fail half way: what changed is released and recorded either way. */
	ctrlr_zns_release(ready);
	if (st == NVME_SC_INVALID_FIELD)
		return ctrlr_req_complete_err(req, st,
					      zsa == NVME_ZSA_CLOSE || zsa == NVME_ZSA_FINISH ||
						      zsa == NVME_ZSA_OPEN || zsa == NVME_ZSA_RESET ||
						      zsa == NVME_ZSA_OFFLINE
						  ? offsetof(struct nvme_sqe, cdw10)
						  : offsetof(struct nvme_sqe, cdw13));
	if (st) {
		req->error_lba = slba;
		return ctrlr_req_complete(req, st);
	}
	ctrlr_zns_changed_complete(req, NULL);
}

/* ---- Zone Management Receive ---- */

static void ctrlr_zns_mgmt_recv(struct ctrlr_req *req)
{
	const struct nvme_sqe *sqe = &req->sqe;
	struct ctrlr_zns *zns = ctrlr_zns_of(req->ns);
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

	if (!st && ctrlr_uncor_clear(ctrlr_nvm_ns(req->ns)->uncor, lba, nlb))
		st = NVME_SC_INTERNAL;
	if (st) {
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
	uint32_t gen;
	uint16_t st;

	st = ctrlr_io_check_range(req, zslba, nlb);
	if (st)
		return ctrlr_req_complete(req, st);
	/* ZASL is 0: appends are limited by MDTS, which the data mapping checks. Mapped before
	 * the write pointer moves, so a bad data pointer leaves the zone as it was. */
	st = ctrlr_req_map_data(req, nlb * req->ns->block_size, CTRLR_DMA_READ);
	if (st)
		return ctrlr_req_complete(req, st);
	st = ctrlr_zns_write_prep(ctrlr_zns_of(req->ns), zslba, nlb, true, &lba, &gen);
	if (st) {
		req->error_lba = zslba;
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw10));
	}
	/* From here on the completion, whatever its status, ends the reservation. */
	ctrlr_zns_hold(req, lba, nlb, gen);
	bio->type = BDEV_IO_WRITE;
	bio->flags = (sqe->cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
	bio->offset_blocks = lba;
	bio->num_blocks = nlb;
	bio->iov = req->iov;
	bio->iovcnt = req->iovcnt;
	st = ctrlr_req_submit_bio(req, ctrlr_zns_append_done);
	if (st)
		ctrlr_req_complete(req, st);
}

/* ---- Identify ---- */

static void ctrlr_zns_identify_ns(const struct ctrlr_ns *ns, struct nvme_id_ns_zns *id)
{
	const struct ctrlr_zns *zns = ctrlr_zns_of(ns);

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

		if (ns && ns->csi == csi)
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
		if (ctrlr_zns_of(ns))
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


/* Adds zone zslba to the list of a controller namespace. The list is kept whether or not the
 * host enabled the notices: the log describes the changes, the notice only tells of them. */
static int ctrlr_zns_changed_add(struct ctrlr_ns *ns, uint64_t zslba)
{
	struct ctrlr_zns_changed *c = ctrlr_zns_ns(ns)->zchanged;

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		ctrlr_zns_ns(ns)->zchanged = c;
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
	const struct ctrlr_zns_changed *c = ctrlr_zns_ns(ns)->zchanged;

	return c && (c->n || c->overflow);
}

int ctrlr_zone_set_state(struct ctrlr *ctrlr, uint32_t nsid, uint64_t zslba, bool offline)
{
	struct ctrlr_req *ready;
	struct ctrlr_ns *ns;
	bool changed;
	int rc;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	if (!ctrlr_zns_of(ns))
		return -ENOTSUP;
	rc = ctrlr_zns_fail_zone(ctrlr_zns_of(ns), zslba, offline, &changed, &ready);
	ctrlr_zns_release(ready);
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
	if (!ctrlr_zns_of(ns))
		return -ENOTSUP;
	return ctrlr_zns_zone_get(ctrlr_zns_of(ns), zslba, state, wp);
}

uint16_t ctrlr_zns_log_changed(struct ctrlr_req *req, uint8_t csi, uint8_t *buf, size_t *size,
			       uint32_t *loc)
{
	struct nvme_zns_changed_zone_log *log = (struct nvme_zns_changed_zone_log *)buf;
	uint32_t nsid = req->sqe.nsid;
	struct ctrlr_zns_changed *c;
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
	c = ctrlr_zns_ns(ns)->zchanged;
	if (!ctrlr_zns_of(ns)) {
		*loc = offsetof(struct nvme_sqe, nsid);
		st = NVME_SC_INVALID_FIELD;
	} else if (c && c->overflow) {
		log->nrzid = NVME_ZNS_CHANGED_OVERFLOW;
	} else if (c) {
		log->nrzid = (uint16_t)c->n;
		memcpy(log->zid, c->zid, c->n * sizeof(log->zid[0]));
	}
	ctrlr_ns_put(ns);
	*size = sizeof(*log);
	return st;
}

void ctrlr_zns_log_changed_read(struct ctrlr *ctrlr, uint32_t nsid)
{
	struct ctrlr_ns *ns = ctrlr_ns_get(ctrlr, nsid);

	if (ns) {
		struct ctrlr_zns_changed *c = ctrlr_zns_ns(ns)->zchanged;

		if (c) {
			c->n = 0;
			c->overflow = false;
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

/* ---- the module ---- */

/* A namespace on a zoned bdev is zoned (CSI 2h): one zone table per bdev, shared by every
 * controller attached to it (all zones Empty when the first one attaches, or as the zoned bdev's
 * state file kept them); it lives as long as the shared namespace. */
static int ctrlr_zns_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts)
{
	struct bdev_zone_geom zgeom;

	if (!bdev_get_zone_geom(ns->bdev, &zgeom))
		return 0;
	if (!ns->shared->mod[CTRLR_MOD_ZNS]) {
		struct ctrlr_zns *zns;
		int rc = ctrlr_zns_create(&zgeom, &zns);

		if (rc)
			return rc;
		ns->shared->mod[CTRLR_MOD_ZNS] = zns;
	}
	ctrlr_zns_ns(ns)->zns = ns->shared->mod[CTRLR_MOD_ZNS];
	ns->csi = NVME_CSI_ZNS;
	ctrlr_nvm_ns(ns)->zoned = &ctrlr_zns_nvm_ops;
	return 0;
}

static void ctrlr_zns_ns_free(struct ctrlr_ns *ns)
{
	struct ctrlr_zns_ns *z = ctrlr_zns_ns(ns);

	if (z)
		free(z->zchanged);
}

/* A namespace's data went with its zones (Format NVM, Sanitize): all Empty (Read Only and
 * Offline zones stay). */
static void ctrlr_zns_ns_erased(struct ctrlr_ns *ns)
{
	struct ctrlr_req *ready;

	if (!ctrlr_zns_of(ns))
		return;
	ctrlr_zns_send(ctrlr_zns_of(ns), 0, NVME_ZSA_RESET, true, &ready);
	ctrlr_zns_release(ready);
}

/* The zone table goes with the shared namespace (its state file holds it already). */
static void ctrlr_zns_shared_fini(struct ctrlr_ns_shared *s)
{
	ctrlr_zns_destroy(s->mod[CTRLR_MOD_ZNS]);
	s->mod[CTRLR_MOD_ZNS] = NULL;
}

/* The commands of the zoned command set alone (the NVM ones apply to zoned namespaces too):
 * run by the core only on zoned namespaces with CC.CSS 110b, after the reservation (ZNS 1.1
 * 5.2: Receive reads, Send and Append write) and gate checks; Send and Append change blocks, so
 * they wait behind an overlapping fused Compare and Write as writes do. */
static const struct ctrlr_cmd ctrlr_zns_io_cmds[256] = {
    [NVME_CMD_ZONE_MGMT_SEND] = {.exec = ctrlr_zns_mgmt_send,
				 .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC,
				 .csi = NVME_CSI_ZNS,
				 .access = CTRLR_ACCESS_WRITE},
    [NVME_CMD_ZONE_MGMT_RECV] = {.exec = ctrlr_zns_mgmt_recv,
				 .effects = NVME_CMD_EFFECTS_CSUPP,
				 .csi = NVME_CSI_ZNS,
				 .access = CTRLR_ACCESS_READ},
    [NVME_CMD_ZONE_APPEND] = {.exec = ctrlr_zns_append,
			      .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC,
			      .csi = NVME_CSI_ZNS,
			      .access = CTRLR_ACCESS_WRITE,
			      .stat = CTRLR_IO_WRITE},
};

const struct ctrlr_module ctrlr_zns_module = {
    .name = "zns",
    .ns_size = sizeof(struct ctrlr_zns_ns),
    .io_cmds = ctrlr_zns_io_cmds,
    .ns_attach = ctrlr_zns_ns_attach,
    .ns_free = ctrlr_zns_ns_free,
    .ns_erased = ctrlr_zns_ns_erased,
    .shared_fini = ctrlr_zns_shared_fini,
};
