/* controller/modules.c - the NVMe controller as built here: the core with its modules, lowest
 * first (controller/module_ids.h gives each its place). This file is the one place that names them
 * all; ctrlr_create and ctrlr_ns_shared_create (ctrlr.h) hand the table to the core. */
#include "controller/admin/admin.h"
#include "controller/core/core.h"
#include "controller/device/device.h"
#include "controller/module_ids.h"
#include "controller/nvm/nvm.h"
#include "controller/pool/pool.h"
#include "controller/virt/virt.h"
#include "controller/zns/zns.h"

_Static_assert(CTRLR_MOD_COUNT <= CTRLR_MODULES_MAX, "more modules than a controller holds");

static const struct ctrlr_module *const ctrlr_modules[CTRLR_MOD_COUNT] = {
    [CTRLR_MOD_CORE] = &ctrlr_core_module,
    [CTRLR_MOD_NVM] = &ctrlr_nvm_module,
    [CTRLR_MOD_ZNS] = &ctrlr_zns_module,
    [CTRLR_MOD_DEVICE] = &ctrlr_device_module,
    [CTRLR_MOD_POOL] = &ctrlr_pool_module,
    [CTRLR_MOD_VIRT] = &ctrlr_virt_module,
    [CTRLR_MOD_ADMIN] = &ctrlr_admin_module,
};

int ctrlr_create(const struct ctrlr_config *config, const struct ctrlr_transport_ops *ops,
		 void *tctx, struct ctrlr **out)
{
	return ctrlr_core_create(config, ops, tctx, ctrlr_modules, CTRLR_MOD_COUNT, out);
}

int ctrlr_ns_shared_create(const char *ptpl_file, struct ctrlr_ns_shared **out)
{
	struct ctrlr_ns_shared_opts opts = {.ptpl_file = ptpl_file};

	return ctrlr_core_ns_shared_create(ctrlr_modules, CTRLR_MOD_COUNT, &opts, out);
}
