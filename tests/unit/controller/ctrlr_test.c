/* tests/unit/controller/ctrlr_test.c - controller objects: config validation, namespace add and
 * remove (ids, claims, released bdevs), destroy with live queues refused, statistics. */
#include <errno.h>
#include <string.h>

#include "tests/unit/controller/loopback.h"
#include "tests/unit/cunit_runner.h"

static void test_config_checks(void)
{
	struct ctrlr_config cfg;
	struct lb lb;

	lb_default_config(&cfg);
	cfg.serial = NULL;
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.serial = "012345678901234567890"; /* 21 characters */
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.max_io_queues = 0;
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.max_queue_entries = 1;
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.max_queue_entries = 8192;
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.mdts = 9;
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	lb_default_config(&cfg);
	cfg.model = "0123456789012345678901234567890123456789X";
	CU_ASSERT_EQUAL(lb_init(&lb, &cfg), -EINVAL);
	/* Defaults fill in. */
	lb_default_config(&cfg);
	cfg.max_queue_entries = 0;
	cfg.mdts = 0;
	cfg.model = NULL;
	cfg.firmware_rev = NULL;
	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, &cfg), 0);
	CU_ASSERT_EQUAL(lb_reg_read64(&lb, NVME_REG_CAP) & 0xffff, 1023);
	lb_fini(&lb);
}

static void test_namespaces(void)
{
	struct lb lb;
	struct bdev *b512, *b4k;

	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("ns_a", 64, 512, NULL, &b512), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("ns_b", 16, 4096, NULL, &b4k), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 0, b512, NULL), 1);
	/* Claimed by the first namespace. */
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 0, b512, NULL), -EBUSY);
	CU_ASSERT_EQUAL(bdev_delete("ns_a"), -EBUSY);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 1, b4k, NULL), -EEXIST);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, CTRLR_MAX_NAMESPACES + 1, b4k, NULL), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 0, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 0, b4k, NULL), 2);
	CU_ASSERT_EQUAL(ctrlr_ns_count(lb.ctrlr), 2);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 1), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 1), -ENOENT);
	CU_ASSERT_EQUAL(ctrlr_ns_remove(lb.ctrlr, 0), -ENOENT);
	CU_ASSERT_EQUAL(ctrlr_ns_count(lb.ctrlr), 1);
	/* Released once the transport dropped its channels (asynchronously): still held right
	 * after the removal, then it can be deleted, and the id is free again. */
	CU_ASSERT_EQUAL(bdev_delete("ns_a"), -EBUSY);
	lb_pump(&lb);
	CU_ASSERT_EQUAL(bdev_delete("ns_a"), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("ns_a", 64, 512, NULL, &b512), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 1, b512, NULL), 1);
	lb_fini(&lb);
}

static void test_ns_ids_from_opts(void)
{
	static const uint8_t nguid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	static const uint8_t eui64[8] = {0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x22};
	struct ctrlr_ns_opts opts = {.nguid = nguid, .eui64 = eui64};
	struct nvme_id_ns *id;
	struct nvme_sqe sqe;
	struct bdev *b;
	struct lb lb;
	uint64_t buf;

	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(bdev_malloc_create("ns_ids", 64, 512, NULL, &b), 0);
	CU_ASSERT_EQUAL(ctrlr_ns_add(lb.ctrlr, 4, b, &opts), 4);
	CU_ASSERT_EQUAL(lb_enable(&lb, 16) & 1, 1);
	buf = lb_alloc(&lb, 4096);
	id = lb_ptr(&lb, buf);
	sqe = lb_sqe(NVME_ADM_IDENTIFY, 4);
	sqe.dptr.prp.prp1 = buf;
	CU_ASSERT_EQUAL(lb_cmd(&lb, 0, &sqe, NULL), 0);
	CU_ASSERT_EQUAL(memcmp(id->nguid, nguid, 16), 0);
	CU_ASSERT_EQUAL(memcmp(id->eui64, eui64, 8), 0);
	lb_fini(&lb);
}

static void test_destroy_busy(void)
{
	struct lb lb;

	CU_ASSERT_EQUAL_FATAL(lb_init(&lb, NULL), 0);
	CU_ASSERT_EQUAL(lb_enable(&lb, 16) & 1, 1);
	CU_ASSERT_EQUAL(lb_create_qpair(&lb, 1, 16, 1, true), 0);
	/* Live I/O queues: the transport must reset first. */
	CU_ASSERT_EQUAL(ctrlr_destroy(lb.ctrlr, NULL, NULL), -EBUSY);
	CU_ASSERT_EQUAL(ctrlr_destroy(NULL, NULL, NULL), 0);
	lb_fini(&lb);
}

CUNIT_SUITE(ctrlr, NULL, NULL, {"config_checks", test_config_checks},
	    {"namespaces", test_namespaces}, {"ns_ids_from_opts", test_ns_ids_from_opts},
	    {"destroy_busy", test_destroy_busy})
