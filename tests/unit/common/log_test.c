/* tests/unit/common/log_test.c - level parsing, thresholds, rate limit. */
#include "common/log.h"
#include "tests/unit/cunit_runner.h"

static void test_level_parse(void)
{
	CU_ASSERT_EQUAL(log_level_parse("info"), 50);
	CU_ASSERT_EQUAL(log_level_parse("DEBUG"), 60);
	CU_ASSERT_EQUAL(log_level_parse("70"), 70);
	CU_ASSERT_EQUAL(log_level_parse("10"), 10);
	CU_ASSERT_EQUAL(log_level_parse("9"), -1);
	CU_ASSERT_EQUAL(log_level_parse("71"), -1);
	CU_ASSERT_EQUAL(log_level_parse("loud"), -1);
	CU_ASSERT_EQUAL(log_level_parse(""), -1);
	CU_ASSERT_EQUAL(log_level_parse(NULL), -1);
	CU_ASSERT_STRING_EQUAL(log_level_name(40), "warning");
	CU_ASSERT_STRING_EQUAL(log_level_name(55), "info");
}

static void test_threshold(void)
{
	log_set_level(LOG_LEVEL_WARN);
	CU_ASSERT_TRUE(log_enabled(LOG_LEVEL_ERROR));
	CU_ASSERT_FALSE(log_enabled(LOG_LEVEL_INFO));
	log_set_level(5);
	CU_ASSERT_EQUAL(log_get_level(), LOG_LEVEL_DISABLE);
	CU_ASSERT_FALSE(log_enabled(LOG_LEVEL_CRIT));
	log_set_level(LOG_LEVEL_INFO);
}

static void test_ratelimit(void)
{
	struct log_ratelimit rl = { 0 };
	int ok = 0;

	for (int i = 0; i < 100; i++)
		ok += log_ratelimit_ok(&rl, 10);
	/* All 100 fall in at most two one-second windows. */
	CU_ASSERT_TRUE(ok >= 10 && ok <= 20);
}

CUNIT_SUITE(log, NULL, NULL,
	{ "level_parse", test_level_parse },
	{ "threshold", test_threshold },
	{ "ratelimit", test_ratelimit })
