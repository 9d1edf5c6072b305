/* controller/admin_format.c - LBA formats of a namespace and Format NVM (NVMe Base 2.0 section
 * 5.23): the LBA format (data size, metadata size), metadata placement (MSET), protection
 * information type and location (PI, PIL), and Secure Erase Settings 0h-2h (user data erased:
 * deallocated, or zeroed when the bdev cannot deallocate; a cryptographic erase does the same,
 * there being no key to delete), one namespace or all of them. The
 * capacity follows the format. Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"
#include "controller/nvm/pi.h"
#include "controller/zns/zns.h"

/* Secure Erase Settings (CDW10 bits 11:9). */
#define CTRLR_SES_NONE 0
#define CTRLR_SES_USER_DATA 1
#define CTRLR_SES_CRYPTO 2

/* What the bdev offers, in Identify order: the bdev's own block first (format 0, what the
 * namespace starts with), 16b Guard before 64b Guard for the same sizes. */
static const struct {
	uint32_t ds;
	uint16_t ms;
	uint8_t pif;
} ctrlr_lbaf_menu[] = {
    {512, 0, CTRLR_PIF_16},   {512, 8, CTRLR_PIF_16},	{512, 16, CTRLR_PIF_16},
    {512, 16, CTRLR_PIF_64},  {512, 64, CTRLR_PIF_16},	{512, 64, CTRLR_PIF_64},
    {4096, 0, CTRLR_PIF_16},  {4096, 8, CTRLR_PIF_16},	{4096, 16, CTRLR_PIF_16},
    {4096, 16, CTRLR_PIF_64}, {4096, 64, CTRLR_PIF_16}, {4096, 64, CTRLR_PIF_64},
};

uint32_t ctrlr_lbafs_for(uint32_t bs, struct ctrlr_lbaf *out)
{
	uint32_t n = 0;

	for (size_t i = 0; i < CTRLR_ARRAY_SIZE(ctrlr_lbaf_menu); i++) {
		uint32_t ds = ctrlr_lbaf_menu[i].ds, ms = ctrlr_lbaf_menu[i].ms;
		struct ctrlr_lbaf *l;
		uint32_t bytes, waste;

		/* A block smaller than the bdev's would need read-modify-write: not offered. */
		if (ds < bs || n == CTRLR_MAX_LBAF)
			continue;
		l = &out[n++];
		l->ds = ds;
		l->ms = (uint16_t)ms;
		l->lbads = ds == 512 ? 9 : 12;
		l->pif = ctrlr_lbaf_menu[i].pif;
		l->bpl = (uint8_t)((ds + ms + bs - 1) / bs);
		/* Relative Performance from the space a block wastes in padding. */
		bytes = l->bpl * bs;
		l->stride = bytes;
		waste = bytes - ds - ms;
		l->rp = waste == 0 ? 0 : waste * 8 <= bytes ? 1 : waste * 4 <= bytes ? 2 : 3;
	}
	return n;
}

void ctrlr_ns_formats_init(struct ctrlr_ns *ns, uint32_t bs)
{
	union ctrlr_ns_fmt f = {.raw = 0};

	ns->nlbaf = (uint8_t)ctrlr_lbafs_for(bs, ns->lbafs);
	ns->fmt = f.raw;
	ns->block_size = ns->lbafs[0].ds;
	ns->lbads = ns->lbafs[0].lbads;
	ns->num_blocks = bdev_get_num_blocks(ns->bdev) / ns->lbafs[0].bpl;
}

/* FLBAS (format index bits 3:0 and 6:5, extended-LBA bit 4) and DPS (PI type bits 2:0, PI first
 * bit 3) as one format word, or false when the formats offered cannot hold them. */
static bool ctrlr_flbas_to_fmt(const struct ctrlr_lbaf *lbafs, uint32_t n, uint8_t flbas,
			       uint8_t dps, union ctrlr_ns_fmt *f)
{
	uint32_t idx = (flbas & 0xfu) | ((flbas >> 5) & 0x3u) << 4;
	uint8_t pi = dps & 0x7;

	f->raw = 0;
	if (idx >= n || pi > 3 || (pi && lbafs[idx].ms < ctrlr_pi_tuple_size(lbafs[idx].pif)))
		return false;
	f->f.lbaf = (uint8_t)idx;
	if (lbafs[idx].ms) {
		f->f.ext = (flbas >> 4) & 1;
		f->f.pi = pi;
		f->f.pi_first = pi ? (dps >> 3) & 1 : 0;
	}
	return true;
}

bool ctrlr_flbas_valid(uint32_t bs, uint8_t flbas, uint8_t dps, uint32_t *stride)
{
	struct ctrlr_lbaf lbafs[CTRLR_MAX_LBAF];
	uint32_t n = ctrlr_lbafs_for(bs, lbafs);
	union ctrlr_ns_fmt f;

	if (!ctrlr_flbas_to_fmt(lbafs, n, flbas, dps, &f))
		return false;
	if (stride)
		*stride = lbafs[f.f.lbaf].stride;
	return true;
}

/* The namespace takes format word f: block size, capacity, then the word I/O loads. */
static void ctrlr_ns_take_format(struct ctrlr_ns *ns, union ctrlr_ns_fmt f)
{
	const struct ctrlr_lbaf *l = &ns->lbafs[f.f.lbaf];

	ns->block_size = l->ds;
	ns->lbads = l->lbads;
	__atomic_store_n(&ns->num_blocks, bdev_get_num_blocks(ns->bdev) / l->bpl, __ATOMIC_RELAXED);
	__atomic_store_n(&ns->fmt, f.raw, __ATOMIC_RELEASE);
}

int ctrlr_ns_set_flbas(struct ctrlr_ns *ns, uint8_t flbas, uint8_t dps)
{
	union ctrlr_ns_fmt f;

	if (!ctrlr_flbas_to_fmt(ns->lbafs, ns->nlbaf, flbas, dps, &f))
		return -EINVAL;
	ctrlr_ns_take_format(ns, f);
	return 0;
}

void ctrlr_ns_get_flbas(const struct ctrlr_ns *ns, uint8_t *flbas, uint8_t *dps)
{
	union ctrlr_ns_fmt f = {.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE)};

	*flbas = (uint8_t)((f.f.lbaf & 0xf) | (f.f.ext ? 0x10 : 0) | ((f.f.lbaf >> 4) & 0x3) << 5);
	*dps = (uint8_t)(f.f.pi | (f.f.pi_first ? 0x8 : 0));
}

uint64_t ctrlr_ns_blocks_for(const struct ctrlr_ns *ns, uint64_t bdev_blocks)
{
	union ctrlr_ns_fmt f = {.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE)};

	return bdev_blocks / ns->lbafs[f.f.lbaf].bpl;
}

void ctrlr_ns_fmt_load(struct ctrlr_req *req)
{
	req->fmt.raw = __atomic_load_n(&req->ns->fmt, __ATOMIC_ACQUIRE);
	req->lbaf = &req->ns->lbafs[req->fmt.f.lbaf];
}

/* Checks CDW10 against one namespace's formats (section 5.23: Invalid Format for a format the
 * namespace does not have, protection without room for its tuple, or an erase it cannot do). */
static uint16_t ctrlr_format_check(struct ctrlr_req *req, const struct ctrlr_ns *ns)
{
	uint32_t cdw10 = req->sqe.cdw10;
	uint32_t lbaf = NVME_FORMAT_LBAF(cdw10), pi = NVME_FORMAT_PI(cdw10);
	uint32_t ses = NVME_FORMAT_SES(cdw10);

	req->error_loc = offsetof(struct nvme_sqe, cdw10);
	if (pi > 3 || ses > CTRLR_SES_CRYPTO)
		return NVME_SC_INVALID_FIELD;
	/* Cryptographic erase (SES 2h, FNA bit 2): nvme-emu keeps no data encrypted, so there is no
	 * key whose deletion would make it unreadable; the erase below (deallocate, or zero)
	 * removes the user data itself, which leaves it as unrecoverable, only slower. */
	if (lbaf >= ns->nlbaf)
		return NVME_SC_INVALID_FORMAT;
	if (pi && ns->lbafs[lbaf].ms < ctrlr_pi_tuple_size(ns->lbafs[lbaf].pif))
		return NVME_SC_INVALID_FORMAT;
	req->error_loc = 0xffff;
	return NVME_SC_SUCCESS;
}

static void ctrlr_format_next(struct ctrlr_req *req);

/* An accepted format ends: its Persistent Event Log completion, then the command's. */
static void ctrlr_format_end(struct ctrlr_req *req, uint16_t st)
{
	ctrlr_pel_format(req->sq->ctrlr, true, req->sqe.nsid, req->sqe.cdw10, st);
	ctrlr_req_complete(req, st);
}

/* Waiting for the pool's header to hold the new formats. */
struct ctrlr_format_sync {
	struct ctrlr_pool_waiter w;
	struct ctrlr_req *req;
};

static void ctrlr_format_synced(void *arg, int rc)
{
	struct ctrlr_format_sync *fs = arg;
	struct ctrlr_req *req = fs->req;

	free(fs);
	if (rc)
		LOG_ERR(CTRLR_LOG, "%s: the namespace pool's header did not take the new format: %d",
			req->sq->ctrlr->serial, rc);
	ctrlr_format_end(req, rc ? NVME_SC_INTERNAL : NVME_SC_SUCCESS);
}

static void ctrlr_format_complete(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_format_sync *fs;

	if (!req->step.count || !ctrlr->pool)
		return ctrlr_format_end(req, st);
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		LOG_ERR(CTRLR_LOG, "%s: no memory to save the format in the namespace pool",
			ctrlr->serial);
		return ctrlr_format_end(req, NVME_SC_INTERNAL);
	}
	fs->req = req;
	fs->w.fn = ctrlr_format_synced;
	fs->w.arg = fs;
	ctrlr_pool_sync(ctrlr->pool, &fs->w);
}

static void ctrlr_format_start(struct ctrlr_req *req)
{
	ctrlr_pel_format(req->sq->ctrlr, false, req->sqe.nsid, req->sqe.cdw10, 0);
}

/* The erase is done: the namespace takes its new format and capacity. */
static void ctrlr_format_done(struct ctrlr_req *req, int status)
{
	uint16_t st = ctrlr_bdev_status(status, true);
	struct ctrlr_ns *ns = req->ns;
	uint32_t cdw10 = req->sqe.cdw10;
	union ctrlr_ns_fmt f = {.raw = 0};
	const struct ctrlr_lbaf *l;

	if (st)
		return ctrlr_format_complete(req, st);
	/* Erased blocks are readable (zeroes): Write Uncorrectable marks go with the data. */
	ctrlr_uncor_clear_all(ns->uncor);
	/* A zoned namespace's data went with its zones: all Empty (Read Only, Offline stay). */
	if (ns->zns)
		ctrlr_zns_send(ns->zns, 0, NVME_ZSA_RESET, true);
	f.f.lbaf = (uint8_t)NVME_FORMAT_LBAF(cdw10);
	l = &ns->lbafs[f.f.lbaf];
	if (l->ms) {
		f.f.ext = (uint8_t)NVME_FORMAT_MSET(cdw10);
		f.f.pi = (uint8_t)NVME_FORMAT_PI(cdw10);
		f.f.pi_first = f.f.pi ? (uint8_t)NVME_FORMAT_PIL(cdw10) : 0;
	}
	ctrlr_ns_take_format(ns, f);
	ctrlr_ns_format_changed(ns);
	/* A namespace of the capacity pool keeps its format in the pool's header: written before
	 * the command completes (ctrlr_format_complete). */
	if (ctrlr_pool_format_changed(req->sq->ctrlr, ns))
		req->step.count = 1;
	if (req->sqe.nsid != NVME_NSID_ALL)
		return ctrlr_format_complete(req, NVME_SC_SUCCESS);
	ctrlr_ns_put(ns);
	req->ns = NULL;
	ctrlr_format_next(req);
}

/* Erases every bdev block (data, metadata and padding alike). */
static void ctrlr_format_ns(struct ctrlr_req *req)
{
	struct ctrlr_ns *ns = req->ns;
	struct bdev_io *bio = req->bio;
	uint64_t blocks = bdev_get_num_blocks(ns->bdev);
	uint16_t st;

	memset(bio, 0, sizeof(*bio));
	if (ns->has_unmap) {
		req->step.ranges[0].offset_blocks = 0;
		req->step.ranges[0].num_blocks = blocks;
		bio->type = BDEV_IO_UNMAP;
		bio->ranges = req->step.ranges;
		bio->nranges = 1;
	} else {
		bio->type = BDEV_IO_WRITE_ZEROES;
		bio->offset_blocks = 0;
		bio->num_blocks = blocks;
	}
	st = ctrlr_req_submit_bio(req, ctrlr_format_done);
	if (st)
		ctrlr_format_complete(req, st);
}

static void ctrlr_format_next(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	while (req->step.index < CTRLR_MAX_NAMESPACES) {
		struct ctrlr_ns *ns = ctrlr_ns_get(ctrlr, ++req->step.index);

		if (ns) {
			req->ns = ns;
			return ctrlr_format_ns(req);
		}
	}
	ctrlr_format_complete(req, NVME_SC_SUCCESS);
}

void ctrlr_admin_format(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint16_t st;

	/* A device self-test in progress ends (8.11). */
	ctrlr_dst_abort(ctrlr, NVME_DST_RES_ABORTED_FORMAT);
	req->step.count = 0; /* set when a pool namespace changed format */
	if (req->sqe.nsid == NVME_NSID_ALL) {
		/* Every namespace must take the format before any is erased. The namespace list
		 * only changes on this (the admin) thread. */
		for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
			if (!ctrlr->ns[i])
				continue;
			st = ctrlr_format_check(req, ctrlr->ns[i]);
			if (st)
				return ctrlr_req_complete(req, st);
		}
		req->step.index = 0;
		ctrlr_format_start(req);
		return ctrlr_format_next(req);
	}
	st = ctrlr_req_get_ns(req);
	if (!st)
		st = ctrlr_format_check(req, req->ns);
	if (st)
		return ctrlr_req_complete(req, st);
	ctrlr_format_start(req);
	ctrlr_format_ns(req);
}
