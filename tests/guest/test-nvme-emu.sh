#!/usr/bin/env bash
# Guest test: the nvme-emu daemon (aio, or io_uring with NVME_EMU_BACKEND=uring, on a file) serves a QEMU guest
# over vfio-user; the job runs nvme-cli, fio verify, ext4, discard, reset and
# FLR. Afterwards the daemon is killed (SIGKILL) and the pattern the guest
# wrote and flushed must be in the backing file.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

# The file backend: aio (default) or uring (test-nvme-emu-uring.sh).
backend=${NVME_EMU_BACKEND:-aio}
case $backend in aio | uring) ;; *) echo "NVME_EMU_BACKEND must be aio or uring"; exit 2 ;; esac
gt_setup "nvme-emu$([ "$backend" = aio ] || echo "-$backend")"
bin=$GT_TOP/build/bin/nvme-emu
sock=$GT_DIR/nvme.sock
disk=$GT_DIR/disk.img
"$bin" --socket "$sock" "--$backend" "$disk:256M" --serial NVMEEMU-GT1 \
	--model "nvme-emu guest test" -q 4 >"$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/nvme-emu.sh" --vfio-user "$sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
rc=$?
alive=0
kill -0 "$daemon" 2>/dev/null && alive=1
kill -9 "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
out=$GT_DIR/run/out/output.log
if [ "$alive" -eq 1 ]; then echo "ok - daemon alive after the guest" >>"$out"
else echo "not ok - daemon died during the guest run" >>"$out"; tail -20 "$GT_DIR/daemon.log"; fi
if cmp -s <(yes nvme-emu-persist | head -c 1048576) \
	<(dd if="$disk" bs=1M skip=100 count=1 2>/dev/null); then
	echo "ok - flushed data in the backing file after SIGKILL" >>"$out"
else
	echo "not ok - flushed data in the backing file after SIGKILL" >>"$out"
fi
grep -E '^(not )?ok - (daemon|flushed)' "$out"
gt_report $rc
