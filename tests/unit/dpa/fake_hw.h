/* tests/unit/dpa/fake_hw.h - an in-memory stand-in for hw/'s doorbells and
 * MSI-X vectors, for testing dpa/ without a vfio-user device. */
#ifndef NVME_EMU_TESTS_UNIT_DPA_FAKE_HW_H
#define NVME_EMU_TESTS_UNIT_DPA_FAKE_HW_H

#include "hw/hw.h"

#include <stdint.h>

#define FAKE_HW_MAX_DBS 1024

/* A device with a doorbell page of FAKE_HW_MAX_DBS 4-byte DBs. */
struct hw_dev *fake_hw_dev_create(enum hw_db_mode mode);
void fake_hw_dev_destroy(struct hw_dev *dev);

/* A driver write of DB db_id: stores the value into the page (a plain store,
 * like a guest's in mmap mode) and, in trap mode, calls the notify hook if
 * the DB exists and is started - on the calling thread, which plays the
 * device's loop thread (one caller thread at a time). */
void fake_hw_db_write(struct hw_dev *dev, uint32_t db_id, uint32_t value);

/* Number of notify hooks called so far. */
uint64_t fake_hw_notifies(struct hw_dev *dev);

/* A vector whose raises are counted; raise returns `result` (0, 1, -ENODEV). */
struct hw_msix_vector *fake_hw_msix_create(uint16_t num, int result);
void fake_hw_msix_free(struct hw_msix_vector *vec);
uint64_t fake_hw_msix_raised(struct hw_msix_vector *vec);

#endif
