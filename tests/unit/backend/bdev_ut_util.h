/* tests/unit/backend/bdev_ut_util.h - helpers for bdev tests: preallocated ios, waiting for
 * completions on a channel's eventfd, synchronous wrappers. */
#ifndef NVME_EMU_TESTS_UNIT_BACKEND_BDEV_UT_UTIL_H
#define NVME_EMU_TESTS_UNIT_BACKEND_BDEV_UT_UTIL_H

#include "backend/bdev.h"

/* Result slot that the test completion callback fills. */
struct ut_result {
	int status;
	int calls;	 /* how many times the callback ran for this io (must end at 1) */
	int *done_count; /* incremented on each completion when not NULL */
};

/* Allocates one io sized for bdev (aligned, zeroed). Aborts on allocation failure. */
struct bdev_io *ut_io_alloc(const struct bdev *bdev);
/* Same with an explicit size; UT_IO_SIZE fits every module (checked by the tests). */
struct bdev_io *ut_io_alloc_size(size_t size);
#define UT_IO_SIZE 1024

/* Fills io for a READ/WRITE and points its callback at res. */
void ut_io_rw(struct bdev_io *io, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
	      const struct iovec *iov, int iovcnt, struct ut_result *res);
/* Fills io for any other type (no data). */
void ut_io_nodata(struct bdev_io *io, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
		  struct ut_result *res);

/* Polls ch until *done >= want, sleeping in epoll_wait on the channel fd between polls. Returns 0,
 * or -ETIMEDOUT when no completion arrives for timeout_ms. */
int ut_wait(struct bdev_channel *ch, const int *done, int want, int timeout_ms);

/* Waits (epoll, bounded) for the channel fd to become readable. Returns 1 if it did, 0 if not. */
int ut_fd_readable(struct bdev_channel *ch, int timeout_ms);

/* Submits io, checks the callback did not run inside submit, waits for it and returns the
 * status (or -ETIMEDOUT). */
int ut_submit_wait(struct bdev_channel *ch, struct bdev_io *io, struct ut_result *res);

/* Synchronous READ/WRITE of a flat buffer cut into iovecs at the given lengths (0-terminated
 * list; NULL = one iovec). Returns the completion status. */
int ut_rw_sync(struct bdev_channel *ch, uint32_t block_size, enum bdev_io_type type, uint64_t lba,
	       uint64_t nblocks, void *buf, const size_t *cuts);

/* Synchronous no-data io (FLUSH, WRITE_ZEROES) and UNMAP of ranges. */
int ut_nodata_sync(struct bdev_channel *ch, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
		   uint32_t flags);
int ut_unmap_sync(struct bdev_channel *ch, const struct bdev_range *ranges, uint32_t nranges);

/*
 * Random mixed workload checked against an in-memory model of the first `nblocks` blocks (which
 * must read as zeroes at the start): each round submits up to `qd` ios on disjoint ranges at once
 * (writes with iovecs cut at random, sometimes unaligned, places; reads; write-zeroes; unmaps of
 * 1-3 ranges; flushes), waits for all, checks every status and every read, and finally reads the
 * whole area back. Returns the number of mismatches or failed ios (0 = pass). Uses CUnit asserts:
 * main thread only.
 */
int ut_model_run(struct bdev_channel *ch, uint32_t block_size, uint64_t nblocks, unsigned int seed,
		 int rounds, int qd);

/* A bdev opened with a channel on the calling thread, for tests of one bdev. */
struct ut_dev {
	struct bdev *b;
	struct bdev_channel *ch;
};
/* Opens b and creates the channel (CUnit fatal on failure). */
void ut_dev_open(struct ut_dev *d, struct bdev *b);
/* Checks nothing is outstanding, destroys the channel and closes the bdev. */
void ut_dev_close(struct ut_dev *d);

/* An aio bdev `name` of 512-byte blocks on a new temporary file of `bytes` under /var/tmp; the
 * file's path goes to path (64 bytes). CUnit fatal on failure. */
struct bdev *ut_aio_temp_create(const char *name, uint64_t bytes, char path[64]);
/* Deletes that bdev and its file. */
void ut_aio_temp_delete(const char *name, const char *path);

/* Fills buf with a pattern derived from seed. */
void ut_pattern(void *buf, size_t len, unsigned int seed);
/* True when every byte of buf is zero. */
int ut_is_zero(const void *buf, size_t len);

#endif
