/* tests/unit/dpa/fake_hw.c - the hw/ functions dpa/ uses, over an in-memory
 * doorbell page, with recorded MSI-X raises. */
#include "tests/unit/dpa/fake_hw.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

struct hw_db {
	struct hw_dev *dev;
	uint32_t id;
	hw_db_notify_fn notify;
	void *arg;
	_Atomic bool started;
};

struct hw_dev {
	enum hw_db_mode mode;
	_Atomic uint32_t page[FAKE_HW_MAX_DBS];
	struct hw_db *_Atomic dbs[FAKE_HW_MAX_DBS];
	_Atomic uint64_t notifies;
};

struct hw_msix_vector {
	uint16_t num;
	int result;
	_Atomic uint64_t raised;
};

struct hw_dev *fake_hw_dev_create(enum hw_db_mode mode)
{
	struct hw_dev *dev = calloc(1, sizeof(*dev));

	if (dev)
		dev->mode = mode;
	return dev;
}

void fake_hw_dev_destroy(struct hw_dev *dev)
{
	free(dev);
}

enum hw_db_mode hw_dev_db_mode(const struct hw_dev *dev)
{
	return dev->mode;
}

struct hw_db *hw_db_create(struct hw_dev *dev, uint32_t db_id, hw_db_notify_fn notify, void *arg)
{
	struct hw_db *db;

	if (db_id >= FAKE_HW_MAX_DBS) {
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load(&dev->dbs[db_id])) {
		errno = EEXIST;
		return NULL;
	}
	db = calloc(1, sizeof(*db));
	if (!db) {
		errno = ENOMEM;
		return NULL;
	}
	db->dev = dev;
	db->id = db_id;
	db->notify = notify;
	db->arg = arg;
	atomic_store(&dev->dbs[db_id], db);
	return db;
}

int hw_db_start(struct hw_db *db)
{
	atomic_store(&db->started, true);
	return 0;
}

int hw_db_stop(struct hw_db *db)
{
	atomic_store(&db->started, false);
	return 0;
}

void hw_db_destroy(struct hw_db *db)
{
	atomic_store(&db->dev->dbs[db->id], NULL);
	free(db);
}

uint32_t hw_db_id(const struct hw_db *db)
{
	return db->id;
}

uint32_t hw_db_query_value(const struct hw_db *db)
{
	return atomic_load(&db->dev->page[db->id]);
}

int hw_db_modify_value(struct hw_db *db, uint32_t value)
{
	fake_hw_db_write(db->dev, db->id, value);
	return 0;
}

volatile const uint32_t *hw_db_value_ptr(const struct hw_db *db)
{
	return (volatile const uint32_t *)&db->dev->page[db->id];
}

void fake_hw_db_write(struct hw_dev *dev, uint32_t db_id, uint32_t value)
{
	struct hw_db *db;

	atomic_store_explicit(&dev->page[db_id], value, memory_order_release);
	if (dev->mode != HW_DB_MODE_TRAP)
		return;
	db = atomic_load(&dev->dbs[db_id]);
	if (db && atomic_load(&db->started)) {
		atomic_fetch_add(&dev->notifies, 1);
		db->notify(db, value, db->arg);
	}
}

uint64_t fake_hw_notifies(struct hw_dev *dev)
{
	return atomic_load(&dev->notifies);
}

struct hw_msix_vector *fake_hw_msix_create(uint16_t num, int result)
{
	struct hw_msix_vector *vec = calloc(1, sizeof(*vec));

	if (vec) {
		vec->num = num;
		vec->result = result;
	}
	return vec;
}

void fake_hw_msix_free(struct hw_msix_vector *vec)
{
	free(vec);
}

uint16_t hw_msix_vector_num(const struct hw_msix_vector *vec)
{
	return vec->num;
}

int hw_msix_vector_raise(struct hw_msix_vector *vec)
{
	atomic_fetch_add(&vec->raised, 1);
	return vec->result;
}

uint64_t fake_hw_msix_raised(struct hw_msix_vector *vec)
{
	return atomic_load(&vec->raised);
}

const char *hw_db_mode_name(enum hw_db_mode mode)
{
	return mode == HW_DB_MODE_MMAP ? "mmap" : "trap";
}

const char *hw_dev_vuid(const struct hw_dev *dev)
{
	return "fake-hw";
}
