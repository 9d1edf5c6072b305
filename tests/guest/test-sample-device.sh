#!/usr/bin/env bash
# Guest test: a QEMU guest attached with vfio-user-pci to hw-sample-device
# (the generic PCI function layer with a non-NVMe type) sees its vendor and
# device IDs, class, BAR size and MSI-X capability.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup sample-device
mkfifo "$GT_DIR/ctl"
# The sample reads commands on stdin: keep it open until we are done.
"$GT_TOP/build/bin/hw-sample-device" --socket-dir "$GT_DIR" <"$GT_DIR/ctl" \
	>"$GT_DIR/sample.out" 2>"$GT_DIR/sample.log" &
sample=$!
exec 3>"$GT_DIR/ctl"
sock=$GT_DIR/sample-0.sock
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/sample-device.sh" --vfio-user "$sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
rc=$?
echo quit >&3
exec 3>&-
wait "$sample" 2>/dev/null
gt_report $rc
