/* controller/device/selftest.c - Device Self-test (NVMe Base 2.0 5.14 and 8.11) and the
 * Device Self-test log (06h). A short or extended test runs in the background, one segment after
 * the other, advanced by the completions of its own bdev reads (admin_bg.c): 1 RAM check (a
 * pattern written and read back in the controller's buffer), 2 SMART check (critical warnings
 * of the health model other than temperature), 4 metadata validation (each namespace's size and
 * block size against its bdev), 5 NVM integrity (the firmware slots), 6 data integrity (the first
 * CTRLR_DST_SHORT_BYTES of each namespace read and checked for media errors), 7 media check
 * (extended only: the rest of each namespace), 9 SMART check again. Segments 3 (volatile memory
 * backup) and 8 (drive specific) do not apply. A read that fails, or that covers blocks marked
 * uncorrectable, fails segment 6 or 7 with the namespace, the LBA and the status in the result.
 * Admin thread. */
#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"
#include "controller/nvm/nvm.h"

#define CTRLR_DST_SHORT_BYTES (16u << 20)
/* Extended test time (EDSTT) is estimated at this read rate, whole minutes, at least one. */
#define CTRLR_DST_RATE_BPS (100ull << 20)
#define CTRLR_DST_SEG_RAM 1
#define CTRLR_DST_SEG_SMART 2
#define CTRLR_DST_SEG_META 4
#define CTRLR_DST_SEG_NVM 5
#define CTRLR_DST_SEG_DATA 6
#define CTRLR_DST_SEG_MEDIA 7
#define CTRLR_DST_SEG_SMART2 9

static bool ctrlr_dst_in_scope(const struct ctrlr_dst *d, uint32_t nsid)
{
	return d->nsid == NVME_NSID_ALL || d->nsid == nsid;
}

/* The blocks segment `seg` reads from namespace `ns`: [*start, *end). */
static void ctrlr_dst_range(const struct ctrlr_ns *ns, uint8_t seg, uint64_t *start, uint64_t *end)
{
	uint64_t nb = __atomic_load_n(&ns->num_blocks, __ATOMIC_RELAXED);
	uint64_t shortb = CTRLR_DST_SHORT_BYTES / ns->block_size;

	if (shortb > nb)
		shortb = nb;
	*start = seg == CTRLR_DST_SEG_DATA ? 0 : shortb;
	*end = seg == CTRLR_DST_SEG_DATA ? shortb : nb;
}

uint16_t ctrlr_dst_edstt(const struct ctrlr *ctrlr)
{
	uint64_t bytes = 0, min;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			bytes += ctrlr->ns[i]->num_blocks * ctrlr->ns[i]->block_size;
	min = (bytes / CTRLR_DST_RATE_BPS + 59) / 60;
	return (uint16_t)(min < 1 ? 1 : min > 0xffff ? 0xffff : min);
}

static uint64_t ctrlr_dst_poh(const struct ctrlr *ctrlr)
{
	return (evloop_now_us() - ctrlr->created_us) / 3600000000ull;
}

/* Ends the operation with `result`; the newest entry goes first in the log. */
static void ctrlr_dst_finish(struct ctrlr *ctrlr, uint8_t result, uint32_t fail_nsid, bool flbav,
			     uint64_t flba, uint16_t status)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;
	struct nvme_dst_result *r = &d->results[0];

	memmove(&d->results[1], &d->results[0], sizeof(d->results) - sizeof(d->results[0]));
	memset(r, 0, sizeof(*r));
	r->status = (uint8_t)(d->stc << 4 | result);
	r->poh = ctrlr_dst_poh(ctrlr);
	if (result == NVME_DST_RES_FAILED_SEGMENT)
		r->segment = d->segment;
	if (fail_nsid || (d->nsid && d->nsid != NVME_NSID_ALL)) {
		r->valid |= NVME_DST_VALID_NSID;
		r->nsid = fail_nsid ? fail_nsid : d->nsid;
	}
	if (flbav) {
		r->valid |= NVME_DST_VALID_FLBA;
		r->flba = flba;
	}
	if (status) {
		r->valid |= NVME_DST_VALID_SCT | NVME_DST_VALID_SC;
		r->sct = (uint8_t)NVME_STATUS_SCT(status);
		r->sc = (uint8_t)NVME_STATUS_SC(status);
	}
	LOG_INFO(CTRLR_LOG, "%s: device self-test %s ended: result %u segment %u", ctrlr->serial,
		 d->stc == NVME_DST_SHORT ? "short" : "extended", result, r->segment);
	d->stc = 0;
	d->gen++; /* a read still in flight is dropped when it returns */
	if (result == NVME_DST_RES_FAILED_SEGMENT || result == NVME_DST_RES_FATAL)
		ctrlr_device_notable(ctrlr, "device self-test failed");
}

void ctrlr_dst_abort(struct ctrlr *ctrlr, uint8_t result)
{
	if (ctrlr_dev(ctrlr)->dst.stc)
		ctrlr_dst_finish(ctrlr, result, 0, false, 0, 0);
}

/* Segment 1: the chunk buffer holds a walking pattern and its complement, read back. */
static bool ctrlr_dst_ram_ok(struct ctrlr *ctrlr)
{
	uint32_t *w = ctrlr_dev(ctrlr)->bg.buf;
	size_t n = CTRLR_CHUNK_BYTES / sizeof(*w);

	for (unsigned int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++)
			w[i] = (uint32_t)(i * 2654435761u) ^ (pass ? 0xffffffffu : 0);
		for (size_t i = 0; i < n; i++)
			if (w[i] != ((uint32_t)(i * 2654435761u) ^ (pass ? 0xffffffffu : 0)))
				return false;
	}
	return true;
}

/* Segments 2 and 9: spare below threshold, reliability degraded or read-only media fail it;
 * temperature is an environment condition, not a defect. */
static bool ctrlr_dst_smart_ok(struct ctrlr *ctrlr)
{
	ctrlr_health_eval(ctrlr);
	return !(ctrlr_dev(ctrlr)->health.critical_warning &
		 (NVME_SMART_CRIT_SPARE | NVME_SMART_CRIT_RELIABILITY | (1u << 3)));
}

/* Segment 4: the namespaces in scope agree with their bdevs. Returns the first bad nsid or 0. */
static uint32_t ctrlr_dst_meta_bad(struct ctrlr *ctrlr)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;

	for (uint32_t nsid = 1; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
		struct ctrlr_ns *ns = ctrlr->ns[nsid - 1];

		if (!ns || !ctrlr_dst_in_scope(d, nsid))
			continue;
		if (ns->num_blocks > bdev_get_num_blocks(ns->bdev) / ctrlr_ns_lbaf(ns)->bpl ||
		    ns->block_size != ctrlr_ns_lbaf(ns)->ds || ns->block_size != 1u << ns->lbads)
			return nsid;
	}
	return 0;
}

/* Segment 5: the active slot holds an image with a printable revision. */
static bool ctrlr_dst_nvm_ok(struct ctrlr *ctrlr)
{
	const struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	const char *rev;

	if (fw->active < 1 || fw->active > CTRLR_FW_SLOTS)
		return false;
	rev = fw->rev[fw->active - 1];
	if (!rev[0])
		return false;
	for (unsigned int i = 0; i < 8 && rev[i]; i++)
		if (rev[i] < 0x20 || rev[i] > 0x7e)
			return false;
	return true;
}

static void ctrlr_dst_read_done(struct ctrlr *ctrlr, int status)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;
	struct bdev_io *bio = ctrlr_dev(ctrlr)->bg.bio;
	uint16_t st;

	if (ctrlr_dev(ctrlr)->bg.gen != d->gen || !d->stc)
		return;
	st = ctrlr_bdev_status(status, false);
	if (st)
		return ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, d->ns_next, true,
					bio->offset_blocks, st);
	d->lba += bio->num_blocks;
	d->done += bio->num_blocks;
}

/* Reads the next chunk of the segment. Returns true when a read was submitted (or the test
 * ended), false when the segment has nothing left to read. */
static bool ctrlr_dst_scan(struct ctrlr *ctrlr)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;

	for (;;) {
		struct ctrlr_ns *ns;
		uint64_t start, end, n, bad;
		uint16_t st;

		if (!d->ns_next)
			d->ns_next = 1, d->lba = UINT64_MAX;
		if (d->ns_next > CTRLR_MAX_NAMESPACES)
			return false;
		ns = ctrlr->ns[d->ns_next - 1];
		if (!ns || !ctrlr_dst_in_scope(d, d->ns_next)) {
			if (!ns && d->nsid == d->ns_next) {
				/* The namespace under test went away. */
				ctrlr_dst_finish(ctrlr, NVME_DST_RES_ABORTED_NS_REMOVED, 0, false, 0,
						 0);
				return true;
			}
			d->ns_next++, d->lba = UINT64_MAX;
			continue;
		}
		ctrlr_dst_range(ns, d->segment, &start, &end);
		if (d->lba == UINT64_MAX)
			d->lba = start;
		if (d->lba >= end) {
			d->ns_next++, d->lba = UINT64_MAX;
			continue;
		}
		n = end - d->lba;
		if (n > CTRLR_CHUNK_BYTES / ctrlr_ns_lbaf(ns)->stride)
			n = CTRLR_CHUNK_BYTES / ctrlr_ns_lbaf(ns)->stride;
		/* Blocks a media defect (Write Uncorrectable, injected error) made unreadable. */
		if (ctrlr_uncor_overlaps(ctrlr_nvm_ns(ns)->uncor, d->lba, n, &bad)) {
			ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, d->ns_next, true, bad,
					 NVME_SC_UNRECOVERED_READ);
			return true;
		}
		st = ctrlr_bg_submit(ctrlr, d->ns_next, BDEV_IO_READ, d->lba, n, d->gen,
				     ctrlr_dst_read_done);
		if (st == NVME_SC_INVALID_NS)
			ctrlr_dst_finish(ctrlr, NVME_DST_RES_ABORTED_NS_REMOVED, 0, false, 0, 0);
		else if (st)
			ctrlr_dst_finish(ctrlr, NVME_DST_RES_FATAL, 0, false, 0, st);
		return true;
	}
}

bool ctrlr_dst_bg_step(struct ctrlr *ctrlr)
{
	if (!ctrlr_dev(ctrlr)->dst.stc)
		return false;
	ctrlr_dst_step(ctrlr);
	return true;
}

void ctrlr_dst_step(struct ctrlr *ctrlr)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;
	uint32_t bad;

	while (d->stc) {
		switch (d->segment) {
		case CTRLR_DST_SEG_RAM:
			if (!ctrlr_dst_ram_ok(ctrlr))
				return ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, 0,
							false, 0, 0);
			break;
		case CTRLR_DST_SEG_SMART:
		case CTRLR_DST_SEG_SMART2:
			if (!ctrlr_dst_smart_ok(ctrlr))
				return ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, 0,
							false, 0, 0);
			if (d->segment == CTRLR_DST_SEG_SMART2)
				return ctrlr_dst_finish(ctrlr, NVME_DST_RES_OK, 0, false, 0, 0);
			break;
		case CTRLR_DST_SEG_META:
			bad = ctrlr_dst_meta_bad(ctrlr);
			if (bad)
				return ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, bad,
							false, 0, 0);
			break;
		case CTRLR_DST_SEG_NVM:
			if (!ctrlr_dst_nvm_ok(ctrlr))
				return ctrlr_dst_finish(ctrlr, NVME_DST_RES_FAILED_SEGMENT, 0,
							false, 0, 0);
			break;
		case CTRLR_DST_SEG_DATA:
		case CTRLR_DST_SEG_MEDIA:
			if (ctrlr_dst_scan(ctrlr))
				return; /* the read's completion calls us again */
			break;
		default:
			break; /* 3 and 8 do not apply */
		}
		d->segment++;
		d->ns_next = 0;
		if (d->segment == CTRLR_DST_SEG_MEDIA && d->stc == NVME_DST_SHORT)
			d->segment++;
	}
}

static uint64_t ctrlr_dst_total(struct ctrlr *ctrlr)
{
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;
	uint64_t total = 0, s, e;

	for (uint32_t nsid = 1; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
		struct ctrlr_ns *ns = ctrlr->ns[nsid - 1];

		if (!ns || !ctrlr_dst_in_scope(d, nsid))
			continue;
		ctrlr_dst_range(ns, CTRLR_DST_SEG_DATA, &s, &e);
		total += e - s;
		if (d->stc == NVME_DST_EXTENDED) {
			ctrlr_dst_range(ns, CTRLR_DST_SEG_MEDIA, &s, &e);
			total += e - s;
		}
	}
	return total;
}

void ctrlr_admin_self_test(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;
	uint8_t stc = req->sqe.cdw10 & 0xf;
	uint32_t nsid = req->sqe.nsid;

	if (stc == NVME_DST_ABORT) {
		ctrlr_dst_abort(ctrlr, NVME_DST_RES_ABORTED_CMD);
		return ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
	if (stc != NVME_DST_SHORT && stc != NVME_DST_EXTENDED)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw10));
	if (nsid && nsid != NVME_NSID_ALL &&
	    (nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1]))
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_NS,
					      offsetof(struct nvme_sqe, nsid));
	/* One operation at a time in the subsystem (DSTO bit 0). */
	if (d->stc)
		return ctrlr_req_complete(req, NVME_SC_SELF_TEST_IN_PROGRESS);
	d->stc = stc;
	d->nsid = nsid;
	d->segment = CTRLR_DST_SEG_RAM;
	d->ns_next = 0;
	d->done = 0;
	d->gen++;
	d->total = ctrlr_dst_total(ctrlr);
	LOG_INFO(CTRLR_LOG, "%s: device self-test %s started (nsid 0x%x, %" PRIu64 " blocks)",
		 ctrlr->serial, stc == NVME_DST_SHORT ? "short" : "extended", nsid, d->total);
	/* The command completes once the operation started; it goes on in the background. */
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
	ctrlr_bg_kick(ctrlr);
}

size_t ctrlr_log_self_test(struct ctrlr *ctrlr, uint8_t *buf)
{
	struct nvme_dst_log *log = (struct nvme_dst_log *)buf;
	const struct ctrlr_dst *d = &ctrlr_dev(ctrlr)->dst;

	log->current_op = d->stc;
	if (d->stc) {
		uint64_t pct = d->total ? d->done * 100 / d->total : (uint64_t)d->segment * 10;

		log->current_percent = (uint8_t)(pct > 99 ? 99 : pct);
	}
	memcpy(log->result, d->results, sizeof(log->result));
	return sizeof(*log);
}
