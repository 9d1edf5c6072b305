/* tests/unit/hw/db_test.c - doorbells: DB-by-data id extraction (DOCA's
 * example and big endian), DB objects, driver writes by offset and by data,
 * notify/start/stop, modify/query, the max_db limit, mmap'd doorbell page. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/hw/hw_test_util.h"

static struct evloop *loop;
static unsigned int notes;
static uint32_t note_value;
static struct hw_db *note_db;

static void db_notify(struct hw_db *db, uint32_t value, void *arg)
{
	notes++;
	note_value = value;
	note_db = db;
}

static int db_setup(void)
{
	loop = evloop_create();
	return loop ? 0 : -1;
}

static int db_teardown(void)
{
	evloop_destroy(loop);
	return 0;
}

static void test_id_from_data(void)
{
	/* DOCA worked example: 4-byte DB, LSB 1, MSB 3, little endian. */
	CU_ASSERT_EQUAL(hw_db_id_from_data(0xCCDDEEFF, 3, 1), 0xCCDDEE);
	/* Big endian: MSB index below LSB index; byte 1 most significant. */
	CU_ASSERT_EQUAL(hw_db_id_from_data(0xCCDDEEFF, 1, 3), 0xEEDDCC);
	CU_ASSERT_EQUAL(hw_db_id_from_data(0x11223344, 0, 1), 0x4433);
	CU_ASSERT_EQUAL(hw_db_id_from_data(0x11223344, 1, 0), 0x3344);
	CU_ASSERT_EQUAL(hw_db_id_from_data(0x11223344, 2, 2), 0x22);
	CU_ASSERT_EQUAL(hw_db_id_from_data(0x1122334455667788ull, 7, 4), 0x11223344);
	CU_ASSERT_EQUAL(hw_db_id_from_data(0x11223344, 8, 0), 0); /* invalid index */
}

static void db_write(struct hw_dev *dev, uint64_t off, uint32_t v, uint32_t len)
{
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, off, &v, len, true), 0);
}

static void test_by_offset(void)
{
	struct hw_pci_type *t = hw_test_full_type(true);

	CU_ASSERT_FATAL(t != NULL);
	struct hw_dev *dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_TRAP);

	CU_ASSERT_FATAL(dev != NULL);
	notes = 0;
	struct hw_db *db = hw_db_create(dev, 3, db_notify, NULL);

	CU_ASSERT_FATAL(db != NULL);
	CU_ASSERT_EQUAL(hw_db_id(db), 3);
	/* Stopped: stored, not notified. */
	db_write(dev, 0x1000 + 3 * 4, 7, 4);
	CU_ASSERT_EQUAL(notes, 0);
	CU_ASSERT_EQUAL(hw_db_query_value(db), 7);
	hw_db_start(db);
	db_write(dev, 0x1000 + 3 * 4, 8, 4);
	CU_ASSERT_EQUAL(notes, 1);
	CU_ASSERT_EQUAL(note_value, 8);
	CU_ASSERT_PTR_EQUAL(note_db, db);
	CU_ASSERT_EQUAL(*hw_db_value_ptr(db), 8);
	/* Wrong size: dropped and counted. */
	db_write(dev, 0x1000 + 3 * 4, 9, 2);
	CU_ASSERT_EQUAL(hw_db_query_value(db), 8);
	CU_ASSERT_EQUAL(notes, 1);
	/* DB with no object: stored, counted, seen by a later create. */
	db_write(dev, 0x1000 + 5 * 4, 42, 4);
	struct hw_dev_stats st;

	hw_dev_get_stats(dev, &st);
	CU_ASSERT_EQUAL(st.db_writes, 2);
	CU_ASSERT_EQUAL(st.db_invalid_writes, 2);
	struct hw_db *db5 = hw_db_create(dev, 5, db_notify, NULL);

	CU_ASSERT_FATAL(db5 != NULL);
	CU_ASSERT_EQUAL(hw_db_query_value(db5), 42);
	/* modify = driver write. */
	CU_ASSERT_EQUAL(hw_db_modify_value(db, 100), 0);
	CU_ASSERT_EQUAL(notes, 2);
	CU_ASSERT_EQUAL(note_value, 100);
	uint32_t rd = 0;

	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x1000 + 3 * 4, &rd, 4, false), 0);
	CU_ASSERT_EQUAL(rd, 100);
	hw_db_stop(db);
	db_write(dev, 0x1000 + 3 * 4, 101, 4);
	CU_ASSERT_EQUAL(notes, 2);
	/* Errors. */
	CU_ASSERT_PTR_NULL(hw_db_create(dev, 3, db_notify, NULL));
	CU_ASSERT_EQUAL(errno, EEXIST);
	hw_db_destroy(db);
	db = hw_db_create(dev, 3, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL(db);
	/* FLR zeroes the doorbell page. */
	CU_ASSERT_EQUAL(hw_dev_flr_start(dev, HW_DEV_EV_FLR), 0);
	CU_ASSERT_EQUAL(hw_db_query_value(db), 0);
	hw_dev_destroy(dev); /* frees the DBs left */
	hw_pci_type_destroy(t);
}

static void test_by_data(void)
{
	struct hw_pci_type *t = hw_test_full_type(true);

	CU_ASSERT_FATAL(t != NULL);
	struct hw_dev *dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_TRAP);

	CU_ASSERT_FATAL(dev != NULL);
	notes = 0;
	struct hw_db *db = hw_db_create(dev, 0xCCDDEE, db_notify, NULL);

	CU_ASSERT_FATAL(db != NULL);
	hw_db_start(db);
	/* Any offset of the region: the id is in the value. */
	db_write(dev, 0x8000, 0xCCDDEEFF, 4);
	CU_ASSERT_EQUAL(notes, 1);
	CU_ASSERT_EQUAL(note_value, 0xCCDDEEFF);
	CU_ASSERT_EQUAL(hw_db_query_value(db), 0xCCDDEEFF);
	CU_ASSERT_EQUAL(*hw_db_value_ptr(db), 0xCCDDEEFF);
	db_write(dev, 0x8ff0, 0xCCDDEE01, 4);
	CU_ASSERT_EQUAL(notes, 2);
	CU_ASSERT_EQUAL(hw_db_query_value(db), 0xCCDDEE01);
	/* Unknown id: counted, nobody notified. */
	db_write(dev, 0x8000, 0x010203FF, 4);
	CU_ASSERT_EQUAL(notes, 2);
	CU_ASSERT_EQUAL(dev->db_invalid_writes, 1);
	uint32_t rd = 1;

	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x8000, &rd, 4, false), 0);
	CU_ASSERT_EQUAL(rd, 0);
	hw_db_destroy(db);

	/* Both kinds with the same small id, each in its region. */
	struct hw_db *off5 = hw_db_create_at(dev, 0, 0x1000, 5, db_notify, NULL);
	struct hw_db *data5 = hw_db_create_at(dev, 0, 0x8000, 5, db_notify, NULL);

	CU_ASSERT_FATAL(off5 && data5);
	hw_db_start(off5);
	hw_db_start(data5);
	db_write(dev, 0x8000, 0x000005FF, 4);
	CU_ASSERT_PTR_EQUAL(note_db, data5);
	CU_ASSERT_EQUAL(hw_db_query_value(off5), 0);
	db_write(dev, 0x1000 + 5 * 4, 9, 4);
	CU_ASSERT_PTR_EQUAL(note_db, off5);
	CU_ASSERT_EQUAL(hw_db_query_value(data5), 0x000005FF);
	CU_ASSERT_PTR_NULL(hw_db_create_at(dev, 0, 0x8000, 5, NULL, NULL));
	CU_ASSERT_EQUAL(errno, EEXIST);
	CU_ASSERT_PTR_NULL(hw_db_create_at(dev, 0, 0x1000, 1024, NULL, NULL));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NULL(hw_db_create_at(dev, 0, 0x0, 1, NULL, NULL)); /* stateful */
	CU_ASSERT_EQUAL(errno, EINVAL);
	hw_dev_destroy(dev);
	hw_pci_type_destroy(t);
}

static void test_max_db_and_invalid_ids(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);
	struct hw_db *dbs[65];

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_FATAL(hw_pci_type_start(t, hw_profile_find("bf3"), NULL, 0) == 0);
	struct hw_dev *dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_TRAP);

	CU_ASSERT_FATAL(dev != NULL);
	/* No by-data region: ids beyond the 1024 slots do not exist. */
	CU_ASSERT_PTR_NULL(hw_db_create(dev, 1024, NULL, NULL));
	CU_ASSERT_EQUAL(errno, EINVAL);
	for (int i = 0; i < 64; i++) {
		dbs[i] = hw_db_create(dev, (uint32_t)i * 2, NULL, NULL);
		CU_ASSERT_PTR_NOT_NULL(dbs[i]);
	}
	/* bf3: type_max_num_db 64. */
	dbs[64] = hw_db_create(dev, 1000, NULL, NULL);
	CU_ASSERT_PTR_NULL(dbs[64]);
	CU_ASSERT_EQUAL(errno, ENOSPC);
	hw_db_destroy(dbs[0]);
	dbs[0] = hw_db_create(dev, 1000, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL(dbs[0]);
	for (int i = 0; i < 64; i++)
		hw_db_destroy(dbs[i]);
	hw_dev_destroy(dev);
	hw_pci_type_destroy(t);
}

static void test_mmap_page(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);
	struct vfu_region_desc d;

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_FATAL(hw_pci_type_start(t, hw_profile_find("bf3"), NULL, 0) == 0);
	struct hw_dev *dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_MMAP);

	CU_ASSERT_FATAL(dev != NULL);
	hw_bar_region_desc(dev, 0, &d);
	CU_ASSERT_FATAL(d.mmap_fd >= 0);
	/* The client maps the page as QEMU would and stores a doorbell. */
	uint8_t *page = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED, d.mmap_fd, 0x1000);

	CU_ASSERT_FATAL(page != MAP_FAILED);
	struct hw_db *db = hw_db_create(dev, 2, db_notify, NULL);

	CU_ASSERT_FATAL(db != NULL);
	hw_db_start(db);
	notes = 0;
	*(volatile uint32_t *)(page + 8) = 77;
	CU_ASSERT_EQUAL(*hw_db_value_ptr(db), 77); /* polled, no notify */
	CU_ASSERT_EQUAL(hw_db_query_value(db), 77);
	CU_ASSERT_EQUAL(notes, 0);
	/* A trapped write lands in the same page and notifies. */
	db_write(dev, 0x1008, 78, 4);
	CU_ASSERT_EQUAL(*(volatile uint32_t *)(page + 8), 78);
	CU_ASSERT_EQUAL(notes, 1);
	munmap(page, 0x1000);
	hw_dev_destroy(dev);
	hw_pci_type_destroy(t);
}

CUNIT_SUITE(hw_db, db_setup, db_teardown, {"id_from_data", test_id_from_data},
	    {"by_offset", test_by_offset}, {"by_data", test_by_data},
	    {"max_db_and_invalid_ids", test_max_db_and_invalid_ids}, {"mmap_page", test_mmap_page})
