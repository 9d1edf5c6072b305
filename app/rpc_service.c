/* app/rpc_service.c - the methods of the daemon as a service: the metrics exporter
 * (nvmf_emu_metrics_start, nvmf_emu_metrics_stop, nvmf_emu_get_metrics), configuration reloads
 * (nvmf_emu_reload_config, what systemctl reload runs) and the test-only faults
 * (nvmf_emu_test_fault). */
#include "app/app_internal.h"
#include "app/metrics_http.h"
#include "app/rpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct rpc_metrics_start {
	const char *listen_address;
	uint32_t buckets_per_octave;
	bool per_queue;
};

static const struct rpc_decoder rpc_metrics_start_dec[] = {
    RPC_DEC(rpc_metrics_start, listen_address, RPC_T_STRING, false),
    RPC_DEC(rpc_metrics_start, buckets_per_octave, RPC_T_U32, true),
    RPC_DEC(rpc_metrics_start, per_queue, RPC_T_BOOL, true),
};

static void rpc_metrics_start(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;
	struct rpc_metrics_start p = {0};
	struct json_object *o;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_metrics_start_dec, RPC_N(rpc_metrics_start_dec), &p))
		return;
	rc = app_metrics_start(t, p.listen_address, p.buckets_per_octave, p.per_queue, err);
	if (rc)
		return rpc_request_error(req, rc, "%s", err);
	o = json_object_new_object();
	json_object_object_add(o, "listen_address",
			       json_object_new_string(metrics_http_address(t->metrics.http)));
	rpc_request_result(req, o);
}

static void rpc_metrics_stop(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct app_target *t = ctx;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	if (!t->metrics.http)
		return rpc_request_error(req, -ENOENT, "the metrics are not served");
	if (t->metrics.from_cmdline)
		return rpc_request_error(req, -EPERM,
					 "the metrics exporter was started with "
					 "--metrics: it runs as long as the daemon");
	app_metrics_stop(t);
	rpc_request_result(req, json_object_new_boolean(true));
}

/* The exposition text itself, without HTTP (nvme-emu-rpc prints it as it is). */
static void rpc_get_metrics(struct rpc_request *req, struct json_object *params, void *ctx)
{
	char *text;
	size_t len;
	int rc;

	if (rpc_decode_params(req, params, NULL, 0, NULL))
		return;
	rc = app_metrics_render(ctx, &text, &len);
	if (rc)
		return rpc_request_errno(req, rc, "rendering the metrics");
	rpc_request_result(req, json_object_new_string_len(text, (int)len));
	free(text);
}

struct rpc_reload {
	const char *file;
};

static const struct rpc_decoder rpc_reload_dec[] = {
    RPC_DEC(rpc_reload, file, RPC_T_STRING, true),
};

static void rpc_reload_done(void *arg, int rc, const char *msg)
{
	struct rpc_request *req = arg;

	if (rc)
		rpc_request_error(req, rc, "%s", msg ? msg : "reload failed");
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_reload_config(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_reload p = {0};
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_reload_dec, RPC_N(rpc_reload_dec), &p))
		return;
	rc = app_service_reload(ctx, p.file, rpc_reload_done, req, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
}

struct rpc_test_fault {
	const char *fault;
	uint32_t poll_group, hold_ms, count;
};

static const struct rpc_decoder rpc_test_fault_dec[] = {
    RPC_DEC(rpc_test_fault, fault, RPC_T_STRING, false),
    RPC_DEC(rpc_test_fault, poll_group, RPC_T_U32, true),
    RPC_DEC(rpc_test_fault, hold_ms, RPC_T_U32, true),
    RPC_DEC(rpc_test_fault, count, RPC_T_U32, true),
};

static void rpc_test_fault(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_test_fault p = {0};
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_test_fault_dec, RPC_N(rpc_test_fault_dec), &p))
		return;
	rc = app_service_test_fault(ctx, p.fault, p.poll_group, p.hold_ms, p.count, err);
	if (rc)
		return rpc_request_error(req, rc, "%s", err);
	rpc_request_result(req, json_object_new_boolean(true));
}

static const struct rpc_method rpc_service_methods[] = {
    {"nvmf_emu_metrics_start", rpc_metrics_start, RPC_STARTUP | RPC_RUNTIME, false},
    {"nvmf_emu_metrics_stop", rpc_metrics_stop, RPC_STARTUP | RPC_RUNTIME, false},
    {"nvmf_emu_get_metrics", rpc_get_metrics, RPC_STARTUP | RPC_RUNTIME, false},
    {"nvmf_emu_reload_config", rpc_reload_config, RPC_RUNTIME, false},
    {"nvmf_emu_test_fault", rpc_test_fault, RPC_STARTUP | RPC_RUNTIME, false},
};

int rpc_service_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_service_methods, RPC_N(rpc_service_methods));
}
