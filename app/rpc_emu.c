/* app/rpc_emu.c - emulation-manager methods (DOCA's nvmf_doca_* family, here nvmf_emu_* with the
 * nvmf_doca_* names as aliases): managers, functions (VUIDs) and where they are attached. */
#include "app/app_internal.h"
#include "app/rpc.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Ports a QEMU manager gets when none are given: qemu-configs' --hotplug-ports names. */
#define RPC_DEFAULT_PORTS 8

struct rpc_manager {
	const char *name, *qmp_socket;
	struct json_object *hotplug_ports;
};

static const struct rpc_decoder rpc_manager_dec[] = {
    RPC_DEC(rpc_manager, name, RPC_T_STRING, false),
    RPC_DEC(rpc_manager, qmp_socket, RPC_T_STRING, false),
    RPC_DEC(rpc_manager, hotplug_ports, RPC_T_ARRAY, true),
};

static const struct rpc_decoder rpc_manager_name_dec[] = {
    RPC_DEC(rpc_manager, name, RPC_T_STRING, false),
};

static void rpc_emu_create_manager(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_manager p = {0};
	const char *ports[APP_MAX_PORTS];
	char defports[RPC_DEFAULT_PORTS][8], err[APP_ERR_LEN];
	unsigned int n = 0;
	int rc;

	if (rpc_decode_params(req, params, rpc_manager_dec, RPC_N(rpc_manager_dec), &p))
		return;
	if (p.hotplug_ports) {
		size_t len = json_object_array_length(p.hotplug_ports);

		if (!len || len > APP_MAX_PORTS) {
			rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
					  "Invalid parameters: hotplug_ports: 1..%d port names",
					  APP_MAX_PORTS);
			return;
		}
		for (n = 0; n < len; n++) {
			struct json_object *v = json_object_array_get_idx(p.hotplug_ports, n);

			if (!json_object_is_type(v, json_type_string)) {
				rpc_request_error(
				    req, RPC_ERR_INVALID_PARAMS,
				    "Invalid parameters: hotplug_ports must be strings");
				return;
			}
			ports[n] = json_object_get_string(v);
		}
	} else {
		for (n = 0; n < RPC_DEFAULT_PORTS; n++) {
			snprintf(defports[n], sizeof(defports[n]), "hp%u", n);
			ports[n] = defports[n];
		}
	}
	rc = app_manager_create(ctx, p.name, p.qmp_socket, ports, n, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_emu_delete_manager(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_manager p = {0};
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_manager_name_dec, 1, &p))
		return;
	rc = app_manager_delete(ctx, p.name, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_emu_get_managers(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct json_object *list;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	list = json_object_new_array();
	for (struct app_manager *m = t->managers; m; m = m->next) {
		struct json_object *o = json_object_new_object(), *ports = json_object_new_array();
		unsigned int nfn = 0;

		for (struct app_function *fn = t->functions; fn; fn = fn->next)
			nfn += fn->mgr == m;
		json_object_object_add(o, "name", json_object_new_string(m->name));
		json_object_object_add(o, "type",
				       json_object_new_string(m->qmp_socket ? "qemu" : "local"));
		if (m->qmp_socket)
			json_object_object_add(o, "qmp_socket",
					       json_object_new_string(m->qmp_socket));
		for (unsigned int i = 0; i < m->nr_ports; i++)
			json_object_array_add(ports, json_object_new_string(m->ports[i]));
		json_object_object_add(o, "hotplug_ports", ports);
		json_object_object_add(o, "functions", json_object_new_int64(nfn));
		json_object_array_add(list, o);
	}
	rpc_request_result(req, list);
}

struct rpc_function {
	const char *manager, *dev_name, *vuid, *socket;
};

static const struct rpc_decoder rpc_create_fn_dec[] = {
    RPC_DEC(rpc_function, manager, RPC_T_STRING, true),
    RPC_DEC(rpc_function, dev_name, RPC_T_STRING, true),
    RPC_DEC(rpc_function, vuid, RPC_T_STRING, true),
    RPC_DEC(rpc_function, socket, RPC_T_STRING, true),
};

static const struct rpc_decoder rpc_vuid_dec[] = {
    RPC_DEC(rpc_function, vuid, RPC_T_STRING, false),
    RPC_DEC(rpc_function, manager, RPC_T_STRING, true),
    RPC_DEC(rpc_function, dev_name, RPC_T_STRING, true),
};

static const struct rpc_decoder rpc_list_fn_dec[] = {
    RPC_DEC(rpc_function, manager, RPC_T_STRING, true),
    RPC_DEC(rpc_function, dev_name, RPC_T_STRING, true),
};

/* "manager", or DOCA's "dev_name", or "local". */
static struct app_manager *rpc_emu_manager(struct rpc_request *req, struct app_target *t,
					   const struct rpc_function *p)
{
	const char *name = p->manager ? p->manager : p->dev_name ? p->dev_name : "local";
	struct app_manager *m = app_manager_find(t, name);

	if (!m)
		rpc_request_error(req, -ENODEV, "no emulation manager %s", name);
	return m;
}

static void rpc_emu_create_function(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_function p = {0};
	struct app_function *fn;
	struct app_manager *m;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_create_fn_dec, RPC_N(rpc_create_fn_dec), &p) ||
	    !(m = rpc_emu_manager(req, ctx, &p)))
		return;
	if (p.socket && p.socket[0] != '/') {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: socket must be an absolute path");
		return;
	}
	rc = app_function_create(ctx, m, p.vuid, p.socket, false, &fn, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_string(fn->vuid));
}

static void rpc_emu_destroy_function(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_function p = {0};
	struct app_function *fn;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_vuid_dec, RPC_N(rpc_vuid_dec), &p))
		return;
	fn = app_function_find(ctx, p.vuid);
	if (!fn || (p.manager && strcmp(p.manager, fn->mgr->name))) {
		rpc_request_error(req, -ENODEV, "no function %s", p.vuid);
		return;
	}
	rc = app_function_destroy(ctx, fn, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_emu_list_functions(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_function p = {0};
	struct app_manager *m = NULL;
	struct json_object *list;

	if (rpc_decode_params(req, params, rpc_list_fn_dec, RPC_N(rpc_list_fn_dec), &p))
		return;
	if ((p.manager || p.dev_name) && !(m = rpc_emu_manager(req, t, &p)))
		return;
	list = json_object_new_array();
	for (struct app_function *fn = t->functions; fn; fn = fn->next) {
		struct json_object *o;

		if (m && fn->mgr != m)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "vuid", json_object_new_string(fn->vuid));
		json_object_object_add(o, "manager", json_object_new_string(fn->mgr->name));
		json_object_object_add(o, "socket", json_object_new_string(fn->socket_path));
		json_object_object_add(o, "subsystem",
				       fn->listener ? json_object_new_string(fn->listener->s->nqn)
						    : NULL);
		if (fn->listener)
			json_object_object_add(o, "cntlid",
					       json_object_new_int64(fn->listener->cntlid));
		json_object_object_add(o, "bus", fn->bus ? json_object_new_string(fn->bus) : NULL);
		json_object_object_add(o, "implicit", json_object_new_boolean(fn->implicit));
		json_object_array_add(list, o);
	}
	rpc_request_result(req, list);
}

static const struct rpc_method rpc_emu_methods[] = {
    {"nvmf_emu_create_manager", rpc_emu_create_manager, RPC_RUNTIME, false},
    {"nvmf_emu_delete_manager", rpc_emu_delete_manager, RPC_RUNTIME, false},
    {"nvmf_emu_get_managers", rpc_emu_get_managers, RPC_RUNTIME, false},
    {"nvmf_emu_create_function", rpc_emu_create_function, RPC_RUNTIME, false},
    {"nvmf_emu_destroy_function", rpc_emu_destroy_function, RPC_RUNTIME, false},
    {"nvmf_emu_list_functions", rpc_emu_list_functions, RPC_RUNTIME, false},
    {"nvmf_doca_get_managers", rpc_emu_get_managers, RPC_RUNTIME, true},
    {"nvmf_doca_create_function", rpc_emu_create_function, RPC_RUNTIME, true},
    {"nvmf_doca_destroy_function", rpc_emu_destroy_function, RPC_RUNTIME, true},
    {"nvmf_doca_list_functions", rpc_emu_list_functions, RPC_RUNTIME, true},
};

int rpc_emu_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_emu_methods, RPC_N(rpc_emu_methods));
}
