/* tests/unit/controller/sgl_test.c - SGL parsing: data block, segment chains, last segment, bit
 * bucket, excess length, short SGLs, bad types, unmapped addresses, loops. */
#include <string.h>

#include "controller/core/core.h"
#include "tests/unit/cunit_runner.h"

#define ST_BASE 0x20000000ull
#define ST_SIZE (256 * 1024)

static uint8_t st_mem[ST_SIZE] __attribute__((aligned(4096)));

static void *st_map(void *mctx, uint64_t addr, uint64_t len, unsigned int dir)
{
	if (addr < ST_BASE || len > ST_SIZE || addr - ST_BASE > ST_SIZE - len)
		return NULL;
	return st_mem + (addr - ST_BASE);
}

static struct nvme_sgl_desc st_desc(uint8_t type, uint64_t addr, uint32_t len)
{
	struct nvme_sgl_desc d;

	memset(&d, 0, sizeof(d));
	d.addr = addr;
	d.length = len;
	d.type = (uint8_t)(type << 4);
	return d;
}

static struct nvme_sgl_desc *st_seg(uint64_t off)
{
	return (struct nvme_sgl_desc *)(st_mem + off);
}

static void test_data_block(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 100, 5000);
	struct iovec iov[4];
	int n;

	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 5000, CTRLR_DMA_WRITE, iov, 4, &n), 0);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_PTR_EQUAL(iov[0].iov_base, st_mem + 100);
	CU_ASSERT_EQUAL(iov[0].iov_len, 5000);
	/* Longer than the transfer: truncated (SGLS bit 18). */
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 4096, CTRLR_DMA_WRITE, iov, 4, &n), 0);
	CU_ASSERT_EQUAL(iov[0].iov_len, 4096);
	/* Shorter than the transfer. */
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 8192, CTRLR_DMA_WRITE, iov, 4, &n),
			NVME_SC_SGL_INVALID_DATA_LEN);
	/* Outside guest memory. */
	d.addr = 0x1000;
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 4096, CTRLR_DMA_WRITE, iov, 4, &n),
			NVME_SC_DATA_XFER_ERROR);
	/* Subtype must be "address". */
	d = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE, 512);
	d.type |= 1;
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 512, CTRLR_DMA_WRITE, iov, 4, &n),
			NVME_SC_SGL_INVALID_TYPE);
}

static void test_last_segment(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_LAST_SEGMENT, ST_BASE + 0x1000, 3 * 16);
	struct nvme_sgl_desc *seg = st_seg(0x1000);
	struct iovec iov[8];
	int n;

	seg[0] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x4000, 1000);
	seg[1] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x8000, 24);
	seg[2] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x8018, 1024);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_WRITE, iov, 8, &n), 0);
	/* The second and third are adjacent: merged. */
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(iov[0].iov_len, 1000);
	CU_ASSERT_EQUAL(iov[1].iov_len, 1048);
	/* A segment pointer inside a last segment is invalid. */
	seg[2] = st_desc(NVME_SGL_TYPE_SEGMENT, ST_BASE + 0x2000, 16);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_WRITE, iov, 8, &n),
			NVME_SC_SGL_INVALID_LAST);
	/* Length not a multiple of 16. */
	d.length = 40;
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_WRITE, iov, 8, &n),
			NVME_SC_SGL_INVALID_LAST);
	/* Keyed data blocks are for fabrics. */
	d.length = 16;
	seg[0] = st_desc(NVME_SGL_TYPE_KEYED_DATA_BLOCK, ST_BASE, 512);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 512, CTRLR_DMA_WRITE, iov, 8, &n),
			NVME_SC_SGL_INVALID_TYPE);
}

static void test_segment_chain(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_SEGMENT, ST_BASE + 0x1000, 2 * 16);
	struct nvme_sgl_desc *s1 = st_seg(0x1000), *s2 = st_seg(0x2000);
	struct iovec iov[8];
	int n;

	s1[0] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x10000, 512);
	s1[1] = st_desc(NVME_SGL_TYPE_LAST_SEGMENT, ST_BASE + 0x2000, 2 * 16);
	s2[0] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x20000, 512);
	s2[1] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x30000, 1024);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_PTR_EQUAL(iov[2].iov_base, st_mem + 0x30000);
	/* A segment whose last descriptor does not chain must be a last segment. */
	s1[1] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x20000, 1536);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SGL_INVALID_LAST);
	/* A segment descriptor that is not the last in its segment. */
	s1[0] = st_desc(NVME_SGL_TYPE_SEGMENT, ST_BASE + 0x2000, 32);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SGL_INVALID_LAST);
	/* The segment list unmapped. */
	d.addr = 0x10;
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_DATA_XFER_ERROR);
}

static void test_segment_loop(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_SEGMENT, ST_BASE + 0x1000, 2 * 16);
	struct nvme_sgl_desc *s1 = st_seg(0x1000);
	struct iovec iov[8];
	int n;

	/* A segment chaining to itself, carrying nothing: bounded, not an endless walk. */
	s1[0] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x10000, 0);
	s1[1] = st_desc(NVME_SGL_TYPE_SEGMENT, ST_BASE + 0x1000, 2 * 16);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SGL_INVALID_COUNT);
}

static void test_bit_bucket(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_LAST_SEGMENT, ST_BASE + 0x1000, 3 * 16);
	struct nvme_sgl_desc *seg = st_seg(0x1000);
	struct iovec iov[8];
	int n;

	seg[0] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x4000, 512);
	seg[1] = st_desc(NVME_SGL_TYPE_BIT_BUCKET, 0, 1024);
	seg[2] = st_desc(NVME_SGL_TYPE_DATA_BLOCK, ST_BASE + 0x8000, 512);
	/* Reads: the middle KiB goes to a sink that is not guest memory. */
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_WRITE, iov, 8, &n), 0);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(iov[1].iov_len, 1024);
	CU_ASSERT_TRUE((uint8_t *)iov[1].iov_base < st_mem ||
		       (uint8_t *)iov[1].iov_base >= st_mem + ST_SIZE);
	/* Writes cannot take data from a bit bucket. */
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_READ, iov, 8, &n),
			NVME_SC_SGL_INVALID_TYPE);
	/* Too many pieces for the iovec array. */
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 2048, CTRLR_DMA_WRITE, iov, 2, &n),
			NVME_SC_SGL_INVALID_COUNT);
}

static void test_descriptor_bound(void)
{
	struct nvme_sgl_desc d = st_desc(NVME_SGL_TYPE_LAST_SEGMENT, ST_BASE, 5000 * 16);
	struct iovec iov[4];
	int n;

	/* 5000 empty descriptors (80000 bytes of zeroes = data blocks of length 0). */
	memset(st_mem, 0, 5000 * 16);
	CU_ASSERT_EQUAL(ctrlr_sgl_map(st_map, NULL, &d, 512, CTRLR_DMA_WRITE, iov, 4, &n),
			NVME_SC_SGL_INVALID_COUNT);
}

CUNIT_SUITE(sgl, NULL, NULL, {"data_block", test_data_block}, {"last_segment", test_last_segment},
	    {"segment_chain", test_segment_chain}, {"segment_loop", test_segment_loop},
	    {"bit_bucket", test_bit_bucket}, {"descriptor_bound", test_descriptor_bound})
