/* controller/device/bg.c - the controller's own background bdev request (Device Self-test reads,
 * Sanitize writes) issued from the admin thread and advanced by its completions (no timers, no
 * sleeps): one at a time, handed to the operations that wait for it in their priority order.
 * Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/device/device.h"

int ctrlr_bg_init(struct ctrlr *ctrlr)
{
	struct ctrlr_bg_io *b = &ctrlr_dev(ctrlr)->bg;

	b->bio = aligned_alloc(16, sizeof(struct bdev_io) + CTRLR_BDEV_CTX_MAX);
	b->buf = aligned_alloc(4096, CTRLR_CHUNK_BYTES);
	if (!b->bio || !b->buf) {
		ctrlr_bg_fini(ctrlr);
		return -ENOMEM;
	}
	/* A bdev may leave a read buffer as it is (the null bdev). */
	memset(b->buf, 0, CTRLR_CHUNK_BYTES);
	return 0;
}

void ctrlr_bg_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_bg_io *b = &ctrlr_dev(ctrlr)->bg;

	free(b->bio);
	free(b->buf);
	b->bio = NULL;
	b->buf = NULL;
}

bool ctrlr_bg_inflight(const struct ctrlr *ctrlr)
{
	return ctrlr_dev(ctrlr)->bg.busy;
}

static void ctrlr_bg_io_done(struct bdev_io *io, int status, void *arg)
{
	struct ctrlr *ctrlr = arg;
	struct ctrlr_bg_io *b = &ctrlr_dev(ctrlr)->bg;
	void (*done)(struct ctrlr *ctrlr, int status) = b->done;

	ctrlr_ns_put(b->ns);
	b->ns = NULL;
	b->busy = false;
	b->done = NULL;
	/* The operation checks b->gen against its own: a stale result is dropped. */
	done(ctrlr, status);
	if (CTRLR_LOAD(ctrlr->state) == CTRLR_ST_RESETTING) {
		ctrlr_reset_continue(ctrlr);
		return;
	}
	ctrlr_bg_kick(ctrlr);
}

uint16_t ctrlr_bg_submit(struct ctrlr *ctrlr, uint32_t nsid, enum bdev_io_type type, uint64_t lba,
			 uint64_t nlb, uint32_t gen, void (*done)(struct ctrlr *ctrlr, int status))
{
	struct ctrlr_bg_io *b = &ctrlr_dev(ctrlr)->bg;
	struct bdev_io *bio = b->bio;
	const struct ctrlr_lbaf *l;
	struct bdev_channel *ch;
	struct ctrlr_ns *ns;

	if (b->busy || !ctrlr->sqs[0] || CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED)
		return NVME_SC_INTERNAL;
	ns = ctrlr_ns_get(ctrlr, nsid);
	if (!ns)
		return NVME_SC_INVALID_NS;
	/* The admin queue's channel: the admin thread's, kept while the bdev is attached. */
	ch = ctrlr->ops->get_channel(ctrlr->tctx, ctrlr->sqs[0], ns->bdev);
	if (!ch) {
		ctrlr_ns_put(ns);
		return NVME_SC_INTERNAL;
	}
	/* Logical blocks to bdev blocks of the namespace's format (admin_format.c): a block's
	 * data, metadata and padding move together. */
	l = ctrlr_ns_lbaf(ns);
	if ((type == BDEV_IO_READ || type == BDEV_IO_WRITE) && nlb * l->stride > CTRLR_CHUNK_BYTES) {
		ctrlr_ns_put(ns);
		return NVME_SC_INTERNAL;
	}
	memset(bio, 0, sizeof(*bio));
	bio->type = type;
	switch (type) {
	case BDEV_IO_READ:
	case BDEV_IO_WRITE:
		b->iov.iov_base = b->buf;
		b->iov.iov_len = nlb * l->stride;
		bio->iov = &b->iov;
		bio->iovcnt = 1;
		/* fall through */
	case BDEV_IO_WRITE_ZEROES:
		bio->offset_blocks = lba * l->bpl;
		bio->num_blocks = nlb * l->bpl;
		break;
	case BDEV_IO_UNMAP:
		b->range.offset_blocks = lba * l->bpl;
		b->range.num_blocks = nlb * l->bpl;
		bio->ranges = &b->range;
		bio->nranges = 1;
		break;
	default:
		break;
	}
	bio->cb = ctrlr_bg_io_done;
	bio->cb_arg = ctrlr;
	b->ns = ns;
	b->busy = true;
	b->gen = gen;
	b->done = done;
	bdev_submit(ch, bio);
	return NVME_SC_SUCCESS;
}

void ctrlr_bg_kick(struct ctrlr *ctrlr)
{
	struct ctrlr_bg_io *b = &ctrlr_dev(ctrlr)->bg;

	if (b->busy || !ctrlr->sqs[0] || CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED)
		return;
	for (size_t i = 0; i < CTRLR_ARRAY_SIZE(b->steps); i++)
		if (b->steps[i] && b->steps[i](ctrlr))
			return;
}
