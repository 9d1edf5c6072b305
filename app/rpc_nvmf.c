/* app/rpc_nvmf.c - nvmf methods with SPDK's names and parameters: the PCIE_EMU transport,
 * subsystems, namespaces, listeners (hotplug) and statistics. */
#include "app/app_internal.h"
#include "app/rpc.h"
#include "transport/pcie.h"
#include "hw/hw.h"
#include "dpa/dpa.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


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
	const char *trtype, *tgt_name;
	uint32_t max_queue_depth, max_io_qpairs_per_ctrlr, max_qpairs_per_ctrlr, max_io_size;
	uint32_t in_capsule_data_size, io_unit_size, max_aq_depth;
	const char *doorbells;
	uint32_t dpa_harts, num_poll_groups;
	const char *profile;
	bool sgl, disable_mappable_bar0, disable_shadow_doorbells;
	uint32_t vendor_id, device_id, subsystem_vendor_id, subsystem_id;
};

#define RPC_NET_ONLY "an RDMA/TCP option: the PCIe emulation transport has no network"
static const struct rpc_decoder rpc_transport_dec[] = {
    RPC_DEC(rpc_transport, trtype, RPC_T_STRING, false),
    RPC_DEC(rpc_transport, tgt_name, RPC_T_STRING, true),
    RPC_DEC(rpc_transport, max_queue_depth, RPC_T_U32, true),
    RPC_DEC(rpc_transport, max_io_qpairs_per_ctrlr, RPC_T_U32, true),
    /* SPDK's old name, counting the admin queue. */
    RPC_DEC(rpc_transport, max_qpairs_per_ctrlr, RPC_T_U32, true),
    RPC_DEC(rpc_transport, max_io_size, RPC_T_U32, true),
    /* Accepted and reported, no effect on a PCIe function (DOCA's "-c" and "-u"). */
    RPC_DEC(rpc_transport, in_capsule_data_size, RPC_T_U32, true),
    RPC_DEC(rpc_transport, io_unit_size, RPC_T_U32, true),
    RPC_DEC(rpc_transport, max_aq_depth, RPC_T_U32, true),
    /* Trapped doorbells; no Doorbell Buffer Config. */
    RPC_DEC(rpc_transport, disable_mappable_bar0, RPC_T_BOOL, true),
    RPC_DEC(rpc_transport, disable_shadow_doorbells, RPC_T_BOOL, true),
    RPC_DEC(rpc_transport, doorbells, RPC_T_STRING, true),
    RPC_DEC(rpc_transport, dpa_harts, RPC_T_U32, true),
    RPC_DEC(rpc_transport, num_poll_groups, RPC_T_U32, true),
    RPC_DEC(rpc_transport, profile, RPC_T_STRING, true),
    RPC_DEC(rpc_transport, sgl, RPC_T_BOOL, true),
    /* The functions' PCI identity (nvme-emu's; 0: the defaults). */
    RPC_DEC(rpc_transport, vendor_id, RPC_T_U32, true),
    RPC_DEC(rpc_transport, device_id, RPC_T_U32, true),
    RPC_DEC(rpc_transport, subsystem_vendor_id, RPC_T_U32, true),
    RPC_DEC(rpc_transport, subsystem_id, RPC_T_U32, true),
    /* SPDK's shared buffer pools: nvme-emu moves data straight between guest memory and the
     * backend, so there is nothing to size. */
    RPC_IGNORED("num_shared_buffers", RPC_T_U32),
    RPC_IGNORED("buf_cache_size", RPC_T_U32),
    RPC_IGNORED("iobuf_small_cache_size", RPC_T_U32),
    RPC_IGNORED("iobuf_large_cache_size", RPC_T_U32),
    RPC_IGNORED("abort_timeout_sec", RPC_T_U32),
    /* Adaptive interrupt coalescing and passthrough are not done: "disable" is what we do. */
    RPC_IGNORED("disable_adaptive_irq", RPC_T_BOOL),
    RPC_IGNORED("disable_command_passthru", RPC_T_BOOL),
    RPC_OFF("zcopy", RPC_T_BOOL, 0, "zero-copy transmission is a TCP option"),
    RPC_OFF("dif_insert_or_strip", RPC_T_BOOL, 0,
	    "nvme-emu namespaces have no protection information"),
    RPC_OFF("masked_oncs", RPC_T_ARRAY, 0, "ONCS bits cannot be masked"),
    RPC_OFF("masked_fuses", RPC_T_ARRAY, 0, "FUSES bits cannot be masked"),
    RPC_OFF("no_srq", RPC_T_BOOL, 0, RPC_NET_ONLY),
    RPC_OFF("c2h_success", RPC_T_BOOL, 1, RPC_NET_ONLY),
    RPC_OFF("no_wr_batching", RPC_T_BOOL, 0, RPC_NET_ONLY),
    RPC_OFF("num_cqe", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("max_srq_depth", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("sock_priority", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("acceptor_backlog", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("control_msg_num", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("acceptor_poll_rate", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("ack_timeout", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("data_wr_pool_size", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("kas", RPC_T_U32, 0, RPC_NET_ONLY),
    RPC_OFF("min_kato", RPC_T_U32, 0, RPC_NET_ONLY),
};

static bool rpc_trtype_ok(const char *trtype)
{
	return app_trtype_canonical(trtype) != NULL;
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
	    .vendor_id = d->vendor_id,
	    .device_id = d->device_id,
	    .subsystem_vendor_id = d->subsys_vendor_id,
	    .subsystem_id = d->subsys_id,
	};
	struct app_transport_opts o;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_transport_dec, RPC_N(rpc_transport_dec), &p))
		return;
	if (!rpc_trtype_ok(p.trtype)) {
		rpc_request_error(req, -EINVAL, "trtype %s is not supported (%s, VFIOUSER or DOCA)",
				  p.trtype, APP_TRTYPE);
		return;
	}
	if (p.vendor_id >= 0xffff || p.device_id >= 0xffff || p.subsystem_vendor_id >= 0xffff ||
	    p.subsystem_id >= 0xffff) {
		rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
				  "Invalid parameters: PCI IDs are 1..0xfffe (0: the default)");
		return;
	}
	if (p.max_qpairs_per_ctrlr) {
		if (p.max_qpairs_per_ctrlr < 2) {
			rpc_request_error(req, RPC_ERR_INVALID_PARAMS,
					  "Invalid parameters: max_qpairs_per_ctrlr counts the admin "
					  "queue: 2 or more");
			return;
		}
		p.max_io_qpairs_per_ctrlr = p.max_qpairs_per_ctrlr - 1;
	}
	o = (struct app_transport_opts){
	    .max_queue_depth = p.max_queue_depth,
	    .max_io_qpairs_per_ctrlr = p.max_io_qpairs_per_ctrlr,
	    .max_io_size = p.max_io_size,
	    .dpa_harts = p.dpa_harts,
	    .num_poll_groups = p.num_poll_groups,
	    .pg_cpumask = d->pg_cpumask,
	    .pin_poll_groups = d->pin_poll_groups,
	    .profile = hw_profile_find(p.profile),
	    .sgl = p.sgl,
	    .max_dma_regions = d->max_dma_regions,
	    .max_dma_bytes = d->max_dma_bytes,
	    .allow_any_dma_fd = d->allow_any_dma_fd,
	    .no_dbbuf = p.disable_shadow_doorbells,
	    .in_capsule_data_size = p.in_capsule_data_size,
	    .io_unit_size = p.io_unit_size,
	    .max_aq_depth = p.max_aq_depth,
	    .vendor_id = (uint16_t)p.vendor_id,
	    .device_id = (uint16_t)p.device_id,
	    .subsys_vendor_id = (uint16_t)p.subsystem_vendor_id,
	    .subsys_id = (uint16_t)p.subsystem_id,
	};
	snprintf(o.trtype, sizeof(o.trtype), "%s", app_trtype_canonical(p.trtype));
	if (p.disable_mappable_bar0)
		p.doorbells = "trap";
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

/* The name the transport was created with (the command line's: PCIE_EMU). */
static const char *rpc_transport_name(const struct app_target *t)
{
	return t->tr.trtype[0] ? t->tr.trtype : APP_TRTYPE;
}

static struct json_object *rpc_transport_describe(struct app_target *t)
{
	struct json_object *o = json_object_new_object();
	const struct app_transport_opts *tr = &t->tr;

	json_object_object_add(o, "trtype", json_object_new_string(rpc_transport_name(t)));
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
	json_object_object_add(o, "in_capsule_data_size",
			       json_object_new_int64(tr->in_capsule_data_size));
	json_object_object_add(o, "io_unit_size", json_object_new_int64(tr->io_unit_size));
	json_object_object_add(o, "max_aq_depth",
			       json_object_new_int64(tr->max_aq_depth ? tr->max_aq_depth : 1024));
	json_object_object_add(o, "disable_mappable_bar0",
			       json_object_new_boolean(tr->db_mode == HW_DB_MODE_TRAP));
	json_object_object_add(o, "disable_shadow_doorbells",
			       json_object_new_boolean(tr->no_dbbuf));
	{
		struct pcie_ctrlr_opts po = {
		    .vendor_id = tr->vendor_id,
		    .device_id = tr->device_id,
		    .subsys_vendor_id = tr->subsys_vendor_id,
		    .subsys_id = tr->subsys_id,
		};
		struct hw_pci_ids ids;

		pcie_nvme_pci_ids(&po, &ids);
		json_object_object_add(o, "vendor_id", json_object_new_int64(ids.vendor_id));
		json_object_object_add(o, "device_id", json_object_new_int64(ids.device_id));
		json_object_object_add(o, "subsystem_vendor_id",
				       json_object_new_int64(ids.subsys_vendor_id));
		json_object_object_add(o, "subsystem_id", json_object_new_int64(ids.subsys_id));
	}
	json_object_object_add(o, "zcopy", json_object_new_boolean(false));
	json_object_object_add(o, "dif_insert_or_strip", json_object_new_boolean(false));
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
	/* One transport answers to all three names. */
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
	const char *nqn, *serial_number, *model_number, *tgt_name, *event_log_file, *state_file;
	const char *pmr_file;
	uint32_t max_namespaces, min_cntlid, max_cntlid, cmb_size_mib, pmr_size_mib;
	uint32_t fdp_ruh;
	uint64_t fdp_ru_size;
	bool allow_any_host;
};

static const struct rpc_decoder rpc_create_subsys_dec[] = {
    RPC_DEC(rpc_subsys, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_subsys, serial_number, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, model_number, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, max_namespaces, RPC_T_U32, true),
    RPC_DEC(rpc_subsys, allow_any_host, RPC_T_BOOL, true),
    RPC_DEC(rpc_subsys, tgt_name, RPC_T_STRING, true),
    /* The CNTLIDs its listeners' controllers take; the Identify limits for DSM and Write
     * Zeroes are the controller's own. */
    RPC_DEC(rpc_subsys, min_cntlid, RPC_T_U32, true),
    RPC_DEC(rpc_subsys, max_cntlid, RPC_T_U32, true),
    /* nvme-emu's: the Persistent Event Log's state file (controller/pel.c). */
    RPC_DEC(rpc_subsys, event_log_file, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, state_file, RPC_T_STRING, true),
    /* nvme-emu's: each controller's Controller Memory Buffer and Persistent Memory Region
     * (transport/pcie_cmb.c, pcie_pmr.c). */
    RPC_DEC(rpc_subsys, cmb_size_mib, RPC_T_U32, true),
    RPC_DEC(rpc_subsys, pmr_file, RPC_T_STRING, true),
    RPC_DEC(rpc_subsys, pmr_size_mib, RPC_T_U32, true),
    /* nvme-emu's: Flexible Data Placement (controller/device/fdp.c): reclaim unit handles and
     * reclaim unit bytes of the endurance group's configuration. */
    RPC_DEC(rpc_subsys, fdp_ruh, RPC_T_U32, true),
    RPC_DEC(rpc_subsys, fdp_ru_size, RPC_T_U64, true),
    RPC_IGNORED("dmrsl", RPC_T_U32),
    RPC_IGNORED("wzsl", RPC_T_U32),
    RPC_IGNORED("admin_label", RPC_T_STRING),
    RPC_IGNORED("max_discard_size_kib", RPC_T_U32),
    RPC_IGNORED("max_write_zeroes_size_kib", RPC_T_U32),
    RPC_OFF("ana_reporting", RPC_T_BOOL, 0, "there is one path to a PCIe function: no ANA"),
    RPC_OFF("passthrough", RPC_T_BOOL, 0, "commands are emulated, not passed through"),
    RPC_OFF("enable_nssr", RPC_T_BOOL, 0, "NVM Subsystem Reset is not supported"),
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
	if ((p.event_log_file && !*p.event_log_file) || (p.state_file && !*p.state_file))
		return rpc_request_error(req, -EINVAL,
					 "event_log_file and state_file must not be empty");
	if (p.pmr_file && !*p.pmr_file)
		return rpc_request_error(req, -EINVAL, "pmr_file must not be empty");
	if (p.fdp_ruh > CTRLR_FDP_MAX_RUH || (p.fdp_ru_size && !p.fdp_ruh) ||
	    p.fdp_ru_size % 4096)
		return rpc_request_error(req, -EINVAL,
					 "fdp_ruh is 0..%u and fdp_ru_size (with fdp_ruh) a multiple "
					 "of 4096 bytes",
					 CTRLR_FDP_MAX_RUH);
	if (app_devmem_check((uint64_t)p.cmb_size_mib << 20, p.pmr_file,
			     (uint64_t)p.pmr_size_mib << 20, err))
		return rpc_request_error(req, -EINVAL, "%s", err);
	rc = app_subsys_create(ctx, p.nqn, p.serial_number, p.model_number, p.max_namespaces,
			       p.allow_any_host, p.min_cntlid, p.max_cntlid, err);
	if (!rc && p.event_log_file)
		rc = app_subsys_set_path(&app_subsys_find(ctx, p.nqn)->event_log_file,
					 p.event_log_file, err);
	if (!rc && p.state_file)
		rc = app_subsys_set_path(&app_subsys_find(ctx, p.nqn)->state_file, p.state_file,
					 err);
	if (!rc && (p.cmb_size_mib || p.pmr_file || p.pmr_size_mib))
		rc = app_subsys_set_devmem(app_subsys_find(ctx, p.nqn), (uint64_t)p.cmb_size_mib << 20,
					   p.pmr_file, (uint64_t)p.pmr_size_mib << 20, err);
	if (!rc && p.fdp_ruh) {
		struct app_subsys *s = app_subsys_find(ctx, p.nqn);

		s->fdp_ruh = (uint16_t)p.fdp_ruh;
		s->fdp_ru_size = p.fdp_ru_size;
	}
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
	if (ns->ptpl_file)
		json_object_object_add(o, "ptpl_file", json_object_new_string(ns->ptpl_file));
	if (ns->shared_resv)
		json_object_object_add(o, "shared_reservations", json_object_new_boolean(true));
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

/* A listener's address as SPDK reports it: the trtype and traddr it was added with (VFIOUSER:
 * the directory), then ours (socket). */
static struct json_object *rpc_listener_describe(const struct app_listener *l)
{
	struct json_object *a = json_object_new_object();
	bool vfiouser = !strcmp(l->listen_trtype, "VFIOUSER");

	json_object_object_add(
	    a, "trtype", json_object_new_string(l->listen_trtype[0] ? l->listen_trtype : APP_TRTYPE));
	json_object_object_add(a, "adrfam", json_object_new_string("PCIE"));
	json_object_object_add(a, "traddr",
			       json_object_new_string(vfiouser && l->listen_traddr
							  ? l->listen_traddr
							  : l->fn->socket_path));
	json_object_object_add(a, "trsvcid", json_object_new_string(vfiouser ? "0" : ""));
	json_object_object_add(a, "socket", json_object_new_string(l->fn->socket_path));
	return a;
}

static struct json_object *rpc_subsys_describe(const struct app_subsys *s)
{
	struct json_object *o = json_object_new_object(), *la = json_object_new_array();
	struct json_object *nss = json_object_new_array(), *hosts = json_object_new_array();

	json_object_object_add(o, "nqn", json_object_new_string(s->nqn));
	json_object_object_add(o, "subtype", json_object_new_string("NVMe"));
	/* One entry per listener (controller), with its function and CNTLID. */
	for (const struct app_listener *l = s->listeners; l; l = l->next) {
		struct json_object *a;

		if (!l->fn)
			continue;
		a = rpc_listener_describe(l);
		json_object_object_add(a, "vuid", json_object_new_string(l->fn->vuid));
		json_object_object_add(a, "manager", json_object_new_string(l->fn->mgr->name));
		if (l->fn->bus)
			json_object_object_add(a, "bus", json_object_new_string(l->fn->bus));
		json_object_object_add(a, "state",
				       json_object_new_string(rpc_listener_state_name(l->state)));
		json_object_object_add(a, "cntlid", json_object_new_int64(l->cntlid));
		if (l->sec)
			json_object_object_add(a, "primary_cntlid",
					       json_object_new_int64(app_secondary_pcid(l)));
		if (l->secs)
			json_object_object_add(a, "secondaries", app_secondaries_describe(l));
		json_object_array_add(la, a);
	}
	json_object_object_add(o, "listen_addresses", la);
	json_object_object_add(o, "allow_any_host", json_object_new_boolean(s->allow_any_host));
	for (unsigned int i = 0; i < s->nr_hosts; i++) {
		struct json_object *h = json_object_new_object();

		json_object_object_add(h, "nqn", json_object_new_string(s->hosts[i]));
		json_object_array_add(hosts, h);
	}
	json_object_object_add(o, "hosts", hosts);
	json_object_object_add(o, "serial_number", json_object_new_string(s->serial));
	json_object_object_add(o, "model_number", json_object_new_string(s->model));
	json_object_object_add(o, "max_namespaces", json_object_new_int64(s->max_namespaces));
	json_object_object_add(o, "min_cntlid", json_object_new_int64(s->min_cntlid));
	json_object_object_add(o, "max_cntlid", json_object_new_int64(s->max_cntlid));
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
	const char *bdev_name, *uuid, *nguid, *eui64, *ptpl_file;
	uint32_t nsid;
	bool shared_reservations;
};

static const struct rpc_decoder rpc_ns_dec[] = {
    RPC_DEC(rpc_ns, bdev_name, RPC_T_STRING, false),
    RPC_DEC(rpc_ns, nsid, RPC_T_U32, true),
    RPC_DEC(rpc_ns, uuid, RPC_T_STRING, true),
    RPC_DEC(rpc_ns, nguid, RPC_T_STRING, true),
    RPC_DEC(rpc_ns, eui64, RPC_T_STRING, true),
    /* No metadata to hide. */
    RPC_IGNORED("hide_metadata", RPC_T_BOOL),
    RPC_OFF("no_auto_visible", RPC_T_BOOL, 0,
	    "a namespace is visible to the subsystem's controller; per-host visibility is not "
	    "supported"),
    RPC_DEC(rpc_ns, ptpl_file, RPC_T_STRING, true),
    /* nvme-emu's: reservations shared by every daemon exporting the RBD image (RADOS). */
    RPC_DEC(rpc_ns, shared_reservations, RPC_T_BOOL, true),
    RPC_OFF("anagrpid", RPC_T_U32, 0, "there is one path to a PCIe function: no ANA"),
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
	    .ptpl_file = n.ptpl_file,
	    .shared_resv = n.shared_reservations,
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
	/* The controller's secondary controllers (add_listener only). */
	uint32_t secondaries, vq_flexible, vi_flexible, max_vq_per_secondary, max_vi_per_secondary;
	const char *secondary_dir;
};

static const struct rpc_decoder rpc_listener_dec[] = {
    RPC_DEC(rpc_listener, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_listener, listen_address, RPC_T_OBJECT, false),
    RPC_DEC(rpc_listener, manager, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, bus, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, secondaries, RPC_T_U32, true),
    RPC_DEC(rpc_listener, vq_flexible, RPC_T_U32, true),
    RPC_DEC(rpc_listener, vi_flexible, RPC_T_U32, true),
    RPC_DEC(rpc_listener, max_vq_per_secondary, RPC_T_U32, true),
    RPC_DEC(rpc_listener, max_vi_per_secondary, RPC_T_U32, true),
    RPC_DEC(rpc_listener, secondary_dir, RPC_T_STRING, true),
    RPC_DEC(rpc_listener, tgt_name, RPC_T_STRING, true),
    RPC_OFF("secure_channel", RPC_T_BOOL, 0, "a secure channel is a TCP option"),
    RPC_OFF("ana_state", RPC_T_STRING, 0, "there is one path to a PCIe function: no ANA"),
    RPC_OFF("sock_impl", RPC_T_STRING, 0, RPC_NET_ONLY),
    RPC_IGNORED("numa_id", RPC_T_I64),
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
	return rpc_subsys_lookup(req, t, p->nqn);
}

static void rpc_nvmf_subsystem_add_listener(struct rpc_request *req, struct json_object *params,
					    void *ctx)
{
	struct rpc_listener p = {0};
	struct rpc_address a = {0};
	struct app_subsys *s = rpc_listener_decode(req, params, ctx, &p, &a);
	struct app_sec_opts sec = {
	    .count = p.secondaries,
	    .vq_flexible = p.vq_flexible,
	    .vi_flexible = p.vi_flexible,
	    .max_vq = p.max_vq_per_secondary,
	    .max_vi = p.max_vi_per_secondary,
	    .dir = p.secondary_dir,
	};

	if (!s)
		return;
	/* The resource options mean nothing without secondaries: a mistake, said so. */
	if (!p.secondaries && (p.vq_flexible || p.vi_flexible || p.max_vq_per_secondary ||
			       p.max_vi_per_secondary || p.secondary_dir)) {
		rpc_request_error(req, -EINVAL,
				  "vq_flexible, vi_flexible, max_vq_per_secondary, "
				  "max_vi_per_secondary and secondary_dir need secondaries");
		return;
	}
	app_listener_add(ctx, s, a.trtype, a.traddr, p.manager, p.bus, &sec, rpc_nvmf_done, req);
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
		rpc_request_error(req, -EINVAL, "trtype %s is not supported (%s, VFIOUSER or DOCA)",
				  a.trtype, APP_TRTYPE);
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
		RPC_STAT(o, st, poll_window_us);
		RPC_STAT(o, st, poll_hits);
		RPC_STAT(o, st, poll_misses);
		RPC_STAT(o, st, poll_grows);
		RPC_STAT(o, st, poll_shrinks);
		RPC_STAT(o, st, poll_contended);
		RPC_STAT(o, st, poll_naps);
		RPC_STAT(o, st, poll_irq_contended_pct);
		RPC_STAT(o, st, poll_wait_naps);
		RPC_STAT(o, st, poll_wait_contended_pct);
		json_object_array_add(list, o);
	}
	return list;
}

/* The function's side of the controller: what its client (the VMM) sent over the socket and did
 * to the BAR. msgs_rx / socket_reads is how many messages one read brought (the batching of
 * trapped doorbells); write_multis are REGION_WRITE_MULTI messages, their writes counted in
 * region_writes; dma_faults are windows that lost their memory under a device access (the client
 * truncated the fd, and was dropped). */
static struct json_object *rpc_stats_vfio_user(struct pcie_ctrlr *pc)
{
	struct json_object *o = json_object_new_object();
	struct hw_dev_stats st;

	hw_dev_get_stats(pcie_ctrlr_dev(pc), &st);
	RPC_STAT(o, st, clients_attached);
	RPC_STAT(o, st, disconnects);
	RPC_STAT(o, st, msgs_rx);
	RPC_STAT(o, st, msgs_tx);
	RPC_STAT(o, st, socket_reads);
	RPC_STAT(o, st, errors_replied);
	RPC_STAT(o, st, bad_messages);
	RPC_STAT(o, st, region_reads);
	RPC_STAT(o, st, region_writes);
	RPC_STAT(o, st, posted_writes);
	RPC_STAT(o, st, write_multis);
	RPC_STAT(o, st, dma_maps);
	RPC_STAT(o, st, dma_unmaps);
	RPC_STAT(o, st, dma_faults);
	RPC_STAT(o, st, db_writes);
	RPC_STAT(o, st, db_invalid_writes);
	RPC_STAT(o, st, msix_raised);
	RPC_STAT(o, st, msix_pended);
	RPC_STAT(o, st, bar_disabled_accesses);
	return o;
}

static struct json_object *rpc_stats_controllers(struct app_target *t)
{
	struct json_object *list = json_object_new_array();

	for (struct app_subsys *s = t->subsystems; s; s = s->next) {
	for (struct app_listener *l = s->listeners; l; l = l->next) {
		struct json_object *o;
		struct ctrlr_stats st;

		if (!l->pc)
			continue;
		o = json_object_new_object();
		ctrlr_get_stats(pcie_ctrlr_core(l->pc), &st);
		json_object_object_add(o, "nqn", json_object_new_string(s->nqn));
		json_object_object_add(o, "cntlid", json_object_new_int64(l->cntlid));
		json_object_object_add(o, "vuid", json_object_new_string(l->fn->vuid));
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
		RPC_STAT(o, st, irq_depth_waits);
		RPC_STAT(o, st, irq_depth_misses);
		RPC_STAT(o, st, irq_depth_backoffs);
		RPC_STAT(o, st, cq_full_holds);
		RPC_STAT(o, st, resets);
		RPC_STAT(o, st, shutdowns);
		RPC_STAT(o, st, io_sqs);
		RPC_STAT(o, st, io_cqs);
		json_object_object_add(o, "vfio_user", rpc_stats_vfio_user(l->pc));
		json_object_array_add(list, o);
	}
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
	o = json_object_new_object();
	json_object_object_add(o, "tick_rate", json_object_new_int64(1000000));
	/* Before any transport exists there is nothing to count: empty lists, as SPDK says. */
	json_object_object_add(o, "poll_groups", t->has_transport ? rpc_stats_poll_groups(t)
								  : json_object_new_array());
	json_object_object_add(o, "controllers", rpc_stats_controllers(t));
	json_object_object_add(o, "dpa_harts", t->has_transport ? rpc_stats_harts(t)
							       : json_object_new_array());
	/* Fused DPA (no harts): the DPA threads' wake-ups that cost an eventfd round trip. */
	json_object_object_add(
	    o, "dpa_fused_eventfd_wakes",
	    json_object_new_int64(t->has_transport ? (int64_t)dpa_fused_eventfd_wakes(t->dpa) : 0));
	rpc_request_result(req, o);
}

/* ---- per-subsystem queries and host lists ---- */

static void rpc_nvmf_subsystem_get_listeners(struct rpc_request *req, struct json_object *params,
					     void *ctx)
{
	struct rpc_subsys p = {0};
	struct app_subsys *s;
	struct json_object *list;

	if (rpc_decode_params(req, params, rpc_nqn_dec, RPC_N(rpc_nqn_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	list = json_object_new_array();
	for (const struct app_listener *l = s->listeners; l; l = l->next) {
		struct json_object *o;

		if (!l->fn)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "address", rpc_listener_describe(l));
		json_object_object_add(o, "secure_channel", json_object_new_boolean(false));
		json_object_object_add(
		    o, "state", json_object_new_string(rpc_listener_state_name(l->state)));
		json_object_object_add(o, "cntlid", json_object_new_int64(l->cntlid));
		json_object_array_add(list, o);
	}
	rpc_request_result(req, list);
}

/* The subsystem's controllers a host has enabled (CSTS.RDY), one per listener. */
static void rpc_nvmf_subsystem_get_controllers(struct rpc_request *req,
					       struct json_object *params, void *ctx)
{
	struct rpc_subsys p = {0};
	struct app_subsys *s;
	struct json_object *list;

	if (rpc_decode_params(req, params, rpc_nqn_dec, RPC_N(rpc_nqn_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	list = json_object_new_array();
	for (const struct app_listener *l = s->listeners; l; l = l->next) {
		struct json_object *c;
		struct ctrlr_stats st;
		char hostid[33];

		if (!l->pc)
			continue;
		ctrlr_get_stats(pcie_ctrlr_core(l->pc), &st);
		if (!st.enabled)
			continue;
		c = json_object_new_object();
		json_object_object_add(c, "cntlid", json_object_new_int64(l->cntlid));
		/* A PCIe host has no NQN; its identifier is what it set with Set Features
		 * Host Identifier (reservations), and the function's VUID names it. */
		ctrlr_get_hostid_text(pcie_ctrlr_core(l->pc), hostid);
		json_object_object_add(c, "hostnqn", json_object_new_string(""));
		json_object_object_add(c, "hostid", json_object_new_string(hostid));
		json_object_object_add(c, "vuid", json_object_new_string(l->fn->vuid));
		json_object_object_add(c, "num_io_qpairs", json_object_new_int64(st.io_sqs));
		json_object_array_add(list, c);
	}
	rpc_request_result(req, list);
}

static void rpc_nvmf_subsystem_get_qpairs(struct rpc_request *req, struct json_object *params,
					  void *ctx)
{
	struct rpc_subsys p = {0};
	struct app_subsys *s;
	struct json_object *list;
	uint16_t qids[CTRLR_MAX_IO_QUEUES + 1];

	if (rpc_decode_params(req, params, rpc_nqn_dec, RPC_N(rpc_nqn_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	list = json_object_new_array();
	for (const struct app_listener *l = s->listeners; l; l = l->next) {
		int n;

		if (!l->pc)
			continue;
		n = ctrlr_get_sq_ids(pcie_ctrlr_core(l->pc), qids, (int)RPC_N(qids));
		for (int i = 0; i < n; i++) {
			struct json_object *q = json_object_new_object();

			json_object_object_add(q, "cntlid", json_object_new_int64(l->cntlid));
			json_object_object_add(q, "qid", json_object_new_int64(qids[i]));
			json_object_object_add(q, "state", json_object_new_string("active"));
			json_object_object_add(
			    q, "thread",
			    json_object_new_string(qids[i] ? "nvmf_tgt_poll_group" : "app_thread"));
			json_object_object_add(q, "listen_address", rpc_listener_describe(l));
			json_object_array_add(list, q);
		}
	}
	rpc_request_result(req, list);
}

struct rpc_host {
	const char *nqn, *host, *tgt_name;
	bool allow_any_host;
};

static const struct rpc_decoder rpc_allow_any_dec[] = {
    RPC_DEC(rpc_host, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_host, allow_any_host, RPC_T_BOOL, false),
    RPC_DEC(rpc_host, tgt_name, RPC_T_STRING, true),
};

#define RPC_NO_AUTH "in-band authentication and TLS keys are fabrics features"
static const struct rpc_decoder rpc_host_dec[] = {
    RPC_DEC(rpc_host, nqn, RPC_T_STRING, false),
    RPC_DEC(rpc_host, host, RPC_T_STRING, false),
    RPC_DEC(rpc_host, tgt_name, RPC_T_STRING, true),
    RPC_OFF("psk", RPC_T_STRING, 0, RPC_NO_AUTH),
    RPC_OFF("dhchap_key", RPC_T_STRING, 0, RPC_NO_AUTH),
    RPC_OFF("dhchap_ctrlr_key", RPC_T_STRING, 0, RPC_NO_AUTH),
    /* How long to wait for the host's controllers to go: there is no host NQN to wait for. */
    RPC_IGNORED("timeout_ms", RPC_T_U32),
};

static void rpc_nvmf_subsystem_allow_any_host(struct rpc_request *req,
					      struct json_object *params, void *ctx)
{
	struct rpc_host p = {0};
	struct app_subsys *s;

	if (rpc_decode_params(req, params, rpc_allow_any_dec, RPC_N(rpc_allow_any_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	s->allow_any_host = p.allow_any_host;
	rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_nvmf_host_change(struct rpc_request *req, struct json_object *params, void *ctx,
				 int (*change)(struct app_subsys *, const char *, char *))
{
	struct rpc_host p = {0};
	struct app_subsys *s;
	char err[APP_ERR_LEN];
	int rc;

	if (rpc_decode_params(req, params, rpc_host_dec, RPC_N(rpc_host_dec), &p) ||
	    !(s = rpc_subsys_lookup(req, ctx, p.nqn)))
		return;
	rc = change(s, p.host, err);
	if (rc)
		rpc_request_error(req, rc, "%s", err);
	else
		rpc_request_result(req, json_object_new_boolean(true));
}

static void rpc_nvmf_subsystem_add_host(struct rpc_request *req, struct json_object *params,
					void *ctx)
{
	rpc_nvmf_host_change(req, params, ctx, app_subsys_add_host);
}

static void rpc_nvmf_subsystem_remove_host(struct rpc_request *req, struct json_object *params,
					   void *ctx)
{
	rpc_nvmf_host_change(req, params, ctx, app_subsys_remove_host);
}

static const struct rpc_method rpc_nvmf_methods[] = {
    {"nvmf_subsystem_get_listeners", rpc_nvmf_subsystem_get_listeners, RPC_RUNTIME, false},
    {"nvmf_subsystem_get_controllers", rpc_nvmf_subsystem_get_controllers, RPC_RUNTIME, false},
    {"nvmf_subsystem_get_qpairs", rpc_nvmf_subsystem_get_qpairs, RPC_RUNTIME, false},
    {"nvmf_subsystem_allow_any_host", rpc_nvmf_subsystem_allow_any_host, RPC_RUNTIME, false},
    {"nvmf_subsystem_add_host", rpc_nvmf_subsystem_add_host, RPC_RUNTIME, false},
    {"nvmf_subsystem_remove_host", rpc_nvmf_subsystem_remove_host, RPC_RUNTIME, false},
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
