/* app/rpc_ns_pool.c - Namespace Management capacity pools of subsystems: the operation the command
 * line (--ns-pool) and the methods share, and the methods nvmf_emu_ns_pool_create / _delete /
 * _get, with their part of save_config. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "common/log.h"
#include "transport/pcie.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct app_ns_pool_create {
	struct app_target *t;
	struct app_subsys *s;
	app_done_fn done;
	void *arg;
};

static void app_ns_pool_created(void *arg, int rc, const char *msg, struct ctrlr_ns_pool *pool)
{
	struct app_ns_pool_create *c = arg;
	struct app_subsys *s = c->s;
	struct app_target *t = c->t;
	char err[APP_ERR_LEN];

	s->pool_creating = false;
	if (!rc) {
		s->pool = pool;
		/* A live controller gets Namespace Management now (and the pool's attached
		 * namespaces). */
		if (app_subsys_first_ctrl(s) && !t->shutting_down) {
			rc = ctrlr_ns_pool_bind(pool, app_subsys_first_ctrl(s));
			if (rc) {
				snprintf(err, sizeof(err),
					 "cannot attach the pool's namespaces to %s: %s", s->nqn,
					 strerror(-rc));
				msg = err;
				ctrlr_ns_pool_destroy(pool);
				s->pool = NULL;
			}
		}
	}
	if (!rc) {
		struct ctrlr_ns_pool_info info;

		ctrlr_ns_pool_get_info(pool, &info);
		LOG_INFO(APP_LOG, "%s: namespace pool on bdev %s: %u namespaces, %llu of %llu bytes free",
			 s->nqn, info.bdev_name, info.num_ns, (unsigned long long)info.free_bytes,
			 (unsigned long long)info.total_bytes);
	}
	c->done(c->arg, rc, rc ? msg : NULL);
	free(c);
	if (t->shutting_down)
		app_target_fini_step(t);
}

void app_ns_pool_create(struct app_target *t, struct app_subsys *s,
			const struct app_ns_pool_opts *o, app_done_fn done, void *arg)
{
	struct ctrlr_ns_pool_opts po = {
	    .loop = t->loop,
	    .max_nsid = s->max_namespaces,
	    .format = o->format,
	    .ns = o->ns,
	    .num_ns = o->num_ns,
	};
	bool reserved[CTRLR_MAX_NAMESPACES];
	struct app_ns_pool_create *c;
	struct app_subsys *user;
	char err[APP_ERR_LEN];
	int rc;

	if (s->pool || s->pool_creating) {
		snprintf(err, sizeof(err), "subsystem %s has a namespace pool already", s->nqn);
		return done(arg, -EEXIST, err);
	}
	if (app_subsys_busy(s)) {
		snprintf(err, sizeof(err), "subsystem %s: a hotplug is in progress", s->nqn);
		return done(arg, -EBUSY, err);
	}
	/* Attachment is to the one controller the pool is bound to. */
	if (s->listeners && s->listeners->next) {
		snprintf(err, sizeof(err),
			 "subsystem %s has several controllers: a namespace pool needs one at most",
			 s->nqn);
		return done(arg, -EBUSY, err);
	}
	po.bdev = bdev_lookup(o->bdev_name);
	if (!po.bdev) {
		snprintf(err, sizeof(err), "bdev %s does not exist", o->bdev_name);
		return done(arg, -ENODEV, err);
	}
	user = app_bdev_user(t, o->bdev_name);
	if (user) {
		snprintf(err, sizeof(err), "bdev %s is a namespace of %s", o->bdev_name, user->nqn);
		return done(arg, -EBUSY, err);
	}
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		reserved[i] = s->ns[i] != NULL;
	po.reserved = reserved;
	c = calloc(1, sizeof(*c));
	if (!c)
		return done(arg, -ENOMEM, "out of memory");
	*c = (struct app_ns_pool_create){.t = t, .s = s, .done = done, .arg = arg};
	rc = ctrlr_ns_pool_create(&po, app_ns_pool_created, c);
	if (rc) {
		free(c);
		if (rc == -EINVAL && bdev_get_block_size(po.bdev) != 512)
			snprintf(err, sizeof(err), "bdev %s: a pool needs 512-byte blocks",
				 o->bdev_name);
		else if (rc == -EINVAL)
			snprintf(err, sizeof(err), "bad pool options (namespaces list)");
		else if (rc == -ENOSPC)
			snprintf(err, sizeof(err), "bdev %s is too small for a pool (2 MiB at least)",
				 o->bdev_name);
		else if (rc == -EBUSY)
			snprintf(err, sizeof(err), "bdev %s is claimed by someone else",
				 o->bdev_name);
		else
			snprintf(err, sizeof(err), "cannot create the pool: %s", strerror(-rc));
		return done(arg, rc, err);
	}
	s->pool_creating = true;
}

int app_ns_pool_delete(struct app_subsys *s, char *err)
{
	int rc;

	if (!s->pool) {
		snprintf(err, APP_ERR_LEN, "subsystem %s has no namespace pool", s->nqn);
		return -ENOENT;
	}
	if (s->listeners) {
		snprintf(err, APP_ERR_LEN,
			 "subsystem %s has a listener: remove it first (its controller uses the "
			 "pool)",
			 s->nqn);
		return -EBUSY;
	}
	rc = ctrlr_ns_pool_destroy(s->pool);
	if (rc) {
		snprintf(err, APP_ERR_LEN, "the pool of %s is busy", s->nqn);
		return rc;
	}
	s->pool = NULL;
	return 0;
}

/* ---- methods ---- */

struct rpc_ns_pool_params {
	const char *nqn;
	const char *bdev_name;
	bool format;
	struct json_object *namespaces;
};

static const struct rpc_decoder rpc_ns_pool_create_dec[] = {
    RPC_DEC(rpc_ns_pool_params, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_ns_pool_params, bdev_name, RPC_T_STRING, false),
    RPC_DEC(rpc_ns_pool_params, format, RPC_T_BOOL, true),
    RPC_DEC(rpc_ns_pool_params, namespaces, RPC_T_ARRAY, true),
};

static const struct rpc_decoder rpc_ns_pool_nqn_dec[] = {
    RPC_DEC(rpc_ns_pool_params, nqn, RPC_T_STRING, true),
};

struct rpc_ns_pool_ns_params {
	uint32_t nsid;
	uint64_t num_blocks;
	uint32_t block_size;
	const char *uuid;
	bool attached;
	bool shared;
	uint32_t flbas, dps;
};

/* What nvmf_emu_ns_pool_get reports of a namespace, and save_config keeps. */
static const struct rpc_decoder rpc_ns_pool_ns_dec[] = {
    RPC_DEC(rpc_ns_pool_ns_params, nsid, RPC_T_U32, false),
    RPC_DEC(rpc_ns_pool_ns_params, num_blocks, RPC_T_U64, false),
    RPC_DEC(rpc_ns_pool_ns_params, block_size, RPC_T_U32, false),
    RPC_DEC(rpc_ns_pool_ns_params, uuid, RPC_T_STRING, false),
    RPC_DEC(rpc_ns_pool_ns_params, attached, RPC_T_BOOL, true),
    RPC_DEC(rpc_ns_pool_ns_params, shared, RPC_T_BOOL, true),
    /* Its LBA format (Identify Namespace FLBAS and DPS; 0: 512-byte blocks, no metadata). */
    RPC_DEC(rpc_ns_pool_ns_params, flbas, RPC_T_U32, true),
    RPC_DEC(rpc_ns_pool_ns_params, dps, RPC_T_U32, true),
    RPC_IGNORED("bdev_name", RPC_T_STRING),
    RPC_IGNORED("offset_bytes", RPC_T_U64),
    RPC_IGNORED("size_bytes", RPC_T_U64),
};

static void rpc_ns_pool_create_done(void *arg, int rc, const char *message)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static struct app_subsys *rpc_ns_pool_subsys(struct rpc_request *req, struct app_target *t,
					     const char *nqn)
{
	struct app_subsys *s = app_subsys_find(t, nqn);

	if (!s)
		rpc_request_error(req, -ENODEV, "no subsystem %s", nqn);
	return s;
}

/* nvmf_emu_ns_pool_create: nqn, bdev_name (512-byte blocks, 2 MiB at least), format (use a bdev
 * with data but no pool header), namespaces (re-created on a blank bdev: save_config's list). */
static void rpc_ns_pool_create(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct ctrlr_ns_pool_ns_info ns[CTRLR_MAX_NAMESPACES];
	struct rpc_ns_pool_params p = {0};
	struct app_ns_pool_opts o = {0};
	struct app_target *t = ctx;
	struct app_subsys *s;
	size_t n = 0;
	char err[128];

	if (rpc_decode_params(req, params, rpc_ns_pool_create_dec,
			      RPC_N(rpc_ns_pool_create_dec), &p))
		return;
	s = rpc_ns_pool_subsys(req, t, p.nqn);
	if (!s)
		return;
	if (p.namespaces)
		n = json_object_array_length(p.namespaces);
	if (n > CTRLR_MAX_NAMESPACES)
		return rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
					 "namespaces: at most %d", CTRLR_MAX_NAMESPACES);
	for (size_t i = 0; i < n; i++) {
		struct rpc_ns_pool_ns_params q = {0};

		if (rpc_decode_object(json_object_array_get_idx(p.namespaces, i),
				      rpc_ns_pool_ns_dec, RPC_N(rpc_ns_pool_ns_dec), &q, err,
				      sizeof(err)))
			return rpc_request_error(req, RPC_ERR_INVALID_PARAMS, "namespaces[%zu]: %s",
						 i, err);
		memset(&ns[i], 0, sizeof(ns[i]));
		ns[i].nsid = q.nsid;
		ns[i].num_blocks = q.num_blocks;
		ns[i].block_size = q.block_size;
		ns[i].attached = q.attached;
		ns[i].shared = q.shared;
		if (q.flbas > 0xff || q.dps > 0xff)
			return rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
						 "namespaces[%zu]: flbas and dps are bytes", i);
		ns[i].flbas = (uint8_t)q.flbas;
		ns[i].dps = (uint8_t)q.dps;
		if (bdev_uuid_parse(q.uuid, ns[i].uuid))
			return rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
						 "namespaces[%zu]: bad uuid", i);
	}
	o.bdev_name = p.bdev_name;
	o.format = p.format;
	o.ns = ns;
	o.num_ns = (uint32_t)n;
	app_ns_pool_create(t, s, &o, rpc_ns_pool_create_done, req);
}

static void rpc_ns_pool_delete(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_ns_pool_params p = {0};
	struct app_target *t = ctx;
	char err[APP_ERR_LEN];
	struct app_subsys *s;
	int rc;

	if (rpc_decode_params(req, params, rpc_ns_pool_nqn_dec, RPC_N(rpc_ns_pool_nqn_dec), &p))
		return;
	if (!p.nqn)
		return rpc_request_error(req, RPC_ERR_INVALID_PARAMS, "missing parameter 'nqn'");
	s = rpc_ns_pool_subsys(req, t, p.nqn);
	if (!s)
		return;
	rc = app_ns_pool_delete(s, err);
	if (rc)
		return rpc_request_error(req, rc, "%s", err);
	rpc_request_result(req, json_object_new_boolean(true));
}

static struct json_object *rpc_ns_pool_ns_json(const struct ctrlr_ns_pool_ns_info *n, bool full)
{
	struct json_object *o = json_object_new_object();
	char uuid[BDEV_UUID_STR_LEN];

	bdev_uuid_format(n->uuid, uuid);
	json_object_object_add(o, "nsid", json_object_new_int64(n->nsid));
	json_object_object_add(o, "num_blocks", json_object_new_int64((int64_t)n->num_blocks));
	json_object_object_add(o, "block_size", json_object_new_int64(n->block_size));
	json_object_object_add(o, "uuid", json_object_new_string(uuid));
	json_object_object_add(o, "attached", json_object_new_boolean(n->attached));
	json_object_object_add(o, "shared", json_object_new_boolean(n->shared));
	json_object_object_add(o, "flbas", json_object_new_int64(n->flbas));
	json_object_object_add(o, "dps", json_object_new_int64(n->dps));
	if (full) {
		json_object_object_add(o, "bdev_name", json_object_new_string(n->bdev_name));
		json_object_object_add(o, "offset_bytes",
				       json_object_new_int64((int64_t)n->offset_bytes));
		json_object_object_add(o, "size_bytes",
				       json_object_new_int64((int64_t)n->size_bytes));
	}
	return o;
}

static struct json_object *rpc_ns_pool_json(struct app_subsys *s, bool full)
{
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	struct ctrlr_ns_pool_info info;
	struct ctrlr_ns_pool_ns_info n;

	ctrlr_ns_pool_get_info(s->pool, &info);
	json_object_object_add(o, "nqn", json_object_new_string(s->nqn));
	json_object_object_add(o, "bdev_name", json_object_new_string(info.bdev_name));
	if (full) {
		json_object_object_add(o, "total_bytes",
				       json_object_new_int64((int64_t)info.total_bytes));
		json_object_object_add(o, "free_bytes",
				       json_object_new_int64((int64_t)info.free_bytes));
		json_object_object_add(o, "largest_free_bytes",
				       json_object_new_int64((int64_t)info.largest_free_bytes));
		json_object_object_add(o, "granule", json_object_new_int64((int64_t)info.granule));
		json_object_object_add(o, "generation",
				       json_object_new_int64((int64_t)info.generation));
	}
	for (uint32_t nsid = 1; nsid <= CTRLR_MAX_NAMESPACES; nsid++)
		if (ctrlr_ns_pool_get_ns(s->pool, nsid, &n))
			json_object_array_add(list, rpc_ns_pool_ns_json(&n, full));
	json_object_object_add(o, "namespaces", list);
	return o;
}

struct json_object *rpc_ns_pool_config(struct app_subsys *s)
{
	return s->pool ? rpc_ns_pool_json(s, false) : NULL;
}

static void rpc_ns_pool_get(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_ns_pool_params p = {0};
	struct app_target *t = ctx;
	struct json_object *out;

	if (rpc_decode_params(req, params, rpc_ns_pool_nqn_dec, RPC_N(rpc_ns_pool_nqn_dec), &p))
		return;
	if (p.nqn && !rpc_ns_pool_subsys(req, t, p.nqn))
		return;
	out = json_object_new_array();
	for (struct app_subsys *s = t->subsystems; s; s = s->next)
		if (s->pool && (!p.nqn || !strcmp(p.nqn, s->nqn)))
			json_object_array_add(out, rpc_ns_pool_json(s, true));
	rpc_request_result(req, out);
}

static const struct rpc_method rpc_ns_pool_methods[] = {
    {"nvmf_emu_ns_pool_create", rpc_ns_pool_create, RPC_RUNTIME, false},
    {"nvmf_emu_ns_pool_delete", rpc_ns_pool_delete, RPC_RUNTIME, false},
    {"nvmf_emu_ns_pool_get", rpc_ns_pool_get, RPC_RUNTIME, false},
};

int rpc_ns_pool_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_ns_pool_methods, RPC_N(rpc_ns_pool_methods));
}
