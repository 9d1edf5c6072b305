/* tests/unit/cunit_main.c - main() of every unit-test program: runs the
 * suites the linked test files registered with CUNIT_SUITE. */
#include "tests/unit/cunit_runner.h"

int main(void)
{
	return cunit_run_all();
}
