#!/usr/bin/env bash
# Guest test: boots with QEMU's built-in NVMe device (file backend); nvme list, id-ctrl, and a fio crc32c verify must pass.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup qemu-nvme
disk=$(gt_disk disk0 256M)
"$GT_LAUNCH" --job "$GT_JOBS/qemu-nvme-basic.sh" --add "$GT_FIO" --qemu-nvme "$disk" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
gt_report $?
