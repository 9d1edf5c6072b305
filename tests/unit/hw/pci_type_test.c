/* tests/unit/hw/pci_type_test.c - PCI type validation against the bf3 and
 * unlimited profiles: every limit has a failing case naming it. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/hw/hw_test_util.h"

static const struct hw_profile *bf3;
static const struct hw_profile *unlim;

static int hw_type_test_init(void)
{
	bf3 = hw_profile_find("bf3");
	unlim = hw_profile_find("unlimited");
	return bf3 && unlim ? 0 : -1;
}

/* Starts t on p expecting failure with `needle` in the error text; frees t. */
static void hw_type_test_fail(struct hw_pci_type *t, const struct hw_profile *p, const char *needle)
{
	char err[256] = "";
	int rc = hw_pci_type_start(t, p, err, sizeof(err));

	CU_ASSERT_EQUAL(rc, -EINVAL);
	CU_ASSERT_FALSE(hw_pci_type_is_started(t));
	if (!strstr(err, needle)) {
		fprintf(stderr, "expected \"%s\" in \"%s\"\n", needle, err);
		CU_FAIL("error text does not name the limit");
	}
	hw_pci_type_destroy(t);
}

static void hw_type_test_ok(struct hw_pci_type *t, const struct hw_profile *p)
{
	char err[256] = "";
	int rc = hw_pci_type_start(t, p, err, sizeof(err));

	if (rc)
		fprintf(stderr, "unexpected: %s\n", err);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_TRUE(hw_pci_type_is_started(t));
	hw_pci_type_destroy(t);
}

static void test_nvme_layout_fits_bf3(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(11);

	CU_ASSERT_FATAL(t != NULL);
	char err[128];

	hw_type_test_ok(t, bf3);
	t = hw_test_nvme_type(11);
	CU_ASSERT_EQUAL(hw_pci_type_start(t, unlim, err, sizeof(err)), 0);
	/* Frozen once started. */
	CU_ASSERT_EQUAL(hw_pci_type_set_num_msix(t, 2), -EBUSY);
	CU_ASSERT_EQUAL(hw_pci_type_add_stateful_region(t, 0, 0x100, 0x40), -EBUSY);
	CU_ASSERT_EQUAL(hw_pci_type_start(t, unlim, err, sizeof(err)), -EBUSY);
	hw_pci_type_destroy(t);
}

static void test_limit_max_bars(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);

	hw_pci_type_set_memory_bar(t, 2, 12, HW_BAR_MEM_64, false);
	hw_pci_type_set_memory_bar(t, 4, 12, HW_BAR_MEM_64, false);
	hw_type_test_fail(t, bf3, "type_max_bars 2");
}

static void test_limit_bar_log_size(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);

	hw_pci_type_set_memory_bar(t, 2, 11, HW_BAR_MEM_64, false);
	hw_type_test_fail(t, bf3, "type_log_min_bar_size 12");
	t = hw_test_nvme_type(4);
	hw_pci_type_set_memory_bar(t, 2, 31, HW_BAR_MEM_64, false);
	hw_type_test_fail(t, bf3, "type_log_max_bar_size 30");
}

static void test_limit_bar_kinds(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);

	hw_pci_type_set_memory_bar(t, 2, 12, HW_BAR_MEM_32, false);
	hw_type_test_fail(t, bf3, "bar_is_32_bit_supported");
	t = hw_test_nvme_type(4);
	hw_pci_type_set_io_bar(t, 2, 4);
	hw_type_test_fail(t, bf3, "bar_is_io_supported");
	/* Unlimited takes both, and an I/O BAR is bounded by PCI. */
	t = hw_test_nvme_type(4);
	hw_pci_type_set_memory_bar(t, 2, 12, HW_BAR_MEM_32, true);
	hw_pci_type_set_io_bar(t, 3, 5);
	hw_type_test_ok(t, unlim);
	t = hw_test_nvme_type(4);
	hw_pci_type_set_io_bar(t, 2, 9);
	hw_type_test_fail(t, unlim, "I/O BAR log size 9");
}

static void test_64bit_bar_pairs(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);

	/* BAR1 is BAR0's upper half. */
	hw_pci_type_set_memory_bar(t, 1, 12, HW_BAR_MEM_32, false);
	hw_type_test_fail(t, unlim, "upper half of 64-bit BAR 0");
	t = hw_test_nvme_type(4);
	hw_pci_type_set_memory_bar(t, 5, 12, HW_BAR_MEM_64, false);
	hw_type_test_fail(t, unlim, "needs BAR 6");
}

static void test_limit_msix(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(12);

	CU_ASSERT_FATAL(t != NULL);

	hw_type_test_fail(t, bf3, "type_max_num_msix 11");
	/* Table too small for the vectors (16 bytes each). */
	t = hw_pci_type_create("small-table");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 8);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x40);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1000, 0x8);
	hw_type_test_fail(t, unlim, "too small for 8 vectors");
	/* PBA too small for the pending bits. */
	t = hw_pci_type_create("small-pba");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 65);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 65 * 16);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1000, 0x8);
	hw_type_test_fail(t, unlim, "too small for 65 pending bits");
	/* Vectors without a table. */
	t = hw_pci_type_create("no-table");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 2);
	hw_type_test_fail(t, unlim, "need an MSI-X table");
}

static void test_limit_db_size_and_stride(void)
{
	struct hw_pci_type *t = hw_pci_type_create("db");

	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 0, 2);
	hw_type_test_fail(t, bf3, "type_log_min_db_size 1");
	/* Above 2 (8-byte doorbells) is refused by the setter already. */
	t = hw_pci_type_create("db");
	CU_ASSERT_EQUAL(hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 3, 3), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_add_db_by_data_region(t, 0, 0x1000, 0x1000, 2, 4, 0), -EINVAL);
	hw_pci_type_destroy(t);

	t = hw_pci_type_create("stride");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 1, 1);
	hw_type_test_fail(t, bf3, "type_log_min_db_stride_size 2");
	t = hw_pci_type_create("stride");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 2, 13);
	hw_type_test_fail(t, bf3, "type_log_max_db_stride_size 12");
}

static void test_limit_db_blocks(void)
{
	struct hw_pci_type *t = hw_pci_type_create("db");

	hw_pci_type_set_memory_bar(t, 0, 18, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x800, 2, 2);
	hw_type_test_fail(t, bf3, "bar_db_region_block_size 4096");
	t = hw_pci_type_create("db");
	hw_pci_type_set_memory_bar(t, 0, 18, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x0, 17 * 4096, 2, 2);
	hw_type_test_fail(t, bf3, "bar_db_region_max_num_region_blocks 16");
	t = hw_pci_type_create("db");
	hw_pci_type_set_memory_bar(t, 0, 18, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_data_region(t, 0, 0x800, 0x1000, 2, 3, 1);
	hw_type_test_fail(t, bf3, "bar_db_region_start_addr_alignment 4096");
}

static void test_limit_db_region_counts(void)
{
	struct hw_pci_type *t = hw_pci_type_create("db");

	hw_pci_type_set_memory_bar(t, 0, 16, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 2, 2);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x2000, 0x1000, 2, 2);
	hw_pci_type_add_db_by_data_region(t, 0, 0x3000, 0x1000, 2, 3, 1);
	hw_type_test_fail(t, bf3, "bar_max_bar_db_regions 2");
	t = hw_pci_type_create("db");
	hw_pci_type_set_memory_bar(t, 0, 16, HW_BAR_MEM_64, false);
	hw_pci_type_set_memory_bar(t, 2, 16, HW_BAR_MEM_64, false);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x1000, 0x1000, 2, 2);
	hw_pci_type_add_db_by_offset_region(t, 0, 0x2000, 0x1000, 2, 2);
	hw_pci_type_add_db_by_data_region(t, 2, 0x3000, 0x1000, 2, 3, 1);
	hw_type_test_fail(t, bf3, "type_max_bar_db_regions 2");
}

static void test_limit_stateful(void)
{
	struct hw_pci_type *t = hw_pci_type_create("st");

	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_stateful_region(t, 0, 0, 0x50);
	hw_type_test_fail(t, bf3, "bar_stateful_region_block_size 64");
	t = hw_pci_type_create("st");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_stateful_region(t, 0, 0, 0x140);
	hw_type_test_fail(t, bf3, "bar_stateful_region_max_num_region_blocks 4");
	t = hw_pci_type_create("st");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_stateful_region(t, 0, 0x20, 0x40);
	hw_type_test_fail(t, bf3, "bar_stateful_region_start_addr_alignment 64");
	t = hw_pci_type_create("st");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_stateful_region(t, 0, 0x0, 0x40);
	hw_pci_type_add_stateful_region(t, 0, 0x100, 0x40);
	hw_type_test_fail(t, bf3, "bar_max_bar_stateful_regions 1");
	t = hw_pci_type_create("st");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_memory_bar(t, 2, 14, HW_BAR_MEM_64, false);
	hw_pci_type_add_stateful_region(t, 0, 0x0, 0x40);
	hw_pci_type_add_stateful_region(t, 2, 0x0, 0x40);
	hw_type_test_fail(t, bf3, "type_max_bar_stateful_regions 1");
}

static void test_limit_msix_regions(void)
{
	struct hw_pci_type *t = hw_pci_type_create("m");

	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x800);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1000, 0x1000);
	hw_type_test_fail(t, bf3, "bar_msix_table_region_block_size 4096");
	t = hw_pci_type_create("m");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x2000);
	hw_pci_type_add_msix_pba_region(t, 0, 0x2000, 0x1000);
	hw_type_test_fail(t, bf3, "bar_msix_table_region_max_num_region_blocks 1");
	t = hw_pci_type_create("m");
	hw_pci_type_set_memory_bar(t, 0, 15, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x800, 0x1000);
	hw_pci_type_add_msix_pba_region(t, 0, 0x2000, 0x1000);
	hw_type_test_fail(t, bf3, "bar_msix_table_region_start_addr_alignment 4096");
	t = hw_pci_type_create("m");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x1000);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1000, 0x800);
	hw_type_test_fail(t, bf3, "bar_msix_pba_region_block_size 4096");
	t = hw_pci_type_create("m");
	hw_pci_type_set_memory_bar(t, 0, 14, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x1000);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1000, 0x2000);
	hw_type_test_fail(t, bf3, "bar_msix_pba_region_max_num_region_blocks 1");
	t = hw_pci_type_create("m");
	hw_pci_type_set_memory_bar(t, 0, 15, HW_BAR_MEM_64, false);
	hw_pci_type_set_num_msix(t, 4);
	hw_pci_type_add_msix_table_region(t, 0, 0x0, 0x1000);
	hw_pci_type_add_msix_pba_region(t, 0, 0x1800, 0x1000);
	hw_type_test_fail(t, bf3, "bar_msix_pba_region_start_addr_alignment 4096");
	t = hw_test_nvme_type(4);
	hw_pci_type_add_msix_table_region(t, 0, 0x3800, 0x10);
	hw_type_test_fail(t, unlim, "more than one MSI-X table");
}

static void test_limit_region_counts(void)
{
	struct hw_pci_type *t = hw_pci_type_create("many");

	/* 13 regions in one BAR (checked before the per-kind limits). */
	hw_pci_type_set_memory_bar(t, 0, 20, HW_BAR_MEM_64, false);
	for (unsigned int i = 0; i < 13; i++)
		hw_pci_type_add_stateful_region(t, 0, 0x1000ull * i, 0x40);
	hw_type_test_fail(t, bf3, "bar_max_bar_regions 12");
	/* 7 + 6 over two BARs: each BAR fits, the type does not. */
	t = hw_pci_type_create("many");
	hw_pci_type_set_memory_bar(t, 0, 20, HW_BAR_MEM_64, false);
	hw_pci_type_set_memory_bar(t, 2, 20, HW_BAR_MEM_64, false);
	for (unsigned int i = 0; i < 13; i++)
		hw_pci_type_add_stateful_region(t, i < 7 ? 0 : 2, 0x1000ull * i, 0x40);
	hw_type_test_fail(t, bf3, "type_max_bar_regions 12");
}

static void test_region_placement(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);

	hw_pci_type_add_stateful_region(t, 0, 0x3f00, 0x200);
	hw_type_test_fail(t, unlim, "outside the BAR size");
	t = hw_test_nvme_type(4);
	hw_pci_type_add_stateful_region(t, 0, 0x80, 0x40);
	hw_type_test_fail(t, unlim, "overlaps");
	t = hw_test_nvme_type(4);
	hw_pci_type_add_stateful_region(t, 2, 0x0, 0x40);
	hw_type_test_fail(t, unlim, "BAR 2 not declared");
	t = hw_pci_type_create("z");
	CU_ASSERT_EQUAL(hw_pci_type_add_stateful_region(t, 0, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_add_stateful_region(t, 6, 0, 64), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_add_stateful_region(t, 0, UINT64_MAX - 2, 64), -EINVAL);
	hw_pci_type_destroy(t);
}

static void test_type_stateful_default(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);

	CU_ASSERT_FATAL(t != NULL);
	uint32_t v = 0x12345678;

	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0x8, &v, 4), 0);
	/* Not inside one stateful region. */
	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0xfe, &v, 4), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0x1000, &v, 4), -EINVAL);
	hw_pci_type_destroy(t);
}

/* Device memory: page aligned (so never in an I/O BAR), none under bf3 (DOCA DevEmu has no such
 * region kind); a device's is mapped by the client in trap mode too, and trapped accesses
 * reach the same bytes. */
static void test_memory_region(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);
	struct vfu_region_desc desc;
	struct evloop *loop;
	struct hw_dev *dev;
	uint64_t size = 0;
	uint8_t *mem;
	uint32_t v = 0x12345678, r = 0;

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(hw_pci_type_add_memory_region(t, 2, 0x800, 0x1000), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_add_memory_region(t, 2, 0, 0x1800), -EINVAL);
	CU_ASSERT_EQUAL(hw_pci_type_set_memory_bar(t, 2, 21, HW_BAR_MEM_64, true), 0);
	CU_ASSERT_EQUAL(hw_pci_type_add_memory_region(t, 2, 0, 2u << 20), 0);
	hw_type_test_fail(t, bf3, "type_max_bar_mem_regions 0");
	t = hw_test_nvme_type(4);
	CU_ASSERT_EQUAL(hw_pci_type_set_io_bar(t, 2, 8), 0);
	CU_ASSERT_EQUAL(hw_pci_type_add_memory_region(t, 2, 0, 0x1000), 0);
	hw_type_test_fail(t, unlim, "outside the BAR size");

	t = hw_test_nvme_type(4);
	CU_ASSERT_EQUAL(hw_pci_type_set_memory_bar(t, 2, 21, HW_BAR_MEM_64, true), 0);
	CU_ASSERT_EQUAL(hw_pci_type_add_memory_region(t, 2, 0, 2u << 20), 0);
	CU_ASSERT_FATAL(hw_pci_type_start(t, unlim, NULL, 0) == 0);
	loop = evloop_create();
	CU_ASSERT_FATAL(loop != NULL);
	dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_TRAP);
	CU_ASSERT_FATAL(dev != NULL);
	mem = hw_dev_memory(dev, 2, 0, &size);
	CU_ASSERT_FATAL(mem != NULL);
	CU_ASSERT_EQUAL(size, 2u << 20);
	CU_ASSERT_PTR_NULL(hw_dev_memory(dev, 0, 0, &size));
	/* BAR2 is one sparse area with its fd; BAR0's doorbells stay trapped. */
	hw_bar_region_desc(dev, 2, &desc);
	CU_ASSERT(desc.flags & VFIO_REGION_INFO_FLAG_MMAP);
	CU_ASSERT(desc.mmap_fd >= 0 && desc.nr_sparse == 1 && desc.sparse[0].size == 2u << 20);
	hw_bar_region_desc(dev, 0, &desc);
	CU_ASSERT_FALSE(desc.flags & VFIO_REGION_INFO_FLAG_MMAP);
	CU_ASSERT_EQUAL(hw_bar_access(dev, 2, 0x1000, &v, 4, true), 0);
	CU_ASSERT_EQUAL(memcmp(mem + 0x1000, &v, 4), 0);
	mem[0x2000] = 0xab;
	CU_ASSERT_EQUAL(hw_bar_access(dev, 2, 0x2000, &r, 1, false), 0);
	CU_ASSERT_EQUAL(r, 0xab);
	/* An FLR leaves device memory alone. */
	hw_bars_reset(dev);
	CU_ASSERT_EQUAL(mem[0x2000], 0xab);
	CU_ASSERT_EQUAL(hw_dev_destroy(dev), 0);
	hw_pci_type_destroy(t);
	evloop_destroy(loop);
}

static void test_profile_print(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	hw_profile_print(bf3, f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "profile bf3\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "max_hotplug_devices 15\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "type_max_num_msix 11\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "type_max_num_db 64\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "bar_db_region_block_size 4096\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "bar_is_32_bit_supported unsupported\n"));
	/* Every line is "key value". */
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strchr(line, ' ');

		CU_ASSERT(sp && sp != line && sp[1] && !strchr(sp + 1, ' '));
	}
	free(buf);
	CU_ASSERT_PTR_NULL(hw_profile_find("bf2"));
	CU_ASSERT_PTR_NULL(hw_profile_find(NULL));
}

CUNIT_SUITE(
    hw_pci_type, hw_type_test_init, NULL, {"nvme_layout_fits_bf3", test_nvme_layout_fits_bf3},
    {"limit_max_bars", test_limit_max_bars}, {"limit_bar_log_size", test_limit_bar_log_size},
    {"limit_bar_kinds", test_limit_bar_kinds}, {"64bit_bar_pairs", test_64bit_bar_pairs},
    {"limit_msix", test_limit_msix}, {"limit_db_size_and_stride", test_limit_db_size_and_stride},
    {"limit_db_blocks", test_limit_db_blocks},
    {"limit_db_region_counts", test_limit_db_region_counts},
    {"limit_stateful", test_limit_stateful}, {"limit_msix_regions", test_limit_msix_regions},
    {"limit_region_counts", test_limit_region_counts}, {"region_placement", test_region_placement},
    {"type_stateful_default", test_type_stateful_default}, {"memory_region", test_memory_region},
    {"profile_print", test_profile_print})
