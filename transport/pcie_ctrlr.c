/* transport/pcie_ctrlr.c - one NVMe controller as an emulated PCIe function:
 * the hw/ device events (register writes, FLR, client gone) drive the core;
 * the core's transport ops reach guest memory, registers, interrupts and the
 * queue flows of pcie_queue.c. Main thread unless noted. */
#include "backend/bdev.h"
#include "common/evloop.h"
#include "common/log.h"
#include "controller/nvme_spec.h"
#include "transport/pcie_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int pcie_create_cq(void *tctx, struct ctrlr_cq *cq);
int pcie_create_sq(void *tctx, struct ctrlr_sq *sq);
int pcie_delete_sq(void *tctx, struct ctrlr_sq *sq);
int pcie_delete_cq(void *tctx, struct ctrlr_cq *cq);
void pcie_raise_irq(void *tctx, struct ctrlr_cq *cq);
int pcie_hold_irq(void *tctx, struct ctrlr_cq *cq, uint64_t until_us);

static void pcie_clock_tick(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	pc->tick_timer = evloop_timer_add(pc->loop, ctrlr_tick(pc->ctrlr),
					    pcie_clock_tick, pc);
	if (!pc->tick_timer)
		LOG_ERR(PCIE_LOG, "%s: cannot re-arm the controller clock", pc->vuid);
}

/* The Keep Alive Timer: armed for what is left until the next Keep Alive is due. A Keep Alive
 * that came meanwhile leaves time, and the timer goes again for it; nothing is due after a
 * reset or an expiry. */
static void pcie_keep_alive_tick(void *arg)
{
	struct pcie_ctrlr *pc = arg;
	uint64_t left = ctrlr_keep_alive_check(pc->ctrlr);

	pc->ka_timer = NULL;
	if (!left)
		return;
	pc->ka_timer = evloop_timer_add(pc->loop, left, pcie_keep_alive_tick, pc);
	if (!pc->ka_timer)
		LOG_ERR(PCIE_LOG, "%s: cannot arm the keep alive timer: it will not expire",
			pc->vuid);
}

static void pcie_keep_alive_changed(void *tctx)
{
	struct pcie_ctrlr *pc = tctx;

	if (pc->ka_timer) {
		evloop_timer_cancel(pc->ka_timer);
		pc->ka_timer = NULL;
	}
	pcie_keep_alive_tick(pc);
}

/* mmap doorbells: nothing tells us about admin doorbell stores, so the main
 * thread looks at them on a timer: often right after admin activity, rarely
 * when idle (admin commands are rare after boot). */
#define PCIE_ADMIN_POLL_FAST_US 200
#define PCIE_ADMIN_POLL_SLOW_US 20000
#define PCIE_ADMIN_FAST_WINDOW_US 1000000

/* ---- Transport ops ---- */

/* Any thread: command data. The translation takes no lock (hw/vfu snapshots);
 * the map object lives while a client is attached, and every thread that uses
 * it is visited (quiesced) before the FLR that frees it ends. */
/* Addresses in the CMB or PMR window are the function's own memory: no DMA window, no pin. */
static void *pcie_devmem_lookup(struct pcie_ctrlr *pc, uint64_t addr, uint64_t len, bool *hit)
{
	void *p = pcie_cmb_map(pc, addr, len, hit);

	if (*hit)
		return p;
	return pcie_pmr_map(pc, addr, len, hit);
}

static void *pcie_mem_map(void *tctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	struct pcie_ctrlr *pc = tctx;
	struct hw_mmap *map = __atomic_load_n(&pc->map, __ATOMIC_ACQUIRE);
	bool hit = false;
	void *p;

	if (__atomic_load_n(&pc->dma_off, __ATOMIC_ACQUIRE))
		return NULL;
	p = pcie_devmem_lookup(pc, addr, len, &hit);
	if (hit)
		return p;
	return map ? hw_mmap_translate(map, addr, len, dir) : NULL;
}

static void *pcie_mem_pin(void *tctx, uint64_t addr, uint64_t len, unsigned int dir, void **pin)
{
	struct pcie_ctrlr *pc = tctx;
	struct hw_mmap *map = __atomic_load_n(&pc->map, __ATOMIC_ACQUIRE);
	void *ptr = NULL;
	bool hit = false;

	*pin = NULL;
	if (__atomic_load_n(&pc->dma_off, __ATOMIC_ACQUIRE))
		return NULL;
	ptr = pcie_devmem_lookup(pc, addr, len, &hit);
	if (hit) {
		*pin = ptr ? PCIE_DEVMEM_PIN : NULL;
		return ptr;
	}
	*pin = map ? hw_mmap_pin(map, addr, len, dir, &ptr) : NULL;
	return *pin ? ptr : NULL;
}

static void pcie_mem_unpin(void *tctx, void *pin)
{
	if (pin != PCIE_DEVMEM_PIN)
		hw_mem_pin_put(pin);
}

static void pcie_write_regs(void *tctx, uint32_t offset, const void *buf, size_t len)
{
	struct pcie_ctrlr *pc = tctx;
	int rc = hw_dev_stateful_modify(pc->dev, 0, PCIE_REGS_START + offset, buf, len);

	if (rc)
		LOG_ERR(PCIE_LOG, "%s: register write-back at 0x%x failed: %d", pc->vuid, offset, rc);
}

/* Owner thread of sq: its poll group's channel, or the main thread's for the admin queue. */
static struct bdev_channel *pcie_get_channel(void *tctx, struct ctrlr_sq *sq, struct bdev *bdev)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_sq *psq = ctrlr_sq_get_tctx(sq);
	struct pcie_thread *t = psq ? &psq->pcq->pg->t : &pc->main_t;

	EVLOOP_ASSERT_OWNER(t->loop);
	return pcie_thread_get_channel(t, bdev);
}

static int pcie_admin_msg(void *tctx, void (*fn)(void *arg), void *arg)
{
	struct pcie_ctrlr *pc = tctx;

	return evloop_send_msg(pc->loop, fn, arg);
}

static void pcie_admin_post(void *tctx, struct evloop_msg *m, void (*fn)(void *arg), void *arg)
{
	struct pcie_ctrlr *pc = tctx;

	evloop_post(pc->loop, m, fn, arg);
}

/* The poll group that owns sq (I/O queues only). */
static void pcie_io_post(void *tctx, struct ctrlr_sq *sq, struct evloop_msg *m,
			 void (*fn)(void *arg), void *arg)
{
	struct pcie_ctrlr *pc = tctx;
	struct pcie_sq *psq = ctrlr_sq_get_tctx(sq);

	evloop_post(psq ? psq->pcq->pg->t.loop : pc->loop, m, fn, arg);
}

const struct ctrlr_transport_ops pcie_transport_ops = {
	.mem_map = pcie_mem_map,
	.mem_pin = pcie_mem_pin,
	.mem_unpin = pcie_mem_unpin,
	.raise_irq = pcie_raise_irq,
	.hold_irq = pcie_hold_irq,
	.write_regs = pcie_write_regs,
	.create_cq = pcie_create_cq,
	.create_sq = pcie_create_sq,
	.delete_sq = pcie_delete_sq,
	.delete_cq = pcie_delete_cq,
	.visit_queues = pcie_visit_queues,
	.get_channel = pcie_get_channel,
	.put_bdev = pcie_put_bdev,
	.admin_msg = pcie_admin_msg,
	.admin_post = pcie_admin_post,
	.io_post = pcie_io_post,
	.keep_alive_changed = pcie_keep_alive_changed,
};

/* ---- Admin doorbells (main thread) ---- */

static void pcie_admin_db_notify(struct hw_db *db, uint32_t value, void *arg)
{
	struct pcie_ctrlr *pc = arg;
	uint32_t id = hw_db_id(db);

	pc->admin_db_seen[nvme_db_is_cq(id)] = value;
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
	if (!pc->map) {
		struct hw_mmap *map = hw_mmap_create(pc->dev, 0, UINT64_MAX,
						     HW_MMAP_READ | HW_MMAP_WRITE);

		if (!map)
			return -errno;
		__atomic_store_n(&pc->map, map, __ATOMIC_RELEASE);
	}
	for (uint32_t i = 0; i < 2; i++) {
		if (pc->admin_db[i])
			continue;
		pc->admin_db[i] = hw_db_create(pc->dev, nvme_db_index(0, i), pcie_admin_db_notify,
					       pc);
		if (!pc->admin_db[i])
			return -errno;
		pc->admin_db_seen[i] = 0;
		hw_db_start(pc->admin_db[i]);
	}
	if (!pc->tick_timer) {
		pc->tick_timer = evloop_timer_add(pc->loop, CTRLR_TICK_US,
						    pcie_clock_tick, pc);
		if (!pc->tick_timer)
			return -ENOMEM;
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
	struct hw_mmap *map = __atomic_exchange_n(&pc->map, NULL, __ATOMIC_ACQ_REL);

	if (pc->admin_timer) {
		evloop_timer_cancel(pc->admin_timer);
		pc->admin_timer = NULL;
	}
	if (pc->tick_timer) {
		evloop_timer_cancel(pc->tick_timer);
		pc->tick_timer = NULL;
	}
	if (pc->ka_timer) {
		evloop_timer_cancel(pc->ka_timer);
		pc->ka_timer = NULL;
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
	uint8_t regs[PCIE_REGS_SIZE];
	uint32_t cc;
	int rc;

	if (region_start == PCIE_PMR_REGS_START) {
		pcie_pmr_regs_written(pc);
		return;
	}
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
	pcie_cmb_regs_written(pc, regs);
}

/* A register read: a PMRSTS read is the PMR's write barrier. */
static int pcie_stateful_read(struct hw_dev *dev, uint8_t bar_id, uint64_t offset, uint32_t len,
			      void *arg)
{
	return bar_id == 0 ? pcie_pmr_read(arg, offset, len) : 0;
}

/* Main: the PMR's contents are in its file. */
static void pcie_flr_pmr_done(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	pcie_release_resources(pc);
	hw_dev_event_done(pc->dev);
}

/* Main: the core's reset finished: no queue, no request, no pointer into the
 * client's memory is left. The reset disables the PMR, which is made persistent first. */
static void pcie_flr_done(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	pcie_cmb_reset(pc);
	pcie_pmr_quiesce(pc, pcie_flr_pmr_done, pc);
}

/* FLR, DEVICE_RESET, or the client gone: the core deletes every queue through
 * the poll groups; the client's reply (or, when it has gone, the unmapping of
 * its memory) waits for the end. */
static int pcie_flr(struct hw_dev *dev, bool client_gone, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	LOG_INFO(PCIE_LOG, "%s: %s", pc->vuid, client_gone ? "client gone: resetting"
							   : "function level reset");
	/* The reset clears COMMAND: no DMA until the host enables bus mastering again. */
	__atomic_store_n(&pc->dma_off, true, __ATOMIC_RELEASE);
	ctrlr_flr(pc->ctrlr, pcie_flr_done, pc);
	return HW_EVENT_ASYNC;
}

static void pcie_ctrlr_destroy_continue(struct pcie_ctrlr *pc);

static void pcie_hotplug_state_changed(struct hw_dev *dev, enum hw_hotplug_state state,
				       void *arg)
{
	struct pcie_ctrlr *pc = arg;

	LOG_INFO(PCIE_LOG, "%s: %s (doorbells: %s)", pc->vuid, hw_hotplug_state_name(state),
		 hw_db_mode_name(hw_dev_db_mode(dev)));
	/* An unplug for a destroy finished (called from a later loop iteration). */
	if (state == HW_HOTPLUG_POWER_OFF && pc->destroying)
		pcie_ctrlr_destroy_continue(pc);
}

static void pcie_unmap_done(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	hw_dev_event_done(pc->dev);
}

/* The client unmaps guest memory: the core detaches what lives in it and
 * waits for the requests using it; the client's reply waits for that. */
static int pcie_dma_unmap(struct hw_dev *dev, uint64_t iova, uint64_t len, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	ctrlr_mem_unmap(pc->ctrlr, iova, len, pcie_unmap_done, pc);
	return HW_EVENT_ASYNC;
}

/* The client mapped memory: queues detached by an unmap may come back. */
static void pcie_dma_map(struct hw_dev *dev, uint64_t iova, uint64_t len, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	if (!pc->dma_off)
		ctrlr_mem_mapped(pc->ctrlr);
}

/* COMMAND Bus Master Enable: clearing it stops the controller's DMA like an unmap of all
 * memory (queues detached and holding their completions, requests in flight finished with
 * their data); the host's config write completes after that. Setting it re-attaches. */
static int pcie_bus_master_changed(struct hw_dev *dev, bool enabled, void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	__atomic_store_n(&pc->dma_off, !enabled, __ATOMIC_RELEASE);
	if (enabled) {
		ctrlr_mem_mapped(pc->ctrlr);
		return 0;
	}
	ctrlr_dma_stop(pc->ctrlr, pcie_unmap_done, pc);
	return HW_EVENT_ASYNC;
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
	.stateful_read = pcie_stateful_read,
	.flr = pcie_flr,
	.dma_unmap = pcie_dma_unmap,
	.dma_map = pcie_dma_map,
	.bus_master_changed = pcie_bus_master_changed,
	.db_unowned_write = pcie_db_unowned_write,
};

/* ---- Lifecycle ---- */

static void pcie_ctrlr_free(struct pcie_ctrlr *pc)
{
	pcie_cmb_destroy(pc);
	pcie_pmr_close(pc);
	for (unsigned int k = 0; k < CTRLR_VISIT_SLOTS_MAX; k++)
		free(pc->visit_parts[k]);
	free(pc->vectors);
	free(pc->vuid);
	free(pc->socket_path);
	free(pc);
}

int pcie_ctrlr_create(struct evloop *loop, struct pcie_poll_groups *pgs, struct dpa *dpa,
		      const struct pcie_ctrlr_opts *opts, struct pcie_ctrlr **out)
{
	struct hw_dev_config dcfg = {
		.vuid = opts->vuid,
		.socket_path = opts->socket_path,
		.db_mode = opts->db_mode,
		.max_dma_regions = opts->max_dma_regions,
		.max_dma_bytes = opts->max_dma_bytes,
		.allow_any_dma_fd = opts->allow_any_dma_fd,
	};
	struct ctrlr_config ccfg = opts->ctrlr;
	struct hw_pci_ids ids;
	uint8_t regs[NVME_REG_END];
	struct pcie_ctrlr *pc;
	char err[256];
	int rc = -ENOMEM;

	EVLOOP_ASSERT_OWNER(loop);
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->loop = loop;
	pc->pgs = pgs;
	pc->dpa = dpa;
	pc->dma_off = true; /* COMMAND is 0 at power-on */
	pc->main_t.loop = loop;
	pc->vuid = strdup(opts->vuid);
	pc->socket_path = strdup(opts->socket_path);
	if (!pc->vuid || !pc->socket_path)
		goto out_free;
	/* What the visits of the queues need, so that they cannot fail later. */
	for (unsigned int k = 0; k < CTRLR_VISIT_SLOTS_MAX; k++) {
		pc->visit_parts[k] = calloc(pgs->n, sizeof(*pc->visit_parts[k]));
		if (!pc->visit_parts[k])
			goto out_free;
		for (unsigned int i = 0; i < pgs->n; i++) {
			pc->visit_parts[k][i].pc = pc;
			pc->visit_parts[k][i].pg = &pgs->pg[i];
		}
	}

	if (!ccfg.max_io_queues)
		ccfg.max_io_queues = pcie_nvme_max_vectors(opts->profile) - 1;
	if (ccfg.max_io_queues + 1u > pcie_nvme_max_vectors(opts->profile)) {
		LOG_ERR(PCIE_LOG, "%s: %u I/O queues need %u MSI-X vectors; profile %s allows %u",
			opts->vuid, ccfg.max_io_queues, ccfg.max_io_queues + 1u, opts->profile->name,
			pcie_nvme_max_vectors(opts->profile));
		rc = -EINVAL;
		goto out_free;
	}
	/* As many vectors as queues, unless the configuration gives fewer (a secondary
	 * controller's VI resources). */
	if (ccfg.num_vectors > ccfg.max_io_queues + 1u) {
		LOG_ERR(PCIE_LOG, "%s: %u MSI-X vectors for %u I/O queues: %u at most", opts->vuid,
			ccfg.num_vectors, ccfg.max_io_queues, ccfg.max_io_queues + 1u);
		rc = -EINVAL;
		goto out_free;
	}
	pc->num_msix = ccfg.num_vectors ? ccfg.num_vectors : ccfg.max_io_queues + 1u;
	ccfg.num_vectors = pc->num_msix;
	pc->vectors = calloc(pc->num_msix, sizeof(*pc->vectors));
	if (!pc->vectors)
		goto out_free;

	pcie_nvme_pci_ids(opts, &ids);
	ccfg.pci_vid = ids.vendor_id;
	ccfg.pci_ssvid = ids.subsys_vendor_id;
	if (opts->cmb_size && (opts->cmb_size < PCIE_DEVMEM_MIN || opts->cmb_size > PCIE_DEVMEM_MAX ||
			       (opts->cmb_size & (opts->cmb_size - 1)))) {
		LOG_ERR(PCIE_LOG, "%s: a CMB of %llu bytes: a power of two from 1 MiB to 1 GiB",
			opts->vuid, (unsigned long long)opts->cmb_size);
		rc = -EINVAL;
		goto out_free;
	}
	if (opts->pmr_file) {
		rc = pcie_pmr_open(pc, opts->pmr_file, opts->pmr_size, err, sizeof(err));
		if (rc) {
			LOG_ERR(PCIE_LOG, "%s: %s", opts->vuid, err);
			goto out_free;
		}
	}
	ccfg.cap_cmbs = opts->cmb_size != 0;
	ccfg.cap_pmrs = pc->pmr != NULL;
	pc->type = pcie_nvme_type_create(opts->profile, pc->num_msix, &ids, opts->cmb_size,
					 pcie_pmr_size(pc), err, sizeof(err));
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
	if (!rc && opts->cmb_size)
		rc = pcie_cmb_create(pc, opts->cmb_size);
	if (!rc && pc->pmr)
		rc = pcie_pmr_attach(pc);
	if (rc)
		goto out_dev;
	*out = pc;
	return 0;

out_dev:
	hw_dev_destroy(pc->dev);
out_ctrlr:
	/* Never enabled and without namespaces: its destroy ends from a message. */
	if (ctrlr_destroy(pc->ctrlr, NULL, NULL))
		LOG_ERR(PCIE_LOG, "%s: new controller not destroyable", opts->vuid);
out_type:
	hw_pci_type_destroy(pc->type);
out_free:
	pcie_ctrlr_free(pc);
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
	int rc;

	EVLOOP_ASSERT_OWNER(pc->loop);
	rc = hw_dev_hotplug(pc->dev);
	if (rc)
		LOG_ERR(PCIE_LOG, "%s: hotplug on %s failed: %d", pc->vuid, pc->socket_path, rc);
	else
		LOG_INFO(PCIE_LOG, "%s: listening on %s", pc->vuid, pc->socket_path);
	return rc;
}

/* Main, the PMR persistent: what is left is ours. */
static void pcie_ctrlr_destroy_free(void *arg)
{
	struct pcie_ctrlr *pc = arg;
	void (*done)(void *arg) = pc->destroy_done;
	void *done_arg = pc->destroy_arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	pcie_release_resources(pc);
	pcie_thread_put_all(&pc->main_t);
	if (hw_dev_destroy(pc->dev))
		LOG_ERR(PCIE_LOG, "%s: device still plugged at destroy", pc->vuid);
	hw_pci_type_destroy(pc->type);
	pcie_ctrlr_free(pc);
	if (done)
		done(done_arg);
}

/* Main, the core freed: the PMR is written to its file before the function's memory goes. */
static void pcie_ctrlr_destroy_finish(void *arg)
{
	struct pcie_ctrlr *pc = arg;

	EVLOOP_ASSERT_OWNER(pc->loop);
	pcie_pmr_quiesce(pc, pcie_ctrlr_destroy_free, pc);
}

/* Main, the function is unplugged (its client's reset done): the core goes,
 * releasing its namespaces' bdevs through the poll groups. */
static void pcie_ctrlr_destroy_continue(struct pcie_ctrlr *pc)
{
	int rc;

	/* Reached from the POWER_OFF state change and from pcie_ctrlr_destroy itself (an
	 * unplug that finished at once, or a function never plugged): once. */
	if (pc->destroy_continued)
		return;
	pc->destroy_continued = true;
	rc = ctrlr_destroy(pc->ctrlr, pcie_ctrlr_destroy_finish, pc);

	if (rc) {
		/* The unplug ended with the core still busy: a bug, and freeing now could
		 * free memory in use. Keep everything and say so. */
		LOG_ERR(PCIE_LOG, "%s: controller busy after unplug (%d): not destroyed",
			pc->vuid, rc);
	}
}

void pcie_ctrlr_destroy(struct pcie_ctrlr *pc, void (*done)(void *arg), void *arg)
{
	int rc;

	if (!pc) {
		if (done)
			done(arg);
		return;
	}
	EVLOOP_ASSERT_OWNER(pc->loop);
	if (pc->destroying) {
		LOG_ERR(PCIE_LOG, "%s: destroyed twice", pc->vuid);
		return;
	}
	pc->destroying = true;
	pc->destroy_done = done;
	pc->destroy_arg = arg;
	/* Unplugging runs the client-gone reset: queues deleted, resources freed;
	 * it may finish later (hotplug_state_changed then continues). */
	rc = hw_dev_hotunplug(pc->dev);
	if (rc == 0 && hw_dev_get_hotplug_state(pc->dev) == HW_HOTPLUG_POWER_OFF)
		pcie_ctrlr_destroy_continue(pc);
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
