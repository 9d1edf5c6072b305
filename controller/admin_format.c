/* controller/admin_format.c - Format NVM (NVMe Base 2.0 section 5.23): the one LBA format each
 * namespace has, no protection information; user data is erased (deallocated, or zeroed when the
 * bdev cannot deallocate), one namespace or all of them. Admin thread. */
#include <string.h>

#include "controller/ctrlr_internal.h"

static void ctrlr_format_next(struct ctrlr_req *req);

static void ctrlr_format_done(struct ctrlr_req *req, int status)
{
	uint16_t st = ctrlr_bdev_status(status, true);

	/* Erased blocks are readable (zeroes): Write Uncorrectable marks go with the data. */
	if (!st)
		ctrlr_uncor_clear_all(&req->ns->uncor);
	if (st || req->sqe.nsid != NVME_NSID_ALL)
		return ctrlr_req_complete(req, st);
	ctrlr_ns_put(req->ns);
	req->ns = NULL;
	ctrlr_format_next(req);
}

static void ctrlr_format_ns(struct ctrlr_req *req)
{
	struct ctrlr_ns *ns = req->ns;
	struct bdev_io *bio = req->bio;
	uint16_t st;

	memset(bio, 0, sizeof(*bio));
	if (ns->has_unmap) {
		req->step.ranges[0].offset_blocks = 0;
		req->step.ranges[0].num_blocks = ns->num_blocks;
		bio->type = BDEV_IO_UNMAP;
		bio->ranges = req->step.ranges;
		bio->nranges = 1;
	} else {
		bio->type = BDEV_IO_WRITE_ZEROES;
		bio->offset_blocks = 0;
		bio->num_blocks = ns->num_blocks;
	}
	st = ctrlr_req_submit_bio(req, ctrlr_format_done);
	if (st)
		ctrlr_req_complete(req, st);
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
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

void ctrlr_admin_format(struct ctrlr_req *req)
{
	uint32_t cdw10 = req->sqe.cdw10;
	uint16_t st;

	/* A device self-test in progress ends (8.11). */
	ctrlr_dst_abort(req->sq->ctrlr, NVME_DST_RES_ABORTED_FORMAT);
	if (NVME_FORMAT_LBAF(cdw10) != 0 || NVME_FORMAT_MSET(cdw10) || NVME_FORMAT_PI(cdw10))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FORMAT,
					      offsetof(struct nvme_sqe, cdw10));
	/* SES 0 (no secure erase) and 1 (user data erase) both erase here; no crypto erase. */
	if (NVME_FORMAT_SES(cdw10) > 1)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10) + 1);
	if (req->sqe.nsid == NVME_NSID_ALL) {
		req->step.index = 0;
		return ctrlr_format_next(req);
	}
	st = ctrlr_req_get_ns(req);
	if (st)
		return ctrlr_req_complete(req, st);
	ctrlr_format_ns(req);
}
