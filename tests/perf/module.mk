# tests/perf: benchmarks run by `make bench` (each prints a table and ends
# with "N passed, N failed").
BENCHES += $(BUILD)/bin/dpa-bench
PROGRAMS += dpa-bench
dpa-bench_SRCS := tests/perf/dpa_bench.c tests/unit/dpa/fake_hw.c
dpa-bench_LIBS := dpa common
