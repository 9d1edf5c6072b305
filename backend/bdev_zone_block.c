/* backend/bdev_zone_block.c - the zoned block bdev (SPDK's bdev_zone_block): a base bdev cut into
 * zones of a power-of-two size, each with `zone_capacity` writable blocks at its start, plus the
 * open/active zone limits and the zone descriptor extension size. I/O passes through to the same LBAs of the base (blocks between a
 * zone's capacity and its size are never written); the zone states, write pointers and their
 * rules are the NVMe controller's (controller/zns.c), which looks the geometry up here. */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bdev_zone_block {
	struct bdev_module_ops ops; /* io_ctx_size depends on the base */
	struct bdev *base;
	struct bdev_zone_geom geom;
	char *state_file; /* geom.state_file points here */
};

struct bdev_zone_block_chan {
	struct bdev_channel *base_ch;
};

static void bdev_zone_block_child_done(struct bdev_io *child, int status, void *arg)
{
	(void)child;
	bdev_io_complete(arg, status);
}

static void bdev_zone_block_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_zone_block_chan *c = ch->drv;

	bdev_vbdev_submit_child(c->base_ch, io, 0, bdev_zone_block_child_done);
}

static void bdev_zone_block_poll(struct bdev_channel *ch)
{
	struct bdev_zone_block_chan *c = ch->drv;

	bdev_channel_poll(c->base_ch);
}

static int bdev_zone_block_channel_create(struct bdev_channel *ch)
{
	struct bdev_zone_block *zb = ch->bdev->ctx;
	struct bdev_zone_block_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = bdev_vbdev_chan_open(ch, zb->base, &c->base_ch);
	if (rc) {
		free(c);
		return rc;
	}
	ch->drv = c;
	return 0;
}

static void bdev_zone_block_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_zone_block_chan *c = ch->drv;

	bdev_vbdev_chan_close(ch, c->base_ch);
	free(c);
}

static void bdev_zone_block_destruct(struct bdev *bdev)
{
	struct bdev_zone_block *zb = bdev->ctx;

	bdev_vbdev_put_base(zb->base);
	free(zb->state_file);
	free(zb);
}

static void bdev_zone_block_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_zone_block *zb = bdev->ctx;

	info->base_name = zb->base->name;
	info->zoned = true;
	info->zone = zb->geom;
}

static const struct bdev_module_ops bdev_zone_block_ops = {
    .module_name = "zone_block",
    .product_name = "Zone block device",
    .destruct = bdev_zone_block_destruct,
    .channel_create = bdev_zone_block_channel_create,
    .channel_destroy = bdev_zone_block_channel_destroy,
    .submit = bdev_zone_block_submit,
    .poll = bdev_zone_block_poll,
    .get_info = bdev_zone_block_get_info,
};

bool bdev_get_zone_geom(const struct bdev *bdev, struct bdev_zone_geom *geom)
{
	const struct bdev_zone_block *zb;

	if (!bdev || strcmp(bdev->ops->module_name, bdev_zone_block_ops.module_name))
		return false;
	zb = bdev->ctx;
	if (geom)
		*geom = zb->geom;
	return true;
}

static uint64_t bdev_zone_block_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int bdev_zone_block_create(const char *name, const char *base_name,
			   const struct bdev_zone_block_opts *opts, const uint8_t *uuid,
			   struct bdev **out)
{
	struct bdev_zone_block *zb;
	struct bdev *base, *b;
	uint64_t zsze, nzones;
	int rc;

	if (!name || !*name || strlen(name) > BDEV_NAME_MAX || !opts)
		return -EINVAL;
	/* A zone of more than 2^32 blocks is nothing a host handles (Linux: sector_t zone sizes
	 * below 4 GiB sectors); at least one open zone must be allowed. */
	if (opts->zone_capacity == 0 || opts->zone_capacity > (1ull << 32) ||
	    opts->optimal_open_zones == 0 || opts->zone_desc_ext_size % 64 ||
	    opts->zone_desc_ext_size > BDEV_ZONE_DESC_EXT_MAX ||
	    (opts->state_file && !*opts->state_file))
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	zsze = bdev_zone_block_pow2(opts->zone_capacity);
	zb = calloc(1, sizeof(*zb));
	if (!zb)
		return -ENOMEM;
	if (opts->state_file && !(zb->state_file = strdup(opts->state_file))) {
		free(zb);
		return -ENOMEM;
	}
	rc = bdev_vbdev_take_base(base_name, name, &base);
	if (rc)
		goto out_free;
	nzones = bdev_get_num_blocks(base) / zsze;
	if (nzones == 0 || nzones > UINT32_MAX || opts->optimal_open_zones > nzones ||
	    opts->max_open_zones > nzones || opts->max_active_zones > nzones ||
	    (opts->max_active_zones && opts->max_open_zones > opts->max_active_zones) ||
	    nzones * opts->zone_desc_ext_size > BDEV_ZONE_DESC_EXT_TOTAL_MAX) {
		rc = -EINVAL;
		goto out_put;
	}
	zb->ops = bdev_zone_block_ops;
	zb->ops.io_ctx_size = bdev_vbdev_ctx_size(0, base);
	zb->base = base;
	zb->geom.zone_size = zsze;
	zb->geom.zone_capacity = opts->zone_capacity;
	zb->geom.num_zones = nzones;
	zb->geom.optimal_open_zones = opts->optimal_open_zones;
	zb->geom.max_open_zones = opts->max_open_zones;
	zb->geom.max_active_zones = opts->max_active_zones;
	zb->geom.zone_desc_ext_size = opts->zone_desc_ext_size;
	zb->geom.state_file = zb->state_file;
	{
		struct bdev_info bi;

		bdev_get_info(base, &bi);
		zb->geom.data_file = bi.filename;
	}
	rc = bdev_vbdev_alloc(name, &zb->ops, base, uuid, &b);
	if (rc)
		goto out_put;
	/* Whole zones only: the tail of the base that makes no zone is not exposed. */
	b->num_blocks = nzones * zsze;
	b->ctx = zb;
	rc = bdev_register(b);
	if (rc) {
		bdev_free(b);
		goto out_put;
	}
	if (out)
		*out = b;
	return 0;

out_put:
	bdev_vbdev_put_base(base);
out_free:
	free(zb->state_file);
	free(zb);
	return rc;
}
