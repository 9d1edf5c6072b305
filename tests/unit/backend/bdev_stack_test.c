/* tests/unit/backend/bdev_stack_test.c - the stacked bdevs over a malloc base: error injection
 * (failure, NVMe status, -ENOMEM, corrupted reads and writes, held ios resumed, the queue-depth
 * trigger, num, clear) and delay (a read not completed before its latency, writes not delayed
 * with a zero latency, a latency update), the random model workload through delay over error
 * over malloc, and the claims (the base cannot go while stacked on). */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SUT_BS 512u
#define SUT_BLOCKS 8192u

#define sut ut_dev

static void sut_open(struct ut_dev *s, const char *name)
{
	ut_dev_open(s, bdev_lookup(name));
}

#define sut_close ut_dev_close

static int sut_read(struct sut *s, uint64_t lba, void *buf)
{
	return ut_rw_sync(s->ch, SUT_BS, BDEV_IO_READ, lba, 1, buf, NULL);
}

static int sut_write(struct sut *s, uint64_t lba, void *buf)
{
	return ut_rw_sync(s->ch, SUT_BS, BDEV_IO_WRITE, lba, 1, buf, NULL);
}

static void test_error_injection(void)
{
	struct bdev_error_injection inj = {.type = BDEV_ERROR_FAILURE, .num = 2};
	unsigned char buf[SUT_BS], back[SUT_BS], raw[SUT_BS];
	struct sut s;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("EBase", SUT_BLOCKS, SUT_BS, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_error_create("EBase", NULL, NULL), 0);
	CU_ASSERT_EQUAL(bdev_error_create("EBase", NULL, NULL), -EEXIST);
	CU_ASSERT_EQUAL(bdev_error_create("nope", NULL, NULL), -ENODEV);
	CU_ASSERT_EQUAL(bdev_delete("EBase"), -EBUSY); /* claimed by EE_EBase */
	sut_open(&s, "EE_EBase");
	ut_pattern(buf, sizeof(buf), 1);
	CU_ASSERT_EQUAL(sut_write(&s, 10, buf), 0);
	/* Two reads fail, the third works; writes are untouched meanwhile. */
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_READ, &inj), 0);
	CU_ASSERT_EQUAL(sut_write(&s, 11, buf), 0);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), -EIO);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), -EIO);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, SUT_BS), 0);
	/* A chosen NVMe status (Media: Unrecovered Read Error 02h/81h) on writes. */
	inj = (struct bdev_error_injection){.type = BDEV_ERROR_NVME, .num = 1, .nvme_sct = 2,
					    .nvme_sc = 0x81};
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_WRITE, &inj), 0);
	CU_ASSERT_EQUAL(sut_write(&s, 12, buf), BDEV_STATUS_NVME(2, 0x81));
	CU_ASSERT_TRUE(BDEV_STATUS_IS_NVME(BDEV_STATUS_NVME(2, 0x81)));
	CU_ASSERT_EQUAL(BDEV_STATUS_NVME_CODE(BDEV_STATUS_NVME(2, 0x81)), 0x281);
	CU_ASSERT_FALSE(BDEV_STATUS_IS_NVME(-EIO));
	/* -ENOMEM on every type. */
	inj = (struct bdev_error_injection){.type = BDEV_ERROR_NOMEM, .num = 1};
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_ERROR_IO_ALL, &inj), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(s.ch, BDEV_IO_FLUSH, 0, 0, 0), -ENOMEM);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), -ENOMEM);
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_ERROR_IO_CLEAR, NULL), 0);
	CU_ASSERT_EQUAL(sut_write(&s, 12, buf), 0);
	/* A corrupted read: byte 5 flipped, the stored data intact. */
	inj = (struct bdev_error_injection){.type = BDEV_ERROR_CORRUPT, .num = 1,
					    .corrupt_offset = 5, .corrupt_value = 0xff};
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_READ, &inj), 0);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), 0);
	CU_ASSERT_EQUAL(back[5], (unsigned char)(buf[5] ^ 0xff));
	back[5] ^= 0xff;
	CU_ASSERT_EQUAL(memcmp(buf, back, SUT_BS), 0);
	CU_ASSERT_EQUAL(sut_read(&s, 10, back), 0);
	CU_ASSERT_EQUAL(memcmp(buf, back, SUT_BS), 0);
	/* A corrupted write: what is stored differs at byte 7. */
	inj.corrupt_offset = 7;
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_WRITE, &inj), 0);
	memcpy(raw, buf, SUT_BS);
	CU_ASSERT_EQUAL(sut_write(&s, 13, raw), 0);
	CU_ASSERT_EQUAL(sut_read(&s, 13, back), 0);
	CU_ASSERT_EQUAL(back[7], (unsigned char)(buf[7] ^ 0xff));
	/* Invalid injections. */
	inj.corrupt_value = 0;
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_READ, &inj), -EINVAL);
	inj = (struct bdev_error_injection){.type = BDEV_ERROR_FAILURE, .num = 0};
	CU_ASSERT_EQUAL(bdev_error_inject("EE_EBase", BDEV_IO_READ, &inj), -EINVAL);
	CU_ASSERT_EQUAL(bdev_error_inject("EBase", BDEV_IO_READ, &inj), -ENODEV);
	sut_close(&s);
	CU_ASSERT_EQUAL(bdev_delete("EE_EBase"), 0);
	CU_ASSERT_EQUAL(bdev_delete("EBase"), 0);
}

/* Held ios complete only after resume; the queue-depth trigger fires only at that depth. */
static void test_error_pending_and_depth(void)
{
	struct bdev_error_injection inj = {.type = BDEV_ERROR_PENDING, .num = 2};
	struct bdev_io *ios[4] = {0};
	struct ut_result res[4];
	struct iovec iov[4];
	unsigned char *buf = calloc(4, SUT_BS);
	struct sut s;
	int done = 0;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("PBase", SUT_BLOCKS, SUT_BS, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_error_create("PBase", NULL, NULL), 0);
	sut_open(&s, "EE_PBase");
	CU_ASSERT_EQUAL(bdev_error_inject("EE_PBase", BDEV_IO_READ, &inj), 0);
	for (int i = 0; i < 2; i++) {
		ios[i] = ut_io_alloc(s.b);
		iov[i] = (struct iovec){buf + i * SUT_BS, SUT_BS};
		ut_io_rw(ios[i], BDEV_IO_READ, (uint64_t)i, 1, &iov[i], 1, &res[i]);
		res[i].done_count = &done;
		bdev_submit(s.ch, ios[i]);
	}
	CU_ASSERT_EQUAL(ut_wait(s.ch, &done, 1, 200), -ETIMEDOUT);
	CU_ASSERT_EQUAL(done, 0);
	CU_ASSERT_EQUAL(bdev_error_resume_pending("EE_PBase"), 0);
	CU_ASSERT_EQUAL(ut_wait(s.ch, &done, 2, 5000), 0);
	CU_ASSERT_EQUAL(res[0].status, 0);
	CU_ASSERT_EQUAL(res[1].status, 0);
	/* Fails only the io submitted with 3 outstanding (itself included). */
	inj = (struct bdev_error_injection){.type = BDEV_ERROR_FAILURE, .num = 1, .queue_depth = 3};
	CU_ASSERT_EQUAL(bdev_error_inject("EE_PBase", BDEV_IO_READ, &inj), 0);
	CU_ASSERT_EQUAL(sut_read(&s, 0, buf), 0); /* depth 1 */
	done = 0;
	for (int i = 0; i < 3; i++) {
		if (!ios[i])
			ios[i] = ut_io_alloc(s.b);
		iov[i] = (struct iovec){buf + i * SUT_BS, SUT_BS};
		ut_io_rw(ios[i], BDEV_IO_READ, (uint64_t)i, 1, &iov[i], 1, &res[i]);
		res[i].done_count = &done;
		bdev_submit(s.ch, ios[i]);
	}
	CU_ASSERT_EQUAL(ut_wait(s.ch, &done, 3, 5000), 0);
	CU_ASSERT_EQUAL(res[0].status, 0);
	CU_ASSERT_EQUAL(res[1].status, 0);
	CU_ASSERT_EQUAL(res[2].status, -EIO);
	for (int i = 0; i < 3; i++)
		free(ios[i]);
	sut_close(&s);
	CU_ASSERT_EQUAL(bdev_delete("EE_PBase"), 0);
	CU_ASSERT_EQUAL(bdev_delete("PBase"), 0);
	free(buf);
}

static double sut_ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void test_delay(void)
{
	uint64_t lat[BDEV_DELAY_NR] = {30000, 30000, 0, 0}; /* reads 30 ms, writes none */
	unsigned char buf[SUT_BS], back[SUT_BS];
	struct bdev_info info;
	struct timespec t0;
	struct sut s;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("DBase", SUT_BLOCKS, SUT_BS, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_delay_create("Delay0", "DBase", NULL, lat, NULL), 0);
	CU_ASSERT_EQUAL(bdev_delay_create("Delay1", "DBase", NULL, lat, NULL), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delay_create("Delay0", "DBase", NULL, lat, NULL), -EEXIST);
	bdev_get_info(bdev_lookup("Delay0"), &info);
	CU_ASSERT_STRING_EQUAL(info.base_name, "DBase");
	CU_ASSERT_EQUAL(info.delay_us[BDEV_DELAY_AVG_READ], 30000);
	sut_open(&s, "Delay0");
	ut_pattern(buf, sizeof(buf), 3);
	CU_ASSERT_EQUAL(sut_write(&s, 1, buf), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CU_ASSERT_EQUAL(sut_read(&s, 1, back), 0);
	/* Never before its latency (a lower bound: holds on any machine). */
	CU_ASSERT_TRUE(sut_ms_since(&t0) >= 30.0);
	CU_ASSERT_EQUAL(memcmp(buf, back, SUT_BS), 0);
	CU_ASSERT_EQUAL(bdev_delay_update_latency("Delay0", BDEV_DELAY_AVG_WRITE, 20000), 0);
	CU_ASSERT_EQUAL(bdev_delay_update_latency("Delay0", BDEV_DELAY_P99_WRITE, 20000), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CU_ASSERT_EQUAL(sut_write(&s, 2, buf), 0);
	CU_ASSERT_TRUE(sut_ms_since(&t0) >= 20.0);
	CU_ASSERT_EQUAL(bdev_delay_update_latency("Delay0", BDEV_DELAY_NR, 1), -EINVAL);
	CU_ASSERT_EQUAL(bdev_delay_update_latency("DBase", BDEV_DELAY_AVG_READ, 1), -ENODEV);
	/* Flush is not delayed (and works). */
	CU_ASSERT_EQUAL(ut_nodata_sync(s.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	sut_close(&s);
	CU_ASSERT_EQUAL(bdev_delete("Delay0"), 0);
	CU_ASSERT_EQUAL(bdev_delete("DBase"), 0);
}

/* delay over error over malloc: the model workload with small latencies. */
static void test_stack_model(void)
{
	uint64_t lat[BDEV_DELAY_NR] = {200, 2000, 100, 1000};
	struct sut s;

	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("SBase", SUT_BLOCKS, SUT_BS, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_error_create("SBase", NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_delay_create("SDelay", "EE_SBase", NULL, lat, NULL), 0);
	CU_ASSERT_TRUE(bdev_io_size(bdev_lookup("SDelay")) <= 512 + sizeof(struct bdev_io));
	sut_open(&s, "SDelay");
	CU_ASSERT_EQUAL(ut_model_run(s.ch, SUT_BS, 2048, 5, 30, 16), 0);
	sut_close(&s);
	CU_ASSERT_EQUAL(bdev_delete("EE_SBase"), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delete("SDelay"), 0);
	CU_ASSERT_EQUAL(bdev_delete("EE_SBase"), 0);
	CU_ASSERT_EQUAL(bdev_delete("SBase"), 0);
}

CUNIT_SUITE(bdev_stack, NULL, NULL, {"error_injection", test_error_injection},
	    {"error_pending_and_depth", test_error_pending_and_depth}, {"delay", test_delay},
	    {"stack_model", test_stack_model})
