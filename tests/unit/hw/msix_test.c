/* tests/unit/hw/msix_test.c - MSI-X state: raise to eventfds, vector and
 * function masking with PBA latching, delivery on unmask, table and PBA
 * accesses, reset, and raises racing with mask toggles. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hw/hw_internal.h"
#include "tests/unit/cunit_runner.h"

static struct hw_msix m;
static int efd[4];

static void msix_before(void)
{
	CU_ASSERT_FATAL(hw_msix_init(&m, 4) == 0);
	for (int i = 0; i < 4; i++) {
		efd[i] = eventfd(0, EFD_NONBLOCK);
		CU_ASSERT_FATAL(efd[i] >= 0);
	}
}

static void msix_after(void)
{
	hw_msix_fini(&m);
	for (int i = 0; i < 4; i++)
		close(efd[i]);
}

/* The eventfd counter of vector i (reset to 0), 0 if it was not signalled. */
static uint64_t msix_count(int i)
{
	uint64_t v = 0;

	if (read(efd[i], &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static void msix_set_ctrl(uint16_t v, uint32_t ctrl)
{
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16u * v + 12, &ctrl, 4, true), 0);
}

static uint64_t msix_pba(void)
{
	uint64_t p = 0;

	CU_ASSERT_EQUAL(hw_msix_pba_access(&m, 0, &p, 8, false), 0);
	return p;
}

static void test_raise_basic(void)
{
	msix_before();
	/* Disabled: dropped. */
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 0), -ENODEV);
	hw_msix_set_state(&m, true, false);
	/* Enabled without an eventfd: dropped. */
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 0), -ENODEV);
	hw_msix_set_fd(&m, 0, dup(efd[0]));
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 0), 0);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 0), 0);
	CU_ASSERT_EQUAL(msix_count(0), 2);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 4), -ENODEV); /* out of range */
	CU_ASSERT_EQUAL(atomic_load(&m.raised), 2);
	msix_after();
}

static void test_vector_mask_pba_unmask(void)
{
	msix_before();
	hw_msix_set_state(&m, true, false);
	hw_msix_set_fd(&m, 2, dup(efd[2]));
	msix_set_ctrl(2, 1);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 2), 1);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 2), 1);
	CU_ASSERT_EQUAL(msix_count(2), 0);
	CU_ASSERT_EQUAL(msix_pba(), 1u << 2);
	CU_ASSERT_TRUE(hw_msix_pending(&m, 2));
	/* PBA is read-only. */
	uint64_t zero = 0;

	hw_msix_pba_access(&m, 0, &zero, 8, true);
	CU_ASSERT_EQUAL(msix_pba(), 1u << 2);
	/* Unmask: one delivery for the pended raises, bit cleared. */
	msix_set_ctrl(2, 0);
	CU_ASSERT_EQUAL(msix_count(2), 1);
	CU_ASSERT_EQUAL(msix_pba(), 0);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 2), 0);
	CU_ASSERT_EQUAL(msix_count(2), 1);
	msix_after();
}

static void test_function_mask(void)
{
	msix_before();
	hw_msix_set_state(&m, true, true);
	hw_msix_set_fd(&m, 0, dup(efd[0]));
	hw_msix_set_fd(&m, 1, dup(efd[1]));
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 0), 1);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 1), 1);
	CU_ASSERT_EQUAL(msix_pba(), 3);
	/* Vector 1 is also masked in its entry: stays pending. */
	msix_set_ctrl(1, 1);
	hw_msix_set_state(&m, true, false);
	CU_ASSERT_EQUAL(msix_count(0), 1);
	CU_ASSERT_EQUAL(msix_count(1), 0);
	CU_ASSERT_EQUAL(msix_pba(), 2);
	msix_set_ctrl(1, 0);
	CU_ASSERT_EQUAL(msix_count(1), 1);
	/* Masked with no eventfd: pended, delivered once an fd arrives. */
	hw_msix_set_state(&m, true, true);
	CU_ASSERT_EQUAL(hw_msix_raise_num(&m, 3), 1);
	hw_msix_set_state(&m, true, false);
	CU_ASSERT_TRUE(hw_msix_pending(&m, 3));
	hw_msix_set_fd(&m, 3, dup(efd[3]));
	CU_ASSERT_EQUAL(msix_count(3), 1);
	CU_ASSERT_FALSE(hw_msix_pending(&m, 3));
	msix_after();
}

static void test_table_access(void)
{
	uint32_t v;
	uint64_t q;

	msix_before();
	v = 0xfee00000;
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16, &v, 4, true), 0);
	v = 0x4041;
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 24, &v, 4, true), 0);
	q = 0;
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16, &q, 8, false), 0);
	CU_ASSERT_EQUAL(q, 0xfee00000ull);
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 24, &v, 4, false), 0);
	CU_ASSERT_EQUAL(v, 0x4041);
	/* Entries beyond num_msix read 0; odd sizes are refused (reads ~0). */
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16 * 10, &v, 4, false), 0);
	CU_ASSERT_EQUAL(v, 0);
	uint16_t h = 0;

	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16, &h, 2, false), 0);
	CU_ASSERT_EQUAL(h, 0xffff);
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 18, &v, 4, false), 0);
	CU_ASSERT_EQUAL(v, 0xffffffff);
	hw_msix_reset(&m);
	CU_ASSERT_EQUAL(hw_msix_table_access(&m, 16, &v, 4, false), 0);
	CU_ASSERT_EQUAL(v, 0);
	CU_ASSERT_FALSE(atomic_load(&m.enabled));
	msix_after();
}

struct msix_race {
	int raised;
	int pended;
};

static void *msix_raiser(void *arg)
{
	struct msix_race *r = arg;

	for (int i = 0; i < 20000; i++) {
		int rc = hw_msix_raise_num(&m, 0);

		if (rc == 0)
			r->raised++;
		else if (rc == 1)
			r->pended++;
	}
	return NULL;
}

/* Raises racing with mask toggles: after the final unmask no pending bit may
 * be left behind and at least one signal must have been delivered after the
 * last pended raise. */
static void test_raise_races_unmask(void)
{
	struct msix_race r = {0};
	pthread_t th;

	msix_before();
	hw_msix_set_state(&m, true, false);
	hw_msix_set_fd(&m, 0, dup(efd[0]));
	CU_ASSERT_FATAL(pthread_create(&th, NULL, msix_raiser, &r) == 0);
	for (int i = 0; i < 2000; i++) {
		msix_set_ctrl(0, 1);
		msix_set_ctrl(0, 0);
	}
	pthread_join(th, NULL);
	CU_ASSERT_FALSE(hw_msix_pending(&m, 0));
	CU_ASSERT(msix_count(0) >= 1);
	CU_ASSERT_EQUAL(r.raised + r.pended, 20000);
	msix_after();
}

CUNIT_SUITE(hw_msix, NULL, NULL, {"raise_basic", test_raise_basic},
	    {"vector_mask_pba_unmask", test_vector_mask_pba_unmask},
	    {"function_mask", test_function_mask}, {"table_access", test_table_access},
	    {"raise_races_unmask", test_raise_races_unmask})
