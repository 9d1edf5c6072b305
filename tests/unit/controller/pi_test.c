/* tests/unit/controller/pi_test.c - the CRC-16 T10-DIF and CRC-64 NVMe guards against published
 * vectors, and protection information tuples generated and checked for each type and guard. */
#include <string.h>

#include "controller/nvme_spec.h"
#include "controller/nvm/pi.h"
#include "tests/unit/cunit_runner.h"

static void test_crc16_vectors(void)
{
	uint8_t b[32];

	/* The catalogue check value of CRC-16/T10-DIF. */
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, "123456789", 9), 0xd0db);
	/* The five 32-byte codewords of T10's "Simplified End-to-End Data Protection" proposal. */
	memset(b, 0, sizeof(b));
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, b, 32), 0x0000);
	memset(b, 0xff, sizeof(b));
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, b, 32), 0xa293);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, b, 32), 0x0224);
	memset(b, 0, sizeof(b));
	b[0] = b[1] = 0xff;
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, b, 32), 0x21b8);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(0xff - i);
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(0, b, 32), 0xa0b7);
	/* Continuing over pieces gives the same result as one pass. */
	CU_ASSERT_EQUAL(ctrlr_crc16_t10dif(ctrlr_crc16_t10dif(0, b, 7), b + 7, 25), 0xa0b7);
}

static void test_crc64_vectors(void)
{
	static uint8_t b[4096];

	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(0, "123456789", 9), 0xae8b14860a799888ull);
	/* NVM Command Set 1.0 section 5.2.1.3.5, 64b CRC test cases (4 KiB, no metadata). */
	memset(b, 0, sizeof(b));
	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(0, b, sizeof(b)), 0x6482d367eb22b64eull);
	memset(b, 0xff, sizeof(b));
	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(0, b, sizeof(b)), 0xc0ddba7302eca3acull);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(0, b, sizeof(b)), 0x3e729f5f6750449cull);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(0xff - (i & 0xff));
	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(0, b, sizeof(b)), 0x9a2df64b8e9e517eull);
	CU_ASSERT_EQUAL(ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, b, 1000), b + 1000, 3096),
			0x9a2df64b8e9e517eull);
}

static uint8_t pi_data[512];

static struct ctrlr_pi pi_ctx(uint8_t type, uint8_t pif, bool first, uint16_t ms)
{
	struct ctrlr_pi pi = {.type = type, .pif = pif, .first = first, .ds = 512, .ms = ms,
			      .prchk = CTRLR_PRCHK_GUARD | CTRLR_PRCHK_APP | CTRLR_PRCHK_REF,
			      .apptag = 0x1234, .appmask = 0xffff};

	for (int i = 0; i < 512; i++)
		pi_data[i] = (uint8_t)(i * 7);
	return pi;
}

/* 16b Guard, Type 1, tuple alone: layout, then each check and its status. */
static void test_pi16_type1(void)
{
	struct ctrlr_pi pi = pi_ctx(1, CTRLR_PIF_16, false, 8);
	uint8_t md[8];
	uint16_t crc = ctrlr_crc16_t10dif(0, pi_data, 512);

	ctrlr_pi_generate(&pi, pi_data, md, 0x11223344);
	CU_ASSERT_EQUAL(md[0], crc >> 8);
	CU_ASSERT_EQUAL(md[1], crc & 0xff);
	CU_ASSERT_EQUAL(md[2], 0x12);
	CU_ASSERT_EQUAL(md[3], 0x34);
	CU_ASSERT_EQUAL(md[4], 0x11);
	CU_ASSERT_EQUAL(md[7], 0x44);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223344), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223345), NVME_SC_REFTAG_CHECK);
	pi.apptag = 0x1235;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223344), NVME_SC_APPTAG_CHECK);
	pi.appmask = 0xfff0; /* the differing bit is masked out */
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223344), 0);
	pi_data[100] ^= 1;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223344), NVME_SC_GUARD_CHECK);
	/* Only the checks PRCHK asks for. */
	pi.prchk = CTRLR_PRCHK_REF;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0x11223344), 0);
	pi.prchk = 0;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 1), 0);
	/* Application tag FFFFh disables every check of the block (Types 1 and 2). */
	pi.prchk = CTRLR_PRCHK_GUARD | CTRLR_PRCHK_REF;
	md[2] = md[3] = 0xff;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 7), 0);
	/* Reference tags increment and wrap in 32 bits; ILBRT must match the SLBA for Type 1. */
	CU_ASSERT_EQUAL(ctrlr_pi_ref_next(&pi, 0xffffffff), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 0x100000005ull, 5), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 5, 6), NVME_SC_INVALID_PI);
	pi.prchk = CTRLR_PRCHK_GUARD;
	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 5, 6), 0);
}

/* Type 2 takes any ILBRT; Type 3 never checks the reference tag, and its escape needs the
 * reference tag all ones too. */
static void test_pi16_type2_type3(void)
{
	struct ctrlr_pi pi = pi_ctx(2, CTRLR_PIF_16, true, 8);
	uint8_t md[8];

	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 5, 6), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_ref_next(&pi, 9), 10);
	ctrlr_pi_generate(&pi, pi_data, md, 9);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 10), NVME_SC_REFTAG_CHECK);
	pi = pi_ctx(3, CTRLR_PIF_16, true, 8);
	CU_ASSERT_EQUAL(ctrlr_pi_ref_next(&pi, 9), 9);
	ctrlr_pi_generate(&pi, pi_data, md, 9);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 10), 0);
	pi_data[0] ^= 0x80;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 9), NVME_SC_GUARD_CHECK);
	md[2] = md[3] = 0xff; /* app tag FFFFh alone is not an escape for Type 3 */
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 9), NVME_SC_GUARD_CHECK);
	memset(md + 4, 0xff, 4);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 9), 0);
}

/* 64b Guard: 16-byte tuple, 48-bit reference tag; last in 64 bytes of metadata, the guard then
 * covers the metadata before it. */
static void test_pi64(void)
{
	struct ctrlr_pi pi = pi_ctx(1, CTRLR_PIF_64, false, 64);
	uint8_t md[64];
	uint64_t crc;

	for (int i = 0; i < 64; i++)
		md[i] = (uint8_t)(0xa0 + i);
	crc = ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, pi_data, 512), md, 48);
	CU_ASSERT_EQUAL(ctrlr_pi_tuple_size(CTRLR_PIF_64), 16);
	CU_ASSERT_EQUAL(ctrlr_pi_tuple_off(&pi), 48);
	ctrlr_pi_generate(&pi, pi_data, md, 0xabcdef123456ull);
	CU_ASSERT_EQUAL(md[48], crc >> 56);
	CU_ASSERT_EQUAL(md[55], crc & 0xff);
	CU_ASSERT_EQUAL(md[56], 0x12);
	CU_ASSERT_EQUAL(md[57], 0x34);
	CU_ASSERT_EQUAL(md[58], 0xab);
	CU_ASSERT_EQUAL(md[63], 0x56);
	CU_ASSERT_EQUAL(md[0], 0xa0); /* the rest of the metadata is the host's */
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0xabcdef123456ull), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0xbcdef123456ull), NVME_SC_REFTAG_CHECK);
	md[3] ^= 1; /* metadata before the tuple is guarded */
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0xabcdef123456ull), NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(ctrlr_pi_ref_next(&pi, 0xffffffffffffull), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 0x1000000000005ull, 0x1000000000005ull), 0);
	CU_ASSERT_EQUAL(ctrlr_pi_check_ilbrt(&pi, 0x100000005ull, 5), NVME_SC_INVALID_PI);
	/* Type 3 escape: application tag FFFFh and the 48-bit reference tag all ones. */
	pi = pi_ctx(3, CTRLR_PIF_64, true, 16);
	memset(md, 0xff, 16);
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0), 0);
	md[15] = 0xfe;
	CU_ASSERT_EQUAL(ctrlr_pi_check(&pi, pi_data, md, 0), NVME_SC_GUARD_CHECK);
}

CUNIT_SUITE(pi, NULL, NULL, {"crc16_vectors", test_crc16_vectors},
	    {"crc64_vectors", test_crc64_vectors}, {"pi16_type1", test_pi16_type1},
	    {"pi16_type2_type3", test_pi16_type2_type3}, {"pi64", test_pi64})
