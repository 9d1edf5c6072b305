/* controller/sgl.c - NVMe SGLs (data block, bit bucket, segment, last segment; NVMe Base 2.0
 * section 4.1.2) to an iovec of local pointers, a pure function with the translator injected. */
#include "controller/core/core.h"

/* Bit bucket data of reads goes here: its content is never read, so threads may share it. */
static unsigned char ctrlr_sgl_sink[64 * 1024];

static uint16_t ctrlr_sgl_add(struct iovec *iov, int max_iov, int *n, void *p, uint64_t len)
{
	if (*n > 0 && (char *)iov[*n - 1].iov_base + iov[*n - 1].iov_len == (char *)p &&
	    p != ctrlr_sgl_sink) {
		iov[*n - 1].iov_len += len;
		return NVME_SC_SUCCESS;
	}
	if (*n >= max_iov)
		return NVME_SC_SGL_INVALID_COUNT;
	iov[*n].iov_base = p;
	iov[*n].iov_len = len;
	(*n)++;
	return NVME_SC_SUCCESS;
}

/* One data-carrying descriptor: consumes up to *left bytes of the transfer. A descriptor longer
 * than what is left is accepted and truncated (SGLS bit 18). */
static uint16_t ctrlr_sgl_data(ctrlr_map_fn map, void *mctx, const struct nvme_sgl_desc *d,
			       unsigned int dir, struct iovec *iov, int max_iov, int *n,
			       uint64_t *left)
{
	uint8_t type = d->type >> 4;
	uint64_t len = d->length < *left ? d->length : *left;
	uint16_t st;

	if ((d->type & 0xf) != NVME_SGL_SUBTYPE_ADDRESS)
		return NVME_SC_SGL_INVALID_TYPE;
	if (len == 0)
		return NVME_SC_SUCCESS;
	if (type == NVME_SGL_TYPE_BIT_BUCKET) {
		/* Bit buckets discard read data; they make no sense for data to the device. */
		if (dir != CTRLR_DMA_WRITE)
			return NVME_SC_SGL_INVALID_TYPE;
		for (uint64_t done = 0; done < len;) {
			uint64_t c = len - done;

			if (c > sizeof(ctrlr_sgl_sink))
				c = sizeof(ctrlr_sgl_sink);
			st = ctrlr_sgl_add(iov, max_iov, n, ctrlr_sgl_sink, c);
			if (st)
				return st;
			done += c;
		}
	} else {
		void *p = map(mctx, d->addr, len, dir);

		if (!p)
			return NVME_SC_DATA_XFER_ERROR;
		st = ctrlr_sgl_add(iov, max_iov, n, p, len);
		if (st)
			return st;
	}
	*left -= len;
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_sgl_map(ctrlr_map_fn map, void *mctx, const struct nvme_sgl_desc *sgl, uint64_t len,
		       unsigned int dir, struct iovec *iov, int max_iov, int *iovcnt)
{
	struct nvme_sgl_desc d = *sgl;
	uint64_t left = len;
	unsigned int segments = 0;
	uint64_t descs = 0;
	uint16_t st;
	int n = 0;

	*iovcnt = 0;
	for (;;) {
		uint8_t type = d.type >> 4;
		const struct nvme_sgl_desc *seg;
		bool chained = false;
		uint32_t count;

		if (type == NVME_SGL_TYPE_DATA_BLOCK || type == NVME_SGL_TYPE_BIT_BUCKET) {
			st = ctrlr_sgl_data(map, mctx, &d, dir, iov, max_iov, &n, &left);
			if (st)
				return st;
			break;
		}
		if (type != NVME_SGL_TYPE_SEGMENT && type != NVME_SGL_TYPE_LAST_SEGMENT)
			return NVME_SC_SGL_INVALID_TYPE;
		if ((d.type & 0xf) != NVME_SGL_SUBTYPE_ADDRESS)
			return NVME_SC_SGL_INVALID_TYPE;
		if (d.length == 0 || d.length % sizeof(struct nvme_sgl_desc))
			return NVME_SC_SGL_INVALID_LAST;
		if (++segments > CTRLR_SGL_MAX_SEGMENTS)
			return NVME_SC_SGL_INVALID_COUNT;
		count = d.length / sizeof(struct nvme_sgl_desc);
		/* Bound the walk: a huge list of empty descriptors would only burn CPU. */
		descs += count;
		if (descs > CTRLR_SGL_MAX_DESCS)
			return NVME_SC_SGL_INVALID_COUNT;
		seg = map(mctx, d.addr, d.length, CTRLR_DMA_READ);
		if (!seg)
			return NVME_SC_DATA_XFER_ERROR;
		for (uint32_t i = 0; i < count; i++) {
			struct nvme_sgl_desc e;
			uint8_t et;

			__builtin_memcpy(&e, &seg[i], sizeof(e));
			et = e.type >> 4;
			if (et == NVME_SGL_TYPE_SEGMENT || et == NVME_SGL_TYPE_LAST_SEGMENT) {
				/* Only the last descriptor of a (non-last) segment may chain. */
				if (i != count - 1 || type == NVME_SGL_TYPE_LAST_SEGMENT)
					return NVME_SC_SGL_INVALID_LAST;
				d = e;
				chained = true;
				break;
			}
			if (et != NVME_SGL_TYPE_DATA_BLOCK && et != NVME_SGL_TYPE_BIT_BUCKET)
				return NVME_SC_SGL_INVALID_TYPE;
			st = ctrlr_sgl_data(map, mctx, &e, dir, iov, max_iov, &n, &left);
			if (st)
				return st;
		}
		if (chained)
			continue;
		/* A segment that does not chain must be the last one. */
		if (type != NVME_SGL_TYPE_LAST_SEGMENT)
			return NVME_SC_SGL_INVALID_LAST;
		break;
	}
	if (left)
		return NVME_SC_SGL_INVALID_DATA_LEN;
	*iovcnt = n;
	return NVME_SC_SUCCESS;
}
