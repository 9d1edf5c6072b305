/* app/rpc_health.c - steering a controller's SMART / Health (controller/health.c) the way test
 * engineers need it: nvmf_emu_set_health (temperature, available spare, percentage used, or back
 * to the model), nvmf_emu_inject_media_error (an LBA range that reads fail on until written),
 * nvmf_emu_get_health. Each controller of a subsystem has its own health (its own load and
 * temperature): `cntlid` picks one; without it, setting and injecting apply to every controller
 * and getting reads the first. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "transport/pcie.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* The controller a request addresses: the one with `cntlid` (>= 0), or the subsystem's first
 * live one (cntlid -1); *sp is the subsystem. NULL with the error sent. */
static struct ctrlr *rpc_health_ctrlr(struct rpc_request *req, struct app_target *t,
				      const char *nqn, int64_t cntlid, struct app_subsys **sp)
{
	struct app_subsys *s = app_subsys_find(t, nqn);
	struct app_listener *l;
	struct ctrlr *c;

	if (!s) {
		rpc_request_error(req, -ENODEV, "no subsystem %s", nqn);
		return NULL;
	}
	*sp = s;
	if (cntlid < 0) {
		c = app_subsys_first_ctrl(s);
		if (!c)
			rpc_request_error(req, -ENODEV,
					  "subsystem %s has no controller (add a listener first)", nqn);
		return c;
	}
	l = cntlid <= 0xffff ? app_subsys_listener_by_cntlid(s, (uint16_t)cntlid) : NULL;
	if (!l || !l->pc) {
		rpc_request_error(req, -ENODEV, "subsystem %s has no controller %lld", nqn,
				  (long long)cntlid);
		return NULL;
	}
	return pcie_ctrlr_core(l->pc);
}

struct rpc_health_set {
	const char *nqn;
	int64_t cntlid;
	int64_t temperature_c;
	int64_t available_spare;
	int64_t percent_used;
	bool reset;
};

static const struct rpc_decoder rpc_health_set_dec[] = {
    RPC_DEC(rpc_health_set, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_health_set, cntlid, RPC_T_I64, true),
    RPC_DEC(rpc_health_set, temperature_c, RPC_T_I64, true),
    RPC_DEC(rpc_health_set, available_spare, RPC_T_I64, true),
    RPC_DEC(rpc_health_set, percent_used, RPC_T_I64, true),
    RPC_DEC(rpc_health_set, reset, RPC_T_BOOL, true),
};

static struct json_object *rpc_health_json(struct ctrlr *c)
{
	struct json_object *o = json_object_new_object();
	struct ctrlr_health_info h;

	ctrlr_health_get(c, &h);
	json_object_object_add(o, "temperature_c", json_object_new_int((int)h.temp_k - 273));
	json_object_object_add(o, "temperature_k", json_object_new_int(h.temp_k));
	json_object_object_add(o, "available_spare", json_object_new_int(h.spare));
	json_object_object_add(o, "available_spare_threshold", json_object_new_int(h.spare_thresh));
	json_object_object_add(o, "percent_used", json_object_new_int(h.used));
	json_object_object_add(o, "critical_warning", json_object_new_int(h.critical_warning));
	json_object_object_add(o, "injected_media_error_blocks",
			       json_object_new_int64((int64_t)h.injected_media_error_blocks));
	return o;
}

static void rpc_health_set(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_health_set p = {.temperature_c = INT64_MIN, .available_spare = -1,
				   .percent_used = -1, .cntlid = -1};
	struct ctrlr_health_set s = {0};
	struct app_subsys *sub;
	struct ctrlr *c;

	if (rpc_decode_params(req, params, rpc_health_set_dec, RPC_N(rpc_health_set_dec), &p))
		return;
	c = rpc_health_ctrlr(req, ctx, p.nqn, p.cntlid, &sub);
	if (!c)
		return;
	if (p.temperature_c != INT64_MIN && (p.temperature_c < -272 || p.temperature_c > 1000)) {
		rpc_request_error(req, -EINVAL, "temperature_c %lld: -272..1000",
				  (long long)p.temperature_c);
		return;
	}
	if (p.available_spare != -1 && (p.available_spare < 0 || p.available_spare > 100)) {
		rpc_request_error(req, -EINVAL, "available_spare: 0..100 (%%)");
		return;
	}
	if (p.percent_used != -1 && (p.percent_used < 0 || p.percent_used > 255)) {
		rpc_request_error(req, -EINVAL, "percent_used: 0..255");
		return;
	}
	s.reset = p.reset;
	s.temp_k = p.temperature_c != INT64_MIN ? (uint32_t)(p.temperature_c + 273) : 0;
	s.spare = (int)p.available_spare;
	s.used = (int)p.percent_used;
	/* Without a cntlid, every controller of the subsystem. */
	for (struct app_listener *l = sub->listeners; l; l = l->next) {
		struct ctrlr *m = l->pc ? pcie_ctrlr_core(l->pc) : NULL;

		if (!m || (p.cntlid >= 0 && m != c))
			continue;
		if (ctrlr_health_set(m, &s)) {
			rpc_request_error(req, -EINVAL, "bad health values");
			return;
		}
	}
	rpc_request_result(req, rpc_health_json(c));
}

struct rpc_health_nqn {
	const char *nqn;
	int64_t cntlid;
};

static const struct rpc_decoder rpc_health_nqn_dec[] = {
    RPC_DEC(rpc_health_nqn, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_health_nqn, cntlid, RPC_T_I64, true),
};

static void rpc_health_get(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_health_nqn p = {.cntlid = -1};
	struct app_subsys *sub;
	struct ctrlr *c;

	if (rpc_decode_params(req, params, rpc_health_nqn_dec, RPC_N(rpc_health_nqn_dec), &p))
		return;
	c = rpc_health_ctrlr(req, ctx, p.nqn, p.cntlid, &sub);
	if (c)
		rpc_request_result(req, rpc_health_json(c));
}

struct rpc_health_media {
	const char *nqn;
	int64_t cntlid;
	uint32_t nsid;
	uint64_t lba;
	uint64_t num_blocks;
};

static const struct rpc_decoder rpc_health_media_dec[] = {
    RPC_DEC(rpc_health_media, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_health_media, cntlid, RPC_T_I64, true),
    RPC_DEC(rpc_health_media, nsid, RPC_T_U32, false),
    RPC_DEC(rpc_health_media, lba, RPC_T_U64, false),
    RPC_DEC(rpc_health_media, num_blocks, RPC_T_U64, true),
};

static void rpc_health_media(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_health_media p = {.num_blocks = 1, .cntlid = -1};
	struct app_subsys *sub;
	struct ctrlr *c;
	int rc;

	if (rpc_decode_params(req, params, rpc_health_media_dec, RPC_N(rpc_health_media_dec), &p))
		return;
	c = rpc_health_ctrlr(req, ctx, p.nqn, p.cntlid, &sub);
	if (!c)
		return;
	/* The bad blocks belong to the namespace, whichever controller reads them; the
	 * controller named counts them among its media errors. */
	rc = ctrlr_inject_media_error(c, p.nsid, p.lba, p.num_blocks);
	if (rc == -ENOENT)
		rpc_request_error(req, rc, "no namespace %u in %s", p.nsid, p.nqn);
	else if (rc == -ERANGE)
		rpc_request_error(req, rc, "blocks %llu+%llu are outside namespace %u",
				  (unsigned long long)p.lba, (unsigned long long)p.num_blocks,
				  p.nsid);
	else if (rc)
		rpc_request_errno(req, rc, "nvmf_emu_inject_media_error");
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static const struct rpc_method rpc_health_methods[] = {
    {"nvmf_emu_set_health", rpc_health_set, RPC_RUNTIME, false},
    {"nvmf_emu_get_health", rpc_health_get, RPC_RUNTIME, false},
    {"nvmf_emu_inject_media_error", rpc_health_media, RPC_RUNTIME, false},
};

int rpc_health_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_health_methods, RPC_N(rpc_health_methods));
}
