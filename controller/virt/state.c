/* controller/virt/state.c - the primary controller's flexible resources, its secondaries'
 * resources and which are online, as the "virtualization" section of the controller's state file
 * (device/state.c writes the file, this section with it, before the command that changed it
 * completes). A restart is a power cycle, and so a reset of the primary: the allocation the host
 * made for after the next reset is the primary's then. Online secondaries stay online: the
 * transport brings them back (ctrlr_virt_bind's caller).
 *
 * Format: "virtualization": {"vq_primary": 0, "vi_primary": 0, "secondaries": [{"cntlid": 2,
 * "nvq": 2, "nvi": 1, "online": true}, ...]}, vq_primary and vi_primary being the primary's
 * flexible resources after its next reset. A section that does not fit the configuration
 * (a CNTLID that is not a secondary's, more resources than there are) is refused with the
 * reason, nothing of it taken. */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "controller/device/device.h"
#include "controller/virt/virt.h"

#define CTRLR_VIRT_SECTION "virtualization"

static struct json_object *ctrlr_virt_encode(struct ctrlr *ctrlr)
{
	const struct ctrlr_virt *v = ctrlr_virt_of(ctrlr);
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	if (!o || !a) {
		json_object_put(o);
		json_object_put(a);
		return NULL;
	}
	json_object_object_add(o, "vq_primary", json_object_new_int(v->vqrfap_next));
	json_object_object_add(o, "vi_primary", json_object_new_int(v->virfap_next));
	for (uint16_t i = 0; i < v->cfg.nr_secondaries; i++) {
		const struct ctrlr_virt_sec *s = &v->sec[i];
		struct json_object *e;

		if (!s->nvq && !s->nvi && !s->online)
			continue;
		e = json_object_new_object();
		if (!e) {
			json_object_put(o);
			json_object_put(a);
			return NULL;
		}
		json_object_object_add(e, "cntlid", json_object_new_int(s->scid));
		json_object_object_add(e, "nvq", json_object_new_int(s->nvq));
		json_object_object_add(e, "nvi", json_object_new_int(s->nvi));
		json_object_object_add(e, "online", json_object_new_boolean(s->online));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "secondaries", a);
	return o;
}

/* An integer member 0..max: true and *out. */
static bool ctrlr_virt_int(struct json_object *o, const char *key, int64_t max, uint16_t *out)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	n = json_object_get_int64(v);
	if (n < 0 || n > max)
		return false;
	*out = (uint16_t)n;
	return true;
}

static int ctrlr_virt_parse(struct ctrlr_virt *v, struct json_object *o, const char **why)
{
	struct ctrlr_virt_sec sec[CTRLR_VIRT_MAX_SECONDARIES];
	struct json_object *a, *on;
	uint16_t vq, vi;
	uint32_t sum_vq = 0, sum_vi = 0;

	if (!json_object_is_type(o, json_type_object) ||
	    !ctrlr_virt_int(o, "vq_primary", v->cfg.vq_flexible, &vq) ||
	    !ctrlr_virt_int(o, "vi_primary", v->cfg.vi_flexible, &vi) ||
	    !json_object_object_get_ex(o, "secondaries", &a) ||
	    !json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) > v->cfg.nr_secondaries) {
		*why = "virtualization is not {vq_primary, vi_primary, secondaries} within the "
		       "configured flexible resources";
		return -EINVAL;
	}
	memcpy(sec, v->sec, sizeof(sec));
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);
		struct ctrlr_virt_sec *s = NULL;
		uint16_t scid, nvq, nvi;

		if (!json_object_is_type(e, json_type_object) ||
		    !ctrlr_virt_int(e, "cntlid", 0xffff, &scid) ||
		    !ctrlr_virt_int(e, "nvq", v->cfg.max_vq, &nvq) ||
		    !ctrlr_virt_int(e, "nvi", v->cfg.max_vi, &nvi) ||
		    !json_object_object_get_ex(e, "online", &on) ||
		    !json_object_is_type(on, json_type_boolean)) {
			*why = "a secondary controller is not {cntlid, nvq, nvi, online} within the "
			       "configured maximum per secondary";
			return -EINVAL;
		}
		for (uint16_t k = 0; k < v->cfg.nr_secondaries; k++)
			if (sec[k].scid == scid)
				s = &sec[k];
		if (!s) {
			*why = "a CNTLID in it is not one of the configured secondary controllers";
			return -EINVAL;
		}
		if (s->nvq || s->nvi || s->online) {
			*why = "a secondary controller is in it twice";
			return -EINVAL;
		}
		s->nvq = nvq;
		s->nvi = nvi;
		s->online = json_object_get_boolean(on);
		if (s->online && (nvq < 2 || nvi < 1)) {
			*why = "an online secondary controller has less than 2 VQ or 1 VI resources";
			return -EINVAL;
		}
		sum_vq += nvq;
		sum_vi += nvi;
	}
	if (sum_vq + vq > v->cfg.vq_flexible || sum_vi + vi > v->cfg.vi_flexible) {
		*why = "more flexible resources are assigned than configured";
		return -EINVAL;
	}
	memcpy(v->sec, sec, sizeof(sec));
	/* A power cycle is a reset: the allocation made for after it is the primary's. */
	v->vqrfap = v->vqrfap_next = vq;
	v->virfap = v->virfap_next = vi;
	return 0;
}

int ctrlr_virt_state_load(struct ctrlr *ctrlr, const char **why)
{
	struct json_object *o = ctrlr_state_section_get(ctrlr, CTRLR_VIRT_SECTION);
	int rc = o ? ctrlr_virt_parse(ctrlr_virt_of(ctrlr), o, why) : 0;

	if (!rc)
		rc = ctrlr_state_section_take(ctrlr, CTRLR_VIRT_SECTION, ctrlr_virt_encode);
	return rc;
}
