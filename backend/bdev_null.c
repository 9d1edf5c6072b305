/* backend/bdev_null.c - null bdev: reads return zeroes, writes are dropped, nothing is stored. */
#include "backend/bdev_internal.h"

#include <string.h>

static void bdev_null_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	int i;

	if (io->type == BDEV_IO_READ) {
		for (i = 0; i < io->iovcnt; i++)
			memset(io->iov[i].iov_base, 0, io->iov[i].iov_len);
	}
	bdev_io_complete(io, 0);
}

static const struct bdev_module_ops bdev_null_ops = {
	.module_name = "null",
	.product_name = "Null disk",
	.io_ctx_size = 0,
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = false,
	.submit = bdev_null_submit,
};

int bdev_null_create(const char *name, uint64_t num_blocks, uint32_t block_size,
		     const uint8_t *uuid, struct bdev **out)
{
	struct bdev *b;
	int rc;

	rc = bdev_alloc(name, &bdev_null_ops, block_size, num_blocks, uuid, &b);
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
