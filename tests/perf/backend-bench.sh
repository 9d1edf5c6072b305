#!/usr/bin/env bash
# Backend bench (make bench, part "backends"): one nvme-emu namespace per storage backend, driven
# natively by nvme-emu-perf (polled, trapped doorbells, one queue): aio and io_uring on the same
# file (O_DIRECT, on the disk under BENCH_FILE_DIR), NBD (nbdkit's memory plugin on a unix socket)
# and RBD (a throwaway single-node Ceph cluster, memstore OSD). Workloads: 4 KiB random read and
# write at QD 32, 128 KiB sequential write at QD 8. Each point BENCH_RUNS times; medians with
# min-max. Writes BENCH_DIR/raw/backends.jsonl (one object per run) and BENCH_DIR/raw/backends.md.
# Environment: BENCH_DIR (build/bench), BENCH_RUNS (3), BENCH_QUICK=1 (1 s per point, one run,
# no RBD), BENCH_SECONDS (5), BENCH_FILE_DIR (/var/tmp), BENCH_BACKENDS (aio,uring,nbd,rbd).
# Ends with "N passed, N failed" (a point that fails to run counts one failure).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$top/build/bin
dir=${BENCH_DIR:-$top/build/bench}
quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then runs=${BENCH_RUNS:-1}; secs=${BENCH_SECONDS:-1}; else runs=${BENCH_RUNS:-3}; secs=${BENCH_SECONDS:-5}; fi
# Quick mode leaves RBD out (its cluster alone takes ~11 s to start).
if [ "$quick" = 1 ]; then backends=${BENCH_BACKENDS:-aio,uring,nbd}; else backends=${BENCH_BACKENDS:-aio,uring,nbd,rbd}; fi
fdir=${BENCH_FILE_DIR:-/var/tmp}
mkdir -p "$dir/raw"
raw=$dir/raw/backends.jsonl
: > "$raw"
D=$(mktemp -d /tmp/nvme-emu-backend-bench.XXXXXX)
file=$(mktemp "$fdir/nvme-emu-bench.XXXXXX")
passed=0
failed=0
dpid=
spid=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	[ -n "$spid" ] && kill -9 "$spid" 2> /dev/null
	"$top/tests/lib/ceph-cluster.sh" stop "$D/ceph" > /dev/null 2>&1
	rm -rf "$D" "$file"
}
trap cleanup EXIT
wait_sock() {
	for _ in $(seq 150); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}
daemon() {
	[ -n "$dpid" ] && { kill "$dpid"; wait "$dpid" 2> /dev/null; }
	rm -f "$D/fn"
	"$BIN/nvme-emu" --socket "$D/fn" "$@" > "$D/daemon.log" 2>&1 &
	dpid=$!
	wait_sock "$D/fn"
}
# point BACKEND WORKLOAD ARGS...: BENCH_RUNS runs of nvme-emu-perf, one JSON line each.
point() {
	local be=$1 wl=$2 out
	shift 2
	for r in $(seq "$runs"); do
		echo "bench: [backends] $be $wl run $r/$runs" >&2
		if out=$("$BIN/nvme-emu-perf" -s "$D/fn" -j -t "$secs" "$@" 2> "$D/err") &&
			python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['errors']==0 and r['ios']>0" "$out"; then
			python3 -c "import json,sys; r=json.loads(sys.argv[1]); r['backend']=sys.argv[2]; r['point']=sys.argv[3]; print(json.dumps(r))" \
				"$out" "$be" "$wl" >> "$raw"
			passed=$((passed + 1))
		else
			echo "not ok - $be $wl: $out $(cat "$D/err")"
			failed=$((failed + 1))
		fi
	done
}
workloads() {
	local be=$1
	# Fill first (so reads hit data, and sparse files do not shortcut them), untimed.
	"$BIN/nvme-emu-perf" -s "$D/fn" -w write -V -o 131072 -q 8 > /dev/null 2>&1 ||
		echo "warning: $be: the fill pass failed" >&2
	point "$be" "4k-randread-qd32" -w randread -o 4096 -q 32
	point "$be" "4k-randwrite-qd32" -w randwrite -o 4096 -q 32
	point "$be" "128k-write-qd8" -w write -o 131072 -q 8
}
size=256M
[ "$quick" = 1 ] && size=64M
truncate -s "$size" "$file"
for be in ${backends//,/ }; do
	case $be in
	aio | uring)
		if daemon "--$be" "$file"; then workloads "$be"; else echo "not ok - $be: daemon"; failed=$((failed + 1)); fi
		;;
	nbd)
		rm -f "$D/nbd.sock"
		nbdkit --foreground --exit-with-parent -U "$D/nbd.sock" memory "size=$size" > "$D/nbdkit.log" 2>&1 &
		spid=$!
		if wait_sock "$D/nbd.sock" && daemon --nbd "nbd+unix:///?socket=$D/nbd.sock"; then
			workloads nbd
		else
			echo "not ok - nbd: nbdkit or daemon"
			failed=$((failed + 1))
		fi
		kill "$spid" 2> /dev/null
		spid=
		;;
	rbd)
		conf=$("$top/tests/lib/ceph-cluster.sh" start "$D/ceph" 2> "$D/ceph.err")
		rc=$?
		if [ "$rc" -eq 77 ]; then
			echo "rbd: skipped: $(cat "$D/ceph.err")"
			continue
		fi
		if [ "$rc" -eq 0 ] && CEPH_CONF=$conf rbd create --size "$size" rbd/bench &&
			CEPH_CONF=$conf daemon --rbd rbd/bench; then
			workloads rbd
		else
			echo "not ok - rbd: cluster or daemon"
			failed=$((failed + 1))
		fi
		;;
	*)
		echo "unknown backend $be" >&2
		failed=$((failed + 1))
		;;
	esac
done
[ -n "$dpid" ] && { kill "$dpid"; wait "$dpid" 2> /dev/null; dpid=; }

python3 - "$raw" "$dir/raw/backends.md" "$secs" "$runs" << 'PY'
import json, statistics, sys, time
raw, md, secs, runs = sys.argv[1:]
rows = [json.loads(l) for l in open(raw) if l.strip()]
points = ["4k-randread-qd32", "4k-randwrite-qd32", "128k-write-qd8"]
backends = []
for r in rows:
    if r["backend"] not in backends:
        backends.append(r["backend"])
def fmt(v):
    """As the rest of the report: 1.23M, 45k, 6.7k, 382."""
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e4:
        return "%.0fk" % (v / 1e3)
    if v >= 1e3:
        return "%.1fk" % (v / 1e3)
    return "%.0f" % v
def cell(be, pt, key):
    v = [r[key] for r in rows if r["backend"] == be and r["point"] == pt]
    if not v:
        return "-", None
    m = statistics.median(v)
    return (f"{fmt(m)} ({fmt(min(v))}\u2013{fmt(max(v))})" if len(v) > 1 else fmt(m)), m
out = [f"# Backends ({time.strftime('%Y-%m-%d %H:%M %Z')})", "",
       f"nvme-emu-perf, one queue, polled, trapped doorbells; {secs} s per run, median of {runs} "
       "(min-max). aio and io_uring on the same O_DIRECT file; NBD: nbdkit memory plugin (unix "
       "socket); RBD: single-node Ceph, memstore OSD. The machine is shared: figures are noisy.", "",
       "| backend | 4 KiB randread QD32 IOPS | 4 KiB randwrite QD32 IOPS | 128 KiB write QD8 MiB/s | randread p50 us | randread p99 us |",
       "|---|---|---|---|---|---|"]
for be in backends:
    rr, _ = cell(be, points[0], "iops")
    rw, _ = cell(be, points[1], "iops")
    sw, _ = cell(be, points[2], "mib_s")
    p50 = [r["lat_us"]["p50"] for r in rows if r["backend"] == be and r["point"] == points[0]]
    p99 = [r["lat_us"]["p99"] for r in rows if r["backend"] == be and r["point"] == points[0]]
    out.append(f"| {be} | {rr} | {rw} | {sw} | "
               f"{statistics.median(p50):.1f} | {statistics.median(p99):.1f} |" if p50 else
               f"| {be} | {rr} | {rw} | {sw} | - | - |")
aio = {pt: cell("aio", pt, "iops" if "rand" in pt else "mib_s")[1] for pt in points}
uring = {pt: cell("uring", pt, "iops" if "rand" in pt else "mib_s")[1] for pt in points}
if all(aio.values()) and all(uring.values()):
    out += ["", "io_uring / aio: " + ", ".join(f"{pt} {uring[pt] / aio[pt]:.2f}" for pt in points)]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
