/* controller/keep_alive.c - the Keep Alive Timer (Feature 0Fh) and the Keep Alive command (18h),
 * optional on PCIe (NVMe Base 2.x, Keep Alive). KAS advertises a granularity of 100 ms; KATO is
 * rounded up to it. Once a host sets a non-zero KATO it must send Keep Alive within it, or the
 * controller records Keep Alive Timer Expired in the Error Information log and sets CSTS.CFS,
 * after which the host resets it (the reset clears KATO with the other features). The transport
 * owns the timer: told of a new KATO (keep_alive_changed), it fires at
 * ctrlr_keep_alive_check()'s answer; a Keep Alive command only moves the deadline, so a timer
 * that fires early is re-armed for what is left. Admin thread. */
#include "common/evloop.h"
#include "common/log.h"
#include "controller/core/core.h"

#include <stdint.h>

#define CTRLR_KAS_MS 100u /* Identify Controller KAS: 1 = 100 ms */

uint16_t ctrlr_kas(void)
{
	return CTRLR_KAS_MS / 100u;
}

static void ctrlr_keep_alive_restart(struct ctrlr *ctrlr)
{
	struct ctrlr_keep_alive *ka = &ctrlr->ka;

	ka->deadline_us = ka->kato_ms ? evloop_now_us() + (uint64_t)ka->kato_ms * 1000u : 0;
}

uint16_t ctrlr_keep_alive_set(struct ctrlr *ctrlr, uint32_t kato_ms)
{
	struct ctrlr_keep_alive *ka = &ctrlr->ka;
	uint64_t rounded = ((uint64_t)kato_ms + CTRLR_KAS_MS - 1) / CTRLR_KAS_MS * CTRLR_KAS_MS;

	/* The largest KATO rounds up past 32 bits: it keeps the largest multiple that fits. */
	if (rounded > UINT32_MAX)
		rounded = (UINT32_MAX / CTRLR_KAS_MS) * CTRLR_KAS_MS;
	ka->kato_ms = (uint32_t)rounded;
	ka->expired = false;
	ctrlr_keep_alive_restart(ctrlr);
	if (ctrlr->ops->keep_alive_changed)
		ctrlr->ops->keep_alive_changed(ctrlr->tctx);
	return NVME_SC_SUCCESS;
}

uint32_t ctrlr_keep_alive_kato(const struct ctrlr *ctrlr)
{
	return ctrlr->ka.kato_ms;
}

void ctrlr_admin_keep_alive(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	if (!ctrlr->ka.expired)
		ctrlr_keep_alive_restart(ctrlr);
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

void ctrlr_keep_alive_reset(struct ctrlr *ctrlr)
{
	ctrlr->ka.kato_ms = 0;
	ctrlr->ka.deadline_us = 0;
	ctrlr->ka.expired = false;
}

uint64_t ctrlr_keep_alive_check(struct ctrlr *ctrlr)
{
	struct ctrlr_keep_alive *ka = &ctrlr->ka;
	uint64_t now = evloop_now_us();

	if (!ka->kato_ms || ka->expired || CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED)
		return 0;
	if (now < ka->deadline_us)
		return ka->deadline_us - now;
	ka->expired = true;
	LOG_GUEST_ERR(CTRLR_LOG, "keep alive timer expired (KATO %u ms): controller fatal status",
		      ka->kato_ms);
	ctrlr_error_log_put(ctrlr, 0, 0xffff, NVME_SC_KEEP_ALIVE_EXPIRED, 0xffff, 0, 0);
	ctrlr->csts.bits.cfs = 1;
	ctrlr_regs_write_csts(ctrlr);
	return 0;
}
