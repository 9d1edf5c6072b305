/* tests/unit/backend/bdev_ut_util.c - helpers for bdev tests (see bdev_ut_util.h). */
#include "tests/unit/backend/bdev_ut_util.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
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
	/* io_uring's completion work interrupts a sleeping submitter (EINTR) before it signals
	 * the eventfd: wait again, as the daemon's event loop does. */
	do
		n = epoll_wait(ep, &out, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
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

/* ---- random workload against a model ---- */

struct ut_model_op {
	struct bdev_io *io;
	struct ut_result res;
	struct iovec iov[5];
	struct bdev_range ranges[3];
	uint8_t *buf;
};

static uint32_t ut_rand(uint32_t *state)
{
	/* xorshift32: deterministic per seed, so a failure can be replayed. */
	*state ^= *state << 13;
	*state ^= *state >> 17;
	*state ^= *state << 5;
	return *state;
}

/* Claims [lba, lba + n) in the round's busy map; false if any block is taken. */
static bool ut_model_claim(uint8_t *busy, uint64_t lba, uint64_t n)
{
	uint64_t i;

	for (i = lba; i < lba + n; i++) {
		if (busy[i])
			return false;
	}
	memset(busy + lba, 1, n);
	return true;
}

/* Cuts len bytes of buf into up to 5 iovecs, at 512-byte multiples or anywhere. */
static int ut_model_cut(struct iovec *iov, uint8_t *buf, size_t len, uint32_t *rs)
{
	bool aligned = ut_rand(rs) & 1;
	size_t off = 0;
	int n = 0;

	while (n < 4 && off < len) {
		size_t left = len - off, piece;

		if (ut_rand(rs) % 3 == 0)
			break;
		piece = 1 + ut_rand(rs) % left;
		if (aligned)
			piece = (piece + 511) & ~(size_t)511;
		if (piece >= left)
			break;
		iov[n].iov_base = buf + off;
		iov[n].iov_len = piece;
		off += piece;
		n++;
	}
	iov[n].iov_base = buf + off;
	iov[n].iov_len = len - off;
	return n + 1;
}

/* Prepares one random io on free blocks; false when it found none this time. */
static bool ut_model_prepare(struct ut_model_op *op, uint8_t *model, uint8_t *busy, uint32_t bs,
			     uint64_t nblocks, uint32_t *rs)
{
	uint32_t kind = ut_rand(rs) % 20, i;
	uint64_t n = 1 + ut_rand(rs) % 16, lba;
	size_t len;

	if (n > nblocks)
		n = nblocks;
	lba = ut_rand(rs) % (nblocks - n + 1);
	len = n * bs;
	if (kind < 2) {
		ut_io_nodata(op->io, BDEV_IO_FLUSH, 0, 0, &op->res);
		return true;
	}
	if (kind < 4) {
		/* Unmap up to 3 free ranges. */
		uint32_t want = 1 + ut_rand(rs) % 3, got = 0;

		for (i = 0; i < want; i++) {
			uint64_t rn = 1 + ut_rand(rs) % 8, rl;

			if (rn > nblocks)
				rn = nblocks;
			rl = ut_rand(rs) % (nblocks - rn + 1);
			if (!ut_model_claim(busy, rl, rn))
				continue;
			op->ranges[got].offset_blocks = rl;
			op->ranges[got].num_blocks = rn;
			memset(model + rl * bs, 0, rn * bs);
			got++;
		}
		if (!got)
			return false;
		ut_io_nodata(op->io, BDEV_IO_UNMAP, 0, 0, &op->res);
		op->io->ranges = op->ranges;
		op->io->nranges = got;
		return true;
	}
	if (!ut_model_claim(busy, lba, n))
		return false;
	if (kind < 6) {
		ut_io_nodata(op->io, BDEV_IO_WRITE_ZEROES, lba, n, &op->res);
		memset(model + lba * bs, 0, len);
		return true;
	}
	/* One spare byte so that a buffer can start unaligned. */
	op->buf = aligned_alloc(4096, (len + 1 + 4095) & ~(size_t)4095);
	if (!op->buf)
		abort();
	if (kind < 13) {
		uint8_t *data = op->buf + (ut_rand(rs) % 4 == 0);
		int cnt;

		ut_pattern(data, len, ut_rand(rs));
		memcpy(model + lba * bs, data, len);
		cnt = ut_model_cut(op->iov, data, len, rs);
		ut_io_rw(op->io, BDEV_IO_WRITE, lba, n, op->iov, cnt, &op->res);
		if (ut_rand(rs) % 4 == 0)
			op->io->flags = BDEV_IO_F_FUA;
		return true;
	}
	memset(op->buf, 0xa5, len + 1);
	ut_io_rw(op->io, BDEV_IO_READ, lba, n, op->iov, ut_model_cut(op->iov, op->buf, len, rs),
		 &op->res);
	return true;
}

int ut_model_run(struct bdev_channel *ch, uint32_t block_size, uint64_t nblocks, unsigned int seed,
		 int rounds, int qd)
{
	struct ut_model_op *ops = calloc((size_t)qd, sizeof(*ops));
	uint8_t *model = calloc(nblocks, block_size), *busy = malloc(nblocks);
	uint8_t *all = aligned_alloc(4096, nblocks * block_size);
	uint32_t rs = seed * 2654435761u | 1;
	int bad = 0, r, i, n, done;

	if (!ops || !model || !busy || !all)
		abort();
	for (i = 0; i < qd; i++)
		ops[i].io = ut_io_alloc_size(UT_IO_SIZE);
	for (r = 0; r < rounds; r++) {
		memset(busy, 0, nblocks);
		n = 0;
		for (i = 0; i < qd; i++) {
			ops[n].buf = NULL;
			if (ut_model_prepare(&ops[n], model, busy, block_size, nblocks, &rs))
				n++;
			else
				free(ops[n].buf);
		}
		done = 0;
		for (i = 0; i < n; i++) {
			ops[i].res.done_count = &done;
			bdev_submit(ch, ops[i].io);
		}
		if (ut_wait(ch, &done, n, 5000))
			return bad + n - done + 1;
		for (i = 0; i < n; i++) {
			struct bdev_io *io = ops[i].io;

			if (ops[i].res.calls != 1 || ops[i].res.status != 0) {
				printf("round %d io %d type %d: calls %d status %d\n", r, i,
				       (int)io->type, ops[i].res.calls, ops[i].res.status);
				bad++;
			} else if (io->type == BDEV_IO_READ &&
				   memcmp(ops[i].buf, model + io->offset_blocks * block_size,
					  io->num_blocks * block_size)) {
				printf("round %d: read lba %" PRIu64 "+%" PRIu64 " differs\n", r,
				       io->offset_blocks, io->num_blocks);
				bad++;
			}
			free(ops[i].buf);
			ops[i].buf = NULL;
		}
	}
	if (ut_rw_sync(ch, block_size, BDEV_IO_READ, 0, nblocks, all, NULL) ||
	    memcmp(all, model, nblocks * block_size)) {
		printf("final read back differs\n");
		bad++;
	}
	for (i = 0; i < qd; i++)
		free(ops[i].io);
	free(ops);
	free(model);
	free(busy);
	free(all);
	return bad;
}

void ut_dev_open(struct ut_dev *d, struct bdev *b)
{
	d->b = b;
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL_FATAL(bdev_open(b), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &d->ch), 0);
}

void ut_dev_close(struct ut_dev *d)
{
	CU_ASSERT_EQUAL(bdev_channel_outstanding(d->ch), 0);
	CU_ASSERT_EQUAL(bdev_channel_destroy(d->ch), 0);
	bdev_close(d->b);
}

struct bdev *ut_aio_temp_create(const char *name, uint64_t bytes, char path[64])
{
	struct bdev_aio_opts opts = {0};
	struct bdev *b = NULL;
	int fd;

	snprintf(path, 64, "/var/tmp/%s.XXXXXX", name);
	fd = mkstemp(path);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	close(fd);
	opts.filename = path;
	opts.block_size = 512;
	opts.create_size = bytes;
	CU_ASSERT_EQUAL_FATAL(bdev_aio_create(name, &opts, &b), 0);
	return b;
}

void ut_aio_temp_delete(const char *name, const char *path)
{
	CU_ASSERT_EQUAL(bdev_delete(name), 0);
	unlink(path);
}
