/* controller/device/module.c - what the device does for itself as one module of the controller
 * (CTRLR_MOD_DEVICE): the hooks that carry health, firmware, the event log, telemetry, self-test
 * and sanitize through the controller's life (creation, resets, enables, the clock, subsystem
 * membership), the admin commands of those features, and their logs for Get Log Page. Admin
 * thread unless said otherwise. */
#include <errno.h>
#include <stdlib.h>

#include "controller/device/device.h"

static void ctrlr_device_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_telemetry *t = &ctrlr_dev(ctrlr)->tel;

	ctrlr_fw_fini(ctrlr);
	ctrlr_state_fini(ctrlr);
	ctrlr_bg_fini(ctrlr);
	free(t->host.data);
	free(t->ctrl.data);
	t->host.data = NULL;
	t->ctrl.data = NULL;
	ctrlr_pel_fini(ctrlr);
}

static int ctrlr_device_init(struct ctrlr *ctrlr)
{
	struct ctrlr_device *d = ctrlr_dev(ctrlr);
	int rc;

	ctrlr_health_init(ctrlr);
	ctrlr_fdp_init(ctrlr);
	ctrlr_fw_init(ctrlr);
	/* The firmware the state file keeps (a power cycle activates what was committed for
	 * the next reset) and the saved features (admin/ applies them). */
	rc = ctrlr_state_load(ctrlr);
	if (rc) {
		ctrlr_state_fini(ctrlr);
		return rc;
	}
	ctrlr_fw_power_on(ctrlr);
	for (unsigned int i = 0; i < NVME_DST_LOG_ENTRIES; i++)
		d->dst.results[i].status = NVME_DST_RES_UNUSED;
	d->san.sstat = NVME_SSTAT_NEVER;
	/* The background request goes to a running sanitize first, then to a self-test. */
	d->bg.steps[0] = ctrlr_san_bg_step;
	d->bg.steps[1] = ctrlr_dst_bg_step;
	d->notable = ctrlr_telemetry_event;
	rc = ctrlr_bg_init(ctrlr);
	if (!rc)
		rc = ctrlr_pel_init(ctrlr);
	if (rc) {
		ctrlr_device_fini(ctrlr);
		return rc;
	}
	ctrlr_pel_add(ctrlr, NVME_PEL_POWER_ON_RESET, NULL, 0);
	return 0;
}

/* A Controller Level Reset aborts a device self-test (8.11); a sanitize operation goes on once
 * the controller is enabled again (8.21): its state is kept. */
static void ctrlr_device_reset(struct ctrlr *ctrlr)
{
	ctrlr_dst_abort(ctrlr, NVME_DST_RES_ABORTED_RESET);
	ctrlr_pel_add(ctrlr, NVME_PEL_POWER_ON_RESET, NULL, 0);
}

static bool ctrlr_device_busy(const struct ctrlr *ctrlr)
{
	return ctrlr_bg_inflight(ctrlr);
}

/* The reset is done: a committed image becomes the active one; the critical warnings start
 * from nothing, as the features do. */
static void ctrlr_device_reset_done(struct ctrlr *ctrlr)
{
	ctrlr_fw_reset(ctrlr);
	ctrlr_dev(ctrlr)->health.critical_warning = 0;
	ctrlr_dev(ctrlr)->health.eg_warning = 0;
	ctrlr_dev(ctrlr)->health.eg_aggregate = false;
}

static void ctrlr_device_enabled(struct ctrlr *ctrlr)
{
	struct ctrlr_pel *p = &ctrlr_dev(ctrlr)->pel;

	/* From now on, going away without a shutdown notification is an unsafe shutdown. */
	p->enabled_once = true;
	p->shutdowns_at_enable = CTRLR_LOAD(ctrlr->cnt.shutdowns);
	ctrlr_bg_kick(ctrlr);
}

/* Persistent Event Log: Controller Fatal Status, with CC as the host wrote it. */
static void ctrlr_device_enable_failed(struct ctrlr *ctrlr)
{
	ctrlr_pel_hw_error(ctrlr, NVME_PEL_HWE_CTRL_FATAL, &ctrlr->cc.raw, 4);
}

/* Any thread. */
static void ctrlr_device_media_error(struct ctrlr *ctrlr, uint16_t status)
{
	ctrlr_pel_media_error_async(ctrlr, status);
}

/* Every admin command: its end waits for the events logged before it to be durable; Sanitize
 * lets only a few through (8.21). */
static uint16_t ctrlr_device_admin_gate(struct ctrlr_req *req)
{
	ctrlr_pel_admin_begin(req);
	return ctrlr_san_admin_check(req);
}

/* A sanitize drain waits for the commands that took a namespace before it. */
static void ctrlr_device_ns_quiet(struct ctrlr *ctrlr)
{
	if (ctrlr_san_draining(ctrlr))
		ctrlr_san_ns_idle(ctrlr);
}

uint16_t ctrlr_log_device(struct ctrlr_req *req, uint8_t lid, uint8_t **out, size_t *len)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t *buf;

	switch (lid) {
	case NVME_LOG_TELEMETRY_HOST:
	case NVME_LOG_TELEMETRY_CTRL:
		return ctrlr_log_telemetry(req, lid, out, len);
	case NVME_LOG_PERSISTENT_EVENT:
		return ctrlr_log_pel(req, out, len);
	default:
		break;
	}
	buf = calloc(1, 4096);
	if (!buf)
		return NVME_SC_INTERNAL;
	if (lid == NVME_LOG_SELF_TEST)
		*len = ctrlr_log_self_test(ctrlr, buf);
	else
		*len = ctrlr_log_sanitize(ctrlr, buf);
	*out = buf;
	return NVME_SC_SUCCESS;
}

static const struct ctrlr_cmd ctrlr_device_admin_cmds[256] = {
    [NVME_ADM_FW_DOWNLOAD] = {.exec = ctrlr_admin_fw_download, .effects = NVME_CMD_EFFECTS_CSUPP},
    /* Activation changes the controller's capabilities (its revision) and may reset it. */
    [NVME_ADM_FW_COMMIT] = {.exec = ctrlr_admin_fw_commit,
			    .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_CCC},
    [NVME_ADM_SELF_TEST] = {.exec = ctrlr_admin_self_test, .effects = NVME_CMD_EFFECTS_CSUPP},
    /* Directives (fdp.c): Identify and Data Placement. */
    [NVME_ADM_DIRECTIVE_SEND] = {.exec = ctrlr_admin_directive_send,
				 .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_DIRECTIVE_RECV] = {.exec = ctrlr_admin_directive_recv,
				 .effects = NVME_CMD_EFFECTS_CSUPP},
    /* Changes every namespace's data; no other command may run on them meanwhile. */
    [NVME_ADM_SANITIZE] = {.exec = ctrlr_admin_sanitize,
			   .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC |
				      NVME_CMD_EFFECTS_CSE_CTRL},
};

const struct ctrlr_module ctrlr_device_module = {
    .name = "device",
    .ctrlr_size = sizeof(struct ctrlr_device),
    .admin_cmds = ctrlr_device_admin_cmds,
    .io_cmds = ctrlr_fdp_io_cmds,
    .io_write_place = ctrlr_fdp_write,
    .ns_attach = ctrlr_fdp_ns_attach,
    .init = ctrlr_device_init,
    .fini = ctrlr_device_fini,
    .reset = ctrlr_device_reset,
    .busy = ctrlr_device_busy,
    .reset_done = ctrlr_device_reset_done,
    .enabled = ctrlr_device_enabled,
    .enable_failed = ctrlr_device_enable_failed,
    .tick = ctrlr_health_tick,
    .media_error = ctrlr_device_media_error,
    .subsys_joined = ctrlr_san_joined,
    .subsys_left = ctrlr_san_left,
    .admin_gate = ctrlr_device_admin_gate,
    .ns_quiet = ctrlr_device_ns_quiet,
};
