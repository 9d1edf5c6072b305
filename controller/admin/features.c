/* controller/admin/features.c - Get/Set Features (NVMe Base 2.0 section 5.27): arbitration, power
 * management, temperature threshold, error recovery, volatile write cache, number of queues,
 * interrupt coalescing and vector configuration, write atomicity, async event configuration,
 * APST, timestamp, Host Behavior Support, Endurance Group Event Configuration, Host Identifier,
 * Reservation Notification Mask and Persistence; SEL current/default/saved/supported. Admin thread. */
#include <errno.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/admin/admin.h"
#include "controller/device/device.h"
#include "controller/nvm/nvm.h"
#include "controller/zns/zns.h"

#define CTRLR_TEMP_SENSORS 1 /* temperature sensor 1 = composite */
#define CTRLR_TEMP_UNDER_DEFAULT 0
#define CTRLR_TEMP_OVER_DEFAULT 343 /* WCTEMP */

/* Supported capabilities (SEL 011b) per feature id; 0 = unsupported. Saveable (SV) only with a
 * controller state file, where the saved values live (ctrlr_feat_caps_of). */
static const uint8_t ctrlr_feat_caps[256] = {
    [NVME_FEAT_ARBITRATION] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_POWER_MGMT] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_TEMP_THRESH] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_ERR_RECOVERY] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_NS,
    [NVME_FEAT_VOLATILE_WC] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_NUM_QUEUES] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_IRQ_COALESCE] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_IRQ_CONFIG] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_WRITE_ATOMIC] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_ASYNC_EVENT] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_SAVE,
    [NVME_FEAT_AUTO_PST] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_TIMESTAMP] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_KATO] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_HOST_BEHAVIOR] = NVME_FEAT_CAP_CHANGE,
    /* Reservations (5.27.1.25-27). */
    [NVME_FEAT_HOST_ID] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_RESV_MASK] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_NS,
    [NVME_FEAT_RESV_PERSIST] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_NS,
    [NVME_FEAT_IOCS_PROFILE] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_ENDGRP_EVENT] = NVME_FEAT_CAP_CHANGE,
    /* Flexible Data Placement (fdp.c; Invalid Field without an FDP configuration). */
    [NVME_FEAT_FDP] = NVME_FEAT_CAP_CHANGE,
    [NVME_FEAT_FDP_EVENTS] = NVME_FEAT_CAP_CHANGE | NVME_FEAT_CAP_NS,
};

/* Feature Identifiers Supported and Effects (log 12h) from the table above: a feature this
 * controller takes, its scope (a namespace's when it is namespace specific; the endurance
 * group's for its event configuration and FDP; the controller's otherwise). No Set Features
 * here changes user data, namespace or controller capabilities (UDCC, NCC, NIC, CCC clear). */
size_t ctrlr_log_fid_effects(struct ctrlr *ctrlr, uint8_t *buf)
{
	uint32_t *fis = (uint32_t *)buf;

	for (unsigned int fid = 0; fid < 256; fid++) {
		uint8_t caps = ctrlr_feat_caps[fid];

		if (!caps || ((fid == NVME_FEAT_FDP || fid == NVME_FEAT_FDP_EVENTS) &&
			      !ctrlr_fdp_supported(ctrlr)))
			continue;
		fis[fid] = NVME_FID_EFFECTS_FSUPP;
		if (caps & NVME_FEAT_CAP_NS)
			fis[fid] |= NVME_FID_EFFECTS_SCOPE_NS;
		else if (fid == NVME_FEAT_ENDGRP_EVENT || fid == NVME_FEAT_FDP)
			fis[fid] |= NVME_FID_EFFECTS_SCOPE_ENDGRP;
		else
			fis[fid] |= NVME_FID_EFFECTS_SCOPE_CTRL;
	}
	return 256 * sizeof(uint32_t);
}

/* ---- Host Behavior Support (FID 16h; NVMe Base 2.1, Features) ---- */

static uint16_t ctrlr_feat_get_hbs(struct ctrlr_req *req, bool dflt)
{
	const struct ctrlr_features *f = &req->sq->ctrlr->feat;
	uint8_t data[NVME_HBS_DATA_SIZE] = {0};
	uint16_t cdfe = dflt ? 0 : CTRLR_LOAD(f->hbs_cdfe);

	if (!dflt) {
		data[NVME_HBS_ACRE] = f->hbs_acre;
		data[NVME_HBS_LBAFEE] = f->hbs_lbafee;
	}
	memcpy(data + NVME_HBS_CDFE, &cdfe, sizeof(cdfe));
	return ctrlr_req_copy_to_host(req, data, sizeof(data));
}

/* ACRE and LBAFEE are 0 or 1 (the host's statement; commands never carry a retry delay, and
 * the extended formats are reported either way); ETDAS needs Telemetry Data Area 4, which LPA
 * does not offer; CDFE may enable only the Copy formats OCFS offers beyond 0h/1h (2h, 3h), and a
 * Copy with format 2h/3h is refused until enabled (io_copy.c). Reserved bytes (and byte 3,
 * HDISNS in 2.1: no dispersed namespaces here) are ignored. */
static uint16_t ctrlr_feat_set_hbs(struct ctrlr_req *req)
{
	struct ctrlr_features *f = &req->sq->ctrlr->feat;
	uint8_t data[NVME_HBS_DATA_SIZE];
	uint16_t cdfe, st;

	st = ctrlr_req_copy_from_host(req, data, sizeof(data));
	if (st)
		return st;
	memcpy(&cdfe, data + NVME_HBS_CDFE, sizeof(cdfe));
	if (data[NVME_HBS_ACRE] > 1 || data[NVME_HBS_ETDAS] || data[NVME_HBS_LBAFEE] > 1 ||
	    (cdfe & ~(NVME_OCFS_FORMAT2 | NVME_OCFS_FORMAT3)))
		return NVME_SC_INVALID_FIELD;
	f->hbs_acre = data[NVME_HBS_ACRE];
	f->hbs_lbafee = data[NVME_HBS_LBAFEE];
	CTRLR_STORE(f->hbs_cdfe, cdfe);
	return NVME_SC_SUCCESS;
}

/* The capabilities of fid on this controller: saveable only where saved values are kept. */
static uint8_t ctrlr_feat_caps_of(const struct ctrlr *ctrlr, uint8_t fid)
{
	uint8_t caps = ctrlr_feat_caps[fid];

	return ctrlr->cfg.state_file ? caps : (uint8_t)(caps & ~NVME_FEAT_CAP_SAVE);
}

/* ctrlr_feat_set's answer for a feature that completes the command itself, later. */
#define CTRLR_FEAT_ASYNC 0xffffu

static void ctrlr_feat_set_done(struct ctrlr_req *req, uint16_t st);

static void ctrlr_feat_set_finish(struct ctrlr_req *req, uint16_t st);

/* Feature 1Dh's or 1Eh's new state is durable (st 0), or it could not be written: then FDP's
 * enable state is undone (1Eh's stays current, as a Set without SV would have left it). */
static void ctrlr_feat_fdp_saved(struct ctrlr_req *req, uint16_t st)
{
	if (st && (req->sqe.cdw10 & 0xff) == NVME_FEAT_FDP)
		ctrlr_fdp_set_enabled(req->sq->ctrlr, !ctrlr_fdp_enabled(req->sq->ctrlr));
	ctrlr_feat_set_finish(req, st);
}

/* ---- Volatile Write Cache off: every namespace flushed ---- */

static void ctrlr_feat_vwc_flush_next(struct ctrlr_req *req);

static void ctrlr_feat_vwc_ns_done(struct ctrlr_req *req, uint16_t st)
{
	ctrlr_ns_put(req->ns);
	req->ns = NULL;
	if (st)
		return ctrlr_feat_set_finish(req, st);
	ctrlr_feat_vwc_flush_next(req);
}

static void ctrlr_feat_vwc_flushed(struct ctrlr_req *req, int status)
{
	ctrlr_feat_vwc_ns_done(req, ctrlr_bdev_status(status, true));
}

static void ctrlr_feat_vwc_flush_next(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint16_t st;

	while (req->step.index < CTRLR_MAX_NAMESPACES) {
		struct ctrlr_ns *ns = ctrlr_ns_get(ctrlr, ++req->step.index);

		if (!ns)
			continue;
		req->ns = ns;
		/* A zoned namespace's zone state becomes durable with its data. */
		if (ctrlr_zns_of(ns) && ctrlr_zns_of(ns)->file)
			return ctrlr_zns_sync(req, ctrlr_feat_vwc_ns_done);
		memset(req->bio, 0, sizeof(*req->bio));
		req->bio->type = BDEV_IO_FLUSH;
		st = ctrlr_req_submit_bio(req, ctrlr_feat_vwc_flushed);
		if (st) {
			ctrlr_ns_put(ns);
			req->ns = NULL;
			return ctrlr_feat_set_finish(req, st);
		}
		return;
	}
	ctrlr_feat_set_finish(req, NVME_SC_SUCCESS);
}

/* ---- reservation features ---- */

/* Host Identifier (5.27.1.25): 8 bytes, or 16 with EXHID; the format asked for must be the one
 * in use (Host Identifier Inconsistent Format otherwise). */
static uint16_t ctrlr_feat_get_hostid(struct ctrlr_req *req, bool dflt)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	bool ext = req->sqe.cdw11 & NVME_HOST_ID_EXHID;
	static const uint8_t zero[16];

	if (!dflt && ext != ctrlr->hostid_ext && memcmp(ctrlr->hostid, zero, 16))
		return NVME_SC_HOSTID_INCONSISTENT;
	req->cdw0 = ext;
	return ctrlr_req_copy_to_host(req, dflt ? zero : ctrlr->hostid, ext ? 16 : 8);
}

static uint16_t ctrlr_feat_set_hostid(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	bool ext = req->sqe.cdw11 & NVME_HOST_ID_EXHID;
	uint8_t id[16] = {0};
	uint16_t st;

	/* The identity of a host with registrations cannot change under them. */
	if (ctrlr_resv_ctrlr_registered(ctrlr))
		return NVME_SC_CMD_SEQ_ERROR;
	st = ctrlr_req_copy_from_host(req, id, ext ? 16 : 8);
	if (st)
		return st;
	memcpy(ctrlr->hostid, id, 16);
	ctrlr->hostid_ext = ext;
	ctrlr_resv_ctrlr_hostid_changed(ctrlr);
	return NVME_SC_SUCCESS;
}

/* Reservation Notification Mask (82h) and Reservation Persistence (83h): per namespace;
 * NSID FFFFFFFFh sets every namespace (Set only). */
static uint16_t ctrlr_feat_resv_ns(struct ctrlr_req *req, uint8_t fid, bool set, bool dflt,
				   uint32_t *cdw0)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t v = req->sqe.cdw11;
	struct ctrlr_ns *ns;
	uint16_t st = NVME_SC_SUCCESS;

	if (set && fid == NVME_FEAT_RESV_MASK && (v & ~NVME_RESV_MASK_ALL))
		return NVME_SC_INVALID_FIELD;
	if (set && req->sqe.nsid == NVME_NSID_ALL) {
		if (fid == NVME_FEAT_RESV_PERSIST)
			return NVME_SC_INVALID_NS; /* persistence is per namespace */
		for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
			if (ctrlr->ns[i])
				ctrlr_nvm_ns(ctrlr->ns[i])->resv_mask = v & NVME_RESV_MASK_ALL;
		return NVME_SC_SUCCESS;
	}
	ns = ctrlr_ns_get(ctrlr, req->sqe.nsid);
	if (!ns)
		return NVME_SC_INVALID_NS;
	if (fid == NVME_FEAT_RESV_MASK) {
		struct ctrlr_nvm_ns *n = ctrlr_nvm_ns(ns);

		if (set)
			n->resv_mask = v & NVME_RESV_MASK_ALL;
		*cdw0 = dflt ? 0 : n->resv_mask;
	} else if (set) {
		/* Written to the namespace's PTPL file before it takes effect: the command
		 * completes later, holding the namespace (req->ns, put by the completion). */
		req->ns = ns;
		ctrlr_resv_set_ptpl(req, v & NVME_RESV_PTPL, ctrlr_feat_set_finish);
		return CTRLR_FEAT_ASYNC;
	} else {
		*cdw0 = dflt ? 0 : ctrlr_resv_ptpl(ns);
	}
	ctrlr_ns_put(ns);
	return st;
}

static uint32_t ctrlr_num_queues_default(const struct ctrlr *ctrlr)
{
	uint32_t n = ctrlr->res_io_queues - 1u;

	return n | n << 16;
}

static void ctrlr_features_defaults(struct ctrlr *ctrlr)
{
	struct ctrlr_features *f = &ctrlr->feat;

	f->arbitration = 0;
	f->power_mgmt = 0;
	for (int i = 0; i < 9; i++) {
		f->temp_over[i] = i == 0 ? CTRLR_TEMP_OVER_DEFAULT : 0xffff;
		f->temp_under[i] = CTRLR_TEMP_UNDER_DEFAULT;
	}
	f->vwc = 1;
	f->num_queues = ctrlr_num_queues_default(ctrlr);
	f->num_queues_set = false;
	CTRLR_STORE(f->irq_coalesce, 0);
	f->write_atomic = 0;
	f->err_recovery_all = 0;
	f->async_event = 0;
	f->endgrp_event = 0;
	f->apst = 0;
	memset(f->apst_table, 0, sizeof(f->apst_table));
	f->timestamp_ms = 0;
	f->timestamp_set_us = 0;
	f->hbs_acre = 0;
	f->hbs_lbafee = 0;
	CTRLR_STORE(f->hbs_cdfe, 0);
	for (uint32_t v = 0; v < ctrlr->cfg.num_vectors; v++)
		CTRLR_STORE(f->irq_cd[v], 0);
}

/* Sets feature fid's current value from a saved one (sub: which part of it). false when the
 * pair is not one this controller saves, or out of range (a state file from elsewhere). */
static bool ctrlr_feat_apply_saved(struct ctrlr *ctrlr, uint8_t fid, uint8_t sub, uint32_t v)
{
	struct ctrlr_features *f = &ctrlr->feat;
	uint32_t tmpsel = sub & 0xf, thsel = sub >> 4;

	if (!(ctrlr_feat_caps[fid] & NVME_FEAT_CAP_SAVE) ||
	    (fid != NVME_FEAT_TEMP_THRESH && sub))
		return false;
	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		f->arbitration = v;
		return true;
	case NVME_FEAT_POWER_MGMT:
		if (v & ~0xe0u) /* power state 0 only; the workload hint is kept */
			return false;
		f->power_mgmt = v;
		return true;
	case NVME_FEAT_TEMP_THRESH:
		if (tmpsel > CTRLR_TEMP_SENSORS || thsel > 1 || v > 0xffff)
			return false;
		if (thsel)
			f->temp_under[tmpsel] = (uint16_t)v;
		else
			f->temp_over[tmpsel] = (uint16_t)v;
		return true;
	case NVME_FEAT_VOLATILE_WC:
		if (v > 1)
			return false;
		f->vwc = v;
		return true;
	case NVME_FEAT_IRQ_COALESCE:
		if (v > 0xffff)
			return false;
		CTRLR_STORE(f->irq_coalesce, v);
		return true;
	case NVME_FEAT_WRITE_ATOMIC:
		if (v > 1)
			return false;
		f->write_atomic = v;
		return true;
	case NVME_FEAT_ASYNC_EVENT:
		if (v & ~(NVME_AEC_SMART_MASK | NVME_AEC_NS_ATTR | NVME_AEC_FW_ACT |
			  NVME_AEC_TELEMETRY | NVME_AEC_ZDCN))
			return false;
		f->async_event = v;
		return true;
	default:
		return false;
	}
}

/* The defaults, then what the host saved (section 5.27.1: saved values are the current ones
 * after a power cycle or a Controller Level Reset). 0, or -EINVAL for a saved value this
 * controller does not take (logged). */
static int ctrlr_features_load(struct ctrlr *ctrlr)
{
	static const uint8_t fids[] = {NVME_FEAT_ARBITRATION, NVME_FEAT_POWER_MGMT,
				       NVME_FEAT_VOLATILE_WC, NVME_FEAT_IRQ_COALESCE,
				       NVME_FEAT_WRITE_ATOMIC, NVME_FEAT_ASYNC_EVENT};
	uint32_t v;
	int rc = 0;

	ctrlr_features_defaults(ctrlr);
	for (unsigned int i = 0; i < sizeof(fids); i++)
		if (ctrlr_saved_feat_get(ctrlr, fids[i], 0, &v) &&
		    !ctrlr_feat_apply_saved(ctrlr, fids[i], 0, v))
			rc = -EINVAL;
	for (uint8_t t = 0; t <= CTRLR_TEMP_SENSORS; t++)
		for (uint8_t th = 0; th < 2; th++)
			if (ctrlr_saved_feat_get(ctrlr, NVME_FEAT_TEMP_THRESH, t | th << 4, &v) &&
			    !ctrlr_feat_apply_saved(ctrlr, NVME_FEAT_TEMP_THRESH, t | th << 4, v))
				rc = -EINVAL;
	if (rc)
		LOG_ERR(CTRLR_LOG, "%s: controller state file %s: a saved feature is out of range",
			ctrlr->serial, ctrlr->cfg.state_file);
	return rc;
}

int ctrlr_features_init(struct ctrlr *ctrlr)
{
	return ctrlr_features_load(ctrlr);
}

static void ctrlr_apply_write_cache(struct ctrlr *ctrlr, bool enable)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		/* malloc/null bdevs have no volatile cache: enabling returns -ENOTSUP, which only
		 * means writes are already durable. */
		if (ctrlr->ns[i])
			bdev_set_write_cache(ctrlr->ns[i]->bdev, enable);
	}
}

void ctrlr_features_reset(struct ctrlr *ctrlr)
{
	uint32_t vwc_was = ctrlr->feat.vwc;

	/* Checked at creation: nothing can fail here. */
	ctrlr_features_load(ctrlr);
	ctrlr_keep_alive_reset(ctrlr);
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			ctrlr->ns[i]->err_recovery = 0;
	if (ctrlr->feat.vwc != vwc_was)
		ctrlr_apply_write_cache(ctrlr, ctrlr->feat.vwc);
}

int ctrlr_features_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts)
{
	/* A namespace attached while the cache is off (the host's, or a saved value) is off. */
	if (!ns->ctrlr->feat.vwc)
		bdev_set_write_cache(ns->bdev, false);
	return 0;
}

static uint64_t ctrlr_timestamp_now(const struct ctrlr *ctrlr, uint8_t *attr)
{
	const struct ctrlr_features *f = &ctrlr->feat;
	uint64_t now = evloop_now_us();

	if (!f->timestamp_set_us) {
		*attr = 0; /* origin: reset; counts from controller creation */
		return (now - ctrlr->created_us) / 1000;
	}
	*attr = 1u << 1; /* origin: set by the host */
	return f->timestamp_ms + (now - f->timestamp_set_us) / 1000;
}

/* Current (or default when `dflt`) value of feature `fid` into *cdw0; data features copy out.
 * Returns an NVMe status. */
static uint16_t ctrlr_feat_get(struct ctrlr_req *req, uint8_t fid, bool dflt, uint32_t *cdw0)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_features *f = &ctrlr->feat;
	uint32_t cdw11 = req->sqe.cdw11;
	struct ctrlr_ns *ns;

	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		*cdw0 = dflt ? 0 : f->arbitration;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_POWER_MGMT:
		*cdw0 = dflt ? 0 : f->power_mgmt;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_TEMP_THRESH: {
		uint32_t tmpsel = (cdw11 >> 16) & 0xf, thsel = (cdw11 >> 20) & 0x3;
		uint16_t v;

		if (tmpsel > CTRLR_TEMP_SENSORS || thsel > 1)
			return NVME_SC_INVALID_FIELD;
		if (dflt)
			v = thsel ? CTRLR_TEMP_UNDER_DEFAULT
				  : (tmpsel ? 0xffff : CTRLR_TEMP_OVER_DEFAULT);
		else
			v = thsel ? f->temp_under[tmpsel] : f->temp_over[tmpsel];
		*cdw0 = v | tmpsel << 16 | thsel << 20;
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_ERR_RECOVERY:
		/* NSID 0h: the value every namespace got from the last Set with NSID FFFFFFFFh
		 * (0 after a reset), as SPDK's target answers and its nvme_compliance expects of
		 * a mandatory feature; a namespace set on its own reads through its NSID. */
		if (req->sqe.nsid == 0) {
			*cdw0 = dflt ? 0 : f->err_recovery_all;
			return NVME_SC_SUCCESS;
		}
		ns = ctrlr_ns_get(ctrlr, req->sqe.nsid);
		if (!ns)
			return NVME_SC_INVALID_NS;
		*cdw0 = dflt ? 0 : ns->err_recovery;
		ctrlr_ns_put(ns);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_VOLATILE_WC:
		*cdw0 = dflt ? 1 : f->vwc;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_NUM_QUEUES:
		/* Until the host sets it: what the controller has now (a primary's flexible
		 * resources may have changed it since the reset, virt/). */
		*cdw0 = dflt || !f->num_queues_set ? ctrlr_num_queues_default(ctrlr) : f->num_queues;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_IRQ_COALESCE:
		*cdw0 = dflt ? 0 : CTRLR_LOAD(f->irq_coalesce);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_IRQ_CONFIG: {
		uint32_t iv = cdw11 & 0xffff;

		if (iv >= ctrlr->res_vectors)
			return NVME_SC_INVALID_FIELD;
		*cdw0 = iv | (!dflt && CTRLR_LOAD(f->irq_cd[iv]) ? NVME_IRQ_CONFIG_CD : 0);
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_WRITE_ATOMIC:
		*cdw0 = dflt ? 0 : f->write_atomic;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_ASYNC_EVENT:
		*cdw0 = dflt ? 0 : f->async_event;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_AUTO_PST: {
		static const uint8_t zero[NVME_APST_DATA_SIZE];

		*cdw0 = dflt ? 0 : f->apst;
		return ctrlr_req_copy_to_host(req, dflt ? zero : f->apst_table,
					      NVME_APST_DATA_SIZE);
	}
	case NVME_FEAT_TIMESTAMP: {
		uint8_t data[NVME_TIMESTAMP_DATA_SIZE] = {0};
		uint8_t attr;
		uint64_t ms = ctrlr_timestamp_now(ctrlr, &attr);

		memcpy(data, &ms, 6);
		data[6] = attr;
		*cdw0 = 0;
		return ctrlr_req_copy_to_host(req, data, sizeof(data));
	}
	case NVME_FEAT_KATO:
		*cdw0 = dflt ? 0 : ctrlr_keep_alive_kato(ctrlr);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_HOST_BEHAVIOR:
		*cdw0 = 0;
		return ctrlr_feat_get_hbs(req, dflt);
	case NVME_FEAT_HOST_ID: {
		uint16_t st = ctrlr_feat_get_hostid(req, dflt);

		*cdw0 = req->cdw0;
		return st;
	}
	case NVME_FEAT_RESV_MASK:
	case NVME_FEAT_RESV_PERSIST:
		return ctrlr_feat_resv_ns(req, fid, false, dflt, cdw0);
	case NVME_FEAT_IOCS_PROFILE:
		/* Index 0 of Identify CNS 1Ch, the only combination (NVM + Zoned Namespace). */
		*cdw0 = 0;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_FDP:
	case NVME_FEAT_FDP_EVENTS:
		return ctrlr_feat_fdp_get(req, fid, dflt, cdw0);
	case NVME_FEAT_ENDGRP_EVENT:
		/* CDW11 bits 15:0 name the group; Dword 0 as Set's CDW11 (EGCW in 23:16). */
		if ((cdw11 & 0xffff) != CTRLR_ENDGID)
			return NVME_SC_INVALID_FIELD;
		*cdw0 = CTRLR_ENDGID | (dflt ? 0u : (uint32_t)f->endgrp_event << 16);
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_FIELD;
	}
}

static void ctrlr_feat_get_done(struct ctrlr_req *req, uint16_t st, uint32_t cdw0)
{
	req->cdw0 = cdw0;
	if (st == NVME_SC_INVALID_FIELD)
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw11));
	ctrlr_req_complete(req, st);
}

/* Which saved value a Get or Set of fid names (Temperature Threshold: TMPSEL and THSEL of
 * CDW11). false when the fields name none (the command's own check refuses them). */
static bool ctrlr_feat_saved_sub(const struct ctrlr_req *req, uint8_t fid, uint8_t *sub)
{
	uint32_t tmpsel = (req->sqe.cdw11 >> 16) & 0xf, thsel = (req->sqe.cdw11 >> 20) & 0x3;

	*sub = 0;
	if (fid != NVME_FEAT_TEMP_THRESH)
		return true;
	if (tmpsel > CTRLR_TEMP_SENSORS || thsel > 1)
		return false;
	*sub = (uint8_t)(tmpsel | thsel << 4);
	return true;
}

/* Get Features SEL 010b of a saved feature: its saved value as the command returns it. */
static bool ctrlr_feat_get_saved(struct ctrlr_req *req, uint8_t fid, uint32_t *cdw0)
{
	uint8_t sub;
	uint32_t v;

	if (!(ctrlr_feat_caps_of(req->sq->ctrlr, fid) & NVME_FEAT_CAP_SAVE) ||
	    !ctrlr_feat_saved_sub(req, fid, &sub) ||
	    !ctrlr_saved_feat_get(req->sq->ctrlr, fid, sub, &v))
		return false;
	*cdw0 = fid == NVME_FEAT_TEMP_THRESH ? v | (uint32_t)(sub & 0xf) << 16 |
						   (uint32_t)(sub >> 4) << 20
					     : v;
	return true;
}

void ctrlr_admin_get_features(struct ctrlr_req *req)
{
	uint8_t fid = req->sqe.cdw10 & 0xff;
	uint8_t sel = (req->sqe.cdw10 >> 8) & 0x7;
	uint32_t cdw0 = 0;
	uint16_t st;

	if (!ctrlr_feat_caps[fid])
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	switch (sel) {
	case NVME_SEL_SUPPORTED:
		req->cdw0 = ctrlr_feat_caps_of(req->sq->ctrlr, fid);
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	case NVME_SEL_SAVED:
		/* A value saved with SV, else the default (section 5.27.1). */
		if (ctrlr_feat_get_saved(req, fid, &cdw0))
			return ctrlr_feat_get_done(req, NVME_SC_SUCCESS, cdw0);
		/* fall through */
	case NVME_SEL_CURRENT:
	case NVME_SEL_DEFAULT:
		st = ctrlr_feat_get(req, fid, sel != NVME_SEL_CURRENT, &cdw0);
		break;
	default:
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10) + 1);
	}
	ctrlr_feat_get_done(req, st, cdw0);
}

static uint16_t ctrlr_feat_set_err_recovery(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t cdw11 = req->sqe.cdw11;
	struct ctrlr_ns *ns;

	/* DULBE needs deallocated-block errors, which these namespaces do not report. */
	if (cdw11 & (1u << 16))
		return NVME_SC_INVALID_FIELD;
	if (req->sqe.nsid == NVME_NSID_ALL) {
		for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
			if (ctrlr->ns[i])
				ctrlr->ns[i]->err_recovery = cdw11 & 0xffff;
		ctrlr->feat.err_recovery_all = cdw11 & 0xffff;
		return NVME_SC_SUCCESS;
	}
	ns = ctrlr_ns_get(ctrlr, req->sqe.nsid);
	if (!ns)
		return NVME_SC_INVALID_NS;
	ns->err_recovery = cdw11 & 0xffff;
	ctrlr_ns_put(ns);
	return NVME_SC_SUCCESS;
}

static uint16_t ctrlr_feat_set(struct ctrlr_req *req, uint8_t fid)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_features *f = &ctrlr->feat;
	uint32_t cdw11 = req->sqe.cdw11;
	uint16_t st;

	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		f->arbitration = cdw11;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_POWER_MGMT:
		if ((cdw11 & 0x1f) > 0) /* NPSS = 0: only power state 0 */
			return NVME_SC_INVALID_FIELD;
		f->power_mgmt = cdw11 & 0xff;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_TEMP_THRESH: {
		uint32_t tmpsel = (cdw11 >> 16) & 0xf, thsel = (cdw11 >> 20) & 0x3;

		if (tmpsel > CTRLR_TEMP_SENSORS || thsel > 1)
			return NVME_SC_INVALID_FIELD;
		if (thsel)
			f->temp_under[tmpsel] = cdw11 & 0xffff;
		else
			f->temp_over[tmpsel] = cdw11 & 0xffff;
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_ERR_RECOVERY:
		return ctrlr_feat_set_err_recovery(req);
	case NVME_FEAT_VOLATILE_WC: {
		bool was = f->vwc;

		f->vwc = cdw11 & 1;
		ctrlr_apply_write_cache(ctrlr, f->vwc);
		if (!was || f->vwc)
			return NVME_SC_SUCCESS;
		/* Turned off: what the cache held becomes durable before the command completes,
		 * so no write acknowledged before it is volatile after it. */
		req->step.index = 0;
		ctrlr_feat_vwc_flush_next(req);
		return CTRLR_FEAT_ASYNC;
	}
	case NVME_FEAT_NUM_QUEUES: {
		uint32_t nsq = cdw11 & 0xffff, ncq = cdw11 >> 16,
			 max = ctrlr->res_io_queues - 1u;

		if (nsq == 0xffff || ncq == 0xffff)
			return NVME_SC_INVALID_FIELD;
		/* The allocation is fixed once I/O queues exist (section 5.27.1.7). */
		if (ctrlr->io_sqs || ctrlr->io_cqs)
			return NVME_SC_CMD_SEQ_ERROR;
		f->num_queues = (nsq < max ? nsq : max) | (ncq < max ? ncq : max) << 16;
		f->num_queues_set = true;
		req->cdw0 = f->num_queues;
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_IRQ_COALESCE:
		CTRLR_STORE(f->irq_coalesce, cdw11 & 0xffff);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_IRQ_CONFIG: {
		uint32_t iv = cdw11 & 0xffff;

		if (iv >= ctrlr->res_vectors)
			return NVME_SC_INVALID_FIELD;
		CTRLR_STORE(f->irq_cd[iv], (cdw11 & NVME_IRQ_CONFIG_CD) ? 1 : 0);
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_WRITE_ATOMIC:
		f->write_atomic = cdw11 & 1;
		return NVME_SC_SUCCESS;
	case NVME_FEAT_ASYNC_EVENT:
		f->async_event = cdw11 & (NVME_AEC_SMART_MASK | NVME_AEC_NS_ATTR | NVME_AEC_FW_ACT |
					  NVME_AEC_TELEMETRY | NVME_AEC_ZDCN | NVME_AEC_ENDGRP_EVENTS);
		return NVME_SC_SUCCESS;
	case NVME_FEAT_AUTO_PST:
		st = ctrlr_req_copy_from_host(req, f->apst_table, NVME_APST_DATA_SIZE);
		if (!st)
			f->apst = cdw11 & 1;
		return st;
	case NVME_FEAT_TIMESTAMP: {
		uint8_t data[NVME_TIMESTAMP_DATA_SIZE];
		uint64_t ms = 0;

		st = ctrlr_req_copy_from_host(req, data, sizeof(data));
		if (st)
			return st;
		memcpy(&ms, data, 6);
		ctrlr_pel_timestamp_change(ctrlr);
		f->timestamp_ms = ms;
		f->timestamp_set_us = evloop_now_us();
		return NVME_SC_SUCCESS;
	}
	case NVME_FEAT_KATO:
		return ctrlr_keep_alive_set(ctrlr, cdw11);
	case NVME_FEAT_HOST_BEHAVIOR:
		return ctrlr_feat_set_hbs(req);
	case NVME_FEAT_HOST_ID:
		return ctrlr_feat_set_hostid(req);
	case NVME_FEAT_RESV_MASK:
	case NVME_FEAT_RESV_PERSIST: {
		uint32_t unused;

		return ctrlr_feat_resv_ns(req, fid, true, false, &unused);
	}
	case NVME_FEAT_IOCS_PROFILE:
		/* IOCSCI (bits 8:0) must name a combination of CNS 1Ch: only index 0 exists. */
		return (cdw11 & 0x1ff) ? NVME_SC_IOCS_COMBINATION_REJECTED : NVME_SC_SUCCESS;
	case NVME_FEAT_FDP:
	case NVME_FEAT_FDP_EVENTS: {
		bool changed = false;
		uint16_t fst = ctrlr_feat_fdp_set(req, fid, &changed);

		if (fst || !changed)
			return fst;
		/* FDP turned on or off: in the state file before the command completes. */
		ctrlr_state_save(req, ctrlr_feat_fdp_saved);
		return CTRLR_FEAT_ASYNC;
	}
	case NVME_FEAT_ENDGRP_EVENT: {
		uint32_t egcw = (cdw11 >> 16) & 0xff;

		/* Only group 1; warnings it can raise (spare, reliability, read only), no
		 * reserved bit. A warning already standing makes no event: one that appears. */
		if ((cdw11 & 0xffff) != CTRLR_ENDGID || (egcw & ~NVME_EGCW_ALL) || (cdw11 >> 24))
			return NVME_SC_INVALID_FIELD;
		f->endgrp_event = (uint8_t)egcw;
		return NVME_SC_SUCCESS;
	}
	default:
		return NVME_SC_INVALID_FIELD;
	}
}

/* A Set Features ended (st): its event, its completion, what follows it. */
static void ctrlr_feat_set_done(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t fid = req->sqe.cdw10 & 0xff;

	if (st == NVME_SC_INVALID_FIELD)
		return ctrlr_req_complete_err(req, st, offsetof(struct nvme_sqe, cdw11));
	/* Persistent Event Log: Set Feature (the Timestamp has its own event). */
	if (!st && fid != NVME_FEAT_TIMESTAMP)
		ctrlr_pel_set_feature(ctrlr, &req->sqe);
	ctrlr_req_complete(req, st);
	/* A threshold now crossed is reported after this command's own CQE. */
	if (!st && (fid == NVME_FEAT_TEMP_THRESH || fid == NVME_FEAT_ASYNC_EVENT))
		ctrlr_health_eval(ctrlr);
}

/* The value a Set Features of fid left current, as it is saved. */
static uint32_t ctrlr_feat_current(const struct ctrlr *ctrlr, uint8_t fid, uint8_t sub)
{
	const struct ctrlr_features *f = &ctrlr->feat;

	switch (fid) {
	case NVME_FEAT_ARBITRATION:
		return f->arbitration;
	case NVME_FEAT_POWER_MGMT:
		return f->power_mgmt;
	case NVME_FEAT_TEMP_THRESH:
		return (sub >> 4) ? f->temp_under[sub & 0xf] : f->temp_over[sub & 0xf];
	case NVME_FEAT_VOLATILE_WC:
		return f->vwc;
	case NVME_FEAT_IRQ_COALESCE:
		return CTRLR_LOAD(f->irq_coalesce);
	case NVME_FEAT_WRITE_ATOMIC:
		return f->write_atomic;
	default:
		return f->async_event;
	}
}

/* The saved value is written: the command completes; if it could not be, the saved value is
 * the one before (the current one stays set, as a Set without SV would have left it) and the
 * command fails. */
static void ctrlr_feat_saved(struct ctrlr_req *req, uint16_t st)
{
	uint8_t fid = req->sqe.cdw10 & 0xff, sub = (uint8_t)req->step.count;

	if (st) {
		if (req->step.index)
			ctrlr_saved_feat_put(req->sq->ctrlr, fid, sub, (uint32_t)req->step.lba);
		else
			ctrlr_saved_feat_del(req->sq->ctrlr, fid, sub);
	}
	ctrlr_feat_set_done(req, st);
}

/* SV: the value just set becomes the saved one, durable before the command completes. */
static void ctrlr_feat_save(struct ctrlr_req *req, uint8_t fid)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint32_t old;
	uint8_t sub;

	if (!ctrlr_feat_saved_sub(req, fid, &sub))
		return ctrlr_feat_set_done(req, NVME_SC_INVALID_FIELD);
	req->step.index = ctrlr_saved_feat_get(ctrlr, fid, sub, &old);
	req->step.lba = old;
	req->step.count = sub;
	ctrlr_saved_feat_put(ctrlr, fid, sub, ctrlr_feat_current(ctrlr, fid, sub));
	ctrlr_state_save(req, ctrlr_feat_saved);
}

/* The feature is set (st): saved first when SV asks for it. */
static void ctrlr_feat_set_finish(struct ctrlr_req *req, uint16_t st)
{
	if (!st && (req->sqe.cdw10 & NVME_SET_FEAT_SV))
		return ctrlr_feat_save(req, req->sqe.cdw10 & 0xff);
	ctrlr_feat_set_done(req, st);
}

void ctrlr_admin_set_features(struct ctrlr_req *req)
{
	uint8_t fid = req->sqe.cdw10 & 0xff;
	uint16_t st;

	if (!ctrlr_feat_caps[fid])
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if ((req->sqe.cdw10 & NVME_SET_FEAT_SV) &&
	    !(ctrlr_feat_caps_of(req->sq->ctrlr, fid) & NVME_FEAT_CAP_SAVE))
		return ctrlr_req_complete_err(req, NVME_SC_FEATURE_NOT_SAVEABLE,
					      offsetof(struct nvme_sqe, cdw10) + 3);
	st = ctrlr_feat_set(req, fid);
	if (st != CTRLR_FEAT_ASYNC)
		ctrlr_feat_set_finish(req, st);
}
