/* app/rpc_zns.c - zone faults for test engineers: nvmf_emu_set_zone_state makes a zone of a
 * zoned namespace Read Only or Offline, as a failing medium would (controller/zns_cmd.c), which
 * the hosts learn from the Changed Zone List and the Zone Descriptor Changed notice. SPDK has
 * no such method; the name follows nvmf_emu_set_health. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "transport/pcie.h"

#include <errno.h>
#include <string.h>

struct rpc_zns_set {
	const char *nqn;
	uint32_t nsid;
	uint64_t zslba;
	const char *state;
};

static const struct rpc_decoder rpc_zns_set_dec[] = {
    RPC_DEC(rpc_zns_set, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_zns_set, nsid, RPC_T_U32, false),
    RPC_DEC(rpc_zns_set, zslba, RPC_T_U64, false),
    RPC_DEC(rpc_zns_set, state, RPC_T_STRING, false),
};

/* The ZS values Report Zones gives (ZNS 1.1), by the names this method uses. */
static const char *rpc_zns_state_name(uint8_t zs)
{
	switch (zs) {
	case 0x1:
		return "empty";
	case 0x2:
		return "implicitly_opened";
	case 0x3:
		return "explicitly_opened";
	case 0x4:
		return "closed";
	case 0xd:
		return "read_only";
	case 0xe:
		return "full";
	case 0xf:
		return "offline";
	default:
		return "unknown";
	}
}

static void rpc_zns_set_state(struct rpc_request *req, struct json_object *params, void *ctx)
{
	struct rpc_zns_set p = {0};
	struct app_subsys *s;
	struct json_object *o;
	struct ctrlr *c;
	uint64_t wp;
	uint8_t zs;
	bool offline;
	int rc;

	if (rpc_decode_params(req, params, rpc_zns_set_dec, RPC_N(rpc_zns_set_dec), &p))
		return;
	if (!strcmp(p.state, "read_only")) {
		offline = false;
	} else if (!strcmp(p.state, "offline")) {
		offline = true;
	} else {
		rpc_request_error(req, -EINVAL, "state '%s': read_only or offline", p.state);
		return;
	}
	s = app_subsys_find(ctx, p.nqn);
	if (!s) {
		rpc_request_error(req, -ENODEV, "no subsystem %s", p.nqn);
		return;
	}
	/* The zone belongs to the namespace: any controller of the subsystem reaches it (and
	 * every controller attached to it records the change). */
	c = app_subsys_first_ctrl(s);
	if (!c) {
		rpc_request_error(req, -ENODEV,
				  "subsystem %s has no controller (add a listener first)", p.nqn);
		return;
	}
	rc = ctrlr_zone_set_state(c, p.nsid, p.zslba, offline);
	if (rc == -ENOENT) {
		rpc_request_error(req, rc, "no namespace %u in %s", p.nsid, p.nqn);
		return;
	}
	if (rc == -ENOTSUP) {
		rpc_request_error(req, rc, "namespace %u of %s is not zoned", p.nsid, p.nqn);
		return;
	}
	if (rc == -EINVAL) {
		rpc_request_error(req, rc,
				  "LBA %llu is not the first LBA of a zone of namespace %u, or the "
				  "zone is offline (no way back)",
				  (unsigned long long)p.zslba, p.nsid);
		return;
	}
	if (rc) {
		rpc_request_errno(req, rc, "nvmf_emu_set_zone_state");
		return;
	}
	/* The zone as the controller now reports it. */
	rc = ctrlr_zone_get(c, p.nsid, p.zslba, &zs, &wp);
	if (rc) {
		rpc_request_errno(req, rc, "nvmf_emu_set_zone_state: reading the zone back");
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "nsid", json_object_new_int64(p.nsid));
	json_object_object_add(o, "zslba", json_object_new_int64((int64_t)p.zslba));
	json_object_object_add(o, "state", json_object_new_string(rpc_zns_state_name(zs)));
	rpc_request_result(req, o);
}

static const struct rpc_method rpc_zns_methods[] = {
    {"nvmf_emu_set_zone_state", rpc_zns_set_state, RPC_RUNTIME, false},
};

int rpc_zns_register(struct rpc_server *srv)
{
	return rpc_server_register(srv, rpc_zns_methods, RPC_N(rpc_zns_methods));
}
