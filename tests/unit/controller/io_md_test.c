/* tests/unit/controller/io_md_test.c - LBA formats with metadata and end-to-end protection
 * through the loopback transport against a malloc bdev: Format NVM and the capacity, metadata
 * in extended LBAs, at MPTR (PRP and SGL), its place on the bdev, protection information
 * inserted, stripped, checked (each failure status) for 16b, 32b and 64b guards, Types 1-3, the
 * formats with a storage tag (and Copy between them). */
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "controller/nvm/nvm.h"
#include "controller/nvm/pi.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define MD_BLOCKS 2048 /* 512-byte bdev blocks */
static struct lb lb;
static uint64_t data_addr, md_addr, desc_addr;

static int md_init(void)
{
	if (lb_init(&lb, NULL) || lb_add_malloc_ns(&lb, "md0", 1, MD_BLOCKS, 512) != 1)
		return -1;
	if (!(lb_enable(&lb, 32) & 1) || lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	data_addr = lb_alloc(&lb, 64 * 1024);
	md_addr = lb_alloc(&lb, 8192);
	desc_addr = lb_alloc(&lb, 4096);
	return 0;
}

static int md_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *md_data(void)
{
	return lb_ptr(&lb, data_addr);
}

static uint8_t *md_meta(void)
{
	return lb_ptr(&lb, md_addr);
}

static uint16_t md_format(uint32_t lbaf, uint32_t mset, uint32_t pi, uint32_t pil)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);

	sqe.cdw10 = lbaf | mset << 4 | pi << 5 | pil << 8 | 1u << 9;
	return lb_cmd(&lb, 0, &sqe, NULL) & 0x7ff;
}

static struct nvme_id_ns *md_identify(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 1);

	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = NVME_CNS_NS;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	return lb_ptr(&lb, desc_addr);
}

struct md_cmd {
	uint8_t opc;
	uint64_t slba;
	uint32_t nlb;
	uint8_t prinfo;
	uint64_t ilbrt; /* bits 47:32 go to CDW3 */
	uint16_t lbat, lbatm;
	bool mptr;	 /* separate metadata at md_addr */
	uint8_t psdt;	 /* 0 PRP; 1 SGL + contiguous MPTR; 2 SGL + MPTR SGL */
	bool stc;	 /* Storage Tag Check */
	bool tags;	 /* CDW2/CDW3/CDW14 as given below, not from ilbrt */
	uint32_t cdw2, cdw3, cdw14;
};

/* One command on the data buffer (and the metadata buffer); the status without the phase. */
static uint16_t md_io(const struct md_cmd *c)
{
	struct nvme_sqe sqe = lb_sqe(c->opc, 1);
	struct nvme_sgl_desc *d = lb_ptr(&lb, desc_addr);

	sqe.cdw10 = (uint32_t)c->slba;
	sqe.cdw11 = (uint32_t)(c->slba >> 32);
	sqe.cdw12 = (c->nlb - 1) | (uint32_t)c->prinfo << 26;
	sqe.cdw14 = (uint32_t)c->ilbrt;
	sqe.cdw3 = (uint32_t)(c->ilbrt >> 32);
	if (c->tags) {
		sqe.cdw2 = c->cdw2;
		sqe.cdw3 = c->cdw3;
		sqe.cdw14 = c->cdw14;
	}
	if (c->stc)
		sqe.cdw12 |= CTRLR_STC;
	sqe.cdw15 = c->lbat | (uint32_t)c->lbatm << 16;
	if (c->psdt) {
		sqe.cdw0.bits.psdt = c->psdt;
		sqe.dptr.sgl.addr = data_addr;
		sqe.dptr.sgl.length = 64 * 1024;
		sqe.dptr.sgl.type = NVME_SGL_TYPE_DATA_BLOCK << 4;
	} else {
		sqe.dptr.prp.prp1 = data_addr;
		sqe.dptr.prp.prp2 = 0;
	}
	if (c->mptr && c->psdt == 2) {
		memset(d, 0, sizeof(*d));
		d->addr = md_addr;
		d->length = 8192;
		d->type = NVME_SGL_TYPE_DATA_BLOCK << 4;
		sqe.mptr = desc_addr;
	} else if (c->mptr) {
		sqe.mptr = md_addr;
	}
	return lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff;
}

/* PRP lists are not built here: keep transfers within two pages unless SGL. */
static uint16_t md_rw(uint8_t opc, uint64_t slba, uint32_t nlb, uint8_t prinfo, uint64_t ilbrt,
		      bool mptr)
{
	struct md_cmd c = {.opc = opc, .slba = slba, .nlb = nlb, .prinfo = prinfo, .ilbrt = ilbrt,
			   .lbat = 0x5a5a, .lbatm = 0xffff, .mptr = mptr, .psdt = 1};

	return md_io(&c);
}

static void md_raw_cb(struct bdev_io *io, int status, void *arg)
{
	*(int *)arg = status == 0 ? 1 : -1;
}

/* Reads bdev blocks [off, +n) straight from the bdev, as stored. */
static void md_raw_read(uint64_t off, uint32_t n, uint8_t *out)
{
	struct bdev *b = bdev_lookup("md0");
	struct bdev_channel *ch = NULL;
	struct bdev_io *io = calloc(1, bdev_io_size(b));
	struct iovec iov = {out, (size_t)n * 512};
	int done = 0;

	CU_ASSERT_FATAL(io != NULL);
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
	io->type = BDEV_IO_READ;
	io->offset_blocks = off;
	io->num_blocks = n;
	io->iov = &iov;
	io->iovcnt = 1;
	io->cb = md_raw_cb;
	io->cb_arg = &done;
	bdev_submit(ch, io);
	while (!done)
		bdev_channel_poll(ch);
	CU_ASSERT_EQUAL(done, 1);
	bdev_channel_destroy(ch);
	free(io);
}

static void md_fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13 + i / 509);
}

static void test_formats_capacity(void)
{
	struct nvme_id_ns *id = md_identify();
	struct nvme_id_ns_nvm *nvm = lb_ptr(&lb, desc_addr);
	struct nvme_sqe sqe;

	CU_ASSERT_EQUAL(id->nsze, MD_BLOCKS);
	CU_ASSERT_EQUAL(id->mc, NVME_MC_EXTENDED | NVME_MC_SEPARATE);
	CU_ASSERT_EQUAL(id->dpc, 0x1f);
	CU_ASSERT_EQUAL(id->lbaf[1].ms, 8);
	CU_ASSERT_EQUAL(id->lbaf[9].ms, 16);
	CU_ASSERT_EQUAL(id->lbaf[9].lbads, 12);
	/* Extended LBA formats: the guard of each format in CNS 05h; ELBAS in CTRATT. */
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 1);
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = NVME_CNS_CS_NS;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(nvm->elbaf[2], NVME_ELBAF(0, CTRLR_PIF_16));
	CU_ASSERT_EQUAL(nvm->elbaf[3], NVME_ELBAF(0, CTRLR_PIF_64));
	CU_ASSERT_EQUAL(nvm->elbaf[9], NVME_ELBAF(0, CTRLR_PIF_64));
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(((struct nvme_id_ctrl *)lb_ptr(&lb, desc_addr))->ctratt & NVME_CTRATT_ELBAS);

	/* Each format's blocks take whole bdev blocks: data, metadata, padding. */
	CU_ASSERT_EQUAL(md_format(1, 0, 0, 0), 0); /* 512+8: two bdev blocks */
	id = md_identify();
	CU_ASSERT_EQUAL(id->nsze, MD_BLOCKS / 2);
	CU_ASSERT_EQUAL(id->flbas, 1);
	CU_ASSERT_EQUAL(id->dps, 0);
	CU_ASSERT_EQUAL(md_format(7, 1, 3, 1), 0); /* 4096+8 extended, Type 3 first: nine */
	id = md_identify();
	CU_ASSERT_EQUAL(id->nsze, MD_BLOCKS / 9);
	CU_ASSERT_EQUAL(id->flbas, 7 | NVME_FLBAS_EXTENDED);
	CU_ASSERT_EQUAL(id->dps, 3 | NVME_DPS_FIRST);
	CU_ASSERT_EQUAL(md_format(6, 0, 0, 0), 0); /* 4096, no metadata: eight */
	CU_ASSERT_EQUAL(md_identify()->nsze, MD_BLOCKS / 8);
	/* Protection needs room for its tuple: 8 bytes cannot hold the 64b guard's. */
	CU_ASSERT_EQUAL(md_format(0, 0, 1, 0), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(md_format(0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(md_identify()->nsze, MD_BLOCKS);
}

/* 4096-byte blocks on a 512-byte bdev, no metadata: consecutive, zero copy. */
static void test_large_blocks(void)
{
	uint8_t raw[4096];

	CU_ASSERT_EQUAL_FATAL(md_format(6, 0, 0, 0), 0);
	md_fill(md_data(), 8192, 3);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 5, 2, 0, 0, false), 0);
	md_raw_read(5 * 8 + 8, 8, raw);
	CU_ASSERT_EQUAL(memcmp(raw, md_data() + 4096, 4096), 0);
	memset(md_data(), 0, 8192);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 5, 2, 0, 0, false), 0);
	md_fill(md_data() + 8192, 8192, 3);
	CU_ASSERT_EQUAL(memcmp(md_data(), md_data() + 8192, 8192), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_COMPARE, 5, 2, 0, 0, false), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 256, 1, 0, 0, false), NVME_SC_LBA_RANGE);
}

/* Separate metadata (PRP, SGL with contiguous MPTR, SGL with MPTR SGL) and extended LBAs: what
 * the host sends lands as [data][metadata][zeroes] per block, and comes back the same way. */
static void test_placement(void)
{
	uint8_t raw[1024], want[64 * 3];
	struct md_cmd c = {.opc = NVME_CMD_WRITE, .slba = 10, .nlb = 3, .mptr = true};

	CU_ASSERT_EQUAL_FATAL(md_format(4, 0, 0, 0), 0); /* 512+64, separate */
	for (uint8_t psdt = 0; psdt <= 2; psdt++) {
		md_fill(md_data(), 1536, (uint8_t)(psdt + 1));
		md_fill(md_meta(), 192, (uint8_t)(psdt + 100));
		memcpy(want, md_meta(), sizeof(want));
		c.opc = NVME_CMD_WRITE;
		c.psdt = psdt;
		CU_ASSERT_EQUAL(md_io(&c), 0);
		md_raw_read(2 * 11, 2, raw); /* the second block: bdev blocks 22-23 */
		CU_ASSERT_EQUAL(memcmp(raw, md_data() + 512, 512), 0);
		CU_ASSERT_EQUAL(memcmp(raw + 512, want + 64, 64), 0);
		for (int i = 512 + 64; i < 1024; i++)
			CU_ASSERT_EQUAL_FATAL(raw[i], 0);
		memset(md_meta(), 0, 192);
		memset(md_data() + 2048, 0, 1536);
		memcpy(md_data() + 2048, md_data(), 1536);
		memset(md_data(), 0, 1536);
		c.opc = NVME_CMD_READ;
		CU_ASSERT_EQUAL(md_io(&c), 0);
		CU_ASSERT_EQUAL(memcmp(md_data(), md_data() + 2048, 1536), 0);
		CU_ASSERT_EQUAL(memcmp(md_meta(), want, sizeof(want)), 0);
		/* Compare covers the metadata too. */
		c.opc = NVME_CMD_COMPARE;
		CU_ASSERT_EQUAL(md_io(&c), 0);
		md_meta()[130] ^= 1;
		CU_ASSERT_EQUAL(md_io(&c), NVME_SC_COMPARE_FAILED);
	}
	/* A metadata pointer outside guest memory, or not dword aligned with PRPs. */
	c.opc = NVME_CMD_READ;
	c.psdt = 0;
	md_addr += 2;
	CU_ASSERT_EQUAL(md_io(&c), NVME_SC_INVALID_FIELD);
	md_addr -= 2;

	/* Extended: metadata after each block's data in the one buffer. */
	CU_ASSERT_EQUAL_FATAL(md_format(4, 1, 0, 0), 0);
	md_fill(md_data(), 3 * 576, 9);
	c = (struct md_cmd){.opc = NVME_CMD_WRITE, .slba = 4, .nlb = 3};
	CU_ASSERT_EQUAL(md_io(&c), 0);
	md_raw_read(2 * 6, 2, raw);
	CU_ASSERT_EQUAL(memcmp(raw, md_data() + 2 * 576, 576), 0);
	memcpy(md_data() + 8192, md_data(), 3 * 576);
	memset(md_data(), 0, 3 * 576);
	c.opc = NVME_CMD_READ;
	CU_ASSERT_EQUAL(md_io(&c), 0);
	CU_ASSERT_EQUAL(memcmp(md_data(), md_data() + 8192, 3 * 576), 0);
}

/* 16b guard, Type 1, tuple-only metadata: PRACT inserts and strips; PRCHK checks each field. */
static void test_pi_type1(void)
{
	uint8_t *m = md_meta();
	uint16_t crc;

	CU_ASSERT_EQUAL_FATAL(md_format(1, 0, 1, 0), 0); /* 512+8, Type 1 */
	md_fill(md_data(), 2048, 21);
	/* PRACT: no metadata from the host, tags generated from ILBRT = SLBA. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, CTRLR_PRINFO_PRACT, 100, false), 0);
	/* Type 1 wants ILBRT to be the SLBA's low bits when the reference tag is checked. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, CTRLR_PRINFO_PRACT | CTRLR_PRCHK_REF, 7, false),
			NVME_SC_INVALID_PI);
	memset(md_meta(), 0, 64);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, 7, 100, true), 0);
	crc = ctrlr_crc16_t10dif(0, md_data() + 512, 512);
	CU_ASSERT_EQUAL(m[8] << 8 | m[9], crc);
	CU_ASSERT_EQUAL(m[10] << 8 | m[11], 0x5a5a);
	CU_ASSERT_EQUAL((uint32_t)(m[12] << 24 | m[13] << 16 | m[14] << 8 | m[15]), 101);
	/* PRACT on a read strips the tuple: no metadata buffer needed. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, CTRLR_PRINFO_PRACT | 7, 100, false), 0);
	/* Reference tag expected from another ILBRT (Type 1 with no ref check: allowed). */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, CTRLR_PRCHK_GUARD, 5, true), 0);

	/* A bad guard from the host: refused when checked, stored when not. */
	md_fill(md_data(), 2048, 21);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, 0, 0, true), 0);
	md_data()[512 + 17] ^= 0x40; /* block 101's data no longer matches its guard */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, 7, 100, true), NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, CTRLR_PRCHK_REF, 100, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, CTRLR_PRCHK_GUARD, 100, true),
			NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_VERIFY, 100, 4, CTRLR_PRCHK_GUARD, 100, false),
			NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, 0, 100, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_VERIFY, 100, 1, 7, 100, false), 0);
	/* Application tag: compared under LBATM. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, CTRLR_PRINFO_PRACT, 100, false), 0);
	{
		struct md_cmd c = {.opc = NVME_CMD_READ, .slba = 100, .nlb = 4,
				   .prinfo = CTRLR_PRCHK_APP, .lbat = 0x5a5b, .lbatm = 0xffff,
				   .mptr = true, .psdt = 1};

		CU_ASSERT_EQUAL(md_io(&c), NVME_SC_APPTAG_CHECK);
		c.lbatm = 0xfff0;
		CU_ASSERT_EQUAL(md_io(&c), 0);
	}
	/* Reference tag: blocks written for other LBAs. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 100, 4, 0, 0, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 200, 4, 0, 0, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 200, 4, CTRLR_PRCHK_REF, 200, true),
			NVME_SC_REFTAG_CHECK);
	/* Never written (zeroed by Format) reads back as the all-ones escape: no check fails. */
	memset(md_meta(), 0, 16);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 500, 2, 7, 500, true), 0);
	CU_ASSERT_EQUAL(m[0], 0xff);
	CU_ASSERT_EQUAL(m[15], 0xff);
	/* Write Zeroes with PRACT: zero data with a generated tuple. */
	{
		struct md_cmd c = {.opc = NVME_CMD_WRITE_ZEROES, .slba = 500, .nlb = 2,
				   .prinfo = CTRLR_PRINFO_PRACT, .ilbrt = 500, .lbat = 0x77};

		CU_ASSERT_EQUAL(md_io(&c), 0);
	}
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 500, 2, 0, 0, true), 0);
	CU_ASSERT_EQUAL(m[0] << 8 | m[1], 0); /* CRC-16 of zeroes */
	CU_ASSERT_EQUAL(m[3], 0x77);
	CU_ASSERT_EQUAL(m[15], 0xf5); /* 501 */
}

/* Type 2 (ILBRT from the command), Type 3 (no reference check), and the 64b guard with 48-bit
 * reference tags split over CDW14 and CDW3, the tuple last in 64 bytes of metadata. */
static void test_pi_types_64b(void)
{
	uint8_t *m = md_meta();
	uint64_t crc;

	CU_ASSERT_EQUAL_FATAL(md_format(2, 0, 2, 1), 0); /* 512+16 16b, Type 2, first */
	md_fill(md_data(), 1024, 5);
	/* Metadata larger than the tuple travels even with PRACT (here: none mapped, refused). */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 3, 2, CTRLR_PRINFO_PRACT, 1000, false),
			NVME_SC_DATA_XFER_ERROR);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 3, 2, CTRLR_PRINFO_PRACT, 1000, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 3, 2, 7, 1000, true), 0);
	CU_ASSERT_EQUAL(m[16 + 7], 0xe9); /* 1001 = 3E9h, in the first bytes */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 3, 2, 7, 3, true), NVME_SC_REFTAG_CHECK);

	CU_ASSERT_EQUAL_FATAL(md_format(2, 0, 3, 0), 0); /* Type 3 */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 3, 2, CTRLR_PRINFO_PRACT, 1000, true), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 3, 2, 7, 4242, true), 0);
	CU_ASSERT_EQUAL(m[8 + 7], 0xe8); /* not incremented: 1000 in both */
	CU_ASSERT_EQUAL(m[16 + 8 + 7], 0xe8);

	CU_ASSERT_EQUAL_FATAL(md_format(11, 0, 1, 0), 0); /* 4096+64, 64b guard, Type 1, last */
	CU_ASSERT_EQUAL(md_identify()->nsze, MD_BLOCKS / 9);
	md_fill(md_data(), 8192, 77);
	md_fill(md_meta(), 128, 1);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 200, 2, CTRLR_PRINFO_PRACT, 200, true), 0);
	memset(md_meta(), 0, 128);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 200, 2, 7, 200, true), 0);
	crc = ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, md_data() + 4096, 4096), m + 64, 48);
	CU_ASSERT_EQUAL(m[64 + 48], crc >> 56);
	CU_ASSERT_EQUAL(m[64 + 55], crc & 0xff);
	CU_ASSERT_EQUAL(m[64 + 63], 201);
	CU_ASSERT_EQUAL(m[64 + 3], (uint8_t)(1 + 67 * 13)); /* the host's own bytes kept */
	/* The 48-bit ILBRT: bits 47:32 in CDW3 (Type 1: the SLBA's, so a high bit is wrong). */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 200, 2, 7, 200 | 1ull << 40, true),
			NVME_SC_INVALID_PI);
	m[64 + 20] ^= 2; /* metadata before the tuple is guarded */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 200, 2, CTRLR_PRCHK_GUARD, 200, true),
			NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(md_format(0, 0, 0, 0), 0);
}

/* One Copy source range with its expected tags. */
struct md_copy_range {
	uint64_t slba;
	uint32_t nlb;
	uint64_t eilbrt;
	uint16_t elbat, elbatm;
};

/* Copy of n ranges in descriptor format desfmt to sdlba: PRINFOR, PRINFOW, LBRT (bits 47:32 in
 * CDW3), LBAT/LBATM. The status without the phase; *cdw0 the completion's DW0. */
static uint16_t md_copy(uint32_t desfmt, const struct md_copy_range *r, uint32_t n, uint64_t sdlba,
			uint8_t prinfor, uint8_t prinfow, uint64_t lbrt, uint16_t lbat,
			uint16_t lbatm, uint32_t *cdw0)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_COPY, 1);
	uint8_t *d = lb_ptr(&lb, desc_addr);

	/* Laid out by hand at the offsets of NVM Command Set Figures "Source Range Entries Copy
	 * Descriptor Format 0h/1h" (little-endian fields; format 1h's tag field big-endian). */
	memset(d, 0, 4096);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = d + i * (desfmt ? 40 : 32);
		uint16_t nlb = (uint16_t)(r[i].nlb - 1);

		memcpy(e + 8, &r[i].slba, 8);
		memcpy(e + 16, &nlb, 2);
		if (desfmt == 0) {
			uint32_t tag = (uint32_t)r[i].eilbrt;

			memcpy(e + 24, &tag, 4);
			memcpy(e + 28, &r[i].elbat, 2);
			memcpy(e + 30, &r[i].elbatm, 2);
		} else {
			for (int b = 0; b < 8; b++) /* bytes 35:26, the low 8 of the 10 */
				e[35 - b] = (uint8_t)(r[i].eilbrt >> (8 * b));
			memcpy(e + 36, &r[i].elbat, 2);
			memcpy(e + 38, &r[i].elbatm, 2);
		}
	}
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = (uint32_t)sdlba;
	sqe.cdw11 = (uint32_t)(sdlba >> 32);
	sqe.cdw12 = (n - 1) | desfmt << 8 | (uint32_t)prinfor << 12 | (uint32_t)prinfow << 26;
	sqe.cdw14 = (uint32_t)lbrt;
	sqe.cdw3 = (uint32_t)(lbrt >> 32);
	sqe.cdw15 = lbat | (uint32_t)lbatm << 16;
	return lb_cmd(&lb, 1, &sqe, cdw0) & 0x7ff;
}

/* Copy on a 16b Guard Type 1 format: the source checked as PRINFOR says with each range's
 * expected tags, the destination's tuples regenerated (PRACT) with its own reference tags or
 * kept and checked (PRINFOW), each failure's status, and the range reported in DW0. */
static void test_copy_pi_16b(void)
{
	struct md_copy_range r[2] = {{100, 4, 100, 0x5a5a, 0xffff}, {200, 2, 200, 0x5a5a, 0xffff}};
	const uint8_t all = CTRLR_PRINFO_PRACT | 7;
	uint8_t *m = md_meta(), want[2048];
	uint32_t cdw0;

	CU_ASSERT_EQUAL_FATAL(md_format(1, 0, 1, 0), 0); /* 512+8, Type 1 */
	md_fill(md_data(), 2048, 31);
	memcpy(want, md_data(), 2048);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 100, 4, CTRLR_PRINFO_PRACT, 100, false), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 200, 2, CTRLR_PRINFO_PRACT, 200, false), 0);

	/* PRACT: six blocks to 300, tuples with LBAT 1234h and reference tags 300..305. */
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, all, all, 300, 0x1234, 0xffff, NULL), 0);
	memset(md_data(), 0, 4096);
	memset(m, 0, 64);
	{
		struct md_cmd c = {.opc = NVME_CMD_READ, .slba = 300, .nlb = 6, .prinfo = 7,
				   .ilbrt = 300, .lbat = 0x1234, .lbatm = 0xffff, .mptr = true,
				   .psdt = 1};

		CU_ASSERT_EQUAL(md_io(&c), 0);
	}
	CU_ASSERT_EQUAL(memcmp(md_data(), want, 2048), 0);
	CU_ASSERT_EQUAL(memcmp(md_data() + 2048, want, 1024), 0);
	for (int i = 0; i < 6; i++) {
		const uint8_t *t = m + 8 * i;
		uint16_t crc = ctrlr_crc16_t10dif(0, md_data() + 512 * i, 512);

		CU_ASSERT_EQUAL(t[0] << 8 | t[1], crc);
		CU_ASSERT_EQUAL(t[2] << 8 | t[3], 0x1234);
		CU_ASSERT_EQUAL((uint32_t)(t[4] << 24 | t[5] << 16 | t[6] << 8 | t[7]),
				300u + (uint32_t)i);
	}

	/* PRACT 0: the source's tuples move unchanged; a reference tag check against LBRT 400
	 * fails (they say 100..), the guard check alone passes. */
	CU_ASSERT_EQUAL(md_copy(0, r, 1, 400, 7, 7, 400, 0x5a5a, 0xffff, &cdw0),
			NVME_SC_REFTAG_CHECK);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_EQUAL(md_copy(0, r, 1, 400, 7, CTRLR_PRCHK_GUARD | CTRLR_PRCHK_APP, 400, 0x5a5a,
				0xffff, NULL), 0);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 400, 4, 7, 100, true), NVME_SC_INVALID_PI);
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 400, 4, CTRLR_PRCHK_GUARD | CTRLR_PRCHK_APP, 100,
			      true), 0);
	CU_ASSERT_EQUAL(m[7], 100); /* the source's reference tag, kept */
	CU_ASSERT_EQUAL(memcmp(md_data(), want, 2048), 0);

	/* The source's checks: the application tag under ELBATM, each range's own EILBRT. */
	r[1].elbat = 0x5a5b;
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, all, all, 300, 0, 0, &cdw0), NVME_SC_APPTAG_CHECK);
	CU_ASSERT_EQUAL(cdw0, 1); /* range 0 was copied, range 1 not */
	r[1].elbatm = 0xfff0;
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, all, all, 300, 0, 0, NULL), 0);
	r[1].eilbrt = 201; /* Type 1: the EILBRT must be the SLBA's when checked */
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, all, all, 300, 0, 0, &cdw0), NVME_SC_INVALID_PI);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, CTRLR_PRINFO_PRACT, CTRLR_PRINFO_PRACT, 300, 0, 0,
				NULL), 0);
	/* ...and the destination's LBRT the SDLBA's. */
	CU_ASSERT_EQUAL(md_copy(0, r, 1, 300, all, all, 301, 0, 0, NULL), NVME_SC_INVALID_PI);
	/* A block whose data no longer matches its guard (stored unchecked) fails the copy. */
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_READ, 200, 2, 0, 0, true), 0);
	md_data()[512 + 3] ^= 1;
	CU_ASSERT_EQUAL(md_rw(NVME_CMD_WRITE, 200, 2, 0, 0, true), 0);
	r[1] = (struct md_copy_range){200, 2, 200, 0x5a5a, 0xffff};
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, all, all, 300, 0, 0, &cdw0), NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(cdw0, 1);
	CU_ASSERT_EQUAL(md_copy(0, r, 2, 300, CTRLR_PRINFO_PRACT | CTRLR_PRCHK_REF,
				CTRLR_PRINFO_PRACT, 300, 0, 0, NULL), 0);
	/* PRACT must be the same on both sides (one namespace, one format); format 1h is for
	 * the 64b Guard. */
	CU_ASSERT_EQUAL(md_copy(0, r, 1, 300, CTRLR_PRINFO_PRACT, 0, 300, 0, 0, NULL),
			NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(md_copy(1, r, 1, 300, 0, 0, 300, 0, 0, NULL), NVME_SC_INVALID_FORMAT);
}

/* Copy on a 64b Guard format: descriptor format 1h with its 48-bit big-endian EILBRT, the
 * destination's LBRT over CDW14 and CDW3, CRC-64 guards regenerated. */
static void test_copy_pi_64b(void)
{
	struct md_copy_range r = {0x10, 2, 0xabcd00000010ull, 0x0f0f, 0xffff};
	const uint64_t lbrt = 0x123400000050ull;
	uint8_t *m = md_meta(), want[8192];

	CU_ASSERT_EQUAL_FATAL(md_format(11, 0, 2, 0), 0); /* 4096+64, 64b guard, Type 2, last */
	md_fill(md_data(), 8192, 91);
	memcpy(want, md_data(), 8192);
	{
		struct md_cmd c = {.opc = NVME_CMD_WRITE, .slba = 0x10, .nlb = 2,
				   .prinfo = CTRLR_PRINFO_PRACT, .ilbrt = r.eilbrt, .lbat = 0x0f0f,
				   .mptr = true, .psdt = 1};

		memset(m, 0, 128);
		CU_ASSERT_EQUAL(md_io(&c), 0);
	}
	/* Format 0h is for the 16b Guard. */
	CU_ASSERT_EQUAL(md_copy(0, &r, 1, 0x50, 7, 7, lbrt, 0, 0, NULL), NVME_SC_INVALID_FORMAT);
	/* The source's 48-bit tag from the descriptor's low bytes: a wrong one is caught. */
	r.eilbrt ^= 1ull << 44;
	CU_ASSERT_EQUAL(md_copy(1, &r, 1, 0x50, CTRLR_PRINFO_PRACT | 7, CTRLR_PRINFO_PRACT | 7,
				lbrt, 0x4444, 0xffff, NULL), NVME_SC_REFTAG_CHECK);
	r.eilbrt ^= 1ull << 44;
	CU_ASSERT_EQUAL(md_copy(1, &r, 1, 0x50, CTRLR_PRINFO_PRACT | 7, CTRLR_PRINFO_PRACT | 7,
				lbrt, 0x4444, 0xffff, NULL), 0);
	memset(md_data(), 0, 8192);
	memset(m, 0, 128);
	{
		struct md_cmd c = {.opc = NVME_CMD_READ, .slba = 0x50, .nlb = 2, .prinfo = 7,
				   .ilbrt = lbrt, .lbat = 0x4444, .lbatm = 0xffff, .mptr = true,
				   .psdt = 1};

		CU_ASSERT_EQUAL(md_io(&c), 0);
	}
	CU_ASSERT_EQUAL(memcmp(md_data(), want, 8192), 0);
	for (int i = 0; i < 2; i++) {
		const uint8_t *md = m + 64 * i, *t = md + 48;
		uint64_t crc = ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, md_data() + 4096 * i, 4096),
						md, 48), g = 0, ref = 0;

		for (int b = 0; b < 8; b++)
			g = g << 8 | t[b];
		for (int b = 10; b < 16; b++)
			ref = ref << 8 | t[b];
		CU_ASSERT_EQUAL(g, crc);
		CU_ASSERT_EQUAL(t[8] << 8 | t[9], 0x4444);
		CU_ASSERT_EQUAL(ref, lbrt + (uint64_t)i);
	}
	CU_ASSERT_EQUAL(md_format(0, 0, 0, 0), 0);
}

/* A Write/Read/Verify/Compare of 2 blocks at slba with the tags field (cdw2, cdw3, cdw14), PRINFO,
 * STC; metadata at MPTR. */
static uint16_t md_st(uint8_t opc, uint64_t slba, uint8_t prinfo, bool stc, uint32_t cdw2,
		      uint32_t cdw3, uint32_t cdw14)
{
	struct md_cmd c = {.opc = opc, .slba = slba, .nlb = 2, .prinfo = prinfo, .lbat = 0x5a5a,
			   .lbatm = 0xffff, .mptr = true, .psdt = 1, .stc = stc, .tags = true,
			   .cdw2 = cdw2, .cdw3 = cdw3, .cdw14 = cdw14};

	return md_io(&c);
}

static uint64_t md_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The formats with a storage tag (NVM Command Set 1.0 5.2.1.4, 1.1 QPIF): Identify's ELBAF, PIC,
 * PIFA and LBSTM; the tag written with PRACT from the command's tags field (16b Guard: CDW14;
 * 32b: CDW2, CDW3, CDW14; 64b: CDW3, CDW14), the reference tag below it, checked only with STC
 * (Storage Tag Check Error 288h), in Reads, Verify, Compare and Writes without PRACT; the 32b
 * Guard's CRC-32C; Type 3's all-ones escape covering the storage tag. */
static void test_storage_tags(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 1);
	const struct nvme_id_ns_nvm *nvm = lb_ptr(&lb, desc_addr);
	uint8_t *m = md_meta(), *d = md_data();

	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = NVME_CNS_CS_NS | (uint32_t)NVME_CSI_NVM << 24;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(nvm->elbaf[1], 0);			/* 512+8 16b: no tag */
	CU_ASSERT_EQUAL(nvm->elbaf[3], 2u << 7);		/* 512+16 64b */
	CU_ASSERT_EQUAL(nvm->elbaf[12], 16u);			/* 512+8 16b, STS 16 */
	CU_ASSERT_EQUAL(nvm->elbaf[13], 32u | 1u << 7);	/* 512+16 32b, STS 32 */
	CU_ASSERT_EQUAL(nvm->elbaf[14], 24u | 3u << 7 | 2u << 9); /* qualified: 64b */
	CU_ASSERT_EQUAL(nvm->elbaf[15], 8u | 3u << 7 | 0u << 9);  /* qualified: 16b */
	CU_ASSERT_EQUAL(nvm->pic, NVME_PIC_16B_STS | NVME_PIC_STCRS | NVME_PIC_QPIFS);
	CU_ASSERT_EQUAL(nvm->pifa, NVME_PIFA_STMLA_NONE);
	CU_ASSERT_EQUAL(nvm->lbstm, UINT64_MAX);

	/* Format 15: 512+8, the Qualified Type's 16b Guard, 8-bit tag over a 24-bit reference
	 * tag, Type 1. */
	CU_ASSERT_EQUAL_FATAL(md_format(15, 0, 1, 0), 0);
	md_fill(d, 1024, 3);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 10, CTRLR_PRINFO_PRACT, true, 0, 0, 0x5a00000a), 0);
	/* Type 1: the reference tag part must be the SLBA's (the tag above it is not). */
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 10, 7, true, 0, 0, 0x5a00000b), NVME_SC_INVALID_PI);
	memset(m, 0, 16);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 10, 7, true, 0, 0, 0x5a00000a), 0);
	CU_ASSERT_EQUAL(md_be(m + 4, 4), 0x5a00000a);
	CU_ASSERT_EQUAL(md_be(m + 8 + 4, 4), 0x5a00000b); /* the reference tag counts, the tag stays */
	CU_ASSERT_EQUAL(md_be(m, 2), ctrlr_crc16_t10dif(0, d, 512));
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 10, 7, true, 0, 0, 0x5b00000a),
			NVME_SC_STORAGE_TAG_CHECK);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_VERIFY, 10, 7, true, 0, 0, 0x5b00000a),
			NVME_SC_STORAGE_TAG_CHECK);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_COMPARE, 10, 7, true, 0, 0, 0x5b00000a),
			NVME_SC_STORAGE_TAG_CHECK);
	/* Without STC the tag is not looked at, nor with STC when PRCHK leaves out the tags
	 * field (bit 0). */
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 10, 7, false, 0, 0, 0x5b00000a), 0);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 10, 6, true, 0, 0, 0x5b00000a), 0);
	/* A Write without PRACT carries its own tuples: their tag is checked with STC. */
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 10, 7, true, 0, 0, 0x5b00000a),
			NVME_SC_STORAGE_TAG_CHECK);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 10, 7, true, 0, 0, 0x5a00000a), 0);

	/* Format 13: 512+16, 32b Guard (CRC-32C), 32-bit tag over a 48-bit reference tag: the
	 * 80-bit tags field is CDW2 bits 15:0, CDW3, CDW14. Tag DEADBEEFh, reference tag 20. */
	CU_ASSERT_EQUAL_FATAL(md_format(13, 0, 1, 0), 0);
	md_fill(d, 1024, 4);
	md_fill(m, 32, 9);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 20, CTRLR_PRINFO_PRACT, true, 0xdead, 0xbeef0000, 20),
			0);
	memset(m, 0, 32);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 20, 7, true, 0xdead, 0xbeef0000, 20), 0);
	CU_ASSERT_EQUAL(md_be(m, 4), crc32c(0, d, 512));
	CU_ASSERT_EQUAL(md_be(m + 4, 2), 0x5a5a);
	CU_ASSERT_EQUAL(md_be(m + 6, 4), 0xdeadbeef);
	CU_ASSERT_EQUAL(md_be(m + 10, 6), 20);
	CU_ASSERT_EQUAL(md_be(m + 16 + 10, 6), 21);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 20, 7, true, 0xdeae, 0xbeef0000, 20),
			NVME_SC_STORAGE_TAG_CHECK);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 20, 7, true, 0xdead, 0xbeef0001, 20),
			NVME_SC_INVALID_PI); /* reference tag bit 32: not the SLBA's */
	d[3] ^= 1;
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 20, 7, true, 0xdead, 0xbeef0000, 20),
			NVME_SC_GUARD_CHECK);

	/* Format 14: 4096+16, the Qualified Type's 64b Guard, 24-bit tag over a 24-bit reference
	 * tag (CDW3 bits 15:0 above CDW14), Type 3: no reference tag check, and all ones in the
	 * application tag, the storage and reference tags disables every check. */
	CU_ASSERT_EQUAL_FATAL(md_format(14, 0, 3, 0), 0);
	md_fill(d, 8192, 5);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 2, CTRLR_PRINFO_PRACT, false, 0, 0xabcd, 0xef123456), 0);
	memset(m, 0, 32);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 2, 7, true, 0, 0xabcd, 0xef000000), 0);
	CU_ASSERT_EQUAL(md_be(m + 10, 6), 0xabcdef123456ull);
	CU_ASSERT_EQUAL(md_be(m + 16 + 10, 6), 0xabcdef123456ull); /* Type 3: not counted */
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 2, 7, true, 0, 0xabcc, 0xef000000),
			NVME_SC_STORAGE_TAG_CHECK);
	memset(m, 0xff, 32);
	memset(m + 0, 0, 8); /* a wrong guard under the escape */
	memset(m + 16, 0, 8);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 2, 7, true, 0, 0x1111, 0x11111111), 0);
	m[16 + 15] = 0xfe; /* no longer all ones: checked, the guard fails first */
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 2, 7, true, 0, 0x1111, 0x11111111),
			NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(md_format(0, 0, 0, 0), 0);
}

/* Copy between blocks with a 32b Guard and a storage tag (format 13, Type 3): descriptor format
 * 1h's 80-bit ELBT gives the sources' tag (checked with STCR, CDW12 bit 25),
 * the command's CDW2/CDW3/CDW14 the destination's (generated with PRACT; checked with STCW,
 * bit 24, when the tuples are kept); format 0h is refused. */
static void test_copy_storage_tags(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_COPY, 1);
	uint8_t *e = lb_ptr(&lb, desc_addr), *m = md_meta(), want[1024];
	const uint8_t elbt[10] = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 30};

	CU_ASSERT_EQUAL_FATAL(md_format(13, 0, 3, 0), 0);
	md_fill(md_data(), 1024, 8);
	memcpy(want, md_data(), 1024);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_WRITE, 30, CTRLR_PRINFO_PRACT, false, 0xdead, 0xbeef0000, 30),
			0);
	memset(e, 0, 4096);
	e[8] = 30;	 /* SLBA */
	e[16] = 1;	 /* NLB 2 */
	memcpy(e + 26, elbt, 10);
	e[36] = 0x5a;	 /* ELBAT 5A5Ah, ELBATM FFFFh */
	e[37] = 0x5a;
	e[38] = e[39] = 0xff;
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = 60; /* SDLBA */
	sqe.cdw12 = 1u << 8 | (CTRLR_PRINFO_PRACT | 7u) << 12 | (CTRLR_PRINFO_PRACT | 7u) << 26 |
		    CTRLR_COPY_STCR;
	sqe.cdw2 = 0x1234;
	sqe.cdw3 = 0x56780000;
	sqe.cdw14 = 60;
	sqe.cdw15 = 0x5a5a | 0xffffu << 16;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, 0);
	memset(md_data(), 0, 1024);
	CU_ASSERT_EQUAL(md_st(NVME_CMD_READ, 60, 7, true, 0x1234, 0x56780000, 60), 0);
	CU_ASSERT_EQUAL(memcmp(md_data(), want, 1024), 0);
	CU_ASSERT_EQUAL(md_be(m + 6, 4), 0x12345678);
	/* The source's tag is wrong: checked with STCR, not without. */
	e[29] ^= 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, NVME_SC_STORAGE_TAG_CHECK);
	sqe.cdw12 &= ~CTRLR_COPY_STCR;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, 0);
	e[29] ^= 1;
	/* Tuples kept (no PRACT): the destination checks them against its tags with STCW (Type 3:
	 * the reference tags, the source's, are not checked). */
	sqe.cdw12 = 1u << 8 | 7u << 12 | 7u << 26 | CTRLR_STC;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, NVME_SC_STORAGE_TAG_CHECK);
	sqe.cdw2 = 0xdead;
	sqe.cdw3 = 0xbeef0000;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, 0);
	/* Format 0h is the 16b Guard's. */
	sqe.cdw12 = 0u << 8 | (CTRLR_PRINFO_PRACT | 7u) << 12 | (CTRLR_PRINFO_PRACT | 7u) << 26;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(md_format(0, 0, 0, 0), 0);
}

CUNIT_SUITE(io_md, md_init, md_fini, {"formats_capacity", test_formats_capacity},
	    {"large_blocks", test_large_blocks}, {"placement", test_placement},
	    {"pi_type1", test_pi_type1}, {"pi_types_64b", test_pi_types_64b},
	    {"copy_pi_16b", test_copy_pi_16b}, {"copy_pi_64b", test_copy_pi_64b},
	    {"storage_tags", test_storage_tags}, {"copy_storage_tags", test_copy_storage_tags})
