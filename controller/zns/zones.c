/* controller/zns.c - Zoned Namespaces (NVMe ZNS Command Set 1.1, CSI 2h): zone states, write
 * pointers and the open/active resource limits (section 2.1.1), Zone Management Send and Receive
 * (3.4.3, 3.4.2) with the zone descriptor extensions, Zone Append (3.4.1), the write pointer rules of Write / Write Zeroes / Copy /
 * Write Uncorrectable and the read rules, ZNS Identify data (4.1); the order in which writes end
 * (wp_done, held writes). The zones live in memory, recorded in the state file when the zoned
 * bdev has one (state_file.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/core/core.h"
#include "controller/zns/zns.h"

int ctrlr_zns_create(const struct bdev_zone_geom *geom, struct ctrlr_zns **out)
{
	struct ctrlr_zns *zns;
	unsigned int shift = 0;
	int rc;

	if (!geom->zone_size || (geom->zone_size & (geom->zone_size - 1)) || !geom->zone_capacity ||
	    geom->zone_capacity > geom->zone_size || !geom->num_zones ||
	    geom->num_zones > UINT32_MAX || geom->zone_desc_ext_size % 64 ||
	    geom->zone_desc_ext_size > BDEV_ZONE_DESC_EXT_MAX)
		return -EINVAL;
	while ((1ull << shift) < geom->zone_size)
		shift++;
	zns = calloc(1, sizeof(*zns) + geom->num_zones * sizeof(zns->zones[0]));
	if (!zns)
		return -ENOMEM;
	zns->zdes_bytes = geom->zone_desc_ext_size;
	if (pthread_mutex_init(&zns->lock, NULL)) {
		free(zns);
		return -ENOMEM;
	}
	zns->zsze = geom->zone_size;
	zns->zcap = geom->zone_capacity;
	zns->zshift = shift;
	zns->nr_zones = (uint32_t)geom->num_zones;
	zns->max_open = geom->max_open_zones;
	zns->max_active = geom->max_active_zones;
	zns->optimal_open = geom->optimal_open_zones;
	for (uint32_t i = 0; i < zns->nr_zones; i++) {
		zns->zones[i].wp = zns->zones[i].wp_done = (uint64_t)i << shift;
		zns->zones[i].state = NVME_ZS_EMPTY;
	}
	/* The extensions live in the state file's map when there is one. */
	rc = geom->state_file ? ctrlr_zns_file_open(zns, geom->state_file, geom->data_file) : 0;
	if (!rc && !zns->file && zns->zdes_bytes) {
		zns->zde = calloc(geom->num_zones, zns->zdes_bytes);
		if (!zns->zde)
			rc = -ENOMEM;
	}
	if (rc) {
		ctrlr_zns_destroy(zns);
		return rc;
	}
	*out = zns;
	return 0;
}

void ctrlr_zns_destroy(struct ctrlr_zns *zns)
{
	if (!zns)
		return;
	if (zns->file)
		ctrlr_zns_file_close(zns);
	else
		free(zns->zde);
	pthread_mutex_destroy(&zns->lock);
	free(zns);
}

static uint64_t ctrlr_zns_zslba(const struct ctrlr_zns *zns, uint32_t zi)
{
	return (uint64_t)zi << zns->zshift;
}

static bool ctrlr_zns_is_open(uint8_t state)
{
	return state == NVME_ZS_IMP_OPEN || state == NVME_ZS_EXP_OPEN;
}

static bool ctrlr_zns_is_active(uint8_t state)
{
	return ctrlr_zns_is_open(state) || state == NVME_ZS_CLOSED;
}

/* Moves zone zi to `to`, keeping the open and active counts (lock held). */
static void ctrlr_zns_set(struct ctrlr_zns *zns, uint32_t zi, uint8_t to)
{
	struct ctrlr_zone *z = &zns->zones[zi];

	zns->nr_open -= ctrlr_zns_is_open(z->state);
	zns->nr_active -= ctrlr_zns_is_active(z->state);
	zns->nr_open += ctrlr_zns_is_open(to);
	zns->nr_active += ctrlr_zns_is_active(to);
	z->state = to;
	ctrlr_zns_file_record(zns, zi);
}

/*
 * Resources for zone zi to become open from its state (Empty: an active and an open resource;
 * Closed: an open one), ZNS 1.1 2.1.1.4.1: when every open resource is taken the controller
 * closes an implicitly opened zone to free one; with none, Too Many Open Zones. Lock held.
 */
static uint16_t ctrlr_zns_open_res(struct ctrlr_zns *zns, uint32_t zi)
{
	bool need_active = zns->zones[zi].state == NVME_ZS_EMPTY;

	if (need_active && zns->max_active && zns->nr_active >= zns->max_active)
		return NVME_SC_TOO_MANY_ACTIVE_ZONES;
	if (zns->max_open && zns->nr_open >= zns->max_open) {
		for (uint32_t i = 0; i < zns->nr_zones; i++) {
			if (i != zi && zns->zones[i].state == NVME_ZS_IMP_OPEN) {
				ctrlr_zns_set(zns, i, NVME_ZS_CLOSED);
				return NVME_SC_SUCCESS;
			}
		}
		return NVME_SC_TOO_MANY_OPEN_ZONES;
	}
	return NVME_SC_SUCCESS;
}

uint16_t ctrlr_zns_write_prep(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb, bool append,
			      uint64_t *lba, uint32_t *gen)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	uint64_t zslba = ctrlr_zns_zslba(zns, zi), at;
	struct ctrlr_zone *z;
	uint16_t st = NVME_SC_SUCCESS;

	if (zi >= zns->nr_zones)
		return NVME_SC_LBA_RANGE;
	/* Zone Append names the zone by its first LBA (3.4.1: else Invalid Field). */
	if (append && slba != zslba)
		return NVME_SC_INVALID_FIELD;
	pthread_mutex_lock(&zns->lock);
	z = &zns->zones[zi];
	switch (z->state) {
	case NVME_ZS_FULL:
		st = NVME_SC_ZONE_IS_FULL;
		goto out;
	case NVME_ZS_READ_ONLY:
		st = NVME_SC_ZONE_IS_READ_ONLY;
		goto out;
	case NVME_ZS_OFFLINE:
		st = NVME_SC_ZONE_IS_OFFLINE;
		goto out;
	default:
		break;
	}
	at = append ? z->wp : slba;
	if (at != z->wp) {
		st = NVME_SC_ZONE_INVALID_WRITE;
		goto out;
	}
	if (nlb > zslba + zns->zcap - at) {
		st = NVME_SC_ZONE_BOUNDARY_ERROR;
		goto out;
	}
	if (z->state == NVME_ZS_EMPTY || z->state == NVME_ZS_CLOSED) {
		st = ctrlr_zns_open_res(zns, zi);
		if (st)
			goto out;
		ctrlr_zns_set(zns, zi, NVME_ZS_IMP_OPEN);
	}
	z->wp = at + nlb;
	if (z->wp == zslba + zns->zcap) {
		z->finished = false;
		ctrlr_zns_set(zns, zi, NVME_ZS_FULL);
	}
	*lba = at;
	*gen = z->gen;
out:
	pthread_mutex_unlock(&zns->lock);
	return st;
}

/* Zone zi drops its data (Reset, Offline): writes reserved before end as nothing of the zone's,
 * and those held in it are released into *ready. Lock held. */
static void ctrlr_zns_drop(struct ctrlr_zns *zns, uint32_t zi, struct ctrlr_req **ready)
{
	struct ctrlr_zone *z = &zns->zones[zi];

	z->gen++;
	while (z->held) {
		struct ctrlr_req *r = z->held;

		z->held = r->hold.next;
		r->hold.next = *ready;
		*ready = r;
	}
}

bool ctrlr_zns_write_end(struct ctrlr_zns *zns, struct ctrlr_req *req, uint64_t lba, uint64_t nlb,
			 uint32_t gen, bool ok, struct ctrlr_req **ready)
{
	uint32_t zi = (uint32_t)(lba >> zns->zshift);
	struct ctrlr_req **pp;
	struct ctrlr_zone *z;
	bool done = true;

	*ready = NULL;
	if (zi >= zns->nr_zones)
		return true;
	pthread_mutex_lock(&zns->lock);
	z = &zns->zones[zi];
	if (z->gen != gen)
		goto out; /* the zone was reset (or went offline) since: nothing to record */
	/* The last write reserved failed: the range goes back (a Full zone stays Full: the host
	 * learns the write pointer from a report, as after a failed write on any zoned drive). */
	if (!ok && z->wp == lba + nlb && ctrlr_zns_is_open(z->state)) {
		z->wp = lba;
		goto out;
	}
	if (lba != z->wp_done) {
		/* A write below still runs: this one waits for it, in LBA order. */
		for (pp = &z->held; *pp && (*pp)->hold.lba < lba; pp = &(*pp)->hold.next)
			;
		req->hold.lba = lba;
		req->hold.nlb = nlb;
		req->hold.next = *pp;
		*pp = req;
		done = false;
		goto out;
	}
	z->wp_done = lba + nlb;
	while (z->held && z->held->hold.lba == z->wp_done) {
		struct ctrlr_req *r = z->held;

		z->held = r->hold.next;
		z->wp_done += r->hold.nlb;
		r->hold.next = *ready;
		*ready = r;
	}
	ctrlr_zns_file_record(zns, zi);
out:
	pthread_mutex_unlock(&zns->lock);
	return done;
}

uint16_t ctrlr_zns_read_check(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	uint16_t st = NVME_SC_SUCCESS;

	if (zi >= zns->nr_zones)
		return NVME_SC_LBA_RANGE;
	if (nlb > ctrlr_zns_zslba(zns, zi) + zns->zsze - slba)
		return NVME_SC_ZONE_BOUNDARY_ERROR;
	pthread_mutex_lock(&zns->lock);
	if (zns->zones[zi].state == NVME_ZS_OFFLINE)
		st = NVME_SC_ZONE_IS_OFFLINE;
	pthread_mutex_unlock(&zns->lock);
	return st;
}

/* Zeroes bytes [off, off + len) of an iovec array. */
static void ctrlr_zns_iov_zero(const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len)
{
	for (int i = 0; i < iovcnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		uint64_t c = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;

		memset((char *)iov[i].iov_base + off, 0, c);
		len -= c;
		off = 0;
	}
}

uint16_t ctrlr_zns_read_fixup(struct ctrlr_zns *zns, uint64_t slba, uint64_t nlb,
			      uint32_t block_size, const struct iovec *iov, int iovcnt)
{
	uint64_t lba = slba, end = slba + nlb;
	uint16_t st = NVME_SC_SUCCESS;

	pthread_mutex_lock(&zns->lock);
	while (lba < end) {
		uint32_t zi = (uint32_t)(lba >> zns->zshift);
		uint64_t zend = ctrlr_zns_zslba(zns, zi) + zns->zsze;
		uint64_t stop = zend < end ? zend : end, wp;

		if (zi >= zns->nr_zones)
			break;
		if (zns->zones[zi].state == NVME_ZS_OFFLINE) {
			st = NVME_SC_ZONE_IS_OFFLINE;
			break;
		}
		wp = zns->zones[zi].wp;
		if (wp < stop) {
			uint64_t from = wp > lba ? wp : lba;

			ctrlr_zns_iov_zero(iov, iovcnt, (from - slba) * block_size,
					   (stop - from) * block_size);
		}
		lba = stop;
	}
	pthread_mutex_unlock(&zns->lock);
	return st;
}

/* One zone's action (Select All clear). Lock held. */
static uint16_t ctrlr_zns_send_one(struct ctrlr_zns *zns, uint32_t zi, uint8_t zsa,
				   struct ctrlr_req **ready)
{
	struct ctrlr_zone *z = &zns->zones[zi];
	uint8_t s = z->state;
	uint16_t st;

	switch (zsa) {
	case NVME_ZSA_CLOSE:
		if (ctrlr_zns_is_open(s)) {
			z->explicit = true;
			ctrlr_zns_set(zns, zi, NVME_ZS_CLOSED);
		}
		else if (s != NVME_ZS_CLOSED)
			return NVME_SC_ZONE_INVALID_TRANSITION;
		return NVME_SC_SUCCESS;
	case NVME_ZSA_FINISH:
		if (s == NVME_ZS_FULL)
			return NVME_SC_SUCCESS;
		if (s == NVME_ZS_EMPTY) {
			/* Empty -> Full passes through an active state (2.1.1.3.1). */
			if (zns->max_active && zns->nr_active >= zns->max_active)
				return NVME_SC_TOO_MANY_ACTIVE_ZONES;
		} else if (!ctrlr_zns_is_active(s)) {
			return NVME_SC_ZONE_INVALID_TRANSITION;
		}
		/* The write pointer keeps marking the data written: the rest reads as zeroes. */
		z->finished = true;
		ctrlr_zns_set(zns, zi, NVME_ZS_FULL);
		return NVME_SC_SUCCESS;
	case NVME_ZSA_OPEN:
		if (s == NVME_ZS_EXP_OPEN)
			return NVME_SC_SUCCESS;
		if (s == NVME_ZS_EMPTY || s == NVME_ZS_CLOSED) {
			st = ctrlr_zns_open_res(zns, zi);
			if (st)
				return st;
		} else if (s != NVME_ZS_IMP_OPEN) {
			return NVME_SC_ZONE_INVALID_TRANSITION;
		}
		z->explicit = true;
		ctrlr_zns_set(zns, zi, NVME_ZS_EXP_OPEN);
		return NVME_SC_SUCCESS;
	case NVME_ZSA_RESET:
		if (s == NVME_ZS_READ_ONLY || s == NVME_ZS_OFFLINE)
			return NVME_SC_ZONE_INVALID_TRANSITION;
		ctrlr_zns_drop(zns, zi, ready);
		z->wp = z->wp_done = ctrlr_zns_zslba(zns, zi);
		z->finished = false;
		z->explicit = false;
		/* An Empty zone has no zone descriptor extension. */
		if (z->za & NVME_ZA_ZDEV)
			memset(zns->zde + (size_t)zi * zns->zdes_bytes, 0, zns->zdes_bytes);
		z->za &= (uint8_t)~NVME_ZA_ZDEV;
		ctrlr_zns_set(zns, zi, NVME_ZS_EMPTY);
		return NVME_SC_SUCCESS;
	case NVME_ZSA_OFFLINE:
		if (s == NVME_ZS_READ_ONLY) {
			ctrlr_zns_drop(zns, zi, ready);
			ctrlr_zns_set(zns, zi, NVME_ZS_OFFLINE);
		} else if (s != NVME_ZS_OFFLINE)
			return NVME_SC_ZONE_INVALID_TRANSITION;
		return NVME_SC_SUCCESS;
	default:
		/* Reserved actions (Set Zone Descriptor Extension is ctrlr_zns_set_zde). */
		return NVME_SC_INVALID_FIELD;
	}
}

/* Whether Select All applies action zsa to a zone in state s (3.4.3.1: the zones in the states
 * the action transitions from; the others are left alone). */
static bool ctrlr_zns_all_selects(uint8_t zsa, uint8_t s)
{
	switch (zsa) {
	case NVME_ZSA_CLOSE:
		return ctrlr_zns_is_open(s);
	case NVME_ZSA_FINISH:
		return ctrlr_zns_is_active(s);
	case NVME_ZSA_OPEN:
		return s == NVME_ZS_CLOSED;
	case NVME_ZSA_RESET:
		return ctrlr_zns_is_active(s) || s == NVME_ZS_FULL;
	case NVME_ZSA_OFFLINE:
		return s == NVME_ZS_READ_ONLY;
	default:
		return false;
	}
}

uint16_t ctrlr_zns_send(struct ctrlr_zns *zns, uint64_t slba, uint8_t zsa, bool all,
			struct ctrlr_req **ready)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	struct ctrlr_req *none = NULL;
	uint16_t st = NVME_SC_SUCCESS;

	if (!ready)
		ready = &none;
	*ready = NULL;

	if (zsa != NVME_ZSA_CLOSE && zsa != NVME_ZSA_FINISH && zsa != NVME_ZSA_OPEN &&
	    zsa != NVME_ZSA_RESET && zsa != NVME_ZSA_OFFLINE)
		return NVME_SC_INVALID_FIELD;
	if (!all) {
		if (zi >= zns->nr_zones)
			return NVME_SC_LBA_RANGE;
		if (slba != ctrlr_zns_zslba(zns, zi))
			return NVME_SC_INVALID_FIELD;
	}
	pthread_mutex_lock(&zns->lock);
	if (!all) {
		st = ctrlr_zns_send_one(zns, zi, zsa, ready);
	} else {
		if (zsa == NVME_ZSA_OPEN && zns->max_open) {
			/* All of them or none: the closed zones must fit in the open limit. */
			uint32_t closed = 0;

			for (uint32_t i = 0; i < zns->nr_zones; i++)
				closed += zns->zones[i].state == NVME_ZS_CLOSED;
			if (zns->nr_open + closed > zns->max_open)
				st = NVME_SC_TOO_MANY_OPEN_ZONES;
		}
		for (uint32_t i = 0; !st && i < zns->nr_zones; i++)
			if (ctrlr_zns_all_selects(zsa, zns->zones[i].state))
				st = ctrlr_zns_send_one(zns, i, zsa, ready);
	}
	pthread_mutex_unlock(&zns->lock);
	return st;
}

static bool ctrlr_zns_filter_match(uint8_t filter, uint8_t s)
{
	static const uint8_t state_of[] = {
	    [NVME_ZRASF_EMPTY] = NVME_ZS_EMPTY,	    [NVME_ZRASF_IMP_OPEN] = NVME_ZS_IMP_OPEN,
	    [NVME_ZRASF_EXP_OPEN] = NVME_ZS_EXP_OPEN, [NVME_ZRASF_CLOSED] = NVME_ZS_CLOSED,
	    [NVME_ZRASF_FULL] = NVME_ZS_FULL,	    [NVME_ZRASF_READ_ONLY] = NVME_ZS_READ_ONLY,
	    [NVME_ZRASF_OFFLINE] = NVME_ZS_OFFLINE,
	};

	return filter == NVME_ZRASF_ALL || (filter <= NVME_ZRASF_OFFLINE && state_of[filter] == s);
}

uint64_t ctrlr_zns_report(struct ctrlr_zns *zns, uint64_t slba, uint8_t filter, bool partial,
			  bool ext, void *out, uint64_t max)
{
	size_t stride = sizeof(struct nvme_zone_desc) + (ext ? zns->zdes_bytes : 0);
	uint64_t matched = 0, n = 0;

	pthread_mutex_lock(&zns->lock);
	for (uint32_t zi = (uint32_t)(slba >> zns->zshift); zi < zns->nr_zones; zi++) {
		const struct ctrlr_zone *z = &zns->zones[zi];
		uint8_t *at = (uint8_t *)out + n * stride;
		struct nvme_zone_desc d;

		if (!ctrlr_zns_filter_match(filter, z->state))
			continue;
		matched++;
		if (n == max) {
			if (partial)
				break;
			continue;
		}
		memset(&d, 0, sizeof(d));
		d.zt = NVME_ZONE_TYPE_SEQ_WRITE;
		d.zs = (uint8_t)(z->state << 4);
		d.za = z->za;
		d.zcap = zns->zcap;
		d.zslba = ctrlr_zns_zslba(zns, zi);
		/* The write pointer is not valid in ZSF, ZSRO and ZSO (2.1.1.3): the end of the
		 * writable range for Full, all ones for the others. */
		if (z->state == NVME_ZS_FULL)
			d.wp = d.zslba + zns->zcap;
		else if (z->state == NVME_ZS_READ_ONLY || z->state == NVME_ZS_OFFLINE)
			d.wp = ~0ull;
		else
			d.wp = z->wp;
		memcpy(at, &d, sizeof(d));
		if (ext) {
			/* Extended Report Zones: the extension follows its descriptor. */
			if (z->za & NVME_ZA_ZDEV)
				memcpy(at + sizeof(d), zns->zde + (size_t)zi * zns->zdes_bytes,
				       zns->zdes_bytes);
			else
				memset(at + sizeof(d), 0, zns->zdes_bytes);
		}
		n++;
	}
	pthread_mutex_unlock(&zns->lock);
	return partial ? n : matched;
}

uint16_t ctrlr_zns_set_zde(struct ctrlr_zns *zns, uint64_t slba, const void *data)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	uint16_t st = NVME_SC_SUCCESS;

	if (zi >= zns->nr_zones)
		return NVME_SC_LBA_RANGE;
	if (!zns->zdes_bytes || slba != ctrlr_zns_zslba(zns, zi))
		return NVME_SC_INVALID_FIELD;
	pthread_mutex_lock(&zns->lock);
	/* Only an Empty zone takes an extension; it leaves Empty for Closed, which holds an
	 * active resource. */
	if (zns->zones[zi].state != NVME_ZS_EMPTY) {
		st = NVME_SC_ZONE_INVALID_TRANSITION;
	} else if (zns->max_active && zns->nr_active >= zns->max_active) {
		st = NVME_SC_TOO_MANY_ACTIVE_ZONES;
	} else {
		memcpy(zns->zde + (size_t)zi * zns->zdes_bytes, data, zns->zdes_bytes);
		zns->zones[zi].za |= NVME_ZA_ZDEV;
		ctrlr_zns_set(zns, zi, NVME_ZS_CLOSED); /* records the attribute too */
	}
	pthread_mutex_unlock(&zns->lock);
	return st;
}

int ctrlr_zns_fail_zone(struct ctrlr_zns *zns, uint64_t slba, bool offline, bool *changed,
			struct ctrlr_req **ready)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	uint8_t to = offline ? NVME_ZS_OFFLINE : NVME_ZS_READ_ONLY;
	int rc = 0;

	*changed = false;
	*ready = NULL;
	if (zi >= zns->nr_zones || slba != ctrlr_zns_zslba(zns, zi))
		return -EINVAL;
	pthread_mutex_lock(&zns->lock);
	/* Offline is the end of a zone's life: no transition leads out of ZSO. */
	if (!offline && zns->zones[zi].state == NVME_ZS_OFFLINE) {
		rc = -EINVAL;
	} else if (zns->zones[zi].state != to) {
		if (offline)
			ctrlr_zns_drop(zns, zi, ready);
		ctrlr_zns_set(zns, zi, to);
		*changed = true;
	}
	pthread_mutex_unlock(&zns->lock);
	return rc;
}

int ctrlr_zns_zone_get(struct ctrlr_zns *zns, uint64_t slba, uint8_t *state, uint64_t *wp)
{
	uint32_t zi = (uint32_t)(slba >> zns->zshift);
	struct nvme_zone_desc d;

	if (zi >= zns->nr_zones || slba != ctrlr_zns_zslba(zns, zi))
		return -EINVAL;
	if (ctrlr_zns_report(zns, slba, NVME_ZRASF_ALL, true, false, &d, 1) != 1)
		return -EINVAL;
	*state = d.zs >> 4;
	*wp = d.wp;
	return 0;
}
