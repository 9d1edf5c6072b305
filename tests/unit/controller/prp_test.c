/* tests/unit/controller/prp_test.c - PRP walking: single page, two pages, lists crossing pages,
 * list chaining, bad offsets, unmapped pages and lists, iovec limits, page sizes. */
#include <string.h>

#include "controller/core/core.h"
#include "tests/unit/cunit_runner.h"

#define PT_BASE 0x10000000ull
#define PT_PAGES 64
#define PT_PS 4096u

static uint8_t pt_mem[PT_PAGES * PT_PS] __attribute__((aligned(4096)));
static uint64_t pt_hole = ~0ull; /* a page address the map refuses */
/* Where one DMA window ends and the next begins: no mapping crosses it. */
static uint64_t pt_split = ~0ull;
static unsigned int pt_calls; /* map calls */

static void *pt_map(void *mctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	pt_calls++;
	if (addr < PT_BASE || addr + len > PT_BASE + sizeof(pt_mem) || len == 0)
		return NULL;
	if (pt_hole != ~0ull && addr < pt_hole + PT_PS && addr + len > pt_hole)
		return NULL;
	if (pt_split != ~0ull && addr < pt_split && addr + len > pt_split)
		return NULL;
	return pt_mem + (addr - PT_BASE);
}

static uint64_t pt_page(unsigned int n)
{
	return PT_BASE + (uint64_t)n * PT_PS;
}

static uint64_t *pt_list(unsigned int page)
{
	return (uint64_t *)(pt_mem + (uint64_t)page * PT_PS);
}

static int pt_setup(void)
{
	memset(pt_mem, 0, sizeof(pt_mem));
	pt_hole = ~0ull;
	pt_split = ~0ull;
	pt_calls = 0;
	return 0;
}

static void test_single_page_with_offset(void)
{
	struct iovec iov[8];
	int n = -1;

	pt_setup();
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(3) + 512, 0, 1024, PT_PS,
				      CTRLR_DMA_WRITE, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_PTR_EQUAL(iov[0].iov_base, pt_mem + 3 * PT_PS + 512);
	CU_ASSERT_EQUAL(iov[0].iov_len, 1024);
	/* Zero length maps nothing. */
	CU_ASSERT_EQUAL(
	    ctrlr_prp_map(pt_map, NULL, pt_page(3), 0, 0, PT_PS, CTRLR_DMA_WRITE, iov, 8, &n),
	    NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 0);
}

static void test_two_pages_prp2_data(void)
{
	struct iovec iov[8];
	int n;

	pt_setup();
	/* 512 bytes left in the first page, the rest (3584) in PRP2's page. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(1) + 3584, pt_page(7), 4096, PT_PS,
				      CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(iov[0].iov_len, 512);
	CU_ASSERT_PTR_EQUAL(iov[1].iov_base, pt_mem + 7 * PT_PS);
	CU_ASSERT_EQUAL(iov[1].iov_len, 3584);
	/* Adjacent pages merge into one iovec. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(1), pt_page(2), 8192, PT_PS,
				      CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(iov[0].iov_len, 8192);
}

static void test_prp2_offset_invalid(void)
{
	struct iovec iov[8];
	int n;

	pt_setup();
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(1), pt_page(7) + 8, 8192, PT_PS,
				      CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_PRP_INVALID_OFFSET);
	/* PRP1 must be dword aligned. */
	CU_ASSERT_EQUAL(
	    ctrlr_prp_map(pt_map, NULL, pt_page(1) + 2, 0, 16, PT_PS, CTRLR_DMA_READ, iov, 8, &n),
	    NVME_SC_PRP_INVALID_OFFSET);
}

static void test_list(void)
{
	struct iovec iov[16];
	uint64_t *l = pt_list(20);
	int n;

	pt_setup();
	/* 5 pages: PRP1 + a list of 4 non-adjacent pages. */
	for (int i = 0; i < 4; i++)
		l[i] = pt_page(30 + 2 * i);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 5 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 5);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_PTR_EQUAL(iov[1 + i].iov_base, pt_mem + (30 + 2 * i) * PT_PS);
		CU_ASSERT_EQUAL(iov[1 + i].iov_len, PT_PS);
	}
	/* Last page partial. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 2 * PT_PS + 100, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(iov[2].iov_len, 100);
}

static void test_list_entry_offset_invalid(void)
{
	struct iovec iov[16];
	uint64_t *l = pt_list(20);
	int n;

	pt_setup();
	l[0] = pt_page(30);
	l[1] = pt_page(32) + 0x200;
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 3 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_PRP_INVALID_OFFSET);
	/* The list pointer itself must be qword aligned. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20) + 4, 3 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_PRP_INVALID_OFFSET);
}

static void test_list_with_offset_and_chain(void)
{
	struct iovec iov[16];
	/* The list starts 8 bytes before the end of page 20: one slot, so it chains at once... */
	uint64_t start = pt_page(20) + PT_PS - 16;
	uint64_t *l = (uint64_t *)(pt_mem + 20 * PT_PS + PT_PS - 16);
	uint64_t *l2 = pt_list(21);
	int n;

	pt_setup();
	/* ...two slots: the first a data page, the second the pointer to the next list. */
	l[0] = pt_page(40);
	l[1] = pt_page(21);
	l2[0] = pt_page(42);
	l2[1] = pt_page(44);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), start, 4 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_PTR_EQUAL(iov[1].iov_base, pt_mem + 40 * PT_PS);
	CU_ASSERT_PTR_EQUAL(iov[2].iov_base, pt_mem + 42 * PT_PS);
	CU_ASSERT_PTR_EQUAL(iov[3].iov_base, pt_mem + 44 * PT_PS);
	/* With exactly two pages left the second slot is data, not a chain pointer. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), start, 3 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_PTR_EQUAL(iov[2].iov_base, pt_mem + 21 * PT_PS);
	/* A chain pointer with an offset is invalid. */
	l[1] = pt_page(21) + 8;
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), start, 4 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_PRP_INVALID_OFFSET);
}

static void test_full_list_page_chains(void)
{
	struct iovec iov[600];
	uint64_t *l = pt_list(10), *l2 = pt_list(11);
	uint64_t pages = 512 + 3; /* after PRP1: 511 in list 1, 4 in list 2 */
	int n;

	pt_setup();
	for (int i = 0; i < 511; i++)
		l[i] = pt_page(12 + 2 * (i % 20)); /* pages repeat: fine for mapping */
	l[511] = pt_page(11);
	l2[0] = pt_page(54);
	l2[1] = pt_page(56);
	l2[2] = pt_page(58);
	l2[3] = pt_page(63);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(1), pt_page(10), (pages + 1) * PT_PS,
				      PT_PS, CTRLR_DMA_WRITE, iov, 600, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 1 + 511 + 4);
	CU_ASSERT_EQUAL(iov[n - 1].iov_len, PT_PS);
	CU_ASSERT_PTR_EQUAL(iov[n - 1].iov_base, pt_mem + 63 * PT_PS);
}

static void test_unmapped(void)
{
	struct iovec iov[16];
	uint64_t *l = pt_list(20);
	int n;

	pt_setup();
	l[0] = pt_page(30);
	l[1] = 0xdead0000ull; /* outside guest memory */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 3 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_DATA_XFER_ERROR);
	/* The list page itself unmapped. */
	pt_hole = pt_page(20);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 3 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 16, &n),
			NVME_SC_DATA_XFER_ERROR);
	/* PRP1 unmapped. */
	CU_ASSERT_EQUAL(
	    ctrlr_prp_map(pt_map, NULL, 0x1000, 0, 512, PT_PS, CTRLR_DMA_WRITE, iov, 16, &n),
	    NVME_SC_DATA_XFER_ERROR);
}

static void test_iov_limit(void)
{
	struct iovec iov[2];
	uint64_t *l = pt_list(20);
	int n;

	pt_setup();
	for (int i = 0; i < 4; i++)
		l[i] = pt_page(30 + 2 * i);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(2), pt_page(20), 5 * PT_PS, PT_PS,
				      CTRLR_DMA_WRITE, iov, 2, &n),
			NVME_SC_INVALID_FIELD);
}

static void test_large_page_size(void)
{
	struct iovec iov[8];
	int n;

	pt_setup();
	/* 16 KiB pages: 12 KiB in page one (offset 4 KiB), 4 KiB in PRP2's page. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(4) + PT_PS, pt_page(16), 4 * PT_PS,
				      4 * PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(iov[0].iov_len, 3 * PT_PS);
	CU_ASSERT_EQUAL(iov[1].iov_len, PT_PS);
	/* PRP2 must be aligned to the 16 KiB page. */
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(4) + PT_PS, pt_page(17), 4 * PT_PS,
				      4 * PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_PRP_INVALID_OFFSET);
}

/* 128 KiB in 32 guest-contiguous pages (PRP1 with an offset, then a list): one translation of
 * the list and one of the data, not 33. Across two DMA windows (guest-contiguous, mapped
 * separately) the run is mapped page by page and still lands whole; a hole still fails it. */
static void test_contiguous_runs(void)
{
	struct iovec iov[8];
	uint64_t *l;
	int n;

	pt_setup();
	l = pt_list(2);
	for (unsigned int i = 0; i < 32; i++)
		l[i] = pt_page(11 + i);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(10) + 1024, pt_page(2), 32 * PT_PS,
				      PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_PTR_EQUAL(iov[0].iov_base, pt_mem + 10 * PT_PS + 1024);
	CU_ASSERT_EQUAL(iov[0].iov_len, 32 * PT_PS);
	CU_ASSERT_EQUAL(pt_calls, 2);

	pt_calls = 0;
	pt_split = pt_page(20);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(10) + 1024, pt_page(2), 32 * PT_PS,
				      PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(iov[0].iov_len, 32 * PT_PS);
	CU_ASSERT_EQUAL(pt_calls, 2 + 33);

	/* A break in the run (page 30 elsewhere) is two runs. */
	pt_split = ~0ull;
	pt_calls = 0;
	l[19] = pt_page(50);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(10) + 1024, pt_page(2), 32 * PT_PS,
				      PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SUCCESS);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(pt_calls, 4);
	CU_ASSERT_PTR_EQUAL(iov[1].iov_base, pt_mem + 50 * PT_PS);

	pt_hole = pt_page(25);
	CU_ASSERT_EQUAL(ctrlr_prp_map(pt_map, NULL, pt_page(10) + 1024, pt_page(2), 32 * PT_PS,
				      PT_PS, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_DATA_XFER_ERROR);
}

CUNIT_SUITE(prp, NULL, NULL, {"single_page_with_offset", test_single_page_with_offset},
	    {"two_pages_prp2_data", test_two_pages_prp2_data},
	    {"prp2_offset_invalid", test_prp2_offset_invalid}, {"list", test_list},
	    {"list_entry_offset_invalid", test_list_entry_offset_invalid},
	    {"list_with_offset_and_chain", test_list_with_offset_and_chain},
	    {"full_list_page_chains", test_full_list_page_chains}, {"unmapped", test_unmapped},
	    {"iov_limit", test_iov_limit}, {"large_page_size", test_large_page_size},
	    {"contiguous_runs", test_contiguous_runs})
