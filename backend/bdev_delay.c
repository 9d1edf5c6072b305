/* backend/bdev_delay.c - the delay bdev (SPDK's bdev_delay): passes I/O to its base bdev and
 * completes reads, writes and write zeroes only after a latency (the average one, or the p99 one
 * for one io in a hundred), counted from the base's completion. Each channel keeps one FIFO per
 * latency (a constant delay keeps it in deadline order) and a timerfd armed at the earliest
 * deadline, which wakes the channel through its fd. */
#include "backend/bdev_vbdev.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct bdev_delay {
	struct bdev_module_ops ops; /* io_ctx_size depends on the base */
	struct bdev *base;
	uint64_t latency_us[BDEV_DELAY_NR]; /* __atomic: updated by the main thread */
};

struct bdev_delay_io {
	struct bdev_io *next;
	uint64_t deadline_ns;
	int status;
};

struct bdev_delay_chan {
	struct bdev_channel *base_ch;
	int tfd;
	uint64_t armed_ns; /* 0: disarmed */
	uint32_t rand;
	struct bdev_io *head[BDEV_DELAY_NR], *tail[BDEV_DELAY_NR];
};

static struct bdev_delay_io *bdev_delay_io(struct bdev_io *io)
{
	return (struct bdev_delay_io *)io->driver_ctx;
}

static uint64_t bdev_delay_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void bdev_delay_arm(struct bdev_delay_chan *c)
{
	struct itimerspec its = {0};
	uint64_t first = 0;

	for (int q = 0; q < BDEV_DELAY_NR; q++) {
		uint64_t d = c->head[q] ? bdev_delay_io(c->head[q])->deadline_ns : 0;

		if (d && (!first || d < first))
			first = d;
	}
	if (first == c->armed_ns)
		return;
	its.it_value.tv_sec = (time_t)(first / 1000000000ull);
	its.it_value.tv_nsec = (long)(first % 1000000000ull);
	/* first == 0 disarms. */
	if (timerfd_settime(c->tfd, TFD_TIMER_ABSTIME, &its, NULL))
		LOG_ERR(BDEV_LOG, "delay: timerfd_settime: %m");
	c->armed_ns = first;
}

/* xorshift32: which ios get the p99 latency (1 in 100), without a lock or a syscall. */
static uint32_t bdev_delay_rand(struct bdev_delay_chan *c)
{
	uint32_t x = c->rand;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->rand = x;
	return x;
}

static void bdev_delay_child_done(struct bdev_io *child, int status, void *arg)
{
	struct bdev_io *io = arg;
	struct bdev_delay_chan *c = io->internal.ch->drv;
	struct bdev_delay *dl = io->internal.ch->bdev->ctx;
	struct bdev_delay_io *d = bdev_delay_io(io);
	int q;
	uint64_t us;

	if (io->type == BDEV_IO_READ)
		q = BDEV_DELAY_AVG_READ;
	else if (io->type == BDEV_IO_WRITE || io->type == BDEV_IO_WRITE_ZEROES)
		q = BDEV_DELAY_AVG_WRITE;
	else
		q = -1;
	if (q >= 0 && bdev_delay_rand(c) % 100 == 0)
		q++; /* the p99 bucket */
	us = q >= 0 ? __atomic_load_n(&dl->latency_us[q], __ATOMIC_RELAXED) : 0;
	if (!us) {
		bdev_io_complete(io, status);
		return;
	}
	d->status = status;
	d->deadline_ns = bdev_delay_now_ns() + us * 1000;
	d->next = NULL;
	if (c->tail[q])
		bdev_delay_io(c->tail[q])->next = io;
	else
		c->head[q] = io;
	c->tail[q] = io;
	bdev_delay_arm(c);
}

static void bdev_delay_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev_delay_chan *c = ch->drv;

	memset(bdev_delay_io(io), 0, sizeof(struct bdev_delay_io));
	bdev_vbdev_submit_child(c->base_ch, io, sizeof(struct bdev_delay_io),
				bdev_delay_child_done);
}

static void bdev_delay_poll(struct bdev_channel *ch)
{
	struct bdev_delay_chan *c = ch->drv;
	uint64_t expirations, now;

	if (read(c->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		LOG_ERR(BDEV_LOG, "%s: timerfd read: %m", ch->bdev->name);
	c->armed_ns = 0; /* fired or not, re-armed below from the heads */
	bdev_channel_poll(c->base_ch);
	now = bdev_delay_now_ns();
	for (int q = 0; q < BDEV_DELAY_NR; q++) {
		while (c->head[q] && bdev_delay_io(c->head[q])->deadline_ns <= now) {
			struct bdev_io *io = c->head[q];

			c->head[q] = bdev_delay_io(io)->next;
			if (!c->head[q])
				c->tail[q] = NULL;
			bdev_io_complete(io, bdev_delay_io(io)->status);
		}
	}
	bdev_delay_arm(c);
}

static int bdev_delay_channel_create(struct bdev_channel *ch)
{
	struct bdev_delay *dl = ch->bdev->ctx;
	struct bdev_delay_chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->tfd < 0) {
		rc = -errno;
		goto out_free;
	}
	rc = bdev_channel_add_fd(ch, c->tfd);
	if (rc)
		goto out_close;
	rc = bdev_vbdev_chan_open(ch, dl->base, &c->base_ch);
	if (rc)
		goto out_close;
	c->rand = (uint32_t)bdev_delay_now_ns() | 1;
	ch->drv = c;
	return 0;

out_close:
	close(c->tfd);
out_free:
	free(c);
	return rc;
}

static void bdev_delay_channel_destroy(struct bdev_channel *ch)
{
	struct bdev_delay_chan *c = ch->drv;

	bdev_vbdev_chan_close(ch, c->base_ch);
	close(c->tfd);
	free(c);
}

static void bdev_delay_destruct(struct bdev *bdev)
{
	struct bdev_delay *dl = bdev->ctx;

	bdev_vbdev_put_base(dl->base);
	free(dl);
}

static void bdev_delay_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	const struct bdev_delay *dl = bdev->ctx;

	info->base_name = dl->base->name;
	for (int i = 0; i < BDEV_DELAY_NR; i++)
		info->delay_us[i] = __atomic_load_n(&dl->latency_us[i], __ATOMIC_RELAXED);
}

static const struct bdev_module_ops bdev_delay_ops = {
    .module_name = "delay",
    .product_name = "delay",
    .destruct = bdev_delay_destruct,
    .channel_create = bdev_delay_channel_create,
    .channel_destroy = bdev_delay_channel_destroy,
    .submit = bdev_delay_submit,
    .poll = bdev_delay_poll,
    .get_info = bdev_delay_get_info,
};

/* An hour: more is a typo, not a test. */
#define BDEV_DELAY_MAX_US 3600000000ull

int bdev_delay_create(const char *name, const char *base_name, const uint8_t *uuid,
		      const uint64_t *latency_us, struct bdev **out)
{
	struct bdev_delay *dl;
	struct bdev *base, *b;
	int rc;

	if (!name || !*name || strlen(name) > BDEV_NAME_MAX || !latency_us)
		return -EINVAL;
	for (int i = 0; i < BDEV_DELAY_NR; i++)
		if (latency_us[i] > BDEV_DELAY_MAX_US)
			return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	rc = bdev_vbdev_take_base(base_name, name, &base);
	if (rc)
		goto out_free;
	dl->ops = bdev_delay_ops;
	dl->ops.io_ctx_size = bdev_vbdev_ctx_size(sizeof(struct bdev_delay_io), base);
	dl->base = base;
	memcpy(dl->latency_us, latency_us, sizeof(dl->latency_us));
	rc = bdev_vbdev_alloc(name, &dl->ops, base, uuid, &b);
	if (rc)
		goto out_put;
	b->ctx = dl;
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
	free(dl);
	return rc;
}

int bdev_delay_update_latency(const char *name, enum bdev_delay_latency which, uint64_t us)
{
	struct bdev *b = bdev_lookup(name);
	struct bdev_delay *dl;

	if (!b || strcmp(b->ops->module_name, "delay"))
		return -ENODEV;
	if ((unsigned int)which >= BDEV_DELAY_NR || us > BDEV_DELAY_MAX_US)
		return -EINVAL;
	dl = b->ctx;
	__atomic_store_n(&dl->latency_us[which], us, __ATOMIC_RELAXED);
	return 0;
}
