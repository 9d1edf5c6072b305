#!/usr/bin/env bash
# Guest test: an RBD-backed namespace (throwaway Ceph cluster) is grown by bdev_rbd_resize while
# the guest runs; the guest kernel sees the new capacity through the Namespace Attribute Changed
# event, keeps the old data and does verified I/O on the new blocks.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup rbd-resize
gt_ceph_start
rbd create --size 64M rbd/grow
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --rbd rbd/grow \
	--serial NVMEEMU-RBD > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/rbd-resize.sh" --vfio-user "$GT_DIR/nvme.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher $daemon 2>/dev/null; gt_ceph_stop' EXIT
if host_step "the guest is ready" quiet_wait 120 ready; then
	host_step "bdev_rbd_resize Ceph0 to 128 MiB" \
		"$BIN/nvme-emu-rpc" -s "$GT_DIR/rpc.sock" -t 90 bdev_rbd_resize --name Ceph0 --new_size 128
fi
wait "$launcher"
rc=$?
host_step "rbd info: 128 MiB" sh -c "rbd info rbd/grow | grep -q 'size 128 MiB'"
host_step "the daemon logged the namespace's new size" grep -q "namespace 1 now 262144 blocks" "$GT_DIR/daemon.log"
gt_report_with_host $rc
