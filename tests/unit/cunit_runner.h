/* tests/unit/cunit_runner.h - runs the registered CUnit suites and prints the
 * project's summary line "N passed, N failed". */
#ifndef NVME_EMU_TESTS_CUNIT_RUNNER_H
#define NVME_EMU_TESTS_CUNIT_RUNNER_H

#include <CUnit/CUnit.h>

/* A suite is a name and a NULL-terminated table of tests. */
struct cunit_test {
	const char *name;
	CU_TestFunc fn;
};

/* Registers suite `name` with its tests and optional init/cleanup. Returns 0
 * or -1 (the runner then fails). */
int cunit_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc cleanup,
		    const struct cunit_test *tests);

/* Registers a suite from a constructor, so a test file needs no main():
 * tests/unit/cunit_main.c runs every suite linked in. */
#define CUNIT_SUITE(name, init, cleanup, ...) \
	static void __attribute__((constructor)) cunit_register_##name(void) \
	{ \
		static const struct cunit_test tests_[] = { __VA_ARGS__, { NULL, NULL } }; \
		if (cunit_add_suite(#name, init, cleanup, tests_)) \
			cunit_registration_failed(); \
	}
void cunit_registration_failed(void);

/* Runs everything registered (verbose basic runner), prints the summary line
 * and returns the process exit status: 0 when all passed. */
int cunit_run_all(void);

#endif
