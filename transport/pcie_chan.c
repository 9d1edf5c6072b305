/* transport/pcie_chan.c - bdev I/O channels of the transport's threads: one
 * per (thread, bdev), created on first use, completions reaped when the
 * channel's eventfd fires on that thread's evloop (by the thread's own
 * handler, when it has one: a poll group batches interrupts around it). */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "transport/pcie_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>


static void pcie_chan_readable(int fd, uint32_t events, void *arg)
{
	struct pcie_chan_entry *e = arg;
	struct pcie_thread *t = e->thread;

	if (t->chan_ready)
		t->chan_ready(t, e->ch);
	else
		bdev_channel_poll(e->ch);
}

struct bdev_channel *pcie_thread_get_channel(struct pcie_thread *t, struct bdev *bdev)
{
	struct pcie_chan_entry *e;

	for (e = t->channels; e; e = e->next)
		if (e->bdev == bdev)
			return e->ch;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->bdev = bdev;
	e->thread = t;
	if (bdev_channel_create(bdev, &e->ch))
		goto out_free;
	e->watch = evloop_watch_add(t->loop, bdev_channel_get_fd(e->ch), EPOLLIN,
				    pcie_chan_readable, e);
	if (!e->watch)
		goto out_destroy;
	e->next = t->channels;
	t->channels = e;
	return e->ch;

out_destroy:
	bdev_channel_destroy(e->ch);
out_free:
	LOG_ERR(PCIE_LOG, "cannot open an I/O channel on %s", bdev_get_name(bdev));
	free(e);
	return NULL;
}

static void pcie_chan_entry_free(struct pcie_chan_entry *e)
{
	/* The core drained its I/O before putting the bdev; reap completions
	 * still queued so the channel can go. */
	bdev_channel_poll(e->ch);
	evloop_watch_remove(e->watch);
	if (bdev_channel_destroy(e->ch))
		LOG_ERR(PCIE_LOG, "channel on %s still busy at release", bdev_get_name(e->bdev));
	free(e);
}

void pcie_thread_put_bdev(struct pcie_thread *t, struct bdev *bdev)
{
	struct pcie_chan_entry **pp = &t->channels;

	while (*pp) {
		struct pcie_chan_entry *e = *pp;

		if (e->bdev == bdev) {
			*pp = e->next;
			pcie_chan_entry_free(e);
		} else {
			pp = &e->next;
		}
	}
}

void pcie_thread_put_all(struct pcie_thread *t)
{
	while (t->channels) {
		struct pcie_chan_entry *e = t->channels;

		t->channels = e->next;
		pcie_chan_entry_free(e);
	}
}
