# tests/perf: `make bench` is tests/perf/bench.sh: native-bench.sh (nvme-emu-perf against
# nvme-emu), guest-bench.sh (nvme-emu vs QEMU's NVMe and virtio-blk in one guest) and the DPA
# model benches, then bench_report.py writes build/bench/report.md and plots and prints the
# summary; ends with "N passed, N failed". dpa-bench measures the DPA model over a fake of hw/,
# dpa-bench-hw the same over the real device and vfio-user socket.
BENCHES += tests/perf/bench.sh
PROGRAMS += dpa-bench dpa-bench-hw
dpa-bench_SRCS := tests/perf/dpa_bench.c tests/perf/dpa_bench_core.c tests/unit/dpa/fake_hw.c
dpa-bench_LIBS := dpa common
dpa-bench-hw_SRCS := tests/perf/dpa_bench_hw.c tests/perf/dpa_bench_core.c
dpa-bench-hw_LIBS := dpa hw vfu host common

# make test: the whole bench pipeline in its quick mode (about a minute), report checked.
GUEST_TESTS += tests/perf/test-bench-quick.sh

# Part "cluster" (cluster-bench.sh): N daemons sharing one RBD image's reservations through RADOS.
PROGRAMS += cluster_bench
cluster_bench_SRCS := tests/perf/cluster_bench.c tests/integration/rados/resv_host.c \
		      tests/integration/nvme_itest.c tests/integration/itest.c
cluster_bench_LIBS := host common
