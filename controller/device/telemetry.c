/* controller/admin_telemetry.c - Telemetry Host-Initiated (07h) and Controller-Initiated (08h)
 * logs (NVMe Base 2.0 5.16.1.8/9, 8.24). A snapshot is a 512-byte header and two data areas in
 * 512-byte blocks: data area 1 the controller's state (registers, every SQ and CQ with size,
 * head, tail, state, the counters, the health model, self-test and sanitize state), data area 2
 * the error information entries, newest first. Data area 3 is empty (its last block is data area
 * 2's) and data area 4 is not offered. The host's snapshot is taken when it reads 07h with Create
 * (LSP bit 0), which bumps its generation; the controller's is taken at a notable event (a SMART
 * critical warning appearing, a failed self-test or sanitize), which bumps its generation, marks
 * it available in both headers and raises the Telemetry Log Changed notice if the host enabled
 * it (AEC bit 10). The layout of the data areas is ours: struct ctrlr_tel_* below, little endian.
 * Admin thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"

#define CTRLR_TEL_MAGIC "NVMEEMU1"

struct ctrlr_tel_state {
	char magic[8];
	uint32_t version;
	uint32_t num_sq, num_cq;
	uint32_t cc, csts, aqa;
	uint64_t asq, acq;
	uint64_t uptime_us;
	uint32_t ctrlr_state; /* 0 disabled, 1 enabled, 2 resetting, 3 failed */
	uint32_t page_size;
	uint64_t admin_cmds, io_cmds, errors, media_errors, resets, aer_sent, cq_full_holds;
	uint16_t temp_k;
	uint8_t spare, used, critical_warning;
	uint8_t dst_stc, san_state, fw_slot;
	uint32_t san_sstat;
	char reason[64];
} __attribute__((packed));

struct ctrlr_tel_sq {
	uint16_t qid, cqid;
	uint32_t size, head, tail, inflight;
	uint8_t state, qprio, rsvd[2];
} __attribute__((packed));

struct ctrlr_tel_cq {
	uint16_t qid, vector;
	uint32_t size, head, tail;
	uint8_t state, phase, ien, held;
} __attribute__((packed));

static size_t ctrlr_tel_blocks(size_t bytes)
{
	return (bytes + NVME_TELEMETRY_BLOCK - 1) / NVME_TELEMETRY_BLOCK;
}

/* Data area 1 into `p` (NULL: only the size). Queues other threads own are read with relaxed
 * loads: a diagnostic snapshot, not a synchronised one. */
static size_t ctrlr_tel_state(struct ctrlr *ctrlr, uint8_t *p, const char *reason)
{
	struct ctrlr_tel_state st;
	struct ctrlr_stats cs;
	size_t off = sizeof(st);

	memset(&st, 0, sizeof(st));
	for (uint32_t q = 0; q < ctrlr->num_queues; q++) {
		struct ctrlr_sq *sq = ctrlr->sqs[q];
		struct ctrlr_cq *cq = ctrlr->cqs[q];

		if (sq) {
			if (p) {
				struct ctrlr_tel_sq e = {
				    .qid = sq->qid,
				    .cqid = sq->cqid,
				    .size = sq->size,
				    .head = __atomic_load_n(&sq->head, __ATOMIC_RELAXED),
				    .tail = __atomic_load_n(&sq->tail, __ATOMIC_RELAXED),
				    .inflight = __atomic_load_n(&sq->inflight, __ATOMIC_RELAXED),
				    .state = (uint8_t)CTRLR_LOAD(sq->state),
				    .qprio = sq->qprio,
				};
				memcpy(p + off, &e, sizeof(e));
			}
			off += sizeof(struct ctrlr_tel_sq);
			st.num_sq++;
		}
		if (cq)
			st.num_cq++;
	}
	off += st.num_cq * sizeof(struct ctrlr_tel_cq);
	if (!p)
		return off;
	/* CQ entries after the SQ entries. */
	{
		size_t coff = sizeof(st) + st.num_sq * sizeof(struct ctrlr_tel_sq);

		for (uint32_t q = 0; q < ctrlr->num_queues; q++) {
			struct ctrlr_cq *cq = ctrlr->cqs[q];
			struct ctrlr_tel_cq e;

			if (!cq)
				continue;
			memset(&e, 0, sizeof(e));
			e.qid = cq->qid;
			e.vector = cq->vector;
			e.size = cq->size;
			e.head = __atomic_load_n(&cq->head, __ATOMIC_RELAXED);
			e.tail = __atomic_load_n(&cq->tail, __ATOMIC_RELAXED);
			e.state = (uint8_t)CTRLR_LOAD(cq->state);
			e.phase = cq->phase;
			e.ien = cq->ien;
			e.held = __atomic_load_n(&cq->held_head, __ATOMIC_RELAXED) != NULL;
			memcpy(p + coff, &e, sizeof(e));
			coff += sizeof(e);
		}
	}
	memcpy(st.magic, CTRLR_TEL_MAGIC, 8);
	st.version = 1;
	st.cc = ctrlr->cc.raw;
	st.csts = ctrlr->csts.raw;
	st.aqa = ctrlr->aqa.raw;
	st.asq = ctrlr->asq;
	st.acq = ctrlr->acq;
	st.uptime_us = evloop_now_us() - ctrlr->created_us;
	st.ctrlr_state = CTRLR_LOAD(ctrlr->state);
	st.page_size = ctrlr->page_size;
	ctrlr_get_stats(ctrlr, &cs);
	st.admin_cmds = cs.admin_cmds;
	st.io_cmds = cs.io_cmds;
	st.errors = cs.errors;
	st.media_errors = cs.media_errors;
	st.resets = cs.resets;
	st.aer_sent = cs.aer_sent;
	st.cq_full_holds = cs.cq_full_holds;
	st.temp_k = ctrlr_health_temp(ctrlr);
	st.spare = ctrlr_health_spare(ctrlr);
	st.used = ctrlr_health_used(ctrlr);
	st.critical_warning = ctrlr_dev(ctrlr)->health.critical_warning;
	st.dst_stc = ctrlr_dev(ctrlr)->dst.stc;
	st.san_state = (uint8_t)CTRLR_LOAD(ctrlr_dev(ctrlr)->san.state);
	st.san_sstat = ctrlr_dev(ctrlr)->san.sstat;
	st.fw_slot = ctrlr_dev(ctrlr)->fw.active;
	snprintf(st.reason, sizeof(st.reason), "%s", reason ? reason : "");
	memcpy(p, &st, sizeof(st));
	return off;
}

/* Data area 2: a count, then the error log entries newest first. */
static size_t ctrlr_tel_errors(struct ctrlr *ctrlr, uint8_t *p)
{
	uint64_t count = __atomic_load_n(&ctrlr->error_count, __ATOMIC_ACQUIRE);
	uint32_t n = count < CTRLR_ERROR_LOG_ENTRIES ? (uint32_t)count : CTRLR_ERROR_LOG_ENTRIES;
	size_t len = 16 + (size_t)n * sizeof(struct nvme_error_log_entry);

	if (!p)
		return len;
	memcpy(p, &count, 8);
	memcpy(p + 8, &n, 4);
	for (uint32_t i = 0; i < n; i++)
		memcpy(p + 16 + (size_t)i * sizeof(struct nvme_error_log_entry),
		       &ctrlr->error_log[(count - 1 - i) % CTRLR_ERROR_LOG_ENTRIES],
		       sizeof(struct nvme_error_log_entry));
	return len;
}

/* Takes a snapshot into `snap` (replacing the previous one). 0 or -ENOMEM. */
static int ctrlr_tel_capture(struct ctrlr *ctrlr, struct ctrlr_telemetry_snap *snap, uint8_t lid,
			     const char *reason)
{
	size_t b1 = ctrlr_tel_blocks(ctrlr_tel_state(ctrlr, NULL, reason));
	size_t b2 = ctrlr_tel_blocks(ctrlr_tel_errors(ctrlr, NULL));
	size_t len = (1 + b1 + b2) * NVME_TELEMETRY_BLOCK;
	struct nvme_telemetry_hdr *h;
	uint8_t *d;

	/* Last block numbers are 16 bits: far beyond what a state snapshot needs. */
	if (1 + b1 + b2 > 0xffff)
		return -ENOMEM;
	d = calloc(1, len);
	if (!d)
		return -ENOMEM;
	h = (struct nvme_telemetry_hdr *)d;
	h->lid = lid;
	h->ieee[0] = 0x58, h->ieee[1] = 0x4e, h->ieee[2] = 0x02;
	h->da1lb = (uint16_t)b1;
	h->da2lb = (uint16_t)(b1 + b2);
	h->da3lb = h->da2lb;
	snprintf((char *)h->reason, sizeof(h->reason), "%s", reason ? reason : "");
	ctrlr_tel_state(ctrlr, d + NVME_TELEMETRY_BLOCK, reason);
	ctrlr_tel_errors(ctrlr, d + (1 + b1) * NVME_TELEMETRY_BLOCK);
	free(snap->data);
	snap->data = d;
	snap->len = len;
	return 0;
}

void ctrlr_telemetry_event(struct ctrlr *ctrlr, const char *reason)
{
	struct ctrlr_telemetry *t = &ctrlr_dev(ctrlr)->tel;

	if (ctrlr_tel_capture(ctrlr, &t->ctrl, NVME_LOG_TELEMETRY_CTRL, reason)) {
		LOG_ERR(CTRLR_LOG, "%s: no memory for the controller-initiated telemetry (%s)",
			ctrlr->serial, reason);
		return;
	}
	t->ctrl_gen++;
	t->ctrl_avail = true;
	snprintf(t->ctrl_reason, sizeof(t->ctrl_reason), "%s", reason);
	LOG_INFO(CTRLR_LOG, "%s: controller-initiated telemetry captured: %s", ctrlr->serial,
		 reason);
	if (CTRLR_LOAD(ctrlr->state) == CTRLR_ST_ENABLED)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_TELEMETRY,
				 NVME_LOG_TELEMETRY_CTRL);
}

uint16_t ctrlr_log_telemetry(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_telemetry *t = &ctrlr_dev(ctrlr)->tel;
	const struct nvme_sqe *sqe = &req->sqe;
	uint8_t lsp = (sqe->cdw10 >> 8) & 0x7f;
	uint64_t off = (uint64_t)sqe->cdw12 | ((uint64_t)sqe->cdw13 << 32);
	bool rae = sqe->cdw10 & (1u << 15);
	struct ctrlr_telemetry_snap *snap;
	struct nvme_telemetry_hdr *h;
	uint8_t *buf;
	size_t n;

	/* Offsets are whole 512-byte blocks (5.16.1.8). */
	if (off % NVME_TELEMETRY_BLOCK) {
		req->error_loc = offsetof(struct nvme_sqe, cdw12);
		return NVME_SC_INVALID_FIELD;
	}
	if (lid == NVME_LOG_TELEMETRY_HOST) {
		/* Bit 0 Create; bits 2:1 the largest data area to create (MCDA, Base 2.1;
		 * 0 lets the controller choose): data area 1 only when asked. */
		if (lsp & ~0x7u) {
			req->error_loc = offsetof(struct nvme_sqe, cdw10) + 1;
			return NVME_SC_INVALID_FIELD;
		}
		if (lsp & NVME_TELEMETRY_LSP_CREATE) {
			if (ctrlr_tel_capture(ctrlr, &t->host, lid, "host-initiated"))
				return NVME_SC_INTERNAL;
			if (((lsp >> 1) & 3) == 1) {
				struct nvme_telemetry_hdr *ch = (void *)t->host.data;

				ch->da2lb = ch->da3lb = ch->da1lb;
				t->host.len = (1u + ch->da1lb) * NVME_TELEMETRY_BLOCK;
			}
			t->host_gen++;
			/* Persistent Event Log: Telemetry Log Create, the new header. */
			ctrlr_pel_add(ctrlr, NVME_PEL_TELEMETRY, t->host.data, NVME_TELEMETRY_BLOCK);
		}
		snap = &t->host;
	} else {
		if (lsp) {
			req->error_loc = offsetof(struct nvme_sqe, cdw10) + 1;
			return NVME_SC_INVALID_FIELD;
		}
		snap = &t->ctrl;
	}
	n = snap->data ? snap->len : NVME_TELEMETRY_BLOCK;
	buf = calloc(1, n);
	if (!buf)
		return NVME_SC_INTERNAL;
	if (snap->data)
		memcpy(buf, snap->data, n);
	/* The generation and availability fields say what is true now. */
	h = (struct nvme_telemetry_hdr *)buf;
	h->lid = lid;
	h->ieee[0] = 0x58, h->ieee[1] = 0x4e, h->ieee[2] = 0x02;
	if (lid == NVME_LOG_TELEMETRY_HOST)
		h->host_gen = t->host_gen;
	h->ctrl_avail = t->ctrl_avail;
	h->ctrl_gen = t->ctrl_gen;
	/* Reading the controller-initiated data (without Retain Asynchronous Event) takes it. */
	if (lid == NVME_LOG_TELEMETRY_CTRL && !rae)
		t->ctrl_avail = false;
	*out = buf;
	*len = n;
	return NVME_SC_SUCCESS;
}
