/* controller/admin/format.c - Format NVM (NVMe Base 2.0 section 5.23): the LBA format (data size,
 * metadata size), metadata placement (MSET), protection information type and location (PI,
 * PIL), and Secure Erase Settings 0h-2h (user data erased: deallocated, or zeroed when the bdev
 * cannot deallocate; a cryptographic erase does the same, there being no key to delete), one
 * namespace or all of them. The capacity follows the format; the modules forget what they knew
 * of the erased blocks (ctrlr_ns_erased: media marks, zones); a self-test in progress ends; the
 * event log records start and completion; a pool namespace's header keeps its new format.
 * Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/admin/admin.h"
#include "controller/device/device.h"
#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"
#include "controller/pool/pool.h"
#include "controller/zns/zns.h"

/* Secure Erase Settings (CDW10 bits 11:9). */
#define CTRLR_SES_NONE 0
#define CTRLR_SES_USER_DATA 1
#define CTRLR_SES_CRYPTO 2

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
static void ctrlr_format_ns_end(struct ctrlr_req *req, uint16_t st);

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

	if (!req->step.count || !ctrlr_pool_of(ctrlr))
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
	ctrlr_pool_sync(ctrlr_pool_of(ctrlr), &fs->w);
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
	/* Erased blocks are readable (zeroes): Write Uncorrectable marks go with the data, a
	 * zoned namespace's zones are Empty again. */
	ctrlr_ns_erased(ns);
	f.f.lbaf = (uint8_t)NVME_FORMAT_LBAF(cdw10);
	l = &ns->lbafs[f.f.lbaf];
	if (l->ms) {
		f.f.ext = (uint8_t)NVME_FORMAT_MSET(cdw10);
		f.f.pi = (uint8_t)NVME_FORMAT_PI(cdw10);
		f.f.pi_first = f.f.pi ? (uint8_t)NVME_FORMAT_PIL(cdw10) : 0;
	}
	ctrlr_ns_take_format(ns, f);
	ctrlr_ns_format_changed(ns);
	/* A zoned namespace's zones (all Empty now) are durable before the command completes. */
	if (ctrlr_zns_of(ns) && ctrlr_zns_of(ns)->file)
		return ctrlr_zns_sync(req, ctrlr_format_ns_end);
	ctrlr_format_ns_end(req, NVME_SC_SUCCESS);
}

/* One namespace took its format (st: whether its zone state could be made durable). */
static void ctrlr_format_ns_end(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr_ns *ns = req->ns;

	if (st)
		return ctrlr_format_complete(req, st);
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
