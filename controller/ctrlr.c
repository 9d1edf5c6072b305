/* controller/ctrlr.c - the controller object: create/destroy, namespaces, the reset / shutdown /
 * FLR teardown flow, admin doorbells, statistics. Admin thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "controller/ctrlr_internal.h"
#include "controller/zns.h"

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

int ctrlr_create(const struct ctrlr_config *config, const struct ctrlr_transport_ops *ops,
		 void *tctx, struct ctrlr **out)
{
	struct ctrlr *ctrlr;
	int ret;

	if (!config || !ops || !out || !ops->mem_map || !ops->mem_pin || !ops->mem_unpin ||
	    !ops->raise_irq || !ops->write_regs || !ops->create_cq || !ops->create_sq ||
	    !ops->delete_sq || !ops->delete_cq || !ops->visit_queues || !ops->get_channel ||
	    !ops->put_bdev || !ops->admin_msg || !ops->admin_post || !ops->io_post)
		return -EINVAL;
	ret = ctrlr_config_check(config);
	if (ret)
		return ret;
	ctrlr = calloc(1, sizeof(*ctrlr));
	if (!ctrlr)
		return -ENOMEM;
	ctrlr->ops = ops;
	ctrlr->tctx = tctx;
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
	ctrlr_regs_init(ctrlr);
	ctrlr_features_init(ctrlr);
	ctrlr_health_init(ctrlr);
	ctrlr_fw_init(ctrlr);
	ctrlr->created_us = evloop_now_us();
	ret = ctrlr_ext_init(ctrlr);
	if (ret)
		goto out_free;
	ctrlr_pel_add(ctrlr, NVME_PEL_POWER_ON_RESET, NULL, 0);
	ret = ctrlr_vendor_register_defaults(ctrlr);
	if (ret)
		goto out_free_vendor;
	*out = ctrlr;
	return 0;

out_free_vendor:
	ctrlr_vendor_free_all(ctrlr);
	ctrlr_ext_fini(ctrlr);
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

/* Releases the namespace's bdev: the transport's channels first, asynchronously. The caller
 * counted it in puts_pending. Admin thread. */
static void ctrlr_ns_release(struct ctrlr_ns *ns)
{
	struct ctrlr *ctrlr = ns->ctrlr;

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

static void ctrlr_ns_free(struct ctrlr_ns *ns)
{
	if (!ns)
		return;
	ctrlr_zns_ns_fini(ns);
	free(ns);
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
	ctrlr_vendor_free_all(ctrlr);
	ctrlr_fw_fini(ctrlr);
	ctrlr_ext_fini(ctrlr);
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

static bool ctrlr_visits_running(const struct ctrlr *ctrlr)
{
	for (unsigned int i = 0; i < CTRLR_VISIT_SLOTS; i++)
		if (ctrlr_visit_running(ctrlr, (enum ctrlr_visit_slot)i))
			return true;
	return ctrlr->unmap.active;
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
	    ctrlr_bg_inflight(ctrlr) ||
	    (ctrlr->sqs[0] && ctrlr->sqs[0]->inflight))
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
	ctrlr_pool_unbind(ctrlr);
	ctrlr_subsys_leave(ctrlr);
	ctrlr->destroying = true;
	ctrlr->destroy_done = done;
	ctrlr->destroy_arg = arg;
	/* One count of our own, so the last namespace's completion cannot finish us early. */
	__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		if (!ctrlr->ns[i])
			continue;
		__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
		ctrlr_ns_release(ctrlr->ns[i]);
	}
	/* No queue is left, so nothing is in flight: release what removal left waiting. */
	for (struct ctrlr_ns *ns = ctrlr->dead_ns; ns; ns = ns->dead_next) {
		if (ns->released)
			continue;
		ns->released = true;
		__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
		ctrlr_ns_release(ns);
	}
	if (__atomic_sub_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL) == 0)
		ctrlr_destroy_step(ctrlr);
	return 0;
}

/* ---- namespaces ---- */

static void ctrlr_ns_changed(struct ctrlr *ctrlr, uint32_t nsid)
{
	/* A host that has not enabled the controller yet will identify everything anyway. */
	if (ctrlr->state != CTRLR_ST_ENABLED)
		return;
	for (uint32_t i = 0; i < ctrlr->num_changed_ns; i++)
		if (ctrlr->changed_ns[i] == nsid)
			goto report;
	if (ctrlr->num_changed_ns < CTRLR_MAX_NAMESPACES)
		ctrlr->changed_ns[ctrlr->num_changed_ns++] = nsid;
	else
		ctrlr->changed_ns_overflow = true;
report:
	ctrlr_aer_report(ctrlr, NVME_AER_TYPE_NOTICE, NVME_AER_NOTICE_NS_CHANGED,
			 NVME_LOG_CHANGED_NS);
}

/* dst takes src's format (the same bdev, so the same formats): block size, capacity, then the
 * word dst's I/O loads. */
static void ctrlr_ns_copy_format(struct ctrlr_ns *dst, const struct ctrlr_ns *src)
{
	dst->block_size = src->block_size;
	dst->lbads = src->lbads;
	__atomic_store_n(&dst->num_blocks, __atomic_load_n(&src->num_blocks, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dst->fmt, __atomic_load_n(&src->fmt, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

/* The LBA format is the namespace's, not a controller's: every controller attached to the same
 * shared namespace takes the one Format NVM gave ns, and the others' hosts are told (Namespace
 * Attribute Changed). Admin thread (all of them). */
void ctrlr_ns_format_changed(struct ctrlr_ns *ns)
{
	for (struct ctrlr_ns *o = ns->shared->nss; o; o = o->share_next) {
		if (o == ns)
			continue;
		ctrlr_ns_copy_format(o, ns);
		ctrlr_ns_changed(o->ctrlr, o->nsid);
	}
}

/* A controller attaching a namespace others have: it takes their current format. */
static void ctrlr_ns_format_join(struct ctrlr_ns *ns)
{
	for (struct ctrlr_ns *o = ns->shared->nss; o; o = o->share_next) {
		if (o != ns && o->nlbaf == ns->nlbaf) {
			ctrlr_ns_copy_format(ns, o);
			return;
		}
	}
}

int ctrlr_ns_add(struct ctrlr *ctrlr, uint32_t nsid, struct bdev *bdev,
		 const struct ctrlr_ns_opts *opts)
{
	uint32_t bs = bdev ? bdev_get_block_size(bdev) : 0;
	struct ctrlr_ns *ns;
	char owner[BDEV_NAME_MAX + 1];
	struct bdev_zone_geom zgeom;
	struct ctrlr_zns *zns = NULL;
	int ret;

	if (!bdev || nsid > CTRLR_MAX_NAMESPACES || (bs != 512 && bs != 4096) ||
	    bdev_io_ctx_size(bdev) > CTRLR_BDEV_CTX_MAX)
		return -EINVAL;
	if (nsid == 0) {
		while (nsid < CTRLR_MAX_NAMESPACES && ctrlr->ns[nsid])
			nsid++;
		if (nsid == CTRLR_MAX_NAMESPACES)
			return -ENOSPC;
		nsid++;
	}
	if (ctrlr->ns[nsid - 1])
		return -EEXIST;
	ns = calloc(1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	/* A zoned bdev makes a zoned namespace (CSI 2h): made here, where failing is still
	 * simple, and given to the shared namespace below unless it has its zones already. */
	if (bdev_get_zone_geom(bdev, &zgeom)) {
		ret = ctrlr_zns_create(&zgeom, &zns);
		if (ret)
			goto out_free;
	}
	ret = bdev_open(bdev);
	if (ret)
		goto out_free;
	snprintf(owner, sizeof(owner), "%s:ns%u", ctrlr->serial, nsid);
	ns->ctrlr = ctrlr;
	ns->nsid = nsid;
	ns->bdev = bdev;
	if (opts && opts->shared) {
		ret = ctrlr_ns_shared_attach(opts->shared, ns, owner);
	} else {
		struct ctrlr_ns_shared *own;

		ret = ctrlr_ns_shared_create(NULL, &own);
		if (!ret) {
			ret = ctrlr_ns_shared_attach(own, ns, owner);
			ctrlr_ns_shared_put(own); /* the namespace holds the only reference */
		}
	}
	if (ret)
		goto out_close;
	ns->uncor = &ns->shared->uncor;
	ctrlr_ns_formats_init(ns, bs); /* format 0: the bdev's block, no metadata */
	/* One zone table per bdev, shared by every controller attached to it (all zones Empty
	 * when the first one attaches); it lives as long as the shared namespace. */
	if (zns) {
		if (!ns->shared->zns) {
			ns->shared->zns = zns;
			zns = NULL;
		}
		ns->zns = ns->shared->zns;
		ctrlr_zns_destroy(zns);
		/* Zones count logical blocks of the bdev's own size: the namespace keeps format 0
		 * (no metadata), the only one offered. */
		ns->nlbaf = 1;
	}
	ctrlr_ns_format_join(ns);
	if (opts && opts->set_format && ctrlr_ns_set_flbas(ns, opts->flbas, opts->dps))
		LOG_ERR(CTRLR_LOG, "namespace %u: format FLBAS 0x%x DPS 0x%x not offered: format 0",
			nsid, opts->flbas, opts->dps);
	ns->has_unmap = bdev_io_type_supported(bdev, BDEV_IO_UNMAP);
	ns->has_write_zeroes = bdev_io_type_supported(bdev, BDEV_IO_WRITE_ZEROES);
	ns->nmic = opts ? opts->nmic & 1 : 0;
	bdev_get_uuid(bdev, ns->uuid);
	if (opts && opts->uuid)
		memcpy(ns->uuid, opts->uuid, 16);
	if (opts && opts->nguid)
		memcpy(ns->nguid, opts->nguid, 16);
	else
		memcpy(ns->nguid, ns->uuid, 16);
	if (opts && opts->eui64) {
		memcpy(ns->eui64, opts->eui64, 8);
	} else {
		/* An IEEE-style EUI-64 from our OUI and the UUID's tail, unique per bdev. */
		ns->eui64[0] = 0x02;
		ns->eui64[1] = 0x4e;
		ns->eui64[2] = 0x58;
		memcpy(&ns->eui64[3], &ns->uuid[11], 5);
	}
	/* Its statistics blocks before its commands can arrive. */
	ctrlr_iostat_ns_added(ctrlr, nsid);
	CTRLR_STORE(ctrlr->ns[nsid - 1], ns);
	ctrlr_ns_changed(ctrlr, nsid);
	return (int)nsid;

out_close:
	bdev_close(bdev);
out_free:
	ctrlr_zns_destroy(zns);
	ctrlr_ns_free(ns);
	return ret;
}

int ctrlr_ns_resize(struct ctrlr *ctrlr, uint32_t nsid, uint64_t num_blocks)
{
	struct ctrlr_ns *ns;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	num_blocks = ctrlr_ns_blocks_for(ns, num_blocks); /* bdev blocks -> logical blocks */
	if (num_blocks < ns->num_blocks)
		return -EINVAL;
	if (num_blocks == ns->num_blocks)
		return 0;
	__atomic_store_n(&ns->num_blocks, num_blocks, __ATOMIC_RELAXED);
	ctrlr_ns_changed(ctrlr, nsid);
	return 0;
}

/* ---- namespace grace periods ----
 * Commands on I/O queues take no reference on their namespace (that was two sequentially
 * consistent atomic operations on a line every poll group shares, per command). A request
 * counts itself instead in its SQ's namespace epoch, on the SQ's owner thread, from
 * ctrlr_req_get until it completes. Whatever namespace pointer it loads meanwhile stays valid
 * because removal NULLs ctrlr->ns[] first and then waits for a grace period: a visit that, on
 * each owner thread, flips every I/O SQ's epoch and waits for the old epoch to empty. Loads on
 * that thread after the visit's message see the NULL (the message orders them after the store);
 * loads before belong to requests of the old epoch. Like RCU, with the visit as the quiescent
 * state. Admin thread, except the SQ part. */

static bool ctrlr_ns_ticket_passed(uint32_t done, uint32_t t)
{
	return (int32_t)(done - t) >= 0;
}

bool ctrlr_ns_grace_passed(const struct ctrlr *ctrlr, uint32_t t)
{
	return ctrlr_ns_ticket_passed(ctrlr->ns_grace_done, t);
}

/* Owner thread: the old epoch's requests end before the visit does. */
static void ctrlr_ns_grace_sq(struct ctrlr_sq *sq, struct ctrlr_visit *v)
{
	uint8_t old = sq->ns_epoch;

	sq->ns_epoch ^= 1;
	if (!sq->ns_users[old])
		return;
	ctrlr_visit_hold(v);
	sq->ns_fence = v;
}

/* A namespace removed, its grace period passed and no admin reference left: the bdev goes. */
static void ctrlr_ns_try_release(struct ctrlr_ns *ns)
{
	struct ctrlr *ctrlr = ns->ctrlr;

	if (ns->released || ns->admin_refs || !ctrlr_ns_grace_passed(ctrlr, ns->grace))
		return;
	ns->released = true;
	__atomic_add_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL);
	ctrlr_ns_release(ns);
}

/* Tickets up to ctrlr->ns_grace_done passed: release what waited for them, tell a sanitize
 * drain. */
static void ctrlr_ns_grace_advance(struct ctrlr *ctrlr)
{
	for (struct ctrlr_ns *ns = ctrlr->dead_ns; ns; ns = ns->dead_next)
		ctrlr_ns_try_release(ns);
	if (ctrlr_san_draining(ctrlr))
		ctrlr_san_ns_idle(ctrlr);
}

static void ctrlr_ns_grace_start(struct ctrlr *ctrlr);

/* The visit ended: its ticket passed; the tickets asked meanwhile need another one. */
static void ctrlr_ns_grace_done(struct ctrlr *ctrlr)
{
	ctrlr->ns_grace_done = ctrlr->ns_grace_cur;
	if (ctrlr->ns_grace_asked != ctrlr->ns_grace_done)
		ctrlr_ns_grace_start(ctrlr);
	ctrlr_ns_grace_advance(ctrlr);
}

/* Covers every ticket asked so far: at once without I/O queues (no command of one can run: an
 * SQ being created counts in queue_ops_pending, a deleted one drained its requests), else by a
 * visit. */
static void ctrlr_ns_grace_start(struct ctrlr *ctrlr)
{
	ctrlr->ns_grace_cur = ctrlr->ns_grace_asked;
	if (!CTRLR_LOAD(ctrlr->io_sqs) && !ctrlr->queue_ops_pending) {
		ctrlr->ns_grace_done = ctrlr->ns_grace_cur;
		return;
	}
	ctrlr_visit_start(ctrlr, CTRLR_VISIT_NS_GRACE, NULL, ctrlr_ns_grace_sq, ctrlr_ns_grace_done);
}

uint32_t ctrlr_ns_grace_ask(struct ctrlr *ctrlr)
{
	uint32_t t = ++ctrlr->ns_grace_asked;

	/* A visit running now may have passed some owner threads already: the next one. */
	if (!ctrlr_visit_running(ctrlr, CTRLR_VISIT_NS_GRACE))
		ctrlr_ns_grace_start(ctrlr);
	return t;
}

bool ctrlr_ns_quiet(const struct ctrlr *ctrlr)
{
	if (ctrlr->ns_grace_asked != ctrlr->ns_grace_done)
		return false;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (ctrlr->ns[i] && ctrlr->ns[i]->admin_refs)
			return false;
	return true;
}

int ctrlr_ns_remove(struct ctrlr *ctrlr, uint32_t nsid)
{
	return ctrlr_ns_detach(ctrlr, nsid, NULL, NULL);
}

int ctrlr_ns_detach(struct ctrlr *ctrlr, uint32_t nsid, void (*released)(void *arg), void *arg)
{
	struct ctrlr_ns *ns;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES || !ctrlr->ns[nsid - 1])
		return -ENOENT;
	ns = ctrlr->ns[nsid - 1];
	ns->released_fn = released;
	ns->released_arg = arg;
	CTRLR_STORE(ctrlr->ns[nsid - 1], NULL);
	ctrlr_ns_shared_unlink(ns);
	ns->dead_next = ctrlr->dead_ns;
	ctrlr->dead_ns = ns;
	ns->removing = true;
	/* After the NULL store: commands that loaded ns before it end within the grace period. */
	ns->grace = ctrlr_ns_grace_ask(ctrlr);
	ctrlr_ns_try_release(ns);
	ctrlr_ns_changed(ctrlr, nsid);
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

uint32_t ctrlr_ns_count(const struct ctrlr *ctrlr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		n += ctrlr->ns[i] != NULL;
	return n;
}

struct ctrlr_ns *ctrlr_ns_get(struct ctrlr *ctrlr, uint32_t nsid)
{
	struct ctrlr_ns *ns;

	if (nsid == 0 || nsid > CTRLR_MAX_NAMESPACES)
		return NULL;
	/* Removal runs on this thread too: an attached namespace is not being removed. */
	ns = ctrlr->ns[nsid - 1];
	if (ns)
		ns->admin_refs++;
	return ns;
}

void ctrlr_ns_put(struct ctrlr_ns *ns)
{
	if (--ns->admin_refs != 0)
		return;
	if (ns->removing)
		ctrlr_ns_try_release(ns);
	else if (ctrlr_san_draining(ns->ctrlr))
		ctrlr_san_ns_idle(ns->ctrlr);
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
	ctrlr_features_reset(ctrlr);
	ctrlr_fw_reset(ctrlr);
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
	/* The controller's own background bdev request (self-test, sanitize) returns first; its
	 * completion calls us again. */
	if (ctrlr_bg_inflight(ctrlr))
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
	ctrlr_ext_reset(ctrlr);
	if (shutdown) {
		ctrlr->csts.bits.shst = NVME_SHST_OCCURRING;
		ctrlr_regs_write_csts(ctrlr);
	}
	ctrlr_reset_continue(ctrlr);
}

void ctrlr_flr(struct ctrlr *ctrlr, void (*done)(void *arg), void *arg)
{
	ctrlr->reset_flr = true;
	CTRLR_STAT_ADD(ctrlr->cnt.flrs, 1);
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
