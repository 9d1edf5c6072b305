/* controller/admin_bg.c - the controller's own background bdev requests (Device Self-test reads,
 * Sanitize writes) issued from the admin thread and advanced by their completions (no timers,
 * no sleeps), their fate across resets, and the Get Log Page entry for the logs of admin_ext.h.
 * Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

int ctrlr_ext_init(struct ctrlr *ctrlr)
{
	struct ctrlr_ext *x = &ctrlr->ext;
	int rc;

	x->bg.bio = aligned_alloc(16, sizeof(struct bdev_io) + CTRLR_BDEV_CTX_MAX);
	x->bg.buf = aligned_alloc(4096, CTRLR_CHUNK_BYTES);
	if (!x->bg.bio || !x->bg.buf) {
		ctrlr_ext_fini(ctrlr);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < NVME_DST_LOG_ENTRIES; i++)
		x->dst.results[i].status = NVME_DST_RES_UNUSED;
	x->san.sstat = NVME_SSTAT_NEVER;
	rc = ctrlr_pel_init(ctrlr);
	if (rc)
		ctrlr_ext_fini(ctrlr);
	return rc;
}

void ctrlr_ext_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_ext *x = &ctrlr->ext;

	free(x->bg.bio);
	free(x->bg.buf);
	x->bg.bio = NULL;
	x->bg.buf = NULL;
	free(x->tel.host.data);
	free(x->tel.ctrl.data);
	x->tel.host.data = NULL;
	x->tel.ctrl.data = NULL;
	ctrlr_pel_fini(ctrlr);
}

bool ctrlr_bg_inflight(const struct ctrlr *ctrlr)
{
	return ctrlr->ext.bg.busy;
}

static void ctrlr_bg_io_done(struct bdev_io *io, int status, void *arg)
{
	struct ctrlr *ctrlr = arg;
	struct ctrlr_bg_io *b = &ctrlr->ext.bg;
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
	struct ctrlr_bg_io *b = &ctrlr->ext.bg;
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
	if (ctrlr->ext.bg.busy || !ctrlr->sqs[0] ||
	    CTRLR_LOAD(ctrlr->state) != CTRLR_ST_ENABLED)
		return;
	if (CTRLR_LOAD(ctrlr->ext.san.state) == CTRLR_SAN_RUNNING)
		return ctrlr_san_step(ctrlr);
	if (ctrlr->ext.dst.stc)
		ctrlr_dst_step(ctrlr);
}

void ctrlr_ext_reset(struct ctrlr *ctrlr)
{
	/* A Controller Level Reset aborts a device self-test (8.11); a sanitize operation goes
	 * on once the controller is enabled again (8.21): its state is kept. */
	ctrlr_dst_abort(ctrlr, NVME_DST_RES_ABORTED_RESET);
	ctrlr_pel_add(ctrlr, NVME_PEL_POWER_ON_RESET, NULL, 0);
}

void ctrlr_ext_enabled(struct ctrlr *ctrlr)
{
	/* From now on, going away without a shutdown notification is an unsafe shutdown. */
	ctrlr->ext.pel.enabled_once = true;
	ctrlr->ext.pel.shutdowns_at_enable = CTRLR_LOAD(ctrlr->cnt.shutdowns);
	ctrlr_bg_kick(ctrlr);
}

uint16_t ctrlr_log_ext(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t *buf;

	switch (lid) {
	case NVME_LOG_TELEMETRY_HOST:
	case NVME_LOG_TELEMETRY_CTRL:
		return ctrlr_log_telemetry(req, lid, out, len);
	case NVME_LOG_PERSISTENT_EVENT:
		return ctrlr_log_pel(req, out, len);
	default:
		break;
	}
	buf = calloc(1, 4096);
	if (!buf)
		return NVME_SC_INTERNAL;
	if (lid == NVME_LOG_SELF_TEST)
		*len = ctrlr_log_self_test(ctrlr, buf);
	else
		*len = ctrlr_log_sanitize(ctrlr, buf);
	*out = buf;
	return NVME_SC_SUCCESS;
}
