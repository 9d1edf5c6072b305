/* controller/device/endgrp.c - Endurance Groups (NVMe Base 2.0 section 3.2.3): the controller
 * has one, ENDGID 1, holding every namespace it has (the media behind them). Its Endurance Group
 * Information log (09h) counts what the namespaces' bdevs did, as the per-namespace SMART logs
 * do, in units of 10^9 bytes; its spare and percentage used are the health model's (health.c),
 * so its critical warnings are SMART's spare and reliability warnings, which SMART sums up in
 * byte 6. A warning that appears and Endurance Group Event Configuration (Feature 18h) enables
 * puts the group in the Event Aggregate log (0Fh) and raises the notice Asynchronous Event
 * Configuration bit 14 enables; reading the log without RAE removes the entry. Admin thread. */
#include <string.h>

#include "controller/device/device.h"
#include "controller/pool/pool.h"

#define CTRLR_EG_UNIT 1000000000ull /* log 09h counts bytes in units of 10^9, rounded up */

static void ctrlr_eg_u128_put(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

static uint64_t ctrlr_eg_units(uint64_t bytes)
{
	return bytes / CTRLR_EG_UNIT + (bytes % CTRLR_EG_UNIT ? 1 : 0);
}

static uint8_t ctrlr_endgrp_warning_now(struct ctrlr *ctrlr)
{
	uint8_t w = 0;

	if (ctrlr_health_spare(ctrlr) < CTRLR_HEALTH_SPARE_THRESH)
		w |= NVME_EGCW_SPARE;
	if (ctrlr_health_used(ctrlr) >= 100 || ctrlr_dev(ctrlr)->health.media_errors)
		w |= NVME_EGCW_RELIABILITY;
	return w;
}

void ctrlr_endgrp_eval(struct ctrlr *ctrlr)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;
	uint8_t w = ctrlr_endgrp_warning_now(ctrlr), appeared = w & ~h->eg_warning;

	h->eg_warning = w;
	if (!(appeared & ctrlr->feat.endgrp_event) || h->eg_aggregate)
		return;
	h->eg_aggregate = true;
	ctrlr_aer_report(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_ENDGRP_EVENTS,
			 NVME_LOG_ENDGRP_EVENTS);
}

/* Total and unallocated capacity: with a pool, Identify Controller's TNVMCAP and UNVMCAP (the
 * pool and the operator's namespaces); without one, the namespaces, all allocated. */
static void ctrlr_endgrp_capacity(struct ctrlr *ctrlr, uint64_t *total, uint64_t *unalloc)
{
	*total = 0;
	*unalloc = 0;
	if (ctrlr_pool_of(ctrlr)) {
		struct nvme_id_ctrl id;

		memset(&id, 0, sizeof(id));
		ctrlr_nsm_identify_ctrl(ctrlr, &id);
		memcpy(total, id.tnvmcap, sizeof(*total));
		memcpy(unalloc, id.unvmcap, sizeof(*unalloc));
		return;
	}
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			*total += ctrlr->ns[i]->num_blocks * ctrlr->ns[i]->block_size;
}

size_t ctrlr_log_endgrp(struct ctrlr *ctrlr, uint16_t endgid, uint8_t *buf)
{
	struct nvme_endgrp_log *l = (struct nvme_endgrp_log *)buf;
	uint64_t rd = 0, wr = 0, rops = 0, wops = 0, errs = 0, total, unalloc;

	if (endgid != CTRLR_ENDGID)
		return 0;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct bdev_stats bs;

		if (!ctrlr->ns[i])
			continue;
		bdev_get_stats(ctrlr->ns[i]->bdev, &bs);
		rd += bs.bytes_read;
		wr += bs.bytes_written;
		rops += bs.read_ops;
		wops += bs.write_ops;
		errs += bs.errors;
	}
	ctrlr_health_eval(ctrlr); /* evaluates the group's warnings too */
	ctrlr_endgrp_capacity(ctrlr, &total, &unalloc);
	l->critical_warning = ctrlr_dev(ctrlr)->health.eg_warning;
	l->avail_spare = ctrlr_health_spare(ctrlr);
	l->spare_thresh = CTRLR_HEALTH_SPARE_THRESH;
	l->percent_used = ctrlr_health_used(ctrlr);
	/* The rated endurance of health.c: CTRLR_HEALTH_RATED_WRITES writes of the capacity. */
	ctrlr_eg_u128_put(l->endurance_estimate, ctrlr_eg_units(total) * CTRLR_HEALTH_RATED_WRITES);
	ctrlr_eg_u128_put(l->data_units_read, ctrlr_eg_units(rd));
	ctrlr_eg_u128_put(l->data_units_written, ctrlr_eg_units(wr));
	/* No write amplification: the media is written what the host writes. */
	ctrlr_eg_u128_put(l->media_units_written, ctrlr_eg_units(wr));
	ctrlr_eg_u128_put(l->host_reads, rops);
	ctrlr_eg_u128_put(l->host_writes, wops);
	ctrlr_eg_u128_put(l->media_errors, errs + ctrlr_dev(ctrlr)->health.media_errors);
	ctrlr_eg_u128_put(l->num_err_log_entries,
			  __atomic_load_n(&ctrlr->error_count, __ATOMIC_RELAXED));
	ctrlr_eg_u128_put(l->tegcap, total);
	ctrlr_eg_u128_put(l->uegcap, unalloc);
	return sizeof(*l);
}

size_t ctrlr_log_endgrp_events(struct ctrlr *ctrlr, uint8_t *buf, bool rae)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;
	uint64_t n = h->eg_aggregate ? 1 : 0;
	uint16_t id = CTRLR_ENDGID;

	memcpy(buf, &n, sizeof(n));
	if (n)
		memcpy(buf + 8, &id, sizeof(id));
	if (!rae)
		h->eg_aggregate = false;
	return 8 + n * 2;
}

void ctrlr_identify_endgrp_list(struct ctrlr *ctrlr, uint16_t from, uint16_t *list)
{
	if (from > CTRLR_ENDGID)
		return;
	list[0] = 1;
	list[1] = CTRLR_ENDGID;
}
