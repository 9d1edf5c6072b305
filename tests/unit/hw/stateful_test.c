/* tests/unit/hw/stateful_test.c - stateful regions: default hierarchy (last
 * written > device default > type default > 0, device defaults only after
 * FLR/hotplug), driver-write events, the re-raise rule, query/modify. */
#include <CUnit/CUnit.h>
#include <errno.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/hw/hw_test_util.h"

enum st_mode { ST_IGNORE, ST_QUERY_WRITTEN, ST_QUERY_OTHER, ST_MODIFY_WRITTEN };

static struct evloop *loop;
static unsigned int events;
static enum st_mode mode;
static uint8_t ev_bar;
static uint64_t ev_start;

static void st_on_write(struct hw_dev *dev, uint8_t bar_id, uint64_t region_start, void *arg)
{
	uint32_t v = 0;

	events++;
	ev_bar = bar_id;
	ev_start = region_start;
	switch (mode) {
	case ST_IGNORE:
		break;
	case ST_QUERY_WRITTEN:
		CU_ASSERT_EQUAL(hw_dev_stateful_query(dev, 0, 0x14, &v, 4), 0);
		break;
	case ST_QUERY_OTHER:
		CU_ASSERT_EQUAL(hw_dev_stateful_query(dev, 0, 0x40, &v, 4), 0);
		break;
	case ST_MODIFY_WRITTEN:
		v = 0xabcd;
		CU_ASSERT_EQUAL(hw_dev_stateful_modify(dev, 0, 0x16, &v, 2), 0);
		break;
	}
}

static const struct hw_dev_ops st_ops = {.stateful_write = st_on_write};

static int st_setup(void)
{
	loop = evloop_create();
	return loop ? 0 : -1;
}

static int st_teardown(void)
{
	evloop_destroy(loop);
	return 0;
}

static uint32_t st_guest_read(struct hw_dev *dev, uint64_t off)
{
	uint32_t v = 0;

	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, off, &v, 4, false), 0);
	return v;
}

static void st_guest_write(struct hw_dev *dev, uint64_t off, uint32_t v)
{
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, off, &v, 4, true), 0);
}

static void st_run(int iterations)
{
	for (int i = 0; i < iterations; i++)
		evloop_run_once(loop, 0);
}

static void test_defaults_hierarchy(void)
{
	struct hw_pci_type *t = hw_test_nvme_type(4);
	uint32_t a = 0xaaaaaaaa, b = 0xbbbbbbbb, v;

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0x8, &a, 4), 0);
	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0xc, &a, 4), 0);
	CU_ASSERT_EQUAL(hw_pci_type_start(t, hw_profile_find("bf3"), NULL, 0), 0);
	struct hw_dev *dev = hw_test_dev(t, loop, NULL, NULL, HW_DB_MODE_TRAP);

	CU_ASSERT_FATAL(dev != NULL);
	/* Type defaults are locked while a device exists. */
	CU_ASSERT_EQUAL(hw_pci_type_set_stateful_default(t, 0, 0x8, &b, 4), -EBUSY);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), a);  /* type default */
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x10), 0); /* nothing: 0 */
	CU_ASSERT_EQUAL(hw_dev_set_stateful_default(dev, 0, 0x8, &b, 4), 0);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), a); /* device default not yet */
	CU_ASSERT_EQUAL(hw_dev_flr_start(dev, HW_DEV_EV_FLR), 0);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), 0xffffffffu); /* COMMAND 0 after FLR: no decode */
	CU_ASSERT_EQUAL(hw_test_dev_enable(dev), 0);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), b); /* device default after FLR */
	CU_ASSERT_EQUAL(st_guest_read(dev, 0xc), a); /* type default where none */
	st_guest_write(dev, 0x8, 0x11111111);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), 0x11111111); /* last written */
	CU_ASSERT_EQUAL(hw_dev_stateful_query(dev, 0, 0x8, &v, 4), 0);
	CU_ASSERT_EQUAL(v, 0x11111111);
	v = 0x22222222;
	CU_ASSERT_EQUAL(hw_dev_stateful_modify(dev, 0, 0xc, &v, 4), 0);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0xc), 0x22222222); /* device's write */
	CU_ASSERT_EQUAL(hw_dev_flr_start(dev, HW_DEV_EV_FLR), 0);
	CU_ASSERT_EQUAL(hw_test_dev_enable(dev), 0);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x8), b);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0xc), a);
	/* Bounds of the device API. */
	CU_ASSERT_EQUAL(hw_dev_stateful_query(dev, 0, 0xfe, &v, 4), -EINVAL);
	CU_ASSERT_EQUAL(hw_dev_stateful_query(dev, 0, 0x1000, &v, 4), -EINVAL);
	CU_ASSERT_EQUAL(hw_dev_stateful_modify(dev, 1, 0x0, &v, 4), -EINVAL);
	CU_ASSERT_EQUAL(hw_dev_set_stateful_default(dev, 0, 0x100, &v, 4), -EINVAL);
	hw_dev_destroy(dev);
	hw_pci_type_destroy(t);
}

static struct hw_dev *st_dev(struct hw_pci_type **t)
{
	*t = hw_test_nvme_type(4);
	CU_ASSERT_FATAL(*t != NULL);
	CU_ASSERT_FATAL(hw_pci_type_start(*t, hw_profile_find("bf3"), NULL, 0) == 0);
	struct hw_dev *dev = hw_test_dev(*t, loop, &st_ops, NULL, HW_DB_MODE_TRAP);

	CU_ASSERT_FATAL(dev != NULL);
	events = 0;
	return dev;
}

static void test_event_handled_by_query(void)
{
	struct hw_pci_type *t;
	struct hw_dev *dev = st_dev(&t);

	mode = ST_QUERY_WRITTEN;
	st_guest_write(dev, 0x14, 1);
	st_guest_write(dev, 0x14, 2); /* coalesced with the first */
	CU_ASSERT_EQUAL(events, 0);   /* asynchronous: not from inside the write */
	st_run(20);
	CU_ASSERT_EQUAL(events, 1);
	CU_ASSERT_EQUAL(ev_bar, 0);
	CU_ASSERT_EQUAL(ev_start, 0);
	mode = ST_MODIFY_WRITTEN;
	st_guest_write(dev, 0x14, 3);
	st_run(20);
	CU_ASSERT_EQUAL(events, 2);
	CU_ASSERT_EQUAL(st_guest_read(dev, 0x14), 0xabcd0003);
	hw_dev_destroy(dev);
	hw_pci_type_destroy(t);
}

static void test_event_reraised(void)
{
	struct hw_pci_type *t;
	struct hw_dev *dev = st_dev(&t);

	/* The handler looks elsewhere: raised again, then given up on. */
	mode = ST_QUERY_OTHER;
	st_guest_write(dev, 0x14, 1);
	st_run(50);
	CU_ASSERT_EQUAL(events, 9); /* 1 + 8 re-raises */
	/* A new write re-arms it; this time the handler queries. */
	mode = ST_QUERY_WRITTEN;
	st_guest_write(dev, 0x14, 1);
	st_run(50);
	CU_ASSERT_EQUAL(events, 10);
	/* Ignoring handler: re-raised as well. */
	mode = ST_IGNORE;
	st_guest_write(dev, 0x14, 1);
	st_run(50);
	CU_ASSERT_EQUAL(events, 19);
	/* FLR drops a pending event. */
	st_guest_write(dev, 0x14, 1);
	CU_ASSERT_EQUAL(hw_dev_flr_start(dev, HW_DEV_EV_FLR), 0);
	st_run(20);
	CU_ASSERT_EQUAL(events, 19);
	/* Destroying with an event queued cancels it. */
	st_guest_write(dev, 0x14, 1);
	hw_dev_destroy(dev);
	st_run(5);
	CU_ASSERT_EQUAL(events, 19);
	hw_pci_type_destroy(t);
}

CUNIT_SUITE(hw_stateful, st_setup, st_teardown, {"defaults_hierarchy", test_defaults_hierarchy},
	    {"event_handled_by_query", test_event_handled_by_query},
	    {"event_reraised", test_event_reraised})
