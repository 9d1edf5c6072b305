/* tests/unit/hw/host_mem_test.c - host-memory mmaps over a DMA table filled
 * with memfd windows: bounds, permissions, fd-less windows, iovecs across
 * adjacent windows, copies, async copies, and mmaps dying with the client. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/hw/hw_test_util.h"

#define RAM_SIZE 0x10000u

static struct evloop *loop;
static struct hw_pci_type *type;
static struct hw_dev *dev;
static struct vfu_dma_table *table;
static int ram_fd;
static uint8_t *ram; /* the "guest" view of the memfd */

static int hm_setup(void)
{
	loop = evloop_create();
	type = hw_test_nvme_type(4);
	if (!loop || !type || hw_pci_type_start(type, hw_profile_find("bf3"), NULL, 0))
		return -1;
	return 0;
}

static int hm_teardown(void)
{
	hw_pci_type_destroy(type);
	evloop_destroy(loop);
	return 0;
}

/* Guest RAM: [0x10000, 0x18000) RW from fd offset 0, [0x18000, 0x20000)
 * read-only from fd offset 0x8000, and an fd-less window at 0x40000. */
static void hm_before(void)
{
	dev = hw_test_dev(type, loop, NULL, NULL, HW_DB_MODE_TRAP);
	CU_ASSERT_FATAL(dev != NULL);
	table = vfu_dma_table_create(16);
	CU_ASSERT_FATAL(table != NULL);
	ram_fd = memfd_create("hm-ram", MFD_ALLOW_SEALING);
	CU_ASSERT_FATAL(ram_fd >= 0);
	CU_ASSERT_FATAL(ftruncate(ram_fd, RAM_SIZE) == 0);
	CU_ASSERT_FATAL(fcntl(ram_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd, 0);
	CU_ASSERT_FATAL(ram != MAP_FAILED);
	CU_ASSERT_EQUAL(vfu_dma_table_add(table, 0x10000, 0x8000,
					  VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT,
					  ram_fd, 0),
			0);
	CU_ASSERT_EQUAL(
	    vfu_dma_table_add(table, 0x18000, 0x8000, VFIO_USER_DMA_READ_PROT, ram_fd, 0x8000), 0);
	CU_ASSERT_EQUAL(vfu_dma_table_add(table, 0x40000, 0x1000,
					  VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT, -1,
					  0),
			0);
	dev->dma = table; /* as hotplug does with the endpoint's table */
}

static void hm_after(void)
{
	dev->dma = NULL;
	hw_dev_destroy(dev);
	vfu_dma_table_destroy(table);
	munmap(ram, RAM_SIZE);
	close(ram_fd);
}

static void test_translate_bounds(void)
{
	hm_before();
	struct hw_mmap *map = hw_mmap_create(dev, 0x10000, 0x10000, HW_MMAP_READ | HW_MMAP_WRITE);

	CU_ASSERT_FATAL(map != NULL);
	uint8_t *p = hw_mmap_translate(map, 0x10100, 16, HW_MMAP_WRITE);

	CU_ASSERT_FATAL(p != NULL);
	memcpy(p, "hello", 6);
	CU_ASSERT_STRING_EQUAL((char *)ram + 0x100, "hello"); /* same memory */
	/* The read-only window maps fd offset 0x8000. */
	ram[0x8010] = 0x5a;
	p = hw_mmap_translate(map, 0x18010, 1, HW_MMAP_READ);
	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_EQUAL(*p, 0x5a);
	/* Device writes into the read-only window: refused. */
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x18010, 1, HW_MMAP_WRITE));
	CU_ASSERT_EQUAL(errno, EPERM);
	/* Straddling two windows: no single pointer. */
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x17ff0, 0x20, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, EFAULT);
	/* Outside the mmap's range, though DMA-mapped. */
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x0fff0, 0x20, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, EFAULT);
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x1fff0, 0x20, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, EFAULT);
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, UINT64_MAX - 4, 8, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, EFAULT);
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x10000, 0, HW_MMAP_READ));
	hw_mmap_destroy(map);

	/* Range covering unmapped guest memory: refused there. */
	map = hw_mmap_create(dev, 0x0, 0x100000, HW_MMAP_READ);
	CU_ASSERT_FATAL(map != NULL);
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x30000, 8, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, EFAULT);
	/* fd-less window: no local pointer. */
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x40000, 8, HW_MMAP_READ));
	CU_ASSERT_EQUAL(errno, ENOENT);
	/* The mmap itself is read-only. */
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x10000, 8, HW_MMAP_WRITE));
	CU_ASSERT_EQUAL(errno, EPERM);
	hw_mmap_destroy(map);
	CU_ASSERT_PTR_NULL(hw_mmap_create(dev, 0x0, 0, HW_MMAP_READ));
	CU_ASSERT_PTR_NULL(hw_mmap_create(dev, UINT64_MAX, 2, HW_MMAP_READ));
	CU_ASSERT_PTR_NULL(hw_mmap_create(dev, 0x0, 16, 4));
	hm_after();
}

static void test_iov_and_copy(void)
{
	struct iovec iov[4];
	uint8_t buf[0x40];

	hm_before();
	struct hw_mmap *map = hw_mmap_create(dev, 0x10000, 0x10000, HW_MMAP_READ | HW_MMAP_WRITE);

	CU_ASSERT_FATAL(map != NULL);
	int n = hw_mmap_iov(map, 0x17ff0, 0x20, HW_MMAP_READ, iov, 4);

	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(iov[0].iov_len, 0x10);
	CU_ASSERT_EQUAL(iov[1].iov_len, 0x10);
	CU_ASSERT_EQUAL(hw_mmap_iov(map, 0x17ff0, 0x20, HW_MMAP_WRITE, iov, 4), -EPERM);
	CU_ASSERT_EQUAL(hw_mmap_iov(map, 0x17ff0, 0x20, HW_MMAP_READ, iov, 1), -E2BIG);
	CU_ASSERT_EQUAL(hw_mmap_iov(map, 0x1fff0, 0x20, HW_MMAP_READ, iov, 4), -EFAULT);

	memset(ram + 0x7ff0, 0x11, 0x10);
	memset(ram + 0x8000, 0x22, 0x10);
	CU_ASSERT_EQUAL(hw_mmap_copy_from_host(map, buf, 0x17ff0, 0x20), 0);
	CU_ASSERT_EQUAL(buf[0], 0x11);
	CU_ASSERT_EQUAL(buf[0x1f], 0x22);
	memset(buf, 0x33, sizeof(buf));
	CU_ASSERT_EQUAL(hw_mmap_copy_to_host(map, 0x10200, buf, 0x40), 0);
	CU_ASSERT_EQUAL(ram[0x200], 0x33);
	CU_ASSERT_EQUAL(ram[0x23f], 0x33);
	CU_ASSERT_EQUAL(ram[0x240], 0);
	CU_ASSERT_EQUAL(hw_mmap_copy_to_host(map, 0x18000, buf, 4), -EPERM);
	CU_ASSERT_EQUAL(hw_mmap_copy_to_host(map, 0x1fff0, buf, 0x40), -EFAULT);
	hw_mmap_destroy(map);
	hm_after();
}

static int async_status = 1;

static void hm_done(int status, void *arg)
{
	async_status = status;
}

static void test_async_and_client_gone(void)
{
	uint8_t buf[16] = {0};

	hm_before();
	struct hw_mmap *map = hw_mmap_create(dev, 0x10000, 0x10000, HW_MMAP_READ | HW_MMAP_WRITE);

	CU_ASSERT_FATAL(map != NULL);
	memset(ram + 0x300, 0x44, 16);
	async_status = 1;
	CU_ASSERT_EQUAL(hw_mmap_read_async(map, buf, 0x10300, 16, hm_done, NULL), 0);
	CU_ASSERT_EQUAL(async_status, 1); /* callback deferred, never inline */
	for (int i = 0; i < 5 && async_status == 1; i++)
		evloop_run_once(loop, 10);
	CU_ASSERT_EQUAL(async_status, 0);
	CU_ASSERT_EQUAL(buf[15], 0x44);
	CU_ASSERT_EQUAL(hw_mmap_write_async(map, 0x18000, buf, 16, hm_done, NULL), -EPERM);
	CU_ASSERT_EQUAL(hw_mmap_read_async(map, buf, 0x30000, 16, hm_done, NULL), -EFAULT);

	/* The client goes away: every mmap of its memory is dead. */
	atomic_fetch_add(&dev->client_gen, 1);
	CU_ASSERT_PTR_NULL(hw_mmap_translate(map, 0x10300, 16, HW_MMAP_READ));
	CU_ASSERT_EQUAL(hw_mmap_copy_from_host(map, buf, 0x10300, 16), -EFAULT);
	hw_mmap_destroy(map);
	hm_after();
}

CUNIT_SUITE(hw_host_mem, hm_setup, hm_teardown, {"translate_bounds", test_translate_bounds},
	    {"iov_and_copy", test_iov_and_copy},
	    {"async_and_client_gone", test_async_and_client_gone})
