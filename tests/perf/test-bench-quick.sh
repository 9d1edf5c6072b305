#!/usr/bin/env bash
# make test: the bench report pipeline end to end in about a minute (BENCH_QUICK=1: native points,
# a TCG guest with QEMU's NVMe, virtio-blk and nvme-emu, the DPA benches, report and plots in a
# temporary BENCH_DIR), then bench_check.py checks the report and its PNGs hold numbers.
# Figures of a quick run are not checked against anything: benchmarks are not timed tests.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
BENCH_QUICK=1 BENCH_DIR=$dir "$top/tests/perf/bench.sh" > "$dir/bench.out" 2>&1
rc=$?
tail -n 30 "$dir/bench.out"
ok=0
if [ "$rc" -eq 0 ] && tail -n 1 "$dir/bench.out" | grep -qE '^[1-9][0-9]* passed, 0 failed$'; then
	echo "ok - BENCH_QUICK=1 tests/perf/bench.sh: every part measured, report made"
	ok=1
else
	echo "not ok - BENCH_QUICK=1 tests/perf/bench.sh (exit $rc)"
	grep -v '^bench: \[' "$dir/bench.out" | tail -n 40
fi
# The check's own count, plus the line above.
python3 "$top/tests/perf/bench_check.py" "$dir" > "$dir/check.out"
crc=$?
grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$dir/check.out"
line=$(tail -n 1 "$dir/check.out")
p=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' <<< "$line")
f=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' <<< "$line")
[ -n "$p" ] || { p=0; f=1; }
[ "$crc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
echo "$((p + ok)) passed, $((f + 1 - ok)) failed"
[ "$ok" -eq 1 ] && [ "$f" -eq 0 ]
