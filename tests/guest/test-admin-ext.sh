#!/usr/bin/env bash
# Guest test: Device Self-test, Sanitize (block erase, overwrite), Telemetry and the Persistent
# Event Log driven by nvme-cli in the guest against the nvme-emu daemon on a 64 MiB malloc
# namespace (the job: tests/guest/jobs/admin-ext.sh). The daemon keeps the event log in a state
# file (--event-log); it is stopped and started again on that file, and a second boot
# (jobs/admin-ext-pel.sh) finds the first boot's events in the log, the power cycle count at 2.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup admin-ext
sock=$GT_DIR/nvme.sock
pel=$GT_DIR/pel.bin
daemon=
start_daemon() {
	rm -f "$sock"
	"$GT_TOP/build/bin/nvme-emu" --socket "$sock" --malloc 64M --serial NVMEEMU-EXT \
		--event-log "$pel" >> "$GT_DIR/daemon.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
	return 1
}
stop_daemon() {
	kill -TERM "$daemon" 2>/dev/null
	wait "$daemon"
}
trap 'kill $daemon 2>/dev/null' EXIT

rc=1
if host_step "nvme-emu serves the socket (event log in a file)" start_daemon; then
	"$GT_LAUNCH" --job "$GT_JOBS/admin-ext.sh" --vfio-user "$sock" --run-dir "$GT_DIR/run1" \
		--timeout "$GT_TIMEOUT"
	rc=$?
	host_step "nvme-emu exits cleanly" stop_daemon
	host_step "the event log file was written" test -s "$pel"
	if host_step "nvme-emu starts again on the same event log file" start_daemon; then
		"$GT_LAUNCH" --job "$GT_JOBS/admin-ext-pel.sh" --vfio-user "$sock" \
			--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
		rc2=$?
		[ "$rc" -ne 0 ] || rc=$rc2
		host_step "nvme-emu exits cleanly (2)" stop_daemon
	fi
fi
trap - EXIT
# Both boots' checks are counted: the first run's lines go into the second's log.
if [ -f "$GT_DIR/run1/out/output.log" ]; then
	mkdir -p "$GT_DIR/run/out"
	cat "$GT_DIR/run1/out/output.log" >> "$GT_DIR/run/out/output.log"
fi
[ "$host_failed" -eq 0 ] || tail -n 30 "$GT_DIR/daemon.log"
gt_report_with_host "$rc"
