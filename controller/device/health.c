/* controller/device/health.c - the SMART / Health model (NVMe Base 2.0, 5.16.1.3) and what an operator
 * injects into it. The composite temperature follows the command rate: each evaluation (a SMART
 * log read, a temperature threshold or event configuration change, an injection) moves it
 * halfway toward 40 C plus 1 K per 5,000 commands/s (at most +30 K); the transport also evaluates
 * it on a clock (the module's tick, ctrlr_health_tick: every second under load, every 10 s when settled), so thermal
 * events come without a host polling SMART. Percentage Used is the
 * bytes written over a rated endurance of 3,000 writes of the whole capacity. Available Spare
 * stays 100 % unless injected. Injected media errors are Write Uncorrectable ranges: reads fail
 * with Unrecovered Read Error until the blocks are written. A warning that appears raises its
 * SMART / Health event when Asynchronous Event Configuration enables it. */
#include "controller/device/device.h"
#include "common/evloop.h"
#include "controller/nvm/nvm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void ctrlr_health_init(struct ctrlr *ctrlr)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;

	memset(h, 0, sizeof(*h));
	h->temp_k = CTRLR_HEALTH_IDLE_K;
	h->forced_spare = -1;
	h->forced_used = -1;
	h->last_us = evloop_now_us();
}

uint16_t ctrlr_health_temp(const struct ctrlr *ctrlr)
{
	const struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;

	return h->forced_temp_k ? h->forced_temp_k : h->temp_k;
}

uint8_t ctrlr_health_spare(const struct ctrlr *ctrlr)
{
	return ctrlr_dev(ctrlr)->health.forced_spare >= 0 ? (uint8_t)ctrlr_dev(ctrlr)->health.forced_spare : 100;
}

uint8_t ctrlr_health_used(const struct ctrlr *ctrlr)
{
	struct ctrlr_stats st;
	uint64_t cap = 0, used;

	if (ctrlr_dev(ctrlr)->health.forced_used >= 0)
		return (uint8_t)ctrlr_dev(ctrlr)->health.forced_used;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			cap += ctrlr->ns[i]->num_blocks * ctrlr->ns[i]->block_size;
	if (!cap)
		return 0;
	ctrlr_get_stats(ctrlr, &st);
	/* Data units are 512,000 bytes. 255 means 255 % or more (the field's limit). */
	used = st.data_units_written * 512000 / (cap / 100 ? cap / 100 : 1) / CTRLR_HEALTH_RATED_WRITES;
	return used > 255 ? 255 : (uint8_t)used;
}

/* A SMART critical warning appeared: the event log takes a SMART snapshot and the hardware
 * error view of it (the critical warning byte as it stands), telemetry a snapshot. */
static void ctrlr_health_event(struct ctrlr *ctrlr, uint8_t new_bits)
{
	uint8_t smart[512];
	char why[48];

	memset(smart, 0, sizeof(smart));
	ctrlr_log_smart(ctrlr, NULL, smart);
	ctrlr_pel_add(ctrlr, NVME_PEL_SMART, smart, sizeof(smart));
	ctrlr_pel_hw_error(ctrlr, NVME_PEL_HWE_CRIT_WARN, &smart[0], 1);
	snprintf(why, sizeof(why), "SMART critical warning 0x%02x", new_bits);
	ctrlr_device_notable(ctrlr, why);
}

/* Raises the SMART event for a critical warning bit that just appeared. */
static void ctrlr_health_warn(struct ctrlr *ctrlr, uint8_t bit, bool on, uint8_t info)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;

	if (!on) {
		h->critical_warning &= (uint8_t)~bit;
		return;
	}
	if (h->critical_warning & bit)
		return;
	h->critical_warning |= bit;
	ctrlr_health_event(ctrlr, bit);
	if (ctrlr->feat.async_event & bit)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_SMART, info, NVME_LOG_SMART);
}

void ctrlr_health_check_temperature(struct ctrlr *ctrlr)
{
	struct ctrlr_features *f = &ctrlr->feat;
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;
	uint16_t t = ctrlr_health_temp(ctrlr);
	bool over = t >= f->temp_over[0] || t >= f->temp_over[1];
	bool under = t < f->temp_under[0] || t < f->temp_under[1];

	if (!over && !under) {
		h->critical_warning &= ~NVME_SMART_CRIT_TEMPERATURE;
		return;
	}
	if (h->critical_warning & NVME_SMART_CRIT_TEMPERATURE)
		return;
	h->critical_warning |= NVME_SMART_CRIT_TEMPERATURE;
	if (over)
		ctrlr_pel_thermal(ctrlr, t,
				  t >= f->temp_over[0] ? f->temp_over[0] : f->temp_over[1]);
	if (f->async_event & NVME_SMART_CRIT_TEMPERATURE)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_SMART, NVME_AER_SMART_TEMP_THRESH,
				 NVME_LOG_SMART);
}

void ctrlr_health_eval(struct ctrlr *ctrlr)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;
	uint64_t now = evloop_now_us(), dt = now - h->last_us, cmds, rate, target;
	struct ctrlr_stats st;

	ctrlr_get_stats(ctrlr, &st);
	cmds = st.io_cmds - h->last_cmds;
	if (dt >= 1000) {
		rate = cmds * 1000000 / dt;
		target = CTRLR_HEALTH_IDLE_K + (rate / 5000 > CTRLR_HEALTH_LOAD_MAX_K
							 ? CTRLR_HEALTH_LOAD_MAX_K
							 : rate / 5000);
		h->temp_k = (uint16_t)((h->temp_k + target + 1) / 2);
		h->last_us = now;
		h->last_cmds = st.io_cmds;
	}
	ctrlr_health_check_temperature(ctrlr);
	ctrlr_health_warn(ctrlr, NVME_SMART_CRIT_SPARE,
			  ctrlr_health_spare(ctrlr) < CTRLR_HEALTH_SPARE_THRESH, NVME_AER_SMART_SPARE);
	/* Reliability degraded: worn out (100 % used) or media errors injected. */
	ctrlr_health_warn(ctrlr, NVME_SMART_CRIT_RELIABILITY,
			  ctrlr_health_used(ctrlr) >= 100 || h->media_errors,
			  NVME_AER_SMART_RELIABILITY);
	ctrlr_endgrp_eval(ctrlr);
}

uint64_t ctrlr_health_tick(struct ctrlr *ctrlr)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;
	uint64_t before = h->last_cmds;

	if (CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED)
		return CTRLR_HEALTH_IDLE_TICK_US;
	ctrlr_health_eval(ctrlr);
	/* Settled: no command since the last tick and the temperature back at idle. */
	if (h->last_cmds == before && h->temp_k == CTRLR_HEALTH_IDLE_K)
		return CTRLR_HEALTH_IDLE_TICK_US;
	return CTRLR_HEALTH_TICK_US;
}

int ctrlr_health_set(struct ctrlr *ctrlr, const struct ctrlr_health_set *s)
{
	struct ctrlr_health *h = &ctrlr_dev(ctrlr)->health;

	if (s->reset) {
		h->forced_temp_k = 0;
		h->forced_spare = -1;
		h->forced_used = -1;
		h->media_errors = 0;
	}
	if (s->temp_k && (s->temp_k < 1 || s->temp_k > 0xfffe))
		return -EINVAL;
	if (s->spare > 100 || s->used > 255)
		return -EINVAL;
	if (s->temp_k)
		h->forced_temp_k = (uint16_t)s->temp_k;
	if (s->spare >= 0)
		h->forced_spare = (int16_t)s->spare;
	if (s->used >= 0)
		h->forced_used = (int16_t)s->used;
	ctrlr_health_eval(ctrlr);
	return 0;
}

int ctrlr_inject_media_error(struct ctrlr *ctrlr, uint32_t nsid, uint64_t slba, uint64_t nlb)
{
	struct ctrlr_ns *ns;
	int rc;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	if (!nlb || slba >= ns->num_blocks || nlb > ns->num_blocks - slba)
		return -ERANGE;
	rc = ctrlr_uncor_add(ctrlr_nvm_ns(ns)->uncor, slba, nlb);
	if (rc)
		return rc;
	ctrlr_dev(ctrlr)->health.media_errors += nlb;
	ctrlr_health_eval(ctrlr);
	return 0;
}

void ctrlr_health_get(struct ctrlr *ctrlr, struct ctrlr_health_info *out)
{
	ctrlr_health_eval(ctrlr);
	out->temp_k = ctrlr_health_temp(ctrlr);
	out->spare = ctrlr_health_spare(ctrlr);
	out->spare_thresh = CTRLR_HEALTH_SPARE_THRESH;
	out->used = ctrlr_health_used(ctrlr);
	out->critical_warning = ctrlr_dev(ctrlr)->health.critical_warning;
	out->injected_media_error_blocks = ctrlr_dev(ctrlr)->health.media_errors;
}

/* 128-bit little-endian counters (the host is little endian, as x86 is). */
static void ctrlr_u128_put(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

/* SMART / Health (Base 2.0 5.16.1.3): the controller's counters for NSID 0 or FFFFFFFFh; for a
 * namespace (LPA bit 0), those of its bdev: bytes and commands read and written, errors. */
size_t ctrlr_log_smart(struct ctrlr *ctrlr, struct ctrlr_ns *ns, uint8_t *buf)
{
	struct nvme_smart_log *s = (struct nvme_smart_log *)buf;
	struct ctrlr_stats st;

	ctrlr_get_stats(ctrlr, &st);
	if (ns) {
		struct bdev_stats bs;

		bdev_get_stats(ns->bdev, &bs);
		/* Data units: thousands of 512-byte units, rounded up (as ctrlr_get_stats). */
		st.data_units_read = (bs.bytes_read / 512 + 999) / 1000;
		st.data_units_written = (bs.bytes_written / 512 + 999) / 1000;
		st.host_read_cmds = bs.read_ops;
		st.host_write_cmds = bs.write_ops;
		st.media_errors = bs.errors;
	}
	ctrlr_health_eval(ctrlr);
	st.media_errors += ctrlr_dev(ctrlr)->health.media_errors;
	s->critical_warning = ctrlr_dev(ctrlr)->health.critical_warning;
	/* Endurance Group Critical Warning Summary: the bits of any group (the one, endgrp.c). */
	s->endu_grp_crit = ctrlr_dev(ctrlr)->health.eg_warning;
	s->temperature = ctrlr_health_temp(ctrlr);
	s->avail_spare = ctrlr_health_spare(ctrlr);
	s->spare_thresh = CTRLR_HEALTH_SPARE_THRESH;
	s->percent_used = ctrlr_health_used(ctrlr);
	ctrlr_u128_put(s->data_units_read, st.data_units_read);
	ctrlr_u128_put(s->data_units_written, st.data_units_written);
	ctrlr_u128_put(s->host_reads, st.host_read_cmds);
	ctrlr_u128_put(s->host_writes, st.host_write_cmds);
	ctrlr_u128_put(s->power_cycles, 1);
	ctrlr_u128_put(s->power_on_hours, (evloop_now_us() - ctrlr->created_us) / 3600000000ull);
	ctrlr_u128_put(s->media_errors, st.media_errors);
	ctrlr_u128_put(s->num_err_log_entries,
		       __atomic_load_n(&ctrlr->error_count, __ATOMIC_RELAXED));
	s->temp_sensor[0] = ctrlr_health_temp(ctrlr);
	return sizeof(*s);
}
