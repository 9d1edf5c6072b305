/* backend/bdev_vbdev.c - helpers of the stacked bdevs (error injection, delay). */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <string.h>

int bdev_vbdev_take_base(const char *base_name, const char *claimer, struct bdev **base)
{
	struct bdev *b = base_name ? bdev_lookup(base_name) : NULL;
	int rc;

	if (!b)
		return -ENODEV;
	rc = bdev_open(b);
	if (rc)
		return rc;
	rc = bdev_claim(b, claimer);
	if (rc) {
		bdev_close(b);
		return rc;
	}
	*base = b;
	return 0;
}

void bdev_vbdev_put_base(struct bdev *base)
{
	bdev_release(base);
	bdev_close(base);
}

static size_t bdev_vbdev_own(size_t own)
{
	return (own + 15) & ~(size_t)15;
}

size_t bdev_vbdev_ctx_size(size_t own, const struct bdev *base)
{
	return bdev_vbdev_own(own) + bdev_io_size(base);
}

int bdev_vbdev_alloc(const char *name, const struct bdev_module_ops *ops, struct bdev *base,
		     const uint8_t *uuid, struct bdev **out)
{
	struct bdev *b;
	int rc = bdev_alloc(name, ops, base->block_size, bdev_get_num_blocks(base), uuid, &b);

	if (rc)
		return rc;
	b->io_types = base->io_types;
	b->has_write_cache = base->has_write_cache;
	b->write_cache = base->has_write_cache;
	*out = b;
	return 0;
}

int bdev_vbdev_chan_open(struct bdev_channel *ch, struct bdev *base, struct bdev_channel **base_ch)
{
	int rc = bdev_channel_create(base, base_ch);

	if (rc)
		return rc;
	rc = bdev_channel_add_fd(ch, bdev_channel_get_fd(*base_ch));
	if (rc) {
		bdev_channel_destroy(*base_ch);
		*base_ch = NULL;
	}
	return rc;
}

void bdev_vbdev_chan_close(struct bdev_channel *ch, struct bdev_channel *base_ch)
{
	bdev_channel_poll(base_ch);
	if (bdev_channel_destroy(base_ch))
		LOG_ERR(BDEV_LOG, "%s: base channel still busy", ch->bdev->name);
}

void bdev_vbdev_submit_child(struct bdev_channel *base_ch, struct bdev_io *io, size_t own,
			     bdev_io_cb cb)
{
	struct bdev_io *child = (struct bdev_io *)(io->driver_ctx + bdev_vbdev_own(own));

	child->type = io->type;
	/* The upper bdev's write cache decides FUA (the core set it on io); the base's own
	 * setting adds nothing. */
	child->flags = io->flags;
	child->offset_blocks = io->offset_blocks;
	child->num_blocks = io->num_blocks;
	child->iov = io->iov;
	child->iovcnt = io->iovcnt;
	child->ranges = io->ranges;
	child->nranges = io->nranges;
	child->placement = io->placement;
	child->cb = cb;
	child->cb_arg = io;
	bdev_submit(base_ch, child);
}
