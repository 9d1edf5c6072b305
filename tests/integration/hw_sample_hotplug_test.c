/* tests/integration/hw_sample_hotplug_test.c - DOCA "PCI Device Hot-Plug"
 * sample: hotplug state events for unplug/plug, client attach (POWER_ON),
 * client disconnect (client-gone FLR, back to POWER_ON_PENDING) and a second
 * client attaching afterwards. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/integration/itest.h"

#define REG_MAGIC 0x00
#define MAGIC 0x4c504d53u

static bool test_expect_line(struct itest_sample *s, const char *want)
{
	char line[256];

	for (;;) {
		if (itest_sample_expect(s, "EVENT", line, sizeof(line), ITEST_TIMEOUT_MS))
			return false;
		if (!strcmp(line, want))
			return true;
	}
}

static void test_attach_detach_reattach(const char *build)
{
	struct itest_sample s;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(itest_bar_rd32(c, REG_MAGIC) == MAGIC);
	/* Disconnect: resources freed through the client-gone FLR. */
	vfu_client_close(c);
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 flr client_gone=1"));
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 hotplug POWER_ON_PENDING"));
	/* A new client attaches and the device works for it. */
	c = itest_attach(&s, 0);
	if (!c)
		goto out;
	ITEST_CHECK(itest_bar_rd32(c, REG_MAGIC) == MAGIC);
	itest_bar_wr32(c, 0x04, 0x55, false);
	ITEST_CHECK(itest_wait_reg(c, 0x08, 0x55, ITEST_TIMEOUT_MS));
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

static void test_unplug_plug(const char *build)
{
	struct itest_sample s;
	char line[256], path[256];
	uint32_t v;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	/* Unplug with a client attached: the client is dropped first. */
	ITEST_CHECK(itest_sample_cmd(&s, "unplug 0") == 0);
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 hotplug POWER_OFF_PENDING"));
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 flr client_gone=1"));
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 hotplug POWER_OFF"));
	ITEST_CHECK(itest_sample_expect(&s, "OK", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(vfu_client_region_read(c, 0, REG_MAGIC, &v, 4) < 0);
	vfu_client_close(c);
	/* No socket while powered off. */
	itest_sample_sock(&s, 0, path, sizeof(path));
	c = vfu_client_connect(path, 0);
	ITEST_CHECK(c == NULL);
	vfu_client_close(c);
	ITEST_CHECK(itest_sample_cmd(&s, "unplug 0") == 0); /* already off: no-op */
	ITEST_CHECK(itest_sample_expect(&s, "OK", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(itest_sample_cmd(&s, "plug 0") == 0);
	ITEST_CHECK(test_expect_line(&s, "EVENT sample-0 hotplug POWER_ON_PENDING"));
	ITEST_CHECK(itest_sample_expect(&s, "OK", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(itest_sample_cmd(&s, "plug 0") == 0); /* already plugged */
	ITEST_CHECK(itest_sample_expect(&s, "ERR", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	c = itest_attach(&s, 0);
	if (c) {
		ITEST_CHECK(itest_bar_rd32(c, REG_MAGIC) == MAGIC);
		/* Device default applied at this hotplug too. */
		ITEST_CHECK(itest_bar_rd32(c, 0x38) == 0xd0d0d0d0);
		vfu_client_close(c);
	}
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("attach_detach_reattach", test_attach_detach_reattach, build);
	itest_run("unplug_plug", test_unplug_plug, build);
	return itest_summary();
}
