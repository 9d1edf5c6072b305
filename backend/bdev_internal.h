/* backend/bdev_internal.h - what bdev modules (malloc, null, aio) share with the core: the module
 * ops table, the bdev and channel objects, and the completion funnel. */
#ifndef NVME_EMU_BACKEND_BDEV_INTERNAL_H
#define NVME_EMU_BACKEND_BDEV_INTERNAL_H

#include "backend/bdev.h"
#include "common/counter.h"

#include <pthread.h>
#include <stdatomic.h>

#define BDEV_LOG "bdev"

/*
 * A module's ops table. The core validates every io (type, ranges, iovec length) before
 * `submit` sees it, so a module only does the transfer. A module reports each result through
 * bdev_io_complete(), from submit (queued, delivered at the next poll) or from its `poll`.
 */
struct bdev_module_ops {
	const char *module_name;
	const char *product_name;
	size_t io_ctx_size;   /* bytes of driver_ctx per io */
	uint32_t io_types;    /* bit per enum bdev_io_type */
	bool has_write_cache; /* the module honours BDEV_IO_F_FUA and FLUSH */
	bool packed_blocks;   /* BDEV_PACKED_BLOCK_SIZE is a valid block size (region bdevs) */
	/* Frees the module's state (bdev->ctx). Main thread; no channel is left. */
	void (*destruct)(struct bdev *bdev);
	/* Instead of destruct, for a module whose teardown ends later (a thread of its own with
	 * ios in flight on a base): starts it; the module calls bdev_destruct_done(bdev) on the
	 * main thread when it has ended (the bdev's memory and what it claimed stay until then,
	 * its name is gone from the registry at once). Main thread. */
	void (*destruct_async)(struct bdev *bdev);
	/* Sets ch->drv. Channel thread. Returns 0/-errno. Optional. */
	int (*channel_create)(struct bdev_channel *ch);
	/* Frees ch->drv. Channel thread; nothing outstanding. Optional. */
	void (*channel_destroy)(struct bdev_channel *ch);
	/* Starts a validated io. Channel thread. */
	void (*submit)(struct bdev_channel *ch, struct bdev_io *io);
	/* Gives queued work to the device. Called by bdev_channel_poll() before the eventfd is
	 * reset, so that completions signalled while issuing are reaped by this poll rather than
	 * waking the thread again. Channel thread. Optional. */
	void (*issue)(struct bdev_channel *ch);
	/* Reaps finished work into bdev_io_complete(); may issue work that waited for free queue
	 * slots. Channel thread. Optional. */
	void (*poll)(struct bdev_channel *ch);
	/* Adds module-specific fields to *info. Optional. */
	void (*get_info)(const struct bdev *bdev, struct bdev_info *info);
};

struct bdev {
	char name[BDEV_NAME_MAX + 1];
	const struct bdev_module_ops *ops;
	void *ctx; /* module state */
	uint32_t block_size;
	uint64_t num_blocks; /* __atomic: grows at run time (bdev_notify_resize) */
	uint8_t uuid[BDEV_UUID_LEN];
	bdev_resize_cb resize_cb;
	void *resize_arg;
	/* From the ops table at bdev_alloc; a module whose device decides (an NBD server's flags)
	 * narrows them before bdev_register. Fixed once registered. */
	uint32_t io_types;
	bool has_write_cache;
	bool write_cache; /* read with __atomic by channel threads */
	uint32_t open_count;
	bool claimed;
	char claimed_by[BDEV_NAME_MAX + 1];
	uint32_t channel_count;	 /* __atomic: channels are created on poll group threads */
	/* I/O counters are kept per channel, by its owner thread alone (common/counter.h):
	 * bdev_get_stats sums the live channels' and what destroyed ones left here. */
	struct counter_block *stat_channels;
	struct bdev_stats retired_stats;
	struct bdev *next;	 /* registry list, creation order */
	/* Deletion (main thread): done once the module's teardown has ended. */
	void (*deleted)(void *arg);
	void *deleted_arg;
	struct bdev *next_dying; /* bdevs whose asynchronous teardown runs */
};

struct bdev_channel {
	struct bdev *bdev;
	void *drv;		   /* module channel state */
	int efd;		   /* readable while completions wait */
	int epfd;		   /* -1, or an epoll fd over efd and the module's own fds
				    * (bdev_channel_add_fd): what bdev_channel_get_fd returns */
	bool signaled;		   /* efd written by this thread since the last poll read it */
	_Atomic bool ext_signaled; /* efd written by another thread (or a wake) since then */
	bool repoll;		   /* the module's poll asked for another one (bdev_channel_repoll) */
	bool in_poll;		   /* the module is reaping: the drain follows, no need to signal */
	bool hold;		   /* bdev_channel_hold_wakeups: the owner polls before it sleeps */
	bool held_kick;		   /* a kick deferred by hold, written at the release */
	struct bdev_io *done_head; /* completed, callback not yet run */
	struct bdev_io *done_tail;
	uint32_t outstanding;
	pthread_t owner;
	/* Completions from other threads (a library's own threads, the main loop), taken over by
	 * the next poll: see bdev_io_complete_remote. */
	pthread_mutex_t remote_lock;
	struct bdev_io *remote_head; /* __atomic: peeked without the lock */
	struct bdev_io *remote_tail;
	/* Written by the owner only (counter_add_owned), on the bdev's stat_channels. */
	struct bdev_stats stats;
	struct counter_block stat_block;
};

/* Checks a name and block size, allocates a bdev (not yet visible) with the given geometry and a
 * random UUID unless `uuid` is given. Returns 0 or -EINVAL/-EEXIST/-ENOMEM. Main thread. */
int bdev_alloc(const char *name, const struct bdev_module_ops *ops, uint32_t block_size,
	       uint64_t num_blocks, const uint8_t *uuid, struct bdev **out);
/* Makes an allocated bdev visible in the registry. Returns 0 or -EEXIST. Main thread. */
int bdev_register(struct bdev *bdev);
/* Frees a bdev from bdev_alloc that was never registered (ctx must already be released). */
void bdev_free(struct bdev *bdev);
/* Ends a deletion started by the module's destruct_async: frees the bdev, runs the deleter's
 * callback. Main thread. */
void bdev_destruct_done(struct bdev *bdev);

/* The completion funnel: records the result and queues the io for the channel's next poll,
 * signalling the channel's eventfd unless a poll is already under way. Channel thread. */
void bdev_io_complete(struct bdev_io *io, int status);

/* Makes the channel's fd also readable when `fd` is (a timerfd, a base bdev's channel fd): the
 * channel's fd becomes an epoll fd over its eventfd and these. Only from the module's
 * channel_create (before anyone watches the channel's fd); the module reads or polls fd itself
 * in its poll. Returns 0 or -errno. */
int bdev_channel_add_fd(struct bdev_channel *ch, int fd);

/* A module's device changed size: stores it and tells the bdev's user. Main thread. */
void bdev_notify_resize(struct bdev *bdev, uint64_t num_blocks);

/* ---- Guest memory for registration (bdev_mem_ops) ---- */
/* The ops the application set, or NULL. */
const struct bdev_mem_ops *bdev_mem_ops(void);
/* Bumped by every bdev_mem_removed: a holder of references compares it to know when to look. */
uint64_t bdev_mem_generation(void);
/* A watcher is told (fn(arg), any thread) of every bdev_mem_removed: a channel holding
 * references writes its eventfd so its own thread looks. Add and remove from any thread. */
struct bdev_mem_watch {
	void (*fn)(void *arg);
	void *arg;
	struct bdev_mem_watch *next;
};
void bdev_mem_watch_add(struct bdev_mem_watch *w);
void bdev_mem_watch_remove(struct bdev_mem_watch *w);
/* Writes the channel's eventfd from any thread: its next poll runs on its own thread. */
void bdev_channel_wake(struct bdev_channel *ch);

/* The completion funnel for a module whose I/O finishes on another thread (librbd's callback
 * threads, the NBD connections' main loop): queues the io for its channel under a lock and
 * writes the channel's eventfd; the channel's next poll delivers it. Any thread. */
void bdev_io_complete_remote(struct bdev_io *io, int status);

/* Signals the channel's eventfd (once until the next poll) so that bdev_channel_poll() runs. */
void bdev_channel_kick(struct bdev_channel *ch);
/* From a module's poll whose completions the kernel signals on the channel's eventfd itself
 * (libaio's io_set_eventfd, io_uring's registered eventfd): takes those signals, which no kick
 * flagged, so that a channel with nothing left does not stay readable and wake its loop forever.
 * Call it after a reap that found completions and reap again: a completion is in the kernel's
 * ring before it signals, so a reap after this read finds every one whose signal it took. */
void bdev_channel_take_signal(struct bdev_channel *ch);
/* From a module's poll: poll this channel again on the next loop iteration rather than sleep
 * (completions that only polling finds are in flight). */
void bdev_channel_repoll(struct bdev_channel *ch);

/* Copies between an iovec array and a flat buffer (len bytes). */
void bdev_iov_to_buf(void *buf, const struct iovec *iov, int iovcnt, size_t len);
void bdev_buf_to_iov(const struct iovec *iov, int iovcnt, const void *buf, size_t len);

#endif
