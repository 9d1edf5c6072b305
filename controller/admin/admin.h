/* controller/admin/admin.h - the admin commands that read or set the whole controller, as the
 * top module of the controller (CTRLR_MOD_ADMIN): Identify (identify.c), Get Log Page (log.c),
 * Get/Set Features (features.c), Format NVM (format.c), and the shipped vendor commands
 * (vendor_cmds.c). Each gathers what the modules below it (core, nvm/, zns/, device/, pool/, virt/)
 * hold; none of them calls it. Not for use outside controller/. Admin thread. */
#ifndef NVME_EMU_CONTROLLER_ADMIN_ADMIN_H
#define NVME_EMU_CONTROLLER_ADMIN_ADMIN_H

#include "controller/core/core.h"

extern const struct ctrlr_module ctrlr_admin_module;

void ctrlr_admin_identify(struct ctrlr_req *req);
void ctrlr_admin_get_log_page(struct ctrlr_req *req);
void ctrlr_admin_get_features(struct ctrlr_req *req);
void ctrlr_admin_set_features(struct ctrlr_req *req);
void ctrlr_admin_format(struct ctrlr_req *req);

/* features.c: the Features' defaults at creation, and again at every Controller Level Reset
 * (with the namespaces' Error Recovery, KATO and a volatile write cache turned back on). */
/* The features' defaults, then the values saved with SV (-EINVAL: a saved value out of range). */
int ctrlr_features_init(struct ctrlr *ctrlr);
/* Log 12h (Feature Identifiers Supported and Effects) into buf: its length (1024). */
size_t ctrlr_log_fid_effects(struct ctrlr *ctrlr, uint8_t *buf);
/* A namespace attached: it follows the volatile write cache feature. */
int ctrlr_features_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts);
void ctrlr_features_reset(struct ctrlr *ctrlr);

#endif
