/* controller/device/state.c - the controller's own state file (ctrlr_config.state_file): the
 * firmware slots, the active slot and the one committed for the next reset (fw.c), and the
 * features the host saved with Set Features SV (admin/features.c). A change is written whole
 * (a temporary file synced and renamed, the directory synced) by the syncer thread before the
 * command that made it completes: write-ahead, one change at a time per controller, the
 * commands behind it waiting their turn. Read when the controller is made: a file that does
 * not parse or holds a value out of range is refused with its reason (the controller is not
 * made), never half taken. A power cycle is a reset: an image committed for the next reset is
 * active after a restart. Admin thread.
 *
 * Format (JSON): {"version": 1, "firmware": {"slots": ["REV1", "REV2", ""], "active": 2,
 * "next": 0}, "features": [{"fid": 4, "sub": 0, "value": 343}, ...], "fdp": {"enabled":
 * false, "events": [1, 0, 4]}}; "fdp" (Features 1Dh and 1Eh, per placement handle, as the host
 * left them) only with an FDP configuration; and the sections modules above keep
 * (ctrlr_state_section_take: "virtualization", virt/state.c). */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "controller/device/device.h"

#define CTRLR_STATE_VERSION 1

/* ---- reading ---- */

static bool ctrlr_state_rev_ok(const char *s)
{
	size_t n = strlen(s);

	if (n > 8)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static int ctrlr_state_parse_fw(struct ctrlr *ctrlr, struct json_object *o, const char **why)
{
	struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	struct json_object *slots, *v;
	char rev[CTRLR_FW_SLOTS][9] = {{0}};
	int64_t active, next;

	if (!json_object_object_get_ex(o, "slots", &slots) ||
	    !json_object_is_type(slots, json_type_array) ||
	    json_object_array_length(slots) != CTRLR_FW_SLOTS) {
		*why = "firmware.slots is not an array of 3 revisions";
		return -EINVAL;
	}
	for (int i = 0; i < CTRLR_FW_SLOTS; i++) {
		struct json_object *e = json_object_array_get_idx(slots, i);
		const char *s = json_object_get_string(e);

		if (!json_object_is_type(e, json_type_string) || !ctrlr_state_rev_ok(s)) {
			*why = "a firmware revision is not up to 8 printable characters";
			return -EINVAL;
		}
		snprintf(rev[i], sizeof(rev[i]), "%s", s);
	}
	if (!json_object_object_get_ex(o, "active", &v) || !json_object_is_type(v, json_type_int) ||
	    (active = json_object_get_int64(v)) < 1 || active > CTRLR_FW_SLOTS ||
	    !rev[active - 1][0]) {
		*why = "firmware.active is not a slot holding an image";
		return -EINVAL;
	}
	if (!json_object_object_get_ex(o, "next", &v) || !json_object_is_type(v, json_type_int) ||
	    (next = json_object_get_int64(v)) < 0 || next > CTRLR_FW_SLOTS ||
	    (next && !rev[next - 1][0])) {
		*why = "firmware.next is not 0 or a slot holding an image";
		return -EINVAL;
	}
	/* Slot 1 is read-only: it holds what this daemon ships, whatever the file says. */
	for (int i = 1; i < CTRLR_FW_SLOTS; i++)
		memcpy(fw->rev[i], rev[i], sizeof(fw->rev[i]));
	fw->active = (uint8_t)active;
	fw->next = (uint8_t)next;
	return 0;
}

static int ctrlr_state_parse_feats(struct ctrlr *ctrlr, struct json_object *a, const char **why)
{
	if (!json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) > CTRLR_SAVED_FEATS) {
		*why = "features is not an array of saved features";
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i), *fid, *sub, *val;
		int64_t f, s, v;

		if (!json_object_object_get_ex(e, "fid", &fid) ||
		    !json_object_object_get_ex(e, "sub", &sub) ||
		    !json_object_object_get_ex(e, "value", &val) ||
		    !json_object_is_type(fid, json_type_int) ||
		    !json_object_is_type(sub, json_type_int) ||
		    !json_object_is_type(val, json_type_int)) {
			*why = "a saved feature is not {fid, sub, value}";
			return -EINVAL;
		}
		f = json_object_get_int64(fid);
		s = json_object_get_int64(sub);
		v = json_object_get_int64(val);
		/* Which features, and their values, admin/features.c checks when it takes
		 * them. */
		if (f < 0 || f > 255 || s < 0 || s > 255 || v < 0 || v > UINT32_MAX) {
			*why = "a saved feature is out of range";
			return -EINVAL;
		}
		ctrlr_saved_feat_put(ctrlr, (uint8_t)f, (uint8_t)s, (uint32_t)v);
	}
	return 0;
}

int ctrlr_state_load(struct ctrlr *ctrlr)
{
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;
	struct json_object *o, *v;
	const char *why = "not a JSON object";
	int rc = -EINVAL;

	if (!ctrlr->cfg.state_file)
		return 0;
	st->path = strdup(ctrlr->cfg.state_file);
	if (!st->path)
		return -ENOMEM;
	ctrlr->cfg.state_file = st->path;
	if (access(st->path, F_OK) && errno == ENOENT)
		return 0; /* a new controller: shipped firmware, nothing saved */
	o = json_object_from_file(st->path);
	if (!o || !json_object_is_type(o, json_type_object))
		goto out;
	if (!json_object_object_get_ex(o, "version", &v) ||
	    json_object_get_int(v) != CTRLR_STATE_VERSION) {
		why = "not a version 1 controller state file";
		goto out;
	}
	if (json_object_object_get_ex(o, "firmware", &v) &&
	    (rc = ctrlr_state_parse_fw(ctrlr, v, &why)))
		goto out;
	if (json_object_object_get_ex(o, "features", &v) &&
	    (rc = ctrlr_state_parse_feats(ctrlr, v, &why)))
		goto out;
	if (json_object_object_get_ex(o, "fdp", &v)) {
		struct json_object *en;

		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, "enabled", &en) ||
		    !json_object_is_type(en, json_type_boolean)) {
			why = "fdp is not {\"enabled\": true|false}";
			rc = -EINVAL;
			goto out;
		}
		/* Without an FDP configuration now, there is nothing to enable. */
		ctrlr_fdp_set_enabled(ctrlr, json_object_get_boolean(en));
		if (json_object_object_get_ex(v, "events", &en)) {
			if (!json_object_is_type(en, json_type_array) ||
			    json_object_array_length(en) > CTRLR_FDP_MAX_RUH) {
				why = "fdp.events is not an array of event type bits per handle";
				rc = -EINVAL;
				goto out;
			}
			for (size_t i = 0; i < json_object_array_length(en); i++) {
				struct json_object *b = json_object_array_get_idx(en, i);
				int64_t bits = json_object_get_int64(b);

				if (!json_object_is_type(b, json_type_int) || bits < 0 || bits > 7 ||
				    ctrlr_fdp_set_events(ctrlr, (uint16_t)i, (uint8_t)bits)) {
					why = "an fdp.events entry is not 0..7";
					rc = -EINVAL;
					goto out;
				}
			}
		}
	}
	rc = 0;
	st->loaded = json_object_get(o); /* the sections of the modules above */
out:
	json_object_put(o);
	if (rc) {
		LOG_ERR(CTRLR_LOG, "controller state file %s: %s: refused (the controller is not "
				   "made; fix or move the file)", st->path, why);
		/* Nothing of it is taken. */
		ctrlr_fw_init(ctrlr);
		memset(&st->feats, 0, sizeof(st->feats));
	}
	return rc;
}

void ctrlr_state_fini(struct ctrlr *ctrlr)
{
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;

	free(st->path);
	free(st->text);
	json_object_put(st->loaded);
	st->loaded = NULL;
	st->path = st->text = NULL;
	ctrlr->cfg.state_file = NULL;
}

/* ---- saved features ---- */

bool ctrlr_saved_feat_get(const struct ctrlr *ctrlr, uint8_t fid, uint8_t sub, uint32_t *value)
{
	const struct ctrlr_saved_feats *sf = &ctrlr_dev(ctrlr)->state.feats;

	for (uint32_t i = 0; i < sf->n; i++) {
		if (sf->f[i].fid == fid && sf->f[i].sub == sub) {
			*value = sf->f[i].value;
			return true;
		}
	}
	return false;
}

void ctrlr_saved_feat_put(struct ctrlr *ctrlr, uint8_t fid, uint8_t sub, uint32_t value)
{
	struct ctrlr_saved_feats *sf = &ctrlr_dev(ctrlr)->state.feats;

	for (uint32_t i = 0; i < sf->n; i++) {
		if (sf->f[i].fid == fid && sf->f[i].sub == sub) {
			sf->f[i].value = value;
			return;
		}
	}
	/* CTRLR_SAVED_FEATS holds every (fid, sub) ctrlr_saved_feat_valid accepts. */
	if (sf->n < CTRLR_SAVED_FEATS)
		sf->f[sf->n++] = (struct ctrlr_saved_feat){.fid = fid, .sub = sub, .value = value};
}

void ctrlr_saved_feat_del(struct ctrlr *ctrlr, uint8_t fid, uint8_t sub)
{
	struct ctrlr_saved_feats *sf = &ctrlr_dev(ctrlr)->state.feats;

	for (uint32_t i = 0; i < sf->n; i++) {
		if (sf->f[i].fid == fid && sf->f[i].sub == sub) {
			sf->f[i] = sf->f[--sf->n];
			return;
		}
	}
}

struct json_object *ctrlr_state_section_get(struct ctrlr *ctrlr, const char *name)
{
	struct json_object *o = NULL;

	if (ctrlr_dev(ctrlr)->state.loaded)
		json_object_object_get_ex(ctrlr_dev(ctrlr)->state.loaded, name, &o);
	return o;
}

int ctrlr_state_section_take(struct ctrlr *ctrlr, const char *name,
			     struct json_object *(*encode)(struct ctrlr *ctrlr))
{
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;

	if (st->nr_sections == CTRLR_STATE_SECTIONS)
		return -ENOSPC;
	st->sections[st->nr_sections++] = (struct ctrlr_state_section){.name = name,
									.encode = encode};
	return 0;
}

/* ---- writing ---- */

static bool ctrlr_state_own_key(const struct ctrlr_dev_state *st, const char *key)
{
	if (!strcmp(key, "version") || !strcmp(key, "firmware") || !strcmp(key, "features") ||
	    !strcmp(key, "fdp"))
		return true;
	for (uint32_t i = 0; i < st->nr_sections; i++)
		if (!strcmp(key, st->sections[i].name))
			return true;
	return false;
}

/* The sections of the modules above: each module's as it encodes it now, the others' as read.
 * false without memory. */
static bool ctrlr_state_encode_sections(struct ctrlr *ctrlr, struct json_object *o)
{
	const struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;

	if (st->loaded) {
		json_object_object_foreach(st->loaded, key, val) {
			if (!ctrlr_state_own_key(st, key))
				json_object_object_add(o, key, json_object_get(val));
		}
	}
	for (uint32_t i = 0; i < st->nr_sections; i++) {
		struct json_object *s = st->sections[i].encode(ctrlr);

		if (!s)
			return false;
		json_object_object_add(o, st->sections[i].name, s);
	}
	return true;
}

static char *ctrlr_state_encode(struct ctrlr *ctrlr)
{
	const struct ctrlr_fw *fw = &ctrlr_dev(ctrlr)->fw;
	const struct ctrlr_saved_feats *sf = &ctrlr_dev(ctrlr)->state.feats;
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();
	struct json_object *slots = json_object_new_array(), *feats = json_object_new_array();
	char *text = NULL;

	if (!o || !f || !slots || !feats) {
		json_object_put(o);
		json_object_put(f);
		json_object_put(slots);
		json_object_put(feats);
		return NULL;
	}
	json_object_object_add(o, "version", json_object_new_int(CTRLR_STATE_VERSION));
	for (int i = 0; i < CTRLR_FW_SLOTS; i++)
		json_object_array_add(slots, json_object_new_string(fw->rev[i]));
	json_object_object_add(f, "slots", slots);
	json_object_object_add(f, "active", json_object_new_int(fw->active));
	json_object_object_add(f, "next", json_object_new_int(fw->next));
	json_object_object_add(o, "firmware", f);
	for (uint32_t i = 0; i < sf->n; i++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "fid", json_object_new_int(sf->f[i].fid));
		json_object_object_add(e, "sub", json_object_new_int(sf->f[i].sub));
		json_object_object_add(e, "value", json_object_new_int64(sf->f[i].value));
		json_object_array_add(feats, e);
	}
	json_object_object_add(o, "features", feats);
	if (ctrlr_fdp_supported(ctrlr)) {
		struct json_object *fdp = json_object_new_object(), *ev = json_object_new_array();

		if (!fdp || !ev) {
			/* Without memory no state file is written: the command fails. */
			json_object_put(fdp);
			json_object_put(ev);
			json_object_put(o);
			return NULL;
		}
		json_object_object_add(fdp, "enabled",
				       json_object_new_boolean(ctrlr_fdp_enabled(ctrlr)));
		for (uint16_t h = 0; h < ctrlr->cfg.fdp_nruh; h++)
			json_object_array_add(ev, json_object_new_int(ctrlr_fdp_events_of(ctrlr, h)));
		json_object_object_add(fdp, "events", ev);
		json_object_object_add(o, "fdp", fdp);
	}
	if (!ctrlr_state_encode_sections(ctrlr, o)) {
		json_object_put(o);
		return NULL;
	}
	if (asprintf(&text, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY)) < 0)
		text = NULL;
	json_object_put(o);
	return text;
}

static void ctrlr_state_write(struct ctrlr *ctrlr);

static void ctrlr_state_written_msg(void *arg)
{
	struct ctrlr *ctrlr = arg;
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;
	struct ctrlr_req *done = st->cur;
	int rc = st->job.rc;

	free(st->text);
	st->text = NULL;
	st->cur = NULL;
	if (rc)
		LOG_ERR(CTRLR_LOG, "%s: controller state file %s: not written: %s", ctrlr->serial,
			st->path, strerror(-rc));
	/* The waiters of the next write came after this one's snapshot. */
	if (st->next_head)
		ctrlr_state_write(ctrlr);
	else
		st->busy = false;
	while (done) {
		struct ctrlr_req *r = done;

		done = r->hold.next;
		r->hold.next = NULL;
		r->hold.cont(r, rc ? NVME_SC_INTERNAL : NVME_SC_SUCCESS);
	}
}

static void ctrlr_state_written(struct syncer_job *job, int rc)
{
	struct ctrlr *ctrlr = job->arg;

	(void)rc; /* in job->rc */
	ctrlr->ops->admin_post(ctrlr->tctx, &ctrlr_dev(ctrlr)->state.msg, ctrlr_state_written_msg,
			       ctrlr);
}

/* Writes the state as it is now for every request waiting; busy is set. */
static void ctrlr_state_write(struct ctrlr *ctrlr)
{
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;
	int rc = -ENOMEM;

	st->cur = st->next_head;
	st->next_head = st->next_tail = NULL;
	st->text = ctrlr_state_encode(ctrlr);
	if (st->text) {
		st->iov = (struct iovec){.iov_base = st->text, .iov_len = strlen(st->text)};
		st->job = (struct syncer_job){.op = SYNCER_REPLACE,
					      .path = st->path,
					      .iov = &st->iov,
					      .iovcnt = 1,
					      .done = ctrlr_state_written,
					      .arg = ctrlr};
		rc = syncer_submit(&st->job);
	}
	if (rc) {
		/* As if the syncer had failed: the same path back. */
		st->job.rc = rc;
		ctrlr_state_written_msg(ctrlr);
	}
}

void ctrlr_state_save(struct ctrlr_req *req, void (*done)(struct ctrlr_req *req, uint16_t st))
{
	struct ctrlr *ctrlr = req->sq->ctrlr;
	struct ctrlr_dev_state *st = &ctrlr_dev(ctrlr)->state;

	if (!st->path)
		return done(req, NVME_SC_SUCCESS);
	req->hold.cont = done;
	req->hold.next = NULL;
	if (st->next_tail)
		st->next_tail->hold.next = req;
	else
		st->next_head = req;
	st->next_tail = req;
	if (!st->busy) {
		st->busy = true;
		ctrlr_state_write(ctrlr);
	}
}
