#!/usr/bin/env bash
# Guest test: the nvme-emu daemon (aio, or io_uring with NVME_EMU_BACKEND=uring, on a file; or
# NVME_EMU_BACKEND=nbd: an nbdkit file export of that file; or NVME_EMU_BACKEND=rbd: an RBD image
# of a throwaway Ceph cluster, exported to that file at the end) serves a QEMU guest
# over vfio-user; the job runs nvme-cli, fio verify, ext4, discard, reset and
# FLR. Afterwards the daemon is killed (SIGKILL) and the pattern the guest
# wrote and flushed must be in the backing file.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

# The backend: aio (default), uring (test-nvme-emu-uring.sh), nbd (test-nvme-emu-nbd.sh) or rbd
# (test-nvme-emu-rbd.sh).
backend=${NVME_EMU_BACKEND:-aio}
case $backend in aio | uring | nbd | rbd) ;; *) echo "NVME_EMU_BACKEND must be aio, uring, nbd or rbd"; exit 2 ;; esac
gt_setup "nvme-emu$([ "$backend" = aio ] || echo "-$backend")"
bin=$GT_TOP/build/bin/nvme-emu
sock=$GT_DIR/nvme.sock
disk=$GT_DIR/disk.img
nbdkit_pid=
if [ "$backend" = nbd ]; then
	# nbdkit's file plugin on the same file: the guest's flushes reach it as NBD_CMD_FLUSH.
	truncate -s 256M "$disk"
	nbdkit --foreground --exit-with-parent -U "$GT_DIR/nbd.sock" file "$disk" \
		>"$GT_DIR/nbdkit.log" 2>&1 &
	nbdkit_pid=$!
	for _ in $(seq 100); do [ -S "$GT_DIR/nbd.sock" ] && break; sleep 0.1; done
	ns_arg=(--nbd "nbd+unix:///?socket=$GT_DIR/nbd.sock")
elif [ "$backend" = rbd ]; then
	gt_ceph_start
	trap gt_ceph_stop EXIT
	rbd create --size 256M rbd/guest || { echo "0 passed, 1 failed"; exit 1; }
	ns_arg=(--rbd rbd/guest)
else
	ns_arg=("--$backend" "$disk:256M")
fi
"$bin" --socket "$sock" "${ns_arg[@]}" --serial NVMEEMU-GT1 \
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
if [ -n "$nbdkit_pid" ]; then
	kill "$nbdkit_pid" 2>/dev/null
	wait "$nbdkit_pid" 2>/dev/null
fi
# RBD: what the cluster holds, read back by the rbd CLI after the SIGKILL.
[ "$backend" = rbd ] && rbd export rbd/guest "$disk" > /dev/null 2>&1
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
