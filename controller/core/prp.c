/* controller/prp.c - PRP1/PRP2 and PRP lists to an iovec of local pointers (NVMe Base 2.0
 * section 4.1.1), a pure function with the guest-memory translator injected. */
#include <errno.h>

#include "controller/core/core.h"

/* Appends one mapped piece, merging it with the previous one when they are adjacent locally. */
static uint16_t ctrlr_prp_add(ctrlr_map_fn map, void *mctx, uint64_t addr, uint64_t len,
			      unsigned int dir, struct iovec *iov, int max_iov, int *n)
{
	void *p = map(mctx, addr, len, dir);

	if (!p)
		return NVME_SC_DATA_XFER_ERROR;
	if (*n > 0 && (char *)iov[*n - 1].iov_base + iov[*n - 1].iov_len == (char *)p) {
		iov[*n - 1].iov_len += len;
		return NVME_SC_SUCCESS;
	}
	if (*n >= max_iov)
		return NVME_SC_INVALID_FIELD;
	iov[*n].iov_base = p;
	iov[*n].iov_len = len;
	(*n)++;
	return NVME_SC_SUCCESS;
}

/* Pages that follow each other in guest memory (a host's buffer is mostly one run of them: SPDK
 * allocates from hugepages, Linux often gets contiguous pages) are translated as one run, not
 * page by page: a 128 KiB transfer costs one lookup instead of 32 (a third of the server's time
 * under 128 KiB writes from spdk_nvme_perf was spent translating PRP entries). */
struct ctrlr_prp_run {
	uint64_t addr, len;
	uint32_t page_size;
};

/* Maps the pending run. One that crosses from one of the client's DMA windows into the next
 * (guest-contiguous, separately mapped) is mapped page by page, as the entries came. */
static uint16_t ctrlr_prp_flush(struct ctrlr_prp_run *run, ctrlr_map_fn map, void *mctx,
				unsigned int dir, struct iovec *iov, int max_iov, int *n)
{
	uint64_t addr = run->addr, len = run->len;
	uint16_t st;

	run->len = 0;
	if (!len)
		return NVME_SC_SUCCESS;
	st = ctrlr_prp_add(map, mctx, addr, len, dir, iov, max_iov, n);
	if (st != NVME_SC_DATA_XFER_ERROR || len <= run->page_size - (addr & (run->page_size - 1)))
		return st;
	while (len) {
		uint64_t chunk = run->page_size - (addr & (run->page_size - 1));

		if (chunk > len)
			chunk = len;
		st = ctrlr_prp_add(map, mctx, addr, chunk, dir, iov, max_iov, n);
		if (st)
			return st;
		addr += chunk;
		len -= chunk;
	}
	return NVME_SC_SUCCESS;
}

/* One more piece of data: joins the pending run when it follows it in guest memory. */
static uint16_t ctrlr_prp_piece(struct ctrlr_prp_run *run, uint64_t addr, uint64_t len,
				ctrlr_map_fn map, void *mctx, unsigned int dir, struct iovec *iov,
				int max_iov, int *n)
{
	uint16_t st;

	if (run->len && run->addr + run->len == addr) {
		run->len += len;
		return NVME_SC_SUCCESS;
	}
	st = ctrlr_prp_flush(run, map, mctx, dir, iov, max_iov, n);
	run->addr = addr;
	run->len = len;
	return st;
}

/* Walks PRP list pages starting at `list` (qword aligned, may start mid-page) for `len` bytes of
 * page-aligned data. The last entry of a list page chains to the next list page when more than
 * one entry's worth of data remains. */
static uint16_t ctrlr_prp_walk_list(struct ctrlr_prp_run *run, ctrlr_map_fn map, void *mctx,
				    uint64_t list, uint64_t len, uint32_t page_size,
				    unsigned int dir, struct iovec *iov, int max_iov, int *n)
{
	uint32_t per_page = page_size / 8;
	/* A page can hold at most this many lists worth of data: bound the chain. */
	uint64_t max_lists = len / page_size + 2;

	while (len > 0) {
		uint32_t first = (uint32_t)((list & (page_size - 1)) / 8);
		uint32_t avail = per_page - first;
		uint64_t pages_left = (len + page_size - 1) / page_size;
		uint32_t nent = pages_left <= avail ? (uint32_t)pages_left : avail;
		const uint64_t *ent;
		uint16_t st;

		if (max_lists-- == 0)
			return NVME_SC_INVALID_FIELD;
		ent = map(mctx, list, (uint64_t)nent * 8, CTRLR_DMA_READ);
		if (!ent)
			return NVME_SC_DATA_XFER_ERROR;
		for (uint32_t i = 0; i < nent && len > 0; i++) {
			uint64_t e = __atomic_load_n(&ent[i], __ATOMIC_RELAXED);
			uint64_t chunk;

			if (i == nent - 1 && nent == avail && pages_left > avail) {
				/* Last slot of a full list page with data left: the next list,
				 * itself a PRP entry, so page aligned. */
				if (e & (page_size - 1))
					return NVME_SC_PRP_INVALID_OFFSET;
				list = e;
				break;
			}
			if (e & (page_size - 1))
				return NVME_SC_PRP_INVALID_OFFSET;
			chunk = len < page_size ? len : page_size;
			st = ctrlr_prp_piece(run, e, chunk, map, mctx, dir, iov, max_iov, n);
			if (st)
				return st;
			len -= chunk;
		}
	}
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_prp_map(ctrlr_map_fn map, void *mctx, uint64_t prp1, uint64_t prp2, uint64_t len,
		       uint32_t page_size, unsigned int dir, struct iovec *iov, int max_iov,
		       int *iovcnt)
{
	struct ctrlr_prp_run run = {.page_size = page_size};
	uint64_t first;
	uint16_t st;
	int n = 0;

	*iovcnt = 0;
	if (len == 0)
		return NVME_SC_SUCCESS;
	/* PRP1 may carry an offset, dword aligned (section 4.1.1). */
	if (prp1 & 3)
		return NVME_SC_PRP_INVALID_OFFSET;
	first = page_size - (prp1 & (page_size - 1));
	if (first >= len) {
		/* All in PRP1's page (every 4 KiB I/O on 4 KiB pages): one translation. */
		void *p = map(mctx, prp1, len, dir);

		if (!p)
			return NVME_SC_DATA_XFER_ERROR;
		if (max_iov < 1)
			return NVME_SC_INVALID_FIELD;
		iov[0].iov_base = p;
		iov[0].iov_len = len;
		*iovcnt = 1;
		return NVME_SC_SUCCESS;
	}
	run.addr = prp1;
	run.len = first;
	len -= first;
	st = NVME_SC_SUCCESS;
	if (len > 0 && len <= page_size) {
		/* PRP2 is the second (and last) data page. */
		if (prp2 & (page_size - 1))
			return NVME_SC_PRP_INVALID_OFFSET;
		st = ctrlr_prp_piece(&run, prp2, len, map, mctx, dir, iov, max_iov, &n);
	} else if (len > 0) {
		/* PRP2 points to a PRP list, qword aligned. */
		if (prp2 & 7)
			return NVME_SC_PRP_INVALID_OFFSET;
		st = ctrlr_prp_walk_list(&run, map, mctx, prp2, len, page_size, dir, iov, max_iov,
					 &n);
	}
	if (!st)
		st = ctrlr_prp_flush(&run, map, mctx, dir, iov, max_iov, &n);
	if (st)
		return st;
	*iovcnt = n;
	return NVME_SC_SUCCESS;
}
