/* controller/virt/virt.h - Virtualization Enhancements as a module of the controller
 * (CTRLR_MOD_VIRT, NVMe Base 2.0 section 8.26): a primary controller with secondary controllers
 * and the flexible resources it shares with them (VQ: a submission and completion queue pair; VI:
 * an interrupt vector), the Virtualization Management command (virt.c), Identify CNS 14h and 15h,
 * and the assignment kept in the controller's state file (state.c). A secondary controller is a
 * controller of its own (over vfio-user a function of its own, not an SR-IOV VF): the transport
 * above brings it online and offline through the ops the primary was bound with (ctrlr.h,
 * ctrlr_virt_bind). admin/ uses this for Identify. Not for use outside controller/. */
#ifndef NVME_EMU_CONTROLLER_VIRT_VIRT_H
#define NVME_EMU_CONTROLLER_VIRT_VIRT_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/core/core.h"
#include "controller/module_ids.h"

extern const struct ctrlr_module ctrlr_virt_module;

/* One secondary controller of a primary, as CNS 15h reports it. */
struct ctrlr_virt_sec {
	uint16_t scid;
	uint16_t nvq, nvi; /* flexible resources assigned */
	bool online;
};

struct ctrlr_virt_op;

/* The module's state in a controller: a primary (bound), a secondary, or neither. */
struct ctrlr_virt {
	bool primary, secondary;
	/* A primary: its configuration, the transport that brings secondaries online. */
	struct ctrlr_virt_config cfg;
	const struct ctrlr_virt_ops *ops;
	void *ops_ctx;
	uint16_t vqprt, viprt;		 /* private resources (the admin queue's VQ included) */
	uint16_t vqrfap, virfap;	 /* flexible resources the primary has now */
	uint16_t vqrfap_next, virfap_next; /* ... after its next Controller Level Reset */
	struct ctrlr_virt_sec sec[CTRLR_VIRT_MAX_SECONDARIES];
	/* Virtualization Management commands, run one at a time in arrival order. */
	struct ctrlr_virt_op *ops_head, *ops_tail;
	/* A secondary: its primary's CNTLID and the resources it was brought online with. */
	uint16_t pcid, nvq, nvi;
};

static inline struct ctrlr_virt *ctrlr_virt_of(const struct ctrlr *ctrlr)
{
	return ctrlr_mod(ctrlr, CTRLR_MOD_VIRT);
}

/* VQ or VI resources assigned to secondary controllers (VQRFA, VIRFA). */
uint32_t ctrlr_virt_assigned(const struct ctrlr_virt *v, bool vi);
/* The primary's flexible resources for a resource type: now, after the next reset, total. */
static inline uint16_t ctrlr_virt_prim(const struct ctrlr_virt *v, bool vi, bool next)
{
	return vi ? (next ? v->virfap_next : v->virfap) : (next ? v->vqrfap_next : v->vqrfap);
}
static inline uint16_t ctrlr_virt_total(const struct ctrlr_virt *v, bool vi)
{
	return vi ? v->cfg.vi_flexible : v->cfg.vq_flexible;
}
/* The entry of secondary scid, or NULL. */
struct ctrlr_virt_sec *ctrlr_virt_find(struct ctrlr_virt *v, uint16_t scid);
/* The queues and vectors the primary has with its flexible resources now (ctrlr->res_*). */
void ctrlr_virt_apply(struct ctrlr *ctrlr);

/* ---- state.c: the "virtualization" section of the controller's state file ---- */
/* Takes the section (checked against the configuration: a section that does not fit is refused
 * with its reason in why, nothing taken) and registers its writer. 0, -EINVAL, -ENOSPC. */
int ctrlr_virt_state_load(struct ctrlr *ctrlr, const char **why);

/* ---- virt.c: Identify (admin/) and the command ---- */
/* OACS bit 7 in Identify Controller (a primary). */
void ctrlr_virt_identify_ctrl(const struct ctrlr *ctrlr, struct nvme_id_ctrl *id);
/* CNS 14h / 15h into buf (4 KiB, zeroed): a status (Invalid Field when the controller is neither
 * a primary nor a secondary). cntid: CNS 15h's first SCID. */
uint16_t ctrlr_virt_identify(const struct ctrlr *ctrlr, uint8_t cns, uint16_t cntid, void *buf);
void ctrlr_admin_virt_mgmt(struct ctrlr_req *req);

#endif
