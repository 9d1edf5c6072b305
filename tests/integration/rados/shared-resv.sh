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

. "$TOP/tests/lib/check.sh"
ceph_up "$D/ceph"
# Layering only: two daemons write the image at once, which exclusive-lock would serialize.
check "rbd create rbd/shared0 (layering only)" rbd create --size 16M --image-feature layering rbd/shared0
cd "$TOP" && "$BUILD/bin/shared_resv_test" "$BUILD" rbd/shared0 > "$D/out" 2>&1
rc=$?
grep -v '^[0-9]* passed, [0-9]* failed$' "$D/out"
program_counts "$D/out"
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
finish
