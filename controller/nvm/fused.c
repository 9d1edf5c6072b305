/* controller/nvm/fused.c - fused operations (NVMe Base 2.0 section 3.4.2): Compare and Write as
 * the one supported pair (FUSES bit 0), on NVM and zoned namespaces (the write half follows the
 * zone rules), and the namespace's LBA range locks that make it atomic against every other
 * write and zone command (see nvm.h). The core takes both commands of a pair from the SQ
 * (core/req.c) and hands them here. Owner thread of the SQ, except the lock table,
 * which any owner thread of the namespace's controllers touches under its mutex. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"

struct ctrlr_caw_locks {
	pthread_mutex_t lock; /* the list only; never held across I/O */
	uint32_t cawing;      /* atomic: Compare and Write entries in the list */
	uint32_t fast;	      /* atomic: writes running outside the list */
	struct ctrlr_req *head, *tail;
};

int ctrlr_caw_locks_create(struct ctrlr_caw_locks **out)
{
	struct ctrlr_caw_locks *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	if (pthread_mutex_init(&l->lock, NULL)) {
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void ctrlr_caw_locks_destroy(struct ctrlr_caw_locks *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static bool ctrlr_caw_overlap(const struct ctrlr_req *a, const struct ctrlr_req *b)
{
	return a->caw_slba < b->caw_end && b->caw_slba < a->caw_end;
}

static void ctrlr_caw_resume_msg(void *arg)
{
	struct ctrlr_req *req = arg;

	req->caw_resume(req);
}

/* May entry e run? A Compare and Write waits for the fast writes to drain and for every earlier
 * overlapping entry; a write waits only for earlier overlapping Compare and Writes. Locked. */
static bool ctrlr_caw_may_run(struct ctrlr_caw_locks *l, struct ctrlr_req *e)
{
	if (e->caw_is_pair && __atomic_load_n(&l->fast, __ATOMIC_SEQ_CST))
		return false;
	for (struct ctrlr_req *p = l->head; p != e; p = p->caw_next)
		if ((e->caw_is_pair || p->caw_is_pair) && ctrlr_caw_overlap(p, e))
			return false;
	return true;
}

/* Resumes every waiting entry that may run now, on its own owner thread. Locked. */
static void ctrlr_caw_scan(struct ctrlr_caw_locks *l)
{
	for (struct ctrlr_req *e = l->head; e; e = e->caw_next) {
		struct ctrlr *ctrlr = e->sq->ctrlr;

		if (e->caw_state != CTRLR_CAW_WAITING || !ctrlr_caw_may_run(l, e))
			continue;
		e->caw_state = CTRLR_CAW_ACTIVE;
		ctrlr->ops->io_post(ctrlr->tctx, e->sq, &e->hop, ctrlr_caw_resume_msg, e);
	}
}

static void ctrlr_caw_append(struct ctrlr_caw_locks *l, struct ctrlr_req *req)
{
	req->caw_next = NULL;
	if (l->tail)
		l->tail->caw_next = req;
	else
		l->head = req;
	l->tail = req;
}

static void ctrlr_caw_unlink(struct ctrlr_caw_locks *l, struct ctrlr_req *req)
{
	struct ctrlr_req *prev = NULL;

	for (struct ctrlr_req *p = l->head; p; prev = p, p = p->caw_next) {
		if (p != req)
			continue;
		if (prev)
			prev->caw_next = p->caw_next;
		else
			l->head = p->caw_next;
		if (l->tail == p)
			l->tail = prev;
		break;
	}
	req->caw_next = NULL;
}

/* A fast write is over; the last one lets a Compare and Write waiting for the drain go. */
static void ctrlr_caw_fast_dec(struct ctrlr_caw_locks *l)
{
	if (__atomic_sub_fetch(&l->fast, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&l->cawing, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&l->lock);
		ctrlr_caw_scan(l);
		pthread_mutex_unlock(&l->lock);
	}
}

/* The blocks a write-group command may change: its LBA range, or the whole namespace for the
 * commands with range lists (Dataset Management, Copy, vendor commands). */
static void ctrlr_caw_write_range(struct ctrlr_req *req)
{
	uint8_t opc = req->sqe.cdw0.bits.opc;
	uint64_t slba = ctrlr_sqe_slba(&req->sqe);
	uint64_t nlb = (req->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;

	if (opc == NVME_CMD_WRITE || opc == NVME_CMD_WRITE_ZEROES || opc == NVME_CMD_WRITE_UNCOR) {
		req->caw_slba = slba;
		req->caw_end = slba + nlb < slba ? UINT64_MAX : slba + nlb;
	} else {
		req->caw_slba = 0;
		req->caw_end = UINT64_MAX;
	}
}

static bool ctrlr_caw_write_end(struct ctrlr_req *req, uint16_t *status);

bool ctrlr_caw_write_begin(struct ctrlr_req *req, ctrlr_req_exec_fn exec)
{
	struct ctrlr_caw_locks *l = ctrlr_nvm_ns(req->ns)->caw;
	bool wait;

	/* Counted first, then the flag read (both sequentially consistent): a Compare and Write
	 * that set the flag first sees this write in `fast` and waits for it. */
	__atomic_add_fetch(&l->fast, 1, __ATOMIC_SEQ_CST);
	/* The completion (ctrlr_req_complete) ends the write's part in the locks. */
	req->end_fn = ctrlr_caw_write_end;
	if (!__atomic_load_n(&l->cawing, __ATOMIC_SEQ_CST)) {
		req->caw_state = CTRLR_CAW_FAST;
		return false;
	}
	ctrlr_caw_fast_dec(l);
	ctrlr_caw_write_range(req);
	req->caw_is_pair = false;
	req->caw_resume = exec;
	pthread_mutex_lock(&l->lock);
	ctrlr_caw_append(l, req);
	wait = !ctrlr_caw_may_run(l, req);
	req->caw_state = wait ? CTRLR_CAW_WAITING : CTRLR_CAW_ACTIVE;
	pthread_mutex_unlock(&l->lock);
	return wait;
}

/* The write completed (ctrlr_req_complete runs it while req->ns is still held). */
static bool ctrlr_caw_write_end(struct ctrlr_req *req, uint16_t *status)
{
	struct ctrlr_caw_locks *l = ctrlr_nvm_ns(req->ns)->caw;

	(void)status;
	if (req->caw_state == CTRLR_CAW_FAST) {
		req->caw_state = CTRLR_CAW_NONE;
		ctrlr_caw_fast_dec(l);
		return false;
	}
	pthread_mutex_lock(&l->lock);
	ctrlr_caw_unlink(l, req);
	req->caw_state = CTRLR_CAW_NONE;
	ctrlr_caw_scan(l);
	pthread_mutex_unlock(&l->lock);
	return false;
}

/* The pair takes the range: true when it must wait (caw_resume runs later). */
static bool ctrlr_caw_acquire(struct ctrlr_req *req, uint64_t slba, uint64_t nlb,
			      void (*run)(struct ctrlr_req *req))
{
	struct ctrlr_caw_locks *l = ctrlr_nvm_ns(req->ns)->caw;
	bool wait;

	req->caw_slba = slba;
	req->caw_end = slba + nlb;
	req->caw_is_pair = true;
	req->caw_resume = run;
	pthread_mutex_lock(&l->lock);
	__atomic_add_fetch(&l->cawing, 1, __ATOMIC_SEQ_CST);
	ctrlr_caw_append(l, req);
	wait = !ctrlr_caw_may_run(l, req);
	req->caw_state = wait ? CTRLR_CAW_WAITING : CTRLR_CAW_ACTIVE;
	pthread_mutex_unlock(&l->lock);
	return wait;
}

static void ctrlr_caw_release(struct ctrlr_req *req)
{
	struct ctrlr_caw_locks *l = ctrlr_nvm_ns(req->ns)->caw;

	pthread_mutex_lock(&l->lock);
	ctrlr_caw_unlink(l, req);
	__atomic_sub_fetch(&l->cawing, 1, __ATOMIC_SEQ_CST);
	req->caw_state = CTRLR_CAW_NONE;
	ctrlr_caw_scan(l);
	pthread_mutex_unlock(&l->lock);
}

/* ---- Compare and Write ---- */

/* Both commands complete, first then second; the range is released first. */
static void ctrlr_fused_complete(struct ctrlr_req *first, uint16_t st1, uint16_t st2)
{
	struct ctrlr_req *second = first->fused;

	if (first->caw_state)
		ctrlr_caw_release(first);
	first->fused = NULL;
	second->fused = NULL;
	if (st1 && !first->error_lba && first->ns)
		first->error_lba = ctrlr_sqe_slba(&first->sqe);
	ctrlr_req_complete(first, st1);
	ctrlr_req_complete(second, st2);
}

static void ctrlr_fused_write_done(struct ctrlr_req *second, int status)
{
	struct ctrlr_req *first = second->fused;
	uint16_t st = ctrlr_bdev_status(status, true);

	/* Written blocks are no longer uncorrectable (as any write, io_cmd.c). */
	if (!st && ctrlr_uncor_clear(ctrlr_nvm_ns(second->ns)->uncor, ctrlr_sqe_slba(&second->sqe),
				     (second->sqe.cdw12 & NVME_RW_NLB_MASK) + 1))
		st = NVME_SC_INTERNAL;
	if (!st) {
		CTRLR_SQ_STAT_ADD(second->sq, host_write_cmds, 1);
		CTRLR_SQ_STAT_ADD(second->sq, bytes_written, second->data_len);
	}
	if (st && !second->error_lba)
		second->error_lba = ctrlr_sqe_slba(&second->sqe);
	ctrlr_fused_complete(first, NVME_SC_SUCCESS, st);
}

static void ctrlr_fused_compare_chunk(struct ctrlr_req *req, const void *data, size_t len)
{
	uint64_t off = (req->step.lba - ctrlr_sqe_slba(&req->sqe)) * req->lbaf->ds;
	const char *d = data;

	/* The first mismatch is remembered in step.crc; later chunks are still read. */
	for (int i = 0; i < req->iovcnt && len && !req->step.crc; i++) {
		size_t il = req->iov[i].iov_len, c;

		if (off >= il) {
			off -= il;
			continue;
		}
		c = il - off < len ? il - off : len;
		if (memcmp((char *)req->iov[i].iov_base + off, d, c))
			req->step.crc = 1;
		d += c;
		len -= c;
		off = 0;
	}
}

static void ctrlr_fused_compare_done(struct ctrlr_req *first, uint16_t st)
{
	struct ctrlr_req *second = first->fused;
	struct bdev_io *bio = second->bio;
	const struct nvme_sqe *sqe = &second->sqe;

	if (!st && first->step.crc)
		st = NVME_SC_COMPARE_FAILED;
	/* A failed first command fails the second (section 3.4.2). */
	if (st)
		return ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
	CTRLR_SQ_STAT_ADD(first->sq, host_read_cmds, 1);
	/* Zoned: the write obeys the zone's state and write pointer (ZNS 1.1 2.1.1, 3.4), taken
	 * only now that it will be done, so a failed compare leaves the zone as it was. The pair
	 * holds the range, and every write or zone command of the namespace is ordered by the
	 * range locks, so the zone cannot change between the compare and this write. */
	st = ctrlr_nvm_zoned_write(second, ctrlr_sqe_slba(sqe), (sqe->cdw12 & NVME_RW_NLB_MASK) + 1);
	if (st)
		return ctrlr_fused_complete(first, NVME_SC_SUCCESS, st);
	memset(bio, 0, sizeof(*bio));
	bio->type = BDEV_IO_WRITE;
	bio->flags = (sqe->cdw12 & NVME_RW_FUA) ? BDEV_IO_F_FUA : 0;
	/* Logical blocks to bdev blocks of the namespace's format (admin_format.c). */
	bio->offset_blocks = ctrlr_req_bdev_blocks(second, ctrlr_sqe_slba(sqe));
	bio->num_blocks = ctrlr_req_bdev_blocks(second, (sqe->cdw12 & NVME_RW_NLB_MASK) + 1);
	bio->iov = second->iov;
	bio->iovcnt = second->iovcnt;
	st = ctrlr_req_submit_bio(second, ctrlr_fused_write_done);
	if (st)
		ctrlr_fused_complete(first, NVME_SC_SUCCESS, st);
}

/* The range is ours: compare, then write (ctrlr_fused_compare_done). */
static void ctrlr_fused_run(struct ctrlr_req *first)
{
	uint64_t nlb = (first->sqe.cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;

	first->step.crc = 0;
	st = ctrlr_io_read_range(first, ctrlr_sqe_slba(&first->sqe), nlb,
				 ctrlr_fused_compare_chunk, ctrlr_fused_compare_done);
	if (st)
		ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
}

/* The checks of the pair before anything runs: on failure the failing command gets the status and
 * the other Command Aborted due to Failed Fused Command. */
void ctrlr_io_fused(struct ctrlr_req *first, struct ctrlr_req *second)
{
	const struct nvme_sqe *c = &first->sqe, *w = &second->sqe;
	uint64_t slba = ctrlr_sqe_slba(c);
	uint64_t nlb = (c->cdw12 & NVME_RW_NLB_MASK) + 1;
	uint16_t st;

	/* Compare and Write is the one fused operation of the NVM command set. */
	if (c->cdw0.bits.opc != NVME_CMD_COMPARE) {
		first->error_loc = 0;
		return ctrlr_fused_complete(first, NVME_SC_INVALID_FIELD, NVME_SC_FUSED_FAIL);
	}
	if (w->cdw0.bits.opc != NVME_CMD_WRITE) {
		second->error_loc = 0;
		return ctrlr_fused_complete(first, NVME_SC_FUSED_FAIL, NVME_SC_INVALID_FIELD);
	}
	/* Both address the same blocks of the same namespace. */
	if (w->nsid != c->nsid || ctrlr_sqe_slba(w) != slba ||
	    (w->cdw12 & NVME_RW_NLB_MASK) != (c->cdw12 & NVME_RW_NLB_MASK)) {
		second->error_loc = w->nsid != c->nsid ? offsetof(struct nvme_sqe, nsid)
						       : offsetof(struct nvme_sqe, cdw10);
		return ctrlr_fused_complete(first, NVME_SC_FUSED_FAIL, NVME_SC_INVALID_FIELD);
	}
	st = ctrlr_req_get_ns(first);
	if (st)
		return ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
	st = ctrlr_req_get_ns(second);
	if (st)
		return ctrlr_fused_complete(first, NVME_SC_FUSED_FAIL, st);
	st = ctrlr_req_check_access(first, CTRLR_ACCESS_READ);
	if (st)
		return ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
	st = ctrlr_req_check_access(second, CTRLR_ACCESS_WRITE);
	if (st)
		return ctrlr_fused_complete(first, NVME_SC_FUSED_FAIL, st);
	st = ctrlr_io_check_range(first, slba, nlb);
	if (st)
		return ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
	/* Formats with metadata (io_md.c) are not done fused: the pair is refused. */
	if (ctrlr_io_has_md(first) || first->lbaf != second->lbaf) {
		first->error_loc = offsetof(struct nvme_sqe, nsid);
		return ctrlr_fused_complete(first, NVME_SC_INVALID_FIELD, NVME_SC_FUSED_FAIL);
	}
	st = ctrlr_req_map_data(first, nlb * first->lbaf->ds, CTRLR_DMA_READ);
	if (st)
		return ctrlr_fused_complete(first, st, NVME_SC_FUSED_FAIL);
	st = ctrlr_req_map_data(second, nlb * second->lbaf->ds, CTRLR_DMA_READ);
	if (st)
		return ctrlr_fused_complete(first, NVME_SC_FUSED_FAIL, st);
	if (ctrlr_caw_acquire(first, slba, nlb, ctrlr_fused_run))
		return; /* resumed by the release of what it waits for */
	ctrlr_fused_run(first);
}
