/* controller/core/ctrlr.c - the controller object: create/destroy with its modules, the reset /
 * shutdown / FLR teardown flow, admin doorbells, the clock, statistics. Admin thread. */
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
	    !ops->raise_irq || !ops->write_regs || !ops->create_cq || !ops->create_sq ||
	    !ops->delete_sq || !ops->delete_cq || !ops->visit_queues || !ops->get_channel ||
	    !ops->put_bdev || !ops->admin_msg || !ops->admin_post || !ops->io_post ||
	    nr_modules > CTRLR_MODULES_MAX)
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

static void ctrlr_destroy_step(struct ctrlr *ctrlr);

/* The transport dropped its channels on the namespace's bdev: it can be closed. Admin thread. */
static void ctrlr_ns_put_done(void *arg)
{
	struct ctrlr_ns *ns = arg;
	struct ctrlr *ctrlr = ns->ctrlr;

	ctrlr_ns_shared_detach(ns); /* the claim goes with the namespace's last controller */
	bdev_close(ns->bdev);
	if (ns->released_fn)
		ns->released_fn(ns->released_arg);
	if (__atomic_sub_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL) == 0 && ctrlr->destroying)
		ctrlr_destroy_step(ctrlr);
}

void ctrlr_ns_release(struct ctrlr_ns *ns)
{
	struct ctrlr *ctrlr = ns->ctrlr;

	__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
	if (ctrlr->ops->put_bdev(ctrlr->tctx, ns->bdev, ctrlr_ns_put_done, ns)) {
		/* Without memory to reach the owner threads the channels stay: keep the bdev
		 * open rather than close it under them (it cannot be deleted then; said here). */
		LOG_ERR(CTRLR_LOG, "ns %u: out of memory releasing bdev %s: it stays open",
			ns->nsid, bdev_get_name(ns->bdev));
		if (ns->released_fn)
			ns->released_fn(ns->released_arg);
		if (__atomic_sub_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL) == 0 &&
		    ctrlr->destroying)
			ctrlr_destroy_step(ctrlr);
	}
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

static bool ctrlr_visits_running(const struct ctrlr *ctrlr)
{
	for (unsigned int i = 0; i < CTRLR_VISIT_SLOTS; i++)
		if (ctrlr_visit_running(ctrlr, (enum ctrlr_visit_slot)i))
			return true;
	return ctrlr->unmap.active;
}

/* A module's own I/O in flight (self-test, sanitize) holds a reset or destroy back. */
static bool ctrlr_modules_busy(const struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < ctrlr->nr_modules; i++)
		if (ctrlr->modules[i] && ctrlr->modules[i]->busy && ctrlr->modules[i]->busy(ctrlr))
			return true;
	return false;
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

/* ---- reset / shutdown / FLR ---- */

static void ctrlr_admin_sq_drained(void *arg)
{
	ctrlr_reset_continue(arg);
}

static void ctrlr_reset_finish(struct ctrlr *ctrlr)
{
	bool shutdown = ctrlr->reset_shutdown;

	if (ctrlr->sqs[0]) {
		ctrlr_sq_fini(ctrlr->sqs[0]);
		ctrlr_cq_fini(ctrlr->cqs[0]);
		free(ctrlr->sqs[0]);
		free(ctrlr->cqs[0]);
		ctrlr->sqs[0] = NULL;
		ctrlr->cqs[0] = NULL;
	}
	/* Shadow doorbells are dropped on every reset (Linux configures them again). */
	ctrlr->dbbuf_live = false;
	ctrlr_dbbuf_release(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, reset_done, ctrlr);
	CTRLR_STORE(ctrlr->state, CTRLR_ST_DISABLED);
	ctrlr->csts.raw = 0;
	if (shutdown)
		ctrlr->csts.bits.shst = NVME_SHST_COMPLETE;
	ctrlr->reset_shutdown = false;
	if (ctrlr->reset_flr) {
		uint8_t img[NVME_REG_END];
		void (*done)(void *arg) = ctrlr->flr_done;

		ctrlr->reset_flr = false;
		ctrlr->flr_done = NULL;
		ctrlr_regs_init(ctrlr);
		ctrlr_regs_read(ctrlr, 0, img, sizeof(img));
		ctrlr->ops->write_regs(ctrlr->tctx, 0, img, sizeof(img));
		if (done)
			done(ctrlr->flr_arg);
		return;
	}
	ctrlr_regs_write_csts(ctrlr);
	LOG_DBG(CTRLR_LOG, "%s done", shutdown ? "shutdown" : "reset");
	/* The guest re-enabled while the teardown ran. */
	if (ctrlr->cc.bits.en && !shutdown)
		ctrlr_enable(ctrlr);
}

void ctrlr_reset_continue(struct ctrlr *ctrlr)
{
	struct ctrlr_sq *asq = ctrlr->sqs[0];
	bool waiting = false;

	if (ctrlr->state != CTRLR_ST_RESETTING || ctrlr->queue_ops_pending)
		return;
	/* A visit of the queues (unmap, remap, shadow doorbells) ends first: it holds pointers
	 * the teardown frees. Its end calls us again. */
	if (ctrlr_visits_running(ctrlr))
		return;
	/* A module's own bdev request (self-test, sanitize) returns first; its completion calls
	 * us again. */
	if (ctrlr_modules_busy(ctrlr))
		return;
	/* Admin completions held for room in a full admin CQ are discarded with the queue: only
	 * the host could make room, and a host that reset (or is gone) never will. */
	if (asq && ctrlr->cqs[0]) {
		/* Not from inside the drop: the check below sets it again if still needed. */
		asq->stop_done = NULL;
		ctrlr_cq_drop_held(ctrlr->cqs[0], asq);
	}
	/* Admin commands still running (e.g. Format NVM on a bdev) finish first. */
	if (asq && asq->inflight) {
		asq->stop_done = ctrlr_admin_sq_drained;
		asq->stop_arg = ctrlr;
		return;
	}
	for (uint32_t qid = 1; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_sq *sq = ctrlr->sqs[qid];

		if (!sq)
			continue;
		waiting = true;
		if (sq->state == CTRLR_Q_DELETING)
			continue;
		CTRLR_STORE(sq->state, CTRLR_Q_DELETING);
		ctrlr->queue_ops_pending++;
		if (ctrlr->ops->delete_sq(ctrlr->tctx, sq)) {
			LOG_ERR(CTRLR_LOG, "transport refused to delete SQ %u during reset", qid);
			ctrlr->queue_ops_pending--;
		}
	}
	if (waiting)
		return;
	for (uint32_t qid = 1; qid < ctrlr->num_queues; qid++) {
		struct ctrlr_cq *cq = ctrlr->cqs[qid];

		if (!cq)
			continue;
		waiting = true;
		if (cq->state == CTRLR_Q_DELETING)
			continue;
		cq->state = CTRLR_Q_DELETING;
		ctrlr->queue_ops_pending++;
		if (ctrlr->ops->delete_cq(ctrlr->tctx, cq)) {
			LOG_ERR(CTRLR_LOG, "transport refused to delete CQ %u during reset", qid);
			ctrlr->queue_ops_pending--;
		}
	}
	if (!waiting)
		ctrlr_reset_finish(ctrlr);
}

void ctrlr_reset_start(struct ctrlr *ctrlr, bool shutdown)
{
	if (shutdown) {
		ctrlr->reset_shutdown = true;
		CTRLR_STAT_ADD(ctrlr->cnt.shutdowns, 1);
	} else {
		CTRLR_STAT_ADD(ctrlr->cnt.resets, 1);
	}
	if (ctrlr->state == CTRLR_ST_RESETTING)
		return;
	CTRLR_STORE(ctrlr->state, CTRLR_ST_RESETTING);
	ctrlr_aer_reset(ctrlr);
	CTRLR_MODULES_CALL(ctrlr, reset, ctrlr);
	if (shutdown) {
		ctrlr->csts.bits.shst = NVME_SHST_OCCURRING;
		ctrlr_regs_write_csts(ctrlr);
	}
	ctrlr_reset_continue(ctrlr);
}

void ctrlr_flr(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	ctrlr->reset_flr = true;
	ctrlr->flr_done = done;
	ctrlr->flr_arg = arg;
	ctrlr->cc.raw = 0;
	ctrlr_reset_start(ctrlr, false);
}

/* ---- admin doorbells and invalid doorbells ---- */

void ctrlr_doorbell_write(struct ctrlr *ctrlr, uint32_t db_index, uint32_t value)
{
	uint32_t qid = nvme_db_qid(db_index);
	bool is_cq = nvme_db_is_cq(db_index);

	if (qid == 0 && ctrlr->state == CTRLR_ST_ENABLED && ctrlr->sqs[0]) {
		if (is_cq) {
			ctrlr_cq_head_doorbell(ctrlr->cqs[0], value);
		} else if (!ctrlr_sq_tail_doorbell(ctrlr->sqs[0], value)) {
			/* The admin queue is served at once, on this thread. */
			while (ctrlr_sq_poll(ctrlr->sqs[0], 64) > 0)
				;
		}
		return;
	}
	if (qid == 0)
		return; /* the controller is not ready: writes are ignored (3.1.4.18) */
	CTRLR_STAT_ADD(ctrlr->cnt.invalid_db_writes, 1);
	LOG_GUEST_ERR(CTRLR_LOG, "doorbell %u (%s %u) written for a queue that does not exist",
		      db_index, is_cq ? "CQ" : "SQ", qid);
	if (ctrlr->state == CTRLR_ST_ENABLED)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_ERROR, NVME_AER_ERR_INVALID_DB_REG,
				 NVME_LOG_ERROR);
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
