/* tests/unit/app/prom_text_test.c - the exposition format 0.0.4 as written: a family's HELP and
 * TYPE once, its samples together whatever order they came in, label values and HELP escaped,
 * histograms cumulative with +Inf, _sum and _count, empty families left out, overflow refused. */
#include "app/prom_text.h"
#include "tests/unit/cunit_runner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_families_grouped(void)
{
	struct prom_doc *d = prom_doc_create();
	struct prom_fam *a = prom_fam(d, "t_ops_total", PROM_COUNTER, "Ops.\nSecond \\ line."),
			*b = prom_fam(d, "t_gauge", PROM_GAUGE, "A gauge."),
			*e = prom_fam(d, "t_empty", PROM_GAUGE, "Nothing.");
	struct prom_labels l;
	char *text;
	size_t len;

	CU_ASSERT_PTR_EQUAL(prom_fam(d, "t_ops_total", PROM_COUNTER, "ignored"), a);
	prom_labels_reset(&l);
	prom_label(&l, "dev", "x\"y\\z\nw");
	prom_u64(a, &l, 7);
	prom_double(b, NULL, 0.5);
	prom_labels_reset(&l);
	prom_label_u64(&l, "n", 2);
	prom_u64(a, &l, 18446744073709551615ull);
	prom_double(b, &l, INFINITY);
	(void)e;
	CU_ASSERT_EQUAL_FATAL(prom_doc_render(d, &text, &len), 0);
	CU_ASSERT_EQUAL(strlen(text), len);
	CU_ASSERT_STRING_EQUAL(text, "# HELP t_ops_total Ops.\\nSecond \\\\ line.\n"
				     "# TYPE t_ops_total counter\n"
				     "t_ops_total{dev=\"x\\\"y\\\\z\\nw\"} 7\n"
				     "t_ops_total{n=\"2\"} 18446744073709551615\n"
				     "# HELP t_gauge A gauge.\n"
				     "# TYPE t_gauge gauge\n"
				     "t_gauge 0.5\n"
				     "t_gauge{n=\"2\"} +Inf\n");
	free(text);
	prom_doc_destroy(d);
}

static void test_histogram(void)
{
	struct prom_doc *d = prom_doc_create();
	struct prom_fam *h = prom_fam(d, "t_lat_seconds", PROM_HISTOGRAM, "Latency.");
	static const double le[] = {0.001, 0.0025, INFINITY};
	static const uint64_t counts[] = {3, 0, 2};
	struct prom_labels l;
	char *text;
	size_t len;

	prom_labels_reset(&l);
	prom_label(&l, "op", "read");
	prom_histogram(h, &l, le, counts, 3, 1.5);
	CU_ASSERT_EQUAL_FATAL(prom_doc_render(d, &text, &len), 0);
	CU_ASSERT_STRING_EQUAL(text, "# HELP t_lat_seconds Latency.\n"
				     "# TYPE t_lat_seconds histogram\n"
				     "t_lat_seconds_bucket{op=\"read\",le=\"0.001\"} 3\n"
				     "t_lat_seconds_bucket{op=\"read\",le=\"0.0025\"} 3\n"
				     "t_lat_seconds_bucket{op=\"read\",le=\"+Inf\"} 5\n"
				     "t_lat_seconds_sum{op=\"read\"} 1.5\n"
				     "t_lat_seconds_count{op=\"read\"} 5\n");
	free(text);
	prom_doc_destroy(d);
}

static void test_label_overflow(void)
{
	struct prom_doc *d = prom_doc_create();
	struct prom_fam *f = prom_fam(d, "t_x", PROM_GAUGE, "x");
	struct prom_labels l;
	char big[PROM_LABELS_MAX + 10], *text;
	size_t len;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	prom_labels_reset(&l);
	prom_label(&l, "v", big);
	CU_ASSERT_TRUE(l.overflow);
	prom_u64(f, &l, 1);
	/* A sample with labels cut short would be a different series: the document fails. */
	CU_ASSERT_EQUAL(prom_doc_render(d, &text, &len), -ENOMEM);
	CU_ASSERT_PTR_NULL(text);
	prom_doc_destroy(d);
}

CUNIT_SUITE(prom_text, NULL, NULL, {"families_grouped", test_families_grouped},
	    {"histogram", test_histogram}, {"label_overflow", test_label_overflow})
