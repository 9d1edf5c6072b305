/* controller/nvm/pi.c - end-to-end protection information (NVM Command Set 1.0 section 5.2): the
 * CRC-16 T10-DIF and CRC-64 NVMe guards (table driven), and one block's tuple generated or
 * checked in the 16b Guard (guard 2, application tag 2, reference tag 4 bytes) and 64b Guard
 * (guard 8, application tag 2, storage and reference space 6 bytes, STS 0) formats (section
 * 5.2.1), all fields big-endian. */
#include "controller/nvm/pi.h"

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
	return pif == CTRLR_PIF_64 ? 16 : 8;
}

size_t ctrlr_pi_tuple_off(const struct ctrlr_pi *pi)
{
	return pi->first ? 0 : pi->ms - ctrlr_pi_tuple_size(pi->pif);
}

uint64_t ctrlr_pi_ref_mask(uint8_t pif)
{
	return pif == CTRLR_PIF_64 ? 0xffffffffffffull : 0xffffffffull;
}

uint64_t ctrlr_pi_ref_next(const struct ctrlr_pi *pi, uint64_t ref)
{
	return pi->type == 3 ? ref : (ref + 1) & ctrlr_pi_ref_mask(pi->pif);
}

static void ctrlr_pi_put_be(uint8_t *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

static uint64_t ctrlr_pi_get_be(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* The guard covers the data, and the metadata bytes before the tuple when it is the last bytes
 * of the metadata (section 5.2.1.1). */
static uint64_t ctrlr_pi_guard(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md)
{
	size_t before = ctrlr_pi_tuple_off(pi);

	if (pi->pif == CTRLR_PIF_64)
		return ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, data, pi->ds), md, before);
	return ctrlr_crc16_t10dif(ctrlr_crc16_t10dif(0, data, pi->ds), md, before);
}

void ctrlr_pi_generate(const struct ctrlr_pi *pi, const uint8_t *data, uint8_t *md, uint64_t ref)
{
	uint8_t *t = md + ctrlr_pi_tuple_off(pi);
	uint64_t guard = ctrlr_pi_guard(pi, data, md);

	if (pi->pif == CTRLR_PIF_64) {
		ctrlr_pi_put_be(t, guard, 8);
		ctrlr_pi_put_be(t + 8, pi->apptag, 2);
		ctrlr_pi_put_be(t + 10, ref & ctrlr_pi_ref_mask(pi->pif), 6);
	} else {
		ctrlr_pi_put_be(t, guard, 2);
		ctrlr_pi_put_be(t + 2, pi->apptag, 2);
		ctrlr_pi_put_be(t + 4, ref & ctrlr_pi_ref_mask(pi->pif), 4);
	}
}

uint16_t ctrlr_pi_check(const struct ctrlr_pi *pi, const uint8_t *data, const uint8_t *md,
			uint64_t ref)
{
	const uint8_t *t = md + ctrlr_pi_tuple_off(pi);
	bool wide = pi->pif == CTRLR_PIF_64;
	unsigned int gsz = wide ? 8 : 2, rsz = wide ? 6 : 4;
	uint16_t app = (uint16_t)ctrlr_pi_get_be(t + gsz, 2);
	uint64_t stored_ref = ctrlr_pi_get_be(t + gsz + 2, rsz);
	uint64_t mask = ctrlr_pi_ref_mask(pi->pif);

	/* The escapes that disable every check of the block (section 5.2.1.2). */
	if (app == 0xffff && (pi->type != 3 || stored_ref == mask))
		return NVME_SC_SUCCESS;
	if ((pi->prchk & CTRLR_PRCHK_GUARD) &&
	    ctrlr_pi_get_be(t, gsz) != ctrlr_pi_guard(pi, data, md))
		return NVME_SC_GUARD_CHECK;
	if ((pi->prchk & CTRLR_PRCHK_APP) && ((app ^ pi->apptag) & pi->appmask))
		return NVME_SC_APPTAG_CHECK;
	if ((pi->prchk & CTRLR_PRCHK_REF) && pi->type != 3 && stored_ref != (ref & mask))
		return NVME_SC_REFTAG_CHECK;
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
	uint64_t mask = ctrlr_pi_ref_mask(pi->pif);

	if (pi->type == 1 && (pi->prchk & CTRLR_PRCHK_REF) && (slba & mask) != (ilbrt & mask))
		return NVME_SC_INVALID_PI;
	return NVME_SC_SUCCESS;
}
