/* tools/cli_perf.c - nvme-emu-perf's options: what nvme_emu_perf.c parses, what --help prints and
 * what nvme-emu-perf(1) lists (common/cli_opt.h). */
#include "tools/cli_perf.h"

static const char *const perf_cli_usage[] = {
    "-s SOCKET [options]",
    NULL,
};

static const struct cli_opt perf_cli_opts[] = {
    {"socket", 's', "PATH", "the vfio-user socket of an NVMe function.", 0},
    {"depth", 'q', "N", "commands in flight per queue (default 32, max 1024).", 0},
    {"size", 'o', "BYTES", "I/O size (default 4096; a multiple of the LBA size).", 0},
    {"workload", 'w', "W", "randread, randwrite, read, write or rw (default randread).", 0},
    {"mix", 'M', "PCT", "reads in percent for rw (default 50).", 0},
    {"time", 't', "SECONDS", "run time (default 5).", 0},
    {"queues", 'n', "N", "I/O queue pairs (default 1, max 32).", 0},
    {"threads", 'c', "N",
     "threads, queues spread over them (default 1; more than one needs mmap doorbells: trapped "
     "ones share the socket).",
     0},
    {"nsid", 'N', "N", "namespace (default 1).", 0},
    {"interrupts", 'I', NULL,
     "sleep on the queue's MSI-X eventfd instead of polling (interrupts per I/O are reported "
     "with one queue per thread).",
     0},
    {"shadow", 'S', NULL,
     "shadow doorbells (Doorbell Buffer Config): doorbells are written only when the "
     "controller's event index asks.",
     0},
    {"write-multi", 'W', NULL,
     "trapped doorbells: the doorbell writes of one poll round go as one REGION_WRITE_MULTI "
     "message (the server must offer write_multiple).",
     0},
    {"verify", 'V', NULL,
     "writes carry a pattern of their LBA, reads check it; with -w write the namespace is "
     "written once, whatever -t says (fill it that way, then -w randread -V checks it all).",
     0},
    {"json", 'j', NULL, "one JSON object instead of the text report.", 0},
    {"help", 'h', NULL, "print this help and exit.", 0},
};

const struct cli_prog perf_cli_prog = {
    .name = "nvme-emu-perf",
    .section = 1,
    .purpose = "measure an NVMe function over vfio-user as a native host",
    .usage = perf_cli_usage,
    .getopt_prefix = "",
    .opts = perf_cli_opts,
    .nr_opts = sizeof(perf_cli_opts) / sizeof(perf_cli_opts[0]),
    .help_tail = NULL,
};
