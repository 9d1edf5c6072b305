/* app/rpc_config.c - the configuration as SPDK's save_config writes it ({"subsystems": [{
 * "subsystem", "config": [{"method", "params"}]}]}), built from the target's state, and its
 * replay (-c/--json, and the calls of a reload) through the RPC methods, one call after the
 * other. */
#include "app/app_internal.h"
#include "app/metrics_http.h"
#include "app/rpc.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rpc_config_add(struct json_object *config, const char *method,
			   struct json_object *params)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "method", json_object_new_string(method));
	json_object_object_add(o, "params", params);
	json_object_array_add(config, o);
}

static void rpc_config_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

static void rpc_config_int(struct json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static struct json_object *rpc_config_emu(struct app_target *t)
{
	struct json_object *config = json_object_new_array();

	for (struct app_manager *m = t->managers; m; m = m->next) {
		struct json_object *p, *ports;

		if (!m->qmp_socket)
			continue;
		p = json_object_new_object();
		ports = json_object_new_array();
		rpc_config_str(p, "name", m->name);
		rpc_config_str(p, "qmp_socket", m->qmp_socket);
		for (unsigned int i = 0; i < m->nr_ports; i++)
			json_object_array_add(ports, json_object_new_string(m->ports[i]));
		json_object_object_add(p, "hotplug_ports", ports);
		rpc_config_add(config, "nvmf_emu_create_manager", p);
	}
	for (struct app_function *fn = t->functions; fn; fn = fn->next) {
		struct json_object *p;

		if (fn->implicit)
			continue;
		p = json_object_new_object();
		rpc_config_str(p, "manager", fn->mgr->name);
		rpc_config_str(p, "vuid", fn->vuid);
		rpc_config_str(p, "socket", fn->socket_path);
		rpc_config_add(config, "nvmf_emu_create_function", p);
	}
	return config;
}

/* A primary's secondary controllers, as nvmf_subsystem_add_listener takes them (the defaults
 * as they were resolved: the same CNTLIDs and resources after a reload). */
static void rpc_config_secondaries(struct json_object *p, const struct app_listener *l)
{
	struct app_sec_opts o;

	app_secondaries_opts(l, &o);
	json_object_object_add(p, "secondaries", json_object_new_int64(o.count));
	json_object_object_add(p, "vq_flexible", json_object_new_int64(o.vq_flexible));
	json_object_object_add(p, "vi_flexible", json_object_new_int64(o.vi_flexible));
	json_object_object_add(p, "max_vq_per_secondary", json_object_new_int64(o.max_vq));
	json_object_object_add(p, "max_vi_per_secondary", json_object_new_int64(o.max_vi));
	if (o.dir)
		rpc_config_str(p, "secondary_dir", o.dir);
}

static int rpc_config_bdev_one(struct bdev *bdev, void *arg)
{
	struct json_object *p = json_object_new_object();
	struct bdev_info info;
	char uuid[BDEV_UUID_STR_LEN];
	const char *method;

	bdev_get_info(bdev, &info);
	/* A pool's namespaces are re-made by the pool (nvmf_emu_ns_pool_create). */
	if (!strcmp(info.module_name, BDEV_REGION_MODULE))
		return 0;
	bdev_uuid_format(info.uuid, uuid);
	if (info.base_name && !strcmp(info.module_name, "error")) {
		/* SPDK's bdev_error_create names the bdev itself (EE_<base_name>). */
		rpc_config_str(p, "base_name", info.base_name);
		rpc_config_str(p, "uuid", uuid);
		rpc_config_add(arg, "bdev_error_create", p);
		return 0;
	}
	if (info.zoned) {
		rpc_config_str(p, "name", info.name);
		rpc_config_str(p, "base_bdev", info.base_name);
		rpc_config_int(p, "zone_capacity", (int64_t)info.zone.zone_capacity);
		rpc_config_int(p, "optimal_open_zones", (int64_t)info.zone.optimal_open_zones);
		rpc_config_int(p, "max_open_zones", info.zone.max_open_zones);
		rpc_config_int(p, "max_active_zones", info.zone.max_active_zones);
		if (info.zone.zone_desc_ext_size)
			rpc_config_int(p, "zone_desc_ext_size", info.zone.zone_desc_ext_size);
		if (info.zone.state_file)
			rpc_config_str(p, "state_file", info.zone.state_file);
		rpc_config_str(p, "uuid", uuid);
		rpc_config_add(arg, "bdev_zone_block_create", p);
		return 0;
	}
	if (info.placement) {
		rpc_config_str(p, "name", info.name);
		rpc_config_str(p, "base_bdev", info.base_name);
		rpc_config_int(p, "num_ruh", info.placement_geom.nruh);
		rpc_config_int(p, "ru_size", (int64_t)(info.placement_geom.ru_blocks * info.block_size));
		rpc_config_str(p, "uuid", uuid);
		rpc_config_add(arg, "bdev_fdp_create", p);
		return 0;
	}
	if (info.base_name) {
		rpc_config_str(p, "name", info.name);
		rpc_config_str(p, "base_bdev_name", info.base_name);
		rpc_bdev_add_latencies(p, &info);
		rpc_config_str(p, "uuid", uuid);
		rpc_config_add(arg, "bdev_delay_create", p);
		return 0;
	}
	rpc_config_str(p, "name", info.name);
	if (info.rbd_pool) {
		rpc_config_str(p, "pool_name", info.rbd_pool);
		rpc_config_str(p, "rbd_name", info.rbd_image);
		if (info.rbd_user)
			rpc_config_str(p, "user_id", info.rbd_user);
		rpc_bdev_add_rbd_config(p, &info);
		method = "bdev_rbd_create";
	} else if (info.uri) {
		rpc_config_str(p, "uri", info.uri);
		rpc_config_int(p, "num_connections", info.nbd_connections);
		rpc_config_int(p, "reconnect_timeout_sec", info.nbd_reconnect_timeout);
		method = "bdev_nbd_create";
	} else if (info.filename) {
		rpc_config_str(p, "filename", info.filename);
		method = strcmp(info.module_name, "uring") ? "bdev_aio_create" : "bdev_uring_create";
		if (info.uring_poll)
			json_object_object_add(p, "poll", json_object_new_boolean(true));
	} else {
		rpc_config_int(p, "num_blocks", (int64_t)info.num_blocks);
		method =
		    strcmp(info.module_name, "null") ? "bdev_malloc_create" : "bdev_null_create";
		if (info.read_zeroes)
			json_object_object_add(p, "read_zeroes", json_object_new_boolean(true));
	}
	rpc_config_int(p, "block_size", info.block_size);
	rpc_config_str(p, "uuid", uuid);
	rpc_config_add(arg, method, p);
	return 0;
}

static struct json_object *rpc_config_nvmf(struct app_target *t)
{
	struct json_object *config = json_object_new_array();

	if (t->has_transport) {
		struct json_object *p = json_object_new_object();
		const struct app_transport_opts *tr = &t->tr;

		rpc_config_str(p, "trtype", tr->trtype[0] ? tr->trtype : APP_TRTYPE);
		if (tr->max_queue_depth)
			rpc_config_int(p, "max_queue_depth", tr->max_queue_depth);
		if (tr->max_io_qpairs_per_ctrlr)
			rpc_config_int(p, "max_io_qpairs_per_ctrlr", tr->max_io_qpairs_per_ctrlr);
		if (tr->max_io_size)
			rpc_config_int(p, "max_io_size", tr->max_io_size);
		rpc_config_str(p, "doorbells", hw_db_mode_name(tr->db_mode));
		rpc_config_int(p, "dpa_harts", tr->dpa_harts);
		rpc_config_int(p, "num_poll_groups", tr->num_poll_groups);
		rpc_config_str(p, "profile", tr->profile->name);
		json_object_object_add(p, "sgl", json_object_new_boolean(tr->sgl));
		if (tr->no_dbbuf)
			json_object_object_add(p, "disable_shadow_doorbells",
					       json_object_new_boolean(true));
		if (tr->in_capsule_data_size)
			rpc_config_int(p, "in_capsule_data_size", tr->in_capsule_data_size);
		if (tr->io_unit_size)
			rpc_config_int(p, "io_unit_size", tr->io_unit_size);
		if (tr->max_aq_depth)
			rpc_config_int(p, "max_aq_depth", tr->max_aq_depth);
		if (tr->vendor_id)
			rpc_config_int(p, "vendor_id", tr->vendor_id);
		if (tr->device_id)
			rpc_config_int(p, "device_id", tr->device_id);
		if (tr->subsys_vendor_id)
			rpc_config_int(p, "subsystem_vendor_id", tr->subsys_vendor_id);
		if (tr->subsys_id)
			rpc_config_int(p, "subsystem_id", tr->subsys_id);
		rpc_config_add(config, "nvmf_create_transport", p);
	}
	for (struct app_subsys *s = t->subsystems; s; s = s->next) {
		struct json_object *p = json_object_new_object();

		rpc_config_str(p, "nqn", s->nqn);
		rpc_config_str(p, "serial_number", s->serial);
		rpc_config_str(p, "model_number", s->model);
		rpc_config_int(p, "max_namespaces", s->max_namespaces);
		json_object_object_add(p, "allow_any_host",
				       json_object_new_boolean(s->allow_any_host));
		if (s->min_cntlid != APP_MIN_CNTLID || s->max_cntlid != APP_MAX_CNTLID) {
			rpc_config_int(p, "min_cntlid", s->min_cntlid);
			rpc_config_int(p, "max_cntlid", s->max_cntlid);
		}
		if (s->event_log_file)
			rpc_config_str(p, "event_log_file", s->event_log_file);
		if (s->state_file)
			rpc_config_str(p, "state_file", s->state_file);
		if (s->cmb_size)
			rpc_config_int(p, "cmb_size_mib", (int64_t)(s->cmb_size >> 20));
		if (s->pmr_file)
			rpc_config_str(p, "pmr_file", s->pmr_file);
		if (s->pmr_size)
			rpc_config_int(p, "pmr_size_mib", (int64_t)(s->pmr_size >> 20));
		if (s->fdp_ruh) {
			rpc_config_int(p, "fdp_ruh", s->fdp_ruh);
			if (s->fdp_ru_size)
				rpc_config_int(p, "fdp_ru_size", (int64_t)s->fdp_ru_size);
		}
		rpc_config_add(config, "nvmf_create_subsystem", p);
		for (unsigned int i = 0; i < s->nr_hosts; i++) {
			p = json_object_new_object();
			rpc_config_str(p, "nqn", s->nqn);
			rpc_config_str(p, "host", s->hosts[i]);
			rpc_config_add(config, "nvmf_subsystem_add_host", p);
		}
		for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
			struct app_ns *ns = s->ns[i];
			struct json_object *n;
			char uuid[BDEV_UUID_STR_LEN];

			if (!ns)
				continue;
			p = json_object_new_object();
			n = json_object_new_object();
			rpc_config_str(p, "nqn", s->nqn);
			rpc_config_str(n, "bdev_name", ns->bdev_name);
			rpc_config_int(n, "nsid", ns->nsid);
			if (ns->has_uuid) {
				bdev_uuid_format(ns->uuid, uuid);
				rpc_config_str(n, "uuid", uuid);
			}
			if (ns->has_nguid) {
				char hex[33];

				for (int b = 0; b < 16; b++)
					snprintf(hex + 2 * b, 3, "%02x", ns->nguid[b]);
				rpc_config_str(n, "nguid", hex);
			}
			if (ns->has_eui64) {
				char hex[17];

				for (int b = 0; b < 8; b++)
					snprintf(hex + 2 * b, 3, "%02x", ns->eui64[b]);
				rpc_config_str(n, "eui64", hex);
			}
			if (ns->ptpl_file)
				rpc_config_str(n, "ptpl_file", ns->ptpl_file);
			if (ns->shared_resv)
				json_object_object_add(n, "shared_reservations",
						       json_object_new_boolean(true));
			json_object_object_add(p, "namespace", n);
			rpc_config_add(config, "nvmf_subsystem_add_ns", p);
		}
		if ((p = rpc_ns_pool_config(s)))
			rpc_config_add(config, "nvmf_emu_ns_pool_create", p);
		/* Every listener, in the order they were added: a replay gives each controller
		 * the CNTLID it had (the lowest free one, in the same order). */
		for (struct app_listener *l = s->listeners; l; l = l->next) {
			struct json_object *a;

			/* A secondary controller comes back with its primary (its state file
			 * says it was online), not from here. */
			if (!l->fn || l->sec ||
			    (l->state != APP_LISTENER_LIVE && l->state != APP_LISTENER_ATTACHING))
				continue;
			a = json_object_new_object();
			p = json_object_new_object();
			rpc_config_str(p, "nqn", s->nqn);
			if (!strcmp(l->listen_trtype, "VFIOUSER")) {
				/* SPDK's form: the directory of <traddr>/cntrl. */
				rpc_config_str(a, "trtype", "VFIOUSER");
				rpc_config_str(a, "traddr", l->listen_traddr);
				rpc_config_str(a, "trsvcid", "0");
			} else {
				rpc_config_str(a, "trtype", l->listen_trtype[0] ? l->listen_trtype
										: APP_TRTYPE);
				rpc_config_str(a, "adrfam", "PCIE");
				/* An implicit function is re-created from its path; a named
				 * one is created by the emu section first. */
				rpc_config_str(a, "traddr", l->fn->implicit ? l->fn->socket_path
									    : l->fn->vuid);
			}
			json_object_object_add(p, "listen_address", a);
			rpc_config_str(p, "manager", l->fn->mgr->name);
			if (l->secs)
				rpc_config_secondaries(p, l);
			rpc_config_add(config, "nvmf_subsystem_add_listener", p);
		}
	}
	return config;
}

/* The daemon's own services: the metrics exporter when the configuration (not --metrics) started
 * it. */
static struct json_object *rpc_config_service(struct app_target *t)
{
	struct json_object *config = json_object_new_array();

	if (t->metrics.http && !t->metrics.from_cmdline) {
		struct json_object *p = json_object_new_object();

		rpc_config_str(p, "listen_address", metrics_http_requested(t->metrics.http));
		if (t->metrics.buckets_per_octave)
			rpc_config_int(p, "buckets_per_octave", t->metrics.buckets_per_octave);
		if (t->metrics.per_queue)
			json_object_object_add(p, "per_queue", json_object_new_boolean(true));
		rpc_config_add(config, "nvmf_emu_metrics_start", p);
	}
	return config;
}

struct json_object *rpc_config_build(struct app_target *t)
{
	struct json_object *root = json_object_new_object(), *subs = json_object_new_array();
	struct {
		const char *name;
		struct json_object *config;
	} parts[] = {
	    {"emu", rpc_config_emu(t)},
	    {"bdev", json_object_new_array()},
	    {"nvmf", rpc_config_nvmf(t)},
	    {"service", rpc_config_service(t)},
	};

	bdev_foreach(rpc_config_bdev_one, parts[1].config);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		struct json_object *s = json_object_new_object();

		rpc_config_str(s, "subsystem", parts[i].name);
		json_object_object_add(s, "config", parts[i].config);
		json_object_array_add(subs, s);
	}
	json_object_object_add(root, "subsystems", subs);
	return root;
}

/* ---- replay ---- */

struct rpc_config_replay {
	struct app_target *t;
	struct json_object *root;
	struct json_object *subs;
	size_t si, ci;
	bool in_call, returned, failed;
	bool record; /* a file: kept as the configuration applied (app_service) when it worked */
	/* A call refused with -EBUSY is tried again every 100 ms until then (evloop_now_us; 0:
	 * never): a bdev is released asynchronously after its namespace was removed. */
	uint64_t busy_until_us;
	bool waiting; /* for the retry timer */
	app_done_fn done;
	void *arg;
	char err[APP_ERR_LEN];
};

static void rpc_config_finish(struct rpc_config_replay *r)
{
	app_done_fn done = r->done;
	void *arg = r->arg;
	char err[APP_ERR_LEN];
	bool failed = r->failed;

	memcpy(err, r->err, sizeof(err));
	if (r->record && !failed) {
		json_object_put(r->t->svc.applied);
		r->t->svc.applied = r->root;
	} else {
		json_object_put(r->root);
	}
	free(r);
	done(arg, failed ? -EINVAL : 0, failed ? err : NULL);
}

/* The next {method, params} to run, or NULL at the end (or on a malformed file: r->failed). */
static struct json_object *rpc_config_next(struct rpc_config_replay *r)
{
	while (r->si < json_object_array_length(r->subs)) {
		struct json_object *s = json_object_array_get_idx(r->subs, r->si), *config;

		if (!json_object_is_type(s, json_type_object) ||
		    !json_object_object_get_ex(s, "config", &config) ||
		    (config && !json_object_is_type(config, json_type_array))) {
			snprintf(r->err, sizeof(r->err), "subsystems[%zu]: no \"config\" array",
				 r->si);
			r->failed = true;
			return NULL;
		}
		if (config && r->ci < json_object_array_length(config))
			return json_object_array_get_idx(config, r->ci++);
		r->si++;
		r->ci = 0;
	}
	return NULL;
}

static void rpc_config_item_done(void *arg, struct json_object *result, int code,
				 const char *message);

static void rpc_config_step(struct rpc_config_replay *r)
{
	for (;;) {
		struct json_object *item = rpc_config_next(r), *method, *params = NULL;

		if (!item || r->failed)
			break;
		if (!json_object_object_get_ex(item, "method", &method) ||
		    !json_object_is_type(method, json_type_string)) {
			snprintf(r->err, sizeof(r->err), "an entry has no \"method\" string");
			r->failed = true;
			break;
		}
		json_object_object_get_ex(item, "params", &params);
		r->in_call = true;
		r->returned = false;
		if (rpc_server_call(r->t->rpc, json_object_get_string(method), params,
				    rpc_config_item_done, r)) {
			snprintf(r->err, sizeof(r->err), "out of memory");
			r->failed = true;
			break;
		}
		r->in_call = false;
		if (!r->returned || r->waiting)
			return; /* asynchronous: rpc_config_item_done (or the retry) steps on */
		if (r->failed)
			break;
	}
	rpc_config_finish(r);
}

static void rpc_config_retry(void *arg)
{
	struct rpc_config_replay *r = arg;

	r->waiting = false;
	rpc_config_step(r);
}

static void rpc_config_item_done(void *arg, struct json_object *result, int code,
				 const char *message)
{
	struct rpc_config_replay *r = arg;
	struct json_object *subs = r->subs;
	struct json_object *s = json_object_array_get_idx(subs, r->si), *config, *item, *m;

	if (code == -EBUSY && r->busy_until_us && evloop_now_us() < r->busy_until_us &&
	    evloop_timer_add(r->t->loop, 100000, rpc_config_retry, r)) {
		/* The same entry again, from the timer. */
		r->ci--;
		r->waiting = true;
		r->returned = true;
		return;
	}
	if (code) {
		json_object_object_get_ex(s, "config", &config);
		item = json_object_array_get_idx(config, r->ci - 1);
		json_object_object_get_ex(item, "method", &m);
		snprintf(r->err, sizeof(r->err), "%s: %s", json_object_get_string(m), message);
		r->failed = true;
	}
	r->returned = true;
	if (r->in_call)
		return;
	if (r->failed)
		rpc_config_finish(r);
	else
		rpc_config_step(r);
}

int rpc_config_run(struct app_target *t, struct json_object *root, bool record,
		   uint64_t busy_retry_us, app_done_fn done, void *arg)
{
	struct rpc_config_replay *r;
	struct json_object *subs;

	if (!json_object_object_get_ex(root, "subsystems", &subs) ||
	    !json_object_is_type(subs, json_type_array))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->t = t;
	r->done = done;
	r->arg = arg;
	r->record = record;
	r->busy_until_us = busy_retry_us ? evloop_now_us() + busy_retry_us : 0;
	r->root = json_object_get(root);
	r->subs = subs;
	rpc_config_step(r);
	return 0;
}

int rpc_config_load(struct app_target *t, const char *path, app_done_fn done, void *arg)
{
	struct json_object *root = json_object_from_file(path);
	int rc;

	if (!root) {
		LOG_ERR(APP_LOG, "%s: not a configuration file (%s)", path,
			json_util_get_last_err());
		return -EINVAL;
	}
	LOG_INFO(APP_LOG, "loading configuration %s", path);
	rc = rpc_config_run(t, root, true, 0, done, arg);
	if (rc == -EINVAL)
		LOG_ERR(APP_LOG, "%s: not a configuration file (no \"subsystems\" array)", path);
	json_object_put(root);
	return rc;
}
