/* tests/unit/controller/io_test.c - NVM I/O commands through the loopback transport against malloc
 * bdevs: Read, Write, FUA, Flush, Write Zeroes, DSM, Compare, Verify, the vendor checksum, LBA
 * range and MDTS checks, PRP lists and SGLs, SMART counters, Format NVM. */
#include <errno.h>
#include <string.h>

#include "common/crc32c.h"
#include "controller/nvm/nvm.h"
#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

#define IO_BLOCKS 2048
static struct lb lb;
static uint64_t data_addr, list_addr; /* 128 KiB data buffer + a PRP list page */

static int io_init(void)
{
	if (lb_init(&lb, NULL))
		return -1;
	if (lb_add_malloc_ns(&lb, "io0", 1, IO_BLOCKS, 512) != 1)
		return -1;
	if (lb_add_malloc_ns(&lb, "io1", 2, 64, 4096) != 2)
		return -1;
	if (!(lb_enable(&lb, 32) & 1))
		return -1;
	if (lb_create_qpair(&lb, 1, 64, 1, true))
		return -1;
	data_addr = lb_alloc(&lb, 128 * 1024);
	list_addr = lb_alloc(&lb, 4096);
	return 0;
}

static int io_fini(void)
{
	lb_fini(&lb);
	return 0;
}

static uint8_t *io_data(void)
{
	return lb_ptr(&lb, data_addr);
}

/* A PRP pair for `len` bytes of the contiguous data buffer (through a list when needed). */
static void io_prps(struct nvme_sqe *sqe, uint64_t len)
{
	uint64_t *list = lb_ptr(&lb, list_addr);

	sqe->dptr.prp.prp1 = data_addr;
	if (len <= 4096)
		return;
	if (len <= 8192) {
		sqe->dptr.prp.prp2 = data_addr + 4096;
		return;
	}
	/* One list entry per following page of the buffer. */
	for (uint64_t i = 1; i * 4096 < len; i++)
		list[i - 1] = data_addr + i * 4096;
	sqe->dptr.prp.prp2 = list_addr;
}

static uint16_t io_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t flags)
{
	struct nvme_sqe sqe = lb_sqe(opc, nsid);
	uint32_t bs = nsid == 2 ? 4096 : 512;

	io_prps(&sqe, (uint64_t)nlb * bs);
	sqe.cdw10 = (uint32_t)slba;
	sqe.cdw11 = (uint32_t)(slba >> 32);
	sqe.cdw12 = (nlb - 1) | flags;
	return lb_cmd(&lb, 1, &sqe, NULL);
}

static void io_fill(uint8_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		io_data()[i] = (uint8_t)(seed + i * 7);
}

static bool io_check(uint8_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (io_data()[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

static void test_write_read(void)
{
	/* 1 block, 2 pages, and a PRP list (64 KiB). */
	static const uint32_t sizes[] = {1, 16, 128, 256};

	for (size_t i = 0; i < 4; i++) {
		io_fill((uint8_t)(i + 1), sizes[i] * 512);
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 100, sizes[i], 0), 0);
		memset(io_data(), 0, sizes[i] * 512);
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 100, sizes[i], 0), 0);
		CU_ASSERT_TRUE(io_check((uint8_t)(i + 1), sizes[i] * 512));
	}
	/* FUA write, 4 KiB namespace. */
	io_fill(9, 8192);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 2, 3, 2, NVME_RW_FUA), 0);
	memset(io_data(), 0, 8192);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 2, 3, 2, 0), 0);
	CU_ASSERT_TRUE(io_check(9, 8192));
}

static void test_range_and_mdts(void)
{
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, IO_BLOCKS - 1, 1, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, IO_BLOCKS - 1, 2, 0), NVME_SC_LBA_RANGE | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, IO_BLOCKS, 1, 0), NVME_SC_LBA_RANGE | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, ~0ull, 1, 0), NVME_SC_LBA_RANGE | NVME_DNR);
	/* MDTS 5 = 128 KiB: 257 blocks of 512 are too many. */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 257, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 2, 0, 33, 0), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Invalid namespaces. */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 3, 0, 1, 0), NVME_SC_INVALID_NS | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 0, 0, 1, 0), NVME_SC_INVALID_NS | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, NVME_NSID_ALL, 0, 1, 0),
			NVME_SC_INVALID_NS | NVME_DNR);
	/* Unknown and vendor opcodes without a handler. */
	CU_ASSERT_EQUAL(io_rw(0x7e, 1, 0, 1, 0), NVME_SC_INVALID_OPCODE | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(0x81, 1, 0, 1, 0), NVME_SC_INVALID_OPCODE | NVME_DNR);
}

static void test_bad_data_pointers(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_READ, 1);
	uint64_t *list = lb_ptr(&lb, list_addr);

	/* PRP1 outside guest memory: Data Transfer Error, nothing written anywhere. */
	sqe.dptr.prp.prp1 = 0x7000;
	sqe.cdw12 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_DATA_XFER_ERROR | NVME_DNR);
	/* A list entry beyond guest memory. */
	sqe.dptr.prp.prp1 = data_addr;
	sqe.dptr.prp.prp2 = list_addr;
	list[0] = data_addr + 4096;
	list[1] = LB_MEM_BASE + LB_MEM_SIZE;
	sqe.cdw12 = 23; /* 12 KiB */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_DATA_XFER_ERROR | NVME_DNR);
	/* A misaligned list entry. */
	list[1] = data_addr + 8192 + 512;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_PRP_INVALID_OFFSET | NVME_DNR);
	/* Reserved PSDT. */
	sqe.cdw0.bits.psdt = 3;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	/* Only Compare may be the first command of a fused operation (io_fused_test.c). */
	sqe = lb_sqe(NVME_CMD_READ, 1);
	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw0.bits.fuse = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
}

static void test_sgl(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_CMD_WRITE, 1);
	struct nvme_sgl_desc *seg = lb_ptr(&lb, list_addr);

	/* Write 2 blocks from two scattered pieces, read back through one data block. */
	memset(io_data(), 0x11, 512);
	memset(io_data() + 8192, 0x22, 512);
	memset(seg, 0, 32);
	seg[0].addr = data_addr;
	seg[0].length = 512;
	seg[1].addr = data_addr + 8192;
	seg[1].length = 512;
	sqe.cdw0.bits.psdt = NVME_PSDT_SGL_MPTR_CONTIG;
	sqe.dptr.sgl.addr = list_addr;
	sqe.dptr.sgl.length = 32;
	sqe.dptr.sgl.type = NVME_SGL_TYPE_LAST_SEGMENT << 4;
	sqe.cdw10 = 500;
	sqe.cdw12 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	sqe = lb_sqe(NVME_CMD_READ, 1);
	sqe.cdw0.bits.psdt = NVME_PSDT_SGL_MPTR_CONTIG;
	sqe.dptr.sgl.addr = data_addr + 16384;
	sqe.dptr.sgl.length = 1024;
	sqe.dptr.sgl.type = NVME_SGL_TYPE_DATA_BLOCK << 4;
	sqe.cdw10 = 500;
	sqe.cdw12 = 1;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(io_data()[16384], 0x11);
	CU_ASSERT_EQUAL(io_data()[16384 + 511], 0x11);
	CU_ASSERT_EQUAL(io_data()[16384 + 512], 0x22);
	/* Too short an SGL. */
	sqe.dptr.sgl.length = 512;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_SGL_INVALID_DATA_LEN | NVME_DNR);
}

static void test_sgl_disabled(void)
{
	struct lb lb2;
	struct ctrlr_config cfg;
	struct nvme_sqe sqe;
	uint64_t buf;

	lb_default_config(&cfg);
	cfg.sgl = false;
	cfg.serial = "LB0002";
	CU_ASSERT_EQUAL_FATAL(lb_init(&lb2, &cfg), 0);
	CU_ASSERT_EQUAL(lb_add_malloc_ns(&lb2, "io_nosgl", 1, 64, 512), 1);
	CU_ASSERT_EQUAL(lb_enable(&lb2, 16) & 1, 1);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb2, 1, 16, 1, true), 0);
	buf = lb_alloc(&lb2, 4096);
	sqe = lb_sqe(NVME_CMD_READ, 1);
	sqe.cdw0.bits.psdt = NVME_PSDT_SGL_MPTR_CONTIG;
	sqe.dptr.sgl.addr = buf;
	sqe.dptr.sgl.length = 512;
	CU_ASSERT_EQUAL(lb_cmd(&lb2, 1, &sqe, NULL), NVME_SC_INVALID_FIELD | NVME_DNR);
	lb_fini(&lb2);
}

static void test_flush_wz_dsm(void)
{
	struct nvme_sqe sqe;
	struct nvme_dsm_range *r = (struct nvme_dsm_range *)io_data();

	CU_ASSERT_EQUAL(io_rw(NVME_CMD_FLUSH, 1, 0, 1, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_FLUSH, NVME_NSID_ALL, 0, 1, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_FLUSH, 7, 0, 1, 0), NVME_SC_INVALID_NS | NVME_DNR);

	/* Write Zeroes, with and without DEAC. */
	io_fill(3, 4096);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 200, 8, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE_ZEROES, 1, 201, 2, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE_ZEROES, 1, 204, 1, NVME_WZ_DEAC), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 200, 8, 0), 0);
	CU_ASSERT_EQUAL(io_data()[0], 3);
	CU_ASSERT_EQUAL(io_data()[512], 0);
	CU_ASSERT_EQUAL(io_data()[1535], 0);
	CU_ASSERT_NOT_EQUAL(io_data()[1536 + 1], 0);
	CU_ASSERT_EQUAL(io_data()[2048 + 100], 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE_ZEROES, 1, IO_BLOCKS - 1, 2, 0),
			NVME_SC_LBA_RANGE | NVME_DNR);

	/* DSM deallocate of 20 ranges (two batches), the blocks read back as zero. */
	io_fill(5, 64 * 512);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 300, 64, 0), 0);
	memset(r, 0, 4096);
	for (int i = 0; i < 20; i++) {
		r[i].slba = 300 + 3 * i;
		r[i].nlb = 1;
	}
	r[19].nlb = 0; /* empty ranges are skipped */
	sqe = lb_sqe(NVME_CMD_DSM, 1);
	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = 19;
	sqe.cdw11 = NVME_DSM_AD;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 300, 64, 0), 0);
	for (int i = 0; i < 19; i++) {
		CU_ASSERT_EQUAL(io_data()[3 * i * 512 + 17], 0);
		CU_ASSERT_EQUAL(io_data()[(3 * i + 1) * 512 + 17],
				(uint8_t)(5 + ((3 * i + 1) * 512 + 17) * 7));
	}
	CU_ASSERT_NOT_EQUAL(io_data()[3 * 19 * 512 + 1] | io_data()[3 * 19 * 512 + 2], 0);
	/* A range beyond the namespace. */
	memset(r, 0, 32);
	r[0].slba = IO_BLOCKS - 1;
	r[0].nlb = 2;
	sqe.cdw10 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), NVME_SC_LBA_RANGE | NVME_DNR);
	/* Without AD the ranges are hints only. */
	sqe.cdw11 = 0;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, NULL), 0);
}

static void test_compare_verify(void)
{
	io_fill(7, 4096);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 600, 8, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_COMPARE, 1, 600, 8, 0), 0);
	io_data()[4000] ^= 1;
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_COMPARE, 1, 600, 8, 0), NVME_SC_COMPARE_FAILED | NVME_DNR);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_COMPARE, 1, IO_BLOCKS, 1, 0), NVME_SC_LBA_RANGE | NVME_DNR);
	/* Verify: no data pointer, larger than MDTS is fine. */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_VERIFY, 1, 0, 1024, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_VERIFY, 1, 1, IO_BLOCKS, 0), NVME_SC_LBA_RANGE | NVME_DNR);
}

static void test_vendor_checksum(void)
{
	struct nvme_sqe sqe;
	uint32_t dw0 = 0, expect;

	io_fill(11, 8 * 512);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 700, 8, 0), 0);
	expect = crc32c(0, io_data(), 8 * 512);
	sqe = lb_sqe(0x80, 1);
	sqe.cdw10 = 700;
	sqe.cdw12 = 7;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, &dw0), 0);
	CU_ASSERT_EQUAL(dw0, expect);
	/* Known answer: CRC-32C("123456789") = 0xE3069283. */
	CU_ASSERT_EQUAL(crc32c(0, "123456789", 9), 0xe3069283u);
	/* Across chunk boundaries (1024 blocks = 512 KiB). */
	sqe.cdw10 = 0;
	sqe.cdw12 = 1023;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, &dw0), 0);
	sqe.nsid = 4;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, &dw0), NVME_SC_INVALID_NS | NVME_DNR);
	sqe.nsid = 1;
	sqe.cdw10 = IO_BLOCKS;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 1, &sqe, &dw0), NVME_SC_LBA_RANGE | NVME_DNR);
}

static void test_smart_counters(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);
	struct nvme_smart_log *s = (struct nvme_smart_log *)io_data();
	uint64_t reads0, writes0, reads1, writes1, du_w0, du_w1;
	struct ctrlr_stats st;

	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_LOG_SMART | (127u << 16);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(&reads0, s->host_reads, 8);
	memcpy(&writes0, s->host_writes, 8);
	memcpy(&du_w0, s->data_units_written, 8);
	/* 40 C idle, at most +30 K under load (controller/health.c). */
	CU_ASSERT_TRUE(s->temperature >= 313 && s->temperature <= 343);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 0, 256, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, 0), 0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(&reads1, s->host_reads, 8);
	memcpy(&writes1, s->host_writes, 8);
	memcpy(&du_w1, s->data_units_written, 8);
	CU_ASSERT_EQUAL(reads1, reads0 + 1);
	CU_ASSERT_EQUAL(writes1, writes0 + 4);
	CU_ASSERT_TRUE(du_w1 >= du_w0 + 1);
	ctrlr_get_stats(lb.ctrlr, &st);
	CU_ASSERT_TRUE(st.io_cmds > 0);
	CU_ASSERT_TRUE(st.host_write_cmds >= 4);

	/* The counts are kept per SQ; a deleted queue's stay the controller's. */
	{
		struct nvme_sqe del = lb_sqe(NVME_ADM_DELETE_SQ, 0);
		struct ctrlr_stats st1;
		uint64_t reads2, writes2;

		del.cdw10 = 1;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &del, NULL), 0);
		del = lb_sqe(NVME_ADM_DELETE_CQ, 0);
		del.cdw10 = 1;
		CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &del, NULL), 0);
		ctrlr_get_stats(lb.ctrlr, &st1);
		CU_ASSERT_EQUAL(st1.io_cmds, st.io_cmds);
		CU_ASSERT_EQUAL(st1.host_write_cmds, st.host_write_cmds);
		CU_ASSERT_EQUAL(st1.host_read_cmds, st.host_read_cmds);
		CU_ASSERT_EQUAL(st1.data_units_written, st.data_units_written);
		CU_ASSERT_EQUAL_FATAL(lb_create_qpair(&lb, 1, 64, 1, true), 0);
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 0, 1, 0), 0);
		CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
		memcpy(&reads2, s->host_reads, 8);
		memcpy(&writes2, s->host_writes, 8);
		CU_ASSERT_EQUAL(reads2, reads1 + 1);
		CU_ASSERT_EQUAL(writes2, writes1);
		ctrlr_get_stats(lb.ctrlr, &st1);
		CU_ASSERT_EQUAL(st1.io_cmds, st.io_cmds + 1);
	}
}

/* Host write commands in the SMART log of nsid (NVME_NSID_ALL: the controller's); -1 on error. */
static int64_t io_smart_writes(uint32_t nsid)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, nsid);
	struct nvme_smart_log *s = (struct nvme_smart_log *)io_data();
	uint64_t w;

	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_LOG_SMART | (127u << 16);
	if (lb_cmd(&lb, 0, &sqe, NULL))
		return -1;
	memcpy(&w, s->host_writes, 8);
	return (int64_t)w;
}

/* LPA bit 0: a namespace's SMART log counts its own I/O; an inactive nsid is refused. */
static void test_smart_per_namespace(void)
{
	int64_t all0 = io_smart_writes(NVME_NSID_ALL), ns1_0 = io_smart_writes(1);
	int64_t ns2_0 = io_smart_writes(2);
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, 7);
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)io_data();

	CU_ASSERT_TRUE(all0 >= 0 && ns1_0 >= 0 && ns2_0 >= 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 2, (uint64_t)i, 1, 0), 0);
	CU_ASSERT_EQUAL(io_smart_writes(2), ns2_0 + 3);
	CU_ASSERT_EQUAL(io_smart_writes(1), ns1_0);
	CU_ASSERT_EQUAL(io_smart_writes(NVME_NSID_ALL), all0 + 3);
	CU_ASSERT_EQUAL(io_smart_writes(0), all0 + 3);
	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_LOG_SMART | (127u << 16);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), NVME_SC_INVALID_NS | NVME_DNR);
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 0);
	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_CNS_CTRL;
	CU_ASSERT_EQUAL_FATAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_TRUE(id->lpa & NVME_LPA_SMART_PER_NS);
}

/* The SMART log after nvmf_emu_set_health-like injections: temperature over the default
 * threshold (critical warning bit 1), spare below threshold (bit 0), media errors on an LBA
 * range (reads fail with Unrecovered Read Error until written; bit 2), and back to the model. */
static void test_health_injection(void)
{
	struct nvme_sqe sqe = lb_sqe(NVME_ADM_GET_LOG_PAGE, NVME_NSID_ALL);
	struct nvme_smart_log *sl = (struct nvme_smart_log *)io_data();
	struct ctrlr_health_set hs = {.temp_k = 363, .spare = 5, .used = -1};
	struct ctrlr_health_info hi;
	uint64_t media0, media1;

	sqe.dptr.prp.prp1 = data_addr;
	sqe.cdw10 = NVME_LOG_SMART | (127u << 16);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(&media0, sl->media_errors, 8);
	CU_ASSERT_EQUAL(sl->critical_warning, 0);
	CU_ASSERT_EQUAL(ctrlr_health_set(lb.ctrlr, &hs), 0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(sl->temperature, 363);
	CU_ASSERT_EQUAL(sl->temp_sensor[0], 363);
	CU_ASSERT_EQUAL(sl->avail_spare, 5);
	CU_ASSERT_EQUAL(sl->spare_thresh, 10);
	CU_ASSERT_EQUAL(sl->critical_warning, NVME_SMART_CRIT_TEMPERATURE | NVME_SMART_CRIT_SPARE);
	/* Two bad blocks at LBA 20: a read over them fails, the blocks around are fine. */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 18, 6, 0), 0);
	CU_ASSERT_EQUAL(ctrlr_inject_media_error(lb.ctrlr, 1, 20, 2), 0);
	CU_ASSERT_EQUAL(ctrlr_inject_media_error(lb.ctrlr, 9, 20, 2), -ENOENT);
	CU_ASSERT_EQUAL(ctrlr_inject_media_error(lb.ctrlr, 1, IO_BLOCKS - 1, 2), -ERANGE);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 18, 2, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 19, 2, 0), NVME_SC_UNRECOVERED_READ | NVME_DNR);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	memcpy(&media1, sl->media_errors, 8);
	CU_ASSERT_TRUE(media1 >= media0 + 2);
	CU_ASSERT_TRUE(sl->critical_warning & NVME_SMART_CRIT_RELIABILITY);
	/* Written again: readable. */
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 20, 2, 0), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 19, 2, 0), 0);
	ctrlr_health_get(lb.ctrlr, &hi);
	CU_ASSERT_EQUAL(hi.temp_k, 363);
	CU_ASSERT_EQUAL(hi.injected_media_error_blocks, 2);
	/* Out of range values; then back to the model: no warning left. */
	hs = (struct ctrlr_health_set){.spare = 101, .used = -1};
	CU_ASSERT_EQUAL(ctrlr_health_set(lb.ctrlr, &hs), -EINVAL);
	hs = (struct ctrlr_health_set){.reset = true, .spare = -1, .used = -1};
	CU_ASSERT_EQUAL(ctrlr_health_set(lb.ctrlr, &hs), 0);
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(sl->critical_warning, 0);
	CU_ASSERT_EQUAL(sl->avail_spare, 100);
	CU_ASSERT_TRUE(sl->temperature >= 313 && sl->temperature <= 343);
}

static void test_format(void)
{
	struct nvme_sqe sqe;

	io_fill(13, 4096);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_WRITE, 1, 10, 8, 0), 0);
	sqe = lb_sqe(NVME_ADM_FORMAT_NVM, 1);
	sqe.cdw10 = 1u << 9; /* user data erase */
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 1, 10, 8, 0), 0);
	for (int i = 0; i < 4096; i++)
		if (io_data()[i]) {
			CU_FAIL("data survived Format NVM");
			break;
		}
}

/* Runs the transport's queued messages (the removal's visit of the queues) but polls no bdev:
 * commands in flight stay in flight. */
static void io_run_msgs_only(void)
{
	while (lb.nthunks) {
		struct lb_thunk t = lb.thunks[0];

		memmove(lb.thunks, lb.thunks + 1, --lb.nthunks * sizeof(t));
		t.fn(t.arg);
	}
}

static void test_ns_remove_inflight(void)
{
	struct nvme_sqe sqe;
	struct nvme_cqe cqe;
	unsigned int visits;

	CU_ASSERT_EQUAL(lb_add_malloc_ns(&lb, "io_rm", 5, 64, 512), 5);
	/* A read in flight on the bdev when the namespace goes away: completes, then the bdev is
	 * released; new commands fail at once. */
	sqe = lb_sqe(NVME_CMD_READ, 5);
	sqe.dptr.prp.prp1 = data_addr;
	lb.h.q[1].cid = 900;
	CU_ASSERT_EQUAL(nvme_host_submit(&lb.h, 1, &sqe, true), 900);
	ctrlr_sq_tail_doorbell(lb.sqs[1], lb.h.q[1].sq_tail);
	ctrlr_sq_poll(lb.sqs[1], 8); /* submitted to the bdev, not yet completed */
	visits = lb.visits;
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 5), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 5), -ENOENT);
	/* The grace period's visit of the queues ran on the (only) owner thread, and the command
	 * that took the namespace before the removal holds it: the bdev stays open. */
	CU_ASSERT_EQUAL(lb.visits, visits + 1);
	io_run_msgs_only();
	CU_ASSERT_EQUAL(bdev_delete("io_rm"), -EBUSY);
	lb_pump(&lb);
	CU_ASSERT_TRUE(lb_reap(&lb, 1, &cqe, false));
	CU_ASSERT_EQUAL(cqe.status >> 1, 0);
	CU_ASSERT_EQUAL(io_rw(NVME_CMD_READ, 5, 0, 1, 0), NVME_SC_INVALID_NS | NVME_DNR);
	/* Released: neither claimed nor open any more, so it can be deleted. */
	CU_ASSERT_PTR_NOT_NULL(bdev_lookup("io_rm"));
	CU_ASSERT_EQUAL(bdev_delete("io_rm"), 0);
}

CUNIT_SUITE(io, io_init, io_fini, {"write_read", test_write_read},
	    {"range_and_mdts", test_range_and_mdts}, {"bad_data_pointers", test_bad_data_pointers},
	    {"sgl", test_sgl}, {"sgl_disabled", test_sgl_disabled},
	    {"flush_wz_dsm", test_flush_wz_dsm}, {"compare_verify", test_compare_verify},
	    {"vendor_checksum", test_vendor_checksum}, {"smart_counters", test_smart_counters}, {"smart_per_namespace", test_smart_per_namespace},
	    {"health_injection", test_health_injection},
	    {"format", test_format}, {"ns_remove_inflight", test_ns_remove_inflight})
