/* app/config_reload.c - reloading the configuration file (systemctl reload, SIGHUP,
 * nvmf_emu_reload_config): the file is compared, object by object, with what the target runs
 * (rpc_config_build, save_config's form), and only the differences are applied, through the same
 * RPC methods a configuration replay calls: objects no longer in the file are deleted (listeners
 * first, then namespaces and hosts, subsystems, block devices, functions, managers), changed ones
 * are deleted and made again (a delay bdev's latencies are only updated), new ones are made in
 * the file's order. A guest attached to a listener the reload leaves alone stays attached, and
 * sees namespaces come and go as it would with the RPC methods. What cannot change without
 * dropping every guest (the transport, a subsystem's parameters, a capacity pool) is refused
 * before anything is changed: a restart applies it.
 *
 * Parameters are compared as the file gives them: a parameter the file leaves out keeps its
 * running value (save_config writes defaults and generated UUIDs the file need not repeat). Calls
 * save_config never writes (log_set_flag, ...) run again only when the file changed them since it
 * was last applied. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How long a call refused with -EBUSY (a bdev still released) is tried again. */
#define APP_RELOAD_BUSY_RETRY_US (10u * 1000000u)

/* What an entry makes, in the order objects are removed. */
enum config_reload_kind {
	RK_LISTENER,
	RK_NS,
	RK_HOST,
	RK_POOL,
	RK_SUBSYS,
	RK_BDEV,
	RK_FUNCTION,
	RK_MANAGER,
	RK_METRICS,
	RK_TRANSPORT,
	RK_CALL, /* any other method: an action, not an object */
};

struct config_reload_entry {
	const char *method;
	struct json_object *params; /* borrowed from its configuration */
	enum config_reload_kind kind;
	char key[384];
	char nqn[256];	       /* subsystem-owned kinds */
	char bdev[128];	       /* RK_NS: its bdev; RK_BDEV: its name */
	bool matched, removed; /* running entries: kept as they are / to be deleted */
};

struct config_reload_list {
	struct config_reload_entry *e;
	size_t n;
};

struct config_reload {
	struct app_target *t;
	struct json_object *want_root, *plan_root, *calls;
	struct config_reload_list want, cur;
	app_done_fn done;
	void *arg;
	char err[APP_ERR_LEN];
};

static const char *config_reload_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

static int64_t config_reload_int(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

static struct json_object *config_reload_obj(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* Kind and identity of an entry (`cur`: the running configuration, whose namespaces always have
 * an NSID; the file's may leave it out: matched by bdev then, see config_reload_match). */
static void config_reload_classify(struct config_reload_entry *e)
{
	const char *m = e->method, *nqn = config_reload_str(e->params, "nqn");
	size_t ml = strlen(m);

	snprintf(e->nqn, sizeof(e->nqn), "%s", nqn);
	if (!strcmp(m, "nvmf_subsystem_add_listener")) {
		e->kind = RK_LISTENER;
		snprintf(
		    e->key, sizeof(e->key), "listener/%s/%s", nqn,
		    config_reload_str(config_reload_obj(e->params, "listen_address"), "traddr"));
	} else if (!strcmp(m, "nvmf_subsystem_add_ns")) {
		struct json_object *ns = config_reload_obj(e->params, "namespace");
		int64_t nsid = config_reload_int(ns, "nsid");

		e->kind = RK_NS;
		snprintf(e->bdev, sizeof(e->bdev), "%s", config_reload_str(ns, "bdev_name"));
		if (nsid > 0)
			snprintf(e->key, sizeof(e->key), "ns/%s/%lld", nqn, (long long)nsid);
		else
			snprintf(e->key, sizeof(e->key), "ns/%s/bdev:%s", nqn, e->bdev);
	} else if (!strcmp(m, "nvmf_subsystem_add_host")) {
		e->kind = RK_HOST;
		snprintf(e->key, sizeof(e->key), "host/%s/%s", nqn,
			 config_reload_str(e->params, "host"));
	} else if (!strcmp(m, "nvmf_emu_ns_pool_create")) {
		e->kind = RK_POOL;
		snprintf(e->key, sizeof(e->key), "pool/%s", nqn);
	} else if (!strcmp(m, "nvmf_create_subsystem")) {
		e->kind = RK_SUBSYS;
		snprintf(e->key, sizeof(e->key), "subsys/%s", nqn);
	} else if (!strcmp(m, "bdev_error_create")) {
		/* SPDK's error bdev names itself EE_<base>. */
		e->kind = RK_BDEV;
		snprintf(e->bdev, sizeof(e->bdev), "EE_%s",
			 config_reload_str(e->params, "base_name"));
		snprintf(e->key, sizeof(e->key), "bdev/%s", e->bdev);
	} else if (!strncmp(m, "bdev_", 5) && ml > 7 && !strcmp(m + ml - 7, "_create")) {
		e->kind = RK_BDEV;
		snprintf(e->bdev, sizeof(e->bdev), "%s", config_reload_str(e->params, "name"));
		snprintf(e->key, sizeof(e->key), "bdev/%s", e->bdev);
	} else if (!strcmp(m, "nvmf_emu_create_function") ||
		   !strcmp(m, "nvmf_doca_create_function")) {
		e->kind = RK_FUNCTION;
		snprintf(e->key, sizeof(e->key), "function/%s",
			 config_reload_str(e->params, "vuid"));
	} else if (!strcmp(m, "nvmf_emu_create_manager")) {
		e->kind = RK_MANAGER;
		snprintf(e->key, sizeof(e->key), "manager/%s",
			 config_reload_str(e->params, "name"));
	} else if (!strcmp(m, "nvmf_emu_metrics_start")) {
		e->kind = RK_METRICS;
		snprintf(e->key, sizeof(e->key), "metrics");
	} else if (!strcmp(m, "nvmf_create_transport")) {
		e->kind = RK_TRANSPORT;
		snprintf(e->key, sizeof(e->key), "transport");
	} else {
		e->kind = RK_CALL;
		snprintf(e->key, sizeof(e->key), "call/%s/%.300s", m,
			 e->params
			     ? json_object_to_json_string_ext(e->params, JSON_C_TO_STRING_PLAIN)
			     : "null");
	}
}

/* Flattens {"subsystems": [{"config": [{"method", "params"}]}]}. 0 or -EINVAL with err. */
static int config_reload_flatten(struct json_object *root, struct config_reload_list *l, char *err)
{
	struct json_object *subs;
	size_t total = 0;

	if (!json_object_object_get_ex(root, "subsystems", &subs) ||
	    !json_object_is_type(subs, json_type_array)) {
		snprintf(err, APP_ERR_LEN, "not a configuration file (no \"subsystems\" array)");
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(subs); i++) {
		struct json_object *config = NULL;

		json_object_object_get_ex(json_object_array_get_idx(subs, i), "config", &config);
		if (config && json_object_is_type(config, json_type_array))
			total += json_object_array_length(config);
	}
	l->e = calloc(total ? total : 1, sizeof(*l->e));
	if (!l->e) {
		snprintf(err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < json_object_array_length(subs); i++) {
		struct json_object *s = json_object_array_get_idx(subs, i), *config = NULL;

		if (!json_object_is_type(s, json_type_object) ||
		    !json_object_object_get_ex(s, "config", &config)) {
			snprintf(err, APP_ERR_LEN, "subsystems[%zu]: no \"config\" array", i);
			return -EINVAL;
		}
		if (!config)
			continue;
		if (!json_object_is_type(config, json_type_array)) {
			snprintf(err, APP_ERR_LEN, "subsystems[%zu]: no \"config\" array", i);
			return -EINVAL;
		}
		for (size_t j = 0; j < json_object_array_length(config); j++) {
			struct json_object *item = json_object_array_get_idx(config, j), *m,
					   *p = NULL;
			struct config_reload_entry *e = &l->e[l->n];

			if (!json_object_object_get_ex(item, "method", &m) ||
			    !json_object_is_type(m, json_type_string)) {
				snprintf(err, APP_ERR_LEN, "an entry has no \"method\" string");
				return -EINVAL;
			}
			json_object_object_get_ex(item, "params", &p);
			e->method = json_object_get_string(m);
			e->params = p;
			config_reload_classify(e);
			l->n++;
		}
	}
	return 0;
}

/* Whether what the file says (`want`) holds of the running value (`cur`): every member the file
 * gives that the running configuration has is equal (objects member by member, the same way;
 * transport names and address families without regard to case). */
static bool config_reload_same(struct json_object *want, struct json_object *cur, const char *key)
{
	enum json_type wt = json_object_get_type(want), ct = json_object_get_type(cur);

	if ((wt == json_type_int || wt == json_type_double) &&
	    (ct == json_type_int || ct == json_type_double))
		return json_object_get_double(want) == json_object_get_double(cur);
	if (wt != ct)
		return false;
	if (wt == json_type_string && key && (!strcmp(key, "trtype") || !strcmp(key, "adrfam")))
		return !strcasecmp(json_object_get_string(want), json_object_get_string(cur));
	if (wt == json_type_object) {
		json_object_object_foreach(want, k, v)
		{
			struct json_object *c;

			/* A member the running configuration does not write is one nvme-emu accepts
			 * and ignores (SPDK's tuning knobs): nothing to compare. */
			if (!json_object_object_get_ex(cur, k, &c))
				continue;
			if (!config_reload_same(v, c, k))
				return false;
		}
		return true;
	}
	return json_object_equal(want, cur);
}

/* The running entry the file's entry stands for, or NULL. */
static struct config_reload_entry *config_reload_match(struct config_reload *r,
						       const struct config_reload_entry *w)
{
	for (size_t i = 0; i < r->cur.n; i++) {
		struct config_reload_entry *c = &r->cur.e[i];

		if (c->kind != w->kind)
			continue;
		if (!strcmp(c->key, w->key))
			return c;
		/* A namespace the file gives no NSID: the one on the same bdev. */
		if (w->kind == RK_NS && strstr(w->key, "/bdev:") && !strcmp(c->nqn, w->nqn) &&
		    !strcmp(c->bdev, w->bdev))
			return c;
	}
	return NULL;
}

/* Whether the file last applied had this very call (RK_CALL entries). */
static bool config_reload_applied_before(struct config_reload *r,
					 const struct config_reload_entry *w)
{
	struct config_reload_list prev = {0};
	char err[APP_ERR_LEN];
	bool found = false;

	if (!r->t->svc.applied || config_reload_flatten(r->t->svc.applied, &prev, err)) {
		free(prev.e);
		return false;
	}
	for (size_t i = 0; i < prev.n && !found; i++)
		found = !strcmp(prev.e[i].key, w->key);
	free(prev.e);
	return found;
}

static void config_reload_add_call(struct config_reload *r, const char *method,
				   struct json_object *params)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "method", json_object_new_string(method));
	json_object_object_add(o, "params", params);
	json_object_array_add(r->calls, o);
}

/* The call that deletes a running entry's object. */
static void config_reload_add_removal(struct config_reload *r, const struct config_reload_entry *c)
{
	struct json_object *p = json_object_new_object();
	char method[96];

	switch (c->kind) {
	case RK_LISTENER: {
		struct json_object *a = config_reload_obj(c->params, "listen_address"), *na;

		na = json_object_new_object();
		json_object_object_add(na, "trtype",
				       json_object_new_string(config_reload_str(a, "trtype")));
		json_object_object_add(na, "traddr",
				       json_object_new_string(config_reload_str(a, "traddr")));
		json_object_object_add(p, "nqn", json_object_new_string(c->nqn));
		json_object_object_add(p, "listen_address", na);
		config_reload_add_call(r, "nvmf_subsystem_remove_listener", p);
		return;
	}
	case RK_NS:
		json_object_object_add(p, "nqn", json_object_new_string(c->nqn));
		json_object_object_add(p, "nsid",
				       json_object_new_int64(config_reload_int(
					   config_reload_obj(c->params, "namespace"), "nsid")));
		config_reload_add_call(r, "nvmf_subsystem_remove_ns", p);
		return;
	case RK_HOST:
		json_object_object_add(p, "nqn", json_object_new_string(c->nqn));
		json_object_object_add(
		    p, "host", json_object_new_string(config_reload_str(c->params, "host")));
		config_reload_add_call(r, "nvmf_subsystem_remove_host", p);
		return;
	case RK_SUBSYS:
		json_object_object_add(p, "nqn", json_object_new_string(c->nqn));
		config_reload_add_call(r, "nvmf_delete_subsystem", p);
		return;
	case RK_BDEV:
		/* bdev_X_create -> bdev_X_delete, by name. */
		snprintf(method, sizeof(method), "%.*s_delete", (int)(strlen(c->method) - 7),
			 c->method);
		json_object_object_add(p, "name", json_object_new_string(c->bdev));
		config_reload_add_call(r, method, p);
		return;
	case RK_FUNCTION:
		json_object_object_add(
		    p, "vuid", json_object_new_string(config_reload_str(c->params, "vuid")));
		config_reload_add_call(r, "nvmf_emu_destroy_function", p);
		return;
	case RK_MANAGER:
		json_object_object_add(
		    p, "name", json_object_new_string(config_reload_str(c->params, "name")));
		config_reload_add_call(r, "nvmf_emu_delete_manager", p);
		return;
	case RK_METRICS:
		config_reload_add_call(r, "nvmf_emu_metrics_stop", p);
		return;
	default:
		json_object_put(p);
		return;
	}
}

/* A delay bdev whose file entry differs from the running one only in latencies: the updates. */
static bool config_reload_delay_update(struct config_reload *r, const struct config_reload_entry *w,
				       const struct config_reload_entry *c)
{
	static const char *const keys[] = {"avg_read_latency", "p99_read_latency",
					   "avg_write_latency", "p99_write_latency"};
	static const char *const types[] = {"avg_read", "p99_read", "avg_write", "p99_write"};
	struct json_object *rest;
	bool same;

	if (strcmp(w->method, "bdev_delay_create") || strcmp(c->method, w->method))
		return false;
	rest = json_object_new_object();
	json_object_object_foreach(w->params, k, v)
	{
		bool latency = false;

		for (unsigned int i = 0; i < 4; i++)
			latency |= !strcmp(k, keys[i]);
		if (!latency)
			json_object_object_add(rest, k, json_object_get(v));
	}
	same = config_reload_same(rest, c->params, NULL);
	json_object_put(rest);
	if (!same)
		return false;
	for (unsigned int i = 0; i < 4; i++) {
		struct json_object *wv, *cv, *p;

		if (!json_object_object_get_ex(w->params, keys[i], &wv) ||
		    (json_object_object_get_ex(c->params, keys[i], &cv) &&
		     config_reload_same(wv, cv, NULL)))
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "delay_bdev_name", json_object_new_string(w->bdev));
		json_object_object_add(p, "latency_type", json_object_new_string(types[i]));
		json_object_object_add(p, "latency_us", json_object_get(wv));
		config_reload_add_call(r, "bdev_delay_update_latency", p);
	}
	return true;
}

static const char *const config_reload_kind_names[] = {
    [RK_LISTENER] = "listener",	  [RK_NS] = "namespace",     [RK_HOST] = "host",
    [RK_POOL] = "namespace pool", [RK_SUBSYS] = "subsystem", [RK_BDEV] = "bdev",
    [RK_FUNCTION] = "function",	  [RK_MANAGER] = "manager",  [RK_METRICS] = "metrics exporter",
    [RK_TRANSPORT] = "transport", [RK_CALL] = "call",
};

/* The calls, in r->calls. 0, or -EINVAL/-EBUSY with r->err when only a restart can do it. */
static int config_reload_plan(struct config_reload *r)
{
	struct config_reload_entry **adds = calloc(r->want.n ? r->want.n : 1, sizeof(*adds));
	size_t nadds = 0;
	int rc = 0;

	if (!adds) {
		snprintf(r->err, APP_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	/* What stays, what changes, what is new. */
	for (size_t i = 0; i < r->want.n; i++) {
		struct config_reload_entry *w = &r->want.e[i], *c;

		if (w->kind == RK_METRICS && r->t->metrics.from_cmdline)
			continue; /* --metrics owns the exporter */
		if (w->kind == RK_CALL) {
			if (!config_reload_applied_before(r, w))
				adds[nadds++] = w;
			continue;
		}
		c = config_reload_match(r, w);
		if (!c) {
			adds[nadds++] = w;
			continue;
		}
		c->matched = true;
		if (!strcmp(w->method, c->method) && config_reload_same(w->params, c->params, NULL))
			continue;
		if (w->kind == RK_BDEV && config_reload_delay_update(r, w, c))
			continue;
		if (w->kind == RK_TRANSPORT || w->kind == RK_SUBSYS || w->kind == RK_POOL) {
			snprintf(r->err, APP_ERR_LEN,
				 "%s %.100s: parameters differ from the running ones; changing "
				 "them drops every guest: restart to apply them",
				 config_reload_kind_names[w->kind],
				 w->kind == RK_TRANSPORT ? "" : w->nqn);
			rc = -EBUSY;
			goto out;
		}
		/* Deleted and made again. */
		c->removed = true;
		adds[nadds++] = w;
	}
	/* Running objects the file no longer has. */
	for (size_t i = 0; i < r->cur.n; i++) {
		struct config_reload_entry *c = &r->cur.e[i];

		if (c->matched || c->kind == RK_CALL)
			continue;
		if (c->kind == RK_METRICS && r->t->metrics.from_cmdline)
			continue;
		if (c->kind == RK_TRANSPORT || c->kind == RK_POOL) {
			snprintf(r->err, APP_ERR_LEN,
				 "the file has no %s %.100s the daemon runs: removing it needs a "
				 "restart",
				 config_reload_kind_names[c->kind],
				 c->kind == RK_POOL ? c->nqn : "");
			rc = -EBUSY;
			goto out;
		}
		c->removed = true;
	}
	/* A namespace on a bdev being deleted goes (and comes back, when the file keeps it) with
	 * it; what a deleted subsystem had goes with the subsystem. */
	for (size_t i = 0; i < r->cur.n; i++) {
		struct config_reload_entry *b = &r->cur.e[i];

		if (b->kind != RK_BDEV || !b->removed)
			continue;
		for (size_t j = 0; j < r->cur.n; j++) {
			struct config_reload_entry *ns = &r->cur.e[j];
			struct config_reload_entry *w;

			if (ns->kind != RK_NS || ns->removed || strcmp(ns->bdev, b->bdev))
				continue;
			ns->removed = true;
			for (size_t k = 0; k < r->want.n; k++) {
				w = &r->want.e[k];
				if (w->kind == RK_NS && config_reload_match(r, w) == ns) {
					bool queued = false;

					for (size_t a = 0; a < nadds; a++)
						queued |= adds[a] == w;
					if (!queued)
						adds[nadds++] = w;
				}
			}
		}
	}
	for (size_t i = 0; i < r->cur.n; i++) {
		struct config_reload_entry *s = &r->cur.e[i];

		if (s->kind != RK_SUBSYS || !s->removed)
			continue;
		for (size_t j = 0; j < r->cur.n; j++) {
			struct config_reload_entry *o = &r->cur.e[j];

			if (o != s && o->nqn[0] && !strcmp(o->nqn, s->nqn) &&
			    (o->kind == RK_LISTENER || o->kind == RK_NS || o->kind == RK_HOST ||
			     o->kind == RK_POOL)) {
				/* Deleted with the subsystem, not one by one. */
				o->removed = false;
				o->matched = true;
			}
		}
	}
	/* Removals: listeners first ... managers last; stacked bdevs before their bases (the
	 * running configuration lists bases first). */
	for (unsigned int kind = RK_LISTENER; kind <= RK_METRICS; kind++) {
		for (size_t n = r->cur.n; n-- > 0;) {
			size_t i = kind == RK_BDEV ? n : r->cur.n - 1 - n;
			struct config_reload_entry *c = &r->cur.e[i];

			if ((unsigned int)c->kind == kind && c->removed)
				config_reload_add_removal(r, c);
		}
	}
	/* Additions, in the file's order (a valid order to make them in). */
	for (size_t i = 0; i < r->want.n; i++) {
		for (size_t a = 0; a < nadds; a++) {
			if (adds[a] != &r->want.e[i])
				continue;
			config_reload_add_call(r, adds[a]->method,
					       json_object_get(adds[a]->params));
			break;
		}
	}
out:
	free(adds);
	return rc;
}

static void config_reload_free(struct config_reload *r)
{
	json_object_put(r->want_root);
	json_object_put(r->plan_root);
	free(r->want.e);
	free(r->cur.e);
	free(r);
}

static void config_reload_applied(void *arg, int rc, const char *message)
{
	struct config_reload *r = arg;
	app_done_fn done = r->done;
	void *done_arg = r->arg;
	char msg[APP_ERR_LEN];

	if (!rc) {
		/* The file is what runs now: kept for the next reload's calls. */
		json_object_put(r->t->svc.applied);
		r->t->svc.applied = json_object_get(r->want_root);
		LOG_INFO(APP_LOG, "configuration reloaded: %zu change(s)",
			 json_object_array_length(r->calls));
		config_reload_free(r);
		done(done_arg, 0, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "reload stopped at %s; the changes before it stay applied",
		 message ? message : strerror(-rc));
	LOG_ERR(APP_LOG, "%s", msg);
	config_reload_free(r);
	done(done_arg, rc, msg);
}

void app_config_reload(struct app_target *t, const char *path, app_done_fn done, void *arg)
{
	struct config_reload *r = calloc(1, sizeof(*r));
	struct json_object *cur = NULL, *subs, *sect;
	int rc;

	if (!r)
		return done(arg, -ENOMEM, "out of memory");
	r->t = t;
	r->done = done;
	r->arg = arg;
	r->want_root = json_object_from_file(path);
	if (!r->want_root) {
		snprintf(r->err, APP_ERR_LEN, "%s: %s", path, json_util_get_last_err());
		rc = -EINVAL;
		goto out_fail;
	}
	cur = rpc_config_build(t);
	rc = config_reload_flatten(r->want_root, &r->want, r->err);
	if (!rc)
		rc = config_reload_flatten(cur, &r->cur, r->err);
	if (rc)
		goto out_fail;
	r->calls = json_object_new_array();
	r->plan_root = json_object_new_object();
	subs = json_object_new_array();
	sect = json_object_new_object();
	json_object_object_add(sect, "subsystem", json_object_new_string("reload"));
	json_object_object_add(sect, "config", r->calls);
	json_object_array_add(subs, sect);
	json_object_object_add(r->plan_root, "subsystems", subs);
	rc = config_reload_plan(r);
	if (rc)
		goto out_fail;
	LOG_INFO(APP_LOG, "reloading %s: %zu change(s)", path, json_object_array_length(r->calls));
	json_object_put(cur);
	/* The running configuration's entries are no longer needed; the plan holds its own
	 * references to the file's. */
	/* A bdev is released only once its namespace's I/O drained: its deletion may meet
	 * -EBUSY for a moment after the namespace's removal. */
	rc = rpc_config_run(t, r->plan_root, false, APP_RELOAD_BUSY_RETRY_US, config_reload_applied,
			    r);
	if (rc) {
		snprintf(r->err, APP_ERR_LEN, "out of memory");
		goto out_fail_nocur;
	}
	return;

out_fail:
	json_object_put(cur);
out_fail_nocur : {
	char msg[APP_ERR_LEN];

	snprintf(msg, sizeof(msg), "%s", r->err);
	LOG_ERR(APP_LOG, "reload of %s refused: %s", path, msg);
	config_reload_free(r);
	done(arg, rc, msg);
}
}
