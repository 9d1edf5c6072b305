/* tests/integration/hw_sample_db_test.c - DOCA "PCI Device DB" sample:
 * driver doorbell writes by offset and by data reach the device's DB objects
 * (value + notification + the MSI-X the sample raises for it), and in mmap
 * mode a store into the mapped doorbell page is seen by polling. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/itest.h"

#define REG_DB_COUNT 0x28
#define REG_LAST_DB_ID 0x2c
#define REG_LAST_DB_VALUE 0x30

static void test_db_by_offset_and_data(const char *build)
{
	struct itest_sample s;
	char line[256];

	if (!ITEST_CHECK(itest_sample_start(&s, build, NULL) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	/* By offset: db_id = (offset - 0x1000) / 4. */
	itest_bar_wr32(c, 0x1000 + 3 * 4, 0x77, true);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 db", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "kind=offset id=3 value=0x77 ") != NULL);
	ITEST_CHECK(itest_bar_rd32(c, REG_DB_COUNT) == 1);
	ITEST_CHECK(itest_bar_rd32(c, REG_LAST_DB_ID) == 3);
	ITEST_CHECK(itest_bar_rd32(c, REG_LAST_DB_VALUE) == 0x77);
	/* By data: the id is value >> 16, whatever the offset in the region. */
	itest_bar_wr32(c, 0x2ffc, (5u << 16) | 0xabcd, false);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 db", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "kind=data id=5 value=0x5abcd ") != NULL);
	ITEST_CHECK(itest_bar_rd32(c, REG_LAST_DB_ID) == 5);
	/* A DB with no object (id 100, beyond the 16 created) notifies nobody;
	 * a wrong-size doorbell write neither. The next event is id 6. */
	itest_bar_wr32(c, 0x2000, (100u << 16) | 1, false);
	uint16_t half = 9;

	ITEST_CHECK(vfu_client_region_write(c, 0, 0x1000 + 4 * 4, &half, 2, false) == 0);
	itest_bar_wr32(c, 0x1000 + 6 * 4, 0x66, false);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 db", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "kind=offset id=6 value=0x66 ") != NULL);
	ITEST_CHECK(itest_bar_rd32(c, REG_DB_COUNT) == 3);
	/* Doorbell -> MSI-X vector id % 8 once MSI-X is enabled. */
	ITEST_CHECK(vfu_client_irq_eventfds(c, VFIO_PCI_MSIX_IRQ_INDEX, 0, 8) == 0);
	itest_cfg_wr(c, 0x86, 0x8000, 2);
	itest_bar_wr32(c, 0x1000 + 11 * 4, 1, true);
	ITEST_CHECK(vfu_client_irq_wait(c, VFIO_PCI_MSIX_IRQ_INDEX, 3, ITEST_TIMEOUT_MS) >= 1);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 db", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "id=11 value=0x1 msix=0") != NULL);
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

static void test_db_mmap_page(const char *build)
{
	static const char *const args[] = {"--doorbells", "mmap", NULL};
	struct vfu_client_region r;
	struct itest_sample s;
	char line[256];

	if (!ITEST_CHECK(itest_sample_start(&s, build, args) == 0))
		goto out;
	struct vfu_client *c = itest_attach(&s, 0);

	if (!c)
		goto out;
	ITEST_CHECK(vfu_client_region_info(c, 0, &r) == 0);
	ITEST_CHECK(r.flags & VFIO_REGION_INFO_FLAG_MMAP);
	/* Exactly the DB-by-offset page; never the MSI-X table or PBA. */
	ITEST_CHECK(r.nr_areas == 1 && r.areas[0].offset == 0x1000 && r.areas[0].size == 0x1000);
	volatile uint32_t *db2 = vfu_client_region_ptr(c, 0, 0x1000 + 2 * 4, 4);

	if (!ITEST_CHECK(db2 != NULL))
		goto out_close;
	*db2 = 0x99; /* a guest store: no message at all */
	ITEST_CHECK(itest_sample_cmd(&s, "dbval 0 2") == 0);
	ITEST_CHECK(itest_sample_expect(&s, "DBVAL", line, sizeof(line), ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(!strcmp(line, "DBVAL sample-0 2 153"));
	/* A trapped write lands in the same page and also notifies. */
	itest_bar_wr32(c, 0x1000 + 2 * 4, 0x9a, false);
	ITEST_CHECK(*db2 == 0x9a);
	ITEST_CHECK(itest_sample_expect(&s, "EVENT sample-0 db", line, sizeof(line),
					ITEST_TIMEOUT_MS) == 0);
	ITEST_CHECK(strstr(line, "kind=offset id=2 value=0x9a ") != NULL);
out_close:
	vfu_client_close(c);
out:
	itest_sample_stop(&s);
}

int main(int argc, char **argv)
{
	const char *build = argc > 1 ? argv[1] : "build";

	itest_run("db_by_offset_and_data", test_db_by_offset_and_data, build);
	itest_run("db_mmap_page", test_db_mmap_page, build);
	return itest_summary();
}
