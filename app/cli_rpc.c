/* app/cli_rpc.c - nvme-emu-rpc's options: what rpc_cli.c parses, what --help prints and what
 * nvme-emu-rpc(8) lists (common/cli_opt.h). */
#include "app/cli_rpc.h"

static const char *const cli_rpc_usage[] = {
    "[-s SOCKET] [-t SECONDS] [-r] [-o FILE] METHOD [--param value ...]",
    "[-s SOCKET] [-t SECONDS] [-r] [-o FILE] METHOD '{\"param\": value, ...}'",
    "[-s SOCKET] --help",
    NULL,
};

static const struct cli_opt cli_rpc_opts[] = {
    {"server", 's', "SOCKET",
     "the daemon's JSON-RPC socket (default $XDG_RUNTIME_DIR/nvme-emu.sock, or "
     "/run/nvme-emu/nvme-emu.sock); a unit's is /run/nvme-emu/NAME.sock.",
     0},
    {"timeout", 't', "SECONDS", "give up after SECONDS without an answer (default 120).", 0},
    {"raw", 'r', NULL, "print a string result as JSON too (quoted).", 0},
    {"output", 'o', "FILE",
     "write the result to FILE instead, replacing it whole and durably (save_config -o "
     "config.json: a crash leaves the old file or the new one).",
     0},
    {"help", 'h', NULL, "print this help and the server's methods, and exit.", 0},
};

const struct cli_prog cli_rpc_prog = {
    .name = "nvme-emu-rpc",
    .section = 8,
    .purpose = "send one JSON-RPC request to a running nvme-emu",
    .usage = cli_rpc_usage,
    .getopt_prefix = "+", /* options end at the method: what follows are its parameters */
    .opts = cli_rpc_opts,
    .nr_opts = sizeof(cli_rpc_opts) / sizeof(cli_rpc_opts[0]),
    .help_tail = "--param value: dashes in the name become underscores, a.b nests objects\n"
		 "(--listen-address.traddr /tmp/x.sock). A value that is valid JSON (numbers,\n"
		 "true/false/null, objects, arrays, \"quoted strings\") is sent as such, anything\n"
		 "else as a string: quote digits meant as text ('\"1234\"'). A --flag without a\n"
		 "value is true. The result is printed as JSON; a string result as plain text.\n",
};
