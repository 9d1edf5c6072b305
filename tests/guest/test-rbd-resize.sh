#!/usr/bin/env bash
# Guest test: an RBD-backed namespace (throwaway Ceph cluster) is grown by bdev_rbd_resize while
# the guest runs; the guest kernel sees the new capacity through the Namespace Attribute Changed
# event, keeps the old data and does verified I/O on the new blocks.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup rbd-resize
host_passed=0
host_failed=0
host() {
	local name=$1
	shift
	if "$@"; then echo "ok - host: $name"; host_passed=$((host_passed + 1)); return 0; fi
	echo "not ok - host: $name"
	host_failed=$((host_failed + 1))
	return 1
}
CEPH_CONF=$("$GT_TOP/tests/lib/ceph-cluster.sh" start "$GT_DIR/ceph" 2> "$GT_DIR/ceph.err")
crc=$?
if [ "$crc" -eq 77 ]; then
	echo "ok - SKIPPED: $(cat "$GT_DIR/ceph.err")"
	echo "1 passed, 0 failed"
	exit 0
fi
[ "$crc" -eq 0 ] || { cat "$GT_DIR/ceph.err"; echo "0 passed, 1 failed"; exit 1; }
export CEPH_CONF
rbd create --size 64M rbd/grow
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --rbd rbd/grow \
	--serial NVMEEMU-RBD > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/rbd-resize.sh" --vfio-user "$GT_DIR/nvme.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher $daemon 2>/dev/null; "$GT_TOP/tests/lib/ceph-cluster.sh" stop "$GT_DIR/ceph" > /dev/null 2>&1' EXIT
if host "the guest is ready" quiet_wait 120 ready; then
	host "bdev_rbd_resize Ceph0 to 128 MiB" \
		"$BIN/nvme-emu-rpc" -s "$GT_DIR/rpc.sock" -t 90 bdev_rbd_resize --name Ceph0 --new_size 128
fi
wait "$launcher"
rc=$?
host "rbd info: 128 MiB" sh -c "rbd info rbd/grow | grep -q 'size 128 MiB'"
host "the daemon logged the namespace's new size" grep -q "namespace 1 now 262144 blocks" "$GT_DIR/daemon.log"
gt_report_with_host $rc
