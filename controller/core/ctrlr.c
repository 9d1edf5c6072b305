/* controller/core/ctrlr.c - the controller object: create/destroy with its modules, the clock,
 * statistics, and what the guest's memory does to it: an unmap (or bus mastering turned off)
 * detaches the queues whose rings lie in it and waits for in-flight data, a map re-attaches them.
 * Admin thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/core/core.h"

static int ctrlr_config_check(const struct ctrlr_config *c)
{
	if (!c->serial || !c->serial[0] || strlen(c->serial) > 20)
		return -EINVAL;
	if ((c->model && strlen(c->model) > 40) || (c->firmware_rev && strlen(c->firmware_rev) > 8))
		return -EINVAL;
	if (c->subnqn && strlen(c->subnqn) > 223)
		return -EINVAL;
	if (c->max_io_queues < 1 || c->max_io_queues > CTRLR_MAX_IO_QUEUES)
		return -EINVAL;
	if (c->max_queue_entries == 1 || c->max_queue_entries > CTRLR_MAX_QUEUE_ENTRIES)
		return -EINVAL;
	if (c->mdts > CTRLR_MAX_MDTS)
		return -EINVAL;
	if (c->num_vectors && c->num_vectors > 2048)
		return -EINVAL;
	return 0;
}

/* The modules' commands by opcode, and the two I/O hooks: each opcode and hook belongs to one
 * module (a table that gives one twice is refused). */
static int ctrlr_modules_bind(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < ctrlr->nr_modules; i++) {
		const struct ctrlr_module *m = ctrlr->modules[i];

		if (!m)
			continue;
		for (unsigned int op = 0; op < 256; op++) {
			if (m->admin_cmds && m->admin_cmds[op].exec) {
				if (ctrlr->admin_cmd[op])
					return -EINVAL;
				ctrlr->admin_cmd[op] = &m->admin_cmds[op];
			}
			if (m->io_cmds && m->io_cmds[op].exec) {
				if (ctrlr->io_cmd[op])
					return -EINVAL;
				ctrlr->io_cmd[op] = &m->io_cmds[op];
			}
		}
		if (m->io_fused) {
			if (ctrlr->io_fused)
				return -EINVAL;
			ctrlr->io_fused = m->io_fused;
		}
		if (m->io_write_begin) {
			if (ctrlr->io_write_begin)
				return -EINVAL;
			ctrlr->io_write_begin = m->io_write_begin;
		}
		if (m->io_write_place) {
			if (ctrlr->io_write_place)
				return -EINVAL;
			ctrlr->io_write_place = m->io_write_place;
		}
	}
	return 0;
}

/* Finishes the modules before `upto` (in reverse) and frees their state. */
static void ctrlr_modules_fini(struct ctrlr *ctrlr, uint32_t upto)
{
	while (upto--) {
		const struct ctrlr_module *m = ctrlr->modules[upto];

		if (m && m->fini)
			m->fini(ctrlr);
		free(ctrlr->mod[upto]);
		ctrlr->mod[upto] = NULL;
	}
}

static int ctrlr_modules_init(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < ctrlr->nr_modules; i++) {
		const struct ctrlr_module *m = ctrlr->modules[i];
		int ret = 0;

		if (!m)
			continue;
		if (m->ctrlr_size) {
			ctrlr->mod[i] = calloc(1, m->ctrlr_size);
			if (!ctrlr->mod[i])
				ret = -ENOMEM;
		}
		if (!ret && m->init)
			ret = m->init(ctrlr);
		if (ret) {
			/* A module whose init failed undid its own part; the ones before it go. */
			LOG_ERR(CTRLR_LOG, "%s: module %s: %s", ctrlr->serial, m->name, strerror(-ret));
			free(ctrlr->mod[i]);
			ctrlr->mod[i] = NULL;
			ctrlr_modules_fini(ctrlr, i);
			return ret;
		}
	}
	return 0;
}

int ctrlr_core_create(const struct ctrlr_config *config, const struct ctrlr_transport_ops *ops,
		      void *tctx, const struct ctrlr_module *const *modules, uint32_t nr_modules,
		      struct ctrlr **out)
{
	struct ctrlr *ctrlr;
	int ret;

	if (!config || !ops || !out || !ops->mem_map || !ops->mem_pin || !ops->mem_unpin ||
	    !ops->raise_irq || !ops->hold_irq || !ops->write_regs || !ops->create_cq ||
	    !ops->create_sq || !ops->delete_sq || !ops->delete_cq || !ops->visit_queues ||
	    !ops->get_channel || !ops->put_bdev || !ops->admin_msg || !ops->admin_post ||
	    !ops->io_post || nr_modules > CTRLR_MODULES_MAX)
		return -EINVAL;
	ret = ctrlr_config_check(config);
	if (ret)
		return ret;
	ctrlr = calloc(1, sizeof(*ctrlr));
	if (!ctrlr)
		return -ENOMEM;
	ctrlr->ops = ops;
	ctrlr->tctx = tctx;
	ctrlr->modules = modules;
	ctrlr->nr_modules = nr_modules;
	ctrlr->cfg = *config;
	if (!ctrlr->cfg.max_queue_entries)
		ctrlr->cfg.max_queue_entries = 1024;
	if (!ctrlr->cfg.mdts)
		ctrlr->cfg.mdts = 5;
	if (!ctrlr->cfg.num_vectors)
		ctrlr->cfg.num_vectors = ctrlr->cfg.max_io_queues + 1;
	snprintf(ctrlr->serial, sizeof(ctrlr->serial), "%s", config->serial);
	snprintf(ctrlr->model, sizeof(ctrlr->model), "%s",
		 config->model ? config->model : "nvme-emu");
	snprintf(ctrlr->fwrev, sizeof(ctrlr->fwrev), "%s",
		 config->firmware_rev ? config->firmware_rev : "1.0");
	if (config->subnqn)
		snprintf(ctrlr->subnqn, sizeof(ctrlr->subnqn), "%s", config->subnqn);
	else
		snprintf(ctrlr->subnqn, sizeof(ctrlr->subnqn), "nqn.2026-11.io.nvme-emu:%s",
			 config->serial);
	/* These pointers are only kept, not interpreted, by the config copy. */
	ctrlr->cfg.serial = ctrlr->serial;
	ctrlr->cfg.model = ctrlr->model;
	ctrlr->cfg.firmware_rev = ctrlr->fwrev;
	ctrlr->cfg.subnqn = ctrlr->subnqn;
	ctrlr->num_queues = ctrlr->cfg.max_io_queues + 1u;
	ctrlr->res_io_queues = ctrlr->cfg.max_io_queues;
	ctrlr->res_vectors = ctrlr->cfg.num_vectors;
	ctrlr->sqs = calloc(ctrlr->num_queues, sizeof(*ctrlr->sqs));
	ctrlr->cqs = calloc(ctrlr->num_queues, sizeof(*ctrlr->cqs));
	ctrlr->feat.irq_cd = calloc(ctrlr->cfg.num_vectors, sizeof(*ctrlr->feat.irq_cd));
	if (!ctrlr->sqs || !ctrlr->cqs || !ctrlr->feat.irq_cd) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = ctrlr_modules_bind(ctrlr);
	if (ret)
		goto out_free;
	ctrlr_regs_init(ctrlr);
	ctrlr->created_us = evloop_now_us();
	ret = ctrlr_modules_init(ctrlr);
	if (ret)
		goto out_free_vendor;
	*out = ctrlr;
	return 0;

out_free_vendor:
	/* A module's init may have registered vendor commands before a later one failed. */
	ctrlr_vendor_free_all(ctrlr);
out_free:
	free(ctrlr->feat.irq_cd);
	free(ctrlr->cqs);
	free(ctrlr->sqs);
	free(ctrlr);
	return ret;
}

static void ctrlr_destroy_finish(void *arg)
{
	struct ctrlr *ctrlr = arg;
	void (*done)(void *arg) = ctrlr->destroy_done;
	void *done_arg = ctrlr->destroy_arg;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		ctrlr_ns_free(ctrlr->ns[i]);
	while (ctrlr->dead_ns) {
		struct ctrlr_ns *ns = ctrlr->dead_ns;

		ctrlr->dead_ns = ns->dead_next;
		ctrlr_ns_free(ns);
	}
	ctrlr_modules_fini(ctrlr, ctrlr->nr_modules);
	ctrlr_vendor_free_all(ctrlr);
	ctrlr_iostat_fini(ctrlr);
	free(ctrlr->feat.irq_cd);
	free(ctrlr->cqs);
	free(ctrlr->sqs);
	free(ctrlr);
	if (done)
		done(done_arg);
}

/* Every bdev is put: free the controller from a message, behind any message the core posted to
 * the admin thread before (they point at it). */
static void ctrlr_destroy_step(struct ctrlr *ctrlr)
{
	ctrlr->ops->admin_post(ctrlr->tctx, &ctrlr->destroy_msg, ctrlr_destroy_finish, ctrlr);
}

int ctrlr_destroy(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	if (!ctrlr) {
		if (done)
			done(arg);
		return 0;
	}
	if (ctrlr->io_sqs || ctrlr->io_cqs || ctrlr->queue_ops_pending ||
	    ctrlr->state == CTRLR_ST_RESETTING || ctrlr_visits_running(ctrlr) ||
	    ctrlr_modules_busy(ctrlr) || (ctrlr->sqs[0] && ctrlr->sqs[0]->inflight))
		return -EBUSY;
	ctrlr_aer_reset(ctrlr);
	if (ctrlr->sqs[0]) {
		ctrlr_sq_fini(ctrlr->sqs[0]);
		ctrlr_cq_fini(ctrlr->cqs[0]);
		free(ctrlr->sqs[0]);
		free(ctrlr->cqs[0]);
		ctrlr->sqs[0] = NULL;
		ctrlr->cqs[0] = NULL;
	}
	ctrlr_dbbuf_release(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, destroy, ctrlr);
	ctrlr_subsys_leave(ctrlr);
	ctrlr->destroying = true;
	ctrlr->destroy_done = done;
	ctrlr->destroy_arg = arg;
	ctrlr->puts_done = ctrlr_destroy_step; /* the last bdev put (ns.c) goes on with it */
	/* One count of our own, so the last namespace's completion cannot finish us early. */
	__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i])
			ctrlr_ns_release(ctrlr->ns[i]);
	/* No queue is left, so nothing is in flight: release what removal left waiting. */
	for (struct ctrlr_ns *ns = ctrlr->dead_ns; ns; ns = ns->dead_next) {
		if (ns->released)
			continue;
		ns->released = true;
		ctrlr_ns_release(ns);
	}
	if (__atomic_sub_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL) == 0)
		ctrlr_destroy_step(ctrlr);
	return 0;
}

void ctrlr_set_multi_ctrl(struct ctrlr *ctrlr, bool multi)
{
	ctrlr->multi_ctrl = multi;
}

void ctrlr_get_hostid_text(const struct ctrlr *ctrlr, char *out)
{
	static const uint8_t zero[16];
	unsigned int n = ctrlr->hostid_ext ? 16 : 8;

	out[0] = 0;
	if (!memcmp(ctrlr->hostid, zero, 16))
		return;
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", ctrlr->hostid[i]);
}

uint64_t ctrlr_tick(struct ctrlr *ctrlr)
{
	uint64_t next = CTRLR_TICK_IDLE_US;

	for (uint32_t i = 0; i < ctrlr->nr_modules; i++) {
		const struct ctrlr_module *m = ctrlr->modules[i];
		uint64_t us;

		if (!m || !m->tick)
			continue;
		us = m->tick(ctrlr);
		if (us && us < next)
			next = us;
	}
	return next;
}

void ctrlr_get_stats(const struct ctrlr *ctrlr, struct ctrlr_stats *s)
{
	struct ctrlr_counters c; /* a copy, summed: plain reads */

	ctrlr_counters_get(ctrlr, &c);
	memset(s, 0, sizeof(*s));
	s->admin_cmds = c.admin_cmds;
	s->io_cmds = c.io_cmds;
	s->errors = c.errors;
	s->data_units_read = (c.bytes_read / 512 + 999) / 1000;
	s->data_units_written = (c.bytes_written / 512 + 999) / 1000;
	s->host_read_cmds = c.host_read_cmds;
	s->host_write_cmds = c.host_write_cmds;
	s->media_errors = c.media_errors;
	s->invalid_db_writes = c.invalid_db_writes;
	s->aer_sent = c.aer_sent;
	s->irqs_raised = c.irqs_raised;
	s->irq_depth_waits = c.irq_depth_waits;
	s->irq_depth_misses = c.irq_depth_misses;
	s->irq_depth_backoffs = c.irq_depth_backoffs;
	s->cq_full_holds = c.cq_full_holds;
	s->resets = c.resets;
	s->shutdowns = c.shutdowns;
	s->flrs = c.flrs;
	s->irq_cqes = c.irq_cqes;
	s->io_sqs = CTRLR_LOAD(ctrlr->io_sqs);
	s->io_cqs = CTRLR_LOAD(ctrlr->io_cqs);
	s->enabled = ctrlr->csts.bits.rdy;
}

int ctrlr_get_sq_ids(const struct ctrlr *ctrlr, uint16_t *qids, int max)
{
	int n = 0;

	for (uint32_t q = 0; q < ctrlr->num_queues && n < max; q++)
		if (ctrlr->sqs[q])
			qids[n++] = (uint16_t)q;
	return n;
}

/* ---- Guest memory going away and coming back (queue_mem.c holds the pins and fences) ---- */

/* Whether a queue's ring [addr, addr + bytes) shares a byte with [iova, iova + len). A ring lies
 * wholly in one DMA window, so this is "the ring's window goes". */
static bool ctrlr_range_overlaps(uint64_t addr, uint64_t bytes, uint64_t iova, uint64_t len)
{
	return bytes && len && addr <= iova + (len - 1) && iova <= addr + (bytes - 1);
}

static bool ctrlr_sq_ring_in(const struct ctrlr_sq *sq, uint64_t iova, uint64_t len)
{
	return ctrlr_range_overlaps(sq->dma_addr, (uint64_t)sq->size * sizeof(struct nvme_sqe),
				    iova, len);
}

static bool ctrlr_cq_ring_in(const struct ctrlr_cq *cq, uint64_t iova, uint64_t len)
{
	return ctrlr_range_overlaps(cq->dma_addr, (uint64_t)cq->size * sizeof(struct nvme_cqe),
				    iova, len);
}

static bool ctrlr_dbbuf_in(const struct ctrlr *ctrlr, uint64_t iova, uint64_t len)
{
	return ctrlr->dbbuf_shadow_pin &&
	       (ctrlr_range_overlaps(ctrlr->dbbuf_shadow, ctrlr->dbbuf_bytes, iova, len) ||
		ctrlr_range_overlaps(ctrlr->dbbuf_eventidx, ctrlr->dbbuf_bytes, iova, len));
}

/* Owner thread: the CQ's ring or its shadow slots may be in the range going away. */
static void ctrlr_unmap_cq(struct ctrlr_cq *cq, struct ctrlr_visit *v)
{
	struct ctrlr *ctrlr = cq->ctrlr;

	if (ctrlr->unmap.dbbuf) {
		cq->shadow_head = NULL;
		cq->head_eventidx = NULL;
	}
	if (cq->ring && ctrlr_cq_ring_in(cq, ctrlr->unmap.iova, ctrlr->unmap.len)) {
		if (ctrlr->unmap.master_off)
			LOG_INFO(CTRLR_LOG, "CQ %u: bus mastering off; detached until it is on", cq->qid);
		else
			LOG_GUEST_ERR(CTRLR_LOG, "CQ %u: its ring was unmapped; detached until it is back",
				      cq->qid);
		ctrlr_cq_ring_detach(cq);
	}
}

static void ctrlr_unmap_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	struct ctrlr *ctrlr = sq->ctrlr;

	if (ctrlr->unmap.dbbuf) {
		CTRLR_STORE(sq->shadow_db, NULL);
		sq->eventidx = NULL;
	}
	if (sq->ring && ctrlr_sq_ring_in(sq, ctrlr->unmap.iova, ctrlr->unmap.len)) {
		if (ctrlr->unmap.master_off)
			LOG_INFO(CTRLR_LOG, "SQ %u: bus mastering off; detached until it is on", sq->qid);
		else
			LOG_GUEST_ERR(CTRLR_LOG, "SQ %u: its ring was unmapped; detached until it is back",
				      sq->qid);
		ctrlr_sq_ring_detach(sq);
	}
	ctrlr_sq_fence(sq, v);
}

static void ctrlr_mem_unmap_finish(struct ctrlr *ctrlr)
{
	void (*done)(void *arg) = ctrlr->unmap.done;

	ctrlr->unmap.active = false;
	ctrlr->unmap.done = NULL;
	done(ctrlr->unmap.arg);
}

/* Admin thread, every owner thread done: the controller-wide part. */
static void ctrlr_mem_unmap_owners_done(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	struct ctrlr_cq *acq = ctrlr->cqs[0];
	uint64_t iova = ctrlr->unmap.iova, len = ctrlr->unmap.len;
	struct ctrlr_visit *v = &ctrlr->admin_fence;

	/* No queue holds a shadow slot any more: the pages can go. */
	if (ctrlr->unmap.dbbuf)
		ctrlr_dbbuf_release(ctrlr);
	if (acq && acq->ring && ctrlr_cq_ring_in(acq, iova, len)) {
		if (!ctrlr->unmap.master_off)
			LOG_GUEST_ERR(CTRLR_LOG, "admin CQ ring unmapped; detached until it is back");
		ctrlr_cq_ring_detach(acq);
	}
	if (asq && asq->ring && ctrlr_sq_ring_in(asq, iova, len)) {
		if (!ctrlr->unmap.master_off)
			LOG_GUEST_ERR(CTRLR_LOG, "admin SQ ring unmapped; detached until it is back");
		ctrlr_sq_ring_detach(asq);
	}
	/* Admin commands in flight (Format NVM on a bdev, vendor reads) finish with their data too:
	 * a one-queue visit, run here. */
	*v = (struct ctrlr_visit){.ctrlr = ctrlr, .pending = 1, .done = ctrlr_mem_unmap_finish};
	if (asq)
		ctrlr_sq_fence(asq, v);
	ctrlr_visit_release(v);
}

static void ctrlr_mem_unmap_start(struct ctrlr *ctrlr, uint64_t iova, uint64_t len,
				  bool master_off, void (*done)(void *arg), void *arg)
{
	if (ctrlr->unmap.active) {
		/* The endpoint serialises a client's unmaps: a second one is a bug above us, and
		 * finishing it early could unmap memory in use. Refuse loudly; it never ends. */
		LOG_ERR(CTRLR_LOG, "unmap of 0x%llx+0x%llx while another one runs: ignored",
			(unsigned long long)iova, (unsigned long long)len);
		return;
	}
	ctrlr->unmap.active = true;
	ctrlr->unmap.master_off = master_off;
	ctrlr->unmap.iova = iova;
	ctrlr->unmap.len = len;
	ctrlr->unmap.done = done;
	ctrlr->unmap.arg = arg;
	/* Queues going live from now on take no shadow slot from pages about to go. */
	ctrlr->unmap.dbbuf = ctrlr_dbbuf_in(ctrlr, iova, len);
	if (ctrlr->unmap.dbbuf)
		ctrlr->dbbuf_live = false;
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_UNMAP, ctrlr_unmap_cq, ctrlr_unmap_sq,
			  ctrlr_mem_unmap_owners_done);
}

void ctrlr_mem_unmap(struct ctrlr *ctrlr, uint64_t iova, uint64_t len, void (*done)(void *arg),
		     void *arg)
{
	ctrlr_mem_unmap_start(ctrlr, iova, len, false, done, arg);
}

void ctrlr_dma_stop(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	ctrlr_mem_unmap_start(ctrlr, 0, UINT64_MAX, true, done, arg);
}

/* ---- Re-attach after a remap ---- */

static void ctrlr_remap_cq(struct ctrlr_cq *cq, struct ctrlr_visit *v)
{
	if (cq->ring || CTRLR_LOAD(cq->state) != CTRLR_Q_LIVE || ctrlr_cq_ring_attach(cq))
		return;
	LOG_INFO(CTRLR_LOG, "CQ %u: ring mapped again, attached", cq->qid);
	ctrlr_cq_batch_begin(cq);
	ctrlr_cq_drain_held(cq);
	ctrlr_cq_batch_end(cq);
}

static void ctrlr_remap_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	if (sq->ring || CTRLR_LOAD(sq->state) != CTRLR_Q_LIVE || ctrlr_sq_ring_attach(sq))
		return;
	LOG_INFO(CTRLR_LOG, "SQ %u: ring mapped again, attached", sq->qid);
}

static void ctrlr_remap_done(struct ctrlr *ctrlr)
{
	if (ctrlr->remap_again) {
		ctrlr->remap_again = false;
		ctrlr_mem_mapped(ctrlr);
	}
}

void ctrlr_mem_mapped(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	struct ctrlr_cq *acq = ctrlr->cqs[0];

	if (acq && !acq->ring && !ctrlr_cq_ring_attach(acq))
		ctrlr_cq_drain_held(acq);
	if (asq && !asq->ring && !ctrlr_sq_ring_attach(asq))
		while (ctrlr_sq_poll(asq, 64) > 0)
			;
	if (ctrlr_visit_running(ctrlr, CTRLR_VISIT_REMAP)) {
		ctrlr->remap_again = true;
		return;
	}
	/* The owner threads poll their SQs again after the visit (the transport's kick). */
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_REMAP, ctrlr_remap_cq, ctrlr_remap_sq,
			  ctrlr_remap_done);
}
