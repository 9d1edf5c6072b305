#!/usr/bin/env bash
# Guest test (issue 15): the NBD server behind a namespace dies and comes back in the middle of a
# guest's fio; no acknowledged write is lost. nbdkit's file plugin (each write delayed 20 ms so the
# write phase lasts seconds) serves a file over a unix socket; the guest's fio writes 16 MiB with
# crc32c checksums (tests/guest/jobs/nbd-restart.sh); 2 s into it the host kills nbdkit, waits 1 s
# and starts it again on the same file and socket. nvme-emu resends what the dead server never
# acknowledged; fio must end without an error and its read-back must verify every block.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup nbd-restart
if ! command -v nbdkit > /dev/null; then
	echo "nbdkit not installed: skipping"
	echo "0 passed, 0 failed"
	exit 0
fi
bin=$GT_TOP/build/bin/nvme-emu
sock=$GT_DIR/nvme.sock
nsock=$GT_DIR/nbd.sock
disk=$GT_DIR/disk.raw
rm -f "$disk" "$nsock"
truncate -s 64M "$disk"
nbdkit_pid=
start_nbdkit() {
	rm -f "$nsock"
	nbdkit --foreground --exit-with-parent -U "$nsock" --filter=delay file "$disk" \
		delay-write=20ms >> "$GT_DIR/nbdkit.log" 2>&1 &
	nbdkit_pid=$!
	for _ in $(seq 100); do [ -S "$nsock" ] && return 0; sleep 0.1; done
	return 1
}
host_step "nbdkit (file plugin, 20 ms per write)" start_nbdkit
"$bin" --socket "$sock" --nbd "nbd+unix:///?socket=$nsock" --serial NVMEEMU-NBDRS -q 2 \
	> "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill -9 $daemon $nbdkit_pid 2> /dev/null; [ -n "${launcher:-}" ] && kill $launcher 2> /dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/nbd-restart.sh" --vfio-user "$sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
out=$GT_DIR/run/out

if host_step "the guest's fio started" quiet_wait "$GT_TIMEOUT" fio-started; then
	sleep 2
	host_step "fio is still writing at the kill" test ! -e "$out/fio-ended"
	kill -9 "$nbdkit_pid"
	wait "$nbdkit_pid" 2> /dev/null
	sleep 1
	host_step "nbdkit restarted on the same file and socket" start_nbdkit
fi
wait "$launcher"
guest_rc=$?
trap - EXIT
host_step "the daemon lost the server and reconnected" grep -q "lost.*reconnecting" \
	"$GT_DIR/daemon.log"
host_step "the daemon is alive after the guest" kill -0 "$daemon"
kill "$daemon" "$nbdkit_pid" 2> /dev/null
wait "$daemon" 2> /dev/null
[ "$host_failed" -eq 0 ] || { echo "--- nvme-emu log tail"; tail -n 20 "$GT_DIR/daemon.log"; }
gt_report_with_host "$guest_rc"
