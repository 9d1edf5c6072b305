/* controller/lba_status.c - Get LBA Status (NVMe Base 2.0 section 5.9, OACS bit 9) and the LBA
 * Status Information log page (0Eh, section 5.16.1.16): the host asks which blocks may be
 * unrecoverable. nvme-emu knows exactly: the blocks Write Uncorrectable marked (ns_uncor.c), so a
 * "scan" (ATYPE 10h) finds what is tracked (ATYPE 11h) and nothing else. Admin thread. */
#include <stdlib.h>
#include <string.h>

#include "controller/nvm/nvm.h"

/* Descriptors per command: as many as the largest transfer we allow holds (64 KiB of data). */
#define CTRLR_LBAS_MAX_DESCS 4095u

static uint32_t ctrlr_lbas_min32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void ctrlr_admin_get_lba_status(struct ctrlr_req *req)
{
	struct ctrlr_lba_range *ranges;
	const struct nvme_sqe *sqe = &req->sqe;
	uint64_t slba = ctrlr_sqe_slba(sqe);
	uint64_t len = ((uint64_t)sqe->cdw12 + 1) * 4; /* MNDW is 0-based */
	uint32_t rl = sqe->cdw13 & 0xffff;
	uint8_t atype = sqe->cdw13 >> 24;
	struct nvme_lba_status_hdr hdr = { 0 };
	uint32_t n, max, emitted = 0;
	bool more;
	uint16_t st;

	if (atype != NVME_LBAS_ATYPE_UNTRACKED && atype != NVME_LBAS_ATYPE_TRACKED)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw13) + 3);
	if (len > 65536)
		return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
					      offsetof(struct nvme_sqe, cdw12));
	st = ctrlr_req_get_ns(req);
	if (st)
		return ctrlr_req_complete(req, st);
	if (slba >= __atomic_load_n(&req->ns->num_blocks, __ATOMIC_RELAXED)) {
		req->error_lba = slba;
		return ctrlr_req_complete_err(req, NVME_SC_LBA_RANGE,
					      offsetof(struct nvme_sqe, cdw10));
	}
	st = ctrlr_req_map_data(req, len, CTRLR_DMA_WRITE);
	if (st)
		return ctrlr_req_complete(req, st);
	max = len > sizeof(hdr) ? (uint32_t)((len - sizeof(hdr)) / sizeof(struct nvme_lba_status_desc))
				: 0;
	if (max > CTRLR_LBAS_MAX_DESCS)
		max = CTRLR_LBAS_MAX_DESCS;
	ranges = malloc((max ? max : 1) * sizeof(*ranges));
	if (!ranges)
		return ctrlr_req_complete(req, NVME_SC_INTERNAL);
	/* RL 0: from SLBA to the end of the namespace. */
	n = ctrlr_uncor_get(ctrlr_nvm_ns(req->ns)->uncor, slba, rl, ranges, max, &more, NULL);
	/* A range longer than a descriptor's 32-bit NLB takes several descriptors. */
	for (uint32_t i = 0; i < n && emitted < max; i++) {
		uint64_t s = ranges[i].slba, left = ranges[i].nlb;

		while (left && emitted < max) {
			struct nvme_lba_status_desc d = { .dslba = s, .nlb = ctrlr_lbas_min32(left) };

			ctrlr_req_iov_write(req, sizeof(hdr) + (uint64_t)emitted * sizeof(d), &d,
					   sizeof(d));
			s += d.nlb;
			left -= d.nlb;
			emitted++;
		}
		if (left)
			more = true;
		else if (emitted == max && i + 1 < n)
			more = true;
	}
	free(ranges);
	hdr.nlsd = emitted;
	hdr.cmpc = more ? NVME_LBAS_CMPC_MORE : NVME_LBAS_CMPC_COMPLETE;
	ctrlr_req_iov_write(req, 0, &hdr, sizeof(hdr));
	ctrlr_req_complete(req, NVME_SC_SUCCESS);
}

size_t ctrlr_log_lba_status(struct ctrlr *ctrlr, uint8_t *buf, size_t size)
{
	struct nvme_lba_status_log_hdr *hdr = (struct nvme_lba_status_log_hdr *)buf;
	size_t off = sizeof(*hdr);
	uint64_t blocks = 0;
	uint16_t gen = 0;

	/* One element per namespace with uncorrectable blocks, its descriptor(s) spanning the first
	 * to the last of them: the region the host should examine with Get LBA Status. */
	for (uint32_t nsid = 1; nsid <= CTRLR_MAX_NAMESPACES; nsid++) {
		struct ctrlr_ns *ns = ctrlr->ns[nsid - 1];
		struct ctrlr_lba_range r[1];
		struct nvme_lba_status_ns_elem *e;
		uint64_t first, last = 0, s;
		uint32_t nd = 0;
		bool more;
		uint16_t g;

		if (!ns || ns->removing)
			continue;
		if (!ctrlr_uncor_get(ctrlr_nvm_ns(ns)->uncor, 0, 0, r, 1, &more, &g)) {
			gen += g;
			continue;
		}
		gen += g;
		first = r[0].slba;
		pthread_mutex_lock(&ctrlr_nvm_ns(ns)->uncor->lock);
		for (uint32_t i = 0; i < ctrlr_nvm_ns(ns)->uncor->count; i++) {
			blocks += ctrlr_nvm_ns(ns)->uncor->r[i].nlb;
			last = ctrlr_nvm_ns(ns)->uncor->r[i].slba + ctrlr_nvm_ns(ns)->uncor->r[i].nlb;
		}
		pthread_mutex_unlock(&ctrlr_nvm_ns(ns)->uncor->lock);
		if (last <= first || off + sizeof(*e) + sizeof(struct nvme_lba_range_desc) > size)
			continue;
		e = (struct nvme_lba_status_ns_elem *)(buf + off);
		off += sizeof(*e);
		for (s = first; s < last && off + sizeof(struct nvme_lba_range_desc) <= size;) {
			struct nvme_lba_range_desc *d = (struct nvme_lba_range_desc *)(buf + off);

			d->rslba = s;
			d->rnlb = ctrlr_lbas_min32(last - s);
			s += d->rnlb;
			off += sizeof(*d);
			nd++;
		}
		e->neid = nsid;
		e->nlrd = nd;
		e->ratype = NVME_LBAS_ATYPE_TRACKED;
		hdr->nlslne++;
	}
	hdr->lslplen = (uint32_t)off;
	hdr->estulb = ctrlr_lbas_min32(blocks);
	hdr->lsgc = gen;
	return off;
}
