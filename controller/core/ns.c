/* controller/core/ns.c - namespaces: attach (the modules shape them: command set, formats,
 * zones), resize, removal without a shared counter on the I/O path (grace periods), the admin
 * thread's references, and the shared namespace that every controller attached to one bdev sees
 * (its claim, its list of controller namespaces, the modules' shared state). Admin thread, except
 * the SQ part of a grace period. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"

void ctrlr_ns_changed(struct ctrlr *ctrlr, uint32_t nsid)
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

/* ---- formats ---- */

void ctrlr_ns_take_format(struct ctrlr_ns *ns, union ctrlr_ns_fmt f)
{
	const struct ctrlr_lbaf *l = &ns->lbafs[f.f.lbaf];

	ns->block_size = l->ds;
	ns->lbads = l->lbads;
	__atomic_store_n(&ns->num_blocks, bdev_get_num_blocks(ns->bdev) / l->bpl, __ATOMIC_RELAXED);
	__atomic_store_n(&ns->fmt, f.raw, __ATOMIC_RELEASE);
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

void ctrlr_ns_format_join(struct ctrlr_ns *ns)
{
	for (struct ctrlr_ns *o = ns->shared->nss; o; o = o->share_next) {
		if (o != ns && o->nlbaf == ns->nlbaf) {
			ctrlr_ns_copy_format(ns, o);
			return;
		}
	}
}

void ctrlr_ns_erased(struct ctrlr_ns *ns)
{
	CTRLR_MODULES_CALL(ns->ctrlr, ns_erased, ns);
}

/* ---- attach, release, free ---- */

/* The transport dropped its channels on the namespace's bdev: it can be closed. Admin thread. */
static void ctrlr_ns_put_done(void *arg)
{
	struct ctrlr_ns *ns = arg;
	struct ctrlr *ctrlr = ns->ctrlr;

	ctrlr_ns_shared_detach(ns); /* the claim goes with the namespace's last controller */
	bdev_close(ns->bdev);
	if (ns->released_fn)
		ns->released_fn(ns->released_arg);
	if (__atomic_sub_fetch(&ctrlr->puts_pending, 1, __ATOMIC_ACQ_REL) == 0 && ctrlr->puts_done)
		ctrlr->puts_done(ctrlr);
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
		    ctrlr->puts_done)
			ctrlr->puts_done(ctrlr);
	}
}

void ctrlr_ns_free(struct ctrlr_ns *ns)
{
	struct ctrlr *ctrlr;

	if (!ns)
		return;
	ctrlr = ns->ctrlr;
	for (uint32_t i = ctrlr->nr_modules; i--;) {
		const struct ctrlr_module *m = ctrlr->modules[i];

		if (m && m->ns_free)
			m->ns_free(ns);
		if (m && m->ns_size)
			free(ns->mod[i]);
	}
	free(ns);
}

/* The modules take the namespace (its command set, formats, zones) in table order. */
static int ctrlr_ns_modules_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts)
{
	struct ctrlr *ctrlr = ns->ctrlr;

	for (uint32_t i = 0; i < ctrlr->nr_modules; i++) {
		const struct ctrlr_module *m = ctrlr->modules[i];
		int ret;

		if (!m)
			continue;
		if (m->ns_size) {
			ns->mod[i] = calloc(1, m->ns_size);
			if (!ns->mod[i])
				return -ENOMEM;
		}
		if (m->ns_attach) {
			ret = m->ns_attach(ns, opts);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int ctrlr_ns_add(struct ctrlr *ctrlr, uint32_t nsid, struct bdev *bdev,
		 const struct ctrlr_ns_opts *opts)
{
	uint32_t bs = bdev ? bdev_get_block_size(bdev) : 0;
	struct ctrlr_ns *ns;
	char owner[BDEV_NAME_MAX + 1];
	int ret;

	if (!bdev || nsid > CTRLR_MAX_NAMESPACES || (bs != 512 && bs != 4096 && bs != BDEV_PACKED_BLOCK_SIZE) ||
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
	ret = bdev_open(bdev);
	if (ret) {
		free(ns);
		return ret;
	}
	snprintf(owner, sizeof(owner), "%s:ns%u", ctrlr->serial, nsid);
	ns->ctrlr = ctrlr;
	ns->nsid = nsid;
	ns->bdev = bdev;
	if (opts && opts->shared) {
		ret = ctrlr_ns_shared_attach(opts->shared, ns, owner);
	} else {
		struct ctrlr_ns_shared_opts so = {0};
		struct ctrlr_ns_shared *own;

		ret = ctrlr_core_ns_shared_create(ctrlr->modules, ctrlr->nr_modules, &so, &own);
		if (!ret) {
			ret = ctrlr_ns_shared_attach(own, ns, owner);
			ctrlr_ns_shared_put(own); /* the namespace holds the only reference */
		}
	}
	if (ret)
		goto out_close;
	ret = ctrlr_ns_modules_attach(ns, opts);
	if (ret)
		goto out_detach;
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

out_detach:
	ctrlr_ns_shared_detach(ns);
out_close:
	bdev_close(bdev);
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

uint32_t ctrlr_ns_count(const struct ctrlr *ctrlr)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		n += ctrlr->ns[i] != NULL;
	return n;
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
 * state. */

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
	ctrlr_ns_release(ns);
}

/* Tickets up to ctrlr->ns_grace_done passed: release what waited for them, tell the modules
 * (a sanitize drain). */
static void ctrlr_ns_grace_advance(struct ctrlr *ctrlr)
{
	for (struct ctrlr_ns *ns = ctrlr->dead_ns; ns; ns = ns->dead_next)
		ctrlr_ns_try_release(ns);
	CTRLR_MODULES_CALL(ctrlr, ns_quiet, ctrlr);
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
	else
		CTRLR_MODULES_CALL(ns->ctrlr, ns_quiet, ns->ctrlr);
}

/* ---- the shared namespace ---- */

static void ctrlr_ns_shared_free(struct ctrlr_ns_shared *s, uint32_t upto)
{
	while (upto--) {
		const struct ctrlr_module *m = s->modules[upto];

		if (m && m->shared_fini)
			m->shared_fini(s);
		if (m && m->shared_size)
			free(s->mod[upto]);
		s->mod[upto] = NULL;
	}
	free(s);
}

int ctrlr_core_ns_shared_create(const struct ctrlr_module *const *modules, uint32_t nr_modules,
				const struct ctrlr_ns_shared_opts *opts,
				struct ctrlr_ns_shared **out)
{
	struct ctrlr_ns_shared *s;

	if (nr_modules > CTRLR_MODULES_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->modules = modules;
	s->nr_modules = nr_modules;
	for (uint32_t i = 0; i < nr_modules; i++) {
		const struct ctrlr_module *m = modules[i];
		int ret = 0;

		if (!m)
			continue;
		if (m->shared_size) {
			s->mod[i] = calloc(1, m->shared_size);
			if (!s->mod[i])
				ret = -ENOMEM;
		}
		if (!ret && m->shared_init)
			ret = m->shared_init(s, opts);
		if (ret) {
			/* The failing module undid its own part; the ones before it go. */
			free(s->mod[i]);
			s->mod[i] = NULL;
			ctrlr_ns_shared_free(s, i);
			return ret;
		}
	}
	*out = s;
	return 0;
}

void ctrlr_ns_shared_put(struct ctrlr_ns_shared *s)
{
	if (!s || --s->refs)
		return;
	ctrlr_ns_shared_free(s, s->nr_modules);
}

int ctrlr_ns_shared_attach(struct ctrlr_ns_shared *s, struct ctrlr_ns *ns, const char *owner)
{
	/* One bdev per shared namespace, and the modules that made it are the controller's. */
	if ((s->bdev && s->bdev != ns->bdev) || s->modules != ns->ctrlr->modules)
		return -EINVAL;
	if (!s->claims) {
		int rc = bdev_claim(ns->bdev, owner);

		if (rc)
			return rc;
		s->bdev = ns->bdev;
	}
	s->claims++;
	s->refs++;
	ns->shared = s;
	ns->share_next = s->nss;
	s->nss = ns;
	return 0;
}

void ctrlr_ns_shared_unlink(struct ctrlr_ns *ns)
{
	struct ctrlr_ns_shared *s = ns->shared;

	if (!s)
		return;
	for (struct ctrlr_ns **pp = &s->nss; *pp; pp = &(*pp)->share_next) {
		if (*pp == ns) {
			*pp = ns->share_next;
			break;
		}
	}
	ns->share_next = NULL;
}

/* The namespace's bdev is put (removal, destroy): the claim goes with the last user. */
void ctrlr_ns_shared_detach(struct ctrlr_ns *ns)
{
	struct ctrlr_ns_shared *s = ns->shared;

	if (!s)
		return;
	ctrlr_ns_shared_unlink(ns);
	if (--s->claims == 0) {
		bdev_release(s->bdev);
		s->bdev = NULL;
	}
	ns->shared = NULL;
	ctrlr_ns_shared_put(s);
}
