#!/usr/bin/env bash
# Guest test: SeaBIOS or OVMF boots Debian installed on an nvme-emu disk (its only disk), nvme list, fio verify on the root file system, reboot, boot again.
#
# Usage: test-boot.sh bios|uefi   (test-boot-bios.sh, test-boot-uefi.sh)
# The disk is a fresh copy of qemu-configs/boot-image.sh's cached image behind
# build/bin/nvme-emu (aio); QEMU has no -kernel and no other disk. The shell
# is driven over the serial console (qemu-configs/boot-lib.sh). Boot times
# (QEMU start to the root prompt, and reboot command to the prompt) are
# printed and kept in build/guest/tests/boot-<fw>/boot-times.
# BOOT_TIMEOUT: seconds allowed per boot (default 270).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/host-lib.sh"
. "$GT_TOP/qemu-configs/boot-lib.sh"

fw=${1:-}
case $fw in bios | uefi) ;; *) echo "usage: test-boot.sh bios|uefi"; exit 2 ;; esac
boot_timeout=${BOOT_TIMEOUT:-270}
serial=NVMEEMU-BOOT-${fw^^}
gt_setup "boot-$fw"
boot_setup "$GT_DIR"

# step NAME CMD...: host_step that also stops the test when it fails (the
# steps after it need it).
must() {
	host_step "$@" && return 0
	finish
}
finish() {
	boot_cleanup
	# The disk copy (about 600 MB) is kept only to look into a failure.
	[ "$host_failed" -ne 0 ] || rm -f "$GT_DIR/disk.img"
	if [ "$host_failed" -ne 0 ]; then
		for f in console.log firmware.log nvme-emu.log qemu.log serial-shell.log; do
			[ -s "$GT_DIR/$f" ] || continue
			echo "---- last lines of $GT_DIR/$f"
			tail -n 25 "$GT_DIR/$f" | sed 's/^/  | /'
		done
	fi
	echo "$host_passed passed, $host_failed failed"
	[ "$host_failed" -eq 0 ]
	exit
}
# gcheck TIMEOUT CMD [+TEXT | -REGEX]...: runs CMD (a line of shell) in the
# guest, prints its output; succeeds when CMD exited 0, its output holds
# every TEXT and matches no REGEX (case-insensitive).
gcheck() {
	local t=$1 cmd=$2 e ok=0
	shift 2
	boot_req run "$t" "$cmd"
	printf '%s' "$BOOT_OUT" | sed 's/^/  | /'
	[ "$BOOT_RC" -eq 0 ] || { echo "  exit status $BOOT_RC"; ok=1; }
	for e; do
		case $e in
		+*) grep -qF -- "${e#+}" <<<"$BOOT_OUT" || { echo "  missing: ${e#+}"; ok=1; } ;;
		-*) ! grep -qiE -- "${e#-}" <<<"$BOOT_OUT" || { echo "  unexpected: ${e#-}"; ok=1; } ;;
		esac
	done
	return $ok
}

must "the cached boot image copied to the test disk" boot_disk
must "nvme-emu serves the disk" boot_daemon --serial "$serial" --model "nvme-emu boot disk"
must "QEMU starts with $fw firmware and the disk as its only one" boot_qemu "$fw"

# --- first boot --------------------------------------------------------------
must "$fw boots the installed Debian to the root shell" boot_req boot "$boot_timeout"
boot1=$BOOT_SECS
echo "boot time ($fw, first boot): ${boot1} s from QEMU start to the shell"

if [ "$fw" = uefi ]; then
	# systemd-boot leaves its name in a loader variable (LoaderInfo).
	host_step "booted by UEFI firmware through systemd-boot" gcheck 30 \
		'test -d /sys/firmware/efi && tr -d "\0" < /sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f && echo' \
		+systemd-boot
else
	# GRUB puts BOOT_IMAGE on the kernel command line; no EFI.
	host_step "booted by BIOS through GRUB" gcheck 30 \
		'test ! -e /sys/firmware/efi && cat /proc/cmdline' +BOOT_IMAGE=/vmlinuz
fi
must "the root file system is the NVMe namespace's partition 2" gcheck 30 \
	'findmnt -n -o SOURCE,FSTYPE /' "+/dev/nvme0n1p2 ext4"
host_step "nvme list shows the nvme-emu controller" gcheck 60 'nvme list' \
	+/dev/nvme0n1 "+$serial" "+nvme-emu boot disk"
host_step "nvme id-ctrl reads the controller's identity" gcheck 60 \
	'nvme id-ctrl /dev/nvme0 | grep -E "^(sn|mn) "' "+$serial" "+nvme-emu boot disk"
# fio: writes a 16 MiB file in the root file system with crc32c checksums
# and reads it back verifying every block (direct I/O: the data goes through
# the emulated disk, not only the page cache).
fio_cmd='fio --name=rootfs-verify --filename=/root/fio-verify.dat --size=16M --bs=4k --rw=randwrite --ioengine=libaio --iodepth=8 --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting --eta=never'
host_step "fio --verify=crc32c on a file in the root file system" gcheck 240 "$fio_cmd" \
	"+err= 0" +READ: +WRITE: "-verify: bad|verify failed|error"
marker=nvme-emu-boot-$fw-$BOOT_TOKEN
host_step "a marker file written and synced" gcheck 60 \
	"echo $marker > /root/boot-marker && sha256sum /root/fio-verify.dat && sync" +/root/fio-verify.dat
sum_before=$(awk '/fio-verify.dat/ {print $1}' <<<"$BOOT_OUT")

# --- reboot --------------------------------------------------------------------
must "reboot: the guest comes back to the root shell" boot_req reboot "$boot_timeout"
boot2=$BOOT_SECS
echo "boot time ($fw, after reboot): ${boot2} s from 'reboot' to the shell"
host_step "the marker file survived the reboot" gcheck 30 'cat /root/boot-marker' "+$marker"
host_step "the fio file reads back with the same checksum" gcheck 60 \
	'sha256sum /root/fio-verify.dat' "+${sum_before:-no checksum before the reboot}"
host_step "fio verifies the file again after the reboot" gcheck 180 \
	"${fio_cmd/--do_verify=1/--verify_only=1}" "+err= 0" "-verify: bad|verify failed|error"
host_step "nvme list after the reboot" gcheck 60 'nvme list' "+$serial"
host_step "the guest powers off" boot_req poweroff 120

# --- host side -----------------------------------------------------------------
host_step "the daemon is alive after the guest" kill -0 "$BOOT_DAEMON"
boot_cleanup
# The marker is in the backing file itself (ext4 read at partition 2's
# offset, as the image builder laid it out).
part2=$(sfdisk -d "$GT_DIR/disk.img" | sed -n 's/.*img2 : start= *\([0-9]*\),.*/\1/p')
host_step "the marker is in the backing file" bash -c \
	"debugfs -R 'cat /root/boot-marker' '$GT_DIR/disk.img?offset=$((${part2:-0} * 512))' 2>/dev/null | grep -qx '$marker'"
printf '%s first %s s, after reboot %s s (%s)\n' "$fw" "$boot1" "$boot2" \
	"$(grep -q 'accel kvm' "$GT_DIR/qemu-cmdline" && echo KVM || echo TCG)" | tee "$GT_DIR/boot-times"
finish
