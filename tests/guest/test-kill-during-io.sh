#!/usr/bin/env bash
# Guest test: nvme-emu (aio backend on a file) is killed with SIGKILL while the guest's fio is
# writing; every write the guest flushed before the kill must be in the backing file. The guest
# publishes the number of its last flushed record (tests/guest/jobs/kill-during-io.sh); the host
# waits until fio runs and records are flowing, kills the daemon, stops the guest and reads the
# records back from the file.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup kill-during-io
bin=$GT_TOP/build/bin/nvme-emu
sock=$GT_DIR/nvme.sock
disk=$GT_DIR/disk.img
"$bin" --socket "$sock" --aio "$disk:256M" --serial NVMEEMU-KILL -q 2 > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill -9 $daemon 2> /dev/null; [ -n "${launcher:-}" ] && kill $launcher 2> /dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
launcher=
"$GT_LAUNCH" --job "$GT_JOBS/kill-during-io.sh" --vfio-user "$sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" --quiet &
launcher=$!
out=$GT_DIR/run/out

killed=0
if host_step "the guest's fio runs and flushed records flow" quiet_wait "$GT_TIMEOUT" ready; then
	sleep 3 # more records and fio writes in flight
	host_step "fio is still writing at the kill" test ! -e "$out/fio-ended"
	host_step "the daemon is alive before the kill" kill -0 "$daemon"
	kill -9 "$daemon"
	wait "$daemon" 2> /dev/null
	killed=1
fi
flushed=$(cat "$out/flushed" 2> /dev/null || echo 0)
kill "$launcher" 2> /dev/null
wait "$launcher" 2> /dev/null
trap - EXIT

# Every record up to the last one the guest saw flushed, byte for byte.
check_records() {
	python3 - "$disk" "$1" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
bad = []
with open(path, "rb") as f:
    for i in range(1, n + 1):
        f.seek((32768 + i) * 4096)
        want = (b"record %08d " % i).ljust(4096, b".")
        if f.read(4096) != want:
            bad.append(i)
if bad:
    print("records missing or wrong: %d of %d (first %d)" % (len(bad), n, bad[0]))
    sys.exit(1)
print("all %d flushed records in the file" % n)
PY
}
if [ "$killed" -eq 1 ]; then
	host_step "records were flushed before the kill ($flushed)" test "$flushed" -ge 8
	host_step "every flushed write is in the backing file after SIGKILL" check_records "$flushed"
fi
[ "$host_failed" -eq 0 ] || { echo "--- nvme-emu log tail"; tail -n 20 "$GT_DIR/daemon.log"; }
echo "$host_passed passed, $host_failed failed"
[ "$host_failed" -eq 0 ]
