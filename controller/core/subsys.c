/* controller/core/subsys.c - the NVM subsystem seen from its controllers: which controllers it has, so
 * that each reports itself as one of several (CMIC bit 1) and Identify can list them (CNS 12h
 * controllers attached to a namespace, 13h every controller; NVMe Base 2.0 section 5.17.2).
 *
 * The namespaces' shared state (reservations, claims, fused locks) lives in ctrlr_ns_shared; this
 * object only knows the members. It and its controllers run on one thread (the app's main
 * thread): the list is read by Identify on the admin thread without a lock. */
#include "controller/core/core.h"

#include <errno.h>
#include <stdlib.h>

struct ctrlr_subsys {
	struct ctrlr *members; /* ascending CNTLID (ctrlr.subsys_next) */
	uint32_t count;
};

int ctrlr_subsys_create(struct ctrlr_subsys **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int ctrlr_subsys_destroy(struct ctrlr_subsys *cs)
{
	if (!cs)
		return 0;
	if (cs->members)
		return -EBUSY;
	free(cs);
	return 0;
}

int ctrlr_subsys_join(struct ctrlr_subsys *cs, struct ctrlr *ctrlr)
{
	struct ctrlr **pp;
	uint16_t id = ctrlr->cfg.cntlid;

	if (ctrlr->subsys)
		return -EALREADY;
	for (pp = &cs->members; *pp && (*pp)->cfg.cntlid < id; pp = &(*pp)->subsys_next)
		;
	if (*pp && (*pp)->cfg.cntlid == id)
		return -EEXIST;
	ctrlr->subsys_next = *pp;
	*pp = ctrlr;
	ctrlr->subsys = cs;
	cs->count++;
	/* A subsystem that may gain controllers says so from the start: a host (Linux) only puts
	 * a second controller of the same NQN beside the first when both report CMIC bit 1. */
	ctrlr->multi_ctrl = true;
	CTRLR_MODULES_CALL(ctrlr, subsys_joined, ctrlr);
	return 0;
}

void ctrlr_subsys_leave(struct ctrlr *ctrlr)
{
	struct ctrlr_subsys *cs = ctrlr->subsys;

	if (!cs)
		return;
	for (struct ctrlr **pp = &cs->members; *pp; pp = &(*pp)->subsys_next) {
		if (*pp == ctrlr) {
			*pp = ctrlr->subsys_next;
			cs->count--;
			break;
		}
	}
	ctrlr->subsys = NULL;
	ctrlr->subsys_next = NULL;
	CTRLR_MODULES_CALL(ctrlr, subsys_left, ctrlr, cs);
}

struct ctrlr *ctrlr_subsys_members(const struct ctrlr_subsys *cs)
{
	return cs ? cs->members : NULL;
}

uint32_t ctrlr_subsys_count(const struct ctrlr_subsys *cs)
{
	return cs ? cs->count : 0;
}

struct ctrlr *ctrlr_subsys_find(struct ctrlr_subsys *cs, uint16_t cntlid)
{
	for (struct ctrlr *c = cs ? cs->members : NULL; c; c = c->subsys_next)
		if (c->cfg.cntlid == cntlid)
			return c;
	return NULL;
}

/* Identify CNS 12h/13h: a Controller List (count, then ascending identifiers) of the controllers
 * with an identifier >= first, only those attached to nsid when nsid is not 0. A controller
 * outside any subsystem lists itself. */
void ctrlr_subsys_ctrl_list(struct ctrlr *ctrlr, uint32_t nsid, uint16_t first, uint16_t *list)
{
	struct ctrlr *c = ctrlr->subsys ? ctrlr->subsys->members : ctrlr;
	uint16_t n = 0;

	for (; c && n < NVME_CTRL_LIST_MAX; c = ctrlr->subsys ? c->subsys_next : NULL) {
		if (c->cfg.cntlid < first || (nsid && !c->ns[nsid - 1]))
			continue;
		list[++n] = c->cfg.cntlid;
	}
	list[0] = n;
}
