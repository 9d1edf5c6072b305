/* host/nvme_host_vfu.c - the host driver's vfio-user transport: registers through BAR0 region
 * access, doorbells stored into the mmap'd doorbell page or trapped as (posted) region writes,
 * coalesced into REGION_WRITE_MULTI messages on demand, guest memory in the client's RAM
 * windows, MSI-X eventfds or polling while waiting. */
#include "host/nvme_host.h"

#include <errno.h>
#include <string.h>

#define NVME_HOST_VFU_BAR0 0
#define NVME_HOST_VFU_CFG 7
#define NVME_HOST_VFU_MSIX 2
#define NVME_HOST_VFU_DB_OFF 0x1000u

/* Sends the held doorbell writes as one REGION_WRITE_MULTI (posted, as QEMU sends it; a
 * single write goes as a plain REGION_WRITE). */
static int nvme_host_vfu_flush(struct nvme_host *h)
{
	struct vfu_client_write w[NVME_HOST_DB_PEND];
	uint32_t n = h->db_npend;
	int rc;

	if (!n)
		return 0;
	h->db_npend = 0;
	for (uint32_t i = 0; i < n; i++) {
		w[i] = (struct vfu_client_write){
		    .offset = NVME_HOST_VFU_DB_OFF + h->db_pend[i].idx * (4u << h->dstrd),
		    .region = NVME_HOST_VFU_BAR0,
		    .count = 4,
		};
		memcpy(w[i].data, &h->db_pend[i].value, 4);
	}
	if (n == 1)
		rc = vfu_client_region_write(h->tctx, NVME_HOST_VFU_BAR0, w[0].offset, w[0].data, 4,
					     h->posted);
	else
		rc = vfu_client_region_write_multi(h->tctx, w, n, h->posted);
	h->db_flushes++;
	h->db_flushed_writes += n;
	return rc;
}

static int nvme_host_vfu_coalesce_ok(struct nvme_host *h)
{
	/* Stores into the mmap'd page cost no message: nothing to coalesce. */
	if (h->db_page || !vfu_client_write_multi_ok(h->tctx))
		return -EOPNOTSUPP;
	return 0;
}

static int nvme_host_vfu_reg_read(struct nvme_host *h, uint32_t off, void *buf, uint32_t len)
{
	/* Held doorbells are older writes: they reach the device before this read. */
	int rc = nvme_host_vfu_flush(h);

	return rc ? rc : vfu_client_region_read(h->tctx, NVME_HOST_VFU_BAR0, off, buf, len);
}

static int nvme_host_vfu_reg_write(struct nvme_host *h, uint32_t off, const void *buf,
				   uint32_t len)
{
	int rc = nvme_host_vfu_flush(h);

	return rc ? rc
		  : vfu_client_region_write(h->tctx, NVME_HOST_VFU_BAR0, off, buf, len, h->posted);
}

static int nvme_host_vfu_ring(struct nvme_host *h, uint32_t idx, uint32_t value)
{
	uint32_t off = NVME_HOST_VFU_DB_OFF + idx * (4u << h->dstrd);

	if (h->db_page && off - NVME_HOST_VFU_DB_OFF < NVME_HOST_PAGE) {
		/* Pairs with the controller's read barrier after the doorbell: the SQE stores
		 * are visible before the tail. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		h->db_page[(off - NVME_HOST_VFU_DB_OFF) / 4] = value;
		return 0;
	}
	if (h->db_coalesce) {
		int rc = h->db_npend == NVME_HOST_DB_PEND ? nvme_host_vfu_flush(h) : 0;

		h->db_pend[h->db_npend].idx = idx;
		h->db_pend[h->db_npend].value = value;
		h->db_npend++;
		return rc;
	}
	return vfu_client_region_write(h->tctx, NVME_HOST_VFU_BAR0, off, &value, 4, h->posted);
}

static void *nvme_host_vfu_mem_ptr(struct nvme_host *h, uint64_t iova, uint64_t len)
{
	return vfu_client_ram_ptr(h->tctx, iova, len);
}

/* Interrupt-driven queues wait on their vector's eventfd; everything else serves the server's
 * requests (DMA_READ/WRITE into message windows) for a moment. Errors of the socket show up as
 * the register or completion that never comes, bounded by the caller's deadline. */
static int nvme_host_vfu_wait(struct nvme_host *h, struct nvme_host_queue *q, int timeout_ms)
{
	struct vfu_client *c = h->tctx;

	/* The doorbells that started what we wait for. */
	if (nvme_host_vfu_flush(h))
		return -EIO;
	if (q && q->irq && vfu_client_irq_fd(c, NVME_HOST_VFU_MSIX, q->cq_vector) >= 0)
		vfu_client_irq_wait(c, NVME_HOST_VFU_MSIX, q->cq_vector, timeout_ms);
	else
		vfu_client_serve(c, 1);
	return 0;
}

static const struct nvme_host_ops nvme_host_vfu_ops = {
    .reg_read = nvme_host_vfu_reg_read,
    .reg_write = nvme_host_vfu_reg_write,
    .ring = nvme_host_vfu_ring,
    .mem_ptr = nvme_host_vfu_mem_ptr,
    .wait = nvme_host_vfu_wait,
    .coalesce_ok = nvme_host_vfu_coalesce_ok,
    .flush = nvme_host_vfu_flush,
};

/* The MSI-X capability's offset in config space (capability list walk), or 0. */
static int nvme_host_vfu_find_msix(struct vfu_client *c, uint8_t *at)
{
	uint8_t ptr = 0;
	int rc = vfu_client_region_read(c, NVME_HOST_VFU_CFG, 0x34, &ptr, 1);

	/* At most 48 capabilities fit in the 192 bytes after the header: bound the walk. */
	for (int n = 0; !rc && ptr && n < 48; n++) {
		uint8_t id[2];

		rc = vfu_client_region_read(c, NVME_HOST_VFU_CFG, ptr, id, 2);
		if (rc)
			break;
		if (id[0] == 0x11) {
			*at = ptr;
			return 0;
		}
		ptr = id[1];
	}
	return rc ? rc : -ENODEV;
}

int nvme_host_init(struct nvme_host *h, struct vfu_client *c, uint64_t ram_iova,
		   uint64_t ram_size, uint32_t vectors)
{
	struct vfu_client_region bar0;
	uint16_t cmd = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = vfu_client_region_info(c, NVME_HOST_VFU_BAR0, &bar0);
	if (rc)
		return rc;
	/* COMMAND memory space and bus master, written only when not set yet (as Linux's
	 * pci_enable_device and pci_set_master): a server may hand the function over enabled. */
	rc = vfu_client_region_read(c, NVME_HOST_VFU_CFG, 0x4, &cmd, 2);
	if (!rc && (cmd & 0x6) != 0x6) {
		cmd |= 0x6;
		rc = vfu_client_region_write(c, NVME_HOST_VFU_CFG, 0x4, &cmd, 2, false);
	}
	if (rc)
		return rc;
	if (vectors) {
		uint16_t msix_ctl = 0x8000; /* MSI-X Enable */
		uint8_t at;

		rc = nvme_host_vfu_find_msix(c, &at);
		if (!rc)
			rc = vfu_client_region_write(c, NVME_HOST_VFU_CFG, at + 2u, &msix_ctl, 2, false);
		if (!rc)
			rc = vfu_client_irq_eventfds(c, NVME_HOST_VFU_MSIX, 0, vectors);
		if (rc)
			return rc;
	}
	rc = nvme_host_init_ops(h, &nvme_host_vfu_ops, c, ram_iova, ram_size);
	if (rc)
		return rc;
	h->c = c;
	h->db_page = vfu_client_region_ptr(c, NVME_HOST_VFU_BAR0, NVME_HOST_VFU_DB_OFF,
					   NVME_HOST_PAGE);
	return 0;
}
