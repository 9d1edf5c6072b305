/* backend/bdev_vbdev.h - what the bdevs stacked on a base bdev (error injection, delay) share:
 * the base opened and claimed, a base channel per channel whose fd wakes the upper channel, and
 * the child io carried inside the upper io's context. Internal to backend/. */
#ifndef NVME_EMU_BACKEND_BDEV_VBDEV_H
#define NVME_EMU_BACKEND_BDEV_VBDEV_H

#include "backend/bdev_internal.h"

/* Opens and claims `base_name` for `claimer` (the upper bdev's name). 0, -ENODEV (no such bdev),
 * -EBUSY (claimed already). *base on success. Main thread. */
int bdev_vbdev_take_base(const char *base_name, const char *claimer, struct bdev **base);
void bdev_vbdev_put_base(struct bdev *base);

/* Allocates the upper bdev `name` with the base's geometry, I/O types and write cache, the
 * module's ops, and `own` bytes of its own per-io context before the child io. Not registered.
 * 0 or -errno. Main thread. */
int bdev_vbdev_alloc(const char *name, const struct bdev_module_ops *ops, struct bdev *base,
		     const uint8_t *uuid, struct bdev **out);
/* driver_ctx size for an upper io: the module's own part (rounded) and the child io. */
size_t bdev_vbdev_ctx_size(size_t own, const struct bdev *base);

/* Channel: a channel on the base whose fd wakes the upper channel. 0 or -errno. */
int bdev_vbdev_chan_open(struct bdev_channel *ch, struct bdev *base,
			 struct bdev_channel **base_ch);
/* Closes what bdev_vbdev_chan_open opened: completions still queued on the base channel are reaped
 * (nothing is outstanding on the upper channel, so nothing is on the base one), then it goes. */
void bdev_vbdev_chan_close(struct bdev_channel *ch, struct bdev_channel *base_ch);
/* Submits `io`'s copy to the base channel; cb(child, status, io) runs from a base poll. */
void bdev_vbdev_submit_child(struct bdev_channel *base_ch, struct bdev_io *io, size_t own,
			     bdev_io_cb cb);
/* The upper io a child io belongs to is its cb_arg. */

#endif
