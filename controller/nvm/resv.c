/* controller/nvm/resv.c - reservations (NVMe Base 2.0 section 8.19; commands 7.2-7.5): the state
 * machine, Persist Through Power Loss in a JSON state file, the access words of the I/O path
 * (ctrlr_ns.io_block), notifications (log page 80h, AEN), and the four commands, which hop from
 * the I/O queue's owner thread to the admin thread and back (see resv.h). The state lives in the
 * shared namespace (struct ctrlr_nvm_shared), so every controller of the namespace sees one. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file_replace.h"
#include "common/log.h"
#include "controller/nvm/nvm.h"

/* ---- the state machine ---- */

void ctrlr_resv_init(struct ctrlr_resv *r, bool ptpl_capable)
{
	memset(r, 0, sizeof(*r));
	r->ptpl_capable = ptpl_capable;
}

static bool ctrlr_resv_all_regs(uint8_t rtype)
{
	return rtype == NVME_RESV_WE_ALL_REGS || rtype == NVME_RESV_EA_ALL_REGS;
}

static struct ctrlr_resv_reg *ctrlr_resv_lookup(struct ctrlr_resv *r, const uint8_t hostid[16])
{
	for (uint32_t i = 0; i < r->nregs; i++)
		if (!memcmp(r->regs[i].hostid, hostid, 16))
			return &r->regs[i];
	return NULL;
}

const struct ctrlr_resv_reg *ctrlr_resv_find(const struct ctrlr_resv *r, const uint8_t hostid[16])
{
	return ctrlr_resv_lookup((struct ctrlr_resv *)r, hostid);
}

bool ctrlr_resv_is_holder(const struct ctrlr_resv *r, const uint8_t hostid[16])
{
	if (!r->rtype || !ctrlr_resv_find(r, hostid))
		return false;
	return ctrlr_resv_all_regs(r->rtype) || !memcmp(r->holder, hostid, 16);
}

uint32_t ctrlr_resv_access(const struct ctrlr_resv *r, const uint8_t hostid[16])
{
	const uint32_t rw = CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE;
	bool reg = ctrlr_resv_find(r, hostid) != NULL;

	if (!r->rtype || ctrlr_resv_is_holder(r, hostid))
		return 0;
	switch (r->rtype) {
	case NVME_RESV_WRITE_EXCLUSIVE:
		return CTRLR_RESV_BLOCK_WRITE;
	case NVME_RESV_EXCLUSIVE_ACCESS:
		return rw;
	case NVME_RESV_WE_REG_ONLY:
	case NVME_RESV_WE_ALL_REGS:
		return reg ? 0 : CTRLR_RESV_BLOCK_WRITE;
	case NVME_RESV_EA_REG_ONLY:
	case NVME_RESV_EA_ALL_REGS:
		return reg ? 0 : rw;
	default:
		return 0;
	}
}

static void ctrlr_resv_event(struct ctrlr_resv_events *ev, const uint8_t hostid[16], uint8_t type)
{
	if (ev->n == CTRLR_ARRAY_SIZE(ev->e))
		return;
	memcpy(ev->e[ev->n].hostid, hostid, 16);
	ev->e[ev->n].type = type;
	ev->n++;
}

/* Every registrant but `except` gets `type`. */
static void ctrlr_resv_event_others(struct ctrlr_resv *r, struct ctrlr_resv_events *ev,
				    const uint8_t except[16], uint8_t type)
{
	for (uint32_t i = 0; i < r->nregs; i++)
		if (memcmp(r->regs[i].hostid, except, 16))
			ctrlr_resv_event(ev, r->regs[i].hostid, type);
}

/* The reservation goes away (release, holder gone). Registrants Only and All Registrants
 * reservations tell the other registrants (section 8.19.8, Reservation Released). */
static void ctrlr_resv_drop(struct ctrlr_resv *r, const uint8_t by[16], struct ctrlr_resv_events *ev)
{
	uint8_t rtype = r->rtype;

	r->rtype = NVME_RESV_NONE;
	memset(r->holder, 0, sizeof(r->holder));
	if (rtype != NVME_RESV_WRITE_EXCLUSIVE && rtype != NVME_RESV_EXCLUSIVE_ACCESS)
		ctrlr_resv_event_others(r, ev, by, NVME_RESV_NOTIFY_RELEASED);
}

/* Removes registrant reg; the reservation follows section 8.19.7: a holder that unregisters
 * releases it, unless All Registrants and others remain. */
static void ctrlr_resv_unregister_one(struct ctrlr_resv *r, struct ctrlr_resv_reg *reg,
				      struct ctrlr_resv_events *ev)
{
	uint8_t hostid[16];
	bool holder = ctrlr_resv_is_holder(r, reg->hostid);

	memcpy(hostid, reg->hostid, 16);
	*reg = r->regs[--r->nregs];
	if (!holder)
		return;
	if (ctrlr_resv_all_regs(r->rtype) && r->nregs)
		return;
	ctrlr_resv_drop(r, hostid, ev);
}

uint16_t ctrlr_resv_register(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			     const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			     bool *persist)
{
	struct ctrlr_resv_reg *reg = ctrlr_resv_lookup(r, hostid);
	uint32_t cptpl = NVME_RESV_CPTPL(cdw10);
	bool iekey = cdw10 & NVME_RESV_IEKEY;

	ev->n = 0;
	*persist = false;
	if (cptpl == 1 || (cptpl == NVME_CPTPL_SET && !r->ptpl_capable))
		return NVME_SC_INVALID_FIELD;
	switch (NVME_RESV_ACTION(cdw10)) {
	case NVME_RREGA_REGISTER:
		/* A key of 0 could never be told from "no key" by Preempt (PRKEY 0). */
		if (!k->nkey)
			return NVME_SC_INVALID_FIELD;
		if (reg) {
			/* Registering again with the same key succeeds (section 8.19.3). */
			if (reg->rkey != k->nkey)
				return NVME_SC_RESV_CONFLICT;
			break;
		}
		if (r->nregs == CTRLR_RESV_MAX_REGS)
			return NVME_SC_INTERNAL;
		reg = &r->regs[r->nregs++];
		memcpy(reg->hostid, hostid, 16);
		reg->rkey = k->nkey;
		break;
	case NVME_RREGA_UNREGISTER:
		if (!reg || (!iekey && reg->rkey != k->crkey))
			return NVME_SC_RESV_CONFLICT;
		ctrlr_resv_unregister_one(r, reg, ev);
		break;
	case NVME_RREGA_REPLACE:
		if (!k->nkey)
			return NVME_SC_INVALID_FIELD;
		if (!reg || (!iekey && reg->rkey != k->crkey))
			return NVME_SC_RESV_CONFLICT;
		reg->rkey = k->nkey;
		break;
	default:
		return NVME_SC_INVALID_FIELD;
	}
	if (cptpl == NVME_CPTPL_SET)
		r->ptpl = true;
	else if (cptpl == NVME_CPTPL_CLEAR)
		r->ptpl = false;
	r->gen++;
	*persist = true;
	return NVME_SC_SUCCESS;
}

/* Unregisters every registrant whose key is prkey except `self`; each preempted host is told
 * (Registration Preempted). Returns how many went. */
static uint32_t ctrlr_resv_preempt_key(struct ctrlr_resv *r, uint64_t prkey, const uint8_t self[16],
				       struct ctrlr_resv_events *ev)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nregs;) {
		struct ctrlr_resv_reg *reg = &r->regs[i];

		if (reg->rkey != prkey || !memcmp(reg->hostid, self, 16)) {
			i++;
			continue;
		}
		ctrlr_resv_event(ev, reg->hostid, NVME_RESV_NOTIFY_REG_PREEMPTED);
		/* The slot now holds the last registrant: look at i again. */
		ctrlr_resv_unregister_one(r, reg, ev);
		n++;
	}
	return n;
}

/* Preempt (section 8.19.9). */
static uint16_t ctrlr_resv_preempt(struct ctrlr_resv *r, struct ctrlr_resv_reg *self, uint8_t rtype,
				   uint64_t prkey, struct ctrlr_resv_events *ev)
{
	uint8_t me[16];

	memcpy(me, self->hostid, 16);
	if (!r->rtype) {
		/* No reservation: remove the registrants with that key. */
		return ctrlr_resv_preempt_key(r, prkey, me, ev) ? NVME_SC_SUCCESS
								: NVME_SC_RESV_CONFLICT;
	}
	if (ctrlr_resv_all_regs(r->rtype)) {
		if (prkey) {
			if (!ctrlr_resv_preempt_key(r, prkey, me, ev))
				return NVME_SC_RESV_CONFLICT;
			return NVME_SC_SUCCESS;
		}
		/* PRKEY 0: everybody else is unregistered and the caller holds the new one. The
		 * new holder is set first, so that removing the others cannot release it. */
		r->rtype = rtype;
		memcpy(r->holder, me, 16);
		for (uint32_t i = 0; i < r->nregs;) {
			if (!memcmp(r->regs[i].hostid, me, 16)) {
				i++;
				continue;
			}
			ctrlr_resv_event(ev, r->regs[i].hostid, NVME_RESV_NOTIFY_REG_PREEMPTED);
			r->regs[i] = r->regs[--r->nregs];
		}
		return NVME_SC_SUCCESS;
	}
	if (!memcmp(r->holder, me, 16)) {
		/* The holder preempts itself: a new type (others see the old one released). */
		if (rtype != r->rtype) {
			uint8_t old = r->rtype;

			r->rtype = rtype;
			if (old != NVME_RESV_WRITE_EXCLUSIVE && old != NVME_RESV_EXCLUSIVE_ACCESS)
				ctrlr_resv_event_others(r, ev, me, NVME_RESV_NOTIFY_RELEASED);
		}
		if (prkey && prkey != self->rkey)
			ctrlr_resv_preempt_key(r, prkey, me, ev);
		return NVME_SC_SUCCESS;
	}
	{
		const struct ctrlr_resv_reg *h = ctrlr_resv_find(r, r->holder);

		if (h && prkey == h->rkey) {
			uint8_t old = r->rtype;

			/* The holder's key: the caller takes the reservation, then the holder and
			 * every registrant with that key go. */
			r->rtype = rtype;
			memcpy(r->holder, me, 16);
			ctrlr_resv_preempt_key(r, prkey, me, ev);
			if (old != rtype && old != NVME_RESV_WRITE_EXCLUSIVE &&
			    old != NVME_RESV_EXCLUSIVE_ACCESS)
				ctrlr_resv_event_others(r, ev, me, NVME_RESV_NOTIFY_RELEASED);
			return NVME_SC_SUCCESS;
		}
	}
	if (!prkey)
		return NVME_SC_INVALID_FIELD;
	return ctrlr_resv_preempt_key(r, prkey, me, ev) ? NVME_SC_SUCCESS : NVME_SC_RESV_CONFLICT;
}

uint16_t ctrlr_resv_acquire(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			    const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			    bool *persist)
{
	struct ctrlr_resv_reg *reg = ctrlr_resv_lookup(r, hostid);
	uint8_t rtype = NVME_RESV_RTYPE(cdw10);
	uint32_t act = NVME_RESV_ACTION(cdw10);
	uint16_t st;

	ev->n = 0;
	*persist = false;
	/* IEKEY is reserved in Acquire since NVMe 1.3 (RESCAP bit 7 says we follow that). */
	if ((cdw10 & NVME_RESV_IEKEY) || rtype < NVME_RESV_WRITE_EXCLUSIVE ||
	    rtype > NVME_RESV_EA_ALL_REGS || act > NVME_RACQA_PREEMPT_ABORT)
		return NVME_SC_INVALID_FIELD;
	if (!reg || reg->rkey != k->crkey)
		return NVME_SC_RESV_CONFLICT;
	if (act == NVME_RACQA_ACQUIRE) {
		if (!r->rtype) {
			r->rtype = rtype;
			memcpy(r->holder, hostid, 16);
			*persist = true;
			return NVME_SC_SUCCESS;
		}
		/* Acquiring what the host holds already, of the same type, succeeds. */
		if (ctrlr_resv_is_holder(r, hostid) && r->rtype == rtype)
			return NVME_SC_SUCCESS;
		return NVME_SC_RESV_CONFLICT;
	}
	st = ctrlr_resv_preempt(r, reg, rtype, k->nkey, ev);
	if (!st) {
		r->gen++;
		*persist = true;
	}
	return st;
}

uint16_t ctrlr_resv_release(struct ctrlr_resv *r, const uint8_t hostid[16], uint32_t cdw10,
			    const struct ctrlr_resv_keys *k, struct ctrlr_resv_events *ev,
			    bool *persist)
{
	struct ctrlr_resv_reg *reg = ctrlr_resv_lookup(r, hostid);
	uint8_t rtype = NVME_RESV_RTYPE(cdw10);

	ev->n = 0;
	*persist = false;
	if ((cdw10 & NVME_RESV_IEKEY) || NVME_RESV_ACTION(cdw10) > NVME_RRELA_CLEAR)
		return NVME_SC_INVALID_FIELD;
	if (!reg || reg->rkey != k->crkey)
		return NVME_SC_RESV_CONFLICT;
	if (NVME_RESV_ACTION(cdw10) == NVME_RRELA_CLEAR) {
		/* Every registration and the reservation go; the others hear Reservation
		 * Preempted (section 8.19.10). */
		ctrlr_resv_event_others(r, ev, hostid, NVME_RESV_NOTIFY_PREEMPTED);
		r->nregs = 0;
		r->rtype = NVME_RESV_NONE;
		memset(r->holder, 0, sizeof(r->holder));
		r->gen++;
		*persist = true;
		return NVME_SC_SUCCESS;
	}
	/* No reservation, or not the holder: success without effect (section 8.19.8). */
	if (!ctrlr_resv_is_holder(r, hostid))
		return NVME_SC_SUCCESS;
	if (rtype != r->rtype)
		return NVME_SC_INVALID_FIELD;
	ctrlr_resv_drop(r, hostid, ev);
	*persist = true;
	return NVME_SC_SUCCESS;
}

/* ---- the PTPL state file ---- */

static void ctrlr_resv_hex(const uint8_t *b, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int ctrlr_resv_unhex(const char *s, uint8_t *b)
{
	if (!s || strlen(s) != 32)
		return -EINVAL;
	for (int i = 0; i < 16; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		b[i] = (uint8_t)v;
	}
	return 0;
}

int ctrlr_resv_save(const struct ctrlr_resv *r, const char *path)
{
	struct json_object *o = json_object_new_object(), *regs = json_object_new_array();
	struct iovec iov[2];
	char hex[33];
	int rc;

	if (!o || !regs) {
		json_object_put(o);
		json_object_put(regs);
		return -ENOMEM;
	}
	json_object_object_add(o, "ptpl", json_object_new_boolean(r->ptpl));
	/* With PTPL off nothing survives a power loss: only that is written. */
	if (r->ptpl) {
		json_object_object_add(o, "generation", json_object_new_int64(r->gen));
		json_object_object_add(o, "rtype", json_object_new_int(r->rtype));
		ctrlr_resv_hex(r->holder, hex);
		json_object_object_add(o, "holder", json_object_new_string(hex));
		for (uint32_t i = 0; i < r->nregs; i++) {
			struct json_object *e = json_object_new_object();
			char key[24];

			ctrlr_resv_hex(r->regs[i].hostid, hex);
			snprintf(key, sizeof(key), "0x%016" PRIx64, r->regs[i].rkey);
			json_object_object_add(e, "hostid", json_object_new_string(hex));
			json_object_object_add(e, "rkey", json_object_new_string(key));
			json_object_array_add(regs, e);
		}
		json_object_object_add(o, "registrants", regs);
	} else {
		json_object_put(regs);
	}
	iov[0].iov_base = (void *)json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY);
	iov[0].iov_len = strlen(iov[0].iov_base);
	iov[1] = (struct iovec){.iov_base = "\n", .iov_len = 1};
	rc = file_replace(path, iov, 2);
	json_object_put(o);
	return rc;
}

int ctrlr_resv_load(struct ctrlr_resv *r, const char *path)
{
	struct json_object *o, *v, *regs;
	bool capable = r->ptpl_capable;
	int rc = -EINVAL;

	if (access(path, F_OK) && errno == ENOENT)
		return 0;
	o = json_object_from_file(path);
	if (!o)
		return -EINVAL;
	ctrlr_resv_init(r, capable);
	if (!json_object_object_get_ex(o, "ptpl", &v) || !json_object_is_type(v, json_type_boolean))
		goto out;
	r->ptpl = json_object_get_boolean(v);
	if (!r->ptpl) {
		rc = 0;
		goto out;
	}
	if (!json_object_object_get_ex(o, "generation", &v))
		goto out;
	r->gen = (uint32_t)json_object_get_int64(v);
	if (!json_object_object_get_ex(o, "rtype", &v))
		goto out;
	r->rtype = (uint8_t)json_object_get_int(v);
	if (r->rtype > NVME_RESV_EA_ALL_REGS || !json_object_object_get_ex(o, "holder", &v) ||
	    ctrlr_resv_unhex(json_object_get_string(v), r->holder))
		goto out;
	if (!json_object_object_get_ex(o, "registrants", &regs) ||
	    !json_object_is_type(regs, json_type_array) ||
	    json_object_array_length(regs) > CTRLR_RESV_MAX_REGS)
		goto out;
	for (size_t i = 0; i < json_object_array_length(regs); i++) {
		struct json_object *e = json_object_array_get_idx(regs, i), *h, *k;
		struct ctrlr_resv_reg *reg = &r->regs[r->nregs];
		const char *ks;
		char *end;

		if (!json_object_object_get_ex(e, "hostid", &h) ||
		    !json_object_object_get_ex(e, "rkey", &k) ||
		    ctrlr_resv_unhex(json_object_get_string(h), reg->hostid))
			goto out;
		ks = json_object_get_string(k);
		errno = 0;
		reg->rkey = strtoull(ks ? ks : "", &end, 0);
		if (!ks || !*ks || *end || errno || ctrlr_resv_find(r, reg->hostid))
			goto out;
		r->nregs++;
	}
	/* A holder must be a registrant (not for All Registrants, which need one at least). */
	if (r->rtype && (ctrlr_resv_all_regs(r->rtype) ? !r->nregs : !ctrlr_resv_find(r, r->holder)))
		goto out;
	rc = 0;
out:
	if (rc)
		ctrlr_resv_init(r, capable);
	json_object_put(o);
	return rc;
}

/* ---- the access words ---- */

void ctrlr_resv_update_access(struct ctrlr_ns_shared *s)
{
	const struct ctrlr_resv *r = &ctrlr_nvm_shared(s)->resv;

	for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
		CTRLR_STORE(ns->io_block, ctrlr_resv_access(r, ns->ctrlr->hostid));
}

void ctrlr_resv_ctrlr_hostid_changed(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (ns && ns->shared)
			CTRLR_STORE(ns->io_block,
				    ctrlr_resv_access(&ctrlr_nvm_ns(ns)->sh->resv, ctrlr->hostid));
	}
}

bool ctrlr_resv_ctrlr_registered(struct ctrlr *ctrlr)
{
	for (uint32_t i = 0; i < CTRLR_MAX_NAMESPACES; i++) {
		struct ctrlr_ns *ns = ctrlr->ns[i];

		if (ns && ns->shared && ctrlr_resv_find(&ctrlr_nvm_ns(ns)->sh->resv, ctrlr->hostid))
			return true;
	}
	return false;
}

/* ---- notifications (section 8.19.x, log page 80h) ---- */

static uint32_t ctrlr_resv_mask_bit(uint8_t type)
{
	switch (type) {
	case NVME_RESV_NOTIFY_REG_PREEMPTED:
		return NVME_RESV_MASK_REGPRE;
	case NVME_RESV_NOTIFY_RELEASED:
		return NVME_RESV_MASK_RESREL;
	default:
		return NVME_RESV_MASK_RESPRE;
	}
}

/* Queues a log page on ctrlr and reports Reservation Log Page Available. A full queue drops the
 * page, but the count still moves on: the host sees the gap in Log Page Count. */
static void ctrlr_resv_log_add(struct ctrlr *ctrlr, uint8_t type, uint32_t nsid)
{
	struct ctrlr_nvm_ctrlr *n = ctrlr_nvm(ctrlr);
	uint64_t count = ++n->resv_log_count;

	if (!count) /* 0 means "no page": the count wraps to 1 */
		count = n->resv_log_count = 1;
	if (n->resv_log_n < CTRLR_RESV_LOG_MAX) {
		uint32_t at = (n->resv_log_head + n->resv_log_n++) % CTRLR_RESV_LOG_MAX;

		n->resv_log[at].type = type;
		n->resv_log[at].nsid = nsid;
		n->resv_log[at].count = count;
	} else {
		CTRLR_STAT_ADD(ctrlr->cnt.lost_events, 1);
	}
	if (ctrlr->state == CTRLR_ST_ENABLED)
		ctrlr_aer_report(ctrlr, NVME_AER_TYPE_IO_SPECIFIC, NVME_AER_IO_RESV_LOG,
				 NVME_LOG_RESV_NOTIFY);
}

/* Every controller of the namespace whose host is in ev gets its page, unless it masked it. */
static void ctrlr_resv_notify(struct ctrlr_ns_shared *s, const struct ctrlr_resv_events *ev)
{
	for (uint32_t i = 0; i < ev->n; i++)
		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
			if (!memcmp(ns->ctrlr->hostid, ev->e[i].hostid, 16) &&
			    !(ctrlr_nvm_ns(ns)->resv_mask & ctrlr_resv_mask_bit(ev->e[i].type)))
				ctrlr_resv_log_add(ns->ctrlr, ev->e[i].type, ns->nsid);
}

size_t ctrlr_log_resv_notify(struct ctrlr *ctrlr, uint8_t *buf, bool rae)
{
	struct nvme_resv_notify_log *l = (struct nvme_resv_notify_log *)buf;
	struct ctrlr_nvm_ctrlr *n = ctrlr_nvm(ctrlr);

	memset(l, 0, sizeof(*l));
	if (n->resv_log_n) {
		uint32_t at = n->resv_log_head;
		uint32_t left = n->resv_log_n - 1;

		l->count = n->resv_log[at].count;
		l->type = n->resv_log[at].type;
		l->nsid = n->resv_log[at].nsid;
		l->nr_avail = (uint8_t)(left > 255 ? 255 : left);
		/* Reading the page consumes it (section 5.16.1.24), unless Retain Asynchronous
		 * Event. */
		if (!rae) {
			n->resv_log_head = (at + 1) % CTRLR_RESV_LOG_MAX;
			n->resv_log_n--;
		}
	}
	return sizeof(*l);
}

/* ---- the commands ---- */

/* Bytes of the command's data: Register and Acquire 16, Release 8 (Figures of 7.2-7.5). */
static uint32_t ctrlr_resv_data_len(uint8_t opc)
{
	return opc == NVME_CMD_RESV_RELEASE ? 8 : 16;
}

/* Back on the owner thread: copy the report out, complete. */
static void ctrlr_resv_done_owner(void *arg)
{
	struct ctrlr_req *req = arg;
	uint16_t st = (uint16_t)req->step.index;

	if (!st && req->step.buf)
		ctrlr_req_iov_write(req, 0, req->step.buf, req->step.count);
	free(req->step.buf);
	req->step.buf = NULL;
	ctrlr_req_complete(req, st);
}

static void ctrlr_resv_finish(struct ctrlr_req *req, uint16_t st)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;

	req->step.index = st;
	ctrlr->ops->io_post(ctrlr->tctx, req->sq, &req->hop, ctrlr_resv_done_owner, req);
}

/* Reservation Report (section 7.4): header, then one entry per controller of the subsystem
 * attached to this namespace whose host is a registrant; a registrant with no such controller
 * (restored from the PTPL file) is listed once with CNTLID FFFFh. */
static uint16_t ctrlr_resv_report(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_ns_shared *s = req->ns->shared;
	const struct ctrlr_resv *r = &ctrlr_nvm_shared(s)->resv;
	bool eds = req->sqe.cdw11 & NVME_RESV_REPORT_EDS;
	size_t hdr = eds ? NVME_RESV_EXT_HDR_SIZE : sizeof(struct nvme_resv_status_hdr);
	size_t esz = eds ? sizeof(struct nvme_resv_ctrl_ext) : sizeof(struct nvme_resv_ctrl);
	size_t len = req->step.count, max, n = 0;
	struct nvme_resv_status_hdr *h;
	uint8_t *buf;

	/* The data structure carries the host identifiers in the format the host uses: 128-bit
	 * ones only in the extended structure, 64-bit ones only in the other (section 7.4). */
	if (eds != ctrlr->hostid_ext) {
		req->error_loc = offsetof(struct nvme_sqe, cdw11);
		return NVME_SC_HOSTID_INCONSISTENT;
	}
	max = 0;
	for (uint32_t i = 0; i < r->nregs; i++) {
		uint32_t c = 0;

		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next)
			c += !memcmp(ns->ctrlr->hostid, r->regs[i].hostid, 16);
		max += c ? c : 1;
	}
	buf = calloc(1, hdr + max * esz);
	if (!buf)
		return NVME_SC_INTERNAL;
	h = (struct nvme_resv_status_hdr *)buf;
	h->gen = r->gen;
	h->rtype = r->rtype;
	h->ptpls = r->ptpl;
	for (uint32_t i = 0; i < r->nregs; i++) {
		const struct ctrlr_resv_reg *reg = &r->regs[i];
		uint8_t rcsts = ctrlr_resv_is_holder(r, reg->hostid) ? 1 : 0;
		struct ctrlr_ns *ns = s->nss;
		bool any = false;

		for (;;) {
			uint16_t cntlid;

			while (ns && memcmp(ns->ctrlr->hostid, reg->hostid, 16))
				ns = ns->share_next;
			if (!ns && any)
				break;
			cntlid = ns ? ns->ctrlr->cfg.cntlid : NVME_RESV_CNTLID_UNKNOWN;
			if (eds) {
				struct nvme_resv_ctrl_ext *e =
				    (struct nvme_resv_ctrl_ext *)(buf + hdr + n * esz);

				e->cntlid = cntlid;
				e->rcsts = rcsts;
				e->rkey = reg->rkey;
				memcpy(e->hostid, reg->hostid, 16);
			} else {
				struct nvme_resv_ctrl *e = (struct nvme_resv_ctrl *)(buf + hdr + n * esz);

				e->cntlid = cntlid;
				e->rcsts = rcsts;
				e->rkey = reg->rkey;
				memcpy(&e->hostid, reg->hostid, 8);
			}
			n++;
			any = true;
			if (!ns)
				break;
			ns = ns->share_next;
		}
	}
	h->regctl = (uint16_t)n;
	/* Exactly NUMD dwords: what does not fit is cut, the rest of the buffer zeroed. */
	req->step.buf = calloc(1, len);
	if (!req->step.buf) {
		free(buf);
		return NVME_SC_INTERNAL;
	}
	memcpy(req->step.buf, buf, len < hdr + n * esz ? len : hdr + n * esz);
	free(buf);
	return NVME_SC_SUCCESS;
}

/* Preempt and Abort (section 8.19, Preempting a Reservation or Registration): the hosts whose
 * registration was preempted (ev) lose the commands their controllers started on this namespace
 * and have not completed: each ends with Command Aborted due to Preempt and Abort. A command
 * whose bdev I/O is in flight ends so when that I/O returns (it cannot be recalled: a write may
 * have reached the media). Commands still in their SQs (between the head and the tail each
 * SQ's owner thread has seen) end so when fetched, without running; the Acquire completes once
 * every such fence is up, so the ones submitted after it meet the new access rules (Reservation
 * Conflict where the reservation excludes them). The new access
 * words are in place first, so nothing of theirs starts on the namespace after the marks unless
 * the reservation allows it. */
/* A Reservation Acquire (Preempt and Abort) waiting for the preempted controllers' SQs to put up
 * their fences (core/abort.c) before it completes. Admin thread. */
struct ctrlr_preempt_op {
	struct ctrlr_req *req;
	uint32_t pending; /* fences not up yet, + 1 while they are being posted */
};

/* One fence is up (or the posting ended): the last one completes the Acquire. */
static void ctrlr_resv_preempt_put(void *arg)
{
	struct ctrlr_preempt_op *op = arg;

	if (--op->pending)
		return;
	ctrlr_resv_finish(op->req, NVME_SC_SUCCESS);
	free(op);
}

static void ctrlr_resv_preempt_abort(struct ctrlr_ns_shared *s, const struct ctrlr_resv_events *ev,
				     struct ctrlr_preempt_op *op)
{
	for (uint32_t i = 0; i < ev->n; i++) {
		if (ev->e[i].type != NVME_RESV_NOTIFY_REG_PREEMPTED)
			continue;
		for (struct ctrlr_ns *ns = s->nss; ns; ns = ns->share_next) {
			uint32_t n;

			if (memcmp(ns->ctrlr->hostid, ev->e[i].hostid, 16))
				continue;
			n = ctrlr_abort_preempted(ns->ctrlr, ns->nsid);
			if (op)
				op->pending += ctrlr_abort_preempt_queued(
				    ns->ctrlr, ns->nsid, ctrlr_resv_preempt_put, op);
			else
				ctrlr_abort_preempt_queued(ns->ctrlr, ns->nsid, NULL, NULL);
			if (n)
				LOG_INFO(CTRLR_LOG, "%s: ns %u: %u command(s) aborted by a preempt",
					 ns->ctrlr->serial, ns->nsid, n);
		}
	}
}

/* On the admin thread: run the state machine against the shared namespace. */
static void ctrlr_resv_exec_admin(void *arg)
{
	struct ctrlr_req *req = arg;
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_ns_shared *s = req->ns->shared;
	struct ctrlr_nvm_shared *ns_sh = ctrlr_nvm_shared(s);
	struct ctrlr_resv_keys *k = req->step.buf;
	struct ctrlr_resv_events ev = {0};
	struct ctrlr_resv before = ns_sh->resv;
	uint32_t cdw10 = req->sqe.cdw10;
	bool persist = false;
	uint16_t st;

	switch (req->sqe.cdw0.bits.opc) {
	case NVME_CMD_RESV_REGISTER:
		st = ctrlr_resv_register(&ns_sh->resv, ctrlr->hostid, cdw10, k, &ev, &persist);
		break;
	case NVME_CMD_RESV_ACQUIRE:
		st = ctrlr_resv_acquire(&ns_sh->resv, ctrlr->hostid, cdw10, k, &ev, &persist);
		break;
	case NVME_CMD_RESV_RELEASE:
		st = ctrlr_resv_release(&ns_sh->resv, ctrlr->hostid, cdw10, k, &ev, &persist);
		break;
	default:
		free(req->step.buf);
		req->step.buf = NULL;
		return ctrlr_resv_finish(req, ctrlr_resv_report(req));
	}
	free(req->step.buf);
	req->step.buf = NULL;
	if (st == NVME_SC_INVALID_FIELD)
		req->error_loc = offsetof(struct nvme_sqe, cdw10);
	if (st)
		return ctrlr_resv_finish(req, st);
	/* With PTPL on (or just turned off) the file follows before the command completes; if it
	 * cannot be written, the change is undone and the command fails. */
	if (persist && ns_sh->ptpl_file && (ns_sh->resv.ptpl || before.ptpl)) {
		int rc = ctrlr_resv_save(&ns_sh->resv, ns_sh->ptpl_file);

		if (rc) {
			LOG_ERR(CTRLR_LOG, "ns %u: cannot write reservation state %s: %s",
				req->ns->nsid, ns_sh->ptpl_file, strerror(-rc));
			ns_sh->resv = before;
			return ctrlr_resv_finish(req, NVME_SC_INTERNAL);
		}
	}
	ctrlr_resv_update_access(s);
	if (req->sqe.cdw0.bits.opc == NVME_CMD_RESV_ACQUIRE &&
	    (cdw10 & 0x7) == NVME_RACQA_PREEMPT_ABORT) {
		struct ctrlr_preempt_op *op = calloc(1, sizeof(*op));

		/* Without memory for the wait, the fences still go up; the Acquire just does not
		 * wait for them. */
		if (!op)
			LOG_ERR(CTRLR_LOG, "ns %u: preempt and abort completes before its fences",
				req->ns->nsid);
		else
			*op = (struct ctrlr_preempt_op){.req = req, .pending = 1};
		ctrlr_resv_preempt_abort(s, &ev, op);
		ctrlr_resv_notify(s, &ev);
		if (op)
			return ctrlr_resv_preempt_put(op);
		return ctrlr_resv_finish(req, NVME_SC_SUCCESS);
	}
	ctrlr_resv_notify(s, &ev);
	ctrlr_resv_finish(req, NVME_SC_SUCCESS);
}

void ctrlr_io_resv(struct ctrlr_req *req)
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	uint8_t opc = req->sqe.cdw0.bits.opc;
	uint16_t st;

	req->step.buf = NULL;
	if (opc == NVME_CMD_RESV_REPORT) {
		uint64_t len = ((uint64_t)req->sqe.cdw10 + 1) * 4;

		if (len > ctrlr_mdts_bytes(ctrlr))
			return ctrlr_req_complete_err(req, NVME_SC_INVALID_FIELD,
						      offsetof(struct nvme_sqe, cdw10));
		st = ctrlr_req_map_data(req, len, CTRLR_DMA_WRITE);
		if (st)
			return ctrlr_req_complete(req, st);
		req->step.count = (uint32_t)len;
	} else {
		uint32_t len = ctrlr_resv_data_len(opc);
		struct ctrlr_resv_keys *k = calloc(1, sizeof(*k));
		uint8_t data[16];

		if (!k)
			return ctrlr_req_complete(req, NVME_SC_INTERNAL);
		st = ctrlr_req_copy_from_host(req, data, len);
		if (st) {
			free(k);
			return ctrlr_req_complete(req, st);
		}
		memcpy(&k->crkey, data, 8);
		if (len == 16)
			memcpy(&k->nkey, data + 8, 8);
		req->step.buf = k;
	}
	ctrlr->ops->admin_post(ctrlr->tctx, &req->hop, ctrlr_resv_exec_admin, req);
}

/* ---- Persist Through Power Loss (Feature 83h) ---- */

bool ctrlr_resv_ptpl(const struct ctrlr_ns *ns)
{
	return ctrlr_nvm_ns(ns)->sh->resv.ptpl;
}

bool ctrlr_resv_ptpl_capable(const struct ctrlr_ns *ns)
{
	return ctrlr_nvm_ns(ns)->sh->resv.ptpl_capable;
}

int ctrlr_resv_set_ptpl(struct ctrlr_ns *ns, bool on)
{
	struct ctrlr_nvm_shared *sh = ctrlr_nvm_ns(ns)->sh;
	bool was = sh->resv.ptpl;
	int rc;

	if (on && !sh->resv.ptpl_capable)
		return -ENOTSUP;
	sh->resv.ptpl = on;
	rc = ctrlr_resv_save(&sh->resv, sh->ptpl_file);
	if (rc)
		sh->resv.ptpl = was;
	return rc;
}
