/* tests/unit/backend/bdev_null_test.c - null bdev: reads return zeroes even after writes, every
 * type succeeds, ranges are still checked, completions never re-enter submit. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void nut_semantics(uint32_t bs)
{
	static const size_t cuts[] = {3, 1000, 0};
	struct bdev_range range = {0, 8};
	size_t len = 8 * (size_t)bs;
	uint8_t *buf = malloc(len);
	struct bdev_channel *ch;
	struct bdev_stats st;
	struct bdev *b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_EQUAL_FATAL(bdev_null_create("nul", 1ull << 40, bs, NULL, &b), 0);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 1ull << 40);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);

	ut_pattern(buf, len, 9);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_WRITE, 100, 8, buf, cuts), 0);
	/* The read overwrites the caller's buffer with zeroes: writes were dropped. */
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_READ, 100, 8, buf, cuts), 0);
	CU_ASSERT_TRUE(ut_is_zero(buf, len));
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_WRITE_ZEROES, 5, 5, BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_unmap_sync(ch, &range, 1), 0);
	/* Ranges are checked although nothing is stored. */
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_READ, (1ull << 40) - 4, 8, buf, NULL), -ERANGE);
	bdev_get_stats(b, &st);
	CU_ASSERT_EQUAL(st.read_ops, 1);
	CU_ASSERT_EQUAL(st.write_ops, 1);
	CU_ASSERT_EQUAL(st.bytes_read, len);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("nul"), 0);
	free(buf);
}

static void test_null_512(void)
{
	nut_semantics(512);
}

static void test_null_4096(void)
{
	nut_semantics(4096);
}

CUNIT_SUITE(bdev_null, NULL, NULL, {"null_512", test_null_512}, {"null_4096", test_null_4096})
