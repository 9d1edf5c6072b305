/* tests/unit/backend/bdev_null_test.c - null bdev: writes are dropped; reads leave the buffer
 * alone, or with read_zeroes return zeroes even after writes; deallocation only with read_zeroes;
 * every other type succeeds, ranges are still checked, completions never re-enter submit. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void nut_semantics(uint32_t bs, bool read_zeroes)
{
	static const size_t cuts[] = {3, 1000, 0};
	struct bdev_range range = {0, 8};
	size_t len = 8 * (size_t)bs;
	uint8_t *buf = malloc(len);
	struct bdev_channel *ch;
	struct bdev_stats st;
	struct bdev *b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	struct bdev_info info;

	CU_ASSERT_EQUAL_FATAL(bdev_null_create("nul", 1ull << 40, bs, NULL, read_zeroes, &b), 0);
	bdev_get_info(b, &info);
	CU_ASSERT_EQUAL(info.read_zeroes, read_zeroes);
	CU_ASSERT_EQUAL(bdev_io_type_supported(b, BDEV_IO_UNMAP), read_zeroes);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 1ull << 40);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);

	ut_pattern(buf, len, 9);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_WRITE, 100, 8, buf, cuts), 0);
	/* With read_zeroes the read overwrites the caller's buffer with zeroes (writes were
	 * dropped); without, it leaves every byte as it was. */
	ut_pattern(buf, len, 3);
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_READ, 100, 8, buf, cuts), 0);
	if (read_zeroes) {
		CU_ASSERT_TRUE(ut_is_zero(buf, len));
	} else {
		uint8_t *want = malloc(len);

		CU_ASSERT_PTR_NOT_NULL_FATAL(want);
		ut_pattern(want, len, 3);
		CU_ASSERT_EQUAL(memcmp(buf, want, len), 0);
		free(want);
	}
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_WRITE_ZEROES, 5, 5, BDEV_IO_F_FUA), 0);
	CU_ASSERT_EQUAL(ut_unmap_sync(ch, &range, 1), read_zeroes ? 0 : -ENOTSUP);
	/* Ranges are checked although nothing is stored. */
	CU_ASSERT_EQUAL(ut_rw_sync(ch, bs, BDEV_IO_READ, (1ull << 40) - 4, 8, buf, NULL), -ERANGE);
	bdev_get_stats(b, &st);
	CU_ASSERT_EQUAL(st.read_ops, 1);
	CU_ASSERT_EQUAL(st.write_ops, 1);
	CU_ASSERT_EQUAL(st.bytes_read, len);
	/* The range error, and without read_zeroes the refused unmap. */
	CU_ASSERT_EQUAL(st.errors, read_zeroes ? 1 : 2);
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("nul"), 0);
	free(buf);
}

static void test_null_512(void)
{
	nut_semantics(512, false);
}

static void test_null_4096(void)
{
	nut_semantics(4096, false);
}

static void test_null_zeroes_512(void)
{
	nut_semantics(512, true);
}

static void test_null_zeroes_4096(void)
{
	nut_semantics(4096, true);
}

CUNIT_SUITE(bdev_null, NULL, NULL, {"null_512", test_null_512}, {"null_4096", test_null_4096},
	    {"null_zeroes_512", test_null_zeroes_512}, {"null_zeroes_4096", test_null_zeroes_4096})
