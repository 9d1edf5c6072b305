/* controller/pcie_ctrlr.c - one NVMe controller as an emulated PCIe function:
 * the hw/ device events (register writes, FLR, client gone) drive the core;
 * the core's transport ops reach guest memory, registers, interrupts and the
 * queue flows of pcie_queue.c. Main thread unless noted. */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "controller/nvme_spec.h"
#include "controller/pcie_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int pcie_create_cq(void *tctx, struct ctrlr_cq *cq);
int pcie_create_sq(void *tctx, struct ctrlr_sq *sq);
int pcie_delete_sq(void *tctx, struct ctrlr_sq *sq);
int pcie_delete_cq(void *tctx, struct ctrlr_cq *cq);
void pcie_raise_irq(void *tctx, uint16_t vector);

/* mmap doorbells: nothing tells us about admin doorbell stores, so the main
 * thread looks at them on a timer: often right after admin activity, rarely
 * when idle (admin commands are rare after boot). */
#define PCIE_ADMIN_POLL_FAST_US 200
#define PCIE_ADMIN_POLL_SLOW_US 20000
#define PCIE_ADMIN_FAST_WINDOW_US 1000000
/* Bound of the synchronous reset when the client disappears. */
#define PCIE_CLIENT_GONE_DRAIN_US 5000000
/* Bound of the wait for in-flight I/O when the client unmaps memory. */
#define PCIE_UNMAP_DRAIN_US 1000000

/* ---- Transport ops ---- */

static void *pcie_mem_map(void *tctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	struct pcie_ctrlr *pc = tctx;
	struct hw_mmap *map = atomic_load_explicit(&pc->map, memory_order_acquire);

	return map ? hw_mmap_translate(map, addr, len, dir) : NULL;
}

static void pcie_write_regs(void *tctx, uint32_t offset, const void *buf, size_t len)
{
	struct pcie_ctrlr *pc = tctx;
	int rc = hw_dev_stateful_modify(pc->dev, 0, PCIE_REGS_START + offset, buf, len);

	if (rc)
		LOG_ERR(PCIE_LOG, "%s: register write-back at 0x%x failed: %d", pc->vuid, offset, rc);
}

static struct bdev_channel *pcie_get_channel(void *tctx, struct ctrlr_sq *sq, struct bdev *bdev)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_poll_group *pg = pcie_current_pg;

	return pcie_thread_get_channel(pg ? &pg->t : &pc->main_t, bdev);
}

struct pcie_put_bdev {
	struct pcie_poll_group *pg;
	struct bdev *bdev;
};

static void pcie_put_bdev_msg(void *arg)
{
	struct pcie_put_bdev *p = arg;

	pcie_thread_put_bdev(&p->pg->t, p->bdev);
}

static void pcie_put_bdev(void *tctx, struct bdev *bdev)
{
	struct pcie_ctrlr *pc = tctx;

	/* Synchronous: the core closes the bdev right after, and a bdev must
	 * have no channel left when it is closed. */
	for (unsigned int i = 0; i < pc->pgs->n; i++) {
		struct pcie_put_bdev p = { .pg = &pc->pgs->pg[i], .bdev = bdev };

		pcie_pg_call_sync(p.pg, pcie_put_bdev_msg, &p);
	}
	pcie_thread_put_bdev(&pc->main_t, bdev);
}

static int pcie_admin_msg(void *tctx, void (*fn)(void *arg), void *arg)
{
	struct pcie_ctrlr *pc = tctx;

	return evloop_send_msg(pc->loop, fn, arg);
}

const struct ctrlr_transport_ops pcie_transport_ops = {
	.mem_map = pcie_mem_map,
	.raise_irq = pcie_raise_irq,
	.write_regs = pcie_write_regs,
	.create_cq = pcie_create_cq,
	.create_sq = pcie_create_sq,
	.delete_sq = pcie_delete_sq,
	.delete_cq = pcie_delete_cq,
	.get_channel = pcie_get_channel,
	.put_bdev = pcie_put_bdev,
	.admin_msg = pcie_admin_msg,
};

/* ---- Admin doorbells (main thread) ---- */

static void pcie_admin_db_notify(struct hw_db *db, uint32_t value, void *arg)
{
	struct pcie_ctrlr *pc = arg;
	uint32_t id = hw_db_id(db);

	pc->admin_db_seen[id & 1] = value;
	pc->admin_last_activity_us = evloop_now_us();
	ctrlr_doorbell_write(pc->ctrlr, id, value);
}

static void pcie_admin_poll(void *arg)
{
	struct pcie_ctrlr *pc = arg;
	uint64_t now = evloop_now_us();

	pc->admin_timer = NULL;
	for (unsigned int i = 0; i < 2; i++) {
		uint32_t v;

		if (!pc->admin_db[i])
			return;
		v = *hw_db_value_ptr(pc->admin_db[i]);
		if (v != pc->admin_db_seen[i]) {
			pc->admin_db_seen[i] = v;
			pc->admin_last_activity_us = now;
			ctrlr_doorbell_write(pc->ctrlr, i, v);
		}
	}
	pc->admin_timer = evloop_timer_add(pc->loop,
					   now - pc->admin_last_activity_us < PCIE_ADMIN_FAST_WINDOW_US
						   ? PCIE_ADMIN_POLL_FAST_US
						   : PCIE_ADMIN_POLL_SLOW_US,
					   pcie_admin_poll, pc);
}

/* Enabling starts the admin queue from head/tail 0: values left in the
 * doorbell page by the previous enable must not look like new writes. */
static void pcie_admin_db_reset(struct pcie_ctrlr *pc)
{
	for (unsigned int i = 0; i < 2; i++) {
		if (!pc->admin_db[i])
			continue;
		hw_db_stop(pc->admin_db[i]);
		hw_db_modify_value(pc->admin_db[i], 0);
		hw_db_start(pc->admin_db[i]);
		pc->admin_db_seen[i] = 0;
	}
}

/* Creates what the controller needs once a client is attached: the view of
 * its memory and the admin doorbells. Idempotent; called on register writes,
 * which always come before the first doorbell. */
static int pcie_ensure_resources(struct pcie_ctrlr *pc)
{
	if (!atomic_load(&pc->map)) {
		struct hw_mmap *map = hw_mmap_create(pc->dev, 0, UINT64_MAX,
						     HW_MMAP_READ | HW_MMAP_WRITE);

		if (!map)
			return -errno;
		atomic_store_explicit(&pc->map, map, memory_order_release);
	}
	for (uint32_t i = 0; i < 2; i++) {
		if (pc->admin_db[i])
			continue;
		pc->admin_db[i] = hw_db_create(pc->dev, i, pcie_admin_db_notify, pc);
		if (!pc->admin_db[i])
			return -errno;
		pc->admin_db_seen[i] = 0;
		hw_db_start(pc->admin_db[i]);
	}
	if (hw_dev_db_mode(pc->dev) == HW_DB_MODE_MMAP && !pc->admin_timer) {
		pc->admin_last_activity_us = evloop_now_us();
		pc->admin_timer = evloop_timer_add(pc->loop, PCIE_ADMIN_POLL_FAST_US,
						   pcie_admin_poll, pc);
	}
	return 0;
}

/* Releases everything tied to the current client or reset epoch. Queues are
 * gone already (the core deleted them), so nothing uses these any more. */
static void pcie_release_resources(struct pcie_ctrlr *pc)
{
	struct hw_mmap *map = atomic_exchange(&pc->map, NULL);

	if (pc->admin_timer) {
		evloop_timer_cancel(pc->admin_timer);
		pc->admin_timer = NULL;
	}
	for (unsigned int i = 0; i < 2; i++) {
		if (pc->admin_db[i])
			hw_db_destroy(pc->admin_db[i]);
		pc->admin_db[i] = NULL;
	}
	for (unsigned int v = 0; v < pc->num_msix; v++) {
		if (pc->vectors[v])
			hw_msix_vector_destroy(pc->vectors[v]);
		pc->vectors[v] = NULL;
	}
	hw_mmap_destroy(map);
	pc->cc_en = false;
}

/* ---- hw/ device events ---- */

static void pcie_stateful_write(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
				void *arg)
{
	struct pcie_ctrlr *pc = arg;
	uint8_t regs[NVME_REG_END];
	uint32_t cc;
	int rc;

	rc = hw_dev_stateful_query(dev, 0, PCIE_REGS_START, regs, sizeof(regs));
	if (rc) {
		LOG_ERR(PCIE_LOG, "%s: register query failed: %d", pc->vuid, rc);
		return;
	}
	rc = pcie_ensure_resources(pc);
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: cannot set up guest memory/doorbells: %d", pc->vuid, rc);
	memcpy(&cc, regs + NVME_REG_CC, sizeof(cc));
	if ((cc & 1) && !pc->cc_en)
		pcie_admin_db_reset(pc);
	pc->cc_en = cc & 1;
	ctrlr_regs_written(pc->ctrlr, regs);
}

static void pcie_flr_done(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	pcie_release_resources(pc);
	pc->flr_finished = true;
	if (!pc->flr_sync)
		hw_dev_event_done(pc->dev);
}

static int pcie_flr(struct hw_dev *dev, bool client_gone, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	LOG_INFO(PCIE_LOG, "%s: %s", pc->vuid, client_gone ? "client gone: resetting"
							   : "function level reset");
	pc->flr_sync = true;
	pc->flr_finished = false;
	ctrlr_flr(pc->ctrlr, pcie_flr_done, pc);
	/* A client that went away takes its memory with it as soon as this
	 * returns (the endpoint unmaps its windows and may accept the next
	 * client), so its reset finishes here: the queue deletions only need
	 * the poll groups and the DPA, whose replies arrive as messages. */
	if (client_gone) {
		uint64_t deadline = evloop_now_us() + PCIE_CLIENT_GONE_DRAIN_US;

		while (!pc->flr_finished && evloop_now_us() < deadline)
			evloop_run_msgs(pc->loop, 100);
		if (!pc->flr_finished)
			LOG_ERR(PCIE_LOG, "%s: reset after client loss did not finish in %d ms",
				pc->vuid, PCIE_CLIENT_GONE_DRAIN_US / 1000);
	}
	pc->flr_sync = false;
	return pc->flr_finished ? 0 : HW_EVENT_ASYNC;
}

static void pcie_hotplug_state_changed(struct hw_dev *dev, enum hw_hotplug_state state,
				       void *arg)
{
	struct pcie_ctrlr *pc = arg;

	LOG_INFO(PCIE_LOG, "%s: %s (doorbells: %s)", pc->vuid, hw_hotplug_state_name(state),
		 hw_db_mode_name(hw_dev_db_mode(dev)));
}

struct pcie_quiesce {
	struct pcie_poll_group *pg;
	uint32_t left;
};

static void pcie_quiesce_msg(void *arg)
{
	struct pcie_quiesce *q = arg;

	q->left = pcie_pg_drain_io(q->pg, PCIE_UNMAP_DRAIN_US);
}

static void pcie_kick_msg(void *arg)
{
	pcie_pg_kick(arg);
}

/* Runs after the endpoint removed the window: fetching may go on. */
static void pcie_unmap_resume(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	atomic_store_explicit(&pc->paused, false, memory_order_release);
	for (unsigned int i = 0; i < pc->pgs->n; i++)
		pcie_pg_send(&pc->pgs->pg[i], pcie_kick_msg, &pc->pgs->pg[i]);
}

/* The client unmaps guest memory: nothing may touch it once we return.
 * Commands and rings are translated at each access, so what remains is
 * data of requests in flight: stop fetching, let the backends finish
 * (bounded), and resume once the window is gone. */
static int pcie_dma_unmap(struct hw_dev *dev, uint64_t iova, uint64_t len, void *arg)
{
	struct pcie_ctrlr *pc = arg;
	struct ctrlr_stats st;

	ctrlr_get_stats(pc->ctrlr, &st);
	if (!st.io_sqs)
		return 0;
	atomic_store_explicit(&pc->paused, true, memory_order_release);
	for (unsigned int i = 0; i < pc->pgs->n; i++) {
		struct pcie_quiesce q = { .pg = &pc->pgs->pg[i] };

		pcie_pg_call_sync(q.pg, pcie_quiesce_msg, &q);
		if (q.left)
			LOG_WARN(PCIE_LOG, "%s: unmap of 0x%" PRIx64 "+0x%" PRIx64
				 " with %u I/O still in flight on poll group %u", pc->vuid, iova,
				 len, q.left, i);
	}
	if (evloop_defer(pc->loop, pcie_unmap_resume, pc))
		pcie_unmap_resume(pc);
	return 0;
}

/* A doorbell of a queue that does not exist (or no longer does): the core
 * answers with an Invalid Doorbell Register event. Trap mode only: stores
 * into an mmap'd page reach nobody. */
static void pcie_db_unowned_write(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start,
				  uint32_t slot, uint32_t value, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	if (bar_id == 0 && region_start == PCIE_DB_START)
		ctrlr_doorbell_write(pc->ctrlr, slot, value);
}

static const struct hw_dev_ops pcie_dev_ops = {
	.hotplug_state_changed = pcie_hotplug_state_changed,
	.stateful_write = pcie_stateful_write,
	.flr = pcie_flr,
	.dma_unmap = pcie_dma_unmap,
	.db_unowned_write = pcie_db_unowned_write,
};

/* ---- Lifecycle ---- */

int pcie_ctrlr_create(struct evloop *loop, struct pcie_poll_groups *pgs, struct dpa *dpa,
		      const struct pcie_ctrlr_opts *opts, struct pcie_ctrlr **out)
{
	struct hw_dev_config dcfg = {
		.vuid = opts->vuid,
		.socket_path = opts->socket_path,
		.db_mode = opts->db_mode,
	};
	struct ctrlr_config ccfg = opts->ctrlr;
	uint8_t regs[NVME_REG_END];
	struct pcie_ctrlr *pc;
	char err[256];
	int rc = -ENOMEM;

	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->loop = loop;
	pc->pgs = pgs;
	pc->dpa = dpa;
	pc->main_t.loop = loop;
	pc->vuid = strdup(opts->vuid);
	pc->socket_path = strdup(opts->socket_path);
	if (!pc->vuid || !pc->socket_path)
		goto out_free;

	if (!ccfg.max_io_queues)
		ccfg.max_io_queues = pcie_nvme_max_vectors(opts->profile) - 1;
	if (ccfg.max_io_queues + 1u > pcie_nvme_max_vectors(opts->profile)) {
		LOG_ERR(PCIE_LOG, "%s: %u I/O queues need %u MSI-X vectors; profile %s allows %u",
			opts->vuid, ccfg.max_io_queues, ccfg.max_io_queues + 1u, opts->profile->name,
			pcie_nvme_max_vectors(opts->profile));
		rc = -EINVAL;
		goto out_free;
	}
	pc->num_msix = ccfg.max_io_queues + 1;
	ccfg.num_vectors = pc->num_msix;
	pc->vectors = calloc(pc->num_msix, sizeof(*pc->vectors));
	if (!pc->vectors)
		goto out_free;

	pc->type = pcie_nvme_type_create(opts->profile, pc->num_msix, err, sizeof(err));
	if (!pc->type) {
		LOG_ERR(PCIE_LOG, "%s: NVMe type does not fit profile %s: %s", opts->vuid,
			opts->profile->name, err);
		rc = -EINVAL;
		goto out_free;
	}
	rc = ctrlr_create(&ccfg, &pcie_transport_ops, pc, &pc->ctrlr);
	if (rc)
		goto out_type;
	pc->dev = hw_dev_create(pc->type, loop, &dcfg, &pcie_dev_ops, pc);
	if (!pc->dev) {
		rc = -errno;
		goto out_ctrlr;
	}
	/* The register file's power-on image: read by the guest before any
	 * write, and restored by every FLR. */
	ctrlr_regs_read(pc->ctrlr, 0, regs, sizeof(regs));
	rc = hw_dev_set_stateful_default(pc->dev, 0, PCIE_REGS_START, regs, sizeof(regs));
	if (rc)
		goto out_dev;
	*out = pc;
	return 0;

out_dev:
	hw_dev_destroy(pc->dev);
out_ctrlr:
	ctrlr_destroy(pc->ctrlr);
out_type:
	hw_pci_type_destroy(pc->type);
out_free:
	free(pc->vectors);
	free(pc->vuid);
	free(pc->socket_path);
	free(pc);
	return rc;
}

struct ctrlr *pcie_ctrlr_core(struct pcie_ctrlr *pc)
{
	return pc->ctrlr;
}

struct hw_dev *pcie_ctrlr_dev(struct pcie_ctrlr *pc)
{
	return pc->dev;
}

int pcie_ctrlr_start(struct pcie_ctrlr *pc)
{
	int rc = hw_dev_hotplug(pc->dev);

	if (rc)
		LOG_ERR(PCIE_LOG, "%s: hotplug on %s failed: %d", pc->vuid, pc->socket_path, rc);
	else
		LOG_INFO(PCIE_LOG, "%s: listening on %s", pc->vuid, pc->socket_path);
	return rc;
}

int pcie_ctrlr_stop(struct pcie_ctrlr *pc)
{
	return hw_dev_hotunplug(pc->dev);
}

void pcie_ctrlr_destroy(struct pcie_ctrlr *pc)
{
	if (!pc)
		return;
	/* Unplugging runs the client-gone reset: queues deleted, resources freed. */
	if (hw_dev_get_hotplug_state(pc->dev) != HW_HOTPLUG_POWER_OFF)
		hw_dev_hotunplug(pc->dev);
	/* Queue deletions hop through the poll groups: let them finish. */
	for (int i = 0; i < 1000 && ctrlr_destroy(pc->ctrlr) == -EBUSY; i++)
		evloop_run_once(pc->loop, 10);
	pcie_release_resources(pc);
	pcie_thread_put_all(&pc->main_t);
	hw_dev_destroy(pc->dev);
	hw_pci_type_destroy(pc->type);
	free(pc->vectors);
	free(pc->vuid);
	free(pc->socket_path);
	free(pc);
}
