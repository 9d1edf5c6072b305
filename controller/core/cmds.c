/* controller/core/cmds.c - the admin commands every NVMe controller has whatever its command sets
 * (NVMe Base 2.0 5.x): the queues' (Create/Delete I/O SQ/CQ, Doorbell Buffer Config), Abort,
 * Asynchronous Event Request and Keep Alive, as the core's own module (CTRLR_MOD_CORE in the
 * table of controller/modules.c). */
#include "controller/core/core.h"

/* Doorbell Buffer Config (OACS bit 8) is offered unless the configuration says not to. */
static bool ctrlr_dbbuf_supported(const struct ctrlr *ctrlr)
{
	return !ctrlr->cfg.no_dbbuf;
}

static const struct ctrlr_cmd ctrlr_core_admin_cmds[256] = {
    [NVME_ADM_DELETE_SQ] = {.exec = ctrlr_admin_delete_sq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_CREATE_SQ] = {.exec = ctrlr_admin_create_sq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_DELETE_CQ] = {.exec = ctrlr_admin_delete_cq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_CREATE_CQ] = {.exec = ctrlr_admin_create_cq, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_ABORT] = {.exec = ctrlr_admin_abort, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_ASYNC_EVENT] = {.exec = ctrlr_aer_request, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_KEEP_ALIVE] = {.exec = ctrlr_admin_keep_alive, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_DBBUF] = {.exec = ctrlr_admin_dbbuf,
			.effects = NVME_CMD_EFFECTS_CSUPP,
			.supported = ctrlr_dbbuf_supported},
};

const struct ctrlr_module ctrlr_core_module = {
    .name = "core",
    .admin_cmds = ctrlr_core_admin_cmds,
};
