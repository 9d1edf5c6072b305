/* tests/integration/hw_sample_stateful_test.c - DOCA "PCI Device Stateful
 * Region" sample: defaults seen by the driver, a driver write raising the
 * event on the device, which queries the value and echoes it back. */
#include <stdio.h>
#include <string.h>

#include "tests/integration/itest.h"

static void test_defaults(const char *build)
{
	struct itest_sample s;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(itest_bar_rd32(c, 0x00) == 0x4c504d53); /* type default */
	ITEST_CHECK(itest_bar_rd32(c, 0x38) == 0xd0d0d0d0); /* device default */
	ITEST_CHECK(itest_bar_rd32(c, 0x3c) == 0x7e7e7e7e); /* type default */
	ITEST_CHECK(itest_bar_rd32(c, 0x40) == 0);	    /* no default */
	/* Last written wins over the defaults. */
	itest_bar_wr32(c, 0x38, 0x01020304, false);
	ITEST_CHECK(itest_bar_rd32(c, 0x38) == 0x01020304);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

static void test_driver_write_event(const char *build)
{
	struct itest_sample s;
	char line[256];

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	itest_bar_wr32(c, 0x04, 0x1234, false);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 stateful", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "bar=0 start=0x0 scratch=0x1234") != NULL);
	ITEST_CHECK(itest_bar_rd32(c, 0x08) == 0x1234); /* the device's modify */
	ITEST_CHECK(itest_bar_rd32(c, 0x04) == 0x1234); /* last written */
	/* Posted write (QEMU's trapped BAR writes): applied before a later read. */
	itest_bar_wr32(c, 0x04, 0x5678, true);
	ITEST_CHECK(itest_bar_rd32(c, 0x04) == 0x5678);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 stateful", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "scratch=0x5678") != NULL);
	ITEST_CHECK(itest_bar_rd32(c, 0x08) == 0x5678);
	/* Byte write inside the region. */
	uint8_t b = 0x9a;

	ITEST_CHECK(vfu_client_region_write(c, 0, 0x05, &b, 1, false) == 0);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 stateful", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(itest_bar_rd32(c, 0x08) == 0x9a78);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("defaults", test_defaults, build);
	itest_run("driver_write_event", test_driver_write_event, build);
	return itest_summary();
}
