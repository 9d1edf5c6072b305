#!/usr/bin/env bash
# Integration: cluster/rados_obj (the versioned, watched RADOS object that shared namespaces stand
# on) against a throwaway Ceph cluster started here (tests/lib/ceph-cluster.sh: one monitor, one
# memstore OSD on 127.0.0.1): rados_obj_test's daemons, each its own RADOS client. When no cluster
# can run on this machine, one line says why. Usage: rados-obj.sh BUILD_DIR.
# Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-rados-test.XXXXXX)
cleanup() {
	"$TOP/tests/lib/ceph-cluster.sh" stop "$D/ceph" > /dev/null 2>&1
	rm -rf "$D"
}
trap cleanup EXIT

conf=$("$TOP/tests/lib/ceph-cluster.sh" start "$D/ceph" 2> "$D/ceph.err")
rc=$?
if [ "$rc" -eq 77 ]; then
	echo "ok - SKIPPED: $(cat "$D/ceph.err")"
	echo "1 passed, 0 failed"
	exit 0
fi
if [ "$rc" -ne 0 ]; then
	cat "$D/ceph.err"
	echo "not ok - a single-node Ceph cluster on 127.0.0.1"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "ok - a single-node Ceph cluster on 127.0.0.1"
CEPH_CONF=$conf "$BIN/rados_obj_test" > "$D/out" 2> "$D/err"
rc=$?
grep -v '^[0-9]* passed, [0-9]* failed$' "$D/out"
if [ "$rc" -ne 0 ]; then
	echo "--- rados_obj_test exited $rc; its stderr:"
	tail -n 30 "$D/err"
fi
# The program's own count, plus the cluster line.
awk '/^[0-9]+ passed, [0-9]+ failed$/ {p = $1; f = $3} END {printf "%d passed, %d failed\n", p + 1, f + (p == "" ? 1 : 0)}' "$D/out"
[ "$rc" -eq 0 ]
