/* backend/bdev_null.c - null bdev: nothing is stored, writes are dropped. Reads leave the buffer
 * as it is (SPDK's null bdev; QEMU's null-co with read-zeroes=off), so that a benchmark
 * measures the emulator rather than memset; with read_zeroes they return zeroes (read-zeroes=on)
 * and deallocation is offered, since deallocated blocks then read back as zeroes (DLFEAT). */
#include "backend/bdev_internal.h"

#include <string.h>

static void bdev_null_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	bdev_io_complete(io, 0);
}

static void bdev_null_zeroes_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	if (io->type == BDEV_IO_READ) {
		for (int i = 0; i < io->iovcnt; i++)
			memset(io->iov[i].iov_base, 0, io->iov[i].iov_len);
	}
	bdev_io_complete(io, 0);
}

/* Without read_zeroes no deallocation: nothing would read back as zeroes after it. */
static const struct bdev_module_ops bdev_null_ops = {
    .module_name = "null",
    .product_name = "Null disk",
    .io_ctx_size = 0,
    .io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		1u << BDEV_IO_WRITE_ZEROES,
    .has_write_cache = false,
    .submit = bdev_null_submit,
};

static void bdev_null_zeroes_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	info->read_zeroes = true;
}

static const struct bdev_module_ops bdev_null_zeroes_ops = {
    .module_name = "null",
    .product_name = "Null disk",
    .io_ctx_size = 0,
    .io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
    .has_write_cache = false,
    .submit = bdev_null_zeroes_submit,
    .get_info = bdev_null_zeroes_get_info,
};

int bdev_null_create(const char *name, uint64_t num_blocks, uint32_t block_size,
		     const uint8_t *uuid, bool read_zeroes, struct bdev **out)
{
	struct bdev *b;
	int rc;

	rc = bdev_alloc(name, read_zeroes ? &bdev_null_zeroes_ops : &bdev_null_ops, block_size,
			num_blocks, uuid, &b);
	if (rc)
		return rc;
	rc = bdev_register(b);
	if (rc) {
		bdev_free(b);
		return rc;
	}
	if (out)
		*out = b;
	return 0;
}
