/* controller/module_ids.h - the modules of the controller, each with its place in the table
 * (controller/modules.c): a module finds its state at ctrlr->mod[id], ns->mod[id] and
 * shared->mod[id] (core/core.h, struct ctrlr_module). Lower layers first: each module may use the
 * ones before it, never one after it. */
#ifndef NVME_EMU_CONTROLLER_MODULE_IDS_H
#define NVME_EMU_CONTROLLER_MODULE_IDS_H

enum ctrlr_module_id {
	CTRLR_MOD_CORE = 0, /* core/admin_cmds.c: queues, Abort, AER, Keep Alive, Doorbell Buffer Config */
	CTRLR_MOD_NVM,	    /* nvm/: the NVM Command Set */
	CTRLR_MOD_ZNS,	    /* zns/: the Zoned Namespace Command Set */
	CTRLR_MOD_DEVICE,   /* device/: health, firmware, event log, telemetry, self-test, sanitize */
	CTRLR_MOD_POOL,	    /* pool/: Namespace Management and Attachment over a capacity pool */
	CTRLR_MOD_VIRT,	    /* virt/: secondary controllers and Virtualization Management */
	CTRLR_MOD_ADMIN,    /* admin/: Identify, Get Log Page, Features, Format NVM */
	CTRLR_MOD_COUNT,
};

#endif
