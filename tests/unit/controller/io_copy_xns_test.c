/* tests/unit/controller/io_copy_xns_test.c - Copy across namespaces (descriptor formats 2h and 3h)
 * through the loopback transport: Host Behavior Support's CDFE enabling them, sources on another
 * namespace and mixed with the destination's own, a bad or inactive SNSID, formats that do not
 * match, a reservation on the source, Fast Copy Only, protection information on both sides,
 * inserted or stripped between a protected and an unprotected namespace, and a source on a bdev
 * of another block size. Descriptors are laid out by byte offset as NVM Command
 * Set 1.1 Figures "Copy - Source Range Entries Descriptor Format 2h/3h" place them. */
#include <stdlib.h>
#include <string.h>

#include "backend/bdev.h"
#include "controller/nvm/nvm.h"
#include "controller/nvm/resv_state.h"
#include "controller/nvm/pi.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define XN_BLOCKS 4096
static struct lb lb;
static uint64_t data_addr, md_addr, desc_addr;

static int xn_init(void)
{
	struct bdev_zone_block_opts zo = {.zone_capacity = 32, .optimal_open_zones = 1};
	struct bdev *zb;

	if (lb_init(&lb, NULL) || lb_add_malloc_ns(&lb, "xn1", 1, XN_BLOCKS, 512) != 1 ||
	    lb_add_malloc_ns(&lb, "xn2", 2, XN_BLOCKS, 512) != 2 ||
	    lb_add_malloc_ns(&lb, "xn3", 3, XN_BLOCKS / 8, 4096) != 3 ||
	    lb_add_malloc_ns(&lb, "xn4", 4, 64, 512) != 4)
		return -1;
	/* Namespace 5: zoned, zones of 32 blocks over a malloc bdev. */
	if (bdev_malloc_create("xzmem", 256, 512, NULL, NULL) ||
	    bdev_zone_block_create("xzoned", "xzmem", &zo, NULL, &zb) ||
	    ctrlr_ns_add(lb.ctrlr, 5, zb, NULL) != 5)
		return -1;
	lb_pump(&lb);
	if (!(lb_enable(&lb, 32) & 1) || lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	data_addr = lb_alloc(&lb, 64 * 1024);
	md_addr = lb_alloc(&lb, 8192);
	desc_addr = lb_alloc(&lb, 8192);
	return 0;
}

static int xn_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *xn_data(void)
{
	return lb_ptr(&lb, data_addr);
}

static uint8_t *xn_meta(void)
{
	return lb_ptr(&lb, md_addr);
}

/* One Read/Write on namespace nsid: data over an SGL, metadata (if any) at MPTR; PRINFO with
 * ILBRT/LBAT 5A5Ah. The status without the phase. */
static uint16_t xn_rw(uint32_t nsid, uint8_t opc, uint64_t slba, uint32_t nlb, uint8_t prinfo,
		      uint64_t ilbrt)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);

	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = (nlb - 1) | (uint32_t)prinfo << 26;
	sqe.cdw14 = (uint32_t)ilbrt;
	sqe.cdw3 = (uint32_t)(ilbrt >> 32);
	sqe.cdw15 = 0x5a5a | 0xffffu << 16;
	sqe.cdw0.bits.psdt = 1;
	sqe.dptr.sgl.addr = data_addr;
	sqe.dptr.sgl.length = 64 * 1024;
	sqe.dptr.sgl.type = NVME_SGL_TYPE_DATA_BLOCK << 4;
	sqe.mptr = md_addr;
	return lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff;
}

static void xn_fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + i / 509);
}

/* Writes nlb 512-byte blocks of pattern `seed` at slba of nsid (a format without metadata). */
static void xn_pattern(uint32_t nsid, uint64_t slba, uint32_t nlb, uint8_t seed)
{
	xn_fill(xn_data(), nlb * 512u, seed);
	CU_ASSERT_EQUAL(xn_rw(nsid, NVME_CMD_WRITE, slba, nlb, 0, 0), 0);
}

static bool xn_has(uint32_t nsid, uint64_t slba, uint32_t nlb, uint8_t seed)
{
	uint8_t want[8 * 512];

	if (nlb > 8)
		return false;
	xn_fill(want, nlb * 512u, seed);
	memset(xn_data(), 0, nlb * 512u);
	return xn_rw(nsid, NVME_CMD_READ, slba, nlb, 0, 0) == 0 &&
	       memcmp(xn_data(), want, nlb * 512u) == 0;
}

static uint16_t xn_format(uint32_t nsid, uint32_t lbaf, uint32_t pi, uint32_t pil)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_FORMAT_NVM, nsid);

	sqe.cdw10 = lbaf | pi << 5 | pil << 8;
	return lb_cmd(&lb, 0, &sqe, NULL) & 0x7ff;
}

/* Set Features Host Behavior Support: the 512-byte structure with ACRE, ETDAS, LBAFEE, CDFE. */
static uint16_t xn_set_hbs(uint8_t acre, uint8_t etdas, uint8_t lbafee, uint16_t cdfe)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_SET_FEATURES, 0);
	uint8_t *d = lb_ptr(&lb, desc_addr);

	memset(d, 0, 512);
	d[0] = acre;
	d[1] = etdas;
	d[2] = lbafee;
	d[4] = (uint8_t)cdfe;
	d[5] = (uint8_t)(cdfe >> 8);
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = 0x16;
	return lb_cmd(&lb, 0, &sqe, NULL) & 0x7ff;
}

/* Get Features Host Behavior Support with SEL `sel` into the descriptor page; *cdw0 DW0. */
static uint16_t xn_get_hbs(uint32_t sel, uint32_t *cdw0)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_FEATURES, 0);

	memset(lb_ptr(&lb, desc_addr), 0xee, 512);
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.cdw10 = 0x16 | sel << 8;
	return lb_cmd(&lb, 0, &sqe, cdw0) & 0x7ff;
}

struct xn_range {
	uint32_t snsid;
	uint64_t slba;
	uint32_t nlb;
	uint16_t sopt;
	uint64_t eilbrt;
	uint16_t elbat, elbatm;
};

struct xn_copy {
	uint32_t nsid, desfmt;
	uint64_t sdlba;
	uint8_t prinfor, prinfow;
	uint64_t lbrt;
	uint16_t lbat, lbatm;
};

/* Copy of n ranges as c says; the status without the phase, *cdw0 the completion's DW0. */
static uint16_t xn_copy(const struct xn_copy *c, const struct xn_range *r, uint32_t n,
			uint32_t *cdw0)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_COPY, c->nsid);
	uint8_t *d = lb_ptr(&lb, desc_addr);
	size_t sz = c->desfmt & 1 ? 40 : 32;

	memset(d, 0, 8192);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = d + i * sz;
		uint16_t nlb = (uint16_t)(r[i].nlb - 1);

		if (c->desfmt >= 2) {
			memcpy(e, &r[i].snsid, 4);    /* bytes 03:00 SNSID */
			memcpy(e + 22, &r[i].sopt, 2); /* bytes 23:22 SOPT */
		}
		memcpy(e + 8, &r[i].slba, 8);
		memcpy(e + 16, &nlb, 2);
		if (!(c->desfmt & 1)) {
			uint32_t tag = (uint32_t)r[i].eilbrt;

			memcpy(e + 24, &tag, 4);
			memcpy(e + 28, &r[i].elbat, 2);
			memcpy(e + 30, &r[i].elbatm, 2);
		} else {
			for (int b = 0; b < 8; b++) /* bytes 35:26 big-endian, the low 8 of the 10 */
				e[35 - b] = (uint8_t)(r[i].eilbrt >> (8 * b));
			memcpy(e + 36, &r[i].elbat, 2);
			memcpy(e + 38, &r[i].elbatm, 2);
		}
	}
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.dptr.prp.prp2 = desc_addr + 4096;
	sqe.cdw10 = (uint32_t)c->sdlba;
	sqe.cdw11 = (uint32_t)(c->sdlba >> 32);
	sqe.cdw12 = (n - 1) | c->desfmt << 8 | (uint32_t)c->prinfor << 12 |
		    (uint32_t)c->prinfow << 26;
	sqe.cdw14 = (uint32_t)c->lbrt;
	sqe.cdw3 = (uint32_t)(c->lbrt >> 32);
	sqe.cdw15 = c->lbat | (uint32_t)c->lbatm << 16;
	return lb_cmd(&lb, 1, &sqe, cdw0) & 0x7ff;
}

/* ---- enabling ---- */

static void test_enable(void)
{
	const struct xn_range r = {2, 0, 1, 0, 0, 0, 0};
	const struct xn_copy c2 = {.nsid = 1, .desfmt = 2, .sdlba = 100};
	const struct xn_copy c3 = {.nsid = 1, .desfmt = 3, .sdlba = 100};
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	struct nvme_id_ctrl *id = lb_ptr(&lb, data_addr);
	uint8_t *d = lb_ptr(&lb, desc_addr);
	uint32_t cdw0 = 0;

	/* OCFS: formats 0h-3h. */
	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(id->ocfs, 0xf);
	/* Until the host enables them (CDFE), formats 2h/3h are Invalid Field. */
	CU_ASSERT_EQUAL(xn_get_hbs(0, &cdw0), 0);
	CU_ASSERT_EQUAL(d[4] | d[5] << 8, 0);
	CU_ASSERT_EQUAL(d[100], 0);
	CU_ASSERT_EQUAL(xn_copy(&c2, &r, 1, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_copy(&c3, &r, 1, NULL), NVME_SC_INVALID_FIELD);
	/* Host Behavior Support is changeable; CDFE may name only formats 2h and 3h; ETDAS needs
	 * Telemetry Data Area 4 (not offered); ACRE and LBAFEE are 0 or 1. */
	CU_ASSERT_EQUAL(xn_get_hbs(3, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, NVME_FEAT_CAP_CHANGE);
	CU_ASSERT_EQUAL(xn_set_hbs(0, 0, 0, 0x2), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_set_hbs(0, 0, 0, 0x10), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_set_hbs(0, 1, 0, 0xc), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_set_hbs(2, 0, 0, 0xc), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_set_hbs(0, 0, 1, 0x4), 0);
	CU_ASSERT_EQUAL(xn_get_hbs(0, NULL), 0);
	CU_ASSERT_EQUAL(d[2], 1);
	CU_ASSERT_EQUAL(d[4], 0x4);
	CU_ASSERT_EQUAL(xn_get_hbs(1, NULL), 0); /* the default: nothing enabled */
	CU_ASSERT_EQUAL(d[2] | d[4], 0);
	/* Format 2h alone: 3h still refused. On this 16b Guard-or-none format 3h would be
	 * Invalid Format once enabled. */
	CU_ASSERT_EQUAL(xn_copy(&c2, &r, 1, NULL), 0);
	CU_ASSERT_EQUAL(xn_copy(&c3, &r, 1, NULL), NVME_SC_INVALID_FIELD);
	CU_ASSERT_EQUAL(xn_set_hbs(0, 0, 0, 0xc), 0);
	CU_ASSERT_EQUAL(xn_copy(&c3, &r, 1, NULL), NVME_SC_INVALID_FORMAT);
	CU_ASSERT_EQUAL(xn_copy(&c2, &r, 1, NULL), 0);
}

/* ---- data moves ---- */

static void test_copy_from_ns2(void)
{
	const struct xn_range r = {2, 10, 4, 0, 0, 0, 0};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 100};
	uint32_t cdw0 = ~0u;

	CU_ASSERT_EQUAL_FATAL(xn_set_hbs(0, 0, 0, 0xc), 0);
	xn_pattern(1, 10, 4, 11); /* the same LBAs on the destination hold something else */
	xn_pattern(2, 10, 4, 22);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_TRUE(xn_has(1, 100, 4, 22));
	CU_ASSERT_TRUE(xn_has(1, 10, 4, 11));
	CU_ASSERT_TRUE(xn_has(2, 10, 4, 22));
	CU_ASSERT_FALSE(xn_has(2, 100, 4, 22)); /* nothing written on the source namespace */
}

static void test_copy_mixed(void)
{
	/* ns 2, ns 1 itself (SNSID = NSID), ns 2 again: in the descriptors' order. */
	const struct xn_range r[3] = {{2, 20, 3, 0, 0, 0, 0}, {1, 30, 2, 0, 0, 0, 0},
				      {2, 40, 1, 0, 0, 0, 0}};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 200};

	xn_pattern(2, 20, 3, 33);
	xn_pattern(1, 30, 2, 44);
	xn_pattern(2, 40, 1, 55);
	xn_pattern(1, 20, 3, 66);
	CU_ASSERT_EQUAL(xn_copy(&c, r, 3, NULL), 0);
	CU_ASSERT_TRUE(xn_has(1, 200, 3, 33));
	CU_ASSERT_TRUE(xn_has(1, 203, 2, 44));
	CU_ASSERT_TRUE(xn_has(1, 205, 1, 55));
	/* The other way: ns 1's blocks into ns 2. */
	{
		const struct xn_range b = {1, 20, 3, 0, 0, 0, 0};
		const struct xn_copy c2 = {.nsid = 2, .desfmt = 2, .sdlba = 300};

		CU_ASSERT_EQUAL(xn_copy(&c2, &b, 1, NULL), 0);
		CU_ASSERT_TRUE(xn_has(2, 300, 3, 66));
	}
}

/* A chunk larger than the bounce buffer from another namespace. */
static void test_copy_large(void)
{
	const struct xn_range r = {2, 1024, 1000, 0, 0, 0, 0};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 2048};

	for (uint64_t lba = 1024; lba < 2048; lba += 8)
		xn_pattern(2, lba, 8, (uint8_t)lba);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	for (uint64_t lba = 0; lba < 1000; lba += 200)
		CU_ASSERT_TRUE(xn_has(1, 2048 + lba, 8, (uint8_t)(1024 + lba)));
}

/* ---- refusals: nothing written, DW0 0 ---- */

static void test_bad_sources(void)
{
	struct xn_range r[2] = {{2, 50, 2, 0, 0, 0, 0}, {0, 60, 1, 0, 0, 0, 0}};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 500};
	const uint32_t bad[] = {0, 7, CTRLR_MAX_NAMESPACES + 1, NVME_NSID_ALL};
	uint32_t cdw0 = ~0u;

	xn_pattern(1, 500, 3, 77);
	xn_pattern(2, 50, 2, 88);
	/* An SNSID that names no active namespace: Invalid Namespace or Format. */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r[1].snsid = bad[i];
		CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_INVALID_NS);
		CU_ASSERT_EQUAL(cdw0, 0);
	}
	/* Past the source namespace's end: its own size (64 blocks), not the destination's. */
	r[1] = (struct xn_range){4, 63, 2, 0, 0, 0, 0};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_LBA_RANGE);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_TRUE(xn_has(1, 500, 3, 77)); /* refused before anything moved */
	r[1] = (struct xn_range){4, 62, 2, 0, 0, 0, 0};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), 0);
	xn_pattern(1, 500, 3, 77);
	/* A namespace that was attached and no longer is. */
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 4), 0);
	lb_pump(&lb);
	r[1].snsid = 4;
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_INVALID_NS);
	CU_ASSERT_TRUE(xn_has(1, 500, 3, 77));
	r[1] = (struct xn_range){2, XN_BLOCKS - 1, 2, 0, 0, 0, 0};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_LBA_RANGE);
	/* Fast Copy Only: this controller never copies fast. */
	r[1] = (struct xn_range){2, 60, 1, NVME_COPY_SOPT_FCO, 0, 0, 0};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_FAST_COPY_NOT_POSSIBLE);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_TRUE(xn_has(1, 500, 3, 77));
	/* A reservation that keeps this host from reading ns 2: Reservation Conflict, as a Read;
	 * one that only keeps it from writing there does not matter to a source. */
	r[1] = (struct xn_range){2, 60, 1, 0, 0, 0, 0};
	CTRLR_STORE(lb.ctrlr->ns[1]->io_block, CTRLR_RESV_BLOCK_READ | CTRLR_RESV_BLOCK_WRITE);
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_RESV_CONFLICT);
	CU_ASSERT_TRUE(xn_has(1, 500, 3, 77));
	CTRLR_STORE(lb.ctrlr->ns[1]->io_block, CTRLR_RESV_BLOCK_WRITE);
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), 0);
	CU_ASSERT_TRUE(xn_has(1, 500, 2, 88));
	CTRLR_STORE(lb.ctrlr->ns[1]->io_block, 0);
	/* A source block on ns 2 marked uncorrectable fails its range as a read of it would (not
	 * the same LBA of the destination's namespace). */
	{
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_WRITE_UNCOR, 2);

		sqe.cdw10 = 61;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	}
	r[0] = (struct xn_range){1, 61, 1, 0, 0, 0, 0};
	r[1] = (struct xn_range){2, 60, 2, 0, 0, 0, 0};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_UNRECOVERED_READ);
	CU_ASSERT_EQUAL(cdw0, 1);
	xn_pattern(2, 61, 1, 99);
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), 0);
	CU_ASSERT_TRUE(xn_has(1, 502, 1, 99));
	/* Every command left its SQ's namespace epoch (a grace period would wait for it). */
	CU_ASSERT_EQUAL(lb.sqs[1]->ns_users[0] + lb.sqs[1]->ns_users[1], 0);
}

static void test_incompatible(void)
{
	const struct xn_range r = {2, 8, 1, 0, 8, 0, 0};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 600};
	uint32_t cdw0 = ~0u;

	/* 512+8 against 512: Incompatible Namespace or Format. */
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 1, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, &cdw0), NVME_SC_INCOMPATIBLE_NS);
	CU_ASSERT_EQUAL(cdw0, 0);
	/* Both 512+8: one without protection, one Type 1. */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 1, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 1, 1, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	/* Both Type 1, the tuple first in one and last in the other. */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 1, 1, 1), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	/* Type 1 against Type 3. */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 1, 3, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	/* 512+16 with the 16b Guard against 512+16 with the 64b Guard (formats 2 and 3). */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 2, 1, 0), 0);
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 3, 1, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	CU_ASSERT_EQUAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_format(2, 0, 0, 0), 0);
}

/* ---- protection information ---- */

/* Format 3h on 64b Guard Type 1 namespaces: ns 2's blocks checked against each range's tags
 * (48-bit EILBRT), regenerated for ns 1 with PRACT; a damaged source block fails its range. */
static void test_pi_3h(void)
{
	struct xn_range r[2] = {{2, 0x10, 2, 0, 0x10, 0x5a5a, 0xffff},
				{1, 0x30, 1, 0, 0x30, 0x5a5a, 0xffff}};
	struct xn_copy c = {.nsid = 1, .desfmt = 3, .sdlba = 0x50, .lbrt = 0x50, .lbat = 0x4444,
			    .lbatm = 0xffff};
	const uint8_t all = CTRLR_PRINFO_PRACT | 7;
	uint8_t want[3 * 4096];
	uint32_t cdw0 = ~0u;

	CU_ASSERT_EQUAL_FATAL(xn_format(1, 11, 1, 0), 0); /* 4096+64, 64b Guard, Type 1 */
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 11, 1, 0), 0);
	xn_fill(want, sizeof(want), 123);
	memcpy(xn_data(), want, 2 * 4096);
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 0x10, 2, CTRLR_PRINFO_PRACT, 0x10), 0);
	memcpy(xn_data(), want + 2 * 4096, 4096);
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_WRITE, 0x30, 1, CTRLR_PRINFO_PRACT, 0x30), 0);
	/* Format 2h is for the 16b Guard. */
	c.desfmt = 2;
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, NULL), NVME_SC_INVALID_FORMAT);
	c.desfmt = 3;
	c.prinfor = all;
	c.prinfow = all;
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 0);
	memset(xn_data(), 0, 3 * 4096);
	memset(xn_meta(), 0, 3 * 64);
	{
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_READ, 1);

		/* Every check against the destination's tags: LBAT 4444h, reference 50h.. */
		sqe.cdw10 = 0x50;
		sqe.cdw12 = 2 | 7u << 26;
		sqe.cdw14 = 0x50;
		sqe.cdw15 = 0x4444 | 0xffffu << 16;
		sqe.cdw0.bits.psdt = 1;
		sqe.dptr.sgl.addr = data_addr;
		sqe.dptr.sgl.length = 64 * 1024;
		sqe.dptr.sgl.type = NVME_SGL_TYPE_DATA_BLOCK << 4;
		sqe.mptr = md_addr;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL) & 0x7ff, 0);
	}
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, sizeof(want)), 0);
	for (int i = 0; i < 3; i++) {
		const uint8_t *md = xn_meta() + 64 * i, *t = md + 48;
		uint64_t crc = ctrlr_crc64_nvme(ctrlr_crc64_nvme(0, xn_data() + 4096 * i, 4096),
						md, 48), g = 0;

		for (int b = 0; b < 8; b++)
			g = g << 8 | t[b];
		CU_ASSERT_EQUAL(g, crc);
		CU_ASSERT_EQUAL(t[8] << 8 | t[9], 0x4444);
	}
	/* The source's application tag checked under ELBATM, per range. */
	r[0].elbat = 0x5a5b;
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_APPTAG_CHECK);
	CU_ASSERT_EQUAL(cdw0, 0);
	r[0].elbat = 0x5a5a;
	/* A ns 2 block whose data no longer matches its guard (written unchecked): range 0 of
	 * the copy fails, with the guard check. */
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_READ, 0x10, 2, 0, 0), 0);
	xn_data()[4096 + 5] ^= 1;
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 0x10, 2, 0, 0), 0);
	r[1] = (struct xn_range){2, 0x10, 2, 0, 0x10, 0x5a5a, 0xffff};
	r[0] = (struct xn_range){1, 0x30, 1, 0, 0x30, 0x5a5a, 0xffff};
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, &cdw0), NVME_SC_GUARD_CHECK);
	CU_ASSERT_EQUAL(cdw0, 1);
	/* Without the guard check the damaged block moves with a new guard (PRACT). */
	c.prinfor = CTRLR_PRINFO_PRACT | CTRLR_PRCHK_REF;
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, NULL), 0);
	/* 64b Guard Type 1 against Type 2: incompatible. */
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 11, 2, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, r, 2, NULL), NVME_SC_INCOMPATIBLE_NS);
	CU_ASSERT_EQUAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_format(2, 0, 0, 0), 0);
}

/* Format 2h on 16b Guard Type 1 namespaces with PRACT: tuples regenerated for the destination. */
static void test_pi_2h(void)
{
	const struct xn_range r = {2, 40, 2, 0, 40, 0x5a5a, 0xffff};
	struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 70, .lbrt = 70, .lbat = 0x1234,
			    .lbatm = 0xffff, .prinfor = CTRLR_PRINFO_PRACT | 7,
			    .prinfow = CTRLR_PRINFO_PRACT | 7};
	uint8_t want[1024];

	CU_ASSERT_EQUAL_FATAL(xn_format(1, 1, 1, 0), 0); /* 512+8, Type 1 */
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 1, 1, 0), 0);
	xn_fill(want, sizeof(want), 9);
	memcpy(xn_data(), want, sizeof(want));
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 40, 2, CTRLR_PRINFO_PRACT, 40), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	memset(xn_data(), 0, sizeof(want));
	memset(xn_meta(), 0, 16);
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 70, 2, CTRLR_PRCHK_GUARD | CTRLR_PRCHK_REF, 70), 0);
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, sizeof(want)), 0);
	for (int i = 0; i < 2; i++) {
		const uint8_t *t = xn_meta() + 8 * i;

		CU_ASSERT_EQUAL(t[0] << 8 | t[1], ctrlr_crc16_t10dif(0, want + 512 * i, 512));
		CU_ASSERT_EQUAL(t[2] << 8 | t[3], 0x1234);
		CU_ASSERT_EQUAL(t[7], 70 + i);
	}
	/* Without PRACT the source tuples are kept: the destination's reference check fails. */
	c.prinfor = 7;
	c.prinfow = 7;
	c.lbat = 0x5a5a;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_REFTAG_CHECK);
	CU_ASSERT_EQUAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_format(2, 0, 0, 0), 0);
}

/* Between a namespace without metadata and one whose metadata is just the tuple: PRINFOW.PRACT
 * generates the destination's tuples (insert), PRINFOR.PRACT checks then drops the source's
 * (strip); without it the formats are incompatible. */
static void test_pi_convert(void)
{
	struct xn_range r = {2, 50, 2, 0, 0, 0, 0};
	struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 80, .lbrt = 80, .lbat = 0x5a5a,
			    .lbatm = 0xffff, .prinfow = CTRLR_PRINFO_PRACT};
	uint8_t want[2 * 4096];

	/* Insert: ns 2 512, ns 1 512+8 Type 1. */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 1, 1, 0), 0);
	xn_pattern(2, 50, 2, 71);
	xn_fill(want, 1024, 71);
	c.prinfow = 0;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	c.prinfow = CTRLR_PRINFO_PRACT;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	memset(xn_data(), 0, 1024);
	memset(xn_meta(), 0, 16);
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 80, 2, 7, 80), 0);
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, 1024), 0);
	for (int i = 0; i < 2; i++) {
		const uint8_t *t = xn_meta() + 8 * i;

		CU_ASSERT_EQUAL(t[0] << 8 | t[1], ctrlr_crc16_t10dif(0, want + 512 * i, 512));
		CU_ASSERT_EQUAL(t[7], 80 + i);
	}
	/* A range of ns 1 itself keeps its format: there PRACT must agree (Invalid Field). */
	{
		const struct xn_range two[2] = {{1, 80, 2, 0, 80, 0x5a5a, 0xffff},
						{2, 50, 2, 0, 0, 0, 0}};

		c.sdlba = c.lbrt = 84;
		CU_ASSERT_EQUAL(xn_copy(&c, two, 2, NULL), NVME_SC_INVALID_FIELD);
		c.prinfor = CTRLR_PRINFO_PRACT | 7;
		CU_ASSERT_EQUAL(xn_copy(&c, two, 2, NULL), 0);
		CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 84, 4, 7, 84), 0);
		CU_ASSERT_EQUAL(memcmp(xn_data() + 1024, want, 1024), 0);
	}

	/* Strip: ns 2 512+8 Type 1, ns 1 512. */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 1, 1, 0), 0);
	xn_fill(xn_data(), 1024, 72);
	xn_fill(want, 1024, 72);
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 60, 2, CTRLR_PRINFO_PRACT, 60), 0);
	r = (struct xn_range){2, 60, 2, 0, 60, 0x5a5a, 0xffff};
	c = (struct xn_copy){.nsid = 1, .desfmt = 2, .sdlba = 90, .prinfor = 7};
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INCOMPATIBLE_NS);
	c.prinfor = CTRLR_PRINFO_PRACT | 7;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	CU_ASSERT_TRUE(xn_has(1, 90, 2, 72));
	/* The source's tuples are checked before they go: a wrong EILBRT (Type 1: refused
	 * up front), then a block whose data no longer matches its guard. */
	r.eilbrt = 61;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_INVALID_PI);
	r.eilbrt = 60;
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_READ, 60, 2, 0, 0), 0);
	xn_data()[600] ^= 1;
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 60, 2, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), NVME_SC_GUARD_CHECK);
	c.prinfor = CTRLR_PRINFO_PRACT | CTRLR_PRCHK_REF;
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);

	/* Insert with the 64b Guard (format 3h): ns 2 4096, ns 1 4096+16 Type 1. */
	CU_ASSERT_EQUAL_FATAL(xn_format(2, 6, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 9, 1, 0), 0);
	xn_fill(want, sizeof(want), 73);
	memcpy(xn_data(), want, sizeof(want));
	CU_ASSERT_EQUAL(xn_rw(2, NVME_CMD_WRITE, 3, 2, 0, 0), 0);
	r = (struct xn_range){2, 3, 2, 0, 0, 0, 0};
	c = (struct xn_copy){.nsid = 1, .desfmt = 3, .sdlba = 7, .lbrt = 7, .lbat = 0x5a5a,
			     .lbatm = 0xffff, .prinfow = CTRLR_PRINFO_PRACT};
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	memset(xn_data(), 0, sizeof(want));
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 7, 2, 7, 7), 0);
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, sizeof(want)), 0);
	CU_ASSERT_EQUAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_format(2, 0, 0, 0), 0);
}

/* A source on a 4096-byte bdev (4096+8: two bdev blocks a block) copied to a destination on a
 * 512-byte bdev (the same format: nine bdev blocks a block): data and metadata arrive intact. */
static void test_other_stride(void)
{
	const struct xn_range r = {3, 5, 3, 0, 0, 0, 0};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 12};
	uint8_t want[3 * 4096], wmd[24];

	CU_ASSERT_EQUAL_FATAL(xn_format(3, 1, 0, 0), 0); /* 4096+8 on the 4096-byte bdev */
	CU_ASSERT_EQUAL_FATAL(xn_format(1, 7, 0, 0), 0); /* 4096+8 on the 512-byte bdev */
	xn_fill(want, sizeof(want), 201);
	xn_fill(wmd, sizeof(wmd), 17);
	memcpy(xn_data(), want, sizeof(want));
	memcpy(xn_meta(), wmd, sizeof(wmd));
	CU_ASSERT_EQUAL(xn_rw(3, NVME_CMD_WRITE, 5, 3, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	memset(xn_data(), 0, sizeof(want));
	memset(xn_meta(), 0, sizeof(wmd));
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 12, 3, 0, 0), 0);
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, sizeof(want)), 0);
	CU_ASSERT_EQUAL(memcmp(xn_meta(), wmd, sizeof(wmd)), 0);
	/* And back the other way. */
	{
		const struct xn_range b = {1, 12, 3, 0, 0, 0, 0};
		const struct xn_copy c3 = {.nsid = 3, .desfmt = 2, .sdlba = 100};

		CU_ASSERT_EQUAL(xn_copy(&c3, &b, 1, NULL), 0);
		memset(xn_data(), 0, sizeof(want));
		memset(xn_meta(), 0, sizeof(wmd));
		CU_ASSERT_EQUAL(xn_rw(3, NVME_CMD_READ, 100, 3, 0, 0), 0);
		CU_ASSERT_EQUAL(memcmp(xn_data(), want, sizeof(want)), 0);
		CU_ASSERT_EQUAL(memcmp(xn_meta(), wmd, sizeof(wmd)), 0);
	}
	CU_ASSERT_EQUAL(xn_format(1, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(xn_format(3, 0, 0, 0), 0);
}

/* A zoned source namespace: its blocks at or past the write pointer read as zeroes in the copy,
 * whatever its bdev still holds there. */
static void xn_raw_cb(struct bdev_io *io, int status, void *arg)
{
	*(int *)arg = status == 0 ? 1 : -1;
}

static void test_zoned_source(void)
{
	const struct xn_range r = {5, 0, 8, 0, 0, 0, 0};
	const struct xn_copy c = {.nsid = 1, .desfmt = 2, .sdlba = 700};
	struct bdev *b = bdev_lookup("xzmem");
	struct bdev_channel *ch = NULL;
	struct bdev_io *io = calloc(1, bdev_io_size(b));
	uint8_t want[8 * 512];
	struct iovec iov = {want, sizeof(want)};
	int done = 0;

	/* Stale data on the bdev under zone 0 (as a reset zone leaves it), behind the zone. */
	CU_ASSERT_FATAL(io != NULL);
	memset(want, 0xa5, sizeof(want));
	CU_ASSERT_EQUAL_FATAL(bdev_channel_create(b, &ch), 0);
	io->type = BDEV_IO_WRITE;
	io->num_blocks = 8;
	io->iov = &iov;
	io->iovcnt = 1;
	io->cb = xn_raw_cb;
	io->cb_arg = &done;
	bdev_submit(ch, io);
	while (!done)
		bdev_channel_poll(ch);
	CU_ASSERT_EQUAL(done, 1);
	bdev_channel_destroy(ch);
	free(io);
	/* The zone's first 4 blocks written: the write pointer at 4. */
	xn_pattern(5, 0, 4, 91);
	xn_pattern(1, 700, 8, 92);
	CU_ASSERT_EQUAL(xn_copy(&c, &r, 1, NULL), 0);
	CU_ASSERT_TRUE(xn_has(1, 700, 4, 91));
	memset(want, 0, sizeof(want));
	CU_ASSERT_EQUAL(xn_rw(1, NVME_CMD_READ, 704, 4, 0, 0), 0);
	CU_ASSERT_EQUAL(memcmp(xn_data(), want, 4 * 512), 0);
}

/* A controller reset clears CDFE (Host Behavior Support does not persist across resets). */
static void test_reset_clears(void)
{
	uint8_t *d = lb_ptr(&lb, desc_addr);

	CU_ASSERT_EQUAL(xn_set_hbs(0, 0, 0, 0xc), 0);
	CU_ASSERT_EQUAL_FATAL(lb_disable(&lb) & 1, 0);
	CU_ASSERT_EQUAL_FATAL(lb_enable(&lb, 32) & 1, 1);
	CU_ASSERT_EQUAL(xn_get_hbs(0, NULL), 0);
	CU_ASSERT_EQUAL(d[4], 0);
}

CUNIT_SUITE(io_copy_xns, xn_init, xn_fini, {"enable", test_enable},
	    {"copy_from_ns2", test_copy_from_ns2}, {"copy_mixed", test_copy_mixed},
	    {"copy_large", test_copy_large}, {"bad_sources", test_bad_sources},
	    {"incompatible", test_incompatible}, {"pi_3h", test_pi_3h}, {"pi_2h", test_pi_2h},
	    {"pi_convert", test_pi_convert}, {"zoned_source", test_zoned_source},
	    {"other_stride", test_other_stride}, {"reset_clears", test_reset_clears})
