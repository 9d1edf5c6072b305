/* tests/unit/common/lat_hist_test.c - the log-linear buckets: every value lies in its bucket's
 * [lower, upper), buckets are at most 1/16 of their value wide, the daemon's window clamps, and
 * quantiles are the upper edge where the count reaches the rank. */
#include "common/lat_hist.h"
#include "tests/unit/cunit_runner.h"

#include <math.h>

static void test_bucket_edges(void)
{
	static const uint64_t vals[] = {
	    0,	       1,    15,    16,	   17,	   31,	    32,	     1000,	     1023,
	    1024,      1025, 65535, 65536, 200000, 1000000, 4000000, 17179869183ull, 17179869184ull,
	    1ull << 50};

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		unsigned int b = lat_hist_index(vals[i]);

		CU_ASSERT_TRUE(b < LAT_HIST_ALL);
		CU_ASSERT_TRUE(lat_hist_lower_ns(b) <= (double)vals[i]);
		CU_ASSERT_TRUE((double)vals[i] < lat_hist_upper_ns(b));
		if (vals[i] >= 16)
			CU_ASSERT_TRUE(lat_hist_upper_ns(b) - lat_hist_lower_ns(b) <=
				       (double)vals[i] / 16.0 + 1e-9);
	}
	/* Consecutive buckets meet: no value falls between them. */
	for (unsigned int b = 1; b < 40 * LAT_HIST_SUB; b++)
		CU_ASSERT_DOUBLE_EQUAL(lat_hist_lower_ns(b), lat_hist_upper_ns(b - 1), 1e-6);
}

static void test_window(void)
{
	CU_ASSERT_EQUAL(lat_hist_win_index(0), 0);
	CU_ASSERT_EQUAL(lat_hist_win_index(1023), 0);
	CU_ASSERT_EQUAL(lat_hist_win_index(1024), 1);
	CU_ASSERT_EQUAL(lat_hist_win_index(17179869183ull), LAT_HIST_WIN_BUCKETS - 2);
	CU_ASSERT_EQUAL(lat_hist_win_index(17179869184ull), LAT_HIST_WIN_BUCKETS - 1);
	CU_ASSERT_EQUAL(lat_hist_win_index(UINT64_MAX), LAT_HIST_WIN_BUCKETS - 1);
	CU_ASSERT_DOUBLE_EQUAL(lat_hist_win_upper_ns(0), 1024.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(lat_hist_win_upper_ns(1), 1088.0, 1e-9);
	CU_ASSERT_TRUE(isinf(lat_hist_win_upper_ns(LAT_HIST_WIN_BUCKETS - 1)));
	/* A window bucket has the same upper edge as the whole-range bucket it stands for. */
	for (uint64_t ns = 1024; ns < 1ull << 33; ns = ns * 3 / 2 + 7)
		CU_ASSERT_DOUBLE_EQUAL(lat_hist_win_upper_ns(lat_hist_win_index(ns)),
				       lat_hist_upper_ns(lat_hist_index(ns)), 1e-6);
}

static void test_quantile(void)
{
	uint64_t hist[LAT_HIST_ALL] = {0};

	CU_ASSERT_DOUBLE_EQUAL(lat_hist_quantile_ns(hist, LAT_HIST_ALL, 0, 0.5), 0, 1e-9);
	hist[lat_hist_index(100000)] = 98;
	hist[lat_hist_index(5000000)] = 2;
	CU_ASSERT_DOUBLE_EQUAL(lat_hist_quantile_ns(hist, LAT_HIST_ALL, 100, 0.5),
			       lat_hist_upper_ns(lat_hist_index(100000)), 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(lat_hist_quantile_ns(hist, LAT_HIST_ALL, 100, 0.98),
			       lat_hist_upper_ns(lat_hist_index(100000)), 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(lat_hist_quantile_ns(hist, LAT_HIST_ALL, 100, 0.99),
			       lat_hist_upper_ns(lat_hist_index(5000000)), 1e-6);
}

CUNIT_SUITE(lat_hist, NULL, NULL, {"bucket_edges", test_bucket_edges}, {"window", test_window},
	    {"quantile", test_quantile})
