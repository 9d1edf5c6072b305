/* tests/integration/hw_sample_flr_test.c - DOCA "PCI Device FLR" flow: a
 * PCIe FLR through config space (DEVCTL bit 15) and a vfio-user
 * DEVICE_RESET reach the device's handler, the function comes back reset
 * (config and stateful defaults) and works again; a client disconnect is a
 * client-gone FLR after which a second client attaches. */
#include <stdio.h>
#include <string.h>

#include "tests/integration/itest.h"

#define REG_SCRATCH 0x04
#define REG_ECHO 0x08
#define REG_DB_COUNT 0x28
#define REG_FLR_COUNT 0x34

static bool test_event(struct itest_sample *s, const char *want)
{
	char line[256];

	for (;;) {
		if (itest_sample_expect(s, "EVENT", line, sizeof(line), ITEST_TIMEOUT_MS))
			return false;
		if (!strcmp(line, want))
			return true;
	}
}

/* The device works: a stateful write is echoed and a doorbell counted. */
static void test_works(struct itest_sample *s, struct vfu_client *c, uint32_t tag)
{
	char line[256];

	itest_bar_wr32(c, REG_SCRATCH, tag, false);
	ITEST_CHECK(itest_wait_reg(c, REG_ECHO, tag, ITEST_TIMEOUT_MS));
	uint32_t before = itest_bar_rd32(c, REG_DB_COUNT);

	itest_bar_wr32(c, 0x1000, tag, false);
	ITEST_CHECK(
	    itest_sample_expect(s, "EVENT sample-0 db", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(itest_bar_rd32(c, REG_DB_COUNT) == before + 1);
}

static void test_flr(const char *build)
{
	struct itest_sample s;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	test_works(&s, c, 0x11);
	itest_cfg_wr(c, 0x04, 0x0006, 2);
	itest_cfg_wr(c, 0x86, 0x8000, 2);
	/* PCIe FLR: DEVCTL (cap 0x48 + 8) bit 15. */
	itest_cfg_wr(c, 0x50, 0x8000, 2);
	ITEST_CHECK(test_event(&s, "EVENT sample-0 flr client_gone=0"));
	ITEST_CHECK((itest_cfg_rd(c, 0x50, 2) & 0x8000) == 0);
	ITEST_CHECK(itest_cfg_rd(c, 0x04, 2) == 0);	       /* COMMAND reset */
	ITEST_CHECK((itest_cfg_rd(c, 0x86, 2) & 0xc000) == 0); /* MSI-X off */
	/* COMMAND 0: the BARs are not decoded (reads all ones) until the driver enables. */
	ITEST_CHECK(itest_bar_rd32(c, REG_FLR_COUNT) == 0xffffffffu);
	itest_enable(c);
	ITEST_CHECK(itest_wait_reg(c, REG_FLR_COUNT, 1, ITEST_TIMEOUT_MS));
	ITEST_CHECK(itest_bar_rd32(c, REG_SCRATCH) == 0);      /* defaults back */
	ITEST_CHECK(itest_bar_rd32(c, 0x00) == 0x4c504d53);
	ITEST_CHECK(itest_bar_rd32(c, 0x38) == 0xd0d0d0d0);
	test_works(&s, c, 0x22);

	/* vfio-user DEVICE_RESET takes the same path. */
	ITEST_CHECK(vfu_client_reset(c) == 0);
	ITEST_CHECK(test_event(&s, "EVENT sample-0 flr client_gone=0"));
	itest_enable(c);
	ITEST_CHECK(itest_wait_reg(c, REG_FLR_COUNT, 2, ITEST_TIMEOUT_MS));
	ITEST_CHECK(itest_bar_rd32(c, REG_SCRATCH) == 0);
	test_works(&s, c, 0x33);

	/* Client gone, then a second client. */
	vfu_client_close(c);
	ITEST_CHECK(test_event(&s, "EVENT sample-0 flr client_gone=1"));
	ITEST_CHECK(test_event(&s, "EVENT sample-0 hotplug POWER_ON_PENDING"));
	c = itest_attach(&s, 0);
	if (!c)
		goto out;
	ITEST_CHECK(itest_wait_reg(c, REG_FLR_COUNT, 3, ITEST_TIMEOUT_MS));
	ITEST_CHECK(itest_bar_rd32(c, REG_SCRATCH) == 0);
	test_works(&s, c, 0x44);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("flr", test_flr, build);
	return itest_summary();
}
