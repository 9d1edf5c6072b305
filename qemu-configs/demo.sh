#!/usr/bin/env bash
# `make demo`: boots the guest on an emulated disk, runs nvme list, nvme id-ctrl and the fio jobs, prints the results table.
#
# Usage: demo.sh [nvme-emu|qemu-nvme|virtio-blk|vfio-user:SOCKET]
# nvme-emu (the default) starts build/bin/nvme-emu on a 1 GiB aio-backed disk
# image and attaches the guest to it over vfio-user.   (DEMO_RUNTIME=seconds per fio job, default 5)
# BOOT=bios|uefi: boot Debian installed on the nvme-emu disk instead
# (demo-boot.sh); only with the nvme-emu device.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kind=${1:-nvme-emu}
if [ -n "${BOOT:-}" ]; then
	[ "$kind" = nvme-emu ] || { echo "demo: BOOT=$BOOT boots from an nvme-emu disk: DEMO_DEVICE must be nvme-emu" >&2; exit 2; }
	exec "$top/qemu-configs/demo-boot.sh" "$BOOT"
fi
runtime=${DEMO_RUNTIME:-5}
[[ $runtime =~ ^[0-9]+$ ]] && [ "$runtime" -ge 1 ] || { echo "demo: DEMO_RUNTIME must be > 0" >&2; exit 2; }
dir=$top/build/guest/demo
rm -rf "$dir/run"
mkdir -p "$dir"

disk=$dir/disk.img
daemon=
stop_daemon() { [ -z "$daemon" ] || { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; }; }
trap stop_daemon EXIT
case $kind in
nvme-emu)
	sock=$dir/nvme-emu.sock
	rm -f "$sock"
	"$top/build/bin/nvme-emu" --socket "$sock" --aio "$disk:1G" --serial NVMEEMU-DEMO \
		--model "nvme-emu demo disk" >"$dir/nvme-emu.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ] || { echo "demo: nvme-emu did not start:" >&2; cat "$dir/nvme-emu.log" >&2; exit 1; }
	echo "demo: nvme-emu (pid $daemon) serving $sock, log $dir/nvme-emu.log"
	dev=(--vfio-user "$sock") ;;
qemu-nvme) truncate -s 1G "$disk"; dev=(--qemu-nvme "$disk") ;;
virtio-blk) truncate -s 1G "$disk"; dev=(--virtio-blk "$disk") ;;
vfio-user:?*) dev=(--vfio-user "${kind#vfio-user:}") ;;
*) echo "demo: DEMO_DEVICE must be nvme-emu, qemu-nvme, virtio-blk or vfio-user:SOCKET, not '$kind'" >&2; exit 2 ;;
esac
printf 'DEMO_KIND=%s\nDEMO_RUNTIME=%s\n' "${kind%%:*}" "$runtime" > "$dir/demo.env"

echo "demo: device $kind, fio jobs of ${runtime}s each; logs in $dir/run"
rc=0
"$top/qemu-configs/launch-guest.sh" --job "$top/tests/guest/jobs/demo.sh" \
	--add "$top/tests/perf/fio" --add "$dir/demo.env" "${dev[@]}" \
	--run-dir "$dir/run" --timeout $((240 + 20 * runtime)) || rc=$?
echo
echo "demo: fio results ($kind)"
shopt -s nullglob
results=("$dir"/run/out/*.json)
if [ ${#results[@]} -gt 0 ]; then
	if ! "$top/tests/perf/fio/fio_table.py" "${results[@]}"; then
		[ "$rc" -ne 0 ] || rc=1
	fi
else
	echo "demo: no fio results"
	[ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
