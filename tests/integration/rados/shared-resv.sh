#!/usr/bin/env bash
# Integration: one RBD image exported by two nvme-emu daemons with shared_reservations, the
# reservation state in RADOS (shared_resv_test: registrations, conflicts, Preempt and Abort across
# daemons, the fence of a silent daemon by Ceph's blocklist, a daemon killed and restarted), on a
# throwaway Ceph cluster started here (tests/lib/ceph-cluster.sh). When no cluster can run on this
# machine, one line says why. Usage: shared-resv.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-build}
D=$(mktemp -d /tmp/nvme-emu-shared-resv.XXXXXX)
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
export CEPH_CONF=$conf
echo "ok - a single-node Ceph cluster on 127.0.0.1"
# Layering only: two daemons write the image at once, which exclusive-lock would serialize.
if ! rbd create --size 16M --image-feature layering rbd/shared0 2> "$D/rbd.err"; then
	cat "$D/rbd.err"
	echo "not ok - rbd create rbd/shared0"
	echo "1 passed, 1 failed"
	exit 1
fi
echo "ok - rbd create rbd/shared0 (layering only)"
cd "$TOP" && "$BUILD/bin/shared_resv_test" "$BUILD" rbd/shared0 > "$D/out" 2>&1
rc=$?
grep -v '^[0-9]* passed, [0-9]* failed$' "$D/out"
awk '/^[0-9]+ passed, [0-9]+ failed$/ {p = $1; f = $3} END {printf "%d passed, %d failed\n", p + 2, f + (p == "" ? 1 : 0)}' "$D/out"
[ "$rc" -eq 0 ]
