/* tests/unit/backend/bdev_region_test.c - packed region bdevs (8-byte blocks over a 512-byte
 * base): the random model workload (reads, writes, write zeroes and deallocates of a few 8-byte
 * blocks at once, sharing base blocks) over a RAM and a file base with the bytes around the
 * window untouched, two channels whose writes share a base block (the second waits for the first
 * and its own channel's poll resumes it), the iovec limit, and the geometry checks. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUT_BASE_BLOCKS 256u /* 128 KiB base */
#define RUT_OFF 8u	     /* the window starts at base block 8 */
#define RUT_BYTES 70004u     /* ... and ends inside a base block */
#define RUT_MODEL 4096u	     /* 8-byte blocks the model uses (32 KiB) */

/* Fills the base with a pattern except the model's area, which must start as zeroes. */
static void rut_fill_base(struct bdev *base, uint8_t *img)
{
	struct ut_dev d;

	ut_pattern(img, RUT_BASE_BLOCKS * 512, 77);
	memset(img + RUT_OFF * 512, 0, RUT_MODEL * 8);
	ut_dev_open(&d, base);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 512, BDEV_IO_WRITE, 0, RUT_BASE_BLOCKS, img, NULL), 0);
	ut_dev_close(&d);
}

/* Every base byte outside the window is what it was. */
static void rut_check_outside(struct bdev *base, const uint8_t *img)
{
	uint8_t *now = aligned_alloc(4096, RUT_BASE_BLOCKS * 512);
	uint64_t end = RUT_OFF * 512 + RUT_BYTES;
	struct ut_dev d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(now);
	ut_dev_open(&d, base);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 512, BDEV_IO_READ, 0, RUT_BASE_BLOCKS, now, NULL), 0);
	ut_dev_close(&d);
	CU_ASSERT_EQUAL(memcmp(now, img, RUT_OFF * 512), 0);
	CU_ASSERT_EQUAL(memcmp(now + end, img + end, RUT_BASE_BLOCKS * 512 - end), 0);
	free(now);
}

static void rut_model(struct bdev *base)
{
	uint8_t *img = aligned_alloc(4096, RUT_BASE_BLOCKS * 512);
	struct bdev *r;
	struct ut_dev d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	rut_fill_base(base, img);
	CU_ASSERT_EQUAL_FATAL(bdev_region_create("R0", base, RUT_OFF, RUT_BYTES / 8,
						 BDEV_PACKED_BLOCK_SIZE, NULL, &r), 0);
	CU_ASSERT_EQUAL(bdev_get_block_size(r), 8);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(r), RUT_BYTES / 8);
	CU_ASSERT_TRUE(bdev_io_size(r) <= UT_IO_SIZE);
	ut_dev_open(&d, r);
	/* Up to 32 ios at once on 1-16 blocks of 8 bytes: most share a base block with another. */
	CU_ASSERT_EQUAL(ut_model_run(d.ch, 8, RUT_MODEL, 1, 300, 32), 0);
	/* Zeroed again (the model starts from zeroes), unaligned at both ends and aligned. */
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 0, 1, 0), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, 1, RUT_MODEL - 2, 0), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(d.ch, BDEV_IO_WRITE_ZEROES, RUT_MODEL - 1, 1, 0), 0);
	CU_ASSERT_EQUAL(ut_model_run(d.ch, 8, RUT_MODEL, 2, 300, 8), 0);
	/* The window's last bytes, inside its last base block. */
	uint8_t tail[24], back[24];

	ut_pattern(tail, sizeof(tail), 5);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_WRITE, RUT_BYTES / 8 - 3, 3, tail, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_READ, RUT_BYTES / 8 - 3, 3, back, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(tail, back, sizeof(tail)), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_READ, RUT_BYTES / 8 - 2, 3, back, NULL), -ERANGE);
	ut_dev_close(&d);
	rut_check_outside(base, img);
	CU_ASSERT_EQUAL(bdev_delete("R0"), 0);
	free(img);
}

static void test_packed_ram(void)
{
	struct bdev *base;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("RBase", RUT_BASE_BLOCKS, 512, NULL, &base), 0);
	rut_model(base);
	CU_ASSERT_EQUAL(bdev_delete("RBase"), 0);
}

static void test_packed_file(void)
{
	char path[64];

	rut_model(ut_aio_temp_create("RFile", RUT_BASE_BLOCKS * 512, path));
	ut_aio_temp_delete("RFile", path);
}

/* Two channels (two poll groups) writing 8-byte blocks 1 and 2, which share base block 0: the
 * second waits until the first is written, then its own channel's fd wakes and its poll
 * resumes it; both writes land. */
static void test_packed_two_channels(void)
{
	uint8_t one[8], two[8], back[24];
	struct ut_result ra = {0}, rb = {0};
	struct bdev_io *ia, *ib;
	struct ut_dev a, b;
	struct iovec va = {one, 8}, vb = {two, 8};
	struct bdev *base, *r;
	int da = 0, db = 0;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("TBase", 16, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_region_create("T0", base, 0, 1024, BDEV_PACKED_BLOCK_SIZE, NULL,
						 &r), 0);
	ut_dev_open(&a, r);
	ut_dev_open(&b, r);
	ia = ut_io_alloc(r);
	ib = ut_io_alloc(r);
	memset(one, 0x11, 8);
	memset(two, 0x22, 8);
	ut_io_rw(ia, BDEV_IO_WRITE, 1, 1, &va, 1, &ra);
	ut_io_rw(ib, BDEV_IO_WRITE, 2, 1, &vb, 1, &rb);
	ra.done_count = &da;
	rb.done_count = &db;
	bdev_submit(a.ch, ia);
	bdev_submit(b.ch, ib);
	/* B's write waits for base block 0: its channel has nothing to do yet. */
	bdev_channel_poll(b.ch);
	bdev_channel_poll(b.ch);
	CU_ASSERT_EQUAL(rb.calls, 0);
	CU_ASSERT_EQUAL(ut_wait(a.ch, &da, 1, 5000), 0);
	CU_ASSERT_EQUAL(ra.status, 0);
	/* A's completion handed the block on: B's fd is readable, its poll resumes the write. */
	CU_ASSERT_EQUAL(ut_fd_readable(b.ch, 5000), 1);
	CU_ASSERT_EQUAL(ut_wait(b.ch, &db, 1, 5000), 0);
	CU_ASSERT_EQUAL(rb.status, 0);
	CU_ASSERT_EQUAL(ut_rw_sync(a.ch, 8, BDEV_IO_READ, 0, 3, back, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(back, 8));
	CU_ASSERT_EQUAL(memcmp(back + 8, one, 8), 0);
	CU_ASSERT_EQUAL(memcmp(back + 16, two, 8), 0);
	free(ia);
	free(ib);
	ut_dev_close(&a);
	ut_dev_close(&b);
	CU_ASSERT_EQUAL(bdev_delete("T0"), 0);
	CU_ASSERT_EQUAL(bdev_delete("TBase"), 0);
}

/* Unaligned ios carry at most BDEV_REGION_MAX_IOV iovecs; aligned ones any number. */
static void test_packed_iov_limit(void)
{
	size_t cuts[BDEV_REGION_MAX_IOV + 3];
	uint8_t *buf = aligned_alloc(4096, 4096);
	struct bdev *base, *r;
	struct ut_dev d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	/* The head block's part, then 17 iovecs of 8 bytes, then the rest. */
	cuts[0] = 504;
	for (int i = 1; i <= BDEV_REGION_MAX_IOV + 1; i++)
		cuts[i] = 8;
	cuts[BDEV_REGION_MAX_IOV + 2] = 0;
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("IBase", 64, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_region_create("I0", base, 0, 4096, BDEV_PACKED_BLOCK_SIZE, NULL,
						 &r), 0);
	ut_dev_open(&d, r);
	ut_pattern(buf, 4096, 9);
	/* Bytes 8..1032: the whole base block between the edges takes 18 of them. */
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_WRITE, 1, 128, buf, cuts), -EINVAL);
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_READ, 1, 128, buf, cuts), -EINVAL);
	/* The same iovecs on base blocks 0 and 1 (aligned) pass through whole. */
	CU_ASSERT_EQUAL(ut_rw_sync(d.ch, 8, BDEV_IO_WRITE, 0, 128, buf, cuts), 0);
	ut_dev_close(&d);
	CU_ASSERT_EQUAL(bdev_delete("I0"), 0);
	CU_ASSERT_EQUAL(bdev_delete("IBase"), 0);
	free(buf);
}

/* Geometry: the packed window lies inside the base; 8-byte blocks are a region's only. */
static void test_packed_geometry(void)
{
	struct bdev *base, *r;

	CU_ASSERT_EQUAL(bdev_malloc_create("GBad", 64, BDEV_PACKED_BLOCK_SIZE, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("GBase", 64, 512, NULL, &base), 0);
	CU_ASSERT_EQUAL(bdev_region_create("G0", base, 0, 4097, BDEV_PACKED_BLOCK_SIZE, NULL, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(bdev_region_create("G0", base, 1, 4096 - 63, BDEV_PACKED_BLOCK_SIZE, NULL,
					   &r), -EINVAL);
	CU_ASSERT_EQUAL(bdev_region_create("G0", base, 65, 1, BDEV_PACKED_BLOCK_SIZE, NULL, &r),
			-EINVAL);
	CU_ASSERT_EQUAL(bdev_region_create("G0", base, 1, 4096 - 64, BDEV_PACKED_BLOCK_SIZE, NULL,
					   &r), 0);
	CU_ASSERT_EQUAL(bdev_delete("G0"), 0);
	CU_ASSERT_EQUAL(bdev_delete("GBase"), 0);
}

CUNIT_SUITE(bdev_region, NULL, NULL, {"packed_ram", test_packed_ram},
	    {"packed_file", test_packed_file}, {"packed_two_channels", test_packed_two_channels},
	    {"packed_iov_limit", test_packed_iov_limit}, {"packed_geometry", test_packed_geometry})
