# tools/: programs for users beside the daemon. nvme-emu-perf: a native vfio-user NVMe host that
# measures a server (IOPS, MiB/s, latency percentiles, client and server CPU).
PROGRAMS += nvme-emu-perf
nvme-emu-perf_SRCS := tools/nvme_emu_perf.c
nvme-emu-perf_LIBS := host common
nvme-emu-perf_LDLIBS :=
