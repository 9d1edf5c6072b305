/* tests/unit/backend/bdev_aio_test.c - aio bdev on temp files in /tmp and /dev/shm: round trips
 * with aligned and unaligned iovecs, flush and FUA checked through a separate plain read(), hole
 * punching, write-zeroes, eventfd completion, queue depth 32 under load, short reads.
 * bdev_uring_test.c runs this whole suite on the io_uring bdev (BDEV_FILE_UT_* below). */
#include "backend/bdev.h"
#include "tests/unit/backend/bdev_ut_util.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef BDEV_FILE_UT_POLL
#define BDEV_FILE_UT_POLL false /* bdev_uring_poll_test.c: polled reads and writes */
#endif
#ifndef BDEV_FILE_UT_CREATE
#define BDEV_FILE_UT_CREATE bdev_aio_create
#define BDEV_FILE_UT_MODULE "aio"
#define BDEV_FILE_UT_SUITE bdev_aio
#endif

/* Whether /tmp's block device polls (sysfs queue/io_poll): the poll suite then runs polled. */
static bool ut_dir_polls;

static bool ut_tmp_polls(void)
{
	char path[96], c = 0;
	struct stat st;
	FILE *f;

	if (stat("/tmp", &st))
		return false;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/io_poll", major(st.st_dev),
		 minor(st.st_dev));
	f = fopen(path, "r");
	if (!f) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/io_poll",
			 major(st.st_dev), minor(st.st_dev));
		f = fopen(path, "r");
	}
	if (!f)
		return false;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == '1';
}

static int aut_suite_init(void)
{
	ut_dir_polls = BDEV_FILE_UT_POLL && ut_tmp_polls();
	if (BDEV_FILE_UT_POLL)
		printf("[/tmp's device %s: %s] ", ut_dir_polls ? "polls" : "does not poll",
		       ut_dir_polls ? "the suite runs polled"
				    : "polled creates must be refused; I/O runs unpolled");
	return 0;
}

struct aut {
	char path[64];
	struct bdev *b;
	struct bdev_channel *ch;
	uint32_t bs;
};

/* Makes an empty temp file in dir; the bdev extends it to nblocks. */
static void aut_setup(struct aut *t, const char *dir, uint32_t bs, uint64_t nblocks, uint32_t qd,
		      bool buffered)
{
	struct bdev_aio_opts opts = {0};
	int fd;

	snprintf(t->path, sizeof(t->path), "%s/bdev_aio_ut.XXXXXX", dir);
	fd = mkstemp(t->path);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	close(fd);
	t->bs = bs;
	opts.filename = t->path;
	opts.block_size = bs;
	opts.create_size = nblocks * bs;
	opts.queue_depth = qd;
	opts.buffered = buffered;
	/* Polling needs O_DIRECT on a device that polls: not on tmpfs (/dev/shm), not buffered. */
	opts.poll = BDEV_FILE_UT_POLL && ut_dir_polls && !buffered && strcmp(dir, "/dev/shm") != 0;
	CU_ASSERT_EQUAL_FATAL(BDEV_FILE_UT_CREATE("aio0", &opts, &t->b), 0);
	if (opts.poll) {
		struct bdev_info info;

		bdev_get_info(t->b, &info);
		CU_ASSERT_TRUE(info.uring_poll);
	}
	CU_ASSERT_EQUAL(bdev_get_num_blocks(t->b), nblocks);
	CU_ASSERT_TRUE(bdev_io_size(t->b) <= UT_IO_SIZE);
	CU_ASSERT_EQUAL_FATAL(bdev_open(t->b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(t->b, &t->ch), 0);
}

static void aut_teardown(struct aut *t)
{
	struct stat st;

	CU_ASSERT_EQUAL(bdev_channel_outstanding(t->ch), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(t->ch), 0);
	bdev_close(t->b);
	CU_ASSERT_EQUAL(bdev_delete("aio0"), 0);
	/* Deleting the bdev keeps the file. */
	CU_ASSERT_EQUAL(stat(t->path, &st), 0);
	unlink(t->path);
}

/* Reads the file with plain pread() on a new descriptor (not through the bdev). */
static void aut_file_read(const struct aut *t, uint64_t lba, void *buf, size_t len)
{
	int fd = open(t->path, O_RDONLY);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, buf, len, (off_t)(lba * t->bs)), (ssize_t)len);
	close(fd);
}

static long aut_file_blocks(const struct aut *t)
{
	struct stat st;

	CU_ASSERT_EQUAL_FATAL(stat(t->path, &st), 0);
	return (long)st.st_blocks;
}

static void *aut_alloc(size_t len)
{
	void *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return p;
}

/* Write, read back (aligned and cut at odd places), flush, then check the file itself. */
static void aut_round_trip(const char *dir, uint32_t bs, bool buffered)
{
	static const size_t odd_cuts[] = {1, 511, 1000, 7, 4096, 0};
	static const size_t block_cuts[] = {4096, 8192, 0};
	size_t len = 16 * (size_t)bs;
	uint8_t *wbuf = aut_alloc(len + 1), *rbuf = aut_alloc(len), *fbuf = aut_alloc(len);
	struct bdev_info info;
	struct bdev_stats st;
	struct aut t;

	aut_setup(&t, dir, bs, 256, 0, buffered);
	bdev_get_info(t.b, &info);
	CU_ASSERT_STRING_EQUAL(info.module_name, BDEV_FILE_UT_MODULE);
	CU_ASSERT_STRING_EQUAL(info.filename, t.path);
	CU_ASSERT_TRUE(info.write_cache);
	CU_ASSERT_TRUE(info.write_cache_enabled);
	if (buffered)
		CU_ASSERT_FALSE(info.direct_io);
	printf("[%s bs %u: %s I/O] ", dir, bs, info.direct_io ? "direct" : "buffered");

	/* A new file reads as zeroes. */
	memset(rbuf, 0xff, len);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_READ, 0, 16, rbuf, NULL), 0);
	CU_ASSERT_TRUE(ut_is_zero(rbuf, len));

	ut_pattern(wbuf, len, bs + 1);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_WRITE, 3, 16, wbuf, block_cuts), 0);
	memset(rbuf, 0, len);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_READ, 3, 16, rbuf, block_cuts), 0);
	CU_ASSERT_EQUAL(memcmp(rbuf, wbuf, len), 0);
	/* Unaligned iovecs (bounce path under O_DIRECT) both ways. */
	memset(rbuf, 0, len);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_READ, 3, 16, rbuf, odd_cuts), 0);
	CU_ASSERT_EQUAL(memcmp(rbuf, wbuf, len), 0);
	ut_pattern(wbuf, len + 1, bs + 2);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_WRITE, 100, 16, wbuf + 1, odd_cuts), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_READ, 100, 16, rbuf, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(rbuf, wbuf + 1, len - 1), 0);
	/* The last block, and one past it. */
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_WRITE, 255, 1, wbuf, NULL), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, bs, BDEV_IO_READ, 256, 1, rbuf, NULL), -ERANGE);

	/* After FLUSH the data is in the file, seen through another descriptor. */
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	aut_file_read(&t, 100, fbuf, len - 1);
	CU_ASSERT_EQUAL(memcmp(fbuf, wbuf + 1, len - 1), 0);
	aut_file_read(&t, 255, fbuf, bs);
	CU_ASSERT_EQUAL(memcmp(fbuf, wbuf, bs), 0);

	bdev_get_stats(t.b, &st);
	CU_ASSERT_EQUAL(st.write_ops, 3);
	CU_ASSERT_EQUAL(st.read_ops, 4);
	CU_ASSERT_EQUAL(st.flush_ops, 1);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(st.bytes_written, (2 * 16 + 1) * (uint64_t)bs);
	aut_teardown(&t);
	free(wbuf);
	free(rbuf);
	free(fbuf);
}

static void test_tmp_512(void)
{
	aut_round_trip("/tmp", 512, false);
}

static void test_tmp_4096(void)
{
	aut_round_trip("/tmp", 4096, false);
}

static void test_shm_512(void)
{
	aut_round_trip("/dev/shm", 512, false);
}

static void test_shm_4096(void)
{
	aut_round_trip("/dev/shm", 4096, false);
}

static void test_buffered_4096(void)
{
	aut_round_trip("/tmp", 4096, true);
}

/* FUA writes and writes with the write cache disabled reach the file before completing. */
static void test_fua_and_write_cache(void)
{
	uint8_t *wbuf = aut_alloc(8192), *fbuf = aut_alloc(8192);
	struct iovec iov = {wbuf, 4096};
	struct ut_result res;
	struct bdev_io *io;
	struct aut t;

	aut_setup(&t, "/tmp", 4096, 64, 0, false);
	io = ut_io_alloc(t.b);
	ut_pattern(wbuf, 8192, 42);
	ut_io_rw(io, BDEV_IO_WRITE, 7, 1, &iov, 1, &res);
	io->flags = BDEV_IO_F_FUA;
	CU_ASSERT_EQUAL(ut_submit_wait(t.ch, io, &res), 0);
	aut_file_read(&t, 7, fbuf, 4096);
	CU_ASSERT_EQUAL(memcmp(fbuf, wbuf, 4096), 0);

	/* Cache off: a plain write is turned into FUA. */
	CU_ASSERT_EQUAL(bdev_set_write_cache(t.b, false), 0);
	CU_ASSERT_FALSE(bdev_write_cache_enabled(t.b));
	/* Still present (Identify does not change), only disabled. */
	CU_ASSERT_TRUE(bdev_has_write_cache(t.b));
	iov.iov_base = wbuf + 4096;
	ut_io_rw(io, BDEV_IO_WRITE, 8, 1, &iov, 1, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(t.ch, io, &res), 0);
	CU_ASSERT_TRUE(io->flags & BDEV_IO_F_FUA);
	aut_file_read(&t, 8, fbuf, 4096);
	CU_ASSERT_EQUAL(memcmp(fbuf, wbuf + 4096, 4096), 0);
	CU_ASSERT_EQUAL(bdev_set_write_cache(t.b, true), 0);
	ut_io_rw(io, BDEV_IO_WRITE, 9, 1, &iov, 1, &res);
	CU_ASSERT_EQUAL(ut_submit_wait(t.ch, io, &res), 0);
	CU_ASSERT_FALSE(io->flags & BDEV_IO_F_FUA);
	/* FUA on write-zeroes too. */
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_WRITE_ZEROES, 7, 2, BDEV_IO_F_FUA), 0);
	aut_file_read(&t, 7, fbuf, 8192);
	CU_ASSERT_TRUE(ut_is_zero(fbuf, 8192));
	free(io);
	aut_teardown(&t);
	free(wbuf);
	free(fbuf);
}

/* Unmap punches holes (the file loses blocks) and reads zeroes; write-zeroes reads zeroes. */
static void aut_punch(const char *dir)
{
	size_t len = 256 * 4096;
	uint8_t *wbuf = aut_alloc(len), *rbuf = aut_alloc(len);
	struct bdev_range ranges[] = {{16, 64}, {128, 32}, {200, 0}};
	long before, after;
	struct aut t;
	uint64_t lba;

	aut_setup(&t, dir, 4096, 256, 0, false);
	ut_pattern(wbuf, len, 3);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_WRITE, 0, 256, wbuf, NULL), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	before = aut_file_blocks(&t);
	CU_ASSERT_EQUAL(ut_unmap_sync(t.ch, ranges, 3), 0);
	after = aut_file_blocks(&t);
	/* 96 blocks of 4 KiB = 768 sectors of 512 bytes were released. */
	CU_ASSERT_TRUE(before - after >= 768);
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_WRITE_ZEROES, 220, 10, 0), 0);
	/* The file keeps its size. */
	CU_ASSERT_EQUAL(bdev_get_num_blocks(t.b), 256);
	memset(rbuf, 0xee, len);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_READ, 0, 256, rbuf, NULL), 0);
	for (lba = 0; lba < 256; lba++) {
		bool zero = (lba >= 16 && lba < 80) || (lba >= 128 && lba < 160) ||
			    (lba >= 220 && lba < 230);

		if (zero) {
			CU_ASSERT_TRUE(ut_is_zero(rbuf + lba * 4096, 4096));
		} else {
			CU_ASSERT_EQUAL(memcmp(rbuf + lba * 4096, wbuf + lba * 4096, 4096), 0);
		}
	}
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	aut_file_read(&t, 16, rbuf, 64 * 4096);
	CU_ASSERT_TRUE(ut_is_zero(rbuf, 64 * 4096));
	aut_teardown(&t);
	free(wbuf);
	free(rbuf);
}

static void test_punch_tmp(void)
{
	aut_punch("/tmp");
}

static void test_punch_shm(void)
{
	aut_punch("/dev/shm");
}

/* The completion arrives through the channel's eventfd, never inside submit. */
static void test_eventfd_completion(void)
{
	uint8_t *buf = aut_alloc(4096);
	struct iovec iov = {buf, 4096};
	struct ut_result res;
	struct bdev_io *io;
	struct aut t;
	int polls = 0;

	aut_setup(&t, "/tmp", 4096, 16, 0, false);
	io = ut_io_alloc(t.b);
	ut_io_rw(io, BDEV_IO_READ, 1, 1, &iov, 1, &res);
	bdev_submit(t.ch, io);
	CU_ASSERT_EQUAL(res.calls, 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(t.ch), 1);
	while (res.calls == 0 && polls < 10) {
		CU_ASSERT_TRUE_FATAL(ut_fd_readable(t.ch, 5000));
		bdev_channel_poll(t.ch);
		polls++;
	}
	CU_ASSERT_EQUAL(res.calls, 1);
	CU_ASSERT_EQUAL(res.status, 0);
	CU_ASSERT_FALSE(ut_fd_readable(t.ch, 0));
	free(io);
	aut_teardown(&t);
	free(buf);
}

/* Completions the kernel signals after the poll that submitted them (data on the disk, read
 * with O_DIRECT: not finished inside io_submit) leave the channel's eventfd unreadable once
 * reaped. A signal no poll takes keeps the fd readable, and the thread waiting on it (a poll
 * group, the placement bdev's owner) spins instead of sleeping. */
static void test_idle_after_async_completions(void)
{
	enum { N = 16 };
	uint8_t *buf = aut_alloc(64 * 1024);
	struct aut t;

	aut_setup(&t, "/var/tmp", 4096, 256, 0, false);
	memset(buf, 0x5a, 64 * 1024);
	/* Allocated and on the disk, so that the reads below go to it. */
	for (int i = 0; i < N; i++)
		CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_WRITE, (uint64_t)i * 16, 16, buf,
					   NULL), 0);
	CU_ASSERT_EQUAL(ut_nodata_sync(t.ch, BDEV_IO_FLUSH, 0, 0, 0), 0);
	for (int i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_READ, (uint64_t)i * 16, 16, buf,
					   NULL), 0);
		CU_ASSERT_FALSE(ut_fd_readable(t.ch, 0));
	}
	aut_teardown(&t);
	free(buf);
}

/* Queue depth 32 with 96 ios submitted at once: the excess waits in the channel. */
static void test_queue_depth_32(void)
{
	enum { N = 96 };
	struct bdev_io *ios[N];
	struct ut_result res[N];
	struct iovec iov[N];
	uint8_t *wbuf = aut_alloc(N * 4096), *rbuf = aut_alloc(N * 4096);
	struct aut t;
	int i, done = 0;

	aut_setup(&t, "/tmp", 4096, 128, 32, false);
	ut_pattern(wbuf, N * 4096, 11);
	for (i = 0; i < N; i++) {
		ios[i] = ut_io_alloc(t.b);
		iov[i].iov_base = wbuf + (size_t)i * 4096;
		iov[i].iov_len = 4096;
		ut_io_rw(ios[i], BDEV_IO_WRITE, (uint64_t)(N - 1 - i), 1, &iov[i], 1, &res[i]);
		res[i].done_count = &done;
		bdev_submit(t.ch, ios[i]);
	}
	CU_ASSERT_EQUAL(done, 0);
	CU_ASSERT_EQUAL(bdev_channel_outstanding(t.ch), N);
	CU_ASSERT_EQUAL(ut_wait(t.ch, &done, N, 5000), 0);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(res[i].calls, 1);
		CU_ASSERT_EQUAL(res[i].status, 0);
	}
	/* Read back concurrently too. */
	done = 0;
	for (i = 0; i < N; i++) {
		iov[i].iov_base = rbuf + (size_t)i * 4096;
		ut_io_rw(ios[i], BDEV_IO_READ, (uint64_t)i, 1, &iov[i], 1, &res[i]);
		res[i].done_count = &done;
		bdev_submit(t.ch, ios[i]);
	}
	CU_ASSERT_EQUAL(ut_wait(t.ch, &done, N, 5000), 0);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL(res[i].calls, 1);
		CU_ASSERT_EQUAL(res[i].status, 0);
		CU_ASSERT_EQUAL(
		    memcmp(rbuf + (size_t)i * 4096, wbuf + (size_t)(N - 1 - i) * 4096, 4096), 0);
		free(ios[i]);
	}
	aut_teardown(&t);
	free(wbuf);
	free(rbuf);
}

/* The file shrinks behind the bdev: the read comes back short and completes with -EIO. */
static void test_short_read_is_eio(void)
{
	uint8_t *buf = aut_alloc(4096);
	struct bdev_stats st;
	struct aut t;

	aut_setup(&t, "/tmp", 4096, 16, 0, false);
	CU_ASSERT_EQUAL(truncate(t.path, 8 * 4096), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_READ, 12, 1, buf, NULL), -EIO);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_READ, 2, 1, buf, NULL), 0);
	bdev_get_stats(t.b, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	aut_teardown(&t);
	free(buf);
}

static void test_create_errors(void)
{
	struct bdev_aio_opts opts = {0};
	char path[64] = "/tmp/bdev_aio_ut.XXXXXX";
	struct bdev *b = NULL;
	struct stat st;
	int fd = mkstemp(path);

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "tiny", 4), 4);
	close(fd);
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", NULL, &b), -EINVAL);
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), -EINVAL);
	opts.filename = "/tmp/bdev_aio_ut_does_not_exist";
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), -ENOENT);
	opts.filename = path;
	/* Smaller than one block. */
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), -EINVAL);
	opts.block_size = 1024;
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), -EINVAL);
	opts.block_size = 4096;
	opts.create_size = 4096 * 3 + 512;
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), -EINVAL);
	opts.filename = "/tmp";
	opts.create_size = 0;
	CU_ASSERT_NOT_EQUAL(BDEV_FILE_UT_CREATE("a", &opts, &b), 0);
	CU_ASSERT_PTR_NULL(b);
	CU_ASSERT_PTR_NULL(bdev_lookup("a"));

	/* A taken name is refused before the file is created. */
	CU_ASSERT_EQUAL_FATAL(bdev_null_create("taken", 8, 512, NULL, false, NULL), 0);
	opts.filename = "/tmp/bdev_aio_ut_never_created";
	opts.create_size = 4096 * 4;
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("taken", &opts, &b), -EEXIST);
	CU_ASSERT_NOT_EQUAL(stat(opts.filename, &st), 0);
	CU_ASSERT_EQUAL(bdev_delete("taken"), 0);

	/* So is a bad name. */
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE(NULL, &opts, &b), -EINVAL);
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("", &opts, &b), -EINVAL);
	CU_ASSERT_NOT_EQUAL(stat(opts.filename, &st), 0);

	/* create_size creates a missing file. */
	CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("made", &opts, &b), 0);
	CU_ASSERT_EQUAL(stat(opts.filename, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 4096 * 4);
	CU_ASSERT_EQUAL(bdev_get_num_blocks(b), 4);
	CU_ASSERT_EQUAL(bdev_delete("made"), 0);
	if (BDEV_FILE_UT_POLL) {
		/* Polled I/O needs O_DIRECT: a buffered file (asked, or on tmpfs) is refused;
		 * on a device without poll queues too (what ut_dir_polls found for /tmp). */
		opts.create_size = 0;
		opts.poll = true;
		opts.buffered = true;
		CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("polled", &opts, &b), -EINVAL);
		CU_ASSERT_PTR_NULL(bdev_lookup("polled"));
		opts.buffered = false;
		CU_ASSERT_EQUAL(BDEV_FILE_UT_CREATE("polled", &opts, &b),
				ut_dir_polls ? 0 : -EOPNOTSUPP);
		if (ut_dir_polls)
			CU_ASSERT_EQUAL(bdev_delete("polled"), 0);
		CU_ASSERT_PTR_NULL(ut_dir_polls ? NULL : bdev_lookup("polled"));
	}
	unlink(opts.filename);
	unlink(path);
}

/* A second thread with its own channel on the same bdev: each thread submits, polls and gets
 * its callbacks on its own channel (the poll group model). */
struct aut_thread {
	struct bdev *b;
	uint8_t *buf;
	int rc_create, rc_write, rc_destroy;
};

/* No CUnit assertions on this thread (CUnit is not thread-safe): results go back in *th. */
static void *aut_thread_main(void *arg)
{
	struct aut_thread *th = arg;
	struct iovec iov = {th->buf, 32 * 4096};
	struct bdev_channel *ch;
	struct ut_result res;
	struct bdev_io *io;
	int done = 0;

	th->rc_create = bdev_channel_create(th->b, &ch);
	if (th->rc_create)
		return NULL;
	io = ut_io_alloc(th->b);
	ut_io_rw(io, BDEV_IO_WRITE, 32, 32, &iov, 1, &res);
	res.done_count = &done;
	bdev_submit(ch, io);
	th->rc_write = ut_wait(ch, &done, 1, 5000);
	if (!th->rc_write)
		th->rc_write = res.calls == 1 ? res.status : -EPROTO;
	th->rc_destroy = bdev_channel_destroy(ch);
	free(io);
	return NULL;
}

static void test_two_threads(void)
{
	uint8_t *mine = aut_alloc(32 * 4096), *theirs = aut_alloc(32 * 4096);
	uint8_t *rbuf = aut_alloc(64 * 4096);
	struct aut_thread th = {0};
	pthread_t tid;
	struct aut t;

	aut_setup(&t, "/tmp", 4096, 64, 8, false);
	ut_pattern(mine, 32 * 4096, 100);
	ut_pattern(theirs, 32 * 4096, 200);
	th.b = t.b;
	th.buf = theirs;
	th.rc_create = th.rc_write = th.rc_destroy = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, aut_thread_main, &th), 0);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_WRITE, 0, 32, mine, NULL), 0);
	CU_ASSERT_EQUAL(pthread_join(tid, NULL), 0);
	CU_ASSERT_EQUAL(th.rc_create, 0);
	CU_ASSERT_EQUAL(th.rc_write, 0);
	CU_ASSERT_EQUAL(th.rc_destroy, 0);
	CU_ASSERT_EQUAL(ut_rw_sync(t.ch, 4096, BDEV_IO_READ, 0, 64, rbuf, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(rbuf, mine, 32 * 4096), 0);
	CU_ASSERT_EQUAL(memcmp(rbuf + 32 * 4096, theirs, 32 * 4096), 0);
	aut_teardown(&t);
	free(mine);
	free(theirs);
	free(rbuf);
}

/* Random mixed workload against a model: direct and buffered, both block sizes, 32 ios per
 * round on a queue depth of 8 so that most of them wait in the channel. */
static void aut_model(const char *dir, uint32_t bs, bool buffered, unsigned int seed)
{
	struct aut t;

	aut_setup(&t, dir, bs, 192, 8, buffered);
	CU_ASSERT_EQUAL(ut_model_run(t.ch, bs, 192, seed, 40, 32), 0);
	aut_teardown(&t);
}

static void test_model(void)
{
	aut_model("/tmp", 512, false, 1);
	aut_model("/tmp", 4096, false, 2);
	aut_model("/tmp", 4096, true, 3);
	aut_model("/dev/shm", 512, false, 4);
}

/* Attaches a new loop device with `sector`-byte logical blocks over `file` (auto-cleared on the
 * last close). Stores its path in dev and a descriptor holding it in *lfd. Returns 0 or -errno. */
static int aut_loop_attach(const char *file, uint32_t sector, char *dev, size_t devlen, int *lfd)
{
	struct loop_config cfg;
	int ctl, back, fd, n, tries, rc = -EBUSY;

	back = open(file, O_RDWR | O_CLOEXEC);
	if (back < 0)
		return -errno;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		rc = -errno;
		goto out_close_back;
	}
	/* Another process may take the free device between the two calls: retry a few times. */
	for (tries = 0; tries < 8 && rc == -EBUSY; tries++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			rc = -errno;
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (uint32_t)back;
		cfg.block_size = sector;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (!ioctl(fd, LOOP_CONFIGURE, &cfg)) {
			*lfd = fd;
			rc = 0;
			break;
		}
		rc = -errno;
		close(fd);
	}
	close(ctl);
out_close_back:
	close(back);
	return rc;
}

/* A block device: size from BLKGETSIZE64, O_DIRECT alignment from its logical block size. With
 * 4096-byte sectors a 512-byte bdev cannot use O_DIRECT and falls back to buffered I/O. */
static void test_block_device(void)
{
	char file[64] = "/tmp/bdev_aio_ut_loop.XXXXXX", dev[32];
	struct bdev_aio_opts opts = {0};
	struct bdev_channel *ch;
	struct bdev_info info;
	struct bdev *b;
	int fd, lfd = -1, rc;

	fd = mkstemp(file);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, 1 << 20), 0);
	close(fd);
	rc = aut_loop_attach(file, 4096, dev, sizeof(dev), &lfd);
	if (rc) {
		/* Not root or no loop driver: the file-backed tests cover the rest. */
		printf("[skipped: no loop device: %s] ", strerror(-rc));
		unlink(file);
		return;
	}
	opts.filename = dev;
	opts.block_size = 512;
	opts.queue_depth = 8;
	CU_ASSERT_EQUAL_FATAL(BDEV_FILE_UT_CREATE("blk", &opts, &b), 0);
	bdev_get_info(b, &info);
	CU_ASSERT_FALSE(info.direct_io);
	CU_ASSERT_EQUAL(info.num_blocks, (1 << 20) / 512);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
	CU_ASSERT_EQUAL(ut_model_run(ch, 512, 256, 7, 20, 16), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("blk"), 0);

	opts.block_size = 4096;
	CU_ASSERT_EQUAL_FATAL(BDEV_FILE_UT_CREATE("blk", &opts, &b), 0);
	bdev_get_info(b, &info);
	CU_ASSERT_TRUE(info.direct_io);
	CU_ASSERT_EQUAL(info.num_blocks, 256);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
	/* The model starts from zeroes: clear what the first run left on the device. */
	CU_ASSERT_EQUAL(ut_nodata_sync(ch, BDEV_IO_WRITE_ZEROES, 0, 256, 0), 0);
	CU_ASSERT_EQUAL(ut_model_run(ch, 4096, 256, 8, 20, 16), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(ch), 0);
	bdev_close(b);
	CU_ASSERT_EQUAL(bdev_delete("blk"), 0);
	close(lfd);
	unlink(file);
}

/* One more level so that BDEV_FILE_UT_SUITE expands before CUNIT_SUITE pastes it. */
#define BDEV_FILE_UT_REGISTER(suite, ...) CUNIT_SUITE(suite, __VA_ARGS__)
BDEV_FILE_UT_REGISTER(BDEV_FILE_UT_SUITE, aut_suite_init, NULL, {"model", test_model}, {"block_device", test_block_device},
	    {"two_threads", test_two_threads}, {"create_errors", test_create_errors},
	    {"tmp_512", test_tmp_512}, {"tmp_4096", test_tmp_4096}, {"shm_512", test_shm_512},
	    {"shm_4096", test_shm_4096}, {"buffered_4096", test_buffered_4096},
	    {"fua_and_write_cache", test_fua_and_write_cache}, {"punch_tmp", test_punch_tmp},
	    {"punch_shm", test_punch_shm}, {"eventfd_completion", test_eventfd_completion},
	    {"idle_after_async_completions", test_idle_after_async_completions},
	    {"queue_depth_32", test_queue_depth_32}, {"short_read_is_eio", test_short_read_is_eio})
