/* controller/device/fdp.c - Flexible Data Placement (NVMe Base 2.1, TP4146) in the controller's
 * endurance group (endgrp.c), issue 35: one FDP configuration (index 0: fdp_nruh initially
 * isolated reclaim unit handles, one reclaim group, reclaim units of fdp_runs bytes), every
 * namespace's placement handle list is every handle (PHNDL i = RUHID i). The reclaim units are
 * real: while FDP is enabled a namespace must be on a placement bdev (backend/bdev_fdp.c) with
 * the configuration's handles and unit size (ctrlr_fdp_ns_attach), a write's handle goes to the
 * bdev with the write (the module's io_write_place hook; bdev_io.placement), which puts each
 * handle's data in reclaim units of its own and garbage-collects; RUH Status reads the bdev's
 * RUAMW, RUH Update moves the bdev's handle to a fresh unit, log 22h's HBMW, MBMW and MBE are
 * the bdevs' (kept in their superblocks at each Flush: they go on after a restart). Feature 1Dh enables FDP (only while the group has no
 * namespace), 1Eh keeps the event types enabled per placement handle; logs 20h
 * (configurations), 21h (handle usage), 22h (statistics), 23h (LSP bit 0 set, host events:
 * RU Not Fully Written at an RUH Update, Invalid Placement Identifier, when Feature 1Eh enabled
 * them; LSP bit 0 clear, controller events: Media Reallocated for each reclaim unit the bdev's
 * GC emptied, of the handles whose 1Eh enables it); Directive Receive Identify; I/O Management
 * Receive (RUH Status) and Send (RUH Update). 1Dh and 1Eh are kept in the controller's state
 * file. Not there: the RU time limit, Implicitly Modified RUH events. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"

#define CTRLR_FDP_RUNS_DEFAULT (16ull << 20)

static void ctrlr_fdp_u128(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

void ctrlr_fdp_init(struct ctrlr *ctrlr)
{
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;

	memset(f, 0, sizeof(*f));
	f->nruh = ctrlr->cfg.fdp_nruh > CTRLR_FDP_MAX_RUH ? 0 : ctrlr->cfg.fdp_nruh;
	f->runs = ctrlr->cfg.fdp_runs ? ctrlr->cfg.fdp_runs : CTRLR_FDP_RUNS_DEFAULT;
	/* A configured group starts with FDP enabled (its namespaces are placement bdevs); the
	 * host may turn it off while the group has no namespace. */
	f->enabled = f->nruh != 0;
}

bool ctrlr_fdp_supported(const struct ctrlr *ctrlr)
{
	return ctrlr_dev(ctrlr)->fdp.nruh != 0;
}

/* NSID names an active namespace (admin thread). */
static bool ctrlr_fdp_ns_active(struct ctrlr *ctrlr, uint32_t nsid)
{
	struct ctrlr_ns *ns = ctrlr_ns_get(ctrlr, nsid);

	if (ns)
		ctrlr_ns_put(ns);
	return ns != NULL;
}

static bool ctrlr_fdp_has_ns(const struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			return true;
	return false;
}

/* ---- events: raised on I/O threads, recorded on the admin thread ---- */

struct ctrlr_fdp_ev_msg {
	struct ctrlr *ctrlr;
	struct nvme_fdp_event ev;
};

static void ctrlr_fdp_event_msg(void *arg)
{
	struct ctrlr_fdp_ev_msg *m = arg;
	struct ctrlr_fdp *f = &ctrlr_dev(m->ctrlr)->fdp;
	uint8_t bit = m->ev.type == NVME_FDPE_RU_NOT_FULLY_WRITTEN ? 1u << 0 : 1u << 1;

	/* Only event types the host enabled for that placement handle (Feature 1Eh). */
	if (m->ev.pid < f->nruh && (f->events[m->ev.pid] & bit)) {
		if (f->nev == CTRLR_FDP_EVENTS) {
			memmove(&f->ev[0], &f->ev[1], sizeof(f->ev[0]) * (CTRLR_FDP_EVENTS - 1));
			f->nev--;
		}
		m->ev.timestamp = (evloop_now_us() - m->ctrlr->created_us) / 1000;
		f->ev[f->nev++] = m->ev;
	}
	free(m);
}

static void ctrlr_fdp_event(struct ctrlr_req *req, uint8_t type, uint16_t pid, uint64_t info)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fdp_ev_msg *m = calloc(1, sizeof(*m));

	if (!m)
		return;
	m->ctrlr = ctrlr;
	m->ev.type = type;
	m->ev.flags = NVME_FDPEF_PIV | NVME_FDPEF_NSIDV;
	m->ev.pid = pid;
	m->ev.nsid = req->sqe.nsid;
	m->ev.ruhid = (uint8_t)pid;
	memcpy(m->ev.type_specific, &info, sizeof(info));
	if (ctrlr->ops->admin_msg(ctrlr->tctx, ctrlr_fdp_event_msg, m))
		free(m);
}

uint16_t ctrlr_fdp_write(struct ctrlr_req *req, uint64_t bytes, uint16_t *placement)
{
	struct ctrlr_fdp *f = &ctrlr_dev(req->sq->ctrlr)->fdp;
	uint8_t dtype = NVME_RW_DTYPE(req->sqe.cdw12);
	uint16_t pid = NVME_RW_DSPEC(req->sqe.cdw13);
	bool on = __atomic_load_n(&f->enabled, __ATOMIC_ACQUIRE);

	if (dtype && (dtype != NVME_DTYPE_DATA_PLACEMENT || !on))
		return NVME_SC_INVALID_FIELD;
	if (!on)
		return NVME_SC_SUCCESS;
	/* No directive, or a placement identifier past the handle list: handle 0 (the latter
	 * is an Invalid Placement Identifier event of handle 0). */
	if (dtype && pid >= f->nruh)
		ctrlr_fdp_event(req, NVME_FDPE_INVALID_PID, 0, pid);
	if (!dtype || pid >= f->nruh)
		pid = 0;
	/* PHNDL i is RUH i of the placement bdev (ctrlr_fdp_ns_attach checked its geometry). */
	*placement = pid;
	return NVME_SC_SUCCESS;
}

int ctrlr_ns_placement_check(struct ctrlr *ctrlr, uint32_t nsid, const struct bdev *bdev,
			     char *why, size_t len)
{
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;
	const struct bdev_placement_geom *g = bdev_get_placement(bdev);

	if (!f->nruh || !f->enabled)
		return 0;
	if (!g) {
		snprintf(why, len,
			 "FDP is enabled and bdev %s places nothing (namespace %u needs a "
			 "bdev_fdp_create bdev of %u handles and reclaim units of %" PRIu64 " bytes)",
			 bdev_get_name(bdev), nsid, f->nruh, f->runs);
		return -EINVAL;
	}
	if (g->nruh != f->nruh || g->ru_blocks * bdev_get_block_size(bdev) != f->runs) {
		snprintf(why, len,
			 "bdev %s has %u placement handles and reclaim units of %" PRIu64
			 " bytes, the FDP configuration %u and %" PRIu64 " (namespace %u)",
			 bdev_get_name(bdev), g->nruh, g->ru_blocks * bdev_get_block_size(bdev),
			 f->nruh, f->runs, nsid);
		return -EINVAL;
	}
	return 0;
}

int ctrlr_fdp_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts)
{
	char why[256];
	int rc = ctrlr_ns_placement_check(ns->ctrlr, ns->nsid, ns->bdev, why, sizeof(why));

	(void)opts;
	if (rc)
		LOG_ERR(CTRLR_LOG, "%s: %s", ns->ctrlr->serial, why);
	return rc;
}

/* Host and media bytes written, media bytes erased: the namespaces' placement bdevs' counts,
 * which their superblocks keep at each Flush, so they go on after a restart (admin thread). */
static void ctrlr_fdp_media(struct ctrlr *ctrlr, uint64_t *hbmw, uint64_t *mbmw, uint64_t *mbe)
{
	*hbmw = *mbmw = *mbe = 0;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct bdev_placement_stats st;

		if (!ctrlr->ns[i] || !bdev_get_placement(ctrlr->ns[i]->bdev))
			continue;
		bdev_placement_get_stats(ctrlr->ns[i]->bdev, &st);
		*hbmw += st.host_bytes;
		*mbmw += st.media_bytes;
		*mbe += st.erased_bytes;
	}
}

/* Controller events (log 23h, LSP bit 0 clear): Media Reallocated for each reclaim unit the
 * placement bdevs' garbage collection emptied, of the handles whose Feature 1Eh enables it
 * (when the log is read), newest CTRLR_FDP_EVENTS. Admin thread. */
static uint32_t ctrlr_fdp_ctrl_events(struct ctrlr *ctrlr, uint8_t *out)
{
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;
	struct bdev_placement_event ev[BDEV_PLACEMENT_EVENTS];
	uint32_t n = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];
		unsigned int k;

		if (!ns || !bdev_get_placement(ns->bdev))
			continue;
		k = bdev_placement_get_events(ns->bdev, ev, BDEV_PLACEMENT_EVENTS);
		for (unsigned int j = 0; j < k; j++) {
			struct nvme_fdp_event e = {0};
			uint64_t lba = ev[j].lba * bdev_get_block_size(ns->bdev) / ns->block_size;
			uint16_t nlbam = (uint16_t)(ev[j].nlbam > 0xffff ? 0xffff : ev[j].nlbam);

			if (ev[j].ruh >= f->nruh || !(f->events[ev[j].ruh] & (1u << 2)))
				continue;
			e.type = NVME_FDPE_MEDIA_REALLOC;
			e.flags = NVME_FDPEF_PIV | NVME_FDPEF_NSIDV;
			e.pid = ev[j].ruh;
			e.ruhid = (uint8_t)ev[j].ruh;
			e.nsid = ns->nsid;
			e.timestamp = ev[j].time_us > ctrlr->created_us
					  ? (ev[j].time_us - ctrlr->created_us) / 1000
					  : 0;
			/* Type specific: flags (bit 0: LBA valid), NLBAM, the first LBA moved. */
			e.type_specific[0] = 1;
			memcpy(e.type_specific + 2, &nlbam, 2);
			memcpy(e.type_specific + 4, &lba, 8);
			if (n == CTRLR_FDP_EVENTS) {
				memmove(out, out + sizeof(e), sizeof(e) * (CTRLR_FDP_EVENTS - 1));
				n--;
			}
			memcpy(out + n++ * sizeof(e), &e, sizeof(e));
		}
	}
	return n;
}

/* Blocks of the namespace's LBA size left in handle r's reclaim unit. */
static uint64_t ctrlr_fdp_ruamw(struct ctrlr_ns *ns, uint16_t r)
{
	return bdev_placement_ruamw(ns->bdev, r) * bdev_get_block_size(ns->bdev) /
	       ns->block_size;
}

/* ---- logs ---- */

static size_t ctrlr_log_fdp_configs(struct ctrlr_fdp *f, uint8_t *buf)
{
	struct nvme_fdp_config_hdr h = {0};
	struct nvme_fdp_config_desc d = {0};
	size_t dsze = sizeof(d) + 4u * f->nruh;

	h.numfdpc = 0;
	h.sze = (uint32_t)(sizeof(h) + dsze);
	d.dsze = (uint16_t)dsze;
	d.fdpatt = NVME_FDPA_VALID; /* RGIF 0: one reclaim group */
	d.nrg = 1;
	d.nruh = f->nruh;
	d.maxpids = (uint16_t)(f->nruh - 1);
	d.nnss = CTRLR_MAX_NAMESPACES;
	d.runs = f->runs;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &d, sizeof(d));
	for (uint16_t i = 0; i < f->nruh; i++)
		buf[sizeof(h) + sizeof(d) + 4u * i] = NVME_RUHT_INITIALLY_ISOLATED;
	return h.sze;
}

size_t ctrlr_log_fdp(struct ctrlr_req *req, uint8_t lid, uint8_t *buf, size_t cap, uint16_t *st)
{
	struct ctrlr_fdp *f = &ctrlr_dev(req->sq->ctrlr)->fdp;
	uint16_t endgid = req->sqe.cdw11 >> 16;

	*st = NVME_SC_SUCCESS;
	if (!f->nruh) {
		*st = NVME_SC_INVALID_LOG_PAGE;
		return 0;
	}
	if (endgid != CTRLR_ENDGID || 16 + 64 + 8u * f->nruh > cap ||
	    64 + sizeof(f->ev) > cap) {
		*st = NVME_SC_INVALID_FIELD;
		return 0;
	}
	switch (lid) {
	case NVME_LOG_FDP_CONFIGS:
		return ctrlr_log_fdp_configs(f, buf);
	case NVME_LOG_FDP_RUH_USAGE:
		memcpy(buf, &f->nruh, sizeof(f->nruh));
		for (uint16_t i = 0; i < f->nruh; i++)
			buf[8 + 8u * i] = NVME_RUHA_HOST; /* in every namespace's handle list */
		return 8 + 8u * f->nruh;
	case NVME_LOG_FDP_STATS: {
		struct nvme_fdp_stats_log *s = (struct nvme_fdp_stats_log *)buf;
		uint64_t hbmw, mbmw, mbe;

		ctrlr_fdp_media(req->sq->ctrlr, &hbmw, &mbmw, &mbe);
		ctrlr_fdp_u128(s->hbmw, hbmw);
		ctrlr_fdp_u128(s->mbmw, mbmw);
		ctrlr_fdp_u128(s->mbe, mbe);
		return sizeof(*s);
	}
	default: { /* 23h: LSP bit 0 set selects the host events; clear, the controller events */
		uint32_t n = (req->sqe.cdw10 >> 8) & 1 ? f->nev : 0;

		if (!((req->sqe.cdw10 >> 8) & 1))
			n = ctrlr_fdp_ctrl_events(req->sq->ctrlr, buf + 64);
		else
			memcpy(buf + 64, f->ev, n * sizeof(f->ev[0]));
		memcpy(buf, &n, sizeof(n));
		return 64 + n * sizeof(f->ev[0]);
	}
	}
}

/* ---- features ---- */

uint16_t ctrlr_feat_fdp_get(struct ctrlr_req *req, uint8_t fid, bool dflt, uint32_t *cdw0)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;
	uint32_t cdw11 = req->sqe.cdw11;

	if (!f->nruh)
		return NVME_SC_INVALID_FIELD;
	if (fid == NVME_FEAT_FDP) {
		if ((cdw11 & 0xffff) != CTRLR_ENDGID)
			return NVME_SC_INVALID_FIELD;
		*cdw0 = dflt ? 1 : f->enabled;
		return NVME_SC_SUCCESS;
	}
	/* 1Eh: the event types of placement handle CDW11[15:0], as (type, attributes) pairs. */
	{
		static const uint8_t types[] = {NVME_FDPE_RU_NOT_FULLY_WRITTEN,
						NVME_FDPE_INVALID_PID, NVME_FDPE_MEDIA_REALLOC};
		uint8_t data[2 * sizeof(types)];
		uint16_t ph = cdw11 & 0xffff;

		if (!ctrlr_fdp_ns_active(ctrlr, req->sqe.nsid) || ph >= f->nruh)
			return NVME_SC_INVALID_FIELD;
		for (size_t i = 0; i < sizeof(types); i++) {
			data[2 * i] = types[i];
			data[2 * i + 1] = !dflt && (f->events[ph] & (1u << i)) ? 1 : 0;
		}
		*cdw0 = sizeof(types);
		return ctrlr_req_copy_to_host(req, data, sizeof(data));
	}
}

bool ctrlr_fdp_enabled(const struct ctrlr *ctrlr)
{
	return __atomic_load_n(&ctrlr_dev(ctrlr)->fdp.enabled, __ATOMIC_ACQUIRE);
}

uint8_t ctrlr_fdp_events_of(const struct ctrlr *ctrlr, uint16_t ph)
{
	const struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;

	return ph < f->nruh ? f->events[ph] : 0;
}

int ctrlr_fdp_set_events(struct ctrlr *ctrlr, uint16_t ph, uint8_t bits)
{
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;

	if (bits & ~7u)
		return -EINVAL;
	if (ph < f->nruh)
		f->events[ph] = bits;
	return 0;
}

void ctrlr_fdp_set_enabled(struct ctrlr *ctrlr, bool on)
{
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;

	if (f->nruh)
		__atomic_store_n(&f->enabled, on, __ATOMIC_RELEASE);
}

uint16_t ctrlr_feat_fdp_set(struct ctrlr_req *req, uint8_t fid, bool *changed)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;
	uint32_t cdw11 = req->sqe.cdw11, cdw12 = req->sqe.cdw12;

	if (!f->nruh)
		return NVME_SC_INVALID_FIELD;
	if (fid == NVME_FEAT_FDP) {
		bool on = cdw12 & 1;

		if ((cdw11 & 0xffff) != CTRLR_ENDGID || ((cdw12 >> 8) & 0xff) ||
		    (cdw12 & ~0xff01u))
			return NVME_SC_INVALID_FIELD;
		if (on == f->enabled)
			return NVME_SC_SUCCESS;
		/* The configuration of a group that holds namespaces stays. */
		if (ctrlr_fdp_has_ns(ctrlr))
			return NVME_SC_CMD_SEQ_ERROR;
		ctrlr_fdp_init(ctrlr);
		__atomic_store_n(&f->enabled, on, __ATOMIC_RELEASE);
		*changed = true;
		return NVME_SC_SUCCESS;
	}
	/* 1Eh: CDW11[15:0] the placement handle, [23:16] how many event types follow (one byte
	 * each); CDW12 bit 0 enables or disables them. */
	{
		uint16_t ph = cdw11 & 0xffff;
		uint8_t noet = (cdw11 >> 16) & 0xff, types[255];
		uint16_t st;

		if (!ctrlr_fdp_ns_active(ctrlr, req->sqe.nsid) || ph >= f->nruh || !noet ||
		    (cdw12 & ~1u))
			return NVME_SC_INVALID_FIELD;
		st = ctrlr_req_copy_from_host(req, types, noet);
		if (st)
			return st;
		uint8_t bits = 0, now;

		/* Every type checked before any is taken. */
		for (uint8_t i = 0; i < noet; i++) {
			if (types[i] == NVME_FDPE_RU_NOT_FULLY_WRITTEN)
				bits |= 1u << 0;
			else if (types[i] == NVME_FDPE_INVALID_PID)
				bits |= 1u << 1;
			else if (types[i] == NVME_FDPE_MEDIA_REALLOC)
				bits |= 1u << 2;
			else
				return NVME_SC_INVALID_FIELD;
		}
		now = (uint8_t)((cdw12 & 1) ? f->events[ph] | bits : f->events[ph] & ~bits);
		*changed = now != f->events[ph];
		f->events[ph] = now;
		return NVME_SC_SUCCESS;
	}
}

/* ---- directives ---- */

void ctrlr_admin_directive_recv(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_fdp *f = &ctrlr_dev(ctrlr)->fdp;
	uint8_t doper = req->sqe.cdw11 & 0xff, dtype = (req->sqe.cdw11 >> 8) & 0xff;
	uint8_t data[4096];

	if (dtype != NVME_DTYPE_IDENTIFY || doper != NVME_DOPER_ID_RETURN_PARAMS)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw11));
	if (!ctrlr_fdp_ns_active(ctrlr, req->sqe.nsid))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_NS,
					      offsetof(struct nvme_sqe, nsid));
	memset(data, 0, sizeof(data));
	data[0] = 1u << NVME_DTYPE_IDENTIFY | (f->nruh ? 1u << NVME_DTYPE_DATA_PLACEMENT : 0);
	data[32] = 1u << NVME_DTYPE_IDENTIFY | (f->enabled ? 1u << NVME_DTYPE_DATA_PLACEMENT : 0);
	data[64] = f->nruh ? 1u << NVME_DTYPE_DATA_PLACEMENT : 0; /* kept across a reset */
	ctrlr_req_complete(req, ctrlr_req_copy_to_host(req, data, sizeof(data)));
}

/* The Data Placement directive follows Feature 1Dh: Enable Directive has nothing to change. */
void ctrlr_admin_directive_send(struct ctrlr_req *req)
{
	ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD, offsetof(struct nvme_sqe, cdw11));
}

/* ---- I/O Management ---- */

static void ctrlr_io_mgmt_recv(struct ctrlr_req *req)
{
	struct ctrlr_fdp *f = &ctrlr_dev(req->sq->ctrlr)->fdp;
	uint64_t len = ((uint64_t)req->sqe.cdw11 + 1) * 4;
	uint8_t buf[16 + 32 * CTRLR_FDP_MAX_RUH];
	uint16_t n = 0;

	if ((req->sqe.cdw10 & 0xff) != NVME_IOM_RUH_STATUS || (req->sqe.cdw10 >> 16))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	memset(buf, 0, sizeof(buf));
	if (__atomic_load_n(&f->enabled, __ATOMIC_ACQUIRE)) {
		for (uint16_t i = 0; i < f->nruh; i++) {
			struct nvme_ruh_status_desc d = {0};

			d.pid = i;
			d.ruhid = i;
			d.ruamw = ctrlr_fdp_ruamw(req->ns, i);
			memcpy(buf + 16 + 32u * i, &d, sizeof(d));
		}
		n = f->nruh;
	}
	memcpy(buf + 14, &n, sizeof(n)); /* NRUHSD: bytes 15:14 */
	ctrlr_req_complete(req, ctrlr_req_copy_to_host(req, buf,
						       len < sizeof(buf) ? len : sizeof(buf)));
}

static void ctrlr_io_mgmt_send(struct ctrlr_req *req)
{
	struct ctrlr_fdp *f = &ctrlr_dev(req->sq->ctrlr)->fdp;
	uint32_t npid = (req->sqe.cdw10 >> 16) + 1;
	uint16_t pids[CTRLR_FDP_MAX_RUH];
	uint16_t st;

	if ((req->sqe.cdw10 & 0xff) != NVME_IOM_RUH_UPDATE || npid > CTRLR_FDP_MAX_RUH ||
	    !__atomic_load_n(&f->enabled, __ATOMIC_ACQUIRE))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	st = ctrlr_req_copy_from_host(req, pids, npid * sizeof(uint16_t));
	if (st)
		return ctrlr_req_complete(req, st);
	for (uint32_t i = 0; i < npid; i++)
		if (pids[i] >= f->nruh)
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
						      offsetof(struct nvme_sqe, cdw10));
	for (uint32_t i = 0; i < npid; i++) {
		uint64_t left = ctrlr_fdp_ruamw(req->ns, pids[i]);

		/* A reclaim unit given up before it was full: how many blocks it kept. */
		if (left && left < f->runs / req->ns->block_size)
			ctrlr_fdp_event(req, NVME_FDPE_RU_NOT_FULLY_WRITTEN, pids[i], left);
		if (bdev_placement_ruh_update(req->ns->bdev, pids[i]))
			return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	}
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

const struct ctrlr_cmd ctrlr_fdp_io_cmds[256] = {
    [NVME_CMD_IO_MGMT_RECV] = {.exec = ctrlr_io_mgmt_recv, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_CMD_IO_MGMT_SEND] = {.exec = ctrlr_io_mgmt_send,
			       .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC},
};
