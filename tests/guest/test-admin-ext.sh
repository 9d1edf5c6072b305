#!/usr/bin/env bash
# Guest test: Device Self-test, Sanitize (block erase, overwrite), Telemetry and the Persistent
# Event Log driven by nvme-cli in the guest against the nvme-emu daemon on a 64 MiB malloc
# namespace (the job: tests/guest/jobs/admin-ext.sh).
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup admin-ext
sock=$GT_DIR/nvme.sock
"$GT_TOP/build/bin/nvme-emu" --socket "$sock" --malloc 64M --serial NVMEEMU-EXT \
	> "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/admin-ext.sh" --vfio-user "$sock" --run-dir "$GT_DIR/run" \
	--timeout "$GT_TIMEOUT"
gt_report $?
