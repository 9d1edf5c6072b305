/* controller/aer.c - Asynchronous Event Requests (NVMe Base 2.0 section 5.2): outstanding AER
 * commands, the queue of events waiting for them, per-type masking until the host reads the log
 * page, and events reported from owner threads (invalid doorbell values). Admin thread. */
#include "common/log.h"
#include "controller/core/core.h"

static void ctrlr_aer_process(struct ctrlr *ctrlr)
{
	while (ctrlr->num_aer_reqs) {
		struct ctrlr_aer_event ev;
		struct ctrlr_req *req;
		uint32_t i;

		for (i = 0; i < ctrlr->aer_count; i++)
			if (!(ctrlr->aer_masked & (1u << ctrlr->aer_queue[i].type)))
				break;
		if (i == ctrlr->aer_count)
			return;
		ev = ctrlr->aer_queue[i];
		for (uint32_t j = i + 1; j < ctrlr->aer_count; j++)
			ctrlr->aer_queue[j - 1] = ctrlr->aer_queue[j];
		ctrlr->aer_count--;
		/* Further events of this type wait until the host reads the log page. */
		ctrlr->aer_masked |= 1u << ev.type;
		req = ctrlr->aer_reqs[0];
		for (uint32_t j = 1; j < ctrlr->num_aer_reqs; j++)
			ctrlr->aer_reqs[j - 1] = ctrlr->aer_reqs[j];
		ctrlr->num_aer_reqs--;
		req->cdw0 = NVME_AER_DW0(ev.type, ev.info, ev.lid);
		CTRLR_STAT_ADD(ctrlr->cnt.aer_sent, 1);
		ctrlr_req_complete(req, NVME_SC_SUCCESS);
	}
}

void ctrlr_aer_request(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	if (ctrlr->num_aer_reqs > CTRLR_AERL)
		return ctrlr_req_complete(req, NVME_SC_ASYNC_LIMIT);
	/* It may wait for ever, with no data: no fence waits for it. */
	ctrlr_req_data_done(req);
	ctrlr->aer_reqs[ctrlr->num_aer_reqs++] = req;
	ctrlr_aer_process(ctrlr);
}

void ctrlr_aer_abort(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	for (uint32_t i = 0; i < ctrlr->num_aer_reqs; i++) {
		if (ctrlr->aer_reqs[i] != req)
			continue;
		for (uint32_t j = i + 1; j < ctrlr->num_aer_reqs; j++)
			ctrlr->aer_reqs[j - 1] = ctrlr->aer_reqs[j];
		ctrlr->num_aer_reqs--;
		ctrlr_req_complete(req, NVME_SC_ABORT_REQ);
		return;
	}
}

/* The Asynchronous Event Configuration bit that enables notice `info`. */
static uint32_t ctrlr_aer_notice_aec(uint8_t info)
{
	switch (info) {
	case NVME_AER_NOTICE_FW_ACT_START:
		return NVME_AEC_FW_ACT;
	case NVME_AER_NOTICE_TELEMETRY:
		return NVME_AEC_TELEMETRY;
	case NVME_AER_NOTICE_ZONE_CHANGED:
		return NVME_AEC_ZDCN;
	case NVME_AER_NOTICE_ENDGRP_EVENTS:
		return NVME_AEC_ENDGRP_EVENTS;
	default:
		return NVME_AEC_NS_ATTR;
	}
}

void ctrlr_aer_report(struct ctrlr *ctrlr, uint8_t type, uint8_t info, uint8_t lid)
{
	/* Notices are opt-in through Asynchronous Event Configuration; errors always report. */
	if (type == NVME_AER_TYPE_NOTICE && !(ctrlr->feat.async_event & ctrlr_aer_notice_aec(info)))
		return;
	for (uint32_t i = 0; i < ctrlr->aer_count; i++)
		if (ctrlr->aer_queue[i].type == type && ctrlr->aer_queue[i].info == info)
			goto process;
	if (ctrlr->aer_count == CTRLR_AER_QUEUE) {
		CTRLR_STAT_ADD(ctrlr->cnt.lost_events, 1);
		return;
	}
	ctrlr->aer_queue[ctrlr->aer_count++] = (struct ctrlr_aer_event){type, info, lid};
process:
	ctrlr_aer_process(ctrlr);
}

static void ctrlr_aer_pending_msg(void *arg)
{
	struct ctrlr *ctrlr = arg;
	uint32_t bits;

	__atomic_store_n(&ctrlr->aer_msg_queued, false, __ATOMIC_SEQ_CST);
	bits = __atomic_exchange_n(&ctrlr->aer_pending_bits, 0, __ATOMIC_SEQ_CST);
	if (ctrlr->state != CTRLR_ST_ENABLED)
		return;
	for (uint8_t info = 0; info < 32; info++)
		if (bits & (1u << info))
			ctrlr_aer_report(ctrlr, NVME_AER_TYPE_ERROR, info, NVME_LOG_ERROR);
}

void ctrlr_aer_report_async(struct ctrlr *ctrlr, uint8_t info)
{
	CTRLR_STAT_ADD(ctrlr->cnt.invalid_db_writes, 1);
	__atomic_fetch_or(&ctrlr->aer_pending_bits, 1u << info, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&ctrlr->aer_msg_queued, true, __ATOMIC_SEQ_CST))
		return;
	if (ctrlr->ops->admin_msg(ctrlr->tctx, ctrlr_aer_pending_msg, ctrlr)) {
		__atomic_store_n(&ctrlr->aer_msg_queued, false, __ATOMIC_SEQ_CST);
		CTRLR_STAT_ADD(ctrlr->cnt.lost_events, 1);
	}
}

void ctrlr_aer_drop(struct ctrlr *ctrlr, uint8_t type, uint8_t info)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ctrlr->aer_count; i++)
		if (ctrlr->aer_queue[i].type != type || ctrlr->aer_queue[i].info != info)
			ctrlr->aer_queue[n++] = ctrlr->aer_queue[i];
	ctrlr->aer_count = n;
}

void ctrlr_aer_log_read(struct ctrlr *ctrlr, uint8_t lid)
{
	uint32_t unmask = 0;

	if (lid == NVME_LOG_ERROR)
		unmask = 1u << NVME_AER_TYPE_ERROR;
	else if (lid == NVME_LOG_SMART)
		unmask = 1u << NVME_AER_TYPE_SMART;
	else if (lid == NVME_LOG_CHANGED_NS || lid == NVME_LOG_TELEMETRY_CTRL ||
		 lid == NVME_LOG_ZNS_CHANGED_ZONES || lid == NVME_LOG_ENDGRP_EVENTS)
		unmask = 1u << NVME_AER_TYPE_NOTICE;
	else if (lid == NVME_LOG_RESV_NOTIFY)
		unmask = 1u << NVME_AER_TYPE_IO_SPECIFIC;
	if (!(ctrlr->aer_masked & unmask))
		return;
	ctrlr->aer_masked &= ~unmask;
	ctrlr_aer_process(ctrlr);
}

void ctrlr_aer_reset(struct ctrlr *ctrlr)
{
	/* Outstanding AERs end with the admin queue: no CQE (section 3.7.2). */
	for (uint32_t i = 0; i < ctrlr->num_aer_reqs; i++)
		ctrlr_req_free(ctrlr->aer_reqs[i]);
	ctrlr->num_aer_reqs = 0;
	ctrlr->aer_count = 0;
	ctrlr->aer_masked = 0;
}
