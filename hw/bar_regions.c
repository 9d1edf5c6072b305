/* hw/bar_regions.c - BAR backing (a memfd for mmap'd doorbell pages and device memory) and the
 * dispatch of driver BAR accesses to the region kinds. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"

/* A DB-by-offset region can be a sparse-mmap area only if it covers whole
 * host pages (QEMU maps areas with page granularity), and is one only in mmap
 * mode; device memory (page aligned by construction) always is. */
bool hw_region_mappable(const struct hw_dev *dev, const struct hw_region *r)
{
	if (r->kind == HW_REGION_MEMORY)
		return true;
	return dev->db_mode == HW_DB_MODE_MMAP && r->kind == HW_REGION_DB_BY_OFFSET &&
	       !(r->start % HW_PAGE_SIZE) && !(r->size % HW_PAGE_SIZE);
}

static bool hw_bar_has_mappable(const struct hw_dev *dev, uint8_t bar_id)
{
	const struct hw_pci_type *type = dev->type;

	for (unsigned int i = 0; i < type->nr_regions; i++)
		if (type->regions[i].bar_id == bar_id && hw_region_mappable(dev, &type->regions[i]))
			return true;
	return false;
}

static int hw_bar_map_create(struct hw_dev *dev, uint8_t bar_id)
{
	uint64_t size = dev->type->bars[bar_id].size;
	char name[80];
	int fd;
	void *p;

	snprintf(name, sizeof(name), "%s-bar%u", dev->vuid, bar_id);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* The client gets this fd: sealed against resizing (and further seal
	 * changes) before it is shared, so it cannot shrink the file under our
	 * mapping and kill us with SIGBUS. */
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out_close;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto out_close;
	dev->bar_memfd[bar_id] = fd;
	dev->bar_map[bar_id] = p;
	return 0;

out_close:;
	int rc = -errno;

	close(fd);
	return rc;
}

int hw_bars_init(struct hw_dev *dev)
{
	const struct hw_pci_type *type = dev->type;
	int rc;

	for (unsigned int b = 0; b < HW_NUM_BARS; b++) {
		dev->bar_memfd[b] = -1;
		dev->bar_map[b] = NULL;
	}
	dev->db_mapped = false;
	for (unsigned int b = 0; b < HW_NUM_BARS; b++) {
		if (!type->bars[b].size || !hw_bar_has_mappable(dev, (uint8_t)b))
			continue;
		rc = hw_bar_map_create(dev, (uint8_t)b);
		if (rc)
			goto out_fini;
	}
	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];
		struct hw_dev_region *rs = &dev->rs[i];

		if (r->kind == HW_REGION_MEMORY) {
			/* The BAR's memfd is fresh (zeroed) and lives as long as the device. */
			rs->mem = dev->bar_map[r->bar_id] + r->start;
			rs->mem_in_bar_map = true;
			continue;
		}
		if (r->kind != HW_REGION_DB_BY_OFFSET)
			continue;
		rs->nr_slots = (uint32_t)(r->size >> r->log_stride);
		rs->slots = calloc(rs->nr_slots ? rs->nr_slots : 1, sizeof(*rs->slots));
		if (!rs->slots) {
			rc = -ENOMEM;
			goto out_fini;
		}
		if (dev->bar_map[r->bar_id] && hw_region_mappable(dev, r)) {
			rs->mem = dev->bar_map[r->bar_id] + r->start;
			rs->mem_in_bar_map = true;
			dev->db_mapped = true;
		} else {
			rs->mem = calloc(1, r->size);
			if (!rs->mem) {
				rc = -ENOMEM;
				goto out_fini;
			}
		}
	}
	return 0;

out_fini:
	hw_bars_fini(dev);
	return rc;
}

void hw_bars_fini(struct hw_dev *dev)
{
	const struct hw_pci_type *type = dev->type;

	for (unsigned int i = 0; i < type->nr_regions; i++) {
		struct hw_dev_region *rs = &dev->rs[i];

		if (type->regions[i].kind == HW_REGION_MEMORY) {
			rs->mem = NULL;
			rs->mem_in_bar_map = false;
			continue;
		}
		if (type->regions[i].kind != HW_REGION_DB_BY_OFFSET)
			continue;
		if (!rs->mem_in_bar_map)
			free(rs->mem);
		free(rs->slots);
		rs->mem = NULL;
		rs->slots = NULL;
		rs->mem_in_bar_map = false;
	}
	for (unsigned int b = 0; b < HW_NUM_BARS; b++) {
		if (dev->bar_map[b])
			munmap(dev->bar_map[b], type->bars[b].size);
		if (dev->bar_memfd[b] >= 0)
			close(dev->bar_memfd[b]);
		dev->bar_map[b] = NULL;
		dev->bar_memfd[b] = -1;
	}
}

void hw_bars_reset(struct hw_dev *dev)
{
	for (unsigned int i = 0; i < dev->type->nr_regions; i++)
		if (dev->type->regions[i].kind == HW_REGION_DB_BY_OFFSET && dev->rs[i].mem)
			memset(dev->rs[i].mem, 0, dev->type->regions[i].size);
}

void hw_bar_region_desc(struct hw_dev *dev, uint8_t bar_id, struct vfu_region_desc *desc)
{
	const struct hw_pci_type *type = dev->type;
	const struct hw_bar *bar = &type->bars[bar_id];

	memset(desc, 0, sizeof(*desc));
	desc->mmap_fd = -1;
	if (!bar->present || bar->upper_half)
		return;
	desc->size = bar->size;
	desc->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
	if (dev->bar_memfd[bar_id] < 0)
		return;
	/* Sparse areas: exactly the mappable regions (page-aligned DB-by-offset regions in mmap
	 * mode, device memory), never the MSI-X table or PBA (QEMU does not trim sparse areas). */
	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];

		if (r->bar_id != bar_id || !hw_region_mappable(dev, r))
			continue;
		if (desc->nr_sparse == sizeof(desc->sparse) / sizeof(desc->sparse[0]))
			break;
		desc->sparse[desc->nr_sparse].offset = r->start;
		desc->sparse[desc->nr_sparse].size = r->size;
		desc->nr_sparse++;
	}
	desc->flags |= VFIO_REGION_INFO_FLAG_MMAP;
	desc->mmap_fd = dev->bar_memfd[bar_id];
	desc->mmap_offset = 0;
}

int hw_bar_access(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, void *buf, uint32_t len,
		  bool is_write)
{
	const struct hw_pci_type *type = dev->type;
	int ridx;

	if (bar_id >= HW_NUM_BARS || !type->bars[bar_id].size || !len ||
	    offset >= type->bars[bar_id].size || len > type->bars[bar_id].size - offset)
		return -EINVAL;
	/* Memory (I/O) Space Enable clear: the function does not decode its BARs (PCI 3.0
	 * 6.2.2). A read ends as an Unsupported Request, which the root complex turns into all
	 * ones; a write is dropped. Stores into mmap'd pages cannot be gated: a VMM unmaps them
	 * from the guest itself while the bit is clear, as QEMU does. */
	if (!(type->bars[bar_id].is_io ? hw_pci_config_io_enabled(&dev->cfg)
				       : hw_pci_config_mem_enabled(&dev->cfg))) {
		LOG_GUEST_ERR(HW_LOG_COMP, "%s: BAR %u %s at 0x%llx with %s space disabled",
			      dev->vuid, bar_id, is_write ? "write" : "read",
			      (unsigned long long)offset, type->bars[bar_id].is_io ? "I/O" : "memory");
		dev->bar_disabled_accesses++;
		if (!is_write)
			memset(buf, 0xff, len);
		return 0;
	}
	ridx = hw_pci_type_find_region(type, bar_id, offset, len);
	if (ridx < 0) {
		/* Unclaimed BAR space, or an access straddling two regions: reads
		 * as 0, writes are dropped. */
		LOG_GUEST_ERR(HW_LOG_COMP, "%s: BAR %u %s of %u bytes at 0x%llx hits no region",
			      dev->vuid, bar_id, is_write ? "write" : "read", len,
			      (unsigned long long)offset);
		if (!is_write)
			memset(buf, 0, len);
		return 0;
	}
	const struct hw_region *r = &type->regions[ridx];
	uint64_t rel = offset - r->start;

	switch (r->kind) {
	case HW_REGION_STATEFUL:
		if (!is_write && dev->ops && dev->ops->stateful_read &&
		    dev->ops->stateful_read(dev, bar_id, offset, len, dev->arg) == HW_EVENT_ASYNC) {
			dev->rd.held = true;
			dev->rd.ridx = ridx;
			dev->rd.rel = rel;
			dev->rd.buf = buf;
			dev->rd.len = len;
			return HW_EVENT_ASYNC;
		}
		return hw_stateful_guest_access(dev, ridx, rel, buf, len, is_write);
	case HW_REGION_DB_BY_OFFSET:
		if (is_write)
			return hw_db_guest_write(dev, ridx, rel, buf, len);
		memcpy(buf, dev->rs[ridx].mem + rel, len);
		return 0;
	case HW_REGION_DB_BY_DATA:
		if (is_write)
			return hw_db_guest_write(dev, ridx, rel, buf, len);
		memset(buf, 0, len); /* DOCA: the driver should not read DBs */
		return 0;
	case HW_REGION_MSIX_TABLE:
		return hw_msix_table_access(&dev->msix, rel, buf, len, is_write);
	case HW_REGION_MSIX_PBA:
		return hw_msix_pba_access(&dev->msix, rel, buf, len, is_write);
	case HW_REGION_MEMORY:
		/* Plain memory, as the client's own mapping sees it. */
		if (is_write)
			memcpy(dev->rs[ridx].mem + rel, buf, len);
		else
			memcpy(buf, dev->rs[ridx].mem + rel, len);
		return 0;
	}
	return -EINVAL;
}

void hw_dev_read_done(struct hw_dev *dev)
{
	if (!dev->rd.held)
		return;
	dev->rd.held = false;
	hw_stateful_guest_access(dev, dev->rd.ridx, dev->rd.rel, dev->rd.buf, dev->rd.len, false);
	if (dev->ep)
		vfu_endpoint_resume(dev->ep, 0);
}

void *hw_dev_memory(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start, uint64_t *size)
{
	const struct hw_pci_type *type = dev->type;

	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];

		if (r->kind == HW_REGION_MEMORY && r->bar_id == bar_id && r->start == region_start) {
			*size = r->size;
			return dev->rs[i].mem;
		}
	}
	errno = EINVAL;
	return NULL;
}
