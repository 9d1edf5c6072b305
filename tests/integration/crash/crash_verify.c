/* tests/integration/crash/crash_verify.c - the crash torture's model of the zones and what a
 * new life checks the last one left: zones, data blocks, operations in doubt. */
#include "tests/integration/crash/crash.h"

/* ---- the model ---- */

uint64_t ct_zslba(uint32_t zi)
{
	return (uint64_t)zi * CT_ZSZE;
}

/* The state a zone is in after a restart: open zones are closed, or empty without data. */
static enum ct_zs ct_after_restart(enum ct_zs s, uint64_t wp, uint32_t zi)
{
	if (s == CT_IO || s == CT_EO)
		return wp > ct_zslba(zi) ? CT_C : CT_E;
	return s;
}

static uint8_t ct_nvme_state(enum ct_zs s)
{
	static const uint8_t m[] = {[CT_E] = NVME_ZS_EMPTY, [CT_IO] = NVME_ZS_IMP_OPEN,
				    [CT_EO] = NVME_ZS_EXP_OPEN, [CT_C] = NVME_ZS_CLOSED,
				    [CT_F] = NVME_ZS_FULL};

	return m[s];
}

/* A zone management action that succeeded, applied to a zone of the model. */
void ct_apply_mgmt(struct ct_zone *z, uint32_t zi, uint8_t zsa)
{
	switch (zsa) {
	case NVME_ZSA_OPEN:
		z->st = CT_EO;
		break;
	case NVME_ZSA_CLOSE:
		z->st = CT_C;
		break;
	case NVME_ZSA_FINISH:
		z->st = CT_F;
		break;
	case NVME_ZSA_RESET:
		z->st = CT_E;
		z->wp = ct_zslba(zi);
		z->gen++;
		memset(&ct.ztag[ct_zslba(zi)], 0, CT_ZSZE * sizeof(ct.ztag[0]));
		break;
	}
}

void ct_apply_write(struct ct_zone *z, uint32_t zi, uint64_t lba, uint32_t nlb,
		    uint64_t id)
{
	for (uint32_t i = 0; i < nlb; i++)
		ct.ztag[lba + i] = id << 16 | i;
	if (lba + nlb > z->wp)
		z->wp = lba + nlb;
	if (z->st != CT_EO)
		z->st = CT_IO;
	if (z->wp == ct_zslba(zi) + CT_ZCAP)
		z->st = CT_F;
}

/* ---- verification of what the last life left ---- */

/* Forgets an operation, keeping its slot's data buffer. */
void ct_op_clear(struct ct_op *o)
{
	uint64_t iova = o->iova;
	uint8_t *buf = o->buf;

	free(o->dsnap);
	memset(o, 0, sizeof(*o));
	o->iova = iova;
	o->buf = buf;
}

void ct_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "  FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	ct.failed = true;
}

/* The operation in doubt (in flight at the kill, no CQE seen) with this id, or NULL. */
static struct ct_op *ct_doubt(uint64_t id)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].id == id)
			return &ct.ops[i];
	return NULL;
}

/* Blocks [from, to) of zone zi that the model does not know must be whole writes in doubt of
 * that zone, each one entirely there, in order. Returns false (and says why) otherwise. */
static bool ct_doubt_runs(uint32_t zi, const uint64_t *seen, uint64_t from, uint64_t to)
{
	uint64_t zslba = ct_zslba(zi);

	for (uint64_t lba = from; lba < to;) {
		uint64_t tag = seen[lba - zslba];
		struct ct_op *o;

		if (ct.ztag[lba]) { /* known block */
			lba++;
			continue;
		}
		o = tag ? ct_doubt(tag >> 16) : NULL;
		if (!o || o->zone != zi || (o->kind != CT_ZWRITE && o->kind != CT_APPEND) ||
		    (tag & 0xffff) != 0 || (o->kind == CT_ZWRITE && o->slba != lba) ||
		    lba + o->nlb > to) {
			ct_fail("zone %u: block %" PRIu64 " holds %" PRIx64
				", which no operation in doubt explains as its first block",
				zi, lba, tag);
			return false;
		}
		for (uint32_t i = 0; i < o->nlb; i++) {
			if (seen[lba + i - zslba] != (o->id << 16 | i)) {
				ct_fail("zone %u: operation %" PRIu64 " half applied at %" PRIu64, zi,
					o->id, lba + i);
				return false;
			}
		}
		o->lba_done = lba;
		lba += o->nlb;
	}
	return true;
}

/* Counts the operations in doubt of zone zi, found whole (lba_done set) or absent. */
static void ct_count_doubt(uint32_t zi)
{
	for (unsigned int i = 0; i < CT_SLOTS; i++) {
		struct ct_op *o = &ct.ops[i];

		if (o->used && !o->acked && o->zone == zi && o->nsid == 1 && o->kind != CT_ZMGMT) {
			if (o->lba_done != UINT64_MAX)
				ct.whole++;
			else
				ct.absent++;
		}
	}
}

/* After a power loss: every block below the recorded write pointer is written (an acknowledged
 * write's, or one in doubt, whole); the write pointer is at least where the last durable point
 * left it; acknowledged writes past it were never made durable and are gone. */
static void ct_verify_zone_power(uint32_t zi, const struct nvme_zone_desc *d, const uint64_t *seen,
				 uint64_t dwp, const struct ct_op *mgmt)
{
	struct ct_zone *z = &ct.z[zi];
	uint64_t zslba = ct_zslba(zi);
	bool reset = mgmt && mgmt->zsa == NVME_ZSA_RESET && dwp == zslba;
	uint8_t obs = d->zs >> 4;

	for (uint64_t lba = zslba; !reset && lba < dwp; lba++) {
		if (ct.ztag[lba] && ct.ztag[lba] != seen[lba - zslba]) {
			ct_fail("zone %u: block %" PRIu64 " holds %" PRIx64 ", acknowledged %" PRIx64, zi,
				lba, seen[lba - zslba], ct.ztag[lba]);
			return;
		}
	}
	if (!reset && !ct_doubt_runs(zi, seen, zslba, dwp))
		return;
	if (!reset && dwp < ct.zdur[zi]) {
		ct_fail("zone %u: write pointer %" PRIu64 " after the power loss, below %" PRIu64
			", made durable before it",
			zi, dwp, ct.zdur[zi]);
		return;
	}
	for (uint64_t lba = dwp; lba < zslba + CT_ZCAP; lba++)
		ct.lost += ct.ztag[lba] != 0;
	ct_count_doubt(zi);
	if (mgmt)
		ct.whole += reset, ct.absent += !reset;
	z->st = obs == NVME_ZS_FULL ? CT_F : obs == NVME_ZS_CLOSED ? CT_C : CT_E;
	z->wp = dwp;
	ct.zdur[zi] = dwp;
	for (uint64_t lba = zslba; lba < zslba + CT_ZCAP; lba++)
		ct.ztag[lba] = seen[lba - zslba];
}

/* One zone: its reported state and write pointer and its blocks, against the model and the
 * operations in doubt; then the model takes what was found. */
static void ct_verify_zone(uint32_t zi, const struct nvme_zone_desc *d)
{
	static uint64_t seen[CT_ZCAP];
	struct ct_zone *z = &ct.z[zi], alt;
	uint64_t zslba = ct_zslba(zi), dwp = zslba, doubt_blocks = 0;
	uint8_t obs = d->zs >> 4, base_st, alt_st = 0;
	struct ct_op *mgmt = NULL;
	bool base_ok, alt_ok = false;

	for (unsigned int i = 0; i < CT_SLOTS; i++) {
		struct ct_op *o = &ct.ops[i];

		if (!o->used || o->acked || o->zone != zi || o->nsid != 1)
			continue;
		if (o->kind == CT_ZMGMT)
			mgmt = o;
		else if (o->kind == CT_ZWRITE || o->kind == CT_APPEND)
			doubt_blocks += o->nlb;
	}
	for (uint64_t off = 0; off < CT_ZCAP; off += CT_RBLOCKS) {
		uint32_t n = CT_ZCAP - off < CT_RBLOCKS ? (uint32_t)(CT_ZCAP - off) : CT_RBLOCKS;

		if (ct_read(1, zslba + off, n)) {
			ct_fail("zone %u: read failed", zi);
			return;
		}
		for (uint32_t b = 0; b < n; b++) {
			seen[off + b] = ct_block_tag(ct.rbuf + b * CT_BS);
			if (seen[off + b] == ~0ull) {
				ct_fail("zone %u: block %" PRIu64 " is not a whole block of ours", zi,
					zslba + off + b);
				return;
			}
			if (seen[off + b])
				dwp = zslba + off + b + 1;
		}
	}
	ct.checked_blocks += CT_ZCAP;
	/* Blocks read back zero from the data write pointer on (never written, or past it). */
	if (obs != NVME_ZS_FULL && d->wp != dwp) {
		/* Below the reported write pointer every block is written (ours are never zero). */
		ct_fail("zone %u: write pointer %" PRIu64 ", data up to %" PRIu64, zi, d->wp, dwp);
		return;
	}
	if (ct.power)
		return ct_verify_zone_power(zi, d, seen, dwp, mgmt);
	/* Without the operation in doubt: the model, plus writes in doubt that landed whole. */
	base_st = ct_nvme_state(ct_after_restart(z->st, z->wp, zi));
	base_ok = dwp >= z->wp && dwp <= z->wp + doubt_blocks;
	if (base_ok && dwp > z->wp)
		base_st = dwp == zslba + CT_ZCAP ? NVME_ZS_FULL : NVME_ZS_CLOSED;
	base_ok = base_ok && obs == base_st;
	for (uint64_t lba = zslba; base_ok && lba < zslba + CT_ZCAP; lba++) {
		if (ct.ztag[lba] && ct.ztag[lba] != seen[lba - zslba])
			base_ok = false;
	}
	if (base_ok && !ct_doubt_runs(zi, seen, z->wp, dwp))
		return;
	/* With it (a management action in doubt: the zone has nothing else in flight). */
	if (mgmt) {
		alt = *z;
		if (mgmt->zsa == NVME_ZSA_RESET) {
			alt_ok = dwp == zslba;
			alt.wp = zslba;
			alt.st = CT_E;
		} else {
			alt_ok = dwp == z->wp;
			for (uint64_t lba = zslba; alt_ok && lba < z->wp; lba++)
				alt_ok = ct.ztag[lba] == seen[lba - zslba];
			if (mgmt->zsa == NVME_ZSA_OPEN)
				alt.st = CT_EO;
			else if (mgmt->zsa == NVME_ZSA_CLOSE)
				alt.st = CT_C;
			else
				alt.st = CT_F;
		}
		alt_st = ct_nvme_state(ct_after_restart(alt.st, alt.wp, zi));
		alt_ok = alt_ok && obs == alt_st;
		/* Close on an Empty zone fails: then only the model's state can be. */
		if (mgmt->zsa == NVME_ZSA_CLOSE && z->st == CT_E)
			alt_ok = false;
	}
	if (!base_ok && !alt_ok) {
		ct_fail("zone %u: state %x, data up to %" PRIu64 "; expected state %x up to %" PRIu64
			" (+%" PRIu64 " in doubt)%s",
			zi, obs, dwp, base_st, z->wp, doubt_blocks,
			mgmt ? " or the management action in doubt applied" : "");
		return;
	}
	if (mgmt) {
		ct.whole += alt_ok && !base_ok;
		ct.absent += base_ok;
	}
	ct_count_doubt(zi);
	/* The model takes the zone as found. */
	z->st = obs == NVME_ZS_FULL ? CT_F : obs == NVME_ZS_CLOSED ? CT_C : CT_E;
	z->wp = dwp;
	for (uint64_t lba = zslba; lba < zslba + CT_ZCAP; lba++)
		ct.ztag[lba] = seen[lba - zslba];
}

/* Power mode: whether tag is a write of this life to block lba no older than its durable value. */
static bool ct_dlog_has(uint64_t lba, uint64_t tag)
{
	if (!tag || (tag >> 16) < (ct.ddur[lba] >> 16))
		return false;
	for (unsigned int i = 0; i < ct.ndlog; i++)
		if (ct.dlog[i].id == tag >> 16 && lba == ct.dlog[i].slba + (tag & 0xffff) &&
		    (tag & 0xffff) < ct.dlog[i].nlb)
			return true;
	return false;
}

/* The conventional namespace: every block holds what the model says, or, inside a write in
 * doubt, that write's block (one block is the unit of atomicity: AWUPF 0). */
static void ct_verify_data(void)
{
	for (uint64_t off = 0; off < CT_DBLOCKS; off += CT_RBLOCKS) {
		if (ct_read(2, off, CT_RBLOCKS)) {
			ct_fail("data namespace: read failed");
			return;
		}
		for (uint32_t b = 0; b < CT_RBLOCKS; b++) {
			uint64_t lba = off + b, tag = ct_block_tag(ct.rbuf + b * CT_BS);
			/* After a power loss: what was durable, or anything written since. */
			bool ok = tag == ct.dtag[lba] || (ct.power && tag == ct.ddur[lba]) ||
				  (ct.power && ct_dlog_has(lba, tag));

			for (unsigned int i = 0; !ok && i < CT_SLOTS; i++) {
				struct ct_op *o = &ct.ops[i];

				ok = o->used && !o->acked && o->kind == CT_DWRITE && lba >= o->slba &&
				     lba < o->slba + o->nlb && tag == (o->id << 16 | (lba - o->slba));
			}
			if (!ok) {
				ct_fail("data namespace: block %" PRIu64 " holds %" PRIx64
					", expected %" PRIx64,
					lba, tag, ct.dtag[lba]);
				return;
			}
			if (ct.power && tag != ct.dtag[lba] && ct.dtag[lba] &&
			    !ct_doubt(ct.dtag[lba] >> 16))
				ct.lost++;
			ct.dtag[lba] = ct.ddur[lba] = tag;
		}
	}
	ct.checked_blocks += CT_DBLOCKS;
	ct.ndlog = 0;
}

void ct_verify(void)
{
	struct nvme_sqe sqe = {0};
	const struct nvme_zone_desc *d;
	uint64_t brk = ct.h.brk;

	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct.ops[i].lba_done = UINT64_MAX;
	sqe.cdw0.bits.opc = NVME_CMD_ZONE_MGMT_RECV;
	sqe.nsid = 1;
	sqe.cdw12 = 64 * 1024 / 4 - 1;
	sqe.cdw13 = NVME_ZRA_REPORT;
	if (nvme_host_build_prps(&ct.h, &sqe, ct.rbuf_iova, 64 * 1024) || ct_cmd(1, &sqe)) {
		ct.h.brk = brk;
		ct_fail("Report Zones failed");
		return;
	}
	ct.h.brk = brk;
	{
		static uint8_t rep[64 * 1024];

		memcpy(rep, ct.rbuf, sizeof(rep));
		if (((struct nvme_zone_report_hdr *)rep)->nr_zones != CT_NZONES) {
			ct_fail("Report Zones: %" PRIu64 " zones",
				((struct nvme_zone_report_hdr *)rep)->nr_zones);
			return;
		}
		d = (const struct nvme_zone_desc *)(rep + 64);
		for (uint32_t zi = 0; zi < CT_NZONES && !ct.failed; zi++)
			ct_verify_zone(zi, &d[zi]);
	}
	if (!ct.failed)
		ct_verify_data();
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].kind == CT_DWRITE)
			ct.in_doubt++;
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		if (ct.ops[i].used && !ct.ops[i].acked && ct.ops[i].kind != CT_DWRITE &&
		    ct.ops[i].kind != CT_FLUSH)
			ct.in_doubt++;
	for (unsigned int i = 0; i < CT_SLOTS; i++)
		ct_op_clear(&ct.ops[i]);
	if (!ct.failed)
		ct_adm_verify();
}

