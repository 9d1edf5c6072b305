/* backend/bdev_region.c - region bdev: a window of blocks of another (base) bdev, stacked over it
 * without copying (each io becomes one io of the base, shifted), as the namespaces carved out of
 * a capacity pool are. */
#include "backend/bdev_internal.h"
#include "common/log.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Deallocate ranges translated per base io; more ranges go in further rounds. */
#define BDEV_REGION_RANGES 8
/* Per-io context: the translation state and the base io (with its own context) after it. Sized
 * for every module of this tree (checked at creation); within the controller's per-I/O budget. */
#define BDEV_REGION_CTX_SIZE 448

struct bdev_region {
	struct bdev *base;
	uint64_t offset; /* in base blocks */
	uint32_t ratio;	 /* region block size / base block size */
};

struct bdev_region_chan {
	struct bdev_channel *base_ch;
};

struct bdev_region_io {
	struct bdev_io *parent;
	uint32_t next_range; /* UNMAP: the first parent range not yet sent */
	struct bdev_range ranges[BDEV_REGION_RANGES];
	_Alignas(16) unsigned char child[]; /* struct bdev_io of the base */
};

static struct bdev_region_io *bdev_region_io(struct bdev_io *io)
{
	return (struct bdev_region_io *)io->driver_ctx;
}

static struct bdev_io *bdev_region_child(struct bdev_io *io)
{
	return (struct bdev_io *)bdev_region_io(io)->child;
}

static void bdev_region_destruct(struct bdev *bdev)
{
	struct bdev_region *r = bdev->ctx;

	bdev_close(r->base);
	free(r);
}

/*
 * The region's channel shares the base channel's eventfd: the base (or the kernel, for aio and
 * io_uring, which signal it directly) wakes the poll group that watches the region, whose poll
 * then reaps the base channel (bdev_region_poll) and completes the region ios in the same pass.
 */
static int bdev_region_channel_create(struct bdev_channel *ch)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = calloc(1, sizeof(*c));
	int rc, fd;

	if (!c)
		return -ENOMEM;
	rc = bdev_channel_create(r->base, &c->base_ch);
	if (rc)
		goto out_free;
	fd = dup(bdev_channel_get_fd(c->base_ch));
	if (fd < 0) {
		rc = -errno;
		goto out_destroy;
	}
	close(ch->efd);
	ch->efd = fd;
	ch->drv = c;
	return 0;

out_destroy:
	bdev_channel_destroy(c->base_ch);
out_free:
	free(c);
	return rc;
}

static void bdev_region_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_region_chan *c = ch->drv;

	/* Nothing is outstanding on the region, so nothing is on the base either. */
	if (bdev_channel_destroy(c->base_ch))
		LOG_ERR(BDEV_LOG, "%s: base channel still busy at destroy", ch->bdev->name);
	free(c);
}

static void bdev_region_unmap_next(struct bdev_channel *ch, struct bdev_io *io);

static void bdev_region_child_done(struct bdev_io *child, int status, void *arg)
{
	struct bdev_io *io = arg;
	struct bdev_region_io *rio = bdev_region_io(io);

	if (!status && io->type == BDEV_IO_UNMAP && rio->next_range < io->nranges) {
		bdev_region_unmap_next(io->internal.ch, io);
		return;
	}
	bdev_io_complete(io, status);
}

/* Sends the next batch of the parent's deallocate ranges, shifted to the base. */
static void bdev_region_unmap_next(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = ch->drv;
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_io *child = bdev_region_child(io);
	uint32_t n = 0;

	while (rio->next_range < io->nranges && n < BDEV_REGION_RANGES) {
		const struct bdev_range *src = &io->ranges[rio->next_range++];

		rio->ranges[n].offset_blocks = r->offset + src->offset_blocks * r->ratio;
		rio->ranges[n].num_blocks = src->num_blocks * r->ratio;
		n++;
	}
	memset(child, 0, sizeof(*child));
	child->type = BDEV_IO_UNMAP;
	child->ranges = rio->ranges;
	child->nranges = n;
	child->cb = bdev_region_child_done;
	child->cb_arg = io;
	bdev_submit(c->base_ch, child);
}

static void bdev_region_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = ch->drv;
	struct bdev_region_io *rio = bdev_region_io(io);
	struct bdev_io *child = bdev_region_child(io);

	rio->parent = io;
	rio->next_range = 0;
	if (io->type == BDEV_IO_UNMAP) {
		bdev_region_unmap_next(ch, io);
		return;
	}
	/* The core checked the range against the region, which lies inside the base. */
	memset(child, 0, sizeof(*child));
	child->type = io->type;
	child->flags = io->flags;
	child->offset_blocks = r->offset + io->offset_blocks * r->ratio;
	child->num_blocks = io->num_blocks * r->ratio;
	child->iov = io->iov;
	child->iovcnt = io->iovcnt;
	child->cb = bdev_region_child_done;
	child->cb_arg = io;
	bdev_submit(c->base_ch, child);
}

/* The shared eventfd fired: reap the base channel; its callbacks complete region ios into this
 * channel's done list, which bdev_channel_poll delivers right after. */
static void bdev_region_poll(struct bdev_channel *ch)
{
	struct bdev_region_chan *c = ch->drv;

	bdev_channel_poll(c->base_ch);
}

static void bdev_region_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_region *r = bdev->ctx;
	struct bdev_info base;

	bdev_get_info(r->base, &base);
	info->filename = base.filename;
	info->direct_io = base.direct_io;
}

static const struct bdev_module_ops bdev_region_ops = {
	.module_name = BDEV_REGION_MODULE,
	.product_name = "Region of a capacity pool",
	.io_ctx_size = BDEV_REGION_CTX_SIZE,
	/* Narrowed to the base's types and cache at creation. */
	.io_types = 1u << BDEV_IO_READ | 1u << BDEV_IO_WRITE | 1u << BDEV_IO_FLUSH |
		    1u << BDEV_IO_WRITE_ZEROES | 1u << BDEV_IO_UNMAP,
	.has_write_cache = true,
	.destruct = bdev_region_destruct,
	.channel_create = bdev_region_channel_create,
	.channel_destroy = bdev_region_channel_destroy,
	.submit = bdev_region_submit,
	.poll = bdev_region_poll,
	.get_info = bdev_region_get_info,
};

int bdev_region_create(const char *name, struct bdev *base, uint64_t offset_blocks,
		       uint64_t num_blocks, uint32_t block_size, const uint8_t *uuid,
		       struct bdev **out)
{
	struct bdev_region *r;
	uint32_t ratio;
	struct bdev *b;
	int rc;

	if (!base || !block_size || block_size % base->block_size)
		return -EINVAL;
	ratio = block_size / base->block_size;
	/* The whole window, in base blocks, must lie inside the base. */
	if (!num_blocks || num_blocks > base->num_blocks / ratio ||
	    offset_blocks > base->num_blocks - num_blocks * ratio)
		return -EINVAL;
	if (offsetof(struct bdev_region_io, child) + bdev_io_size(base) > BDEV_REGION_CTX_SIZE)
		return -EINVAL;
	rc = bdev_alloc(name, &bdev_region_ops, block_size, num_blocks, uuid, &b);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = -ENOMEM;
		goto out_free_bdev;
	}
	r->base = base;
	r->offset = offset_blocks;
	r->ratio = ratio;
	b->io_types = base->io_types;
	b->has_write_cache = base->has_write_cache;
	b->write_cache = base->has_write_cache;
	b->ctx = r;
	bdev_open(base);
	rc = bdev_register(b);
	if (rc)
		goto out_close;
	if (out)
		*out = b;
	return 0;

out_close:
	bdev_close(base);
	free(r);
out_free_bdev:
	bdev_free(b);
	return rc;
}
