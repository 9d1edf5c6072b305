/* tests/integration/hw_sample_hostile_test.c - an untrusted client against
 * the sample device: out-of-range and odd-sized BAR/config accesses, bad
 * SET_IRQS ranges, accesses to every BAR offset with every size; the device
 * answers errors (or ignores) and keeps working. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/itest.h"

static void test_hostile(const char *build)
{
	struct itest_sample s;
	uint8_t buf[64];
	uint32_t flags, count;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	/* Outside regions or absent regions: error replies. */
	ITEST_CHECK(vfu_client_region_read(c, 0, 0x8000, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_read(c, 0, 0x7ffe, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_read(c, 1, 0, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_read(c, 6, 0, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_read(c, 9, 0, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_read(c, 7, 0xffe, buf, 4) < 0);
	ITEST_CHECK(vfu_client_region_write(c, 7, 0x1000, buf, 1, false) < 0);
	ITEST_CHECK(vfu_client_irq_info(c, 9, &flags, &count) < 0);
	/* SET_IRQS beyond the 8 vectors, and for INTx which has none. */
	ITEST_CHECK(vfu_client_set_irqs(c, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
					VFIO_PCI_MSIX_IRQ_INDEX, 7, 2, NULL, 0, NULL) < 0);
	ITEST_CHECK(vfu_client_irq_eventfds(c, VFIO_PCI_INTX_IRQ_INDEX, 0, 1) < 0);

	/* Every offset of BAR0 with sizes 1..8, reads and writes of junk, except
	 * the DMA control register (a junk DMA would only fail anyway, but keep
	 * the device quiet). Accesses straddling regions are dropped. */
	srand(7);
	for (uint32_t off = 0x100; off < 0x8000; off += 0x7c) {
		for (uint32_t len = 1; len <= 8 && off + len <= 0x8000; len++) {
			for (uint32_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rand();
			vfu_client_region_write(c, 0, off, buf, len, (off & 1) != 0);
			vfu_client_region_read(c, 0, off, buf, len);
		}
	}
	for (uint32_t off = 0x40; off < 0x1000; off += 0x3b) {
		uint32_t v = (uint32_t)rand();

		if (off >= 0x48 && off < 0x58)
			continue; /* leave DEVCTL (FLR) alone here */
		vfu_client_region_write(c, 7, off, &v, 1 + (off % 4 == 0 ? 3 : 0), false);
	}
	/* Still alive and sane. */
	ITEST_CHECK(itest_cfg_rd(c, 0x00, 4) == 0x00a04e58);
	ITEST_CHECK(itest_bar_rd32(c, 0x00) == 0x4c504d53);
	itest_bar_wr32(c, 0x04, 0xfeed, false);
	ITEST_CHECK(itest_wait_reg(c, 0x08, 0xfeed, ITEST_TIMEOUT_MS));
	vfu_client_close(c);
	c = itest_attach(&s, 0);
	ITEST_CHECK(c != NULL);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("hostile", test_hostile, build);
	return itest_summary();
}
