/* app/cli_rpc.h - nvme-emu-rpc's command line (the table in cli_rpc.c). */
#ifndef NVME_EMU_APP_CLI_RPC_H
#define NVME_EMU_APP_CLI_RPC_H

#include "common/cli_opt.h"

extern const struct cli_prog cli_rpc_prog;

#endif
