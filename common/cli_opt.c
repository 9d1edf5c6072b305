/* common/cli_opt.c - getopt tables, --help text and man page sections from one option table. */
#include "common/cli_opt.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* --help: where descriptions start and where lines end. */
#define CLI_HELP_COL 27
#define CLI_HELP_WIDTH 79

static bool cli_opt_has_short(int v)
{
	return v > 0 && v < 256 && isalnum(v);
}

int cli_opt_getopt(const struct cli_prog *p, struct cli_opt_tables *t)
{
	size_t n = 0, k;

	if (p->nr_opts > CLI_OPT_MAX)
		return -E2BIG;
	k = (size_t)snprintf(t->shortopts, sizeof(t->shortopts), "%s", p->getopt_prefix);
	for (size_t i = 0; i < p->nr_opts; i++) {
		const struct cli_opt *o = &p->opts[i];

		if (!o->name)
			continue;
		t->longopts[n++] = (struct option){o->name, o->arg ? required_argument : no_argument,
						   NULL, o->val};
		if (cli_opt_has_short(o->val)) {
			t->shortopts[k++] = (char)o->val;
			if (o->arg)
				t->shortopts[k++] = ':';
		}
		if (cli_opt_has_short(o->short2)) {
			t->shortopts[k++] = (char)o->short2;
			if (o->arg)
				t->shortopts[k++] = ':';
		}
	}
	t->shortopts[k] = '\0';
	t->longopts[n] = (struct option){NULL, 0, NULL, 0};
	return 0;
}

/* "-s, --socket PATH" (the option's left column). */
static void cli_opt_left(const struct cli_opt *o, char *buf, size_t len)
{
	size_t n = 0;

	if (cli_opt_has_short(o->val))
		n += (size_t)snprintf(buf + n, len - n, "-%c, ", o->val);
	if (cli_opt_has_short(o->short2) && n < len)
		n += (size_t)snprintf(buf + n, len - n, "-%c, ", o->short2);
	if (n < len)
		snprintf(buf + n, len - n, "--%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
}

/* Writes `text` as words filling lines from column `col` to CLI_HELP_WIDTH; the first line
 * continues from column `at`. */
static void cli_opt_wrap(FILE *out, const char *text, size_t col, size_t at)
{
	const char *w = text;

	while (*w) {
		size_t len;

		while (*w == ' ')
			w++;
		if (!*w)
			break;
		len = strcspn(w, " ");
		if (at > col && at + 1 + len > CLI_HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', out);
			at++;
		}
		fprintf(out, "%.*s", (int)len, w);
		at += len;
		w += len;
	}
	fputc('\n', out);
}

void cli_opt_help(const struct cli_prog *p, FILE *out)
{
	for (size_t i = 0; p->usage[i]; i++)
		fprintf(out, "%s %s %s\n", i ? "      " : "usage:", p->name, p->usage[i]);
	if (p->nr_opts && p->opts[0].name)
		fputc('\n', out);
	for (size_t i = 0; i < p->nr_opts; i++) {
		const struct cli_opt *o = &p->opts[i];
		char left[128];
		size_t n;

		if (!o->name) {
			fprintf(out, "\n%s:\n", o->help);
			continue;
		}
		cli_opt_left(o, left, sizeof(left));
		/* Long options without a short one line up after where "-x, " would be. */
		n = (size_t)fprintf(out, "  %s%s", cli_opt_has_short(o->val) ? "" : "    ", left);
		if (n + 2 > CLI_HELP_COL) {
			fprintf(out, "\n%*s", CLI_HELP_COL, "");
			n = CLI_HELP_COL;
		} else {
			fprintf(out, "%*s", (int)(CLI_HELP_COL - n), "");
			n = CLI_HELP_COL;
		}
		cli_opt_wrap(out, o->help, CLI_HELP_COL, n);
	}
	if (p->help_tail)
		fprintf(out, "\n%s", p->help_tail);
}

/* Text for roff: backslashes escaped, a dash that starts a word (an option) a minus sign, a line
 * never beginning with a control character. */
static void cli_opt_roff(FILE *out, const char *text)
{
	char prev = ' ';

	if (*text == '.' || *text == '\'')
		fputs("\\&", out);
	for (const char *c = text; *c; prev = *c++) {
		if (*c == '\\')
			fputs("\\e", out);
		else if (*c == '-' && !isalnum((unsigned char)prev))
			fputs("\\-", out);
		else
			fputc(*c, out);
	}
}

static void cli_opt_man_options(const struct cli_prog *p, FILE *out)
{
	fputs(".SH OPTIONS\n", out);
	for (size_t i = 0; i < p->nr_opts; i++) {
		const struct cli_opt *o = &p->opts[i];

		if (!o->name) {
			fputs(".SS \"", out);
			cli_opt_roff(out, o->help);
			fputs("\"\n", out);
			continue;
		}
		fputs(".TP\n", out);
		if (cli_opt_has_short(o->val))
			fprintf(out, "\\fB\\-%c\\fR, ", o->val);
		if (cli_opt_has_short(o->short2))
			fprintf(out, "\\fB\\-%c\\fR, ", o->short2);
		fputs("\\fB", out);
		cli_opt_roff(out, "--");
		cli_opt_roff(out, o->name);
		fputs("\\fR", out);
		if (o->arg) {
			fputs(" \\fI", out);
			cli_opt_roff(out, o->arg);
			fputs("\\fR", out);
		}
		fputc('\n', out);
		cli_opt_roff(out, o->help);
		fputc('\n', out);
	}
}

static bool cli_opt_is(const char *line, size_t len, const char *mark)
{
	return len == strlen(mark) && !memcmp(line, mark, len);
}

static void cli_opt_upper(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(toupper((unsigned char)*s), out);
}

int cli_opt_man(const struct cli_prog *p, const char *tmpl, const char *date, const char *version,
		FILE *out)
{
	static const char *const marks[] = {"@TH@\n", "@NAME@\n", "@SYNOPSIS@\n", "@OPTIONS@\n"};
	const char *line;

	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++)
		if (!strstr(tmpl, marks[m]))
			return -EINVAL;
	for (line = tmpl; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line + 1) : strlen(line);

		if (cli_opt_is(line, len, "@TH@\n")) {
			fputs(".TH ", out);
			cli_opt_upper(out, p->name);
			fprintf(out, " %d \"%s\" \"nvme-emu %s\" \"%s\"\n", p->section, date,
				version,
				p->section == 8 ? "System Administration" : "User Commands");
		} else if (cli_opt_is(line, len, "@NAME@\n")) {
			fprintf(out, ".SH NAME\n%s \\- ", p->name);
			cli_opt_roff(out, p->purpose);
			fputc('\n', out);
		} else if (cli_opt_is(line, len, "@SYNOPSIS@\n")) {
			fputs(".SH SYNOPSIS\n", out);
			for (size_t i = 0; p->usage[i]; i++) {
				fprintf(out, "%s.B %s\n", i ? ".br\n" : "", p->name);
				cli_opt_roff(out, p->usage[i]);
				fputc('\n', out);
			}
		} else if (cli_opt_is(line, len, "@OPTIONS@\n")) {
			cli_opt_man_options(p, out);
		} else {
			fwrite(line, 1, len, out);
		}
		line += len;
	}
	return 0;
}
