/* backend/bdev.c - bdev core: registry, open/claim, properties, I/O channels, request
 * validation and the completion funnel shared by all modules. */
#include "backend/bdev_internal.h"
#include "common/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

/* Registry, creation order. Main thread only (see bdev.h). */
static struct bdev *bdev_list;

/* struct bdev_stats is summed as a run of counters (common/counter.h). */
#define BDEV_STATS_N (sizeof(struct bdev_stats) / sizeof(uint64_t))
_Static_assert(sizeof(struct bdev_stats) == 8 * sizeof(uint64_t),
	       "struct bdev_stats is a run of uint64_t counters");

/* ---- UUIDs ---- */

void bdev_uuid_format(const uint8_t *uuid, char *out)
{
	static const char hex[] = "0123456789abcdef";
	int i, o = 0;

	for (i = 0; i < BDEV_UUID_LEN; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[uuid[i] >> 4];
		out[o++] = hex[uuid[i] & 0xf];
	}
	out[o] = '\0';
}

static int bdev_hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int bdev_uuid_parse(const char *text, uint8_t *uuid)
{
	uint8_t tmp[BDEV_UUID_LEN];
	int i, pos = 0;

	if (!text || strlen(text) != BDEV_UUID_STR_LEN - 1)
		return -EINVAL;
	for (i = 0; i < BDEV_UUID_LEN; i++) {
		int hi, lo;

		if (i == 4 || i == 6 || i == 8 || i == 10) {
			if (text[pos++] != '-')
				return -EINVAL;
		}
		hi = bdev_hex_val(text[pos++]);
		lo = bdev_hex_val(text[pos++]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		tmp[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(uuid, tmp, sizeof(tmp));
	return 0;
}

/* RFC 9562 version 4: random bits with the version and variant fields set. */
static int bdev_uuid_generate(uint8_t *uuid)
{
	size_t got = 0;

	while (got < BDEV_UUID_LEN) {
		ssize_t n = getrandom(uuid + got, BDEV_UUID_LEN - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
	return 0;
}

/* ---- registry ---- */

struct bdev *bdev_lookup(const char *name)
{
	struct bdev *b;

	if (!name)
		return NULL;
	for (b = bdev_list; b; b = b->next) {
		if (!strcmp(b->name, name))
			return b;
	}
	return NULL;
}

int bdev_alloc(const char *name, const struct bdev_module_ops *ops, uint32_t block_size,
	       uint64_t num_blocks, const uint8_t *uuid, struct bdev **out)
{
	struct bdev *b;
	size_t len;
	int rc;

	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len > BDEV_NAME_MAX)
		return -EINVAL;
	if (block_size != 512 && block_size != 4096 &&
	    !(block_size == BDEV_PACKED_BLOCK_SIZE && ops->packed_blocks))
		return -EINVAL;
	/* The byte size must fit in 64 bits so that every offset computed later does. */
	if (num_blocks == 0 || num_blocks > UINT64_MAX / block_size)
		return -EINVAL;
	if (bdev_lookup(name))
		return -EEXIST;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	memcpy(b->name, name, len + 1);
	b->ops = ops;
	b->block_size = block_size;
	b->num_blocks = num_blocks;
	if (uuid) {
		memcpy(b->uuid, uuid, BDEV_UUID_LEN);
	} else {
		rc = bdev_uuid_generate(b->uuid);
		if (rc) {
			free(b);
			return rc;
		}
	}
	b->io_types = ops->io_types;
	b->has_write_cache = ops->has_write_cache;
	b->write_cache = ops->has_write_cache;
	*out = b;
	return 0;
}

int bdev_register(struct bdev *bdev)
{
	struct bdev **pp;

	if (bdev_lookup(bdev->name))
		return -EEXIST;
	for (pp = &bdev_list; *pp; pp = &(*pp)->next)
		;
	bdev->next = NULL;
	*pp = bdev;
	LOG_INFO(BDEV_LOG, "created %s bdev %s: %" PRIu64 " blocks of %u bytes",
		 bdev->ops->module_name, bdev->name, bdev->num_blocks, bdev->block_size);
	return 0;
}

void bdev_free(struct bdev *bdev)
{
	free(bdev);
}

int bdev_foreach(int (*fn)(struct bdev *bdev, void *arg), void *arg)
{
	struct bdev *b, *next;
	int rc;

	for (b = bdev_list; b; b = next) {
		next = b->next;
		rc = fn(b, arg);
		if (rc)
			return rc;
	}
	return 0;
}

static bool bdev_is_busy(const struct bdev *b)
{
	return b->claimed || b->open_count > 0 ||
	       __atomic_load_n(&b->channel_count, __ATOMIC_ACQUIRE) > 0;
}

static struct bdev *bdev_dying; /* main thread: asynchronous teardowns running */
static void (*bdev_destroyed_cb)(void *arg);
static void *bdev_destroyed_arg;

static void bdev_destroy(struct bdev *b, void (*done)(void *arg), void *arg)
{
	LOG_INFO(BDEV_LOG, "deleting bdev %s", b->name);
	b->deleted = done;
	b->deleted_arg = arg;
	if (b->ops->destruct_async) {
		b->next_dying = bdev_dying;
		bdev_dying = b;
		b->ops->destruct_async(b); /* bdev_destruct_done ends it */
		return;
	}
	if (b->ops->destruct)
		b->ops->destruct(b);
	free(b);
	if (done)
		done(arg);
}

void bdev_destruct_done(struct bdev *b)
{
	void (*done)(void *arg) = b->deleted, (*idle)(void *arg) = NULL;
	void *arg = b->deleted_arg;

	for (struct bdev **pp = &bdev_dying; *pp; pp = &(*pp)->next_dying) {
		if (*pp == b) {
			*pp = b->next_dying;
			break;
		}
	}
	LOG_INFO(BDEV_LOG, "bdev %s deleted", b->name);
	free(b);
	if (done)
		done(arg);
	if (!bdev_dying && bdev_destroyed_cb) {
		idle = bdev_destroyed_cb;
		bdev_destroyed_cb = NULL;
		idle(bdev_destroyed_arg);
	}
}

int bdev_when_destroyed(void (*cb)(void *arg), void *arg)
{
	if (!bdev_dying)
		return 0;
	bdev_destroyed_cb = cb;
	bdev_destroyed_arg = arg;
	return -EINPROGRESS;
}

int bdev_delete_cb(const char *name, void (*done)(void *arg), void *arg)
{
	struct bdev **pp, *b;

	for (pp = &bdev_list; *pp; pp = &(*pp)->next) {
		b = *pp;
		if (strcmp(b->name, name))
			continue;
		if (bdev_is_busy(b))
			return -EBUSY;
		*pp = b->next;
		bdev_destroy(b, done, arg);
		return 0;
	}
	return -ENOENT;
}

int bdev_delete(const char *name)
{
	return bdev_delete_cb(name, NULL, NULL);
}

int bdev_delete_all(void)
{
	struct bdev **pp, *b;
	bool progress = true;
	int left = 0;

	/* Stacked bdevs (error, delay) claim their base, which frees only once they are gone:
	 * passes until one deletes nothing. */
	while (progress) {
		progress = false;
		left = 0;
		for (pp = &bdev_list; *pp;) {
			b = *pp;
			if (bdev_is_busy(b)) {
				left++;
				pp = &b->next;
				continue;
			}
			*pp = b->next;
			bdev_destroy(b, NULL, NULL);
			progress = true;
		}
	}
	/* A base claimed by a bdev whose teardown runs is freed when it ends (the caller comes
	 * back then: bdev_when_destroyed). */
	for (b = bdev_list; b && !bdev_dying; b = b->next)
		LOG_WARN(BDEV_LOG, "bdev %s still in use, not deleted", b->name);
	return left;
}

int bdev_open(struct bdev *bdev)
{
	bdev->open_count++;
	return 0;
}

void bdev_close(struct bdev *bdev)
{
	assert(bdev->open_count > 0);
	if (bdev->open_count > 0)
		bdev->open_count--;
}

int bdev_claim(struct bdev *bdev, const char *owner)
{
	if (bdev->claimed)
		return -EBUSY;
	bdev->claimed = true;
	snprintf(bdev->claimed_by, sizeof(bdev->claimed_by), "%s", owner ? owner : "");
	return 0;
}

void bdev_release(struct bdev *bdev)
{
	bdev->claimed = false;
	bdev->claimed_by[0] = '\0';
}

int bdev_set_write_cache(struct bdev *bdev, bool enable)
{
	if (!bdev->has_write_cache)
		return enable ? -ENOTSUP : 0;
	__atomic_store_n(&bdev->write_cache, enable, __ATOMIC_RELAXED);
	return 0;
}

/* ---- properties ---- */

const char *bdev_get_name(const struct bdev *bdev)
{
	return bdev->name;
}

const char *bdev_get_module_name(const struct bdev *bdev)
{
	return bdev->ops->module_name;
}

uint32_t bdev_get_block_size(const struct bdev *bdev)
{
	return bdev->block_size;
}

uint64_t bdev_get_num_blocks(const struct bdev *bdev)
{
	return __atomic_load_n(&bdev->num_blocks, __ATOMIC_RELAXED);
}

void bdev_set_resize_cb(struct bdev *bdev, bdev_resize_cb cb, void *arg)
{
	bdev->resize_cb = cb;
	bdev->resize_arg = arg;
}

void bdev_notify_resize(struct bdev *bdev, uint64_t num_blocks)
{
	__atomic_store_n(&bdev->num_blocks, num_blocks, __ATOMIC_RELAXED);
	LOG_INFO(BDEV_LOG, "%s: now %" PRIu64 " blocks", bdev->name, num_blocks);
	if (bdev->resize_cb)
		bdev->resize_cb(bdev, num_blocks, bdev->resize_arg);
}

void bdev_get_uuid(const struct bdev *bdev, uint8_t *out)
{
	memcpy(out, bdev->uuid, BDEV_UUID_LEN);
}

bool bdev_io_type_supported(const struct bdev *bdev, enum bdev_io_type type)
{
	if ((unsigned int)type >= BDEV_IO_TYPE_COUNT)
		return false;
	return bdev->io_types & (1u << type);
}

const char *bdev_io_type_name(enum bdev_io_type type)
{
	static const char *const names[BDEV_IO_TYPE_COUNT] = {
		[BDEV_IO_READ] = "read",
		[BDEV_IO_WRITE] = "write",
		[BDEV_IO_FLUSH] = "flush",
		[BDEV_IO_WRITE_ZEROES] = "write_zeroes",
		[BDEV_IO_UNMAP] = "unmap",
	};

	if ((unsigned int)type >= BDEV_IO_TYPE_COUNT)
		return NULL;
	return names[type];
}

bool bdev_has_write_cache(const struct bdev *bdev)
{
	return bdev->has_write_cache;
}

bool bdev_write_cache_enabled(const struct bdev *bdev)
{
	return __atomic_load_n(&bdev->write_cache, __ATOMIC_RELAXED);
}

void bdev_get_info(const struct bdev *bdev, struct bdev_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", bdev->name);
	info->product_name = bdev->ops->product_name;
	info->module_name = bdev->ops->module_name;
	info->block_size = bdev->block_size;
	info->num_blocks = bdev_get_num_blocks(bdev);
	memcpy(info->uuid, bdev->uuid, BDEV_UUID_LEN);
	info->claimed = bdev->claimed;
	snprintf(info->claimed_by, sizeof(info->claimed_by), "%s", bdev->claimed_by);
	info->open_count = bdev->open_count;
	info->io_types = bdev->io_types;
	info->write_cache = bdev_has_write_cache(bdev);
	info->write_cache_enabled = bdev_write_cache_enabled(bdev);
	if (bdev->ops->get_info)
		bdev->ops->get_info(bdev, info);
}

void bdev_get_stats(const struct bdev *bdev, struct bdev_stats *stats)
{
	counter_sum(&bdev->stat_channels, (const uint64_t *)&bdev->retired_stats,
		    (uint64_t *)stats, BDEV_STATS_N);
}

static void bdev_outstanding_add(const uint64_t *vals, void *arg)
{
	/* A channel's block of counters is its `stats`. */
	const struct bdev_channel *ch = (const struct bdev_channel *)((const char *)vals -
					 offsetof(struct bdev_channel, stats));

	*(uint64_t *)arg += __atomic_load_n(&ch->outstanding, __ATOMIC_RELAXED);
}

uint64_t bdev_get_outstanding(const struct bdev *bdev)
{
	uint64_t n = 0;

	counter_foreach_block(&bdev->stat_channels, bdev_outstanding_add, &n);
	return n;
}

size_t bdev_io_ctx_size(const struct bdev *bdev)
{
	/* Rounded so that an array of ios stays aligned for driver_ctx. */
	return (bdev->ops->io_ctx_size + 15) & ~(size_t)15;
}

size_t bdev_io_size(const struct bdev *bdev)
{
	return sizeof(struct bdev_io) + bdev_io_ctx_size(bdev);
}

/* ---- iovec helpers ---- */

void bdev_iov_to_buf(void *buf, const struct iovec *iov, int iovcnt, size_t len)
{
	uint8_t *dst = buf;
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(dst, iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

void bdev_buf_to_iov(const struct iovec *iov, int iovcnt, const void *buf, size_t len)
{
	const uint8_t *src = buf;
	int i;

	for (i = 0; i < iovcnt && len > 0; i++) {
		size_t n = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

/* ---- channels ---- */

int bdev_channel_create(struct bdev *bdev, struct bdev_channel **out)
{
	struct bdev_channel *ch;
	int rc;

	if (!bdev || bdev->open_count == 0)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->bdev = bdev;
	ch->owner = pthread_self();
	rc = pthread_mutex_init(&ch->remote_lock, NULL);
	if (rc) {
		rc = -rc;
		goto out_free_ch;
	}
	ch->epfd = -1;
	ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->efd < 0) {
		rc = -errno;
		goto out_mutex;
	}
	if (bdev->ops->channel_create) {
		rc = bdev->ops->channel_create(ch);
		if (rc)
			goto out_close_efd;
	}
	counter_block_join(&bdev->stat_channels, &ch->stat_block, (const uint64_t *)&ch->stats);
	__atomic_fetch_add(&bdev->channel_count, 1, __ATOMIC_ACQ_REL);
	*out = ch;
	return 0;

out_close_efd:
	if (ch->epfd >= 0)
		close(ch->epfd);
	close(ch->efd);
out_mutex:
	pthread_mutex_destroy(&ch->remote_lock);
out_free_ch:
	free(ch);
	return rc;
}

int bdev_channel_destroy(struct bdev_channel *ch)
{
	if (!ch)
		return 0;
	assert(pthread_equal(ch->owner, pthread_self()));
	if (ch->outstanding)
		return -EBUSY;
	if (ch->bdev->ops->channel_destroy)
		ch->bdev->ops->channel_destroy(ch);
	if (ch->epfd >= 0)
		close(ch->epfd);
	close(ch->efd);
	pthread_mutex_destroy(&ch->remote_lock);
	/* Its counts stay the bdev's: a SMART log read after a queue went away still sees them. */
	counter_block_leave(&ch->stat_block, (uint64_t *)&ch->bdev->retired_stats, BDEV_STATS_N);
	__atomic_fetch_sub(&ch->bdev->channel_count, 1, __ATOMIC_ACQ_REL);
	free(ch);
	return 0;
}

int bdev_channel_get_fd(const struct bdev_channel *ch)
{
	return ch->epfd >= 0 ? ch->epfd : ch->efd;
}

int bdev_channel_add_fd(struct bdev_channel *ch, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN};

	if (ch->epfd < 0) {
		ch->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ch->epfd < 0)
			return -errno;
		ev.data.fd = ch->efd;
		if (epoll_ctl(ch->epfd, EPOLL_CTL_ADD, ch->efd, &ev))
			return -errno;
	}
	ev.data.fd = fd;
	return epoll_ctl(ch->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

uint32_t bdev_channel_outstanding(const struct bdev_channel *ch)
{
	return ch->outstanding;
}

void bdev_channel_kick(struct bdev_channel *ch)
{
	uint64_t one = 1;

	if (ch->signaled || ch->in_poll)
		return;
	if (ch->hold) {
		ch->held_kick = true;
		return;
	}
	/* The counter cannot overflow (we read it on every poll), so a failed write would mean a
	 * closed fd: a bug that the poll's own reap still tolerates. */
	if (write(ch->efd, &one, sizeof(one)) == sizeof(one))
		ch->signaled = true;
}

void bdev_channel_take_signal(struct bdev_channel *ch)
{
	uint64_t cnt;

	assert(pthread_equal(ch->owner, pthread_self()));
	if (read(ch->efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		LOG_ERR(BDEV_LOG, "%s: eventfd read: %m", ch->bdev->name);
	/* A kick's signal went with it: the next kick writes again. */
	ch->signaled = false;
}

void bdev_channel_hold_wakeups(struct bdev_channel *ch)
{
	assert(pthread_equal(ch->owner, pthread_self()));
	ch->hold = true;
}

void bdev_channel_release_wakeups(struct bdev_channel *ch)
{
	assert(pthread_equal(ch->owner, pthread_self()));
	ch->hold = false;
	if (ch->held_kick) {
		ch->held_kick = false;
		bdev_channel_kick(ch);
	}
}

/* ---- guest memory for registration ---- */

static const struct bdev_mem_ops *bdev_mem_ops_set;
static uint64_t bdev_mem_gen;
static pthread_mutex_t bdev_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bdev_mem_watch *bdev_mem_watchers;

void bdev_set_mem_ops(const struct bdev_mem_ops *ops)
{
	__atomic_store_n(&bdev_mem_ops_set, ops, __ATOMIC_RELEASE);
}

const struct bdev_mem_ops *bdev_mem_ops(void)
{
	return __atomic_load_n(&bdev_mem_ops_set, __ATOMIC_ACQUIRE);
}

uint64_t bdev_mem_generation(void)
{
	return __atomic_load_n(&bdev_mem_gen, __ATOMIC_ACQUIRE);
}

void bdev_mem_removed(void)
{
	__atomic_add_fetch(&bdev_mem_gen, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&bdev_mem_lock);
	for (struct bdev_mem_watch *w = bdev_mem_watchers; w; w = w->next)
		w->fn(w->arg);
	pthread_mutex_unlock(&bdev_mem_lock);
}

void bdev_mem_watch_add(struct bdev_mem_watch *w)
{
	pthread_mutex_lock(&bdev_mem_lock);
	w->next = bdev_mem_watchers;
	bdev_mem_watchers = w;
	pthread_mutex_unlock(&bdev_mem_lock);
}

void bdev_mem_watch_remove(struct bdev_mem_watch *w)
{
	pthread_mutex_lock(&bdev_mem_lock);
	for (struct bdev_mem_watch **pp = &bdev_mem_watchers; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_mutex_unlock(&bdev_mem_lock);
}

void bdev_channel_wake(struct bdev_channel *ch)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is saturated, i.e. readable anyway. */
	if (write(ch->efd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		LOG_ERR(BDEV_LOG, "%s: channel eventfd: %m", ch->bdev->name);
	/* After the write: see bdev_channel_poll. */
	atomic_store_explicit(&ch->ext_signaled, true, memory_order_release);
}

void bdev_channel_repoll(struct bdev_channel *ch)
{
	ch->repoll = true;
}

void bdev_io_complete(struct bdev_io *io, int status)
{
	struct bdev_channel *ch = io->internal.ch;

	io->internal.status = status;
	io->internal.next = NULL;
	if (ch->done_tail)
		ch->done_tail->internal.next = io;
	else
		ch->done_head = io;
	ch->done_tail = io;
	bdev_channel_kick(ch);
}

void bdev_io_complete_remote(struct bdev_io *io, int status)
{
	struct bdev_channel *ch = io->internal.ch;
	uint64_t one = 1;

	io->internal.status = status;
	io->internal.next = NULL;
	pthread_mutex_lock(&ch->remote_lock);
	if (ch->remote_tail)
		ch->remote_tail->internal.next = io;
	else
		__atomic_store_n(&ch->remote_head, io, __ATOMIC_RELEASE);
	ch->remote_tail = io;
	/* Still under the lock: the owner takes the io under it (bdev_channel_take_remote), and
	 * once it has, it may reap it and destroy the channel, so nothing here may touch the
	 * channel after the unlock. The poll reads the eventfd before it looks at the list, so
	 * this write either finds the io already taken (a spurious wake-up) or makes the fd
	 * readable again. EAGAIN: the counter is saturated, i.e. readable anyway. */
	if (write(ch->efd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		LOG_ERR(BDEV_LOG, "%s: channel eventfd: %m", ch->bdev->name);
	/* After the write: see bdev_channel_poll. */
	atomic_store_explicit(&ch->ext_signaled, true, memory_order_release);
	pthread_mutex_unlock(&ch->remote_lock);
}

/* Moves what other threads completed to the done list. Channel thread. */
static void bdev_channel_take_remote(struct bdev_channel *ch)
{
	struct bdev_io *head, *tail;

	if (!__atomic_load_n(&ch->remote_head, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&ch->remote_lock);
	head = ch->remote_head;
	tail = ch->remote_tail;
	ch->remote_head = ch->remote_tail = NULL;
	pthread_mutex_unlock(&ch->remote_lock);
	if (!head)
		return;
	if (ch->done_tail)
		ch->done_tail->internal.next = head;
	else
		ch->done_head = head;
	ch->done_tail = tail;
}

static bool bdev_range_ok(const struct bdev *b, uint64_t offset, uint64_t num)
{
	uint64_t nb = __atomic_load_n(&b->num_blocks, __ATOMIC_RELAXED);

	return offset <= nb && num <= nb - offset;
}

/* Returns 0 or the status an invalid io completes with. Nothing is accessed for a bad io. */
static int bdev_io_check(const struct bdev *b, const struct bdev_io *io)
{
	uint64_t want, total = 0;
	uint32_t i;
	int j;

	if ((unsigned int)io->type >= BDEV_IO_TYPE_COUNT)
		return -EINVAL;
	if (!bdev_io_type_supported(b, io->type))
		return -ENOTSUP;
	switch (io->type) {
	case BDEV_IO_READ:
	case BDEV_IO_WRITE:
		if (io->num_blocks == 0 || !io->iov || io->iovcnt <= 0)
			return -EINVAL;
		if (!bdev_range_ok(b, io->offset_blocks, io->num_blocks))
			return -ERANGE;
		want = io->num_blocks * b->block_size;
		for (j = 0; j < io->iovcnt; j++) {
			if (io->iov[j].iov_len > want - total)
				return -EINVAL;
			if (io->iov[j].iov_len && !io->iov[j].iov_base)
				return -EINVAL;
			total += io->iov[j].iov_len;
		}
		return total == want ? 0 : -EINVAL;
	case BDEV_IO_WRITE_ZEROES:
		if (io->num_blocks == 0)
			return -EINVAL;
		return bdev_range_ok(b, io->offset_blocks, io->num_blocks) ? 0 : -ERANGE;
	case BDEV_IO_UNMAP:
		if (!io->ranges || io->nranges == 0)
			return -EINVAL;
		for (i = 0; i < io->nranges; i++) {
			if (!bdev_range_ok(b, io->ranges[i].offset_blocks,
					   io->ranges[i].num_blocks))
				return -ERANGE;
		}
		return 0;
	case BDEV_IO_FLUSH:
	case BDEV_IO_TYPE_COUNT:
		break;
	}
	return 0;
}

void bdev_submit(struct bdev_channel *ch, struct bdev_io *io)
{
	struct bdev *b = ch->bdev;
	int rc;

	assert(pthread_equal(ch->owner, pthread_self()));
	io->internal.ch = ch;
	io->internal.next = NULL;
	io->internal.status = 0;
	io->internal.bytes = 0;
	ch->outstanding++;
	rc = bdev_io_check(b, io);
	if (rc) {
		LOG_DBG(BDEV_LOG, "%s: rejected io type %d lba %" PRIu64 "+%" PRIu64 ": %d",
			b->name, (int)io->type, io->offset_blocks, io->num_blocks, rc);
		bdev_io_complete(io, rc);
		return;
	}
	if (io->type == BDEV_IO_READ || io->type == BDEV_IO_WRITE)
		io->internal.bytes = io->num_blocks * b->block_size;
	/* Without a volatile write cache enabled, a write or a deallocation completes only when
	 * durable. */
	if ((io->type == BDEV_IO_WRITE || io->type == BDEV_IO_WRITE_ZEROES ||
	     io->type == BDEV_IO_UNMAP) &&
	    !bdev_write_cache_enabled(b))
		io->flags |= BDEV_IO_F_FUA;
	b->ops->submit(ch, io);
}

static void bdev_io_account(struct bdev_channel *ch, const struct bdev_io *io, int status)
{
	struct bdev_stats *s = &ch->stats;

	if (status) {
		counter_add_owned(&s->errors, 1);
		return;
	}
	switch (io->type) {
	case BDEV_IO_READ:
		counter_add_owned(&s->read_ops, 1);
		counter_add_owned(&s->bytes_read, io->internal.bytes);
		break;
	case BDEV_IO_WRITE:
		counter_add_owned(&s->write_ops, 1);
		counter_add_owned(&s->bytes_written, io->internal.bytes);
		break;
	case BDEV_IO_FLUSH:
		counter_add_owned(&s->flush_ops, 1);
		break;
	case BDEV_IO_WRITE_ZEROES:
		counter_add_owned(&s->write_zeroes_ops, 1);
		break;
	case BDEV_IO_UNMAP:
		counter_add_owned(&s->unmap_ops, 1);
		break;
	case BDEV_IO_TYPE_COUNT:
		break;
	}
}

int bdev_channel_poll(struct bdev_channel *ch)
{
	struct bdev_io *io, *next;
	int n = 0;

	assert(pthread_equal(ch->owner, pthread_self()));
	ch->in_poll = true;
	if (ch->bdev->ops->issue)
		ch->bdev->ops->issue(ch);
	/* Reset the eventfd before reaping: anything finishing after this read signals again. Only
	 * when someone wrote it: a poll group polling after its own submissions (wake-ups held)
	 * finds its completions without one. A writer on another thread sets ext_signaled after
	 * its write, so a write this poll misses leaves the flag for the next one, which the
	 * readable fd brings. A plain load first: the exchange (a locked instruction) only when
	 * the flag is up, not on every poll of a settle loop. */
	if (ch->signaled ||
	    (atomic_load_explicit(&ch->ext_signaled, memory_order_relaxed) &&
	     atomic_exchange_explicit(&ch->ext_signaled, false, memory_order_acq_rel)))
		bdev_channel_take_signal(ch);
	ch->held_kick = false; /* what it was for is reaped below */
	if (ch->bdev->ops->poll)
		ch->bdev->ops->poll(ch);
	bdev_channel_take_remote(ch);
	ch->in_poll = false;
	if (ch->repoll) {
		ch->repoll = false;
		bdev_channel_kick(ch);
	}
	/* Take the list as it stands: ios completed by the callbacks below (resubmitted and
	 * rejected at once) go to a fresh list and signal the eventfd for the next poll. */
	io = ch->done_head;
	ch->done_head = ch->done_tail = NULL;
	for (; io; io = next) {
		int status = io->internal.status;

		next = io->internal.next;
		bdev_io_account(ch, io, status);
		ch->outstanding--;
		io->cb(io, status, io->cb_arg);
		n++;
	}
	return n;
}
