#!/usr/bin/env bash
# `make demo BOOT=bios|uefi`: boots Debian installed on an nvme-emu disk (no -kernel, no other disk), logs in, runs nvme-cli and fio on the root disk, prints the results.
#
# Usage: demo-boot.sh bios|uefi   (DEMO_RUNTIME=seconds per fio job, default 5)
# The disk is a copy of qemu-configs/boot-image.sh's cached image in
# build/guest/demo-boot-<fw>/ (rewritten at each run), served by
# build/bin/nvme-emu; the firmware (SeaBIOS or OVMF) boots it, getty logs
# root in on the serial console and the demo types the commands there
# (boot-lib.sh). The fio jobs are tests/perf/fio's, on a file in the root
# file system; their JSON comes back over the console and becomes the table.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/boot-lib.sh"
fw=${1:-}
case $fw in
bios) fw_name="SeaBIOS" ;;
uefi) fw_name="OVMF (UEFI)" ;;
*) echo "demo: BOOT must be bios or uefi, not '$fw'" >&2; exit 2 ;;
esac
runtime=${DEMO_RUNTIME:-5}
[[ $runtime =~ ^[0-9]+$ ]] && [ "$runtime" -ge 1 ] || { echo "demo: DEMO_RUNTIME must be > 0" >&2; exit 2; }
dir=$top/build/guest/demo-boot-$fw
boot_setup "$dir"
mkdir -p "$dir/out"
rc=0

fail() {
	echo "demo: $*" >&2
	echo "demo: logs in $dir (console.log, nvme-emu.log, qemu.log)" >&2
	boot_cleanup
	exit 1
}
# show TITLE TIMEOUT CMD: runs CMD in the guest and prints its output.
show() {
	echo
	echo "root@guest# $3"
	boot_req run "$2" "$3"
	printf '%s' "$BOOT_OUT"
	if [ "$BOOT_RC" -ne 0 ]; then
		echo "demo: '$1' failed (exit status $BOOT_RC)" >&2
		rc=1
	fi
}

echo "demo: building or reusing the boot image (qemu-configs/boot-image.sh)"
boot_disk || fail "no boot image"
boot_daemon --serial NVMEEMU-DEMO --model "nvme-emu demo disk" || fail "nvme-emu did not start"
echo "demo: nvme-emu (pid $BOOT_DAEMON) serves $dir/disk.img on $dir/nvme.sock"
boot_qemu "$fw" || fail "QEMU did not start"
echo "demo: QEMU with $fw_name, the nvme-emu disk as its only disk; waiting for the root shell"
boot_req boot "${BOOT_TIMEOUT:-600}" || fail "the guest did not reach the root shell (status $BOOT_RC)"
echo "demo: $fw_name booted Debian from the nvme-emu disk and logged root in: ${BOOT_SECS} s"

show "nvme list" 60 'nvme list'
show "id-ctrl" 60 'nvme id-ctrl /dev/nvme0 | grep -E "^(vid|sn|mn|fr|mdts|nn|oncs|vwc) "'
show "root" 30 'findmnt -n -o SOURCE,FSTYPE,SIZE,USED / && cat /proc/cmdline'
show "smart-log" 60 'nvme smart-log /dev/nvme0 | grep -iE "^(data.units|host.(read|write).commands|temperature)"'

# The job files travel over the console (base64), the JSON comes back.
echo
echo "demo: fio on /root/demo.fio-data in the root file system (128 MiB, ${runtime}s a job)"
for w in randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32 seqread-128k seqwrite-128k verify-crc32c; do
	job=$top/tests/perf/fio/$w.fio
	b64=$(base64 -w0 "$job")
	size=128M
	[ "$w" = verify-crc32c ] && size=32M
	boot_req run $((120 + 4 * runtime)) "echo $b64 | base64 -d > /root/$w.fio && FIO_DEV=/root/demo.fio-data FIO_SIZE=$size FIO_RUNTIME=$runtime fio --output-format=json /root/$w.fio"
	printf '%s' "$BOOT_OUT" > "$dir/out/$w.json"
	if [ "$BOOT_RC" -eq 0 ]; then
		echo "demo: fio $w done (${BOOT_SECS} s)"
	else
		echo "demo: fio $w failed (exit status $BOOT_RC), output in $dir/out/$w.json" >&2
		rc=1
	fi
done
show "sync" 60 'rm -f /root/demo.fio-data && sync && echo synced'
boot_req poweroff 120 || { echo "demo: the guest did not power off" >&2; rc=1; }
boot_cleanup

echo
echo "demo: fio results ($fw_name boot, nvme-emu root disk)"
shopt -s nullglob
results=("$dir"/out/*.json)
if [ ${#results[@]} -eq 0 ] || ! "$top/tests/perf/fio/fio_table.py" "${results[@]}"; then
	rc=1
fi
exit "$rc"
