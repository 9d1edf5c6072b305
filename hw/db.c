/* hw/db.c - doorbells: DB objects by id, driver writes into DB-by-offset and
 * DB-by-data regions, the by-data id extraction, notify hooks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "hw/hw_internal.h"

struct hw_db {
	struct hw_dev *dev;
	uint32_t id;
	int ridx; /* the DB region it belongs to */
	bool by_data;
	uint32_t slot; /* by offset: slot inside the region */
	uint32_t own;  /* value of by-data and narrow (< 4 byte) DBs */
	bool started;
	hw_db_notify_fn notify;
	void *arg;
};

uint32_t hw_db_id_from_data(uint64_t value, uint8_t msbyte, uint8_t lsbyte)
{
	uint32_t id = 0;

	if (msbyte >= 8 || lsbyte >= 8)
		return 0;
	/* DOCA DevEmu "DB by Data": msbyte > lsbyte means the id bytes are
	 * little endian (byte msbyte most significant); otherwise big endian
	 * (byte msbyte, the lower index, most significant). */
	if (msbyte >= lsbyte) {
		for (int i = msbyte; i >= lsbyte; i--)
			id = id << 8 | (uint8_t)(value >> (8 * i));
	} else {
		for (int i = msbyte; i <= lsbyte; i++)
			id = id << 8 | (uint8_t)(value >> (8 * i));
	}
	return id;
}

static uint32_t hw_db_width(const struct hw_region *r)
{
	return 1u << r->log_db_size;
}

static uint32_t hw_db_le_value(const uint8_t *p, uint32_t width)
{
	uint32_t v = 0;

	for (uint32_t i = 0; i < width; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint8_t *hw_db_slot_mem(const struct hw_db *db)
{
	const struct hw_region *r = &db->dev->type->regions[db->ridx];

	return db->dev->rs[db->ridx].mem + ((uint64_t)db->slot << r->log_stride);
}

/* Stores value in the DB's home (the shared slot for by-offset DBs, so
 * pollers of the page see it) and notifies if started. */
static void hw_db_store_and_notify(struct hw_db *db, uint32_t value)
{
	if (!db->by_data) {
		const struct hw_region *r = &db->dev->type->regions[db->ridx];
		uint8_t *p = hw_db_slot_mem(db);
		uint32_t width = hw_db_width(r);

		if (width == 4) {
			/* Pairs with the poller's load of hw_db_value_ptr(). */
			__atomic_store_n((uint32_t *)p, value, __ATOMIC_RELEASE);
		} else {
			for (uint32_t i = 0; i < width; i++)
				p[i] = (uint8_t)(value >> (8 * i));
		}
	}
	__atomic_store_n(&db->own, value, __ATOMIC_RELEASE);
	if (db->started && db->notify)
		db->notify(db, value, db->arg);
}

/* The by-offset region and slot of a global DB id: ids count the slots of
 * the type's DB-by-offset regions in declaration order. */
static int hw_db_find_slot(const struct hw_pci_type *type, uint32_t id, uint32_t *slot)
{
	uint64_t base = 0;

	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];
		uint64_t n;

		if (r->kind != HW_REGION_DB_BY_OFFSET)
			continue;
		n = r->size >> r->log_stride;
		if (id < base + n) {
			*slot = (uint32_t)(id - base);
			return (int)i;
		}
		base += n;
	}
	return -1;
}

static int hw_db_first_by_data(const struct hw_pci_type *type)
{
	for (unsigned int i = 0; i < type->nr_regions; i++)
		if (type->regions[i].kind == HW_REGION_DB_BY_DATA)
			return (int)i;
	return -1;
}

static struct hw_db *hw_db_find_by_data(struct hw_dev *dev, int ridx, uint32_t id)
{
	for (unsigned int i = 0; i < dev->nr_by_data; i++)
		if (dev->by_data[i]->ridx == ridx && dev->by_data[i]->id == id)
			return dev->by_data[i];
	return NULL;
}

/* Creates DB `id` in region ridx (slot for by-offset regions). */
static struct hw_db *hw_db_create_in(struct hw_dev *dev, int ridx, uint32_t id, uint32_t slot,
				     hw_db_notify_fn notify, void *arg)
{
	bool by_data = dev->type->regions[ridx].kind == HW_REGION_DB_BY_DATA;
	struct hw_db *db;

	if ((!by_data && dev->rs[ridx].slots[slot]) ||
	    (by_data && hw_db_find_by_data(dev, ridx, id))) {
		errno = EEXIST;
		return NULL;
	}
	if (dev->nr_dbs >= dev->type->profile->max_db) {
		errno = ENOSPC;
		return NULL;
	}
	if (by_data && dev->nr_by_data == dev->cap_by_data) {
		unsigned int cap = dev->cap_by_data ? dev->cap_by_data * 2 : 16;
		struct hw_db **n = realloc(dev->by_data, cap * sizeof(*n));

		if (!n)
			return NULL;
		dev->by_data = n;
		dev->cap_by_data = cap;
	}
	db = calloc(1, sizeof(*db));
	if (!db)
		return NULL;
	*db = (struct hw_db){.dev = dev,
			     .id = id,
			     .ridx = ridx,
			     .by_data = by_data,
			     .slot = slot,
			     .notify = notify,
			     .arg = arg};
	if (!by_data) {
		dev->rs[ridx].slots[slot] = db;
		db->own =
		    hw_db_le_value(hw_db_slot_mem(db), hw_db_width(&dev->type->regions[ridx]));
	} else {
		dev->by_data[dev->nr_by_data++] = db;
	}
	dev->nr_dbs++;
	return db;
}

struct hw_db *hw_db_create(struct hw_dev *dev, uint32_t db_id, hw_db_notify_fn notify, void *arg)
{
	uint32_t slot = 0;
	int ridx = hw_db_find_slot(dev->type, db_id, &slot);

	if (ridx < 0)
		ridx = hw_db_first_by_data(dev->type);
	if (ridx < 0) {
		errno = EINVAL;
		return NULL;
	}
	return hw_db_create_in(dev, ridx, db_id, slot, notify, arg);
}

struct hw_db *hw_db_create_at(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
			      uint32_t db_id, hw_db_notify_fn notify, void *arg)
{
	const struct hw_pci_type *type = dev->type;

	for (unsigned int i = 0; i < type->nr_regions; i++) {
		const struct hw_region *r = &type->regions[i];

		if (r->bar_id != bar_id || r->start != region_start)
			continue;
		if (r->kind == HW_REGION_DB_BY_DATA)
			return hw_db_create_in(dev, (int)i, db_id, 0, notify, arg);
		if (r->kind == HW_REGION_DB_BY_OFFSET && db_id < dev->rs[i].nr_slots)
			return hw_db_create_in(dev, (int)i, db_id, db_id, notify, arg);
		break;
	}
	errno = EINVAL;
	return NULL;
}

int hw_db_start(struct hw_db *db)
{
	db->started = true;
	return 0;
}

int hw_db_stop(struct hw_db *db)
{
	db->started = false;
	return 0;
}

void hw_db_destroy(struct hw_db *db)
{
	struct hw_dev *dev;

	if (!db)
		return;
	dev = db->dev;
	if (!db->by_data) {
		dev->rs[db->ridx].slots[db->slot] = NULL;
	} else {
		for (unsigned int i = 0; i < dev->nr_by_data; i++) {
			if (dev->by_data[i] == db) {
				dev->by_data[i] = dev->by_data[--dev->nr_by_data];
				break;
			}
		}
	}
	dev->nr_dbs--;
	free(db);
}

uint32_t hw_db_id(const struct hw_db *db)
{
	return db->id;
}

uint32_t hw_db_query_value(const struct hw_db *db)
{
	if (!db->by_data) {
		const struct hw_region *r = &db->dev->type->regions[db->ridx];
		const uint8_t *p = hw_db_slot_mem(db);

		if (hw_db_width(r) == 4)
			return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
		return hw_db_le_value(p, hw_db_width(r));
	}
	return __atomic_load_n(&db->own, __ATOMIC_ACQUIRE);
}

int hw_db_modify_value(struct hw_db *db, uint32_t value)
{
	hw_db_store_and_notify(db, value);
	return 0;
}

volatile const uint32_t *hw_db_value_ptr(const struct hw_db *db)
{
	/* 4-byte by-offset DBs are read in place (the mmap'd page in mmap mode);
	 * narrower ones would drag neighbouring bytes into a 32-bit load, so
	 * their pointer is the copy kept on trapped writes. */
	if (!db->by_data && hw_db_width(&db->dev->type->regions[db->ridx]) == 4)
		return (volatile const uint32_t *)hw_db_slot_mem(db);
	return &db->own;
}

int hw_db_guest_write(struct hw_dev *dev, int ridx, uint64_t offset, const void *buf, uint32_t len)
{
	const struct hw_region *r = &dev->type->regions[ridx];
	uint32_t width = hw_db_width(r);
	uint32_t value;
	struct hw_db *db;

	/* DOCA: a DB write must be exactly the DB size, at a DB-aligned offset. */
	if (len != width || offset % width) {
		dev->db_invalid_writes++;
		LOG_GUEST_ERR(HW_LOG_COMP,
			      "%s: DB write of %u bytes at region offset 0x%llx dropped", dev->vuid,
			      len, (unsigned long long)offset);
		return 0;
	}
	value = hw_db_le_value(buf, width);
	if (r->kind == HW_REGION_DB_BY_DATA) {
		uint32_t id = hw_db_id_from_data(value, r->db_msbyte, r->db_lsbyte);

		db = hw_db_find_by_data(dev, ridx, id);
		if (!db) {
			dev->db_invalid_writes++;
			LOG_GUEST_ERR(HW_LOG_COMP, "%s: DB-by-data write for unknown DB %u",
				      dev->vuid, id);
			return 0;
		}
		dev->db_writes++;
		hw_db_store_and_notify(db, value);
		return 0;
	}
	uint64_t slot = offset >> r->log_stride;

	if (offset & ((1ull << r->log_stride) - 1)) {
		/* Inside the stride but past the doorbell: DOCA leaves it undefined;
		 * we drop it. */
		dev->db_invalid_writes++;
		return 0;
	}
	db = dev->rs[ridx].slots[slot];
	if (!db) {
		/* Kept in the page so a DB created later sees it; only the owner of
		 * the device is told. */
		memcpy(dev->rs[ridx].mem + offset, buf, len);
		dev->db_invalid_writes++;
		if (dev->ops && dev->ops->db_unowned_write)
			dev->ops->db_unowned_write(dev, r->bar_id, r->start, (uint32_t)slot, value,
						   dev->arg);
		return 0;
	}
	dev->db_writes++;
	hw_db_store_and_notify(db, value);
	return 0;
}

void hw_dbs_fini(struct hw_dev *dev)
{
	for (unsigned int i = 0; i < dev->type->nr_regions; i++) {
		struct hw_dev_region *rs = &dev->rs[i];

		for (uint32_t s = 0; rs->slots && s < rs->nr_slots; s++)
			if (rs->slots[s])
				hw_db_destroy(rs->slots[s]);
	}
	while (dev->nr_by_data)
		hw_db_destroy(dev->by_data[0]);
	free(dev->by_data);
	dev->by_data = NULL;
	dev->cap_by_data = 0;
}
