/* app/rpc_nvmf.c - nvmf methods with SPDK's names and parameters: the PCIE_EMU transport,
 * subsystems, namespaces, listeners (hotplug) and statistics. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "controller/pcie.h"
#include "dpa/dpa.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define RPC_DEC(st, name, type, opt)                                                               \
	{                                                                                          \
#name, type, offsetof(struct st, name), opt                                        \
	}
#define RPC_N(a) (sizeof(a) / sizeof((a)[0]))

/* Completes a request from an asynchronous target operation: true, or the error. */
static void rpc_nvmf_done(void *arg, int rc, const char *message)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", message);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* ---- transport ---- */

struct rpc_transport {
	const char *trtype;
	uint32_t max_queue_depth, max_io_qpairs_per_ctrlr, max_io_size;
	const char *doorbells;
	uint32_t dpa_harts, num_poll_groups;
	const char *profile;
	bool sgl;
};

static const struct rpc_decoder rpc_transport_dec[] = {
    RPC_DEC(rpc_transport, trtype, RPC_T_STRING, false),
    RPC_DEC(rpc_transport, max_queue_depth, RPC_T_U32, true),
    RPC_DEC(rpc_transport, max_io_qpairs_per_ctrlr, RPC_T_U32, true),
    RPC_DEC(rpc_transport, max_io_size, RPC_T_U32, true),
    RPC_DEC(rpc_transport, doorbells, RPC_T_STRING, true),
    RPC_DEC(rpc_transport, dpa_harts, RPC_T_U32, true),
    RPC_DEC(rpc_transport, num_poll_groups, RPC_T_U32, true),
    RPC_DEC(rpc_transport, profile, RPC_T_STRING, true),
    RPC_DEC(rpc_transport, sgl, RPC_T_BOOL, true),
};

static bool rpc_trtype_ok(const char *trtype)
{
	return !strcasecmp(trtype, APP_TRTYPE) || !strcasecmp(trtype, "DOCA");
}

static void rpc_nvmf_create_transport(struct rpc_request *req, struct json_object *params,
				      void *ctx)
{
	struct app_target *t = ctx;
	const struct app_transport_opts *d = &t->tr_defaults;
	struct rpc_transport p = {
	    .max_queue_depth = d->max_queue_depth,
	    .max_io_qpairs_per_ctrlr = d->max_io_qpairs_per_ctrlr,
	    .max_io_size = d->max_io_size,
	    .doorbells = hw_db_mode_name(d->db_mode),
	    .dpa_harts = d->dpa_harts,
	    .num_poll_groups = d->num_poll_groups,
	    .profile = d->profile->name,
	    .sgl = d->sgl,
	};
	struct app_transport_opts o;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_transport_dec, RPC_N(rpc_transport_dec), &p))
		return;
	if (!rpc_trtype_ok(p.trtype)) {
		rpc_request_error(req, -EINVAL, "trtype %s is not supported (%s or DOCA)", p.trtype,
				  APP_TRTYPE);
		return;
	}
	o = (struct app_transport_opts){
	    .max_queue_depth = p.max_queue_depth,
	    .max_io_qpairs_per_ctrlr = p.max_io_qpairs_per_ctrlr,
	    .max_io_size = p.max_io_size,
	    .dpa_harts = p.dpa_harts,
	    .num_poll_groups = p.num_poll_groups,
	    .profile = hw_profile_find(p.profile),
	    .sgl = p.sgl,
	};
	if (!strcmp(p.doorbells, "trap")) {
		o.db_mode = HW_DB_MODE_TRAP;
	} else if (!strcmp(p.doorbells, "mmap")) {
		o.db_mode = HW_DB_MODE_MMAP;
	} else {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: doorbells must be trap or mmap");
		return;
	}
	if (!o.profile) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: unknown profile %s (bf3, unlimited)",
				  p.profile);
		return;
	}
	rc = app_transport_create(t, &o, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static struct json_object *rpc_transport_describe(struct app_target *t)
{
	struct json_object *o = json_object_new_object();
	const struct app_transport_opts *tr = &t->tr;

	json_object_object_add(o, "trtype", json_object_new_string(APP_TRTYPE));
	json_object_object_add(
	    o, "max_queue_depth",
	    json_object_new_int64(tr->max_queue_depth ? tr->max_queue_depth : 1024));
	json_object_object_add(o, "max_io_qpairs_per_ctrlr",
			       json_object_new_int64(app_transport_io_queues(t)));
	json_object_object_add(
	    o, "max_io_size",
	    json_object_new_int64(4096ll << (app_transport_mdts(t) ? app_transport_mdts(t) : 5)));
	json_object_object_add(o, "doorbells",
			       json_object_new_string(hw_db_mode_name(tr->db_mode)));
	json_object_object_add(o, "dpa_harts", json_object_new_int64(tr->dpa_harts));
	json_object_object_add(o, "num_poll_groups", json_object_new_int64(tr->num_poll_groups));
	json_object_object_add(o, "profile", json_object_new_string(tr->profile->name));
	json_object_object_add(o, "sgl", json_object_new_boolean(tr->sgl));
	return o;
}

struct rpc_trtype {
	const char *trtype;
	const char *tgt_name;
};

static const struct rpc_decoder rpc_get_transports_dec[] = {
    RPC_DEC(rpc_trtype, trtype, RPC_T_STRING, true),
    RPC_DEC(rpc_trtype, tgt_name, RPC_T_STRING, true),
};

static void rpc_nvmf_get_transports(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_trtype p = {0};
	struct json_object *list;

	if (rpc_decode_params(req, params, rpc_get_transports_dec, RPC_N(rpc_get_transports_dec),
			      &p))
		return;
	if (p.trtype && (!rpc_trtype_ok(p.trtype) || !t->has_transport)) {
		rpc_request_error(req, -EINVAL, "no transport %s", p.trtype);
		return;
	}
	list = json_object_new_array();
	if (t->has_transport)
		json_object_array_add(list, rpc_transport_describe(t));
	rpc_request_result(req, list);
}

/* ---- subsystems ---- */

struct rpc_subsys {
	const char *nqn, *serial_number, *model_number, *tgt_name;
	uint32_t max_namespaces;
	bool allow_any_host;
};

static const struct rpc_decoder rpc_create_subsys_dec[] = {
    RPC_DEC(rpc_subsys, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_subsys, serial_number, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, model_number, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, max_namespaces, RPC_T_U32, true),
    RPC_DEC(rpc_subsys, allow_any_host, RPC_T_BOOL, true),
    RPC_DEC(rpc_subsys, tgt_name, RPC_T_STRING, true),
};

static const struct rpc_decoder rpc_nqn_dec[] = {
    RPC_DEC(rpc_subsys, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_subsys, tgt_name, RPC_T_STRING, true),
};

static const struct rpc_decoder rpc_nqn_opt_dec[] = {
    RPC_DEC(rpc_subsys, nqn, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, tgt_name, RPC_T_STRING, true),
};

static void rpc_nvmf_create_subsystem(struct rpc_request *req, struct json_object *params,
				      void *ctx)
{
	struct rpc_subsys p = {0};
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_create_subsys_dec, RPC_N(rpc_create_subsys_dec), &p))
		return;
	rc = app_subsys_create(ctx, p.nqn, p.serial_number, p.model_number, p.max_namespaces,
			       p.allow_any_host, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* Decodes {nqn} and finds the subsystem; completes req with an error if there is none. */
static struct app_subsys *rpc_subsys_lookup(struct rpc_request *req, struct app_target *t,
					    const char *nqn)
{
	struct app_subsys *s = app_subsys_find(t, nqn);

	if (!s)
		rpc_request_error(req, -ENODEV, "no subsystem %s", nqn);
	return s;
}

static void rpc_nvmf_delete_subsystem(struct rpc_request *req, struct json_object *params,
				      void *ctx)
{
	struct rpc_subsys p = {0};
	struct app_subsys *s;

	if (rpc_decode_params(req, params, rpc_nqn_dec, RPC_N(rpc_nqn_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	app_subsys_delete(ctx, s, rpc_nvmf_done, req);
}

static void rpc_hex(struct json_object *o, const char *key, const uint8_t *b, size_t n)
{
	char text[40];

	for (size_t i = 0; i < n; i++)
		snprintf(text + 2 * i, 3, "%02x", b[i]);
	json_object_object_add(o, key, json_object_new_string(text));
}

static struct json_object *rpc_ns_describe(const struct app_ns *ns)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "nsid", json_object_new_int64(ns->nsid));
	json_object_object_add(o, "bdev_name", json_object_new_string(ns->bdev_name));
	json_object_object_add(o, "name", json_object_new_string(ns->bdev_name));
	if (ns->has_uuid) {
		char uuid[BDEV_UUID_STR_LEN];

		bdev_uuid_format(ns->uuid, uuid);
		json_object_object_add(o, "uuid", json_object_new_string(uuid));
	}
	if (ns->has_nguid)
		rpc_hex(o, "nguid", ns->nguid, 16);
	if (ns->has_eui64)
		rpc_hex(o, "eui64", ns->eui64, 8);
	return o;
}

static const char *rpc_listener_state_name(enum app_listener_state st)
{
	switch (st) {
	case APP_LISTENER_NONE:
		return "none";
	case APP_LISTENER_ATTACHING:
		return "attaching";
	case APP_LISTENER_LIVE:
		return "live";
	case APP_LISTENER_DETACHING:
		return "detaching";
	}
	return "?";
}

static struct json_object *rpc_subsys_describe(const struct app_subsys *s)
{
	struct json_object *o = json_object_new_object(), *la = json_object_new_array();
	struct json_object *nss = json_object_new_array();

	json_object_object_add(o, "nqn", json_object_new_string(s->nqn));
	json_object_object_add(o, "subtype", json_object_new_string("NVMe"));
	if (s->fn) {
		struct json_object *a = json_object_new_object();

		json_object_object_add(a, "trtype", json_object_new_string(APP_TRTYPE));
		json_object_object_add(a, "adrfam", json_object_new_string("PCIE"));
		json_object_object_add(a, "traddr", json_object_new_string(s->fn->socket_path));
		json_object_object_add(a, "trsvcid", json_object_new_string(""));
		json_object_object_add(a, "vuid", json_object_new_string(s->fn->vuid));
		json_object_object_add(a, "manager", json_object_new_string(s->fn->mgr->name));
		if (s->fn->bus)
			json_object_object_add(a, "bus", json_object_new_string(s->fn->bus));
		json_object_object_add(a, "state",
				       json_object_new_string(rpc_listener_state_name(s->state)));
		json_object_array_add(la, a);
	}
	json_object_object_add(o, "listen_addresses", la);
	json_object_object_add(o, "allow_any_host", json_object_new_boolean(s->allow_any_host));
	json_object_object_add(o, "hosts", json_object_new_array());
	json_object_object_add(o, "serial_number", json_object_new_string(s->serial));
	json_object_object_add(o, "model_number", json_object_new_string(s->model));
	json_object_object_add(o, "max_namespaces", json_object_new_int64(s->max_namespaces));
	json_object_object_add(o, "cntlid", json_object_new_int64(s->cntlid));
	for (unsigned int i = 0; i < CTRLR_MAX_NAMESPACES; i++)
		if (s->ns[i])
			json_object_array_add(nss, rpc_ns_describe(s->ns[i]));
	json_object_object_add(o, "namespaces", nss);
	return o;
}

static void rpc_nvmf_get_subsystems(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_subsys p = {0};
	struct json_object *list;
	struct app_subsys *s;

	if (rpc_decode_params(req, params, rpc_nqn_opt_dec, RPC_N(rpc_nqn_opt_dec), &p))
		return;
	if (p.nqn && !(s = rpc_subsys_lookup(req, t, p.nqn)))
		return;
	list = json_object_new_array();
	for (s = t->subsystems; s; s = s->next)
		if (!p.nqn || !strcmp(p.nqn, s->nqn))
			json_object_array_add(list, rpc_subsys_describe(s));
	rpc_request_result(req, list);
}

/* ---- namespaces ---- */

struct rpc_add_ns {
	const char *nqn, *tgt_name;
	struct json_object *namespace;
};

static const struct rpc_decoder rpc_add_ns_dec[] = {
    RPC_DEC(rpc_add_ns, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_add_ns, namespace, RPC_T_OBJECT, false),
    RPC_DEC(rpc_add_ns, tgt_name, RPC_T_STRING, true),
};

struct rpc_ns {
	const char *bdev_name, *uuid, *nguid, *eui64;
	uint32_t nsid;
};

static const struct rpc_decoder rpc_ns_dec[] = {
    RPC_DEC(rpc_ns, bdev_name, RPC_T_STRING, false), RPC_DEC(rpc_ns, nsid, RPC_T_U32, true),
    RPC_DEC(rpc_ns, uuid, RPC_T_STRING, true),	     RPC_DEC(rpc_ns, nguid, RPC_T_STRING, true),
    RPC_DEC(rpc_ns, eui64, RPC_T_STRING, true),
};

static void rpc_nvmf_subsystem_add_ns(struct rpc_request *req, struct json_object *params,
				      void *ctx)
{
	struct rpc_add_ns p = {0};
	struct rpc_ns n = {0};
	struct app_ns_opts o;
	struct app_subsys *s;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_add_ns_dec, RPC_N(rpc_add_ns_dec), &p) ||
	    rpc_decode_params(req, p.namespace, rpc_ns_dec, RPC_N(rpc_ns_dec), &n) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	o = (struct app_ns_opts){
	    .bdev_name = n.bdev_name,
	    .nsid = n.nsid,
	    .uuid = n.uuid,
	    .nguid = n.nguid,
	    .eui64 = n.eui64,
	};
	rc = app_subsys_add_ns(ctx, s, &o, err);
	if (rc < 0)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_int(rc));
}

struct rpc_remove_ns {
	const char *nqn, *tgt_name;
	uint32_t nsid;
};

static const struct rpc_decoder rpc_remove_ns_dec[] = {
    RPC_DEC(rpc_remove_ns, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_remove_ns, nsid, RPC_T_U32, false),
    RPC_DEC(rpc_remove_ns, tgt_name, RPC_T_STRING, true),
};

static void rpc_nvmf_subsystem_remove_ns(struct rpc_request *req, struct json_object *params,
					 void *ctx)
{
	struct rpc_remove_ns p = {0};
	struct app_subsys *s;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_remove_ns_dec, RPC_N(rpc_remove_ns_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	rc = app_subsys_remove_ns(ctx, s, p.nsid, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

/* ---- listeners ---- */

struct rpc_listener {
	const char *nqn, *tgt_name, *manager, *bus;
	struct json_object *listen_address;
	bool secure_channel;
};

static const struct rpc_decoder rpc_listener_dec[] = {
    RPC_DEC(rpc_listener, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_listener, listen_address, RPC_T_OBJECT, false),
    RPC_DEC(rpc_listener, manager, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, bus, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, tgt_name, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, secure_channel, RPC_T_BOOL, true),
};

struct rpc_address {
	const char *trtype, *traddr, *adrfam, *trsvcid;
};

static const struct rpc_decoder rpc_address_dec[] = {
    RPC_DEC(rpc_address, trtype, RPC_T_STRING, false),
    RPC_DEC(rpc_address, traddr, RPC_T_STRING, false),
    RPC_DEC(rpc_address, adrfam, RPC_T_STRING, true),
    RPC_DEC(rpc_address, trsvcid, RPC_T_STRING, true),
};

/* Decodes a listener request; completes req on error and returns NULL. */
static struct app_subsys *rpc_listener_decode(struct rpc_request *req, struct json_object *params,
					      struct app_target *t, struct rpc_listener *p,
					      struct rpc_address *a)
{
	if (rpc_decode_params(req, params, rpc_listener_dec, RPC_N(rpc_listener_dec), p) ||
	    rpc_decode_params(req, p->listen_address, rpc_address_dec, RPC_N(rpc_address_dec), a))
		return NULL;
	if (p->secure_channel) {
		rpc_request_error(req, -EINVAL, "secure_channel is not supported on %s",
				  APP_TRTYPE);
		return NULL;
	}
	return rpc_subsys_lookup(req, t, p->nqn);
}

static void rpc_nvmf_subsystem_add_listener(struct rpc_request *req, struct json_object *params,
					    void *ctx)
{
	struct rpc_listener p = {0};
	struct rpc_address a = {0};
	struct app_subsys *s = rpc_listener_decode(req, params, ctx, &p, &a);

	if (s)
		app_listener_add(ctx, s, a.trtype, a.traddr, p.manager, p.bus, rpc_nvmf_done, req);
}

static void rpc_nvmf_subsystem_remove_listener(struct rpc_request *req, struct json_object *params,
					       void *ctx)
{
	struct rpc_listener p = {0};
	struct rpc_address a = {0};
	struct app_subsys *s = rpc_listener_decode(req, params, ctx, &p, &a);

	if (!s)
		return;
	if (!rpc_trtype_ok(a.trtype)) {
		rpc_request_error(req, -EINVAL, "trtype %s is not supported (%s or DOCA)", a.trtype,
				  APP_TRTYPE);
		return;
	}
	app_listener_remove(ctx, s, a.traddr, rpc_nvmf_done, req);
}

/* ---- statistics ---- */

#define RPC_STAT(o, st, f) json_object_object_add(o, #f, json_object_new_int64((int64_t)(st).f))

static struct json_object *rpc_stats_poll_groups(struct app_target *t)
{
	struct json_object *list = json_object_new_array();

	for (unsigned int i = 0; i < pcie_poll_groups_count(t->pgs); i++) {
		struct json_object *o = json_object_new_object();
		struct pcie_poll_group_stats st;
		char name[32];

		pcie_poll_group_get_stats(t->pgs, i, &st);
		snprintf(name, sizeof(name), "nvmf_tgt_poll_group_%u", i);
		json_object_object_add(o, "name", json_object_new_string(name));
		RPC_STAT(o, st, wakeups);
		RPC_STAT(o, st, db_msgs);
		RPC_STAT(o, st, sqes);
		RPC_STAT(o, st, bdev_polls);
		RPC_STAT(o, st, irqs);
		RPC_STAT(o, st, sqs);
		RPC_STAT(o, st, cqs);
		json_object_array_add(list, o);
	}
	return list;
}

static struct json_object *rpc_stats_controllers(struct app_target *t)
{
	struct json_object *list = json_object_new_array();

	for (struct app_subsys *s = t->subsystems; s; s = s->next) {
		struct json_object *o;
		struct ctrlr_stats st;

		if (!s->pc)
			continue;
		o = json_object_new_object();
		ctrlr_get_stats(pcie_ctrlr_core(s->pc), &st);
		json_object_object_add(o, "nqn", json_object_new_string(s->nqn));
		json_object_object_add(o, "vuid", json_object_new_string(s->fn->vuid));
		json_object_object_add(o, "enabled", json_object_new_boolean(st.enabled));
		RPC_STAT(o, st, admin_cmds);
		RPC_STAT(o, st, io_cmds);
		RPC_STAT(o, st, errors);
		RPC_STAT(o, st, data_units_read);
		RPC_STAT(o, st, data_units_written);
		RPC_STAT(o, st, host_read_cmds);
		RPC_STAT(o, st, host_write_cmds);
		RPC_STAT(o, st, media_errors);
		RPC_STAT(o, st, invalid_db_writes);
		RPC_STAT(o, st, aer_sent);
		RPC_STAT(o, st, irqs_raised);
		RPC_STAT(o, st, cq_full_holds);
		RPC_STAT(o, st, resets);
		RPC_STAT(o, st, shutdowns);
		RPC_STAT(o, st, io_sqs);
		RPC_STAT(o, st, io_cqs);
		json_object_array_add(list, o);
	}
	return list;
}

static struct json_object *rpc_stats_harts(struct app_target *t)
{
	struct json_object *list = json_object_new_array();

	for (unsigned int i = 0; i < dpa_num_harts(t->dpa); i++) {
		struct json_object *o = json_object_new_object();
		struct dpa_stats st;

		if (dpa_hart_get_stats(t->dpa, i, &st)) {
			json_object_put(o);
			continue;
		}
		json_object_object_add(o, "hart", json_object_new_int64(i));
		RPC_STAT(o, st, activations);
		RPC_STAT(o, st, kicks);
		RPC_STAT(o, st, db_completions);
		RPC_STAT(o, st, msgs_sent);
		RPC_STAT(o, st, msgs_received);
		RPC_STAT(o, st, msix_raised);
		RPC_STAT(o, st, msix_pended);
		RPC_STAT(o, st, msix_dropped);
		RPC_STAT(o, st, polls);
		RPC_STAT(o, st, sleeps);
		RPC_STAT(o, st, asleep_us);
		json_object_array_add(list, o);
	}
	return list;
}

static void rpc_nvmf_get_stats(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_trtype p = {0};
	struct json_object *o;

	if (rpc_decode_params(req, params, rpc_get_transports_dec + 1, 1, &p))
		return;
	if (!t->has_transport) {
		rpc_request_error(req, -EINVAL,
				  "transport %s does not exist: nvmf_create_transport first",
				  APP_TRTYPE);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "tick_rate", json_object_new_int64(1000000));
	json_object_object_add(o, "poll_groups", rpc_stats_poll_groups(t));
	json_object_object_add(o, "controllers", rpc_stats_controllers(t));
	json_object_object_add(o, "dpa_harts", rpc_stats_harts(t));
	rpc_request_result(req, o);
}

static const struct rpc_method rpc_nvmf_methods[] = {
    {"nvmf_create_transport", rpc_nvmf_create_transport, RPC_RUNTIME, false},
    {"nvmf_get_transports", rpc_nvmf_get_transports, RPC_RUNTIME, false},
    {"nvmf_create_subsystem", rpc_nvmf_create_subsystem, RPC_RUNTIME, false},
    {"nvmf_delete_subsystem", rpc_nvmf_delete_subsystem, RPC_RUNTIME, false},
    {"nvmf_get_subsystems", rpc_nvmf_get_subsystems, RPC_RUNTIME, false},
    {"nvmf_subsystem_add_ns", rpc_nvmf_subsystem_add_ns, RPC_RUNTIME, false},
    {"nvmf_subsystem_remove_ns", rpc_nvmf_subsystem_remove_ns, RPC_RUNTIME, false},
    {"nvmf_subsystem_add_listener", rpc_nvmf_subsystem_add_listener, RPC_RUNTIME, false},
    {"nvmf_subsystem_remove_listener", rpc_nvmf_subsystem_remove_listener, RPC_RUNTIME, false},
    {"nvmf_get_stats", rpc_nvmf_get_stats, RPC_RUNTIME, false},
};

int rpc_nvmf_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_nvmf_methods, RPC_N(rpc_nvmf_methods));
}
