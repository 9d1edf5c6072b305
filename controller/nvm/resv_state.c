/* controller/nvm/resv_state.c - the reservation state machine (NVMe Base 2.0 section 8.19):
 * registrants, holder, type and generation changed by Register, Acquire (with Preempt and
 * Preempt and Abort) and Release, the notifications each change owes, the access a host has;
 * and the Persist Through Power Loss state file (JSON, written through a temporary file and a
 * rename). Pure but for the file: no controller, no thread. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "controller/nvm/resv_state.h"

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
	if (ev->n == sizeof(ev->e) / sizeof(ev->e[0]))
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

/* The state as a JSON object; with full false and PTPL off only "ptpl" (what the PTPL file holds:
 * with PTPL off nothing survives a power loss). NULL without memory. */
static struct json_object *ctrlr_resv_to_json(const struct ctrlr_resv *r, bool full)
{
	struct json_object *o = json_object_new_object(), *regs = json_object_new_array();
	char hex[33];

	if (!o || !regs) {
		json_object_put(o);
		json_object_put(regs);
		return NULL;
	}
	json_object_object_add(o, "ptpl", json_object_new_boolean(r->ptpl));
	if (!r->ptpl && !full) {
		json_object_put(regs);
		return o;
	}
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
	return o;
}

static char *ctrlr_resv_json_text(struct json_object *o)
{
	char *text = NULL;

	if (!o)
		return NULL;
	if (asprintf(&text, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY)) < 0)
		text = NULL;
	json_object_put(o);
	return text;
}

char *ctrlr_resv_encode(const struct ctrlr_resv *r)
{
	return ctrlr_resv_json_text(ctrlr_resv_to_json(r, false));
}

/* Fills r (ptpl_capable kept) from o; -EINVAL when o is not a valid state. */
static int ctrlr_resv_from_json(struct ctrlr_resv *r, struct json_object *o, bool full)
{
	struct json_object *v, *regs;
	bool capable = r->ptpl_capable;
	int rc = -EINVAL;

	ctrlr_resv_init(r, capable);
	if (!json_object_object_get_ex(o, "ptpl", &v) || !json_object_is_type(v, json_type_boolean))
		goto out;
	r->ptpl = json_object_get_boolean(v);
	if (!r->ptpl && !full) {
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
	return rc;
}

int ctrlr_resv_load(struct ctrlr_resv *r, const char *path)
{
	struct json_object *o;
	int rc;

	if (access(path, F_OK) && errno == ENOENT)
		return 0;
	o = json_object_from_file(path);
	if (!o)
		return -EINVAL;
	rc = ctrlr_resv_from_json(r, o, false);
	json_object_put(o);
	return rc;
}

/* ---- the shared record ---- */

void ctrlr_resv_record_add(struct ctrlr_resv_record *rec, bool abort,
			   const struct ctrlr_resv_events *ev)
{
	if (rec->nchanges == CTRLR_RESV_CHANGES) {
		memmove(&rec->changes[0], &rec->changes[1],
			(CTRLR_RESV_CHANGES - 1) * sizeof(rec->changes[0]));
		rec->nchanges--;
	}
	rec->seq++;
	rec->changes[rec->nchanges].seq = rec->seq;
	rec->changes[rec->nchanges].abort = abort;
	rec->changes[rec->nchanges].ev = *ev;
	rec->nchanges++;
}

char *ctrlr_resv_record_encode(const struct ctrlr_resv_record *rec)
{
	struct json_object *o = ctrlr_resv_to_json(&rec->r, true), *changes;
	char hex[33];

	if (!o)
		return NULL;
	changes = json_object_new_array();
	if (!changes) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "seq", json_object_new_int64((int64_t)rec->seq));
	for (uint32_t i = 0; i < rec->nchanges; i++) {
		const struct ctrlr_resv_change *c = &rec->changes[i];
		struct json_object *e = json_object_new_object(), *evs = json_object_new_array();

		for (uint32_t j = 0; j < c->ev.n; j++) {
			struct json_object *x = json_object_new_object();

			ctrlr_resv_hex(c->ev.e[j].hostid, hex);
			json_object_object_add(x, "hostid", json_object_new_string(hex));
			json_object_object_add(x, "type", json_object_new_int(c->ev.e[j].type));
			json_object_array_add(evs, x);
		}
		json_object_object_add(e, "seq", json_object_new_int64((int64_t)c->seq));
		json_object_object_add(e, "abort", json_object_new_boolean(c->abort));
		json_object_object_add(e, "events", evs);
		json_object_array_add(changes, e);
	}
	json_object_object_add(o, "changes", changes);
	return ctrlr_resv_json_text(o);
}

int ctrlr_resv_record_decode(struct ctrlr_resv_record *rec, const char *text, size_t len)
{
	struct json_tokener *tok;
	struct json_object *o, *v, *changes;
	bool capable = rec->r.ptpl_capable;
	int rc = -EINVAL;

	memset(rec, 0, sizeof(*rec));
	ctrlr_resv_init(&rec->r, capable);
	if (!len)
		return 0;
	if (len > INT32_MAX)
		return -EINVAL;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, text, (int)len);
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object))
		goto out;
	if (ctrlr_resv_from_json(&rec->r, o, true))
		goto out;
	if (!json_object_object_get_ex(o, "seq", &v) || !json_object_is_type(v, json_type_int))
		goto out;
	rec->seq = (uint64_t)json_object_get_int64(v);
	if (!json_object_object_get_ex(o, "changes", &changes) ||
	    !json_object_is_type(changes, json_type_array) ||
	    json_object_array_length(changes) > CTRLR_RESV_CHANGES)
		goto out;
	for (size_t i = 0; i < json_object_array_length(changes); i++) {
		struct json_object *e = json_object_array_get_idx(changes, i), *evs;
		struct ctrlr_resv_change *c = &rec->changes[i];

		if (!json_object_object_get_ex(e, "seq", &v))
			goto out;
		c->seq = (uint64_t)json_object_get_int64(v);
		if (!json_object_object_get_ex(e, "abort", &v))
			goto out;
		c->abort = json_object_get_boolean(v);
		if (!json_object_object_get_ex(e, "events", &evs) ||
		    !json_object_is_type(evs, json_type_array) ||
		    json_object_array_length(evs) > CTRLR_RESV_MAX_REGS + 1)
			goto out;
		for (size_t j = 0; j < json_object_array_length(evs); j++) {
			struct json_object *x = json_object_array_get_idx(evs, j), *h, *t;

			if (!json_object_object_get_ex(x, "hostid", &h) ||
			    !json_object_object_get_ex(x, "type", &t) ||
			    ctrlr_resv_unhex(json_object_get_string(h), c->ev.e[j].hostid))
				goto out;
			c->ev.e[j].type = (uint8_t)json_object_get_int(t);
			if (c->ev.e[j].type < NVME_RESV_NOTIFY_REG_PREEMPTED ||
			    c->ev.e[j].type > NVME_RESV_NOTIFY_PREEMPTED)
				goto out;
			c->ev.n++;
		}
		/* Changes are listed oldest first, each one after the one before, up to seq. */
		if (c->seq > rec->seq || (i && c->seq != rec->changes[i - 1].seq + 1))
			goto out;
		rec->nchanges++;
	}
	rc = 0;
out:
	if (rc) {
		memset(rec, 0, sizeof(*rec));
		ctrlr_resv_init(&rec->r, capable);
	}
	json_object_put(o);
	return rc;
}

