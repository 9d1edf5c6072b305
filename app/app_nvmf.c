/* app/app_nvmf.c - subsystems, their namespaces and their listeners: a listener is one controller
 * (pcie_ctrlr, its own CNTLID) served on a function's vfio-user socket, hot-plugged into QEMU
 * through QMP when the function's manager is a QEMU. A subsystem with several listeners is one NVM
 * subsystem of several controllers sharing its namespaces (reservations between hosts). */
#include "app/app_internal.h"
#include "app/qmp.h"
#include "app/rpc.h"
#include "common/log.h"
#include "controller/nvme_spec.h"
#include "transport/pcie.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define APP_NQN_MAX 223

struct app_subsys *app_subsys_find(struct app_target *t, const char *nqn)
{
	for (struct app_subsys *s = t->subsystems; s; s = s->next)
		if (!strcmp(s->nqn, nqn))
			return s;
	return NULL;
}

static bool app_printable(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

int app_subsys_create(struct app_target *t, const char *nqn, const char *serial, const char *model,
		      uint32_t max_namespaces, bool allow_any_host, uint32_t min_cntlid,
		      uint32_t max_cntlid, char *err)
{
	struct app_subsys *s, **tail;
	char defserial[21];

	/* NVMe 1.4 section 7.9: "nqn." prefix, at most 223 bytes. */
	if (strncmp(nqn, "nqn.", 4) || !app_printable(nqn, APP_NQN_MAX)) {
		snprintf(err, APP_ERR_LEN, "invalid NQN '%.64s': \"nqn.\" and up to %d characters",
			 nqn, APP_NQN_MAX);
		return -EINVAL;
	}
	if (app_subsys_find(t, nqn)) {
		snprintf(err, APP_ERR_LEN, "subsystem %s already exists", nqn);
		return -EEXIST;
	}
	if (serial && !app_printable(serial, 20)) {
		snprintf(err, APP_ERR_LEN,
			 "serial_number must be 1..20 printable ASCII characters");
		return -EINVAL;
	}
	if (model && !app_printable(model, 40)) {
		snprintf(err, APP_ERR_LEN, "model_number must be 1..40 printable ASCII characters");
		return -EINVAL;
	}
	if (max_namespaces > CTRLR_MAX_NAMESPACES) {
		snprintf(err, APP_ERR_LEN, "max_namespaces must be 0..%d", CTRLR_MAX_NAMESPACES);
		return -EINVAL;
	}
	/* NVMe Base 2.0 5.17.2.1 CNTLID: FFF0h-FFFFh are reserved; SPDK's defaults 1..FFEFh. */
	min_cntlid = min_cntlid ? min_cntlid : APP_MIN_CNTLID;
	max_cntlid = max_cntlid ? max_cntlid : APP_MAX_CNTLID;
	if (min_cntlid > APP_MAX_CNTLID || max_cntlid > APP_MAX_CNTLID || min_cntlid > max_cntlid) {
		snprintf(err, APP_ERR_LEN,
			 "min_cntlid %u / max_cntlid %u: need 1 <= min_cntlid <= max_cntlid <= %u",
			 min_cntlid, max_cntlid, APP_MAX_CNTLID);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out_nomem;
	if (ctrlr_subsys_create(&s->cs)) {
		free(s);
		goto out_nomem;
	}
	if (!serial) {
		snprintf(defserial, sizeof(defserial), "NVMEEMU%04u", t->next_serial);
		serial = defserial;
	}
	s->nqn = strdup(nqn);
	s->serial = strdup(serial);
	s->model = strdup(model ? model : "nvme-emu");
	if (!s->nqn || !s->serial || !s->model)
		goto out_free;
	s->max_namespaces = max_namespaces ? max_namespaces : CTRLR_MAX_NAMESPACES;
	s->allow_any_host = allow_any_host;
	s->min_cntlid = (uint16_t)min_cntlid;
	s->max_cntlid = (uint16_t)max_cntlid;
	t->next_serial++;
	s->t = t;
	for (tail = &t->subsystems; *tail; tail = &(*tail)->next)
		;
	*tail = s;
	return 0;

out_free:
	free(s->nqn);
	free(s->serial);
	free(s->model);
	ctrlr_subsys_destroy(s->cs);
	free(s);
out_nomem:
	snprintf(err, APP_ERR_LEN, "out of memory");
	return -ENOMEM;
}

static void app_ns_free(struct app_ns *ns)
{
	if (ns) {
		free(ns->bdev_name);
		free(ns->ptpl_file);
		ctrlr_ns_shared_put(ns->shared);
	}
	free(ns);
}

struct app_subsys *app_bdev_user(struct app_target *t, const char *name)
{
	for (struct app_subsys *s = t->subsystems; s; s = s->next)
		for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
			if (s->ns[i] && !strcmp(s->ns[i]->bdev_name, name))
				return s;
	return NULL;
}

/* Parses "hex" of len bytes, with optional '-' separators. */
static int app_parse_hex(const char *text, uint8_t *out, size_t len)
{
	size_t n = 0;

	for (const char *p = text; *p; p++) {
		unsigned int v;

		if (*p == '-')
			continue;
		if (n == len * 2 || !isxdigit((unsigned char)*p))
			return -EINVAL;
		v = (unsigned int)(isdigit((unsigned char)*p)
				       ? *p - '0'
				       : tolower((unsigned char)*p) - 'a' + 10);
		out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
		n++;
	}
	return n == len * 2 ? 0 : -EINVAL;
}

bool app_subsys_busy(const struct app_subsys *s)
{
	if (s->deleting || s->cntlid_claims)
		return true;
	for (const struct app_listener *l = s->listeners; l; l = l->next)
		if (l->state == APP_LISTENER_ATTACHING || l->state == APP_LISTENER_DETACHING)
			return true;
	return false;
}

struct ctrlr *app_subsys_first_ctrl(const struct app_subsys *s)
{
	for (const struct app_listener *l = s->listeners; l; l = l->next)
		if (l->pc)
			return pcie_ctrlr_core(l->pc);
	return NULL;
}

struct app_listener *app_subsys_listener_by_cntlid(const struct app_subsys *s, uint16_t cntlid)
{
	for (struct app_listener *l = s->listeners; l; l = l->next)
		if (l->cntlid == cntlid)
			return l;
	return NULL;
}

/* A namespace's bdev grew (an RBD image resized): every controller reports the new size and a
 * Namespace Attribute Changed event. Looked up by name, so a bdev outliving its subsystem is
 * harmless. */
static void app_ns_resized(struct bdev *bdev, uint64_t num_blocks, void *arg)
{
	struct app_target *t = arg;
	struct app_subsys *s = app_bdev_user(t, bdev_get_name(bdev));
	int rc;

	if (!s)
		return;
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		if (!s->ns[i] || strcmp(s->ns[i]->bdev_name, bdev_get_name(bdev)))
			continue;
		for (struct app_listener *l = s->listeners; l; l = l->next) {
			if (!l->pc)
				continue;
			rc = ctrlr_ns_resize(pcie_ctrlr_core(l->pc), s->ns[i]->nsid, num_blocks);
			if (rc)
				LOG_ERR(APP_LOG,
					"%s: namespace %u cannot take the new size on controller "
					"%u: %s",
					s->nqn, s->ns[i]->nsid, l->cntlid, strerror(-rc));
			else
				LOG_INFO(APP_LOG, "%s: namespace %u now %" PRIu64
						  " blocks on controller %u",
					 s->nqn, s->ns[i]->nsid, num_blocks, l->cntlid);
		}
	}
}

/* Attaches one namespace to a listener's live controller. The namespace may be shared (NMIC bit
 * 0): every controller of the subsystem attaches it, with one reservation state. */
static int app_ns_attach(struct app_listener *l, struct app_ns *ns, char *err)
{
	struct ctrlr_ns_opts o = {
	    .uuid = ns->has_uuid ? ns->uuid : NULL,
	    .nguid = ns->has_nguid ? ns->nguid : NULL,
	    .eui64 = ns->has_eui64 ? ns->eui64 : NULL,
	    .shared = ns->shared,
	    .nmic = NVME_NMIC_SHARED,
	};
	struct bdev *bdev = bdev_lookup(ns->bdev_name);
	int rc;

	if (!bdev) {
		snprintf(err, APP_ERR_LEN, "bdev %s does not exist", ns->bdev_name);
		return -ENODEV;
	}
	/* A refusal by Flexible Data Placement says why. */
	rc = ctrlr_ns_placement_check(pcie_ctrlr_core(l->pc), ns->nsid, bdev, err, APP_ERR_LEN);
	if (rc)
		return rc;
	rc = ctrlr_ns_add(pcie_ctrlr_core(l->pc), ns->nsid, bdev, &o);
	if (rc < 0) {
		snprintf(err, APP_ERR_LEN, "cannot attach bdev %s as namespace %u: %s",
			 ns->bdev_name, ns->nsid,
			 rc == -EBUSY ? "bdev claimed by someone else" : strerror(-rc));
		return rc;
	}
	bdev_set_resize_cb(bdev, app_ns_resized, l->s->t);
	return 0;
}

int app_subsys_add_ns(struct app_target *t, struct app_subsys *s, const struct app_ns_opts *o,
		      char *err)
{
	struct app_subsys *user;
	struct app_ns *ns;
	uint32_t nsid = o->nsid;
	int rc;

	if (app_subsys_busy(s)) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: a hotplug is in progress", s->nqn);
		return -EBUSY;
	}
	if (!bdev_lookup(o->bdev_name)) {
		snprintf(err, APP_ERR_LEN, "bdev %s does not exist", o->bdev_name);
		return -ENODEV;
	}
	if (!strcmp(bdev_get_module_name(bdev_lookup(o->bdev_name)), BDEV_REGION_MODULE)) {
		snprintf(err, APP_ERR_LEN,
			 "bdev %s is a namespace of a namespace pool (the host attaches it)",
			 o->bdev_name);
		return -EBUSY;
	}
	user = app_bdev_user(t, o->bdev_name);
	if (user) {
		snprintf(err, APP_ERR_LEN, "bdev %s is already a namespace of %s", o->bdev_name,
			 user->nqn);
		return -EBUSY;
	}
	if (nsid > s->max_namespaces) {
		snprintf(err, APP_ERR_LEN, "nsid %u is above max_namespaces %u", nsid,
			 s->max_namespaces);
		return -EINVAL;
	}
	if (!nsid) {
		/* The pool's namespaces (host-created) share the NSID space. */
		for (nsid = 1; nsid <= s->max_namespaces &&
			       (s->ns[nsid - 1] || (s->pool && ctrlr_ns_pool_owns(s->pool, nsid)));
		     nsid++)
			;
		if (nsid > s->max_namespaces) {
			snprintf(err, APP_ERR_LEN, "subsystem %s has %u namespaces already", s->nqn,
				 s->max_namespaces);
			return -ENOSPC;
		}
	} else if (s->ns[nsid - 1] || (s->pool && ctrlr_ns_pool_owns(s->pool, nsid))) {
		snprintf(err, APP_ERR_LEN, "nsid %u is in use in %s%s", nsid, s->nqn,
			 s->ns[nsid - 1] ? "" : " (a namespace the host created in its pool)");
		return -EEXIST;
	}
	if (s->pool_creating) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: its namespace pool is being loaded",
			 s->nqn);
		return -EBUSY;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns || !(ns->bdev_name = strdup(o->bdev_name))) {
		app_ns_free(ns);
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	ns->nsid = nsid;
	if ((o->uuid && (ns->has_uuid = true) && app_parse_hex(o->uuid, ns->uuid, 16)) ||
	    (o->nguid && (ns->has_nguid = true) && app_parse_hex(o->nguid, ns->nguid, 16)) ||
	    (o->eui64 && (ns->has_eui64 = true) && app_parse_hex(o->eui64, ns->eui64, 8))) {
		snprintf(err, APP_ERR_LEN, "bad uuid, nguid or eui64 (hex digits, '-' allowed)");
		app_ns_free(ns);
		return -EINVAL;
	}
	/* The reservation state belongs to the namespace: it outlives listener changes and,
	 * with a ptpl_file, restarts of the daemon (read back here). */
	if (o->ptpl_file && !*o->ptpl_file) {
		snprintf(err, APP_ERR_LEN, "ptpl_file must not be empty");
		app_ns_free(ns);
		return -EINVAL;
	}
	if (o->ptpl_file && o->shared_resv) {
		snprintf(err, APP_ERR_LEN,
			 "ptpl_file and shared_reservations exclude each other: shared reservations "
			 "are kept in the cluster");
		app_ns_free(ns);
		return -EINVAL;
	}
	if (o->ptpl_file && !(ns->ptpl_file = strdup(o->ptpl_file))) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		app_ns_free(ns);
		return -ENOMEM;
	}
	rc = ctrlr_ns_shared_create(o->ptpl_file, &ns->shared);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "ptpl_file %s: %s", o->ptpl_file,
			 rc == -EINVAL ? "not a reservation state file nvme-emu wrote"
				       : strerror(-rc));
		ns->shared = NULL;
		app_ns_free(ns);
		return rc;
	}
	if (o->shared_resv && s->listeners && !app_subsys_cluster_cntlid(s)) {
		/* Its controllers' CNTLIDs would have to be claimed in the cluster after the fact,
		 * where another daemon may hold them already. */
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s has listeners: add a namespace with shared_reservations "
			 "before them (their CNTLIDs are then allocated through the cluster)", s->nqn);
		app_ns_free(ns);
		return -EBUSY;
	}
	if (o->shared_resv) {
		ns->shared_resv = true;
		rc = app_ns_share_resv(t, ns, err);
		if (rc) {
			app_ns_free(ns);
			return rc;
		}
	}
	for (struct app_listener *l = s->listeners; l; l = l->next) {
		if (!l->pc)
			continue;
		rc = app_ns_attach(l, ns, err);
		if (rc) {
			/* Attached to none or to all. */
			for (struct app_listener *u = s->listeners; u != l; u = u->next)
				if (u->pc)
					ctrlr_ns_remove(pcie_ctrlr_core(u->pc), nsid);
			app_ns_free(ns);
			return rc;
		}
	}
	s->ns[nsid - 1] = ns;
	if (s->pool)
		ctrlr_ns_pool_reserve(s->pool, nsid, true);
	return (int)nsid;
}

int app_subsys_remove_ns(struct app_target *t, struct app_subsys *s, uint32_t nsid, char *err)
{
	if (!nsid || nsid > CTRLR_MAX_NAMESPACES || !s->ns[nsid - 1]) {
		snprintf(err, APP_ERR_LEN, "subsystem %s has no namespace %u%s", s->nqn, nsid,
			 s->pool && ctrlr_ns_pool_owns(s->pool, nsid)
			     ? " of its own (the host created it in the pool: nvme delete-ns)"
			     : "");
		return -ENOENT;
	}
	if (app_subsys_busy(s)) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: a hotplug is in progress", s->nqn);
		return -EBUSY;
	}
	for (struct app_listener *l = s->listeners; l; l = l->next)
		if (l->pc)
			ctrlr_ns_remove(pcie_ctrlr_core(l->pc), nsid);
	app_ns_free(s->ns[nsid - 1]);
	s->ns[nsid - 1] = NULL;
	if (s->pool)
		ctrlr_ns_pool_reserve(s->pool, nsid, false);
	return 0;
}

/* ---- listeners ---- */

static void app_listener_free(struct app_listener *l)
{
	app_secondaries_free(l->secs);
	free(l->listen_traddr);
	free(l);
}

/* The controller is gone: detach the function (destroying it if it was implicit), take the
 * listener out of its subsystem, continue the operation that tore it down, free it. */
static void app_listener_torn_down(void *arg)
{
	struct app_listener *l = arg;
	struct app_subsys *s = l->s;
	struct app_target *t = s->t;
	struct app_function *fn = l->fn;
	void (*cont)(struct app_listener *l) = l->teardown_cont;
	char err[APP_ERR_LEN];

	if (l->sec)
		app_secondary_gone(l);
	l->pc = NULL;
	l->state = APP_LISTENER_NONE;
	l->fn = NULL;
	l->teardown_cont = NULL;
	for (struct app_listener **pp = &s->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	if (fn) {
		fn->listener = NULL;
		free(fn->bus);
		fn->bus = NULL;
		if (fn->implicit && app_function_destroy(t, fn, err))
			LOG_ERR(APP_LOG, "%s: %s", s->nqn, err);
	}
	cont(l); /* may free s (a deletion's last listener), never l */
	app_listener_free(l);
	if (t->shutting_down)
		app_target_fini_step(t);
}

/* Stops the controller (asynchronously: its client's reset, its queues' teardown on the poll
 * groups), then app_listener_torn_down runs `cont`. Nothing waits meanwhile: other
 * controllers' I/O and other RPC requests go on; l stays DETACHING so none touches it. */
static void app_listener_teardown(struct app_listener *l, void (*cont)(struct app_listener *l))
{
	l->state = APP_LISTENER_DETACHING;
	l->teardown_cont = cont;
	if (!l->pc) {
		app_listener_torn_down(l);
		return;
	}
	pcie_ctrlr_destroy(l->pc, app_listener_torn_down, l);
}

/* Records what the operation will report once the teardown is over. */
static void app_listener_pend(struct app_listener *l, int rc, const char *msg)
{
	l->pending_rc = rc;
	snprintf(l->pending_msg, sizeof(l->pending_msg), "%s", msg ? msg : "");
}

static void app_listener_finish(struct app_listener *l, int rc, const char *msg)
{
	app_done_fn done = l->done;

	l->done = NULL;
	if (done)
		done(l->done_arg, rc, msg);
}

/* Teardown continuation: report the pending status of the listener operation. */
static void app_listener_finish_pending(struct app_listener *l)
{
	app_listener_finish(l, l->pending_rc, l->pending_rc ? l->pending_msg : NULL);
}

/* Creates and starts l's controller on fn's socket, a member of the subsystem with every
 * namespace attached. On failure it returns the error and has started the listener's teardown,
 * which reports it through l->done. */
/* A state file of l's controller named after the subsystem's `file` (its Persistent Event Log,
 * its controller state, its Persistent Memory Region): the file itself for the first CNTLID,
 * FILE.<cntlid> for the others (each controller keeps its own), NULL: none. */
static const char *app_listener_file(const struct app_listener *l, const char *file, char *buf,
				     size_t len)
{
	if (!file)
		return NULL;
	if (l->cntlid == l->s->min_cntlid)
		return file;
	snprintf(buf, len, "%s.%u", file, l->cntlid);
	return buf;
}

static int app_listener_start(struct app_target *t, struct app_listener *l,
			      struct app_function *fn, char *err)
{
	struct app_subsys *s = l->s;
	char pel_path[PATH_MAX], state_path[PATH_MAX], pmr_path[PATH_MAX];
	struct pcie_ctrlr_opts po = {
	    .vuid = fn->vuid,
	    .socket_path = fn->socket_path,
	    .db_mode = t->tr.db_mode,
	    .profile = t->tr.profile,
	    .ctrlr =
		{
		    .serial = s->serial,
		    .model = s->model,
		    .subnqn = s->nqn,
		    .cntlid = l->cntlid,
		    .max_io_queues = app_transport_io_queues(t),
		    .max_queue_entries = t->tr.max_queue_depth,
		    .mdts = app_transport_mdts(t),
		    .sgl = t->tr.sgl,
		    .no_dbbuf = t->tr.no_dbbuf,
		    .pel_file = app_listener_file(l, s->event_log_file, pel_path, sizeof(pel_path)),
		    .state_file =
			app_listener_file(l, s->state_file, state_path, sizeof(state_path)),
		    .fdp_nruh = s->fdp_ruh,
		    .fdp_runs = s->fdp_ru_size,
		},
	    .vendor_id = t->tr.vendor_id,
	    .device_id = t->tr.device_id,
	    .subsys_vendor_id = t->tr.subsys_vendor_id,
	    .subsys_id = t->tr.subsys_id,
	    .max_dma_regions = t->tr.max_dma_regions,
	    .max_dma_bytes = t->tr.max_dma_bytes,
	    .allow_any_dma_fd = t->tr.allow_any_dma_fd,
	    .cmb_size = s->cmb_size,
	    .pmr_file = app_listener_file(l, s->pmr_file, pmr_path, sizeof(pmr_path)),
	    .pmr_size = s->pmr_size,
	};
	int rc;

	app_secondary_config(l, &po.ctrlr);
	l->fn = fn;
	fn->listener = l;
	rc = pcie_ctrlr_create(t->loop, t->pgs, t->dpa, &po, &l->pc);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "cannot create the controller for %s: %s", s->nqn,
			 strerror(-rc));
		l->pc = NULL;
		goto out_teardown;
	}
	rc = ctrlr_subsys_join(s->cs, pcie_ctrlr_core(l->pc));
	if (rc) {
		snprintf(err, APP_ERR_LEN, "controller %u cannot join %s: %s", l->cntlid, s->nqn,
			 strerror(-rc));
		goto out_teardown;
	}
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		if (s->ns[i] && (rc = app_ns_attach(l, s->ns[i], err)))
			goto out_teardown;
	}
	if (s->pool && (rc = ctrlr_ns_pool_bind(s->pool, pcie_ctrlr_core(l->pc)))) {
		snprintf(err, APP_ERR_LEN, "cannot attach the namespace pool's namespaces: %s",
			 strerror(-rc));
		goto out_teardown;
	}
	if ((l->secs && (rc = app_secondaries_bind(l, err))) ||
	    (l->sec && (rc = app_secondary_started(l, err))))
		goto out_teardown;
	rc = pcie_ctrlr_start(l->pc);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "cannot listen on %s: %s", fn->socket_path,
			 strerror(-rc));
		goto out_teardown;
	}
	return 0;

out_teardown:
	app_listener_pend(l, rc, err);
	app_listener_teardown(l, app_listener_finish_pending);
	return rc;
}

int app_subsys_set_path(char **slot, const char *path, char *err)
{
	char *p = strdup(path);

	if (!p) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	free(*slot);
	*slot = p;
	return 0;
}

static bool app_devmem_size_ok(uint64_t size)
{
	return !size || (size >= (1ull << 20) && size <= (1ull << 30) && !(size & (size - 1)));
}

int app_devmem_check(uint64_t cmb_size, const char *pmr_file, uint64_t pmr_size, char *err)
{
	if (!app_devmem_size_ok(cmb_size) || !app_devmem_size_ok(pmr_size)) {
		snprintf(err, APP_ERR_LEN,
			 "a CMB or PMR size is a power of two from 1 MiB to 1 GiB");
		return -EINVAL;
	}
	if (pmr_size && !pmr_file) {
		snprintf(err, APP_ERR_LEN, "a PMR size needs a PMR file");
		return -EINVAL;
	}
	return 0;
}

int app_subsys_set_devmem(struct app_subsys *s, uint64_t cmb_size, const char *pmr_file,
			  uint64_t pmr_size, char *err)
{
	char *p = NULL;
	int rc;

	if (s->listeners) {
		snprintf(err, APP_ERR_LEN, "%s has a listener: its CMB and PMR are fixed", s->nqn);
		return -EBUSY;
	}
	rc = app_devmem_check(cmb_size, pmr_file, pmr_size, err);
	if (rc)
		return rc;
	if (pmr_file && !(p = strdup(pmr_file))) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	free(s->pmr_file);
	s->pmr_file = p;
	s->pmr_size = pmr_size;
	s->cmb_size = cmb_size;
	return 0;
}

static void app_subsys_free(struct app_target *t, struct app_subsys *s)
{
	struct app_subsys **pp;

	for (pp = &t->subsystems; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		app_ns_free(s->ns[i]);
	if (s->pool && ctrlr_ns_pool_destroy(s->pool))
		LOG_ERR(APP_LOG, "%s: namespace pool still busy when the subsystem went", s->nqn);
	if (ctrlr_subsys_destroy(s->cs))
		LOG_ERR(APP_LOG, "%s: controllers still members when the subsystem went", s->nqn);
	for (unsigned int i = 0; i < s->nr_hosts; i++)
		free(s->hosts[i]);
	free(s->hosts);
	free(s->event_log_file);
	free(s->state_file);
	free(s->pmr_file);
	free(s->nqn);
	free(s->serial);
	free(s->model);
	free(s);
}

static void app_listener_plugged(void *arg, int rc, const char *message)
{
	struct app_listener *l = arg;
	char msg[APP_ERR_LEN];

	l->qmp = NULL;
	if (rc) {
		snprintf(msg, sizeof(msg), "device_add of %s on manager %s failed: %s", l->fn->vuid,
			 l->fn->mgr->name, message);
		app_listener_pend(l, rc, msg);
		app_listener_teardown(l, app_listener_finish_pending);
		return;
	}
	l->state = APP_LISTENER_LIVE;
	LOG_INFO(APP_LOG, "%s: controller %u (%s) hot-plugged into manager %s port %s", l->s->nqn,
		 l->cntlid, l->fn->vuid, l->fn->mgr->name, l->fn->bus);
	app_secondaries_resume(l);
	app_listener_finish(l, 0, NULL);
}

/* The QEMU device id of a function: its VUID with what QEMU ids refuse replaced. */
static void app_qdev_id(const struct app_function *fn, char *out, size_t len)
{
	size_t i;

	snprintf(out, len, "%s%s", isalpha((unsigned char)fn->vuid[0]) ? "" : "f", fn->vuid);
	for (i = 0; out[i]; i++)
		if (!isalnum((unsigned char)out[i]) && out[i] != '-' && out[i] != '_' &&
		    out[i] != '.')
			out[i] = '_';
}

static const char *app_free_port(struct app_target *t, struct app_manager *mgr)
{
	for (unsigned int i = 0; i < mgr->nr_ports; i++) {
		struct app_function *fn;

		for (fn = t->functions; fn; fn = fn->next)
			if (fn->mgr == mgr && fn->bus && !strcmp(fn->bus, mgr->ports[i]))
				break;
		if (!fn)
			return mgr->ports[i];
	}
	return NULL;
}

/* Starts device_add for l's function. Returns 0 (app_listener_plugged will run) or -errno. */
static int app_listener_plug(struct app_target *t, struct app_listener *l, const char *bus,
			     char *err)
{
	struct app_function *fn = l->fn;
	struct json_object *cmd, *args, *sock;
	char id[128];
	int rc;

	if (!bus)
		bus = app_free_port(t, fn->mgr);
	if (!bus) {
		snprintf(err, APP_ERR_LEN, "manager %s has no free hotplug port", fn->mgr->name);
		return -ENOSPC;
	}
	fn->bus = strdup(bus);
	if (!fn->bus) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	app_qdev_id(fn, id, sizeof(id));
	cmd = json_object_new_object();
	args = json_object_new_object();
	sock = json_object_new_object();
	json_object_object_add(sock, "path", json_object_new_string(fn->socket_path));
	json_object_object_add(sock, "type", json_object_new_string("unix"));
	json_object_object_add(args, "driver", json_object_new_string("vfio-user-pci"));
	json_object_object_add(args, "id", json_object_new_string(id));
	json_object_object_add(args, "bus", json_object_new_string(bus));
	json_object_object_add(args, "socket", sock);
	json_object_object_add(cmd, "execute", json_object_new_string("device_add"));
	json_object_object_add(cmd, "arguments", args);
	l->state = APP_LISTENER_ATTACHING;
	rc = app_qmp_run(t->loop, fn->mgr->qmp_socket, cmd, NULL, APP_HOTPLUG_TIMEOUT_US,
			 app_listener_plugged, l, &l->qmp);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "cannot reach QMP socket %s of manager %s: %s",
			 fn->mgr->qmp_socket, fn->mgr->name, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Finds or creates the function `traddr` names. */
static int app_listener_function(struct app_target *t, const char *traddr, const char *manager,
				 struct app_function **out, char *err)
{
	struct app_function *fn = app_function_find(t, traddr);
	struct app_manager *mgr;
	struct stat st;
	char *dir, *copy;
	int rc;

	if (!fn)
		fn = app_function_find_socket(t, traddr);
	if (fn) {
		if (fn->listener) {
			snprintf(err, APP_ERR_LEN, "%s is already a listener of %s (controller %u)",
				 traddr, fn->listener->s->nqn, fn->listener->cntlid);
			return -EEXIST;
		}
		if (manager && strcmp(manager, fn->mgr->name)) {
			snprintf(err, APP_ERR_LEN, "function %s belongs to manager %s, not %s",
				 fn->vuid, fn->mgr->name, manager);
			return -EINVAL;
		}
		*out = fn;
		return 0;
	}
	if (!strchr(traddr, '/')) {
		snprintf(err, APP_ERR_LEN, "no function with VUID %s (and not a socket path)",
			 traddr);
		return -ENOENT;
	}
	mgr = app_manager_find(t, manager ? manager : "local");
	if (!mgr) {
		snprintf(err, APP_ERR_LEN, "no emulation manager %s", manager);
		return -ENOENT;
	}
	copy = strdup(traddr);
	if (!copy) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	dir = dirname(copy);
	rc = stat(dir, &st) ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (rc)
		snprintf(err, APP_ERR_LEN, "cannot create a socket in %s: %s", dir, strerror(-rc));
	free(copy);
	if (rc)
		return rc;
	return app_function_create(t, mgr, NULL, traddr, true, out, err);
}

const char *app_trtype_canonical(const char *trtype)
{
	static const char *const names[] = { APP_TRTYPE, "VFIOUSER", "DOCA" };

	for (size_t i = 0; trtype && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(trtype, names[i]))
			return names[i];
	return NULL;
}

/* VFIOUSER's traddr is a directory, made (0700) when missing, as SPDK's vfio-user target takes
 * it; the socket is <traddr>/cntrl, the path QEMU command lines written for SPDK give. */
static int app_vfiouser_socket(const char *traddr, char *path, size_t len, char *err)
{
	struct stat st;

	if ((size_t)snprintf(path, len, "%s/cntrl", traddr) >= len) {
		snprintf(err, APP_ERR_LEN, "traddr %s is too long", traddr);
		return -ENAMETOOLONG;
	}
	if (stat(traddr, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		snprintf(err, APP_ERR_LEN, "VFIOUSER traddr %s is not a directory", traddr);
		return -ENOTDIR;
	}
	if (errno != ENOENT || mkdir(traddr, 0700)) {
		int rc = -errno;

		snprintf(err, APP_ERR_LEN, "cannot make the directory %s: %s", traddr,
			 strerror(errno));
		return rc;
	}
	return 0;
}

/* The lowest CNTLID of s's range no listener has, or 0 when all are taken. */
static uint16_t app_free_cntlid(const struct app_subsys *s)
{
	for (uint32_t id = s->min_cntlid; id <= s->max_cntlid; id++)
		if (!app_subsys_listener_by_cntlid(s, (uint16_t)id) &&
		    !app_secondaries_cntlid_taken(s, (uint16_t)id))
			return (uint16_t)id;
	return 0;
}

/* A listener made (its subsystem, CNTLID and addresses set) joins its subsystem and goes live on
 * fn: started, then plugged into the guest when the manager has a QMP socket (bus: the port,
 * NULL for a free one); a primary's secondaries that were online come back once it is live.
 * done(arg) reports the end; on failure the listener is torn down, with the function if it was
 * implicit, and the teardown's end reports the error. */
static void app_listener_go(struct app_target *t, struct app_listener *l, struct app_function *fn,
			    const char *bus, app_done_fn done, void *arg)
{
	struct app_listener **tail;
	char err[APP_ERR_LEN];
	int rc;

	for (tail = &l->s->listeners; *tail; tail = &(*tail)->next)
		;
	*tail = l;
	l->done = done;
	l->done_arg = arg;
	if (app_listener_start(t, l, fn, err))
		return;
	if (!fn->mgr->qmp_socket) {
		l->state = APP_LISTENER_LIVE;
		app_secondaries_resume(l);
		app_listener_finish(l, 0, NULL);
		return;
	}
	rc = app_listener_plug(t, l, bus, err);
	if (rc) {
		app_listener_pend(l, rc, err);
		app_listener_teardown(l, app_listener_finish_pending);
	}
}

static void app_listener_add_at(struct app_target *t, struct app_subsys *s, const char *canon,
				const char *traddr, const char *manager, const char *bus,
				uint16_t cntlid, const struct app_sec_opts *sec, app_done_fn done,
				void *arg);

/* A listener add waiting for its CNTLID from the cluster: the request, copied. */
struct app_listener_claim {
	struct app_target *t;
	struct app_subsys *s;
	const char *canon;
	char *traddr, *manager, *bus;
	app_done_fn done;
	void *arg;
};

static void app_listener_claim_free(struct app_listener_claim *c)
{
	free(c->traddr);
	free(c->manager);
	free(c->bus);
	free(c);
}

static void app_listener_claimed(void *arg, int rc, uint16_t cntlid, const char *err)
{
	struct app_listener_claim *c = arg;
	char msg[APP_ERR_LEN];

	if (!rc && (c->t->shutting_down || c->s->deleting)) {
		rc = -ECANCELED;
		err = "the subsystem or the daemon is going away";
	} else if (!rc && app_subsys_listener_by_cntlid(c->s, cntlid)) {
		/* Another listener of this daemon at the same traddr came first. */
		snprintf(msg, sizeof(msg), "subsystem %s: CNTLID %u (from the cluster) is in use here",
			 c->s->nqn, cntlid);
		rc = -EEXIST;
		err = msg;
	}
	if (rc)
		c->done(c->arg, rc, err);
	else
		app_listener_add_at(c->t, c->s, c->canon, c->traddr, c->manager, c->bus, cntlid,
				    NULL, c->done, c->arg);
	app_listener_claim_free(c);
}

void app_listener_add(struct app_target *t, struct app_subsys *s, const char *trtype,
		      const char *traddr, const char *manager, const char *bus,
		      const struct app_sec_opts *sec, app_done_fn done, void *arg)
{
	const char *canon = app_trtype_canonical(trtype);
	char err[APP_ERR_LEN];
	uint16_t cntlid;
	int rc;

	if (!canon) {
		snprintf(err, APP_ERR_LEN, "trtype %s is not supported (%s, VFIOUSER or DOCA)",
			 trtype, APP_TRTYPE);
		done(arg, -EINVAL, err);
		return;
	}
	if (!t->has_transport) {
		done(arg, -EINVAL,
		     "transport " APP_TRTYPE " does not exist: nvmf_create_transport first");
		return;
	}
	if (s->deleting || s->pool_creating) {
		snprintf(err, APP_ERR_LEN, "subsystem %s is being %s", s->nqn,
			 s->deleting ? "deleted" : "given its namespace pool");
		done(arg, -EBUSY, err);
		return;
	}
	/* Namespace Management attaches a pool's namespaces to the one controller it is bound to
	 * (attachment per controller is not modelled): a pool keeps its subsystem single. */
	if (s->pool && s->listeners) {
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s has a namespace pool: it has one controller at most", s->nqn);
		done(arg, -EBUSY, err);
		return;
	}
	if (app_subsys_cluster_cntlid(s) && sec && sec->count) {
		/* The secondaries' CNTLIDs would have to come from the cluster too. */
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s spans daemons (a shared_reservations namespace): its "
			 "controllers have no secondaries",
			 s->nqn);
		done(arg, -EINVAL, err);
		return;
	}
	if (app_subsys_cluster_cntlid(s)) {
		/* One subsystem across daemons: the CNTLID comes from the cluster. */
		struct app_listener_claim *c = calloc(1, sizeof(*c));

		if (!c || !(c->traddr = strdup(traddr)) ||
		    (manager && !(c->manager = strdup(manager))) || (bus && !(c->bus = strdup(bus)))) {
			if (c)
				app_listener_claim_free(c);
			done(arg, -ENOMEM, "out of memory");
			return;
		}
		*c = (struct app_listener_claim){.t = t, .s = s, .canon = canon, .traddr = c->traddr,
						 .manager = c->manager, .bus = c->bus, .done = done,
						 .arg = arg};
		rc = app_cluster_cntlid_claim(t, s, traddr, app_listener_claimed, c, err);
		if (rc) {
			app_listener_claim_free(c);
			done(arg, rc, err);
		}
		return;
	}
	cntlid = app_free_cntlid(s);
	if (!cntlid) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: every CNTLID of %u..%u is taken", s->nqn,
			 s->min_cntlid, s->max_cntlid);
		done(arg, -ENOSPC, err);
		return;
	}
	app_listener_add_at(t, s, canon, traddr, manager, bus, cntlid, sec, done, arg);
}

/* The rest of a listener add, its CNTLID chosen. */
static void app_listener_add_at(struct app_target *t, struct app_subsys *s, const char *canon,
				const char *traddr, const char *manager, const char *bus,
				uint16_t cntlid, const struct app_sec_opts *sec, app_done_fn done,
				void *arg)
{
	struct app_secondaries *secs = NULL;
	struct app_function *fn;
	struct app_listener *l;
	char err[APP_ERR_LEN], path[108]; /* a unix socket path's limit (sun_path) */
	const char *where = traddr;
	int rc;

	if (!strcmp(canon, "VFIOUSER")) {
		rc = app_vfiouser_socket(traddr, path, sizeof(path), err);
		if (rc) {
			done(arg, rc, err);
			return;
		}
		where = path;
	}
	if (sec && (rc = app_secondaries_create(t, s, cntlid, sec, &secs, err))) {
		done(arg, rc, err);
		return;
	}
	rc = app_listener_function(t, where, manager, &fn, err);
	if (rc) {
		app_secondaries_free(secs);
		done(arg, rc, err);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l || !(l->listen_traddr = strdup(traddr))) {
		free(l);
		app_secondaries_free(secs);
		if (fn->implicit && app_function_destroy(t, fn, err))
			LOG_ERR(APP_LOG, "%s: %s", s->nqn, err);
		done(arg, -ENOMEM, "out of memory");
		return;
	}
	l->s = s;
	l->cntlid = cntlid;
	l->secs = secs;
	snprintf(l->listen_trtype, sizeof(l->listen_trtype), "%s", canon);
	app_listener_go(t, l, fn, bus, done, arg);
}

void app_listener_add_secondary(struct app_target *t, struct app_listener *primary,
				struct app_secondary *sec, const char *socket, app_done_fn done,
				void *arg)
{
	struct app_subsys *s = primary->s;
	struct app_function *fn;
	struct app_listener *l;
	char err[APP_ERR_LEN];
	int rc;

	if (s->deleting || s->pool || s->pool_creating || t->shutting_down) {
		snprintf(err, APP_ERR_LEN, "subsystem %s cannot take a secondary controller now",
			 s->nqn);
		done(arg, -EBUSY, err);
		return;
	}
	rc = app_function_create(t, primary->fn->mgr, NULL, socket, true, &fn, err);
	if (rc) {
		done(arg, rc, err);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l || !(l->listen_traddr = strdup(socket))) {
		free(l);
		if (app_function_destroy(t, fn, err))
			LOG_ERR(APP_LOG, "%s: %s", s->nqn, err);
		done(arg, -ENOMEM, "out of memory");
		return;
	}
	l->s = s;
	l->cntlid = app_secondary_scid(sec);
	l->sec = sec;
	snprintf(l->listen_trtype, sizeof(l->listen_trtype), "%s", primary->listen_trtype);
	app_listener_go(t, l, fn, NULL, done, arg);
}

static void app_listener_unplugged(void *arg, int rc, const char *message)
{
	struct app_listener *l = arg;
	char msg[APP_ERR_LEN];

	l->qmp = NULL;
	if (rc) {
		struct ctrlr_stats st;

		/* Whether the guest's driver shut the controller down (CC.SHN) tells a
		 * released device from one pulled away. */
		ctrlr_get_stats(pcie_ctrlr_core(l->pc), &st);
		snprintf(msg, sizeof(msg), "device_del of %s: %s (%s); endpoint closed anyway",
			 l->fn->vuid, message,
			 st.shutdowns > l->shutdowns_at_detach
			     ? "the guest had released it: controller shut down"
			     : "the guest had not shut the controller down");
	} else {
		LOG_INFO(APP_LOG, "%s: controller %u (%s) released by the guest", l->s->nqn,
			 l->cntlid, l->fn->vuid);
	}
	app_listener_pend(l, rc, rc ? msg : NULL);
	app_listener_teardown(l, app_listener_finish_pending);
}

/* Starts the unplug of a live listener; done runs once, after its teardown. */
void app_listener_detach(struct app_target *t, struct app_listener *l, app_done_fn done,
			 void *arg)
{
	struct json_object *cmd, *args;
	struct ctrlr_stats st;
	char id[128], err[APP_ERR_LEN];
	int rc;

	/* A primary's secondaries go first; this runs again once they are gone. */
	if (l->secs && app_secondaries_close(l, done, arg))
		return;
	l->done = done;
	l->done_arg = arg;
	if (!l->fn->bus || t->shutting_down) {
		app_listener_pend(l, 0, NULL);
		app_listener_teardown(l, app_listener_finish_pending);
		return;
	}
	app_qdev_id(l->fn, id, sizeof(id));
	cmd = json_object_new_object();
	args = json_object_new_object();
	json_object_object_add(args, "id", json_object_new_string(id));
	json_object_object_add(cmd, "execute", json_object_new_string("device_del"));
	json_object_object_add(cmd, "arguments", args);
	l->state = APP_LISTENER_DETACHING;
	ctrlr_get_stats(pcie_ctrlr_core(l->pc), &st);
	l->shutdowns_at_detach = st.shutdowns;
	rc = app_qmp_run(t->loop, l->fn->mgr->qmp_socket, cmd, id, APP_HOTPLUG_TIMEOUT_US,
			 app_listener_unplugged, l, &l->qmp);
	if (rc == -ECONNREFUSED || rc == -ENOENT) {
		/* No QEMU listens any more: the device went with it; nothing to unplug. */
		LOG_WARN(APP_LOG, "%s: QEMU of manager %s is gone (%s): closing %s", l->s->nqn,
			 l->fn->mgr->name, strerror(-rc), l->fn->vuid);
		app_listener_unplugged(l, 0, NULL);
		return;
	}
	if (rc) {
		snprintf(err, sizeof(err), "cannot reach QMP socket %s: %s", l->fn->mgr->qmp_socket,
			 strerror(-rc));
		app_listener_unplugged(l, rc, err);
	}
}

/* True if traddr names l: its VUID, socket path, or the traddr it was added with. */
static bool app_listener_matches(const struct app_listener *l, const char *traddr)
{
	return !traddr || !strcmp(traddr, l->fn->vuid) || !strcmp(traddr, l->fn->socket_path) ||
	       (l->listen_traddr && !strcmp(traddr, l->listen_traddr));
}

/* A listener removal of a subsystem whose CNTLIDs come from the cluster: once the listener is
 * gone, its CNTLID is released there, then the remover hears of it. */
struct app_listener_release {
	struct app_target *t;
	struct app_subsys *s;
	char *traddr;
	uint16_t cntlid;
	app_done_fn done;
	void *arg;
};

static void app_listener_released(void *arg, int rc, uint16_t cntlid, const char *err)
{
	struct app_listener_release *r = arg;

	(void)cntlid;
	/* The listener is gone either way; a CNTLID left claimed is taken back by the next
	 * listener at the same traddr of this host. */
	if (rc)
		LOG_ERR(APP_LOG, "%s (CNTLID %u stays claimed in the cluster)", err, r->cntlid);
	r->done(r->arg, 0, NULL);
	free(r->traddr);
	free(r);
}

static void app_listener_removed(void *arg, int rc, const char *message)
{
	struct app_listener_release *r = arg;
	char err[APP_ERR_LEN];

	if (!rc && !r->t->shutting_down) {
		rc = app_cluster_cntlid_release(r->t, r->s, r->traddr, r->cntlid,
						app_listener_released, r, err);
		if (!rc)
			return;
		LOG_ERR(APP_LOG, "%s (CNTLID %u stays claimed in the cluster)", err, r->cntlid);
		rc = 0;
	}
	r->done(r->arg, rc, message);
	free(r->traddr);
	free(r);
}

void app_listener_remove(struct app_target *t, struct app_subsys *s, const char *traddr,
			 app_done_fn done, void *arg)
{
	struct app_listener *l;
	char err[APP_ERR_LEN];

	if (!s->listeners) {
		snprintf(err, APP_ERR_LEN, "subsystem %s has no listener", s->nqn);
		done(arg, -ENOENT, err);
		return;
	}
	for (l = s->listeners; l && !(l->fn && app_listener_matches(l, traddr)); l = l->next)
		;
	if (!l) {
		snprintf(err, APP_ERR_LEN, "subsystem %s has no listener at %s", s->nqn, traddr);
		done(arg, -ENOENT, err);
		return;
	}
	if (l->state != APP_LISTENER_LIVE || s->deleting) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: a hotplug is in progress at %s", s->nqn,
			 l->fn->vuid);
		done(arg, -EBUSY, err);
		return;
	}
	if (l->sec) {
		snprintf(err, APP_ERR_LEN,
			 "controller %u is a secondary controller of controller %u: the primary's "
			 "host takes it offline (Virtualization Management)",
			 l->cntlid, app_secondary_pcid(l));
		done(arg, -EPERM, err);
		return;
	}
	if (app_subsys_cluster_cntlid(s)) {
		struct app_listener_release *r = calloc(1, sizeof(*r));

		if (!r || !(r->traddr = strdup(l->listen_traddr))) {
			free(r);
			done(arg, -ENOMEM, "out of memory");
			return;
		}
		r->t = t;
		r->s = s;
		r->cntlid = l->cntlid;
		r->done = done;
		r->arg = arg;
		return app_listener_detach(t, l, app_listener_removed, r);
	}
	app_listener_detach(t, l, done, arg);
}

static void app_subsys_delete_step(struct app_subsys *s);

/* A listener of a subsystem being deleted is gone: remember its error, go on. */
static void app_subsys_listener_gone(void *arg, int rc, const char *message)
{
	struct app_subsys *s = arg;

	if (rc && !s->del_rc) {
		s->del_rc = rc;
		snprintf(s->del_msg, sizeof(s->del_msg), "%s", message ? message : "");
	}
	app_subsys_delete_step(s);
}

/* Detaches the next listener, or, with none left, frees s and reports the first error. A
 * listener's teardown calls back into here, so each step is one listener deep. */
static void app_subsys_delete_step(struct app_subsys *s)
{
	app_done_fn done;
	void *arg;
	char msg[APP_ERR_LEN];
	int rc;

	if (s->listeners) {
		app_listener_detach(s->t, s->listeners, app_subsys_listener_gone, s);
		return;
	}
	done = s->del_done;
	arg = s->del_arg;
	rc = s->del_rc;
	snprintf(msg, sizeof(msg), "%s", s->del_msg);
	app_subsys_free(s->t, s);
	done(arg, rc, rc ? msg : NULL);
}

void app_subsys_delete(struct app_target *t, struct app_subsys *s, app_done_fn done, void *arg)
{
	char err[APP_ERR_LEN];

	(void)t;
	if (app_subsys_busy(s) || s->pool_creating) {
		snprintf(err, APP_ERR_LEN, "subsystem %s: a hotplug is in progress", s->nqn);
		done(arg, -EBUSY, err);
		return;
	}
	s->deleting = true;
	s->del_done = done;
	s->del_arg = arg;
	s->del_rc = 0;
	app_subsys_delete_step(s);
}

int app_subsys_add_host(struct app_subsys *s, const char *host, char *err)
{
	char **hosts, *copy;

	if (!*host || strlen(host) > 223) {
		snprintf(err, APP_ERR_LEN, "host NQN must be 1 to 223 bytes");
		return -EINVAL;
	}
	for (unsigned int i = 0; i < s->nr_hosts; i++) {
		if (!strcmp(s->hosts[i], host)) {
			snprintf(err, APP_ERR_LEN, "host %s is already allowed on %s", host, s->nqn);
			return -EEXIST;
		}
	}
	copy = strdup(host);
	hosts = copy ? realloc(s->hosts, (s->nr_hosts + 1) * sizeof(*hosts)) : NULL;
	if (!hosts) {
		free(copy);
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	hosts[s->nr_hosts++] = copy;
	s->hosts = hosts;
	return 0;
}

int app_subsys_remove_host(struct app_subsys *s, const char *host, char *err)
{
	for (unsigned int i = 0; i < s->nr_hosts; i++) {
		if (!strcmp(s->hosts[i], host)) {
			free(s->hosts[i]);
			s->hosts[i] = s->hosts[--s->nr_hosts];
			return 0;
		}
	}
	snprintf(err, APP_ERR_LEN, "host %s is not allowed on %s", host, s->nqn);
	return -ENOENT;
}
