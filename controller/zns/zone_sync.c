/* controller/zns/zone_sync.c - when a zone write may complete, and the zone state's durability.
 *
 * A zone write ends in zone order: its completion is held (the core's end_fn) until every write
 * reserved below it in the zone ended, so the write pointer the state file records (wp_done)
 * never passes a write that has not landed, and a write whose CQE the host saw is below it. The
 * writes a completion releases belong to any poll group: each is posted back to its own.
 *
 * Durability comes in rounds, one at a time per zoned namespace: the live words are captured,
 * the data bdev is flushed (by the round's leader, a waiting request, with its own bdev_io on its
 * own thread's channel), then the capture is written as a checkpoint and synced by the syncer
 * thread; every request that joined before the capture completes then. A Flush, a write with
 * FUA or on a bdev whose write cache is off, and every zone management change wait for a round;
 * requests arriving meanwhile wait for the next one, which its first waiter leads. The capture
 * precedes the data flush, so a checkpoint never claims data the flush did not cover. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"
#include "controller/zns/zns.h"

/* ---- the order of ends ---- */

static void ctrlr_zns_released_msg(void *arg);

void ctrlr_zns_release(struct ctrlr_req *ready)
{
	while (ready) {
		struct ctrlr_req *r = ready;

		ready = r->hold.next;
		r->hold.next = NULL;
		ctrlr_req_post(r, ctrlr_zns_released_msg);
	}
}

static void ctrlr_zns_sync_complete(struct ctrlr_req *req, uint16_t st)
{
	ctrlr_req_complete(req, st);
}

/* A write's end is recorded: it completes, after a round when it must be durable. Returns true
 * when the round took it. */
static bool ctrlr_zns_end_durable(struct ctrlr_req *req)
{
	if (req->hold.status || !req->hold.durable)
		return false;
	ctrlr_zns_sync(req, ctrlr_zns_sync_complete);
	return true;
}

/* Owner thread: a held write was released by a write that ended below it. */
static void ctrlr_zns_released_msg(void *arg)
{
	struct ctrlr_req *req = arg;

	if (!ctrlr_zns_end_durable(req))
		ctrlr_req_complete(req, req->hold.status);
}

/* The core's end of a zone write (end_fn): the end is recorded in zone order. */
static bool ctrlr_zns_end_fn(struct ctrlr_req *req, uint16_t *status)
{
	struct ctrlr_req *ready;
	bool done;

	req->end_fn = req->hold.prev_end;
	if (!req->hold.active)
		return false;
	req->hold.active = false;
	req->hold.status = *status;
	done = ctrlr_zns_write_end(ctrlr_zns_of(req->ns), req, req->hold.lba, req->hold.nlb,
				   req->hold.gen, !*status, &ready);
	ctrlr_zns_release(ready);
	if (!done)
		return true;
	return ctrlr_zns_end_durable(req);
}

void ctrlr_zns_hold(struct ctrlr_req *req, uint64_t lba, uint64_t nlb, uint32_t gen)
{
	struct ctrlr_zns *zns = ctrlr_zns_of(req->ns);

	req->hold.active = true;
	req->hold.lba = lba;
	req->hold.nlb = nlb;
	req->hold.gen = gen;
	/* FUA (Write, Write Zeroes, Copy, Zone Append: CDW12 bit 30), or a bdev that writes
	 * through: the write is durable when it completes, and so is its zone's state. */
	req->hold.durable = zns->file && ((req->sqe.cdw12 & NVME_RW_FUA) ||
					  !bdev_write_cache_enabled(req->ns->bdev));
	req->hold.prev_end = req->end_fn;
	req->end_fn = ctrlr_zns_end_fn;
}

/* ---- rounds ---- */

static void ctrlr_zns_round_start(struct ctrlr_zns *zns, struct ctrlr_req *leader);

static void ctrlr_zns_round_done_msg(void *arg)
{
	struct ctrlr_req *req = arg;

	req->hold.cont(req, req->hold.status);
}

static void ctrlr_zns_round_start_msg(void *arg)
{
	struct ctrlr_req *req = arg;

	ctrlr_zns_round_start(ctrlr_zns_of(req->ns), req);
}

/* The round ended (rc: 0, or why its checkpoint is not durable): its waiters complete, the next
 * round starts with the first of those that came since. Any thread. */
static void ctrlr_zns_round_end(struct ctrlr_zns *zns, int rc)
{
	struct ctrlr_req *done, *leader;

	pthread_mutex_lock(&zns->lock);
	if (!rc)
		zns->file->seq++;
	done = zns->round_cur;
	zns->round_cur = NULL;
	leader = zns->round_next_head;
	if (!leader)
		zns->round_busy = false;
	pthread_mutex_unlock(&zns->lock);
	if (rc)
		LOG_ERR(CTRLR_LOG, "zone state file %s: checkpoint not written: %s", zns->file->path,
			strerror(-rc));
	while (done) {
		struct ctrlr_req *r = done;

		done = r->hold.next;
		r->hold.next = NULL;
		/* Not durable: the data may be, the zone state that describes it is not. */
		if (rc)
			r->hold.status = ctrlr_bdev_status(rc, true);
		ctrlr_req_post(r, ctrlr_zns_round_done_msg);
	}
	/* The leader waits in the next list: its hop is free. */
	if (leader)
		ctrlr_req_post(leader, ctrlr_zns_round_start_msg);
}

/* Syncer thread: the checkpoint is written and synced. */
static void ctrlr_zns_round_written(struct syncer_job *job, int rc)
{
	ctrlr_zns_round_end(job->arg, rc);
}

/* The leader's thread: the data the capture describes is flushed. */
static void ctrlr_zns_round_flushed(struct ctrlr_req *leader, int status)
{
	struct ctrlr_zns *zns = ctrlr_zns_of(leader->ns);
	int rc = status;

	if (!rc)
		rc = ctrlr_zns_file_write(zns, ctrlr_zns_round_written);
	if (rc)
		ctrlr_zns_round_end(zns, rc < 0 ? rc : -EIO);
}

/* The leader's thread: every waiter so far joins this round; capture, then flush the data. */
static void ctrlr_zns_round_start(struct ctrlr_zns *zns, struct ctrlr_req *leader)
{
	struct bdev_io *bio = leader->bio;
	uint16_t st;

	pthread_mutex_lock(&zns->lock);
	zns->round_cur = zns->round_next_head;
	zns->round_next_head = zns->round_next_tail = NULL;
	ctrlr_zns_file_capture(zns);
	pthread_mutex_unlock(&zns->lock);
	memset(bio, 0, sizeof(*bio));
	bio->type = BDEV_IO_FLUSH;
	st = ctrlr_req_submit_bio(leader, ctrlr_zns_round_flushed);
	if (st)
		ctrlr_zns_round_end(zns, -EIO);
}

void ctrlr_zns_sync(struct ctrlr_req *req, void (*cont)(struct ctrlr_req *req, uint16_t st))
{
	struct ctrlr_zns *zns = ctrlr_zns_of(req->ns);
	bool lead;

	req->hold.cont = cont;
	req->hold.status = NVME_SC_SUCCESS;
	req->hold.next = NULL;
	pthread_mutex_lock(&zns->lock);
	if (zns->round_next_tail)
		zns->round_next_tail->hold.next = req;
	else
		zns->round_next_head = req;
	zns->round_next_tail = req;
	lead = !zns->round_busy;
	zns->round_busy = true;
	pthread_mutex_unlock(&zns->lock);
	if (lead)
		ctrlr_zns_round_start(zns, req);
}
