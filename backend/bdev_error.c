/* backend/bdev_error.c - the error-injection bdev (SPDK's bdev_error, "EE_<base>"): passes I/O to
 * its base bdev and, on request, fails the next N commands of a type with an I/O error, a chosen
 * NVMe status or -ENOMEM, holds them until resumed, or corrupts their data; optionally only
 * while a queue depth is reached. */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct bdev_error_chan;

struct bdev_error {
	/* Its own ops table: io_ctx_size depends on the base. */
	struct bdev_module_ops ops;
	struct bdev *base;
	pthread_mutex_t lock; /* the injections and the channel list (main and channel threads) */
	struct bdev_error_injection inj[BDEV_IO_TYPE_COUNT];
	struct bdev_error_chan *chans;
	uint64_t resume_gen;
};

struct bdev_error_chan {
	struct bdev_channel *ch;
	struct bdev_channel *base_ch;
	struct bdev_io *held_head, *held_tail; /* `pending` injections, until resumed */
	uint64_t resume_seen;
	struct bdev_error_chan *next;
};

/* Per-io context, before the child io. */
struct bdev_error_io {
	struct bdev_io *held_next;
	bool corrupt_read;
	uint64_t corrupt_offset;
	uint8_t corrupt_value;
};

static struct bdev_error_io *bdev_error_io(struct bdev_io *io)
{
	return (struct bdev_error_io *)io->driver_ctx;
}

/* XORs one byte of the io's data (offset into its iovecs); nothing beyond its end. */
static void bdev_error_corrupt(struct bdev_io *io, uint64_t offset, uint8_t value)
{
	for (int i = 0; i < io->iovcnt; i++) {
		if (offset < io->iov[i].iov_len) {
			((uint8_t *)io->iov[i].iov_base)[offset] ^= value;
			return;
		}
		offset -= io->iov[i].iov_len;
	}
}

static void bdev_error_child_done(struct bdev_io *child, int status, void *arg)
{
	struct bdev_io *io = arg;
	struct bdev_error_io *e = bdev_error_io(io);

	if (!status && e->corrupt_read)
		bdev_error_corrupt(io, e->corrupt_offset, e->corrupt_value);
	bdev_io_complete(io, status);
}

static void bdev_error_pass(struct bdev_error_chan *c, struct bdev_io *io)
{
	bdev_vbdev_submit_child(c->base_ch, io, sizeof(struct bdev_error_io),
				bdev_error_child_done);
}

static void bdev_error_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_error *err = ch->bdev->ctx;
	struct bdev_error_chan *c = ch->drv;
	struct bdev_error_io *e = bdev_error_io(io);
	struct bdev_error_injection inj = {0};
	struct bdev_error_injection *slot;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&err->lock);
	slot = &err->inj[io->type];
	/* outstanding counts this io: the depth reached with it. */
	if (slot->type != BDEV_ERROR_NONE && slot->num &&
	    (!slot->queue_depth || ch->outstanding >= slot->queue_depth)) {
		inj = *slot;
		if (--slot->num == 0)
			slot->type = BDEV_ERROR_NONE;
	}
	pthread_mutex_unlock(&err->lock);
	switch (inj.type) {
	case BDEV_ERROR_NONE:
		bdev_error_pass(c, io);
		return;
	case BDEV_ERROR_FAILURE:
		bdev_io_complete(io, -EIO);
		return;
	case BDEV_ERROR_NVME:
		bdev_io_complete(io, BDEV_STATUS_NVME(inj.nvme_sct, inj.nvme_sc));
		return;
	case BDEV_ERROR_NOMEM:
		bdev_io_complete(io, -ENOMEM);
		return;
	case BDEV_ERROR_PENDING:
		e->held_next = NULL;
		if (c->held_tail)
			bdev_error_io(c->held_tail)->held_next = io;
		else
			c->held_head = io;
		c->held_tail = io;
		return;
	case BDEV_ERROR_CORRUPT:
		/* A write goes down corrupted; a read comes back corrupted. */
		if (io->type == BDEV_IO_WRITE) {
			bdev_error_corrupt(io, inj.corrupt_offset, inj.corrupt_value);
		} else if (io->type == BDEV_IO_READ) {
			e->corrupt_read = true;
			e->corrupt_offset = inj.corrupt_offset;
			e->corrupt_value = inj.corrupt_value;
		}
		bdev_error_pass(c, io);
		return;
	}
}

static void bdev_error_poll(struct bdev_channel *ch)
{
	struct bdev_error *err = ch->bdev->ctx;
	struct bdev_error_chan *c = ch->drv;
	uint64_t gen;

	bdev_channel_poll(c->base_ch);
	gen = __atomic_load_n(&err->resume_gen, __ATOMIC_ACQUIRE);
	if (gen != c->resume_seen) {
		struct bdev_io *io = c->held_head, *next;

		c->resume_seen = gen;
		c->held_head = c->held_tail = NULL;
		for (; io; io = next) {
			next = bdev_error_io(io)->held_next;
			bdev_error_pass(c, io);
		}
	}
}

static int bdev_error_channel_create(struct bdev_channel *ch)
{
	struct bdev_error *err = ch->bdev->ctx;
	struct bdev_error_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = bdev_vbdev_chan_open(ch, err->base, &c->base_ch);
	if (rc) {
		free(c);
		return rc;
	}
	c->ch = ch;
	pthread_mutex_lock(&err->lock);
	c->resume_seen = err->resume_gen;
	c->next = err->chans;
	err->chans = c;
	pthread_mutex_unlock(&err->lock);
	ch->drv = c;
	return 0;
}

static void bdev_error_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_error *err = ch->bdev->ctx;
	struct bdev_error_chan *c = ch->drv, **pp;

	pthread_mutex_lock(&err->lock);
	for (pp = &err->chans; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&err->lock);
	bdev_vbdev_chan_close(ch, c->base_ch);
	free(c);
}

static void bdev_error_destruct(struct bdev *bdev)
{
	struct bdev_error *err = bdev->ctx;

	bdev_vbdev_put_base(err->base);
	pthread_mutex_destroy(&err->lock);
	free(err);
}

static void bdev_error_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_error *err = bdev->ctx;

	info->base_name = err->base->name;
}

static const struct bdev_module_ops bdev_error_ops = {
    .module_name = "error",
    .product_name = "Error Injection Disk",
    .destruct = bdev_error_destruct,
    .channel_create = bdev_error_channel_create,
    .channel_destroy = bdev_error_channel_destroy,
    .submit = bdev_error_submit,
    .poll = bdev_error_poll,
    .get_info = bdev_error_get_info,
};

int bdev_error_create(const char *base_name, const uint8_t *uuid, struct bdev **out)
{
	char name[BDEV_NAME_MAX + 1];
	struct bdev_error *err;
	struct bdev *base, *b;
	int rc;

	if (!base_name || strlen(base_name) + 3 > BDEV_NAME_MAX)
		return -EINVAL;
	snprintf(name, sizeof(name), "EE_%s", base_name);
	if (bdev_lookup(name))
		return -EEXIST;
	err = calloc(1, sizeof(*err));
	if (!err)
		return -ENOMEM;
	rc = bdev_vbdev_take_base(base_name, name, &base);
	if (rc)
		goto out_free;
	err->ops = bdev_error_ops;
	err->ops.io_ctx_size = bdev_vbdev_ctx_size(sizeof(struct bdev_error_io), base);
	err->base = base;
	rc = pthread_mutex_init(&err->lock, NULL);
	if (rc) {
		rc = -rc;
		goto out_put;
	}
	rc = bdev_vbdev_alloc(name, &err->ops, base, uuid, &b);
	if (rc)
		goto out_mutex;
	b->ctx = err;
	rc = bdev_register(b);
	if (rc) {
		bdev_free(b);
		goto out_mutex;
	}
	if (out)
		*out = b;
	return 0;

out_mutex:
	pthread_mutex_destroy(&err->lock);
out_put:
	bdev_vbdev_put_base(base);
out_free:
	free(err);
	return rc;
}

int bdev_error_inject(const char *name, int io_type, const struct bdev_error_injection *inj)
{
	struct bdev *b = bdev_lookup(name);
	struct bdev_error *err;

	if (!b || strcmp(b->ops->module_name, "error"))
		return -ENODEV;
	if (io_type < BDEV_ERROR_IO_CLEAR || io_type >= BDEV_IO_TYPE_COUNT)
		return -EINVAL;
	if (io_type != BDEV_ERROR_IO_CLEAR &&
	    (inj->type <= BDEV_ERROR_NONE || inj->type > BDEV_ERROR_NOMEM || !inj->num ||
	     (inj->type == BDEV_ERROR_CORRUPT && !inj->corrupt_value)))
		return -EINVAL;
	err = b->ctx;
	pthread_mutex_lock(&err->lock);
	for (int t = 0; t < BDEV_IO_TYPE_COUNT; t++) {
		if (io_type == BDEV_ERROR_IO_CLEAR)
			memset(&err->inj[t], 0, sizeof(err->inj[t]));
		else if (io_type == BDEV_ERROR_IO_ALL || io_type == t)
			err->inj[t] = *inj;
	}
	pthread_mutex_unlock(&err->lock);
	return 0;
}

int bdev_error_resume_pending(const char *name)
{
	struct bdev *b = bdev_lookup(name);
	struct bdev_error *err;
	uint64_t one = 1;

	if (!b || strcmp(b->ops->module_name, "error"))
		return -ENODEV;
	err = b->ctx;
	pthread_mutex_lock(&err->lock);
	__atomic_add_fetch(&err->resume_gen, 1, __ATOMIC_ACQ_REL);
	/* Wake every channel: its poll sends what it holds. */
	for (struct bdev_error_chan *c = err->chans; c; c = c->next)
		if (write(c->ch->efd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
			LOG_ERR(BDEV_LOG, "%s: channel eventfd: %m", name);
	pthread_mutex_unlock(&err->lock);
	return 0;
}
