#!/usr/bin/env bash
# `make bench`, native part: nvme-emu-perf drives nvme-emu directly over vfio-user (no guest).
#
# Null and malloc bdevs; 4 KiB random reads and 128 KiB writes on 1, 2, 4 and 8 queue pairs at
# QD 1, 8, 32 and 128 (polled), plus 4 KiB random reads with interrupt-driven completions; each
# daemon configuration (mmap doorbells polled by the poll group itself, DPA fused, the default;
# trapped doorbells with fused DPA; mmap doorbells with one DPA hart) in the same run, BENCH_RUNS
# times in rotating order. A fourth configuration, the default with two poll groups (one per
# core), runs only the multi-queue 4 KiB random reads, its client on two threads: the scaling
# past one server core. One JSON line per measurement goes to
# OUT/native.jsonl ({"config", "bdev", "bdev_size", "mode", "run", "perf": nvme-emu-perf -j's
# object or null, "error"}); tests/perf/bench_report.py turns it into tables and plots.
# Usage: native-bench.sh [OUT] (default build/bench/raw).
# Environment: BENCH_RUNS (3), BENCH_NATIVE_TIME (2 s a point), BENCH_QUICK=1 (one run of 1 s on
# a handful of points, 256 MiB bdevs: the report pipeline's check), BENCH_NATIVE_CONFIGS (labels
# of the configurations to run, e.g. "mmap-fused": a third of the time; default all).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build/bin
out=${1:-$top/build/bench/raw}
quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
	runs=${BENCH_RUNS:-1}
	secs=${BENCH_NATIVE_TIME:-1}
	bdev_size=256M
else
	runs=${BENCH_RUNS:-3}
	secs=${BENCH_NATIVE_TIME:-2}
	bdev_size=1G
fi
mkdir -p "$out"
jsonl=$out/native.jsonl
: > "$jsonl"
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null; done
	wait 2> /dev/null
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "native bench: $*"
	echo "0 passed, 1 failed"
	exit 1
}

# label:daemon flags (commas for spaces); the first is the reference of the ratios.
configs="mmap-fused:--doorbells,mmap,--dpa-harts,0 trap-fused:--doorbells,trap,--dpa-harts,0 mmap-1hart:--doorbells,mmap,--dpa-harts,1 mmap-fused-2pg:--doorbells,mmap,--dpa-harts,0,-m,2"
if [ -n "${BENCH_NATIVE_CONFIGS:-}" ]; then
	want=" $BENCH_NATIVE_CONFIGS "
	picked=
	for cfg in $configs; do
		case $want in *" ${cfg%%:*} "*) picked="$picked $cfg" ;; esac
	done
	configs=${picked# }
	[ -n "$configs" ] || fail "BENCH_NATIVE_CONFIGS '$BENCH_NATIVE_CONFIGS' names none of mmap-fused trap-fused mmap-1hart mmap-fused-2pg"
fi
# Points as bdev:workload:size:depth:queues:mode (mode poll or irq).
points=()
if [ "$quick" = 1 ]; then
	points=(null:randread:4096:1:1:poll null:randread:4096:32:1:poll malloc:randread:4096:1:1:poll
		malloc:randread:4096:32:1:poll null:write:131072:8:1:poll null:randread:4096:32:1:irq
		null:randread:4096:32:2:poll null:randread:4096:32:4:poll null:randread:4096:32:8:poll)
else
	for bdev in null malloc; do
		for nq in 1 2 4 8; do
			for qd in 1 8 32 128; do
				points+=("$bdev:randread:4096:$qd:$nq:poll")
			done
		done
		for nq in 1 2 4; do
			for qd in 1 8 32 128; do
				points+=("$bdev:write:131072:$qd:$nq:poll")
			done
		done
	done
	points+=(null:randread:4096:1:1:irq null:randread:4096:32:1:irq)
fi

for cfg in $configs; do
	label=${cfg%%:*}
	flags=${cfg#*:}
	for bdev in null malloc; do
		# One poll group (the default): the figures are per server core.
		# shellcheck disable=SC2086
		"$bin/nvme-emu" --socket "$work/$label-$bdev.sock" --$bdev "$bdev_size" -q 8 ${flags//,/ } \
			> "$work/$label-$bdev.log" 2>&1 &
		pids+=($!)
	done
done
for cfg in $configs; do
	for bdev in null malloc; do
		s=$work/${cfg%%:*}-$bdev.sock
		for _ in $(seq 100); do [ -S "$s" ] && break; sleep 0.1; done
		[ -S "$s" ] || fail "$s did not come up: $(cat "$work/${cfg%%:*}-$bdev.log")"
	done
done
# Malloc bdevs are written once (and checked) before anything is measured, so reads touch
# memory that exists and writes do not measure first-touch page faults.
for cfg in $configs; do
	echo "bench: [native] filling the malloc bdev of ${cfg%%:*} (verified write of $bdev_size)" >&2
	"$bin/nvme-emu-perf" -s "$work/${cfg%%:*}-malloc.sock" -w write -o 131072 -q 8 -V -j \
		> /dev/null || fail "malloc fill of ${cfg%%:*} failed"
done

ncfg=$(echo "$configs" | wc -w)
total=$((runs * ${#points[@]} * ncfg)) # an upper bound: the two-poll-group one runs fewer
n=0
failed=0
start=$(date +%s)
for r in $(seq "$runs"); do
	for point in "${points[@]}"; do
		IFS=: read -r bdev wl size qd nq mode <<< "$point"
		# Rotate the configurations so that none always goes first.
		order=$configs
		[ $((r % 2)) -eq 0 ] && order=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
		for cfg in $order; do
			label=${cfg%%:*}
			threads=1
			case $label in
			*-2pg)
				# Two poll groups: multi-queue 4 KiB random reads only, two client threads.
				[ "$wl" = randread ] && [ "$size" = 4096 ] && [ "$nq" -ge 2 ] &&
					[ "$mode" = poll ] || continue
				threads=2 ;;
			esac
			n=$((n + 1))
			echo "bench: [native $n/$total, $(($(date +%s) - start))s] $label $bdev $wl $size B QD$qd x $nq queue(s) $mode, run $r/$runs" >&2
			irq=()
			[ "$mode" = irq ] && irq=(-I)
			if res=$("$bin/nvme-emu-perf" -s "$work/$label-$bdev.sock" -w "$wl" -o "$size" \
				-q "$qd" -n "$nq" -c "$threads" -t "$secs" "${irq[@]}" -j 2> "$work/err"); then
				err=null
			else
				failed=$((failed + 1))
				echo "native bench: $label $point failed: $(cat "$work/err")"
				res=null
				err=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' \
					"$(cat "$work/err")")
			fi
			printf '{"config": "%s", "bdev": "%s", "bdev_size": "%s", "mode": "%s", "run": %d, "perf": %s, "error": %s}\n' \
				"$label" "$bdev" "$bdev_size" "$mode" "$r" "${res:-null}" "$err" >> "$jsonl"
		done
	done
done
echo "native bench: $n measurements in $(($(date +%s) - start))s, $failed failed ($jsonl)"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
