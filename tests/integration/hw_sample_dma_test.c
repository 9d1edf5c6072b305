/* tests/integration/hw_sample_dma_test.c - DOCA "PCI Device DMA" sample:
 * the device copies host memory to its own buffer and back to another host
 * address (host->device then device->host), through fd-backed windows
 * (direct access) and fd-less windows (DMA_READ/DMA_WRITE messages the
 * client serves); copies touching unmapped memory fail cleanly. */
#include <stdio.h>
#include <string.h>

#include "tests/integration/itest.h"

#define REG_DMA_CTRL 0x0c
#define REG_DMA_SRC 0x10
#define REG_DMA_DST 0x18
#define REG_DMA_LEN 0x20
#define REG_DMA_STATUS 0x24
#define DMA_DONE 2
#define DMA_ERROR 3

#define RAM_IOVA 0x100000ull
#define MSG_IOVA 0x400000ull

static void test_dma_run(struct vfu_client *c, uint64_t src, uint64_t dst, uint32_t len)
{
	itest_bar_wr32(c, REG_DMA_SRC, (uint32_t)src, false);
	itest_bar_wr32(c, REG_DMA_SRC + 4, (uint32_t)(src >> 32), false);
	itest_bar_wr32(c, REG_DMA_DST, (uint32_t)dst, false);
	itest_bar_wr32(c, REG_DMA_DST + 4, (uint32_t)(dst >> 32), false);
	itest_bar_wr32(c, REG_DMA_LEN, len, false);
	itest_bar_wr32(c, REG_DMA_STATUS, 0, false);
	itest_bar_wr32(c, REG_DMA_CTRL, 1, false);
}

static void test_fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void test_dma(const char *build)
{
	struct itest_sample s;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(vfu_client_ram_create(c, RAM_IOVA, 0x100000) == 0);
	ITEST_CHECK(vfu_client_map_msg_window(c, MSG_IOVA, 0x20000,
					      VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT) ==
		    0);
	uint8_t *ram = vfu_client_ram_ptr(c, RAM_IOVA, 0x100000);
	uint8_t *msg = vfu_client_ram_ptr(c, MSG_IOVA, 0x20000);

	if (!ITEST_CHECK(ram && msg))
		goto out_close;

	/* fd-backed -> fd-backed, 8 KiB at an unaligned source. */
	test_fill(ram + 0x1003, 0x2000, 1);
	test_dma_run(c, RAM_IOVA + 0x1003, RAM_IOVA + 0x80000, 0x2000);
	ITEST_CHECK(itest_wait_reg(c, REG_DMA_STATUS, DMA_DONE, ITEST_TIMEOUT_MS));
	ITEST_CHECK(!memcmp(ram + 0x1003, ram + 0x80000, 0x2000));

	/* fd-less -> fd-backed: the device's read goes out as DMA_READ. */
	test_fill(msg, 0x1000, 2);
	test_dma_run(c, MSG_IOVA, RAM_IOVA + 0x90000, 0x1000);
	ITEST_CHECK(itest_wait_reg(c, REG_DMA_STATUS, DMA_DONE, ITEST_TIMEOUT_MS));
	ITEST_CHECK(!memcmp(msg, ram + 0x90000, 0x1000));

	/* fd-backed -> fd-less: the device's write goes out as DMA_WRITE. */
	test_fill(ram + 0x3000, 0x1800, 3);
	test_dma_run(c, RAM_IOVA + 0x3000, MSG_IOVA + 0x10000, 0x1800);
	ITEST_CHECK(itest_wait_reg(c, REG_DMA_STATUS, DMA_DONE, ITEST_TIMEOUT_MS));
	ITEST_CHECK(!memcmp(ram + 0x3000, msg + 0x10000, 0x1800));

	struct vfu_client_stats st;

	vfu_client_get_stats(c, &st);
	ITEST_CHECK(st.dma_reads_served >= 1 && st.dma_writes_served >= 1);

	/* Unmapped destination, and a source straddling the end of RAM. */
	memset(ram + 0xa0000, 0, 0x100);
	test_dma_run(c, RAM_IOVA, 0x900000, 0x100);
	ITEST_CHECK(itest_wait_reg(c, REG_DMA_STATUS, DMA_ERROR, ITEST_TIMEOUT_MS));
	test_dma_run(c, RAM_IOVA + 0x100000 - 0x10, RAM_IOVA + 0xa0000, 0x100);
	ITEST_CHECK(itest_wait_reg(c, REG_DMA_STATUS, DMA_ERROR, ITEST_TIMEOUT_MS));
	ITEST_CHECK(ram[0xa0000] == 0);
out_close:
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("dma", test_dma, build);
	return itest_summary();
}
