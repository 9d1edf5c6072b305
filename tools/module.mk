# tools/: programs for users beside the daemon. nvme-emu-perf: a native vfio-user NVMe host that
# measures a server (IOPS, MiB/s, latency percentiles, client and server CPU).
PROGRAMS += nvme-emu-perf
nvme-emu-perf_SRCS := tools/nvme_emu_perf.c tools/cli_perf.c
nvme-emu-perf_LIBS := host common
nvme-emu-perf_LDLIBS :=

# mangen: writes a program's man page from its option table and docs/man/<page>.in (the build's
# tool, not installed; packaging/module.mk runs it).
PROGRAMS += mangen
mangen_SRCS := tools/mangen.c app/cli_nvme_emu.c app/cli_rpc.c tools/cli_perf.c
mangen_LIBS := common
