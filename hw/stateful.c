/* hw/stateful.c - stateful BAR regions of a device: values, the default
 * hierarchy (last written > device default > type default > 0), driver-write
 * events with DOCA's re-raise rule, query and modify. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "hw/hw_internal.h"

/* A handler that never looks at what the driver wrote would otherwise be
 * called on every loop iteration forever; after this many re-raises the
 * event is dropped with a warning. */
#define HW_STATEFUL_MAX_RERAISE 8

static bool hw_is_stateful(const struct hw_dev *dev, unsigned int i)
{
	return dev->type->regions[i].kind == HW_REGION_STATEFUL;
}

int hw_stateful_init(struct hw_dev *dev)
{
	for (unsigned int i = 0; i < dev->type->nr_regions; i++) {
		struct hw_dev_region *rs = &dev->rs[i];
		uint64_t size = dev->type->regions[i].size;

		if (!hw_is_stateful(dev, i))
			continue;
		rs->mem = calloc(1, size);
		rs->dev_def = calloc(1, size);
		rs->dev_def_mask = calloc(1, size);
		if (!rs->mem || !rs->dev_def || !rs->dev_def_mask) {
			hw_stateful_fini(dev);
			return -ENOMEM;
		}
	}
	hw_stateful_reset(dev);
	return 0;
}

void hw_stateful_fini(struct hw_dev *dev)
{
	if (dev->stateful_timer) {
		evloop_timer_cancel(dev->stateful_timer);
		dev->stateful_timer = NULL;
	}
	for (unsigned int i = 0; i < dev->type->nr_regions; i++) {
		struct hw_dev_region *rs = &dev->rs[i];

		if (!hw_is_stateful(dev, i))
			continue;
		free(rs->mem);
		free(rs->dev_def);
		free(rs->dev_def_mask);
		rs->mem = rs->dev_def = rs->dev_def_mask = NULL;
	}
}

void hw_stateful_reset(struct hw_dev *dev)
{
	for (unsigned int i = 0; i < dev->type->nr_regions; i++) {
		const struct hw_region *r = &dev->type->regions[i];
		struct hw_dev_region *rs = &dev->rs[i];

		if (!hw_is_stateful(dev, i))
			continue;
		for (uint64_t b = 0; b < r->size; b++)
			rs->mem[b] = rs->dev_def_mask[b]   ? rs->dev_def[b]
				     : r->type_def_mask[b] ? r->type_def[b]
							   : 0;
		rs->ev_pending = false;
		rs->reraises = 0;
	}
}

static void hw_stateful_dispatch(void *arg);

static void hw_stateful_queue(struct hw_dev *dev)
{
	if (dev->stateful_timer)
		return;
	/* A 0 us timer rather than a deferred call: it runs on the next loop
	 * iteration and can be cancelled when the device goes away. */
	dev->stateful_timer = evloop_timer_add(dev->loop, 0, hw_stateful_dispatch, dev);
	if (!dev->stateful_timer)
		LOG_ERR(HW_LOG_COMP, "%s: cannot queue a stateful write event", dev->vuid);
}

static void hw_stateful_dispatch(void *arg)
{
	struct hw_dev *dev = arg;
	bool again = false;

	dev->stateful_timer = NULL;
	for (unsigned int i = 0; i < dev->type->nr_regions; i++) {
		const struct hw_region *r = &dev->type->regions[i];
		struct hw_dev_region *rs = &dev->rs[i];

		if (!hw_is_stateful(dev, i) || !rs->ev_pending)
			continue;
		if (!dev->ops || !dev->ops->stateful_write) {
			rs->ev_pending = false;
			continue;
		}
		rs->ev_touched = false;
		dev->ops->stateful_write(dev, r->bar_id, r->start, dev->arg);
		if (!rs->ev_pending)
			continue; /* an FLR inside the handler dropped it */
		if (rs->ev_touched) {
			rs->ev_pending = false;
			rs->reraises = 0;
		} else if (++rs->reraises > HW_STATEFUL_MAX_RERAISE) {
			LOG_WARN(HW_LOG_COMP,
				 "%s: stateful write at BAR %u 0x%llx never queried, dropped",
				 dev->vuid, r->bar_id, (unsigned long long)r->start);
			rs->ev_pending = false;
			rs->reraises = 0;
		} else {
			again = true;
		}
	}
	if (again)
		hw_stateful_queue(dev);
}

int hw_stateful_guest_access(struct hw_dev *dev, int ridx, uint64_t offset, void *buf, uint32_t len,
			     bool is_write)
{
	struct hw_dev_region *rs = &dev->rs[ridx];

	if (!is_write) {
		memcpy(buf, rs->mem + offset, len);
		return 0;
	}
	memcpy(rs->mem + offset, buf, len);
	if (!rs->ev_pending) {
		rs->wr_lo = offset;
		rs->wr_hi = offset + len;
	} else {
		rs->wr_lo = offset < rs->wr_lo ? offset : rs->wr_lo;
		rs->wr_hi = offset + len > rs->wr_hi ? offset + len : rs->wr_hi;
	}
	rs->ev_pending = true;
	rs->reraises = 0;
	hw_stateful_queue(dev);
	return 0;
}

/* Region index and region-relative offset for a device-side access. */
static int hw_stateful_locate(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, size_t len,
			      uint64_t *rel)
{
	int idx;

	if (!len || bar_id >= HW_NUM_BARS)
		return -EINVAL;
	idx = hw_pci_type_find_region(dev->type, bar_id, offset, len);
	if (idx < 0 || !hw_is_stateful(dev, (unsigned int)idx))
		return -EINVAL;
	*rel = offset - dev->type->regions[idx].start;
	return idx;
}

static void hw_stateful_touch(struct hw_dev_region *rs, uint64_t rel, size_t len)
{
	if (rs->ev_pending && rel < rs->wr_hi && rs->wr_lo < rel + len)
		rs->ev_touched = true;
}

int hw_dev_stateful_query(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, void *buf,
			  size_t len)
{
	uint64_t rel;
	int idx = hw_stateful_locate(dev, bar_id, offset, len, &rel);

	if (idx < 0)
		return idx;
	memcpy(buf, dev->rs[idx].mem + rel, len);
	hw_stateful_touch(&dev->rs[idx], rel, len);
	return 0;
}

int hw_dev_stateful_modify(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, const void *buf,
			   size_t len)
{
	uint64_t rel;
	int idx = hw_stateful_locate(dev, bar_id, offset, len, &rel);

	if (idx < 0)
		return idx;
	memcpy(dev->rs[idx].mem + rel, buf, len);
	hw_stateful_touch(&dev->rs[idx], rel, len);
	return 0;
}

int hw_dev_set_stateful_default(struct hw_dev *dev, uint8_t bar_id, uint64_t offset,
				const void *data, size_t len)
{
	uint64_t rel;
	int idx = hw_stateful_locate(dev, bar_id, offset, len, &rel);

	if (idx < 0)
		return idx;
	memcpy(dev->rs[idx].dev_def + rel, data, len);
	memset(dev->rs[idx].dev_def_mask + rel, 0xff, len);
	return 0;
}
