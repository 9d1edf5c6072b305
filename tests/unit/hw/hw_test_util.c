/* tests/unit/hw/hw_test_util.c - shared helpers of the hw unit tests. They
 * report failure by returning NULL (they also run from suite setup, outside
 * any CUnit test). */
#include <stdio.h>

#include "hw/hw_internal.h"
#include "hw/pci_config.h"
#include "vfu/vfu.h"
#include "tests/unit/hw/hw_test_util.h"

struct hw_pci_type *hw_test_nvme_type(uint16_t num_msix)
{
	struct hw_pci_type *t = hw_pci_type_create("nvme-like");
	struct hw_pci_ids ids = {.vendor_id = 0x4e58,
				 .device_id = 0x0001,
				 .subsys_vendor_id = 0x4e58,
				 .subsys_id = 0x1234,
				 .revision = 2,
				 .class_code = 0x010802};
	int rc = 0;

	if (!t)
		return NULL;
	rc |= hw_pci_type_set_ids(t, &ids);
	rc |= hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	rc |= hw_pci_type_set_num_msix(t, num_msix);
	rc |= hw_pci_type_add_stateful_region(t, 0, 0x0, 0x100);
	rc |= hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 2, 2);
	rc |= hw_pci_type_add_msix_table_region(t, 0, 0x2000, 0x1000);
	rc |= hw_pci_type_add_msix_pba_region(t, 0, 0x3000, 0x1000);
	if (rc) {
		hw_pci_type_destroy(t);
		return NULL;
	}
	return t;
}

struct hw_pci_type *hw_test_full_type(bool start)
{
	struct hw_pci_type *t = hw_test_nvme_type(8);
	char err[256] = "";

	if (!t)
		return NULL;
	if (hw_pci_type_set_memory_bar(t, 0, 16, HW_BAR_MEM_64, false) ||
	    hw_pci_type_add_db_by_data_region(t, 0, 0x8000, 0x1000, 2, 3, 1) ||
	    (start && hw_pci_type_start(t, hw_profile_find("unlimited"), err, sizeof(err)))) {
		fprintf(stderr, "full type: %s\n", err);
		hw_pci_type_destroy(t);
		return NULL;
	}
	return t;
}

struct hw_dev *hw_test_dev(struct hw_pci_type *type, struct evloop *loop,
			   const struct hw_dev_ops *ops, void *arg, enum hw_db_mode mode)
{
	struct hw_dev_config cfg = {
	    .vuid = "test-dev", .socket_path = "/nonexistent/test.sock", .db_mode = mode};

	struct hw_dev *dev = hw_dev_create(type, loop, &cfg, ops, arg);

	if (dev && hw_test_dev_enable(dev)) {
		hw_dev_destroy(dev);
		return NULL;
	}
	return dev;
}

int hw_test_dev_enable(struct hw_dev *dev)
{
	uint16_t cmd = HW_PCI_COMMAND_MEM | HW_PCI_COMMAND_MASTER;

	return hw_dev_ep_ops.region_access(dev, VFIO_PCI_CONFIG_REGION_INDEX, HW_PCI_COMMAND, &cmd,
					   sizeof(cmd), true);
}
