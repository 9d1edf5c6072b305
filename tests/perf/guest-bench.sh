#!/usr/bin/env bash
# `make bench`, guest part: one TCG guest with QEMU's built-in NVMe device
# (null-co backend) and nvme-emu (null backend) in several configurations,
# each its own daemon and vfio-user device; the same fio jobs run on each, in
# rotating order, BENCH_RUNS times; prints medians and ratios to QEMU's device.
# Environment: BENCH_RUNS (3), BENCH_RUNTIME (5 s), BENCH_CONFIGS (see below).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$top/build/guest/bench
runs=${BENCH_RUNS:-3}
runtime=${BENCH_RUNTIME:-5}
# label:daemon flags (commas for spaces)
configs=${BENCH_CONFIGS:-"emu-trap-1hart:--doorbells,trap,--dpa-harts,1 emu-trap-fused:--doorbells,trap,--dpa-harts,0 emu-mmap-1hart:--doorbells,mmap,--dpa-harts,1"}
rm -rf "$dir"
mkdir -p "$dir"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

devices="qemu-nvme=nvme-emu-q0"
devargs=(--qemu-nvme null:1G)
i=0
for cfg in $configs; do
	label=${cfg%%:*}
	flags=${cfg#*:}
	sock=$dir/$label.sock
	serial=NVMEEMU-BENCH$i
	# shellcheck disable=SC2086
	"$top/build/bin/nvme-emu" --socket "$sock" --null 1G --serial "$serial" ${flags//,/ } \
		>"$dir/$label.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || { echo "bench: $label did not start"; cat "$dir/$label.log"; exit 1; }
	devices="$devices $label=$serial"
	devargs+=(--vfio-user "$sock")
	i=$((i + 1))
done
printf 'BENCH_RUNS=%s\nBENCH_RUNTIME=%s\nBENCH_DEVICES="%s"\n' "$runs" "$runtime" "$devices" \
	>"$dir/bench.env"
echo "bench: guest with ${devices}; $runs runs of ${runtime}s per job"
"$top/qemu-configs/launch-guest.sh" --job "$top/tests/perf/jobs/bench.sh" --add "$dir/bench.env" \
	"${devargs[@]}" --cpus 2 --mem 1G --run-dir "$dir/run" --quiet \
	--timeout $((120 + runs * 3 * (runtime + 3) * (i + 1)))
rc=$?
"$top/tests/perf/bench_report.py" "$dir/run/out" || rc=1
exit $rc
