/* backend/bdev_malloc.c - RAM-backed bdev: a zero-filled anonymous mapping, completions delivered
 * through the channel's queue. */
#include "backend/bdev_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct bdev_malloc {
	uint8_t *buf;
	size_t size;
};

static void bdev_malloc_destruct(struct bdev *bdev)
{
	struct bdev_malloc *m = bdev->ctx;

	munmap(m->buf, m->size);
	free(m);
}

static void bdev_malloc_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev *b = ch->bdev;
	struct bdev_malloc *m = b->ctx;
	uint64_t bs = b->block_size;
	uint32_t i;

	/* The core checked every range against num_blocks, so each offset below is inside buf. */
	switch (io->type) {
	case BDEV_IO_READ:
		bdev_buf_to_iov(io->iov, io->iovcnt, m->buf + io->offset_blocks * bs,
				io->num_blocks * bs);
		break;
	case BDEV_IO_WRITE:
		bdev_iov_to_buf(m->buf + io->offset_blocks * bs, io->iov, io->iovcnt,
				io->num_blocks * bs);
		break;
	case BDEV_IO_WRITE_ZEROES:
		memset(m->buf + io->offset_blocks * bs, 0, io->num_blocks * bs);
		break;
	case BDEV_IO_UNMAP:
		/* Deallocated blocks read back as zeroes (what Identify's DLFEAT will promise). */
		for (i = 0; i < io->nranges; i++)
			memset(m->buf + io->ranges[i].offset_blocks * bs, 0,
			       io->ranges[i].num_blocks * bs);
		break;
	case BDEV_IO_FLUSH:
	case BDEV_IO_TYPE_COUNT:
		break;
	}
	bdev_io_complete(io, 0);
}

static const struct bdev_module_ops bdev_malloc_ops = {
	.module_name = "malloc",
	.product_name = "Malloc disk",
	.io_ctx_size = 0,
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = false,
	.destruct = bdev_malloc_destruct,
	.submit = bdev_malloc_submit,
};

int bdev_malloc_create(const char *name, uint64_t num_blocks, uint32_t block_size,
		       const uint8_t *uuid, struct bdev **out)
{
	struct bdev_malloc *m;
	struct bdev *b;
	int rc;

	rc = bdev_alloc(name, &bdev_malloc_ops, block_size, num_blocks, uuid, &b);
	if (rc)
		return rc;
	if (num_blocks > SIZE_MAX / block_size) {
		rc = -EINVAL;
		goto out_free_bdev;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = -ENOMEM;
		goto out_free_bdev;
	}
	/* An anonymous mapping is page aligned and reads as zeroes without touching the memory. */
	m->size = num_blocks * block_size;
	m->buf = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->buf == MAP_FAILED) {
		rc = -ENOMEM;
		goto out_free_m;
	}
	b->ctx = m;
	rc = bdev_register(b);
	if (rc)
		goto out_unmap;
	if (out)
		*out = b;
	return 0;

out_unmap:
	munmap(m->buf, m->size);
out_free_m:
	free(m);
out_free_bdev:
	bdev_free(b);
	return rc;
}
