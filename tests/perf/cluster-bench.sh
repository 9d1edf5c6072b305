#!/usr/bin/env bash
# Cluster bench (make bench, part "cluster"): one RBD image on a throwaway single-node Ceph cluster
# (memstore OSD, 127.0.0.1) exported with shared_reservations by 1 .. BENCH_CLUSTER_DAEMONS
# nvme-emu daemons at once, each a host (tests/perf/cluster_bench.c): the latency of a
# reservation change until every daemon applied it, contended changes per second from every host
# at once, and 4 KiB random read / write IOPS of nvme-emu-perf on every daemon at once (summed).
# Each daemon count BENCH_RUNS times; medians with min-max. Writes BENCH_DIR/raw/cluster.jsonl and
# BENCH_DIR/raw/cluster.md. Environment: BENCH_DIR (build/bench), BENCH_RUNS (3), BENCH_QUICK=1
# (two daemons, 20 changes, 1 s of I/O, one run), BENCH_CLUSTER_DAEMONS (4), BENCH_SECONDS (3).
# Ends with "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${BENCH_DIR:-$top/build/bench}
quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
	runs=${BENCH_RUNS:-1} secs=${BENCH_SECONDS:-1} max=${BENCH_CLUSTER_DAEMONS:-2} changes=20
else
	runs=${BENCH_RUNS:-3} secs=${BENCH_SECONDS:-3} max=${BENCH_CLUSTER_DAEMONS:-4} changes=200
fi
mkdir -p "$dir/raw"
raw=$dir/raw/cluster.jsonl
: > "$raw"
D=$(mktemp -d /tmp/nvme-emu-cluster-bench.XXXXXX)
cleanup() {
	"$top/tests/lib/ceph-cluster.sh" stop "$D/ceph" > /dev/null 2>&1
	rm -rf "$D"
}
trap cleanup EXIT
passed=0
failed=0
conf=$("$top/tests/lib/ceph-cluster.sh" start "$D/ceph" 2> "$D/ceph.err")
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "bench: cluster: no Ceph cluster here: $(cat "$D/ceph.err")" >&2
	printf '# Shared reservations through Ceph\n\nNot measured: %s\n' "$(tail -n 1 "$D/ceph.err")" \
		> "$dir/raw/cluster.md"
	[ "$rc" -eq 77 ] && { echo "0 passed, 0 failed"; exit 0; }
	echo "0 passed, 1 failed"
	exit 1
fi
export CEPH_CONF=$conf
for run in $(seq "$runs"); do
	img=bench$run
	if ! rbd create --size 256M --image-feature layering "rbd/$img" 2> "$D/rbd.err"; then
		cat "$D/rbd.err" >&2
		failed=$((failed + 1))
		continue
	fi
	echo "bench: cluster run $run: 1..$max daemons on rbd/$img" >&2
	(cd "$top" && build/bin/cluster_bench build "rbd/$img" "$max" "$changes" "$secs") > "$D/out" 2> "$D/err"
	grep '^{' "$D/out" | sed "s/^{/{\"run\": $run, /" >> "$raw"
	grep -E '^(ok|not ok) - ' "$D/out" | sed "s/^/run $run: /" >&2
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$D/out" | tail -n 1)
	if [ -z "$line" ]; then
		tail -n 20 "$D/err" >&2
		failed=$((failed + 1))
		continue
	fi
	passed=$((passed + ${line%% passed*}))
	f=${line#*passed, }
	failed=$((failed + ${f%% failed*}))
done
python3 - "$raw" "$dir/raw/cluster.md" "$secs" "$runs" "$changes" << 'PY'
import json, statistics, sys
raw, out, secs, runs, changes = sys.argv[1:]
rows = [json.loads(l) for l in open(raw) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["daemons"], []).append(r)
def cell(vals, fmt):
    if not vals:
        return "-"
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt % m
    return (fmt + " (" + fmt + "-" + fmt + ")") % (m, min(vals), max(vals))
md = ["# Shared reservations through Ceph", "",
      "N daemons export one RBD image with `shared_reservations` (the reservation state in one "
      "RADOS object); one throwaway cluster on this machine (one monitor, one memstore OSD, "
      "127.0.0.1). A change is a Reservation Register (Replace) whose completion waits until every "
      "other daemon applied it; contended: every host at once. I/O: nvme-emu-perf on a second "
      "function of each daemon at once, 4 KiB, QD 32, %s s, IOPS summed. Medians of %s runs "
      "(min-max), %s changes per point; load average at the end of each point in the last column."
      % (secs, runs, changes), "",
      "| daemons | change seen by all, p50 (ms) | p99 (ms) | contended changes/s | 4 KiB read IOPS | 4 KiB write IOPS | load |",
      "| --- | --- | --- | --- | --- | --- | --- |"]
for n in sorted(by):
    rs = by[n]
    md.append("| %d | %s | %s | %s | %s | %s | %s |" % (
        n, cell([r["lat_us_p50"] / 1e3 for r in rs], "%.2f"),
        cell([r["lat_us_p99"] / 1e3 for r in rs], "%.2f"),
        cell([r["contended_changes_per_s"] for r in rs], "%.0f"),
        cell([r["randread_iops"] for r in rs], "%.0f"),
        cell([r["randwrite_iops"] for r in rs], "%.0f"),
        cell([r["load"] for r in rs], "%.2f")))
if not by:
    md.append("| - | no point completed | | | | | |")
open(out, "w").write("\n".join(md) + "\n")
print("\n".join(md), file=sys.stderr)
PY
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
