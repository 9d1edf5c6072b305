/* backend/bdev_region.c - region bdev: a window of blocks of another (base) bdev, stacked over it
 * without copying (each io becomes one io of the base, shifted), as the namespaces carved out of
 * a capacity pool are. */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Deallocate ranges translated per base io; more ranges go in further rounds. */
#define BDEV_REGION_RANGES 8

struct bdev_region {
	struct bdev_module_ops ops; /* io_ctx_size depends on the base */
	struct bdev *base;
	uint64_t offset; /* in base blocks */
	uint32_t ratio;	 /* region block size / base block size */
};

struct bdev_region_chan {
	struct bdev_channel *base_ch;
};

/* The region's part of an io's context; the base's io follows it (bdev_vbdev.h). */
struct bdev_region_io {
	uint32_t next_range; /* UNMAP: the first parent range not yet sent */
	struct bdev_range ranges[BDEV_REGION_RANGES];
};
#define BDEV_REGION_OWN ((sizeof(struct bdev_region_io) + 15) & ~(size_t)15)

static struct bdev_region_io *bdev_region_io(struct bdev_io *io)
{
	return (struct bdev_region_io *)io->driver_ctx;
}

static struct bdev_io *bdev_region_child(struct bdev_io *io)
{
	return (struct bdev_io *)(io->driver_ctx + BDEV_REGION_OWN);
}

static void bdev_region_destruct(struct bdev *bdev)
{
	struct bdev_region *r = bdev->ctx;

	bdev_close(r->base);
	free(r);
}

/*
 * A channel on the base whose fd wakes the region's channel (bdev_vbdev_chan_open): the poll
 * group watching the region reaps the base channel in the region's poll (bdev_region_poll) and
 * delivers the region ios in the same pass.
 */
static int bdev_region_channel_create(struct bdev_channel *ch)
{
	struct bdev_region *r = ch->bdev->ctx;
	struct bdev_region_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = bdev_vbdev_chan_open(ch, r->base, &c->base_ch);
	if (rc) {
		free(c);
		return rc;
	}
	ch->drv = c;
	return 0;
}

static void bdev_region_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_region_chan *c = ch->drv;

	bdev_vbdev_chan_close(ch, c->base_ch);
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
	child->flags = io->flags;
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
	/* Set per region (the base's io follows ours); types and cache are the base's. */
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
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = bdev_region_ops;
	r->ops.io_ctx_size = bdev_vbdev_ctx_size(sizeof(struct bdev_region_io), base);
	rc = bdev_alloc(name, &r->ops, block_size, num_blocks, uuid, &b);
	if (rc) {
		free(r);
		return rc;
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
	bdev_free(b);
	return rc;
}
