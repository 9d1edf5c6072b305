#!/usr/bin/env bash
# `make bench`, native part: nvme-emu-perf drives nvme-emu directly over vfio-user (no guest),
# null and malloc bdevs, 4 KiB random reads at QD 1, 8, 32 and 128 on 1 and 2 queues, and
# 128 KiB writes; each daemon configuration (trapped doorbells with fused DPA, the default; mmap
# doorbells with one DPA hart) in the same run, BENCH_RUNS times in rotation, medians. Prints a
# table (IOPS, p50/p99 latency, server CPU per I/O) with each figure's ratio to the default
# configuration, and writes it to build/bench/native.md.
# Environment: BENCH_RUNS (3), BENCH_NATIVE_TIME (3 s per point).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build/bin
runs=${BENCH_RUNS:-3}
secs=${BENCH_NATIVE_TIME:-3}
dir=$top/build/bench
mkdir -p "$dir"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done; wait 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT

configs="trap-fused:--doorbells,trap,--dpa-harts,0 mmap-1hart:--doorbells,mmap,--dpa-harts,1"
for cfg in $configs; do
	label=${cfg%%:*}
	flags=${cfg#*:}
	for bdev in null malloc; do
		# shellcheck disable=SC2086
		"$bin/nvme-emu" --socket "$work/$label-$bdev.sock" --$bdev 1G -q 4 ${flags//,/ } \
			> "$work/$label-$bdev.log" 2>&1 &
		pids+=($!)
	done
done
for cfg in $configs; do
	for bdev in null malloc; do
		s=$work/${cfg%%:*}-$bdev.sock
		for _ in $(seq 100); do [ -S "$s" ] && break; sleep 0.1; done
		[ -S "$s" ] || { echo "native bench: $s did not come up"; echo "0 passed, 1 failed"; exit 1; }
	done
done
# Malloc bdevs are read back only after a fill, so reads touch real memory.
for cfg in $configs; do
	"$bin/nvme-emu-perf" -s "$work/${cfg%%:*}-malloc.sock" -w write -o 131072 -q 8 -V -j \
		> /dev/null || { echo "native bench: malloc fill failed"; echo "0 passed, 1 failed"; exit 1; }
done

points="null:randread:4096:1:1 null:randread:4096:8:1 null:randread:4096:32:1 null:randread:4096:128:1
null:randread:4096:32:2 null:randread:4096:128:2 malloc:randread:4096:32:1 malloc:write:131072:8:1"
failed=0
for r in $(seq "$runs"); do
	for point in $points; do
		IFS=: read -r bdev wl size qd nq <<< "$point"
		# Rotate the configurations so that none always goes first.
		order=$configs
		[ $((r % 2)) -eq 0 ] && order=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
		for cfg in $order; do
			label=${cfg%%:*}
			echo "native bench: run $r/$runs $label $point" >&2
			if ! "$bin/nvme-emu-perf" -s "$work/$label-$bdev.sock" -w "$wl" -o "$size" \
				-q "$qd" -n "$nq" -t "$secs" -j > "$work/$label-$point-$r.json"; then
				echo "native bench: $label $point failed"
				failed=$((failed + 1))
			fi
		done
	done
done
python3 - "$work" "$runs" "$points" "$configs" > "$dir/native.md" << 'PY'
import json, os, statistics, sys
work, runs, points, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
labels = [c.split(":")[0] for c in configs]
print("| target | workload | QD x queues | config | IOPS (median) | runs | p50 us | p99 us | server CPU us/IO | IOPS ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for point in points:
    bdev, wl, size, qd, nq = point.split(":")
    base = None
    for label in labels:
        rs = []
        for r in range(1, runs + 1):
            p = os.path.join(work, "%s-%s-%d.json" % (label, point, r))
            try:
                rs.append(json.load(open(p)))
            except Exception:
                pass
        if not rs:
            continue
        iops = statistics.median(x["iops"] for x in rs)
        p50 = statistics.median(x["lat_us"]["p50"] for x in rs)
        p99 = statistics.median(x["lat_us"]["p99"] for x in rs)
        cpu = statistics.median(x["server_cpu_s"] / x["ios"] * 1e6 for x in rs if x["ios"])
        base = base or iops
        print("| %s | %s %s B | %s x %s | %s | %.0f | %s | %.1f | %.1f | %.2f | %.2f |" % (
            bdev, wl, size, qd, nq, label, iops, " ".join("%.0f" % x["iops"] for x in rs),
            p50, p99, cpu, iops / base))
PY
cat "$dir/native.md"
echo "(medians of $runs runs of ${secs}s; ratio to trap-fused, the default; table in build/bench/native.md)"
echo "$(( failed ? 0 : 1 )) passed, $failed failed"
[ "$failed" -eq 0 ]
