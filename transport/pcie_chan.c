/* controller/pcie_chan.c - bdev I/O channels of the transport's threads: one
 * per (thread, bdev), created on first use, completions reaped when the
 * channel's eventfd fires on that thread's evloop. */
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
	struct pcie_poll_group *pg = e->thread->pg;

	if (pg) {
		counter_add_owned_atomic(&pg->bdev_polls, 1);
		pcie_pg_hold_wakeups(pg, true);
		/* One interrupt per CQ for everything this poll completes. */
		pcie_pg_batch(pg, true);
		bdev_channel_poll(e->ch);
		pcie_pg_batch(pg, false);
		/* Completions freed requests and CQ slots: fetch what waited. */
		pcie_pg_after_bdev_poll(pg);
		pcie_pg_settle(pg);
		pcie_pg_hold_wakeups(pg, false);
	} else {
		bdev_channel_poll(e->ch);
	}
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

/* ---- put_bdev: every thread drops its channels on a bdev ---- */

struct pcie_put;

struct pcie_put_part {
	struct evloop_msg msg;
	struct pcie_put *put;
	struct pcie_poll_group *pg;
};

struct pcie_put {
	struct pcie_ctrlr *pc;
	struct bdev *bdev;
	void (*done)(void *arg);
	void *arg;
	unsigned int left; /* atomic: poll groups still to drop theirs */
	struct evloop_msg done_msg;
	struct pcie_put_part parts[];
};

/* Main: every poll group dropped its channels; the main thread's go last. */
static void pcie_put_done_main(void *arg)
{
	struct pcie_put *put = arg;
	void (*done)(void *arg) = put->done;
	void *done_arg = put->arg;

	EVLOOP_ASSERT_OWNER(put->pc->loop);
	pcie_thread_put_bdev(&put->pc->main_t, put->bdev);
	free(put);
	done(done_arg);
}

/* Poll group. */
static void pcie_put_part_msg(void *arg)
{
	struct pcie_put_part *part = arg;
	struct pcie_put *put = part->put;

	EVLOOP_ASSERT_OWNER(part->pg->t.loop);
	pcie_thread_put_bdev(&part->pg->t, put->bdev);
	if (__atomic_sub_fetch(&put->left, 1, __ATOMIC_ACQ_REL) == 0)
		evloop_post(put->pc->loop, &put->done_msg, pcie_put_done_main, put);
}

int pcie_put_bdev(void *tctx, struct bdev *bdev, void (*done)(void *arg), void *arg)
{
	struct pcie_ctrlr *pc = tctx;
	unsigned int n = pc->pgs->n;
	struct pcie_put *put = calloc(1, sizeof(*put) + n * sizeof(put->parts[0]));

	EVLOOP_ASSERT_OWNER(pc->loop);
	if (!put)
		return -ENOMEM;
	*put = (struct pcie_put){ .pc = pc, .bdev = bdev, .done = done, .arg = arg, .left = n };
	for (unsigned int i = 0; i < n; i++) {
		put->parts[i].put = put;
		put->parts[i].pg = &pc->pgs->pg[i];
		pcie_pg_post(put->parts[i].pg, &put->parts[i].msg, pcie_put_part_msg, &put->parts[i]);
	}
	return 0;
}
