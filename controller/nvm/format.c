/* controller/nvm/format.c - the LBA formats of the NVM Command Set a namespace offers over its
 * bdev (data size 512 or 4096, metadata 0, 8, 16 or 64 bytes, 16b, 32b or 64b Guard, some with a
 * storage tag), each logical block taking whole bdev blocks (its data, its metadata, zero padding
 * to the bdev's block: none on a packed region, whose 8-byte blocks divide every format), and
 * the FLBAS/DPS encoding of one. Format NVM itself is admin/format.c. Admin thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"

/* What the bdev offers, in Identify order: the bdev's own block first (format 0, what the
 * namespace starts with), 16b Guard before 64b Guard for the same sizes; then the formats with a
 * storage tag (NVM Command Set 1.0 5.2.1.4): 16b Guard with 16 bits of it, 32b Guard (CRC-32C)
 * with 32, and two reported as the Qualified Type (NVM 1.1, PIF 11b with QPIF): 64b Guard with
 * 24 bits, 16b Guard with 8. Sixteen in all, the most FLBAS reaches without the host's LBA Format
 * Extension Enable. */
static const struct {
	uint32_t ds;
	uint16_t ms;
	uint8_t pif;
	uint8_t sts;
	bool qual;
} ctrlr_lbaf_menu[] = {
    {512, 0, CTRLR_PIF_16, 0, false},	  {512, 8, CTRLR_PIF_16, 0, false},
    {512, 16, CTRLR_PIF_16, 0, false},	  {512, 16, CTRLR_PIF_64, 0, false},
    {512, 64, CTRLR_PIF_16, 0, false},	  {512, 64, CTRLR_PIF_64, 0, false},
    {4096, 0, CTRLR_PIF_16, 0, false},	  {4096, 8, CTRLR_PIF_16, 0, false},
    {4096, 16, CTRLR_PIF_16, 0, false},	  {4096, 16, CTRLR_PIF_64, 0, false},
    {4096, 64, CTRLR_PIF_16, 0, false},	  {4096, 64, CTRLR_PIF_64, 0, false},
    {512, 8, CTRLR_PIF_16, 16, false},	  {512, 16, CTRLR_PIF_32, 32, false},
    {4096, 16, CTRLR_PIF_64, 24, true},	  {512, 8, CTRLR_PIF_16, 8, true},
};

uint32_t ctrlr_lbafs_for(uint32_t bs, struct ctrlr_lbaf *out)
{
	uint32_t n = 0;

	for (size_t i = 0; i < CTRLR_ARRAY_SIZE(ctrlr_lbaf_menu); i++) {
		uint32_t ds = ctrlr_lbaf_menu[i].ds, ms = ctrlr_lbaf_menu[i].ms;
		struct ctrlr_lbaf *l;
		uint32_t bytes, waste;

		/* A block smaller than the bdev's would need read-modify-write: not offered. */
		if (ds < bs || n == CTRLR_MAX_LBAF)
			continue;
		l = &out[n++];
		l->ds = ds;
		l->ms = (uint16_t)ms;
		l->lbads = ds == 512 ? 9 : 12;
		l->pif = ctrlr_lbaf_menu[i].pif;
		l->sts = ctrlr_lbaf_menu[i].sts;
		l->qual = ctrlr_lbaf_menu[i].qual;
		l->bpl = (uint16_t)((ds + ms + bs - 1) / bs);
		/* Relative Performance from the space a block wastes in padding. */
		bytes = l->bpl * bs;
		l->stride = bytes;
		waste = bytes - ds - ms;
		l->rp = waste == 0 ? 0 : waste * 8 <= bytes ? 1 : waste * 4 <= bytes ? 2 : 3;
	}
	return n;
}

void ctrlr_ns_formats_init(struct ctrlr_ns *ns)
{
	union ctrlr_ns_fmt f = {.raw = 0};
	struct bdev_zone_geom zgeom;

	ns->nlbaf = (uint8_t)ctrlr_lbafs_for(bdev_get_block_size(ns->bdev), ns->lbafs);
	/* Zones count logical blocks of the bdev's own size: a zoned bdev offers format 0 (no
	 * metadata) alone. */
	if (bdev_get_zone_geom(ns->bdev, &zgeom))
		ns->nlbaf = 1;
	ns->fmt = f.raw;
	ns->block_size = ns->lbafs[0].ds;
	ns->lbads = ns->lbafs[0].lbads;
	ns->num_blocks = bdev_get_num_blocks(ns->bdev) / ns->lbafs[0].bpl;
}

/* FLBAS (format index bits 3:0 and 6:5, extended-LBA bit 4) and DPS (PI type bits 2:0, PI first
 * bit 3) as one format word, or false when the formats offered cannot hold them. */
static bool ctrlr_flbas_to_fmt(const struct ctrlr_lbaf *lbafs, uint32_t n, uint8_t flbas,
			       uint8_t dps, union ctrlr_ns_fmt *f)
{
	uint32_t idx = (flbas & 0xfu) | ((flbas >> 5) & 0x3u) << 4;
	uint8_t pi = dps & 0x7;

	f->raw = 0;
	if (idx >= n || pi > 3 || (pi && lbafs[idx].ms < ctrlr_pi_tuple_size(lbafs[idx].pif)))
		return false;
	f->f.lbaf = (uint8_t)idx;
	if (lbafs[idx].ms) {
		f->f.ext = (flbas >> 4) & 1;
		f->f.pi = pi;
		f->f.pi_first = pi ? (dps >> 3) & 1 : 0;
	}
	return true;
}

bool ctrlr_flbas_valid(uint32_t bs, uint8_t flbas, uint8_t dps, uint32_t *stride)
{
	struct ctrlr_lbaf lbafs[CTRLR_MAX_LBAF];
	uint32_t n = ctrlr_lbafs_for(bs, lbafs);
	union ctrlr_ns_fmt f;

	if (!ctrlr_flbas_to_fmt(lbafs, n, flbas, dps, &f))
		return false;
	if (stride)
		*stride = lbafs[f.f.lbaf].stride;
	return true;
}

int ctrlr_ns_set_flbas(struct ctrlr_ns *ns, uint8_t flbas, uint8_t dps)
{
	union ctrlr_ns_fmt f;

	if (!ctrlr_flbas_to_fmt(ns->lbafs, ns->nlbaf, flbas, dps, &f))
		return -EINVAL;
	ctrlr_ns_take_format(ns, f);
	return 0;
}

void ctrlr_ns_get_flbas(const struct ctrlr_ns *ns, uint8_t *flbas, uint8_t *dps)
{
	union ctrlr_ns_fmt f = {.raw = __atomic_load_n(&ns->fmt, __ATOMIC_ACQUIRE)};

	*flbas = (uint8_t)((f.f.lbaf & 0xf) | (f.f.ext ? 0x10 : 0) | ((f.f.lbaf >> 4) & 0x3) << 5);
	*dps = (uint8_t)(f.f.pi | (f.f.pi_first ? 0x8 : 0));
}
