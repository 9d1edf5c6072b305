/* tests/integration/hw_sample_msix_test.c - DOCA "PCI Device MSI-X" sample:
 * the device raises vectors and the client's eventfds fire; a masked vector
 * (entry mask bit or function mask) sets its PBA bit and fires on unmask;
 * raises while MSI-X is disabled are dropped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/itest.h"

#define MSIX_TABLE 0x3000
#define MSIX_PBA 0x4000

static int test_raise(struct itest_sample *s, unsigned int vec)
{
	char line[256];
	int rc = -1000;

	if (itest_sample_cmd(s, "raise 0 %u", vec) ||
	    itest_sample_expect(s, "RAISED", line, sizeof(line), ITEST_TIMEOUT_MS))
		return rc;
	if (sscanf(line, "RAISED sample-0 %*u %d", &rc) != 1)
		return -1000;
	return rc;
}

/* True if the vector's eventfd is signalled now (read without waiting: the
 * device answers "RAISED" only after its eventfd write). */
static bool test_fired_now(struct vfu_client *c, unsigned int vec)
{
	uint64_t v;
	int fd = vfu_client_irq_fd(c, VFIO_PCI_MSIX_IRQ_INDEX, vec);

	return fd >= 0 && read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v) && v >= 1;
}

static void test_msix(const char *build)
{
	struct itest_sample s;
	char line[256];

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(vfu_client_irq_eventfds(c, VFIO_PCI_MSIX_IRQ_INDEX, 0, 8) == 0);
	/* Disabled: dropped. */
	ITEST_CHECK(test_raise(&s, 1) == -ENODEV);
	itest_cfg_wr(c, 0x86, 0x8000, 2);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 msix", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(!strcmp(line, "EVENT sample-0 msix enabled=1 masked=0"));
	ITEST_CHECK(test_raise(&s, 1) == 0);
	ITEST_CHECK(vfu_client_irq_wait(c, VFIO_PCI_MSIX_IRQ_INDEX, 1, ITEST_TIMEOUT_MS) >= 1);

	/* Vector mask bit in the table (QEMU would emulate this itself). */
	itest_bar_wr32(c, MSIX_TABLE + 16 * 2 + 12, 1, false);
	ITEST_CHECK(test_raise(&s, 2) == 1);
	ITEST_CHECK(!test_fired_now(c, 2));
	ITEST_CHECK(itest_bar_rd32(c, MSIX_PBA) == 1u << 2);
	itest_bar_wr32(c, MSIX_TABLE + 16 * 2 + 12, 0, false);
	ITEST_CHECK(vfu_client_irq_wait(c, VFIO_PCI_MSIX_IRQ_INDEX, 2, ITEST_TIMEOUT_MS) >= 1);
	ITEST_CHECK(itest_bar_rd32(c, MSIX_PBA) == 0);

	/* Function mask in config space. */
	itest_cfg_wr(c, 0x86, 0xc000, 2);
	ITEST_CHECK(test_raise(&s, 4) == 1);
	ITEST_CHECK(!test_fired_now(c, 4));
	ITEST_CHECK(itest_bar_rd32(c, MSIX_PBA) == 1u << 4);
	itest_cfg_wr(c, 0x86, 0x8000, 2);
	ITEST_CHECK(vfu_client_irq_wait(c, VFIO_PCI_MSIX_IRQ_INDEX, 4, ITEST_TIMEOUT_MS) >= 1);
	ITEST_CHECK(itest_bar_rd32(c, MSIX_PBA) == 0);

	/* QEMU's disable (count 0) drops the eventfds: raises are dropped. */
	ITEST_CHECK(vfu_client_set_irqs(c, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
					VFIO_PCI_MSIX_IRQ_INDEX, 0, 0, NULL, 0, NULL) == 0);
	ITEST_CHECK(test_raise(&s, 1) == -ENODEV);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("msix", test_msix, build);
	return itest_summary();
}
