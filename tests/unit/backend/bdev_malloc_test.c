/* tests/unit/backend/bdev_malloc_test.c - malloc bdev: read/write round trips through iovecs cut
 * at odd places, write-zeroes, unmap, many ios in one poll, both block sizes. */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MUT_BLOCKS 128

struct mut {
	struct bdev *b;
	struct bdev_channel *ch;
	uint32_t bs;
};

static void mut_setup(struct mut *m, uint32_t bs)
{
	m->bs = bs;
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("mal", MUT_BLOCKS, bs, NULL, &m->b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_open(m->b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(m->b, &m->ch), 0);
}

static void mut_teardown(struct mut *m)
{
	CU_ASSERT_EQUAL(bdev_channel_destroy(m->ch), 0);
	bdev_close(m->b);
	CU_ASSERT_EQUAL(bdev_delete("mal"), 0);
}

static void mut_round_trip(uint32_t bs)
{
	/* Write and read back through iovecs cut at odd sizes that do not line up with blocks. */
	static const size_t wcuts[] = {1, 7, 511, 513, 4097, 3, 0};
	static const size_t rcuts[] = {100, 1000, 10000, 5, 0};
	size_t len = 24 * (size_t)bs;
	uint8_t *wbuf = malloc(len), *rbuf = malloc(len);
	struct mut m;

	CU_ASSERT_PTR_NOT_NULL_FATAL(wbuf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rbuf);
	mut_setup(&m, bs);
	/* Fresh device reads zeroes. */
	memset(rbuf, 0xff, len);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, 0, 24, rbuf, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(rbuf, len));

	ut_pattern(wbuf, len, bs);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_WRITE, 5, 24, wbuf, wcuts), 0);
	memset(rbuf, 0, len);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, 5, 24, rbuf, rcuts), 0);
	CU_ASSERT_EQUAL(memcmp(wbuf, rbuf, len), 0);
	/* A partial read in the middle sees the matching slice. */
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, 10, 3, rbuf, rcuts), 0);
	CU_ASSERT_EQUAL(memcmp(wbuf + 5 * (size_t)bs, rbuf, 3 * (size_t)bs), 0);
	/* The blocks around the write stay zero; the last block is reachable. */
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, 4, 1, rbuf, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(rbuf, bs));
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_WRITE, MUT_BLOCKS - 1, 1, wbuf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, MUT_BLOCKS - 1, 1, rbuf, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(wbuf, rbuf, bs), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, MUT_BLOCKS, 1, rbuf, NULL), -ERANGE);
	mut_teardown(&m);
	free(wbuf);
	free(rbuf);
}

static void test_round_trip_512(void)
{
	mut_round_trip(512);
}

static void test_round_trip_4096(void)
{
	mut_round_trip(4096);
}

static void mut_zero_and_unmap(uint32_t bs)
{
	size_t len = 32 * (size_t)bs;
	uint8_t *wbuf = malloc(len), *rbuf = malloc(len);
	struct bdev_range ranges[] = {{2, 1}, {20, 4}, {30, 0}};
	struct bdev_stats st;
	struct mut m;
	uint64_t lba;

	CU_ASSERT_PTR_NOT_NULL_FATAL(wbuf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rbuf);
	mut_setup(&m, bs);
	ut_pattern(wbuf, len, 77);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_WRITE, 0, 32, wbuf, NULL), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(m.ch, BDEV_IO_WRITE_ZEROES, 8, 3, 0), 0);
	CU_ASSERT_EQUAL(ut_unmap_sync(m.ch, ranges, 3), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(m.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, bs, BDEV_IO_READ, 0, 32, rbuf, NULL), 0);
	for (lba = 0; lba < 32; lba++) {
		bool zero = lba == 2 || (lba >= 8 && lba < 11) || (lba >= 20 && lba < 24);
		const uint8_t *got = rbuf + lba * bs;

		if (zero) {
			CU_ASSERT_TRUE(ut_is_zero(got, bs));
		} else {
			CU_ASSERT_EQUAL(memcmp(got, wbuf + lba * bs, bs), 0);
		}
	}
	bdev_get_stats(m.b, &st);
	CU_ASSERT_EQUAL(st.write_zeroes_ops, 1);
	CU_ASSERT_EQUAL(st.unmap_ops, 1);
	CU_ASSERT_EQUAL(st.flush_ops, 1);
	CU_ASSERT_EQUAL(st.errors, 0);
	mut_teardown(&m);
	free(wbuf);
	free(rbuf);
}

static void test_zero_and_unmap_512(void)
{
	mut_zero_and_unmap(512);
}

static void test_zero_and_unmap_4096(void)
{
	mut_zero_and_unmap(4096);
}

/* 32 ios of one block each, all submitted before any poll: every callback runs exactly once. */
static void test_many_outstanding(void)
{
	enum { N = 32 };
	struct bdev_io *ios[N];
	struct ut_result res[N];
	struct iovec iov[N];
	uint8_t *buf = malloc(N * 512), *check = malloc(N * 512);
	struct bdev_stats st;
	struct mut m;
	int i, done = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(check);
	mut_setup(&m, 512);
	ut_pattern(buf, N * 512, 5);
	for (i = 0; i < N; i++) {
		ios[i] = ut_io_alloc(m.b);
		iov[i].iov_base = buf + i * 512;
		iov[i].iov_len = 512;
		ut_io_rw(ios[i], BDEV_IO_WRITE, (uint64_t)(N - 1 - i), 1, &iov[i], 1, &res[i]);
		res[i].done_count = &done;
		bdev_submit(m.ch, ios[i]);
	}
	CU_ASSERT_EQUAL(done, 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(m.ch), N);
	CU_ASSERT_EQUAL(ut_wait(m.ch, &done, N, 5000), 0);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(res[i].calls, 1);
		CU_ASSERT_EQUAL(res[i].status, 0);
		free(ios[i]);
	}
	CU_ASSERT_EQUAL(ut_rw_sync(m.ch, 512, BDEV_IO_READ, 0, N, check, NULL), 0);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(memcmp(check + (N - 1 - i) * 512, buf + i * 512, 512), 0);
	bdev_get_stats(m.b, &st);
	CU_ASSERT_EQUAL(st.write_ops, N);
	CU_ASSERT_EQUAL(st.bytes_written, N * 512);
	mut_teardown(&m);
	free(buf);
	free(check);
}

/* Channels on two bdevs are independent; a bdev open twice needs two closes. */
static void test_two_bdevs(void)
{
	struct bdev *a, *b;
	struct bdev_channel *ca, *cb;
	uint8_t buf[512], out[512];

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("ma", 4, 512, NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("mb", 4, 512, NULL, &b), 0);
	CU_ASSERT_EQUAL(bdev_open(a), 0);
	CU_ASSERT_EQUAL(bdev_open(a), 0);
	CU_ASSERT_EQUAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(a, &ca), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &cb), 0);
	memset(buf, 0x11, sizeof(buf));
	CU_ASSERT_EQUAL(ut_rw_sync(ca, 512, BDEV_IO_WRITE, 1, 1, buf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(cb, 512, BDEV_IO_READ, 1, 1, out, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(out, sizeof(out)));
	CU_ASSERT_EQUAL(bdev_channel_destroy(ca), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(cb), 0);
	bdev_close(a);
	CU_ASSERT_EQUAL(bdev_delete("ma"), -EBUSY);
	bdev_close(a);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete_all(), 0);
}

/* Random mixed workload against a model, both block sizes. */
static void test_model(void)
{
	struct mut m;

	mut_setup(&m, 512);
	CU_ASSERT_EQUAL(ut_model_run(m.ch, 512, MUT_BLOCKS, 1, 60, 16), 0);
	mut_teardown(&m);
	mut_setup(&m, 4096);
	CU_ASSERT_EQUAL(ut_model_run(m.ch, 4096, MUT_BLOCKS, 2, 60, 16), 0);
	mut_teardown(&m);
}

CUNIT_SUITE(bdev_malloc, NULL, NULL, {"model", test_model}, {"round_trip_512", test_round_trip_512},
	    {"round_trip_4096", test_round_trip_4096},
	    {"zero_and_unmap_512", test_zero_and_unmap_512},
	    {"zero_and_unmap_4096", test_zero_and_unmap_4096},
	    {"many_outstanding", test_many_outstanding}, {"two_bdevs", test_two_bdevs})
