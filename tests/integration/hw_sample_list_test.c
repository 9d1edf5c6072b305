/* tests/integration/hw_sample_list_test.c - DOCA "PCI Device List" sample:
 * the sample's devices are listed, and a client enumerates one like QEMU
 * does (device/region/irq info, config space IDs, BAR size, MSI-X cap);
 * the profile's max_hotplug_devices is enforced. */
#include <stdio.h>
#include <string.h>

#include "tests/integration/itest.h"

static void test_list_devices(const char *build)
{
	static const char *const args[] = {"--devices", "3", NULL};
	struct itest_sample s;
	char line[256], want[256];

	if (!ITEST_CHECK(itest_sample_start(&s, build, args) == 0))
		goto out;
	ITEST_CHECK(itest_sample_cmd(&s, "list") == 0);
	for (unsigned int i = 0; i < 3; i++) {
		char sock[200];

		itest_sample_sock(&s, i, sock, sizeof(sock));
		snprintf(want, sizeof(want), "DEVICE sample-%u %s POWER_ON_PENDING", i, sock);
		ITEST_CHECK(
		    itest_sample_expect(&s, "DEVICE", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
		ITEST_CHECK(!strcmp(line, want));
	}
	ITEST_CHECK(itest_sample_expect(&s, "OK", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	struct vfu_client *c = itest_attach(&s, 1);

	ITEST_CHECK(itest_sample_cmd(&s, "list") == 0);
	ITEST_CHECK(
	    itest_sample_expect(&s, "DEVICE sample-1", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, " POWER_ON") && !strstr(line, "PENDING"));
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

/* Walks the capability list to the capability with `id`; 0 if absent. */
static uint32_t test_find_cap(struct vfu_client *c, uint8_t id)
{
	uint32_t ptr = itest_cfg_rd(c, 0x34, 1);

	for (int hops = 0; ptr && hops < 16; hops++) {
		if (itest_cfg_rd(c, ptr, 1) == id)
			return ptr;
		ptr = itest_cfg_rd(c, ptr + 1, 1);
	}
	return 0;
}

static void test_enumerate(const char *build)
{
	struct itest_sample s;
	struct vfio_user_device_info di;
	struct vfu_client_region r;
	uint32_t flags, count;

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(vfu_client_device_info(c, &di) == 0);
	ITEST_CHECK(di.flags == (VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI));
	ITEST_CHECK(di.num_regions == 9 && di.num_irqs == 5);
	ITEST_CHECK(vfu_client_region_info(c, 0, &r) == 0);
	ITEST_CHECK(r.size == 0x8000);
	ITEST_CHECK(r.flags == (VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE));
	ITEST_CHECK(vfu_client_region_info(c, 1, &r) == 0 && r.size == 0);
	ITEST_CHECK(vfu_client_region_info(c, 7, &r) == 0 && r.size == 4096);
	ITEST_CHECK(vfu_client_region_info(c, 9, &r) < 0);

	ITEST_CHECK(itest_cfg_rd(c, 0x00, 4) == 0x00a04e58);
	ITEST_CHECK(itest_cfg_rd(c, 0x08, 4) == 0xff000001); /* class ff0000, rev 1 */
	ITEST_CHECK(itest_cfg_rd(c, 0x2c, 4) == 0x00a04e58);
	ITEST_CHECK(itest_cfg_rd(c, 0x3d, 1) == 0);
	ITEST_CHECK(itest_cfg_rd(c, 0x10, 4) == 0x4);
	itest_cfg_wr(c, 0x10, 0xffffffff, 4);
	ITEST_CHECK(itest_cfg_rd(c, 0x10, 4) == 0xffff8004); /* 32 KiB, 64-bit */
	itest_cfg_wr(c, 0x10, 0, 4);
	itest_cfg_wr(c, 0x30, 0xfffff800, 4);
	ITEST_CHECK(itest_cfg_rd(c, 0x30, 4) == 0);

	uint32_t msix = test_find_cap(c, 0x11);

	ITEST_CHECK(test_find_cap(c, 0x01) == 0x40);
	ITEST_CHECK(test_find_cap(c, 0x10) == 0x48);
	ITEST_CHECK(msix != 0);
	ITEST_CHECK((itest_cfg_rd(c, msix + 2, 2) & 0x7ff) == 7);
	ITEST_CHECK(itest_cfg_rd(c, msix + 4, 4) == 0x3000);
	ITEST_CHECK(itest_cfg_rd(c, msix + 8, 4) == 0x4000);
	ITEST_CHECK(itest_cfg_rd(c, 0x4c, 4) & (1u << 28)); /* FLR capable */
	ITEST_CHECK(vfu_client_irq_info(c, VFIO_PCI_MSIX_IRQ_INDEX, &flags, &count) == 0);
	ITEST_CHECK(count == 8 && flags == VFIO_IRQ_INFO_EVENTFD);
	ITEST_CHECK(vfu_client_irq_info(c, VFIO_PCI_INTX_IRQ_INDEX, &flags, &count) == 0);
	ITEST_CHECK(count == 0);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

/* Starts 16 devices on `profile` and returns how many are plugged. */
static int test_count_plugged(const char *build, const char *profile, bool *last_plugged)
{
	const char *const args[] = {"--devices", "16", "--profile", profile, NULL};
	struct itest_sample s;
	char line[256];
	int plugged = 0;

	if (!ITEST_CHECK(itest_sample_start(&s, build, args) == 0)) {
		itest_sample_stop(&s);
		return -1;
	}
	ITEST_CHECK(itest_sample_cmd(&s, "list") == 0);
	for (int i = 0; i < 16; i++) {
		if (!ITEST_CHECK(itest_sample_expect(&s, "DEVICE", line, sizeof(line),
						     ITEST_TIMEOUT_MS) == 0))
			break;
		bool on = strstr(line, " POWER_ON_PENDING") != NULL;

		plugged += on;
		if (i == 15)
			*last_plugged = on;
	}
	itest_sample_stop(&s);
	return plugged;
}

static void test_max_hotplug_devices(const char *build)
{
	bool last = true;

	/* bf3: max_hotplug_devices 15, the 16th hotplug is refused. */
	ITEST_CHECK(test_count_plugged(build, "bf3", &last) == 15);
	ITEST_CHECK(!last);
	ITEST_CHECK(test_count_plugged(build, "unlimited", &last) == 16);
	ITEST_CHECK(last);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("list_devices", test_list_devices, build);
	itest_run("enumerate", test_enumerate, build);
	itest_run("max_hotplug_devices", test_max_hotplug_devices, build);
	return itest_summary();
}
