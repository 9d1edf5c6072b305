/* app/app_secondary.c - secondary controllers (issue 35): a listener added with `secondaries`
 * is a primary controller (controller/virt/) whose host assigns flexible resources to them with
 * Virtualization Management and brings them online and offline. Online, a secondary is a
 * listener of its own: a function at its socket (DIR/sec<CNTLID>, or <the primary's
 * socket>.sec<CNTLID>), on the primary's manager, hot-plugged into the guest when the manager has
 * a QMP socket; offline, that listener is unplugged and closed. Each secondary runs its changes
 * one at a time in order (an offline asked while the online runs waits for it). The assignment is
 * the primary controller's state (its state file); a listener added again, a daemon restarted,
 * brings the secondaries that were online back. Main thread. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/app_internal.h"
#include "common/log.h"
#include "transport/pcie.h"

/* A change one secondary is asked for: online with resources, offline, or closed with its
 * primary (the listener goes, the controller's state stays). */
struct app_sec_req {
	bool online, close;
	uint16_t nvq, nvi;
	void (*done)(void *arg, int rc);
	void *arg;
	struct app_sec_req *next;
};

struct app_secondary {
	struct app_secondaries *secs;
	uint16_t scid;
	char socket[108]; /* a unix socket path's limit (sun_path) */
	uint16_t nvq, nvi;	/* of its listener */
	struct app_listener *l; /* while it has one */
	struct app_sec_req *head, *tail;
	bool running;
};

struct app_secondaries {
	struct app_target *t;
	struct app_listener *primary;
	struct app_sec_opts o; /* as resolved (defaults filled in) */
	char *dir;
	bool closing, closed;
	uint32_t closes;
	app_done_fn close_done;
	void *close_arg;
	struct app_secondary sec[CTRLR_VIRT_MAX_SECONDARIES];
};

static void app_sec_next(struct app_secondary *sec);

uint16_t app_secondary_scid(const struct app_secondary *sec)
{
	return sec->scid;
}

uint16_t app_secondary_pcid(const struct app_listener *l)
{
	return l->sec ? l->sec->secs->primary->cntlid : 0;
}

bool app_secondaries_cntlid_taken(const struct app_subsys *s, uint16_t id)
{
	for (const struct app_listener *l = s->listeners; l; l = l->next) {
		if (!l->secs)
			continue;
		for (uint32_t i = 0; i < l->secs->o.count; i++)
			if (l->secs->sec[i].scid == id)
				return true;
	}
	return false;
}

/* ---- options ---- */

static uint32_t app_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t app_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Fills the defaults in and checks o against a primary of io_queues I/O queue pairs and
 * io_queues + 1 vectors. */
static int app_sec_resolve(struct app_sec_opts *o, uint32_t io_queues, char *err)
{
	uint32_t n = o->count;

	if (n > CTRLR_VIRT_MAX_SECONDARIES) {
		snprintf(err, APP_ERR_LEN, "secondaries %u: at most %u (a Secondary Controller List's)",
			 n, CTRLR_VIRT_MAX_SECONDARIES);
		return -EINVAL;
	}
	if (io_queues < 3) {
		snprintf(err, APP_ERR_LEN,
			 "secondaries need a primary of 3 I/O queue pairs or more (it has %u)",
			 io_queues);
		return -EINVAL;
	}
	/* By default each secondary can have an admin queue, 3 I/O queue pairs and 2 vectors, as
	 * far as the primary's queues go. */
	if (!o->vq_flexible)
		o->vq_flexible = app_min(io_queues - 1, 4 * n);
	if (!o->vi_flexible)
		o->vi_flexible = app_min(io_queues, 2 * n);
	if (o->vq_flexible > io_queues - 1) {
		snprintf(err, APP_ERR_LEN,
			 "vq_flexible %u: at most %u (the primary has %u I/O queue pairs and keeps "
			 "its admin queue and one of them)",
			 o->vq_flexible, io_queues - 1, io_queues);
		return -EINVAL;
	}
	if (o->vi_flexible > io_queues) {
		snprintf(err, APP_ERR_LEN,
			 "vi_flexible %u: at most %u (the primary has %u vectors and keeps one)",
			 o->vi_flexible, io_queues, io_queues + 1);
		return -EINVAL;
	}
	if (o->vq_flexible < 2) {
		snprintf(err, APP_ERR_LEN,
			 "vq_flexible %u: a secondary needs 2 VQ resources to go online (its admin "
			 "queue and an I/O queue pair)",
			 o->vq_flexible);
		return -EINVAL;
	}
	if (!o->max_vq)
		o->max_vq = app_min(o->vq_flexible, app_max(2, o->vq_flexible / n));
	if (!o->max_vi)
		o->max_vi = app_max(1, o->vi_flexible / n);
	if (o->max_vq < 2 || o->max_vq > o->vq_flexible) {
		snprintf(err, APP_ERR_LEN, "max_vq_per_secondary %u: 2 to vq_flexible (%u)", o->max_vq,
			 o->vq_flexible);
		return -EINVAL;
	}
	if (o->max_vi < 1 || o->max_vi > o->vi_flexible) {
		snprintf(err, APP_ERR_LEN, "max_vi_per_secondary %u: 1 to vi_flexible (%u)", o->max_vi,
			 o->vi_flexible);
		return -EINVAL;
	}
	return 0;
}

int app_secondaries_create(struct app_target *t, struct app_subsys *s, uint16_t primary_cntlid,
			   const struct app_sec_opts *o, struct app_secondaries **out, char *err)
{
	struct app_secondaries *secs;
	struct app_sec_opts r = *o;
	struct stat st;
	uint32_t got = 0;
	int rc;

	*out = NULL;
	if (!o->count) {
		if (o->vq_flexible || o->vi_flexible || o->max_vq || o->max_vi || o->dir) {
			snprintf(err, APP_ERR_LEN, "secondary controller options without secondaries");
			return -EINVAL;
		}
		return 0;
	}
	rc = app_sec_resolve(&r, app_transport_io_queues(t), err);
	if (rc)
		return rc;
	/* Namespace Management keeps a pool's subsystem to one controller. */
	if (s->pool || s->pool_creating) {
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s has a namespace pool: it has one controller, no secondaries",
			 s->nqn);
		return -EBUSY;
	}
	if (o->dir && (stat(o->dir, &st) || !S_ISDIR(st.st_mode))) {
		snprintf(err, APP_ERR_LEN, "secondary_dir %s is not a directory", o->dir);
		return -ENOTDIR;
	}
	secs = calloc(1, sizeof(*secs));
	if (!secs || (o->dir && !(secs->dir = strdup(o->dir)))) {
		free(secs);
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	secs->t = t;
	r.dir = secs->dir;
	secs->o = r;
	/* The lowest CNTLIDs of the range nobody has, after the primary's. */
	for (uint32_t id = s->min_cntlid; id <= s->max_cntlid && got < r.count; id++) {
		if (id == primary_cntlid || app_subsys_listener_by_cntlid(s, (uint16_t)id) ||
		    app_secondaries_cntlid_taken(s, (uint16_t)id))
			continue;
		secs->sec[got].secs = secs;
		secs->sec[got++].scid = (uint16_t)id;
	}
	if (got < r.count) {
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s: %u secondary controllers need as many free CNTLIDs of %u..%u",
			 s->nqn, r.count, s->min_cntlid, s->max_cntlid);
		app_secondaries_free(secs);
		return -ENOSPC;
	}
	*out = secs;
	return 0;
}

void app_secondaries_free(struct app_secondaries *secs)
{
	if (!secs)
		return;
	for (uint32_t i = 0; i < secs->o.count; i++) {
		struct app_secondary *sec = &secs->sec[i];

		/* Closed before the primary goes; a listener left would not find its slot. */
		if (sec->l) {
			LOG_ERR(APP_LOG, "secondary controller %u outlives its primary", sec->scid);
			sec->l->sec = NULL;
		}
		while (sec->head) {
			struct app_sec_req *r = sec->head;

			sec->head = r->next;
			r->done(r->arg, -ECANCELED);
			free(r);
		}
	}
	free(secs->dir);
	free(secs);
}

void app_secondaries_opts(const struct app_listener *l, struct app_sec_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (l->secs)
		*o = l->secs->o;
}

/* ---- the changes of one secondary ---- */

static void app_sec_finish(struct app_secondary *sec, int rc)
{
	struct app_sec_req *r = sec->head;

	sec->head = r->next;
	if (!sec->head)
		sec->tail = NULL;
	sec->running = false;
	r->done(r->arg, rc);
	free(r);
	app_sec_next(sec);
}

static void app_sec_added(void *arg, int rc, const char *message)
{
	struct app_secondary *sec = arg;

	if (rc)
		LOG_ERR(APP_LOG, "secondary controller %u: %s", sec->scid, message ? message : "");
	else
		LOG_INFO(APP_LOG, "secondary controller %u online at %s (%u VQ, %u VI resources)",
			 sec->scid, sec->socket, sec->nvq, sec->nvi);
	app_sec_finish(sec, rc);
}

static void app_sec_removed(void *arg, int rc, const char *message)
{
	struct app_secondary *sec = arg;

	if (rc)
		LOG_WARN(APP_LOG, "secondary controller %u: %s", sec->scid, message ? message : "");
	else
		LOG_INFO(APP_LOG, "secondary controller %u offline: %s closed", sec->scid,
			 sec->socket);
	app_sec_finish(sec, rc);
}

static void app_sec_next(struct app_secondary *sec)
{
	struct app_secondaries *secs = sec->secs;
	struct app_sec_req *r = sec->head;

	if (sec->running || !r)
		return;
	sec->running = true;
	if (r->online) {
		if (sec->l)
			return app_sec_finish(sec, 0);
		sec->nvq = r->nvq;
		sec->nvi = r->nvi;
		app_listener_add_secondary(secs->t, secs->primary, sec, sec->socket, app_sec_added,
					   sec);
		return;
	}
	if (!sec->l)
		return app_sec_finish(sec, 0);
	app_listener_detach(secs->t, sec->l, app_sec_removed, sec);
}

static int app_sec_ask(struct app_secondary *sec, bool online, bool close, uint16_t nvq,
		       uint16_t nvi, void (*done)(void *arg, int rc), void *arg)
{
	struct app_sec_req *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	*r = (struct app_sec_req){.online = online, .close = close, .nvq = nvq, .nvi = nvi,
				  .done = done, .arg = arg};
	if (sec->tail)
		sec->tail->next = r;
	else
		sec->head = r;
	sec->tail = r;
	app_sec_next(sec);
	return 0;
}

/* The controller's ops (ctrlr_virt_ops). */
static void app_sec_set_online(void *ctx, uint16_t scid, bool online, uint16_t nvq, uint16_t nvi,
			       void (*done)(void *arg, int rc), void *arg)
{
	struct app_secondaries *secs = ctx;
	struct app_secondary *sec = NULL;
	int rc;

	for (uint32_t i = 0; i < secs->o.count; i++)
		if (secs->sec[i].scid == scid)
			sec = &secs->sec[i];
	if (!sec)
		return done(arg, -ENOENT);
	/* The primary is going: its closing takes every secondary's listener down anyway. */
	if (secs->closing)
		return done(arg, online ? -EBUSY : 0);
	rc = app_sec_ask(sec, online, false, nvq, nvi, done, arg);
	if (rc)
		done(arg, rc);
}

static const struct ctrlr_virt_ops app_sec_ops = {
    .set_online = app_sec_set_online,
};

/* ---- the primary's life ---- */

int app_secondaries_bind(struct app_listener *l, char *err)
{
	struct app_secondaries *secs = l->secs;
	struct ctrlr_virt_config cfg = {
	    .nr_secondaries = (uint16_t)secs->o.count,
	    .vq_flexible = (uint16_t)secs->o.vq_flexible,
	    .vi_flexible = (uint16_t)secs->o.vi_flexible,
	    .max_vq = (uint16_t)secs->o.max_vq,
	    .max_vi = (uint16_t)secs->o.max_vi,
	};
	char why[160];
	int rc;

	secs->primary = l;
	for (uint32_t i = 0; i < secs->o.count; i++) {
		struct app_secondary *sec = &secs->sec[i];
		int n = secs->dir ? snprintf(sec->socket, sizeof(sec->socket), "%s/sec%u",
					     secs->dir, sec->scid)
				  : snprintf(sec->socket, sizeof(sec->socket), "%s.sec%u",
					     l->fn->socket_path, sec->scid);

		if (n < 0 || (size_t)n >= sizeof(sec->socket)) {
			snprintf(err, APP_ERR_LEN,
				 "the socket of secondary controller %u would be longer than a unix "
				 "socket path may be: give a shorter secondary_dir",
				 sec->scid);
			return -ENAMETOOLONG;
		}
		cfg.scid[i] = sec->scid;
	}
	rc = ctrlr_virt_bind(pcie_ctrlr_core(l->pc), &cfg, &app_sec_ops, secs, why, sizeof(why));
	if (rc)
		snprintf(err, APP_ERR_LEN, "controller %u of %s: %s", l->cntlid, l->s->nqn, why);
	return rc;
}

static void app_sec_resumed(void *arg, int rc)
{
	struct app_secondary *sec = arg;
	struct app_listener *p = sec->secs->primary;

	/* Its function could not be made again: the controller has it offline (its state file
	 * says so with its next write). */
	if (rc && rc != -ECANCELED && p->pc)
		ctrlr_virt_set_offline(pcie_ctrlr_core(p->pc), sec->scid);
}

void app_secondaries_resume(struct app_listener *l)
{
	struct app_secondaries *secs = l->secs;
	struct ctrlr_virt_info *info;

	if (!secs || !l->pc)
		return;
	info = malloc(sizeof(*info));
	if (!info) {
		LOG_ERR(APP_LOG, "%s: no memory to bring secondary controllers back online",
			l->s->nqn);
		return;
	}
	ctrlr_virt_get_info(pcie_ctrlr_core(l->pc), info);
	for (uint32_t i = 0; i < secs->o.count; i++) {
		struct app_secondary *sec = &secs->sec[i];

		if (!info->sec[i].online)
			continue;
		LOG_INFO(APP_LOG, "%s: secondary controller %u was online: back online", l->s->nqn,
			 sec->scid);
		if (app_sec_ask(sec, true, false, info->sec[i].nvq, info->sec[i].nvi,
				app_sec_resumed, sec))
			app_sec_resumed(sec, -ENOMEM);
	}
	free(info);
}

static void app_sec_closed(void *arg, int rc)
{
	struct app_secondaries *secs = arg;

	(void)rc; /* a listener closes whatever its unplug said */
	if (--secs->closes)
		return;
	secs->closed = true;
	secs->closing = false;
	app_listener_detach(secs->t, secs->primary, secs->close_done, secs->close_arg);
}

bool app_secondaries_close(struct app_listener *l, app_done_fn done, void *arg)
{
	struct app_secondaries *secs = l->secs;

	if (secs->closed)
		return false;
	if (secs->closing) {
		done(arg, -EBUSY, "its secondary controllers are being closed");
		return true;
	}
	secs->closing = true;
	secs->close_done = done;
	secs->close_arg = arg;
	l->state = APP_LISTENER_DETACHING;
	secs->closes = 1; /* ours, until every secondary was asked */
	for (uint32_t i = 0; i < secs->o.count; i++) {
		secs->closes++;
		if (app_sec_ask(&secs->sec[i], false, true, 0, 0, app_sec_closed, secs))
			secs->closes--; /* no memory: its listener, if any, goes with the subsystem */
	}
	app_sec_closed(secs, 0);
	return true;
}

/* ---- a secondary's listener ---- */

void app_secondary_config(const struct app_listener *l, struct ctrlr_config *c)
{
	if (!l->sec)
		return;
	/* Its admin queue takes one VQ resource; the I/O queue pairs the others. */
	c->max_io_queues = (uint16_t)(l->sec->nvq - 1u);
	c->num_vectors = l->sec->nvi;
}

int app_secondary_started(struct app_listener *l, char *err)
{
	struct app_secondary *sec = l->sec;
	int rc = ctrlr_virt_set_secondary(pcie_ctrlr_core(l->pc), app_secondary_pcid(l), sec->nvq,
					  sec->nvi);

	if (rc) {
		snprintf(err, APP_ERR_LEN, "controller %u cannot be a secondary controller: %s",
			 l->cntlid, strerror(-rc));
		return rc;
	}
	sec->l = l;
	return 0;
}

void app_secondary_gone(struct app_listener *l)
{
	if (l->sec->l == l)
		l->sec->l = NULL;
}

struct json_object *app_secondaries_describe(const struct app_listener *l)
{
	const struct app_secondaries *secs = l->secs;
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	struct ctrlr_virt_info *info = calloc(1, sizeof(*info));

	if (info && l->pc)
		ctrlr_virt_get_info(pcie_ctrlr_core(l->pc), info);
	json_object_object_add(o, "vq_flexible", json_object_new_int64(secs->o.vq_flexible));
	json_object_object_add(o, "vi_flexible", json_object_new_int64(secs->o.vi_flexible));
	json_object_object_add(o, "max_vq_per_secondary", json_object_new_int64(secs->o.max_vq));
	json_object_object_add(o, "max_vi_per_secondary", json_object_new_int64(secs->o.max_vi));
	if (info && info->primary) {
		json_object_object_add(o, "vq_private", json_object_new_int64(info->vqprt));
		json_object_object_add(o, "vi_private", json_object_new_int64(info->viprt));
		json_object_object_add(o, "vq_primary", json_object_new_int64(info->vqrfap));
		json_object_object_add(o, "vi_primary", json_object_new_int64(info->virfap));
		json_object_object_add(o, "vq_primary_after_reset",
				       json_object_new_int64(info->vqrfap_next));
		json_object_object_add(o, "vi_primary_after_reset",
				       json_object_new_int64(info->virfap_next));
	}
	for (uint32_t i = 0; i < secs->o.count; i++) {
		const struct app_secondary *sec = &secs->sec[i];
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "cntlid", json_object_new_int64(sec->scid));
		json_object_object_add(e, "socket", json_object_new_string(sec->socket));
		if (info && info->primary) {
			json_object_object_add(e, "nvq", json_object_new_int64(info->sec[i].nvq));
			json_object_object_add(e, "nvi", json_object_new_int64(info->sec[i].nvi));
			json_object_object_add(e, "online",
					       json_object_new_boolean(info->sec[i].online));
		}
		json_object_object_add(e, "served", json_object_new_boolean(sec->l != NULL));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "controllers", a);
	free(info);
	return o;
}
