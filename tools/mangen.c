/* tools/mangen.c - writes a program's man page from its option table (common/cli_opt.h) and the
 * page's template (docs/man/<program>.<section>.in): how the build makes nvme-emu(8),
 * nvme-emu-rpc(8) and nvme-emu-perf(1), whose option lists are then the ones getopt parses and
 * --help prints.
 *
 * Usage: mangen PROGRAM TEMPLATE DATE VERSION OUTPUT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli_nvme_emu.h"
#include "app/cli_rpc.h"
#include "tools/cli_perf.h"

static const struct cli_prog *const mangen_progs[] = {&app_cli_prog, &cli_rpc_prog, &perf_cli_prog};

/* The whole file, NUL-terminated (malloc'ed), or NULL with errno. */
static char *mangen_read(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			char *p = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (!p) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
		if (n < 4096)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	const struct cli_prog *prog = NULL;
	char tmp[4096], *tmpl;
	FILE *out;
	int rc;

	if (argc != 6) {
		fprintf(stderr, "usage: mangen PROGRAM TEMPLATE DATE VERSION OUTPUT\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(mangen_progs) / sizeof(mangen_progs[0]); i++)
		if (!strcmp(mangen_progs[i]->name, argv[1]))
			prog = mangen_progs[i];
	if (!prog) {
		fprintf(stderr, "mangen: no program %s\n", argv[1]);
		return 2;
	}
	tmpl = mangen_read(argv[2]);
	if (!tmpl) {
		fprintf(stderr, "mangen: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[5]);
	out = fopen(tmp, "w");
	if (!out) {
		fprintf(stderr, "mangen: %s: %s\n", tmp, strerror(errno));
		free(tmpl);
		return 1;
	}
	rc = cli_opt_man(prog, tmpl, argv[3], argv[4], out);
	free(tmpl);
	if (fclose(out) || rc) {
		fprintf(stderr, "mangen: %s: %s\n", rc ? argv[2] : tmp,
			rc ? "a placeholder line (@TH@, @NAME@, @SYNOPSIS@, @OPTIONS@) is missing"
			   : strerror(errno));
		remove(tmp);
		return 1;
	}
	if (rename(tmp, argv[5])) {
		fprintf(stderr, "mangen: %s: %s\n", argv[5], strerror(errno));
		remove(tmp);
		return 1;
	}
	return 0;
}
