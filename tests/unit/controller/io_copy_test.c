/* tests/unit/controller/io_copy_test.c - Write Uncorrectable, Copy and Get LBA Status through the
 * loopback transport against a malloc bdev, and the uncorrectable-range set on its own. */
#include <string.h>

#include "controller/nvm/nvm.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define CP_BLOCKS 4096
static struct lb lb;
static uint64_t buf_addr, desc_addr; /* 64 KiB data buffer, one page of copy descriptors */

static int cp_init(void)
{
	if (lb_init(&lb, NULL) || lb_add_malloc_ns(&lb, "cp0", 1, CP_BLOCKS, 512) != 1)
		return -1;
	if (!(lb_enable(&lb, 32) & 1) || lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	buf_addr = lb_alloc(&lb, 64 * 1024);
	desc_addr = lb_alloc(&lb, 8192);
	return 0;
}

static int cp_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *cp_buf(void)
{
	return lb_ptr(&lb, buf_addr);
}

/* Read/Write/Compare/Verify/Write Uncorrectable/Write Zeroes of nlb (<= 8) blocks at slba. */
static uint16_t cp_io(uint8_t opc, uint64_t slba, uint32_t nlb)
{
	struct nvme_sqe sqe = lb_sqe(opc, 1);

	sqe.dptr.prp.prp1 = buf_addr;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = nlb - 1;
	return lb_cmd(&lb, 1, &sqe, NULL);
}

static void cp_pattern(uint64_t slba, uint32_t nlb, uint8_t seed)
{
	for (uint32_t i = 0; i < nlb * 512; i++)
		cp_buf()[i] = (uint8_t)(seed + i / 512 * 3 + i % 251);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE, slba, nlb), 0);
}

static bool cp_has(uint64_t slba, uint32_t nlb, uint8_t seed)
{
	memset(cp_buf(), 0, nlb * 512);
	if (cp_io(NVME_CMD_READ, slba, nlb))
		return false;
	for (uint32_t i = 0; i < nlb * 512; i++)
		if (cp_buf()[i] != (uint8_t)(seed + i / 512 * 3 + i % 251))
			return false;
	return true;
}

struct cp_range {
	uint64_t slba;
	uint32_t nlb;
};

/* Copy of n ranges (descriptor format `fmt`) to sdlba; *cdw0 gets the completion's DW0. */
static uint16_t cp_copy(uint64_t sdlba, const struct cp_range *r, uint32_t n, uint32_t fmt,
			uint32_t *cdw0)
{
	struct nvme_copy_range_fmt0 *d = lb_ptr(&lb, desc_addr);
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_COPY, 1);

	memset(d, 0, 8192);
	for (uint32_t i = 0; i < n && i < 256; i++) {
		d[i].slba = r[i].slba;
		d[i].nlb = (uint16_t)(r[i].nlb - 1);
	}
	sqe.dptr.prp.prp1 = desc_addr;
	sqe.dptr.prp.prp2 = desc_addr + 4096;
	sqe.cdw10 = (uint32_t)sdlba;
	sqe.cdw11 = (uint32_t)(sdlba >> 32);
	sqe.cdw12 = ((n - 1) & 0xff) | fmt << 8;
	return lb_cmd(&lb, 1, &sqe, cdw0);
}

/* ---- the range set ---- */

static void test_uncor_set(void)
{
	struct ctrlr_uncor u;
	struct ctrlr_lba_range r[8];
	uint64_t first;
	bool more;

	CU_ASSERT_EQUAL_FATAL(ctrlr_uncor_init(&u), 0);
	CU_ASSERT_FALSE(ctrlr_uncor_overlaps(&u, 0, 1000, NULL));
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 10, 5), 0);  /* [10,15) */
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 20, 5), 0);  /* [20,25) */
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 15, 5), 0);  /* touches both: one [10,25) */
	CU_ASSERT_EQUAL(ctrlr_uncor_count(&u), 1);
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 100, 1), 0); /* [10,25) [100,101) */
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 0, 2), 0);	 /* [0,2) [10,25) [100,101) */
	CU_ASSERT_EQUAL(ctrlr_uncor_count(&u), 3);
	CU_ASSERT_TRUE(ctrlr_uncor_overlaps(&u, 5, 10, &first));
	CU_ASSERT_EQUAL(first, 10);
	CU_ASSERT_TRUE(ctrlr_uncor_overlaps(&u, 12, 1, &first));
	CU_ASSERT_EQUAL(first, 12);
	CU_ASSERT_FALSE(ctrlr_uncor_overlaps(&u, 25, 75, NULL));
	/* A hole in the middle splits; clipping at both ends. */
	CU_ASSERT_EQUAL(ctrlr_uncor_clear(&u, 15, 2), 0); /* [0,2) [10,15) [17,25) [100,101) */
	CU_ASSERT_EQUAL(ctrlr_uncor_count(&u), 4);
	CU_ASSERT_EQUAL(ctrlr_uncor_clear(&u, 1, 10), 0); /* [0,1) [11,15) [17,25) [100,101) */
	CU_ASSERT_EQUAL(ctrlr_uncor_get(&u, 0, 0, r, 8, &more, NULL), 4);
	CU_ASSERT_FALSE(more);
	CU_ASSERT_EQUAL(r[0].slba, 0);
	CU_ASSERT_EQUAL(r[0].nlb, 1);
	CU_ASSERT_EQUAL(r[1].slba, 11);
	CU_ASSERT_EQUAL(r[1].nlb, 4);
	CU_ASSERT_EQUAL(r[2].slba, 17);
	CU_ASSERT_EQUAL(r[2].nlb, 8);
	CU_ASSERT_EQUAL(r[3].slba, 100);
	/* A window clips, and says when there is more. */
	CU_ASSERT_EQUAL(ctrlr_uncor_get(&u, 13, 6, r, 1, &more, NULL), 1);
	CU_ASSERT_TRUE(more);
	CU_ASSERT_EQUAL(r[0].slba, 13);
	CU_ASSERT_EQUAL(r[0].nlb, 2);
	CU_ASSERT_EQUAL(ctrlr_uncor_clear(&u, 0, 1000), 0);
	CU_ASSERT_EQUAL(ctrlr_uncor_count(&u), 0);
	/* The limit: disjoint ranges past CTRLR_UNCOR_MAX_RANGES are refused. */
	for (uint32_t i = 0; i < CTRLR_UNCOR_MAX_RANGES; i++)
		CU_ASSERT_EQUAL_FATAL(ctrlr_uncor_add(&u, i * 2ull, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 1ull << 40, 1), -ENOSPC);
	/* ...but merging into existing ones is not a new range. */
	CU_ASSERT_EQUAL(ctrlr_uncor_add(&u, 1, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_uncor_count(&u), CTRLR_UNCOR_MAX_RANGES - 1);
	ctrlr_uncor_fini(&u);
}

/* ---- Write Uncorrectable ---- */

static void test_write_uncor(void)
{
	cp_pattern(64, 8, 1);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, 66, 2), 0);
	/* Reads, Compare and Verify touching the marked blocks fail; around them they work. */
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 64, 8), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 67, 1), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_VERIFY, 60, 8), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_COMPARE, 66, 1), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 64, 2), 0);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 68, 4), 0);
	/* Writing one of them makes that one readable again. */
	cp_pattern(66, 1, 9);
	CU_ASSERT_TRUE(cp_has(66, 1, 9));
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 67, 1), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	/* Write Zeroes clears too. */
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_ZEROES, 67, 1), 0);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 64, 8), 0);
	/* Out of range is refused before marking anything. */
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, CP_BLOCKS - 1, 2), NVME_SC_LBA_RANGE | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, CP_BLOCKS - 1, 1), 0);
}

/* ---- Copy ---- */

static void test_copy_ranges(void)
{
	const struct cp_range r[3] = { { 100, 3 }, { 200, 1 }, { 300, 4 } };
	uint32_t cdw0 = ~0u;

	cp_pattern(100, 3, 20);
	cp_pattern(200, 1, 40);
	cp_pattern(300, 4, 60);
	CU_ASSERT_EQUAL(cp_copy(1000, r, 3, 0, &cdw0), 0);
	CU_ASSERT_EQUAL(cdw0, 0);
	CU_ASSERT_TRUE(cp_has(1000, 3, 20));
	CU_ASSERT_TRUE(cp_has(1003, 1, 40));
	CU_ASSERT_TRUE(cp_has(1004, 4, 60));
	/* The sources are untouched. */
	CU_ASSERT_TRUE(cp_has(300, 4, 60));
}

/* A range larger than the bounce buffer goes in several chunks. */
static void test_copy_large(void)
{
	const struct cp_range r[1] = { { 0, 1024 } }; /* 512 KiB: four chunks */
	uint8_t *b = cp_buf();

	for (uint64_t lba = 0; lba < 1024; lba += 128) {
		for (uint32_t i = 0; i < 128 * 512 / 4; i++)
			((uint32_t *)b)[i] = (uint32_t)(lba * 1000 + i);
		struct nvme_sqe sqe = lb_sqe(NVME_CMD_WRITE, 1);
		uint64_t *list = lb_ptr(&lb, desc_addr);

		sqe.dptr.prp.prp1 = buf_addr;
		sqe.dptr.prp.prp2 = desc_addr;
		for (int p = 1; p < 16; p++)
			list[p - 1] = buf_addr + p * 4096ull;
		sqe.cdw10 = (uint32_t)lba;
		sqe.cdw12 = 127;
		CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	}
	CU_ASSERT_EQUAL(cp_copy(2048, r, 1, 0, NULL), 0);
	for (uint64_t lba = 0; lba < 1024; lba += 8) {
		CU_ASSERT_EQUAL_FATAL(cp_io(NVME_CMD_READ, 2048 + lba, 8), 0);
		uint64_t base = lba / 128 * 128;
		uint32_t first = (uint32_t)((lba - base) * 512 / 4);

		CU_ASSERT_EQUAL_FATAL(((uint32_t *)b)[0], (uint32_t)(base * 1000 + first));
		CU_ASSERT_EQUAL_FATAL(((uint32_t *)b)[1023], (uint32_t)(base * 1000 + first + 1023));
	}
}

static void test_copy_errors(void)
{
	struct cp_range r[130];
	uint32_t cdw0 = ~0u;

	for (int i = 0; i < 130; i++)
		r[i] = (struct cp_range){ (uint64_t)i, 1 };
	/* Format 1h is for the 64b Guard formats (Invalid Format here, no protection); the
	 * cross-namespace formats 2h/3h are refused until Host Behavior Support enables them
	 * (io_copy_xns_test). */
	CU_ASSERT_EQUAL(cp_copy(500, r, 1, 1, NULL), NVME_SC_INVALID_FORMAT | NVME_DNR);
	CU_ASSERT_EQUAL(cp_copy(500, r, 1, 2, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(cp_copy(500, r, 1, 3, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* MSRC: 128 ranges at most. */
	CU_ASSERT_EQUAL(cp_copy(500, r, 128, 0, NULL), 0);
	CU_ASSERT_EQUAL(cp_copy(500, r, 129, 0, NULL), NVME_SC_CMD_SIZE_LIMIT | NVME_DNR);
	/* MSSRL: 65535 blocks per range (the 16-bit NLB can ask for 65536). */
	r[0] = (struct cp_range){ 0, 65536 };
	CU_ASSERT_EQUAL(cp_copy(500, r, 1, 0, NULL), NVME_SC_CMD_SIZE_LIMIT | NVME_DNR);
	/* A source or the destination past the end; nothing was written, so DW0 is 0. */
	r[0] = (struct cp_range){ 10, 1 };
	r[1] = (struct cp_range){ CP_BLOCKS - 1, 2 };
	CU_ASSERT_EQUAL(cp_copy(500, r, 2, 0, &cdw0), NVME_SC_LBA_RANGE | NVME_DNR);
	CU_ASSERT_EQUAL(cdw0, 0);
	r[1] = (struct cp_range){ 20, 2 };
	CU_ASSERT_EQUAL(cp_copy(CP_BLOCKS - 2, r, 2, 0, NULL), NVME_SC_LBA_RANGE | NVME_DNR);
	/* An uncorrectable source block: ranges before it are copied, DW0 names the failed one. */
	cp_pattern(400, 2, 77);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, 411, 1), 0);
	r[0] = (struct cp_range){ 400, 2 };
	r[1] = (struct cp_range){ 410, 2 };
	CU_ASSERT_EQUAL(cp_copy(3000, r, 2, 0, &cdw0), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cdw0, 1);
	CU_ASSERT_TRUE(cp_has(3000, 2, 77));
	/* A copy onto marked blocks makes them readable. */
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, 3500, 4), 0);
	r[0] = (struct cp_range){ 400, 2 };
	CU_ASSERT_EQUAL(cp_copy(3501, r, 1, 0, NULL), 0);
	CU_ASSERT_TRUE(cp_has(3501, 2, 77));
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 3500, 1), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_READ, 3503, 1), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_ZEROES, 3500, 4), 0);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_ZEROES, 411, 1), 0);
}

/* ---- Get LBA Status, the LBA Status Information log, Identify ---- */

static uint16_t cp_get_lba_status(uint64_t slba, uint32_t mndw, uint16_t rl, uint8_t atype)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LBA_STATUS, 1);

	memset(cp_buf(), 0xee, 8192);
	sqe.dptr.prp.prp1 = buf_addr;
	sqe.dptr.prp.prp2 = buf_addr + 4096;
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = mndw;
	sqe.cdw13 = rl | (uint32_t)atype << 24;
	return lb_cmd(&lb, 0, &sqe, NULL);
}

static void test_get_lba_status(void)
{
	struct nvme_lba_status_hdr *h = (void *)cp_buf();
	struct nvme_lba_status_desc *d = (void *)(cp_buf() + sizeof(*h));
	struct nvme_sqe sqe;
	struct nvme_id_ctrl *idc = (void *)cp_buf();
	struct nvme_id_ns *idn = (void *)cp_buf();

	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, 700, 3), 0);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_UNCOR, 800, 1), 0);
	CU_ASSERT_EQUAL(cp_get_lba_status(0, 1023, 0, NVME_LBAS_ATYPE_TRACKED), 0);
	CU_ASSERT_EQUAL(h->nlsd, 2);
	CU_ASSERT_EQUAL(h->cmpc, NVME_LBAS_CMPC_COMPLETE);
	CU_ASSERT_EQUAL(d[0].dslba, 700);
	CU_ASSERT_EQUAL(d[0].nlb, 3);
	CU_ASSERT_EQUAL(d[1].dslba, 800);
	CU_ASSERT_EQUAL(d[1].nlb, 1);
	/* Room for one descriptor only (MNDW 5: 24 bytes): more to come. */
	CU_ASSERT_EQUAL(cp_get_lba_status(0, 5, 0, NVME_LBAS_ATYPE_UNTRACKED), 0);
	CU_ASSERT_EQUAL(h->nlsd, 1);
	CU_ASSERT_EQUAL(h->cmpc, NVME_LBAS_CMPC_MORE);
	/* A window: SLBA 701, 50 blocks. */
	CU_ASSERT_EQUAL(cp_get_lba_status(701, 1023, 50, NVME_LBAS_ATYPE_TRACKED), 0);
	CU_ASSERT_EQUAL(h->nlsd, 1);
	CU_ASSERT_EQUAL(d[0].dslba, 701);
	CU_ASSERT_EQUAL(d[0].nlb, 2);
	CU_ASSERT_EQUAL(cp_get_lba_status(0, 1023, 0, 0x02), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(cp_get_lba_status(CP_BLOCKS, 1023, 0, NVME_LBAS_ATYPE_TRACKED),
			NVME_SC_LBA_RANGE | NVME_DNR);

	/* The log: one element for namespace 1 spanning [700, 801). */
	sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);
	sqe.dptr.prp.prp1 = buf_addr;
	sqe.cdw10 = NVME_LOG_LBA_STATUS | (1023u << 16);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	struct nvme_lba_status_log_hdr *lh = (void *)cp_buf();
	struct nvme_lba_status_ns_elem *e = (void *)(cp_buf() + 16);
	struct nvme_lba_range_desc *rd = (void *)(cp_buf() + 32);

	CU_ASSERT_EQUAL(lh->nlslne, 1);
	CU_ASSERT_EQUAL(lh->estulb, 4);
	CU_ASSERT_EQUAL(lh->lslplen, 48);
	CU_ASSERT_EQUAL(e->neid, 1);
	CU_ASSERT_EQUAL(e->nlrd, 1);
	CU_ASSERT_EQUAL(rd->rslba, 700);
	CU_ASSERT_EQUAL(rd->rnlb, 101);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_ZEROES, 700, 3), 0);
	CU_ASSERT_EQUAL(cp_io(NVME_CMD_WRITE_ZEROES, 800, 1), 0);
	CU_ASSERT_EQUAL(cp_get_lba_status(0, 1023, 0, NVME_LBAS_ATYPE_TRACKED), 0);
	CU_ASSERT_EQUAL(h->nlsd, 0);

	/* Identify says exactly this. */
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	sqe.dptr.prp.prp1 = buf_addr;
	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(idc->oncs & NVME_ONCS_WRITE_UNCOR);
	CU_ASSERT_TRUE(idc->oncs & NVME_ONCS_COPY);
	CU_ASSERT_EQUAL(idc->ocfs, NVME_OCFS_FORMAT0 | NVME_OCFS_FORMAT1 | NVME_OCFS_FORMAT2 |
					   NVME_OCFS_FORMAT3);
	CU_ASSERT_TRUE(idc->oacs & NVME_OACS_GET_LBA_STATUS);
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 1);
	sqe.dptr.prp.prp1 = buf_addr;
	sqe.cdw10 = NVME_CNS_NS;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(idn->msrc, 127);
	CU_ASSERT_EQUAL(idn->mssrl, 65535);
	CU_ASSERT_EQUAL(idn->mcl, 1u << 20);
}

CUNIT_SUITE(io_copy, cp_init, cp_fini, {"uncor_set", test_uncor_set},
	    {"write_uncor", test_write_uncor}, {"copy_ranges", test_copy_ranges},
	    {"copy_large", test_copy_large}, {"copy_errors", test_copy_errors},
	    {"get_lba_status", test_get_lba_status})
