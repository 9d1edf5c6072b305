/* common/cli_opt.h - a program's command line as one table, the single source of getopt_long's
 * options, the --help text and the OPTIONS and SYNOPSIS sections of its man page (tools/mangen.c
 * renders those into docs/man/<program>.<section>.in), so the three cannot drift apart. */
#ifndef NVME_EMU_COMMON_CLI_OPT_H
#define NVME_EMU_COMMON_CLI_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* One option, or (name NULL) a heading that starts a group of them. */
struct cli_opt {
	const char *name; /* long name, without "--" */
	int val;	  /* getopt's value: the short option's letter, or a code >= 256 */
	const char *arg;  /* the argument's name ("PATH"); NULL: the option takes none */
	const char *help; /* one paragraph; a heading's title when name is NULL */
	int short2;	  /* another short letter for the same option (-j for -c), or 0 */
};

struct cli_prog {
	const char *name;
	int section;		   /* of the man page: 1 or 8 */
	const char *purpose;	   /* the NAME line's description */
	const char *const *usage;  /* synopsis lines after the name, NULL-terminated */
	const char *getopt_prefix; /* "" or "+" (options end at the first operand) */
	const struct cli_opt *opts;
	size_t nr_opts;
	const char *help_tail; /* printed by --help after the options, or NULL */
};

/* getopt_long's tables for a program of at most CLI_OPT_MAX options, in the caller's storage (no
 * allocation, nothing to free). */
#define CLI_OPT_MAX 64
struct cli_opt_tables {
	struct option longopts[CLI_OPT_MAX + 1]; /* terminated */
	char shortopts[4 * CLI_OPT_MAX + 2];
};
/* Fills *t from the program's table. Returns 0 or -E2BIG (more than CLI_OPT_MAX options). */
int cli_opt_getopt(const struct cli_prog *p, struct cli_opt_tables *t);
/* --help: usage lines, the options by group (wrapped to 79 columns), the tail. */
void cli_opt_help(const struct cli_prog *p, FILE *out);
/*
 * Writes the man page: `tmpl`, a roff text in which the lines "@TH@", "@NAME@", "@SYNOPSIS@" and
 * "@OPTIONS@" stand for the generated title line and sections (`date` and `version` go in the
 * title). Returns 0, or -EINVAL (a placeholder missing) with nothing written.
 */
int cli_opt_man(const struct cli_prog *p, const char *tmpl, const char *date, const char *version,
		FILE *out);

#endif
