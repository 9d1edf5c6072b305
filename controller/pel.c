/* controller/pel.c - the Persistent Event Log (NVMe Base 2.0 5.16.1.14): events encoded as the
 * log carries them (24-byte event header, then the type's data) in a buffer of at most
 * CTRLR_PEL_MAX_BYTES, the oldest dropped first (the header's generation number counts drops).
 * Events recorded: Power-on or Reset, Firmware Commit, Timestamp Change, SMART / Health Log
 * Snapshot (when a critical warning appears), Sanitize Start and Completion, Telemetry Log Create.
 * A host reads it through a context (LSP 1 establishes it from the events so far, 0 reads it,
 * 2 releases it). The log lives in the daemon's memory: the function has no state file, so a
 * restart of the daemon starts a new log (with its Power-on event). Admin thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/ctrlr_internal.h"

#define CTRLR_PEL_HDR sizeof(struct nvme_pel_hdr)
#define CTRLR_PEL_EV sizeof(struct nvme_pel_event)

/* The Timestamp feature's value now (5.27.1.10): what the host set plus the time since, or the
 * time since the controller was created; milliseconds, 48 bits. */
static uint64_t ctrlr_pel_now_ms(const struct ctrlr *ctrlr)
{
	uint64_t now = evloop_now_us();

	if (ctrlr->feat.timestamp_set_us)
		return (ctrlr->feat.timestamp_ms + (now - ctrlr->feat.timestamp_set_us) / 1000) &
		       0xffffffffffffull;
	return ((now - ctrlr->created_us) / 1000) & 0xffffffffffffull;
}

int ctrlr_pel_init(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr->ext.pel;

	p->buf = malloc(CTRLR_PEL_MAX_BYTES);
	if (!p->buf)
		return -ENOMEM;
	p->power_cycles = 1;
	return 0;
}

void ctrlr_pel_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr->ext.pel;

	free(p->buf);
	free(p->ctx);
	p->buf = NULL;
	p->ctx = NULL;
}

void ctrlr_pel_add(struct ctrlr *ctrlr, uint8_t type, const void *data, uint16_t len)
{
	struct ctrlr_pel *p = &ctrlr->ext.pel;
	uint8_t reset[40];
	struct nvme_pel_event ev;
	size_t need;

	if (!p->buf)
		return;
	if (type == NVME_PEL_POWER_ON_RESET && !data) {
		/* Firmware revision, then one reset information descriptor (this controller). */
		uint64_t ms = ctrlr_pel_now_ms(ctrlr), pon = (evloop_now_us() - ctrlr->created_us) /
								  1000;
		uint32_t pc = (uint32_t)p->power_cycles;

		memset(reset, 0, sizeof(reset));
		memcpy(reset, ctrlr->fwrev, strnlen(ctrlr->fwrev, 8));
		memcpy(reset + 8, &ctrlr->cfg.cntlid, 2);
		reset[10] = 0; /* no firmware activation in this reset */
		reset[11] = CTRLR_LOAD(ctrlr->cnt.resets) ? 0x2 : 0x0; /* reset : power on */
		memcpy(reset + 24, &pc, 4);
		memcpy(reset + 28, &pon, 8);
		memcpy(reset + 36, &ms, 4); /* the descriptor's timestamp field: low 32 bits */
		data = reset;
		len = sizeof(reset);
	}
	need = CTRLR_PEL_EV + len;
	if (need > CTRLR_PEL_MAX_BYTES)
		return;
	/* Oldest events make room. */
	while (p->len + need > CTRLR_PEL_MAX_BYTES) {
		struct nvme_pel_event old;

		memcpy(&old, p->buf, sizeof(old));
		memmove(p->buf, p->buf + CTRLR_PEL_EV + old.el, p->len - CTRLR_PEL_EV - old.el);
		p->len -= CTRLR_PEL_EV + old.el;
		p->count--;
		p->gen++;
	}
	memset(&ev, 0, sizeof(ev));
	ev.etype = type;
	ev.etype_rev = 1;
	ev.ehl = (uint8_t)(CTRLR_PEL_EV - 3);
	ev.cntlid = ctrlr->cfg.cntlid;
	ev.ets = ctrlr_pel_now_ms(ctrlr);
	ev.el = len;
	memcpy(p->buf + p->len, &ev, sizeof(ev));
	if (len)
		memcpy(p->buf + p->len + CTRLR_PEL_EV, data, len);
	p->len += need;
	p->count++;
}

static void ctrlr_pel_header(struct ctrlr *ctrlr, struct nvme_pel_hdr *h, size_t events_len,
			     uint32_t count)
{
	struct ctrlr_pel *p = &ctrlr->ext.pel;
	uint64_t poh = (evloop_now_us() - ctrlr->created_us) / 3600000000ull;

	memset(h, 0, sizeof(*h));
	h->lid = NVME_LOG_PERSISTENT_EVENT;
	h->tnev = count;
	h->tll = CTRLR_PEL_HDR + events_len;
	h->rv = 1;
	h->lhl = (uint16_t)(CTRLR_PEL_HDR - 20); /* the header after its first 20 bytes */
	h->ts = ctrlr_pel_now_ms(ctrlr);
	memcpy(h->poh, &poh, 8);
	h->pcc = p->power_cycles;
	h->vid = ctrlr->cfg.pci_vid;
	h->ssvid = ctrlr->cfg.pci_ssvid;
	ctrlr_copy_padded(h->sn, ctrlr->serial, sizeof(h->sn));
	ctrlr_copy_padded(h->mn, ctrlr->model, sizeof(h->mn));
	snprintf(h->subnqn, sizeof(h->subnqn), "%s", ctrlr->subnqn);
	h->gen = p->gen;
	/* Supported Events Bitmap: bit n = event type n. */
	for (uint8_t t = NVME_PEL_SMART; t <= NVME_PEL_THERMAL; t++)
		if (t == NVME_PEL_SMART || t == NVME_PEL_FW_COMMIT || t == NVME_PEL_TIMESTAMP ||
		    t == NVME_PEL_POWER_ON_RESET || t == NVME_PEL_SANITIZE_START ||
		    t == NVME_PEL_SANITIZE_DONE || t == NVME_PEL_TELEMETRY || t == NVME_PEL_THERMAL ||
		    t == NVME_PEL_FORMAT_START || t == NVME_PEL_FORMAT_DONE)
			h->seb[t / 8] |= (uint8_t)(1u << (t % 8));
}

uint16_t ctrlr_log_pel(struct ctrlr_req *req, uint8_t **out, size_t *len)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_pel *p = &ctrlr->ext.pel;
	uint8_t action = (req->sqe.cdw10 >> 8) & 0x7f;
	uint8_t *buf;

	switch (action) {
	case NVME_PEL_ESTABLISH:
		/* A snapshot of the events so far: later events wait for the next context. */
		buf = malloc(CTRLR_PEL_HDR + p->len);
		if (!buf)
			return NVME_SC_INTERNAL;
		ctrlr_pel_header(ctrlr, (struct nvme_pel_hdr *)buf, p->len, p->count);
		memcpy(buf + CTRLR_PEL_HDR, p->buf, p->len);
		free(p->ctx);
		p->ctx = buf;
		p->ctx_len = CTRLR_PEL_HDR + p->len;
		/* fall through */
	case NVME_PEL_READ:
		if (!p->ctx)
			return NVME_SC_CMD_SEQ_ERROR;
		buf = malloc(p->ctx_len);
		if (!buf)
			return NVME_SC_INTERNAL;
		memcpy(buf, p->ctx, p->ctx_len);
		*out = buf;
		*len = p->ctx_len;
		return NVME_SC_SUCCESS;
	case NVME_PEL_RELEASE:
		free(p->ctx);
		p->ctx = NULL;
		p->ctx_len = 0;
		buf = calloc(1, CTRLR_PEL_HDR);
		if (!buf)
			return NVME_SC_INTERNAL;
		*out = buf;
		*len = 0;
		return NVME_SC_SUCCESS;
	default:
		req->error_loc = offsetof(struct nvme_sqe, cdw10) + 1;
		return NVME_SC_INVALID_FIELD;
	}
}

void ctrlr_pel_fw_commit(struct ctrlr *ctrlr, const char *rev, uint8_t ca, uint8_t fs)
{
	/* Old revision (running before), new revision (committed), commit action, slot, the
	 * commit's status (success) and a vendor result. */
	uint8_t ev[22];

	memset(ev, 0, sizeof(ev));
	memcpy(ev, ctrlr->fwrev, strnlen(ctrlr->fwrev, 8));
	memcpy(ev + 8, rev, strnlen(rev, 8));
	ev[16] = ca;
	ev[17] = fs;
	ctrlr_pel_add(ctrlr, NVME_PEL_FW_COMMIT, ev, sizeof(ev));
}

void ctrlr_pel_timestamp_change(struct ctrlr *ctrlr)
{
	/* Previous timestamp (0 if the host never set one), milliseconds since reset. */
	uint64_t ev[2];

	ev[0] = ctrlr->feat.timestamp_set_us ? ctrlr_pel_now_ms(ctrlr) : 0;
	ev[1] = (evloop_now_us() - ctrlr->created_us) / 1000;
	ctrlr_pel_add(ctrlr, NVME_PEL_TIMESTAMP, ev, sizeof(ev));
}

void ctrlr_pel_format(struct ctrlr *ctrlr, bool done, uint32_t nsid, uint32_t cdw10, uint16_t st)
{
	/* Start: NSID, the Format NVM Attributes we report (FNA 0), reserved, CDW10.
	 * Completion: NSID, smallest format progress indicator (not reported: 0), Format NVM
	 * Status (bit 0: failed), completion information, the completion's status field. */
	uint8_t ev[12];

	memset(ev, 0, sizeof(ev));
	memcpy(ev, &nsid, 4);
	if (!done) {
		memcpy(ev + 8, &cdw10, 4);
	} else {
		uint32_t sf = st;

		ev[5] = st ? 1 : 0;
		memcpy(ev + 8, &sf, 4);
	}
	ctrlr_pel_add(ctrlr, done ? NVME_PEL_FORMAT_DONE : NVME_PEL_FORMAT_START, ev, sizeof(ev));
}

void ctrlr_pel_thermal(struct ctrlr *ctrlr, uint16_t temp_k, uint16_t thresh_k)
{
	/* Thermal Excursion: degrees over the threshold, and the threshold (Celsius), each a
	 * byte (saturated). */
	uint8_t ev[2];
	int over = temp_k > thresh_k ? temp_k - thresh_k : 0;
	int thr_c = (int)thresh_k - 273;

	ev[0] = (uint8_t)(over > 255 ? 255 : over);
	ev[1] = (uint8_t)(thr_c < 0 ? 0 : thr_c > 255 ? 255 : thr_c);
	ctrlr_pel_add(ctrlr, NVME_PEL_THERMAL, ev, sizeof(ev));
}

void ctrlr_ext_health_event(struct ctrlr *ctrlr, uint8_t new_bits)
{
	uint8_t smart[512];
	char why[48];

	memset(smart, 0, sizeof(smart));
	ctrlr_log_smart_ctrl(ctrlr, smart);
	ctrlr_pel_add(ctrlr, NVME_PEL_SMART, smart, sizeof(smart));
	snprintf(why, sizeof(why), "SMART critical warning 0x%02x", new_bits);
	ctrlr_telemetry_event(ctrlr, why);
}
