/* tests/unit/backend/bdev_ut_util.c - helpers for bdev tests (see bdev_ut_util.h). */
#include "tests/unit/backend/bdev_ut_util.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct bdev_io *ut_io_alloc(const struct bdev *bdev)
{
	return ut_io_alloc_size(bdev_io_size(bdev));
}

struct bdev_io *ut_io_alloc_size(size_t size)
{
	struct bdev_io *io;

	size = (size + 15) & ~(size_t)15;
	io = aligned_alloc(16, size);

	if (!io)
		abort();
	memset(io, 0, size);
	return io;
}

static void ut_io_done(struct bdev_io *io, int status, void *cb_arg)
{
	struct ut_result *res = cb_arg;

	res->status = status;
	res->calls++;
	if (res->done_count)
		(*res->done_count)++;
}

void ut_io_rw(struct bdev_io *io, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
	      const struct iovec *iov, int iovcnt, struct ut_result *res)
{
	io->type = type;
	io->flags = 0;
	io->offset_blocks = lba;
	io->num_blocks = nblocks;
	io->iov = iov;
	io->iovcnt = iovcnt;
	io->ranges = NULL;
	io->nranges = 0;
	io->cb = ut_io_done;
	io->cb_arg = res;
	res->status = 1;
	res->calls = 0;
	res->done_count = NULL;
}

void ut_io_nodata(struct bdev_io *io, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
		  struct ut_result *res)
{
	ut_io_rw(io, type, lba, nblocks, NULL, 0, res);
}

int ut_fd_readable(struct bdev_channel *ch, int timeout_ms)
{
	struct epoll_event ev = {.events = EPOLLIN}, out;
	int ep = epoll_create1(EPOLL_CLOEXEC), n;

	if (ep < 0)
		return 0;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, bdev_channel_get_fd(ch), &ev)) {
		close(ep);
		return 0;
	}
	n = epoll_wait(ep, &out, 1, timeout_ms);
	close(ep);
	return n == 1;
}

int ut_wait(struct bdev_channel *ch, const int *done, int want, int timeout_ms)
{
	bdev_channel_poll(ch);
	while (*done < want) {
		if (!ut_fd_readable(ch, timeout_ms))
			return -ETIMEDOUT;
		bdev_channel_poll(ch);
	}
	return 0;
}

int ut_submit_wait(struct bdev_channel *ch, struct bdev_io *io, struct ut_result *res)
{
	int done = 0;

	res->done_count = &done;
	bdev_submit(ch, io);
	/* The callback must never run inside submit. */
	CU_ASSERT_EQUAL(res->calls, 0);
	if (ut_wait(ch, &done, 1, 5000))
		return -ETIMEDOUT;
	CU_ASSERT_EQUAL(res->calls, 1);
	res->done_count = NULL;
	return res->status;
}

int ut_rw_sync(struct bdev_channel *ch, uint32_t block_size, enum bdev_io_type type, uint64_t lba,
	       uint64_t nblocks, void *buf, const size_t *cuts)
{
	struct iovec iov[64];
	struct ut_result res;
	struct bdev_io *io;
	size_t total = nblocks * block_size, off = 0;
	int n = 0, rc;

	/* Cut the buffer at the given lengths; the rest goes into a last iovec. */
	while (cuts && cuts[n] && off + cuts[n] < total && n < 63) {
		iov[n].iov_base = (uint8_t *)buf + off;
		iov[n].iov_len = cuts[n];
		off += cuts[n];
		n++;
	}
	iov[n].iov_base = (uint8_t *)buf + off;
	iov[n].iov_len = total - off;
	n++;
	io = ut_io_alloc_size(UT_IO_SIZE);
	ut_io_rw(io, type, lba, nblocks, iov, n, &res);
	rc = ut_submit_wait(ch, io, &res);
	free(io);
	return rc;
}

int ut_nodata_sync(struct bdev_channel *ch, enum bdev_io_type type, uint64_t lba, uint64_t nblocks,
		   uint32_t flags)
{
	struct ut_result res;
	struct bdev_io *io = ut_io_alloc_size(UT_IO_SIZE);
	int rc;

	ut_io_nodata(io, type, lba, nblocks, &res);
	io->flags = flags;
	rc = ut_submit_wait(ch, io, &res);
	free(io);
	return rc;
}

int ut_unmap_sync(struct bdev_channel *ch, const struct bdev_range *ranges, uint32_t nranges)
{
	struct ut_result res;
	struct bdev_io *io = ut_io_alloc_size(UT_IO_SIZE);
	int rc;

	ut_io_nodata(io, BDEV_IO_UNMAP, 0, 0, &res);
	io->ranges = ranges;
	io->nranges = nranges;
	rc = ut_submit_wait(ch, io, &res);
	free(io);
	return rc;
}

void ut_pattern(void *buf, size_t len, unsigned int seed)
{
	uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

int ut_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i])
			return 0;
	}
	return 1;
}
