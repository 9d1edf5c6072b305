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

. "$TOP/tests/lib/check.sh"
ceph_up "$D/ceph"
"$BIN/rados_obj_test" > "$D/out" 2> "$D/err"
rc=$?
grep -v '^[0-9]* passed, [0-9]* failed$' "$D/out"
[ "$rc" -eq 0 ] || { echo "--- rados_obj_test exited $rc; its stderr:"; tail -n 30 "$D/err"; }
program_counts "$D/out"
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
finish
