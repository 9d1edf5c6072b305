/* tests/unit/cunit_runner.c - CUnit registry helpers and the summary line. */
#include "tests/unit/cunit_runner.h"

#include <CUnit/Basic.h>
#include <stdio.h>

static int cunit_registry_ready(void)
{
	if (CU_get_registry())
		return 0;
	return CU_initialize_registry() == CUE_SUCCESS ? 0 : -1;
}

int cunit_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc cleanup,
		    const struct cunit_test *tests)
{
	CU_pSuite suite;

	if (cunit_registry_ready())
		return -1;
	suite = CU_add_suite(name, init, cleanup);
	if (!suite)
		return -1;
	for (; tests->name; tests++)
		if (!CU_add_test(suite, tests->name, tests->fn))
			return -1;
	return 0;
}

static int cunit_broken;

void cunit_registration_failed(void)
{
	cunit_broken = 1;
}

int cunit_run_all(void)
{
	unsigned int run, failed;

	if (cunit_broken || cunit_registry_ready()) {
		printf("0 passed, 1 failed\n");
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	/* A suite whose init failed ran nothing: count it as a failure. */
	failed += CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	printf("%u passed, %u failed\n", run >= failed ? run - failed : 0, failed);
	return failed ? 1 : 0;
}
