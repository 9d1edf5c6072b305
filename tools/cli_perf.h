/* tools/cli_perf.h - nvme-emu-perf's command line (the table in cli_perf.c). */
#ifndef NVME_EMU_TOOLS_CLI_PERF_H
#define NVME_EMU_TOOLS_CLI_PERF_H

#include "common/cli_opt.h"

extern const struct cli_prog perf_cli_prog;

#endif
