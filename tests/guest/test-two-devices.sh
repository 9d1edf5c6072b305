#!/usr/bin/env bash
# Guest test: two QEMU NVMe devices and a virtio-blk disk at once (different sizes), all visible, the NVMe pair passing a concurrent fio verify.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup two-devices
d0=$(gt_disk disk0 128M)
d1=$(gt_disk disk1 192M)
vb=$(gt_disk vblk0 64M)
"$GT_LAUNCH" --job "$GT_JOBS/two-devices.sh" --add "$GT_FIO" --qemu-nvme "$d0" --qemu-nvme "$d1" \
	--virtio-blk "$vb" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
gt_report $?
