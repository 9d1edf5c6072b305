# tests/perf: benchmarks run by `make bench` (each prints a table and ends
# with "N passed, N failed"). dpa-bench measures the DPA model over a fake
# of hw/, dpa-bench-hw the same over the real device and vfio-user socket.
BENCHES += $(BUILD)/bin/dpa-bench $(BUILD)/bin/dpa-bench-hw
PROGRAMS += dpa-bench dpa-bench-hw
dpa-bench_SRCS := tests/perf/dpa_bench.c tests/perf/dpa_bench_core.c tests/unit/dpa/fake_hw.c
dpa-bench_LIBS := dpa common
dpa-bench-hw_SRCS := tests/perf/dpa_bench_hw.c tests/perf/dpa_bench_core.c
dpa-bench-hw_LIBS := dpa hw vfu host common

# Native bench: nvme-emu-perf against nvme-emu (null, malloc; QD 1..128; 1-2 queues), each
# doorbell configuration in the same run, medians, ratios to the default.
BENCHES += tests/perf/native-bench.sh

# Guest bench: QEMU's built-in NVMe device vs nvme-emu configurations in one
# guest, fio 4k randread QD32 and 128k seqwrite QD8, medians and ratios.
BENCHES += tests/perf/guest-bench.sh
