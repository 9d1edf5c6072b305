#!/usr/bin/env bash
# `make bench`, guest part: one guest (KVM when it works, else TCG) with QEMU's built-in NVMe
# device and a virtio-blk disk (both on QEMU's null-co driver) and nvme-emu (null bdev) in
# several configurations, each its own daemon and vfio-user device; the same fio jobs run on each,
# in rotating order, BENCH_RUNS times, while bench_cpu.py samples the host CPU of QEMU and of each
# daemon. Results go to OUT/guest/: fio's JSON files (<label>-<workload>-<run>.json), cpu.jsonl,
# info.json (accelerator, QEMU and guest versions); tests/perf/bench_report.py reads them.
# Usage: guest-bench.sh [OUT] (default build/bench/raw).
# Environment: BENCH_RUNS (3), BENCH_RUNTIME (5 s a job after a 1 s ramp), BENCH_CONFIGS (see
# below), BENCH_WORKLOADS (the fio jobs, e.g. "randread-4k-qd1 randread-4k-psync seqwrite-128k-qd8":
# -qdN is libaio with N in flight, -psync a synchronous host), BENCH_QUICK=1 (one run of 1 s, the
# default configuration, four workloads).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build/bench/raw}/guest
quick=${BENCH_QUICK:-0}
# label:daemon flags (commas for spaces); the first is the default configuration.
all_configs="emu-mmap-fused:--doorbells,mmap,--dpa-harts,0 emu-trap-fused:--doorbells,trap,--dpa-harts,0 emu-mmap-1hart:--doorbells,mmap,--dpa-harts,1"
if [ "$quick" = 1 ]; then
	runs=${BENCH_RUNS:-1}
	runtime=${BENCH_RUNTIME:-1}
	ramp=0.5
	configs=${BENCH_CONFIGS:-${all_configs%% *}}
	workloads=${BENCH_WORKLOADS:-randread-4k-qd1 randread-4k-psync randread-4k-qd32 seqwrite-128k-qd8}
else
	runs=${BENCH_RUNS:-3}
	runtime=${BENCH_RUNTIME:-5}
	ramp=1
	configs=${BENCH_CONFIGS:-$all_configs}
	workloads=${BENCH_WORKLOADS:-randread-4k-qd1 randread-4k-psync randread-4k-qd8 randread-4k-qd32 \
		randread-4k-qd128 seqwrite-128k-qd8}
fi
rm -rf "$out"
mkdir -p "$out"
socks=$(mktemp -d)
pids=()
sampler=
cleanup() {
	for p in "${pids[@]}" $sampler; do kill "$p" 2> /dev/null; done
	wait 2> /dev/null
	rm -rf "$socks"
}
trap cleanup EXIT

# QEMU's two devices on the same null-co driver as a peer (reads zeroes, writes dropped), as
# nvme-emu's null bdev with --read-zeroes (the same memset on both sides); virtio-blk with QEMU's
# defaults (one queue per vCPU).
devices="qemu-nvme=nvme:nvme-emu-q0 virtio-blk=vblk:BENCHVBLK0"
# shellcheck disable=SC2054 # commas belong to QEMU options
devargs=(--qemu-nvme null:1G
	--qemu-arg -blockdev --qemu-arg driver=null-co,node-name=benchvblk,size=1073741824,read-zeroes=on
	--qemu-arg -device --qemu-arg virtio-blk-pci,id=benchvblk,drive=benchvblk,serial=BENCHVBLK0)
pidargs=()
i=0
for cfg in $configs; do
	label=${cfg%%:*}
	flags=${cfg#*:}
	sock=$socks/$label.sock
	serial=NVMEEMU-BENCH$i
	# shellcheck disable=SC2086
	"$top/build/bin/nvme-emu" --socket "$sock" --rpc-socket "$socks/$label.rpc" --null 1G \
		--read-zeroes --serial "$serial" ${flags//,/ } > "$out/$label.log" 2>&1 &
	pids+=($!)
	pidargs+=(--pid "$label=$!")
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || {
		echo "guest bench: $label did not start: $(cat "$out/$label.log")"
		echo "0 passed, 1 failed"
		exit 1
	}
	devices="$devices $label=nvme:$serial"
	devargs+=(--vfio-user "$sock")
	i=$((i + 1))
done
ndev=$(echo "$devices" | wc -w)
nwl=$(echo "$workloads" | wc -w)
printf 'BENCH_RUNS=%s\nBENCH_RUNTIME=%s\nBENCH_RAMP=%s\nBENCH_WORKLOADS="%s"\nBENCH_DEVICES="%s"\n' \
	"$runs" "$runtime" "$ramp" "$workloads" "$devices" > "$socks/bench.env"
run=$out/run
mkdir -p "$run/job/out"
python3 "$top/tests/perf/bench_cpu.py" --marker "$run/job/out/current" --out "$out/cpu.jsonl" \
	--qemu-tag "$run/" --total $((ndev * nwl * runs)) --runs "$runs" --skip "$ramp" --length "$runtime" \
	"${pidargs[@]}" &
sampler=$!
echo "bench: [guest] booting one guest with ${devices}; $runs run(s) of ${runtime}s per job" >&2
"$top/qemu-configs/launch-guest.sh" --job "$top/tests/perf/jobs/bench.sh" --add "$socks/bench.env" \
	"${devargs[@]}" --cpus 2 --mem 1G --run-dir "$run" --quiet \
	--timeout $((180 + runs * ndev * nwl * (${runtime%.*} + 6))) 2> "$out/launch.log"
rc=$?
cat "$out/launch.log" >&2
wait "$sampler" 2> /dev/null
sampler=
# Each daemon's counters over the whole run (poll window hits, naps, interrupts...): the report's
# raw material for where a configuration's time went.
for cfg in $configs; do
	label=${cfg%%:*}
	"$top/build/bin/nvme-emu-rpc" -s "$socks/$label.rpc" nvmf_get_stats \
		> "$out/$label-stats.json" 2>&1 ||
		echo "guest bench: no counters from $label: $(cat "$out/$label-stats.json")" >&2
done
# What the report states about the run: the accelerator as the launcher chose it, QEMU's
# version (the executable of the command line it ran), the guest's kernel and fio.
accel=$(sed -n 's/.*run dir .* (\(KVM\|TCG\), timeout.*/\1/p' "$out/launch.log" | head -n 1)
mapfile -t qargs < "$run/qemu-args"
qcmd=()
for a in "${qargs[@]}"; do
	[ "$a" = -L ] && break
	qcmd+=("$a")
done
qver=$("${qcmd[@]}" --version 2> /dev/null | head -n 1)
python3 - "$out/info.json" "${accel:-unknown}" "$qver" "$run/out/guest-info" "$runs" "$runtime" \
	"$ramp" "$workloads" "$devices" << 'PY'
import json, sys
path, accel, qver, ginfo, runs, runtime, ramp, workloads, devices = sys.argv[1:]
try:
    with open(ginfo, encoding="utf-8", errors="replace") as f:
        g = f.read().split("\n")
except OSError:
    g = []
json.dump({"accel": accel, "qemu": qver, "guest_kernel": g[0] if g else "",
           "fio": g[1] if len(g) > 1 else "", "guest_cpus": g[2] if len(g) > 2 else "",
           "runs": int(runs), "runtime_s": float(runtime), "ramp_s": float(ramp),
           "workloads": workloads.split(),
           "devices": [d.split("=")[0] for d in devices.split()]}, open(path, "w"), indent=1)
PY
ok=$(grep -c '^ok - ' "$run/out/output.log" 2> /dev/null)
bad=$(grep -c '^not ok - ' "$run/out/output.log" 2> /dev/null)
[ "$rc" -eq 0 ] || { echo "guest bench: the guest job failed (exit $rc); see $run/out/output.log"; bad=$((bad + 1)); }
echo "guest bench: $accel guest, $ndev devices, $nwl workloads, $runs run(s) (results in $out)"
echo "${ok:-0} passed, ${bad:-0} failed"
[ "$rc" -eq 0 ]
