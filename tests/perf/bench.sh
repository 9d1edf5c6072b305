#!/usr/bin/env bash
# `make bench`: the whole benchmark as one report. Runs the native part (native-bench.sh:
# nvme-emu-perf against nvme-emu), the guest part (guest-bench.sh: nvme-emu vs QEMU's NVMe and
# virtio-blk in one guest), the DPA model benches (dpa-bench, dpa-bench-hw) and the storage
# backends (backend-bench.sh: aio vs io_uring, NBD, RBD through nvme-emu-perf), each BENCH_RUNS
# times, then bench_report.py writes BENCH_DIR/report.md and its PNG plots (gnuplot) and prints
# the summary table. Raw results stay in BENCH_DIR/raw/. With SPDK_DIR set to an SPDK build of your
# own, part "spdk" (spdk-peer-bench.py) also measures SPDK's vfio-user target beside nvme-emu.
# Environment: BENCH_DIR (build/bench), BENCH_RUNS (3), BENCH_QUICK=1 (the whole pipeline in
# about a minute: one short run of a few points; for the pipeline's check, not for figures),
# BENCH_PARTS (native,guest,dpa,backends,cluster (not in the quick mode), and spdk with SPDK_DIR),
# and each part's own variables
# (see their headers).
# Ends with "N passed, N failed" (the parts' measurements and the report).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${BENCH_DIR:-$top/build/bench}
# SPDK's own target as a peer (spdk-peer-bench.py) when SPDK_DIR names an SPDK build.
# The cluster part (N daemons sharing an RBD image through Ceph) is left out of the quick mode:
# its cluster alone takes ~11 s to start.
quick=${BENCH_QUICK:-0}
default_parts=native,guest,dpa,backends
[ "$quick" = 1 ] || default_parts=$default_parts,cluster
[ -n "${SPDK_DIR:-}" ] && default_parts=$default_parts,spdk
parts=${BENCH_PARTS:-$default_parts}
if [ "$quick" = 1 ]; then runs=${BENCH_RUNS:-1}; else runs=${BENCH_RUNS:-3}; fi
export BENCH_RUNS=$runs BENCH_QUICK=$quick
raw=$dir/raw
rm -rf "$raw" "$dir/plots" "$dir/report.md"
mkdir -p "$raw"
passed=0
failed=0
start=$(date +%s)

# count LOG: adds the "N passed, N failed" line of a part's log to the totals (a part that
# printed none, or exited non-zero with none failed, counts one failure).
count() {
	local log=$1 rc=$2 line p=0 f=1
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed*}
	fi
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	passed=$((passed + p))
	failed=$((failed + f))
}

# The machine as the report states it, before anything runs (load of others included).
python3 - "$raw/meta.json" "$quick" "$runs" "$parts" "$top" << 'PY'
import json, os, platform, subprocess, sys, time
path, quick, runs, parts, top = sys.argv[1:]
def first(path, key, sep=":"):
    """The value of the first line of path starting with key (key, then sep, then value)."""
    try:
        for line in open(path):
            if line.startswith(key) and sep in line:
                return line.split(sep, 1)[1].strip()
    except OSError:
        pass
    return ""
def git(*args):
    try:
        return subprocess.run(["git", "-C", top] + list(args), capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
mem = first("/proc/meminfo", "MemTotal")
json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "date_utc": time.strftime(
    "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpu": first("/proc/cpuinfo", "model name"),
    "cpus": os.cpu_count(), "mem_gib": round(int(mem.split()[0]) / 1048576, 1) if mem else None,
    "kernel": platform.release(), "os": first("/etc/os-release", "PRETTY_NAME", "=").strip('"') or
    platform.platform(), "load_start": os.getloadavg(), "quick": quick == "1", "runs": int(runs),
    "parts": parts.split(","), "commit": git("rev-parse", "--short", "HEAD"),
    "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))},
    open(path, "w"), indent=1)
PY

# part LOG CMD...: runs one part with its output in LOG; its progress lines ("bench: ...") are
# shown live on stderr, its closing lines on stdout, and its count is added.
part() {
	local log=$1 pid rc
	shift
	"$@" > "$log" 2>&1 &
	pid=$!
	tail -n +1 -F --pid=$pid "$log" 2> /dev/null | grep --line-buffered '^bench: ' >&2
	wait $pid
	rc=$?
	grep -v '^bench: ' "$log" | tail -n 4
	count "$log" "$rc"
}

for p in ${parts//,/ }; do
	echo "bench: === $p ($(($(date +%s) - start))s elapsed)" >&2
	case $p in
	native) part "$raw/native.log" "$top/tests/perf/native-bench.sh" "$raw" ;;
	guest) part "$raw/guest.log" "$top/tests/perf/guest-bench.sh" "$raw" ;;
	backends) part "$raw/backends.log" env BENCH_DIR="$dir" "$top/tests/perf/backend-bench.sh" ;;
	cluster) part "$raw/cluster.log" env BENCH_DIR="$dir" "$top/tests/perf/cluster-bench.sh" ;;
	spdk) part "$raw/spdk.log" env BENCH_DIR="$dir" python3 "$top/tests/perf/spdk-peer-bench.py" ;;
	dpa)
		mkdir -p "$raw/dpa"
		q=()
		[ "$quick" = 1 ] && q=(--quick)
		for r in $(seq "$runs"); do
			for b in dpa-bench dpa-bench-hw; do
				echo "bench: [dpa $r/$runs, $(($(date +%s) - start))s] $b" >&2
				"$top/build/bin/$b" "${q[@]}" --json "$raw/dpa/$b-$r.jsonl" > "$raw/dpa/$b-$r.log" 2>&1
				count "$raw/dpa/$b-$r.log" $?
			done
		done
		;;
	*)
		echo "bench: unknown part $p (BENCH_PARTS: native,guest,dpa,backends,cluster,spdk)"
		failed=$((failed + 1))
		;;
	esac
done

echo "bench: [report, $(($(date +%s) - start))s] $dir/report.md and plots" >&2
python3 - "$raw/meta.json" "$(($(date +%s) - start))" << 'PY'
import json, os, sys
path, secs = sys.argv[1], int(sys.argv[2])
meta = json.load(open(path))
meta["load_end"] = os.getloadavg()
meta["seconds"] = secs
json.dump(meta, open(path, "w"), indent=1)
PY
if python3 "$top/tests/perf/bench_report.py" "$dir"; then
	passed=$((passed + 1))
else
	echo "bench: the report could not be made"
	failed=$((failed + 1))
fi
echo "bench: $(($(date +%s) - start))s in all"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
