/* controller/admin/module.c - the admin commands that read or set the whole controller as a
 * module (CTRLR_MOD_ADMIN): their opcode table, the Features' defaults at creation and reset,
 * and the shipped vendor commands registered on every controller. */
#include "controller/admin/admin.h"

static int ctrlr_admin_init(struct ctrlr *ctrlr)
{
	int rc = ctrlr_features_init(ctrlr);

	return rc ? rc : ctrlr_vendor_register_defaults(ctrlr);
}

static const struct ctrlr_cmd ctrlr_admin_cmds[256] = {
    [NVME_ADM_GET_LOG_PAGE] = {.exec = ctrlr_admin_get_log_page, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_IDENTIFY] = {.exec = ctrlr_admin_identify, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_SET_FEATURES] = {.exec = ctrlr_admin_set_features,
			       .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_CCC},
    [NVME_ADM_GET_FEATURES] = {.exec = ctrlr_admin_get_features, .effects = NVME_CMD_EFFECTS_CSUPP},
    [NVME_ADM_FORMAT_NVM] = {.exec = ctrlr_admin_format,
			     .effects = NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC |
					NVME_CMD_EFFECTS_NCC | NVME_CMD_EFFECTS_NIC |
					NVME_CMD_EFFECTS_CSE_NS},
};

const struct ctrlr_module ctrlr_admin_module = {
    .name = "admin",
    .admin_cmds = ctrlr_admin_cmds,
    .init = ctrlr_admin_init,
    .reset_done = ctrlr_features_reset,
    .ns_attach = ctrlr_features_ns_attach,
};
