/* tests/unit/hw/hw_test_util.h - shared helpers of the hw unit tests: the
 * NVMe-like type of DESIGN.md section 6 and a device on a private loop. */
#ifndef NVME_EMU_TESTS_UNIT_HW_TEST_UTIL_H
#define NVME_EMU_TESTS_UNIT_HW_TEST_UTIL_H

#include "hw/hw.h"

struct evloop;

/* BAR0 64-bit 16 KiB: stateful 0x0-0xff, DB by offset 0x1000 (4-byte DBs,
 * stride 4), MSI-X table 0x2000, PBA 0x3000; num_msix vectors. Not started. */
struct hw_pci_type *hw_test_nvme_type(uint16_t num_msix);
/* The above plus a DB-by-data region at BAR0 0x8000..0x8fff (4-byte DBs, id
 * in bytes 3..1) in a 64 KiB BAR0; started on "unlimited" when `start`. */
struct hw_pci_type *hw_test_full_type(bool start);
/* A device of `type` (started), not hot-plugged, on `loop`; NULL on error. */
struct hw_dev *hw_test_dev(struct hw_pci_type *type, struct evloop *loop,
			   const struct hw_dev_ops *ops, void *arg, enum hw_db_mode mode);

/* COMMAND memory space + bus master, as a driver enabling the function (hw_test_dev does it;
 * again after an FLR). 0 or the config write's error. */
int hw_test_dev_enable(struct hw_dev *dev);

#endif
