/* tests/unit/common/cli_opt_test.c - one option table, three renderings: getopt's tables, --help
 * (every option, wrapped, headings) and the man page (placeholders filled, roff escaped). */
#include "common/cli_opt.h"
#include "tests/unit/cunit_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const t_usage[] = {"[options] FILE", NULL};
static const struct cli_opt t_opts[] = {
    {NULL, 0, NULL, "Group one", 0},
    {"alpha", 'a', "N",
     "the first option, with a description long enough to be wrapped over "
     "more than one line of the help text at seventy-nine columns.",
     0},
    {"beta", 300, NULL, "a long-only flag.", 0},
    {NULL, 0, NULL, "Group two", 0},
    {"gamma", 'g', "PATH", "two short letters; \\ and .dots and --alpha mentioned.", 'G'},
};
static const struct cli_prog t_prog = {
    .name = "tprog",
    .section = 8,
    .purpose = "a test program",
    .usage = t_usage,
    .getopt_prefix = "+",
    .opts = t_opts,
    .nr_opts = sizeof(t_opts) / sizeof(t_opts[0]),
    .help_tail = "tail text\n",
};

static char *render(void (*fn)(FILE *out))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fn(f);
	fclose(f);
	return buf;
}

static void help_out(FILE *out)
{
	cli_opt_help(&t_prog, out);
}

static const char *t_tmpl = ".\\\" comment\n@TH@\n@NAME@\n@SYNOPSIS@\n.SH DESCRIPTION\nText.\n"
			    "@OPTIONS@\n.SH \"SEE ALSO\"\n";

static void man_out(FILE *out)
{
	CU_ASSERT_EQUAL(cli_opt_man(&t_prog, t_tmpl, "2026-11-27", "9.9", out), 0);
}

static void test_getopt(void)
{
	struct cli_opt_tables tab;
	struct option *lo = tab.longopts;
	char *so = tab.shortopts;

	CU_ASSERT_EQUAL_FATAL(cli_opt_getopt(&t_prog, &tab), 0);
	CU_ASSERT_STRING_EQUAL(so, "+a:g:G:");
	CU_ASSERT_STRING_EQUAL(lo[0].name, "alpha");
	CU_ASSERT_EQUAL(lo[0].has_arg, required_argument);
	CU_ASSERT_EQUAL(lo[0].val, 'a');
	CU_ASSERT_STRING_EQUAL(lo[1].name, "beta");
	CU_ASSERT_EQUAL(lo[1].has_arg, no_argument);
	CU_ASSERT_EQUAL(lo[1].val, 300);
	CU_ASSERT_STRING_EQUAL(lo[2].name, "gamma");
	CU_ASSERT_PTR_NULL(lo[3].name);
}

static void test_help(void)
{
	char *h = render(help_out);

	CU_ASSERT_PTR_NOT_NULL(strstr(h, "usage: tprog [options] FILE\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(h, "\nGroup one:\n  -a, --alpha N            the first option"));
	CU_ASSERT_PTR_NOT_NULL(strstr(h, "\n      --beta               a long-only flag.\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(h, "  -g, -G, --gamma PATH     two short letters"));
	CU_ASSERT_PTR_NOT_NULL(strstr(h, "\ntail text\n"));
	/* Wrapped: no line past 79 columns, the continuation indented to the column. */
	for (char *line = h, *eol; (eol = strchr(line, '\n')); line = eol + 1)
		CU_ASSERT_TRUE(eol - line <= 79);
	CU_ASSERT_PTR_NOT_NULL(strstr(h, "\n                           "));
	free(h);
}

static void test_man(void)
{
	char *m = render(man_out), *bad = NULL;
	size_t blen;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL(strstr(m,
				      ".\\\" comment\n.TH TPROG 8 \"2026-11-27\" \"nvme-emu 9.9\" "
				      "\"System Administration\"\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, ".SH NAME\ntprog \\- a test program\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, ".SH SYNOPSIS\n.B tprog\n[options] FILE\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m,
				      ".SS \"Group one\"\n.TP\n\\fB\\-a\\fR, \\fB\\-\\-alpha\\fR "
				      "\\fIN\\fR\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, ".TP\n\\fB\\-\\-beta\\fR\na long-only flag.\n"));
	/* Backslashes escaped, option dashes minus signs, a word's hyphen kept. */
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "two short letters; \\e and .dots and \\-\\-alpha "
					 "mentioned."));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "seventy-nine"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "Text.\n.SH OPTIONS\n"));
	CU_ASSERT_PTR_NULL(strchr(m, '@'));
	free(m);
	/* A template without its placeholders is refused, nothing written. */
	f = open_memstream(&bad, &blen);
	CU_ASSERT_EQUAL(cli_opt_man(&t_prog, ".TH X\n@NAME@\n", "d", "v", f), -EINVAL);
	fclose(f);
	CU_ASSERT_EQUAL(blen, 0);
	free(bad);
}

CUNIT_SUITE(cli_opt, NULL, NULL, {"getopt", test_getopt}, {"help", test_help}, {"man", test_man})
