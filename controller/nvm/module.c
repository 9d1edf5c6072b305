/* controller/nvm/module.c - the NVM Command Set as a module of the controller (CTRLR_MOD_NVM): its
 * state in the shared namespace (reservations with their PTPL file, range locks, media marks),
 * in each controller's namespace (its formats, its host's access word) and in each controller
 * (the Reservation Notification log, Copy's bounce budget), and the hooks the core calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"

static int ctrlr_nvm_shared_init(struct ctrlr_ns_shared *s, const struct ctrlr_ns_shared_opts *o)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);
	const char *ptpl_file = o ? o->ptpl_file : NULL;
	int rc;

	rc = ctrlr_uncor_init(&sh->uncor);
	if (rc)
		return rc;
	ctrlr_resv_init(&sh->resv, ptpl_file != NULL);
	if (ptpl_file) {
		sh->ptpl_file = strdup(ptpl_file);
		if (!sh->ptpl_file) {
			rc = -ENOMEM;
			goto out_uncor;
		}
		rc = ctrlr_resv_load(&sh->resv, ptpl_file);
		if (rc) {
			LOG_ERR(CTRLR_LOG, "reservation state file %s: %s", ptpl_file,
				rc == -EINVAL ? "not a valid state" : strerror(-rc));
			goto out_ptpl;
		}
	}
	rc = ctrlr_caw_locks_create(&sh->caw);
	if (rc)
		goto out_ptpl;
	return 0;

out_ptpl:
	free(sh->ptpl_file);
	sh->ptpl_file = NULL;
out_uncor:
	ctrlr_uncor_fini(&sh->uncor);
	return rc;
}

/* Also after a failed init: the core calls every module's fini with the state zeroed or set. */
static void ctrlr_nvm_shared_fini(struct ctrlr_ns_shared *s)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_shared(s);

	if (!sh || !sh->caw)
		return;
	ctrlr_resv_remote_fini(sh);
	ctrlr_caw_locks_destroy(sh->caw);
	ctrlr_uncor_fini(&sh->uncor);
	free(sh->ptpl_file);
}

/* Every namespace is an NVM namespace first: its formats (a zoned command set narrows them), the
 * format the other controllers of the namespace have, or the one the operator asked for, and
 * the access its host has under the namespace's reservation. */
static int ctrlr_nvm_ns_attach(struct ctrlr_ns *ns, const struct ctrlr_ns_opts *opts)
{
	struct ctrlr_nvm_ns *n = ctrlr_nvm_ns(ns);

	n->sh = ctrlr_nvm_shared(ns->shared);
	n->uncor = &n->sh->uncor;
	n->caw = n->sh->caw;
	ns->csi = NVME_CSI_NVM;
	ctrlr_ns_formats_init(ns); /* format 0: the bdev's block, no metadata */
	ctrlr_ns_format_join(ns);
	if (opts && opts->set_format && ctrlr_ns_set_flbas(ns, opts->flbas, opts->dps))
		LOG_ERR(CTRLR_LOG, "namespace %u: format FLBAS 0x%x DPS 0x%x not offered: format 0",
			ns->nsid, opts->flbas, opts->dps);
	CTRLR_STORE(ns->io_block, ctrlr_resv_host_access(n->sh, ns->ctrlr->hostid));
	return 0;
}

/* Erased blocks read back (as zeroes): no longer uncorrectable. */
static void ctrlr_nvm_ns_erased(struct ctrlr_ns *ns)
{
	ctrlr_uncor_clear_all(ctrlr_nvm_ns(ns)->uncor);
}

_Static_assert(CTRLR_RESV_BLOCK_READ == CTRLR_ACCESS_READ &&
		       CTRLR_RESV_BLOCK_WRITE == CTRLR_ACCESS_WRITE,
	       "a reservation's access word is the core's");

/* Get LBA Status is the NVM command set's (an admin command about its blocks). */
static const struct ctrlr_cmd ctrlr_nvm_admin_cmds[256] = {
    [NVME_ADM_GET_LBA_STATUS] = {.exec = ctrlr_admin_get_lba_status,
				 .effects = NVME_CMD_EFFECTS_CSUPP},
};

const struct ctrlr_module ctrlr_nvm_module = {
    .name = "nvm",
    .admin_cmds = ctrlr_nvm_admin_cmds,
    .ctrlr_size = sizeof(struct ctrlr_nvm_ctrlr),
    .ns_size = sizeof(struct ctrlr_nvm_ns),
    .shared_size = sizeof(struct ctrlr_nvm_shared),
    .io_cmds = ctrlr_nvm_io_cmds,
    .shared_init = ctrlr_nvm_shared_init,
    .shared_fini = ctrlr_nvm_shared_fini,
    .ns_attach = ctrlr_nvm_ns_attach,
    .ns_erased = ctrlr_nvm_ns_erased,
    .io_fused = ctrlr_io_fused,
    .io_write_begin = ctrlr_caw_write_begin,
    .sq_fini = ctrlr_io_md_sq_fini,
};
