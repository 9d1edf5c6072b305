/* transport/pcie_type.c - the NVMe PCI type (DESIGN.md section 6), built only
 * from the hw/ generic-function API. */
#include "transport/pcie.h"
#include "transport/pcie_internal.h"

#include <errno.h>
#include <stdio.h>

/* Windows' inbox driver fails to start with SPDK's 512 vectors. */
#define PCIE_NVME_DEFAULT_MAX_VECTORS 64

uint16_t pcie_nvme_max_vectors(const struct hw_profile *profile)
{
	uint32_t n = PCIE_NVME_DEFAULT_MAX_VECTORS;

	if (profile->max_msix && profile->max_msix < n)
		n = profile->max_msix;
	/* Two doorbells per queue pair, one queue pair per vector. */
	if (profile->max_db && profile->max_db / 2 < n)
		n = profile->max_db / 2;
	/* The PBA page has room for 32768 bits and the table for 256 vectors. */
	if (n > PCIE_MSIX_TABLE_SIZE / 16)
		n = PCIE_MSIX_TABLE_SIZE / 16;
	return (uint16_t)n;
}

void pcie_nvme_pci_ids(const struct pcie_ctrlr_opts *opts, struct hw_pci_ids *ids)
{
	*ids = (struct hw_pci_ids){
	    .vendor_id = opts && opts->vendor_id ? opts->vendor_id : PCIE_NVME_VENDOR_ID,
	    .device_id = opts && opts->device_id ? opts->device_id : PCIE_NVME_DEVICE_ID,
	    .revision = 0,
	    .class_code = 0x010802, /* mass storage, NVM, NVMe I/O controller */
	};
	ids->subsys_vendor_id =
	    opts && opts->subsys_vendor_id ? opts->subsys_vendor_id : ids->vendor_id;
	ids->subsys_id = opts && opts->subsys_id ? opts->subsys_id : ids->device_id;
}

struct hw_pci_type *pcie_nvme_type_create(const struct hw_profile *profile, uint16_t num_msix,
					  const struct hw_pci_ids *ids_in, uint64_t cmb_size,
					  uint64_t pmr_size, char *err, size_t err_len)
{
	struct hw_pci_ids ids = *ids_in;
	struct hw_pci_type *type = hw_pci_type_create("nvme");
	int rc;

	if (!type) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	rc = hw_pci_type_set_ids(type, &ids);
	if (!rc)
		rc = hw_pci_type_set_memory_bar(type, 0, PCIE_BAR0_LOG_SIZE, HW_BAR_MEM_64, false);
	if (!rc)
		rc = hw_pci_type_set_num_msix(type, num_msix);
	if (!rc)
		rc = hw_pci_type_add_stateful_region(type, 0, PCIE_REGS_START, PCIE_REGS_SIZE);
	/* 4-byte doorbells, stride 4 << CAP.DSTRD with DSTRD = 0. */
	if (!rc)
		rc = hw_pci_type_add_db_by_offset_region(type, 0, PCIE_DB_START, PCIE_DB_SIZE, 2, 2);
	if (!rc)
		rc = hw_pci_type_add_msix_table_region(type, 0, PCIE_MSIX_TABLE_START,
						       PCIE_MSIX_TABLE_SIZE);
	if (!rc)
		rc = hw_pci_type_add_msix_pba_region(type, 0, PCIE_MSIX_PBA_START,
						     PCIE_MSIX_PBA_SIZE);
	/* Device memory fills its BAR (CMBLOC.OFST 0, PMR at offset 0): prefetchable, 64-bit. */
	if (!rc && cmb_size)
		rc = hw_pci_type_set_memory_bar(type, PCIE_CMB_BAR, (uint8_t)__builtin_ctzll(cmb_size),
						HW_BAR_MEM_64, true);
	if (!rc && cmb_size)
		rc = hw_pci_type_add_memory_region(type, PCIE_CMB_BAR, 0, cmb_size);
	if (!rc && pmr_size)
		rc = hw_pci_type_set_memory_bar(type, PCIE_PMR_BAR, (uint8_t)__builtin_ctzll(pmr_size),
						HW_BAR_MEM_64, true);
	if (!rc && pmr_size)
		rc = hw_pci_type_add_memory_region(type, PCIE_PMR_BAR, 0, pmr_size);
	if (!rc && pmr_size)
		rc = hw_pci_type_add_stateful_region(type, 0, PCIE_PMR_REGS_START, PCIE_PMR_REGS_SIZE);
	if (rc) {
		snprintf(err, err_len, "building the NVMe type failed: %d", rc);
		goto out_destroy;
	}
	rc = hw_pci_type_start(type, profile, err, err_len);
	if (rc)
		goto out_destroy;
	return type;

out_destroy:
	hw_pci_type_destroy(type);
	errno = rc < 0 ? -rc : EINVAL;
	return NULL;
}
