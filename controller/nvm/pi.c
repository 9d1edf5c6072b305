/* controller/nvm/pi.c - end-to-end protection information (NVM Command Set 1.0 section 5.2): the
 * CRC-16 T10-DIF and CRC-64 NVMe guards (table driven; CRC-32C is common/'s), and one block's
 * tuple generated or checked in the 16b Guard (guard 2, application tag 2, storage and reference
 * tags 4 bytes), 32b Guard (guard 4, application tag 2, tags 10 bytes) and 64b Guard (guard 8,
 * application tag 2, tags 6 bytes) formats (section 5.2.1), all fields big-endian, the storage
 * tag (STS bits, 0 for none) in the top bits of the tags field. */
#include "controller/nvm/pi.h"

#include "common/crc32c.h"
#include "controller/nvme_spec.h"

static uint16_t ctrlr_crc16_table[256];
static uint64_t ctrlr_crc64_table[256];

/* Both tables before main(): they never change after, so any thread may read them. */
static void __attribute__((constructor)) ctrlr_pi_tables_init(void)
{
	/* The reflected form of AD93D23594C93659h, the CRC-64 NVMe polynomial (NVM 5.2.1.3.4). */
	const uint64_t poly64 = 0x9a6c9329ac4bc9b5ull;

	for (unsigned int i = 0; i < 256; i++) {
		uint16_t c16 = (uint16_t)(i << 8);
		uint64_t c64 = i;

		for (int b = 0; b < 8; b++) {
			c16 = (uint16_t)(c16 & 0x8000 ? (c16 << 1) ^ 0x8bb7 : c16 << 1);
			c64 = c64 & 1 ? (c64 >> 1) ^ poly64 : c64 >> 1;
		}
		ctrlr_crc16_table[i] = c16;
		ctrlr_crc64_table[i] = c64;
	}
}

uint16_t ctrlr_crc16_t10dif(uint16_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		crc = (uint16_t)((crc << 8) ^ ctrlr_crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
	return crc;
}

uint64_t ctrlr_crc64_nvme(uint64_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	for (size_t i = 0; i < len; i++)
		crc = (crc >> 8) ^ ctrlr_crc64_table[(crc ^ p[i]) & 0xff];
	return ~crc;
}

size_t ctrlr_pi_tuple_size(uint8_t pif)
{
	return pif == CTRLR_PIF_16 ? 8 : 16;
}

size_t ctrlr_pi_tuple_off(const struct ctrlr_pi *pi)
{
	return pi->first ? 0 : pi->ms - ctrlr_pi_tuple_size(pi->pif);
}

/* Guard bytes of the tuple: 2, 4 or 8; the application tag follows, then the tags field. */
static unsigned int ctrlr_pi_guard_bytes(uint8_t pif)
{
	return pif == CTRLR_PIF_16 ? 2 : pif == CTRLR_PIF_32 ? 4 : 8;
}

unsigned int ctrlr_pi_tags_bits(uint8_t pif)
{
	return pif == CTRLR_PIF_16 ? 32 : pif == CTRLR_PIF_32 ? 80 : 48;
}

uint64_t ctrlr_pi_ref_mask(const struct ctrlr_pi *pi)
{
	unsigned int bits = ctrlr_pi_tags_bits(pi->pif) - pi->sts;

	return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

static uint64_t ctrlr_pi_st_mask(const struct ctrlr_pi *pi)
{
	return pi->sts >= 64 ? UINT64_MAX : (1ull << pi->sts) - 1;
}

ctrlr_pi_tags ctrlr_pi_cmd_tags(uint8_t pif, uint32_t cdw2, uint32_t cdw3, uint32_t cdw14)
{
	if (pif == CTRLR_PIF_16)
		return cdw14;
	if (pif == CTRLR_PIF_64)
		return (ctrlr_pi_tags)(cdw3 & 0xffff) << 32 | cdw14;
	return (ctrlr_pi_tags)(cdw2 & 0xffff) << 64 | (ctrlr_pi_tags)cdw3 << 32 | cdw14;
}

uint64_t ctrlr_pi_split_tags(struct ctrlr_pi *pi, ctrlr_pi_tags tags)
{
	unsigned int ref_bits = ctrlr_pi_tags_bits(pi->pif) - pi->sts;

	pi->lbst = pi->sts ? (uint64_t)(tags >> ref_bits) & ctrlr_pi_st_mask(pi) : 0;
	return (uint64_t)tags & ctrlr_pi_ref_mask(pi);
}

uint64_t ctrlr_pi_ref_next(const struct ctrlr_pi *pi, uint64_t ref)
{
	return pi->type == 3 ? ref : (ref + 1) & ctrlr_pi_ref_mask(pi);
}

static void ctrlr_pi_put_be(uint8_t *p, ctrlr_pi_tags v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

static ctrlr_pi_tags ctrlr_pi_get_be(const uint8_t *p, unsigned int bytes)
{
	ctrlr_pi_tags v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* The guard covers the data, and the metadata bytes before the tuple when it is the last bytes
 * of the metadata (section 5.2.1.1): CRC-16 T10-DIF, CRC-32C (5.2.1.3.3) or CRC-64 NVMe. */
static uint64_t ctrlr_pi_guard(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md)
{
	size_t before = ctrlr_pi_tuple_off(pi);

	if (pi->pif == CTRLR_PIF_64)
		return ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, data, pi->ds), md, before);
	if (pi->pif == CTRLR_PIF_32)
		return crc32c(crc32c(0, data, pi->ds), md, before);
	return ctrlr_crc16_t10dif(ctrlr_crc16_t10dif(0, data, pi->ds), md, before);
}

void ctrlr_pi_generate(const struct ctrlr_pi *pi, const uint8_t *data, uint8_t *md, uint64_t ref)
{
	uint8_t *t = md + ctrlr_pi_tuple_off(pi);
	unsigned int gsz = ctrlr_pi_guard_bytes(pi->pif), bits = ctrlr_pi_tags_bits(pi->pif);
	ctrlr_pi_tags tags = ref & ctrlr_pi_ref_mask(pi);

	if (pi->sts)
		tags |= (ctrlr_pi_tags)(pi->lbst & ctrlr_pi_st_mask(pi)) << (bits - pi->sts);
	ctrlr_pi_put_be(t, ctrlr_pi_guard(pi, data, md), gsz);
	ctrlr_pi_put_be(t + gsz, pi->apptag, 2);
	ctrlr_pi_put_be(t + gsz + 2, tags, bits / 8);
}

uint16_t ctrlr_pi_check(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md,
			uint64_t ref)
{
	const uint8_t *t = md + ctrlr_pi_tuple_off(pi);
	unsigned int gsz = ctrlr_pi_guard_bytes(pi->pif), bits = ctrlr_pi_tags_bits(pi->pif);
	uint16_t app = (uint16_t)ctrlr_pi_get_be(t + gsz, 2);
	ctrlr_pi_tags tags = ctrlr_pi_get_be(t + gsz + 2, bits / 8);
	uint64_t mask = ctrlr_pi_ref_mask(pi), stored_ref = (uint64_t)tags & mask;
	uint64_t stored_st = pi->sts ? (uint64_t)(tags >> (bits - pi->sts)) : 0;

	/* The escapes that disable every check of the block (section 5.2.1.2): for Type 3 the
	 * storage and reference tags together all ones. */
	if (app == 0xffff &&
	    (pi->type != 3 || (stored_ref == mask && stored_st == ctrlr_pi_st_mask(pi))))
		return NVME_SC_SUCCESS;
	if ((pi->prchk & CTRLR_PRCHK_GUARD) &&
	    (uint64_t)ctrlr_pi_get_be(t, gsz) != ctrlr_pi_guard(pi, data, md))
		return NVME_SC_GUARD_CHECK;
	if ((pi->prchk & CTRLR_PRCHK_APP) && ((app ^ pi->apptag) & pi->appmask))
		return NVME_SC_APPTAG_CHECK;
	if ((pi->prchk & CTRLR_PRCHK_REF) && pi->type != 3 && stored_ref != (ref & mask))
		return NVME_SC_REFTAG_CHECK;
	/* The storage tag is the top of the tags field, whose check PRCHK bit 0 enables: STC
	 * adds the tag to it (a command checking nothing checks no tag either, as nvme-cli's QPIF
	 * test expects). Every bit of it (PIFA: masking not supported, LBSTM all ones). */
	if (pi->stc && pi->sts && (pi->prchk & CTRLR_PRCHK_REF) &&
	    stored_st != (pi->lbst & ctrlr_pi_st_mask(pi)))
		return NVME_SC_STORAGE_TAG_CHECK;
	return NVME_SC_SUCCESS;
}

void ctrlr_pi_flip(const struct ctrlr_pi *pi, uint8_t *md)
{
	uint8_t *t = md + ctrlr_pi_tuple_off(pi);

	for (size_t i = 0; i < ctrlr_pi_tuple_size(pi->pif); i++)
		t[i] = (uint8_t)~t[i];
}

uint16_t ctrlr_pi_check_ilbrt(const struct ctrlr_pi *pi, uint64_t slba, uint64_t ilbrt)
{
	uint64_t mask = ctrlr_pi_ref_mask(pi);

	if (pi->type == 1 && (pi->prchk & CTRLR_PRCHK_REF) && (slba & mask) != (ilbrt & mask))
		return NVME_SC_INVALID_PI;
	return NVME_SC_SUCCESS;
}
