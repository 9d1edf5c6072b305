#!/usr/bin/env bash
# Builds (once) and prints the path of the cached bootable disk image: Debian bookworm installed on an MBR disk for SeaBIOS and OVMF.
#
# The image is what a user installs on an nvme-emu disk and boots with no
# -kernel: a raw 2 GiB disk with an MBR partition table,
#   sector 0 and the gap before partition 1: GRUB for BIOS (boot.img's code
#                in the MBR, core.img from sector 1 holding the disk, FAT and
#                Linux modules and a built-in configuration booting Linux),
#   partition 1: FAT32 ESP (type EFh, active): the kernel and initrd, and
#                systemd-boot as the removable-media loader
#                EFI/BOOT/BOOTX64.EFI with its loader entry, for UEFI,
#   partition 2: ext4 root made from the installed tree,
# both loaders booting root=PARTUUID=<disk id>-02 with console=ttyS0, where
# getty logs root in automatically (a test drives the shell over the serial
# console). Nothing is mounted and no loop device is used: mmdebstrap makes
# the tree, sfdisk partitions the image file, grub-mkimage makes core.img
# (placed and patched here as grub-bios-setup would for an embedded core),
# mkfs.vfat --offset and mtools fill the ESP inside the file, mke2fs -d -E
# offset writes the root.
#
# Why GRUB and not SYSLINUX for BIOS: under TCG, QEMU does not see our
# device's DMA into guest memory (the daemon writes the shared memfd
# directly), so code QEMU translated earlier at an address stays cached when
# the device loads new code there. SYSLINUX's MBR runs at 0x7c00 and loads
# the partition's boot sector to 0x7c00 again: the guest runs the stale MBR
# code. GRUB never loads code over code (boot.img reads core.img through a
# buffer and copies it with the CPU, which QEMU does see). Linux zeroes the
# pages it allocates (init_on_alloc=1, on the command line to be explicit), so
# page-cache pages read from the disk never hold stale translations either.
#
# Cached like the sysroot (sysroot.sh): ${XDG_CACHE_HOME:-~/.cache}/nvme-emu/
# boot-<hash of this file>.img, built beside it under a temporary name and
# renamed into place, one builder at a time (lock), images of older recipes
# removed. Host tools: qemu-configs/deps.list.
#
# Usage: boot-image.sh [--print-key]   (progress on stderr, the path on stdout)
set -euo pipefail

cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu
mirror=http://deb.debian.org/debian
suite=bookworm

# The recipe: everything the image depends on is in this file, so its hash is
# the cache key. systemd-boot-efi only provides the UEFI loader binary.
packages=(linux-image-amd64 systemd-sysv nvme-cli fio e2fsprogs initramfs-tools systemd-boot-efi)
hostname=nvme-emu-boot
disk_mib=2048	# the whole image (sparse)
esp_mib=256	# partition 1, from 1 MiB
# Modules the initramfs loads to find and mount the root: the disk is NVMe
# (nvme pulls nvme-core), the root ext4 (its checksums want crc32c).
initrd_modules=(nvme ext4 crc32c_generic crc32c-intel)
masked_units=(e2scrub_reap.service e2scrub_all.timer fstrim.timer dpkg-db-backup.timer
	      nvmf-autoconnect.service nvmefc-boot-connections.service getty-static.service
	      getty@tty1.service systemd-pstore.service)
# Large driver trees no guest of ours loads: left out of the installed tree.
drop_modules=(drivers/gpu drivers/media drivers/net/wireless drivers/infiniband
	      drivers/staging sound net/wireless net/mac80211 net/bluetooth drivers/bluetooth)

key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
if [ "${1:-}" = --print-key ]; then
	echo "$key"
	exit 0
fi
img=$cache/boot-$key.img
if [ -s "$img" ]; then
	echo "$img"
	exit 0
fi

msg() { echo "boot-image: $*" >&2; }
die() {
	msg "error: $*"
	exit 1
}
for t in mmdebstrap sfdisk grub-mkimage mkfs.vfat mmd mcopy mke2fs e2fsck python3; do
	command -v "$t" >/dev/null || die "$t not found (make deps installs qemu-configs/deps.list)"
done
grub_dir=/usr/lib/grub/i386-pc
[ -f "$grub_dir/boot.img" ] || die "no $grub_dir/boot.img (package grub-pc-bin)"

mkdir -p "$cache"
exec 9>"$cache/boot-image.lock"
flock 9
if [ -s "$img" ]; then
	echo "$img"
	exit 0
fi
# Leftovers of killed builds (we hold the lock, so none is running).
rm -rf --one-file-system "$cache"/boot-*.tmp.*
tmp=$(mktemp -d "$cache/boot-$key.tmp.XXXXXX")
cleanup() { rm -rf --one-file-system "$tmp"; }
trap cleanup EXIT

# Identifiers derived from the key: the same recipe gives the same image.
disk_id=${key:0:8}
root_uuid=$(echo "$key" | sed -E 's/^(.{8})(.{4})(.{4}).*/\1-\2-\3/')-$(echo "${key}nvme" | sha256sum | cut -c1-4)-$(echo "${key}emu" | sha256sum | cut -c1-12)
esp_volid=${key:8:8}
root_part=PARTUUID=$disk_id-02
# init_on_alloc=1: see the top of this file (Debian's default, made explicit).
# systemd.show_status=error: no unit status lines on the console once root is
# logged in, where they would land in the middle of a command's output.
cmdline="root=$root_part rw rootwait console=ttyS0,115200 loglevel=4 init_on_alloc=1 systemd.show_status=error"

# --- the installed tree ----------------------------------------------------
tree=$tmp/tree
inc=$(printf '%s,' "${packages[@]}")
dpkg_opts=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
	   --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*')
for d in "${drop_modules[@]}"; do
	dpkg_opts+=(--dpkgopt="path-exclude=/lib/modules/*/kernel/$d/*")
done
msg "building $img (Debian $suite, a few minutes)"
start=$(date +%s)
# Files laid over the tree. Before the packages (essential hook): the
# initramfs configuration, MODULES=list and a hook adding exactly the modules
# above, so that the kernel's postinst builds the right initrd once.
early=$tmp/early late=$tmp/late
mkdir -p "$early/etc/initramfs-tools/conf.d" "$early/etc/initramfs-tools/hooks" \
	 "$late/etc/systemd/system/serial-getty@ttyS0.service.d"
echo MODULES=list > "$early/etc/initramfs-tools/conf.d/nvme-emu"
{
	echo '#!/bin/sh'
	echo '# nvme-emu boot image: the modules that find and mount the root.'
	echo '[ "$1" = prereqs ] && exit 0'
	echo '. /usr/share/initramfs-tools/hook-functions'
	echo "manual_add_modules ${initrd_modules[*]}"
} > "$early/etc/initramfs-tools/hooks/nvme-emu"
chmod 0755 "$early/etc/initramfs-tools/hooks/nvme-emu"
# After the packages: names, the root in fstab, and the serial console
# logging root in (the boot test and the demo drive this shell).
echo "$hostname" > "$late/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$hostname" > "$late/etc/hosts"
printf '%s / ext4 errors=remount-ro 0 0\n' "$root_part" > "$late/etc/fstab"
{
	echo '[Service]'
	echo 'ExecStart='
	echo 'ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200,38400,9600 %I $TERM'
} > "$late/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"
# Units a disk test guest has no use for, masked: under TCG each costs
# seconds of boot (file system scrubs, NVMe over Fabrics auto-connect, VT
# gettys on a machine without a display, periodic jobs).
for u in "${masked_units[@]}"; do
	ln -s /dev/null "$late/etc/systemd/system/$u"
done
mmdebstrap --variant=essential --mode=unshare --format=directory \
	--components=main --include="${inc%,}" "${dpkg_opts[@]}" \
	--essential-hook="cp -a '$early/.' \"\$1/\"" \
	--customize-hook="cp -a '$late/.' \"\$1/\"" \
	--customize-hook='passwd --root "$1" --delete root' \
	"$suite" "$tree" "deb $mirror $suite main" >&2

kernel=$(ls "$tree"/boot/vmlinuz-* | sort -V | tail -n 1)
kver=${kernel##*/vmlinuz-}
initrd=$tree/boot/initrd.img-$kver
[ -f "$initrd" ] || die "the kernel's postinst made no $initrd"
chroot "$tree" lsinitramfs "/boot/${initrd##*/}" > "$tmp/initrd.list" || die "lsinitramfs $initrd failed"
for m in nvme nvme-core ext4; do
	grep -q "/$m\.ko" "$tmp/initrd.list" || die "$m.ko is not in $initrd"
done
efi=$tree/usr/lib/systemd/boot/efi/systemd-bootx64.efi
[ -f "$efi" ] || die "no $efi in the tree (package systemd-boot-efi)"

# --- the disk --------------------------------------------------------------
raw=$tmp/disk.img
truncate -s "${disk_mib}M" "$raw"
esp_start=2048 # sectors of 512 bytes: 1 MiB, GRUB's core.img fits before it
esp_sectors=$((esp_mib * 2048))
root_start=$((esp_start + esp_sectors))
root_sectors=$((disk_mib * 2048 - root_start))
sfdisk --quiet --no-reread --no-tell-kernel "$raw" >&2 <<EOF
label: dos
label-id: 0x$disk_id
unit: sectors

start=$esp_start, size=$esp_sectors, type=ef, bootable
start=$root_start, size=$root_sectors, type=83
EOF

# BIOS: GRUB's core.img with the modules to read the ESP and boot Linux, and
# a configuration (run by GRUB's rescue parser: one command a line) that
# does it at once, on the serial console.
{
	echo 'serial --unit=0 --speed=115200'
	echo 'terminal_input serial'
	echo 'terminal_output serial'
	echo 'set root=(hd0,msdos1)'
	echo "linux /vmlinuz $cmdline"
	echo 'initrd /initrd.img'
	echo 'boot'
} > "$tmp/grub.cfg"
grub-mkimage -O i386-pc -d "$grub_dir" -c "$tmp/grub.cfg" -p '(hd0,msdos1)/' \
	-o "$tmp/core.img" biosdisk part_msdos fat linux boot serial terminal
# core.img at sector 1: its first sector (diskboot.img) loads the others
# from the block list at its end (first sector, count, segment 820h where
# they go); boot.img in the MBR loads that first sector from its
# kernel_sector field (offset 5Ch), from the drive the BIOS booted (boot_drive
# FFh at 64h), the floppy check at 66h replaced by nops, as grub-bios-setup
# does for a hard disk. Only boot.img's 440 code bytes: the partition table
# stays.
python3 - "$tmp/core.img" "$grub_dir/boot.img" "$raw" "$esp_start" <<'PY' || die "GRUB setup failed"
import struct, sys
core_path, boot_path, disk_path, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
core = bytearray(open(core_path, "rb").read())
core += bytes(-len(core) % 512)
n = len(core) // 512
if n + 1 > limit:
    sys.exit(f"core.img is {n} sectors: no room before sector {limit}")
start, count, seg = struct.unpack_from("<QHH", core, 500)
if seg != 0x820:
    sys.exit(f"core.img: unexpected block list segment {seg:#x}")
struct.pack_into("<QHH", core, 500, 2, n - 1, 0x820)
boot = bytearray(open(boot_path, "rb").read())
if len(boot) != 512:
    sys.exit("boot.img is not one sector")
struct.pack_into("<Q", boot, 0x5C, 1)
boot[0x64] = 0xFF
boot[0x66:0x68] = b"\x90\x90"
with open(disk_path, "r+b") as d:
    d.seek(0)
    d.write(boot[:440])
    d.seek(512)
    d.write(core)
PY

# Partition 1: FAT32 (512-byte clusters: enough clusters for FAT32 at this
# size; the partition start as hidden sectors in the boot sector).
mkfs.vfat -F 32 -s 1 -n NVMEEMU-ESP -i "$esp_volid" --offset "$esp_start" -h "$esp_start" \
	"$raw" $((esp_sectors / 2)) >/dev/null 2>"$tmp/mkfs.err" || { cat "$tmp/mkfs.err" >&2; die "mkfs.vfat failed"; }
esp="$raw@@$((esp_start * 512))"
export MTOOLS_SKIP_CHECK=1
mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries
mcopy -i "$esp" "$kernel" ::/vmlinuz
mcopy -i "$esp" "$initrd" ::/initrd.img
mcopy -i "$esp" "$efi" ::/EFI/BOOT/BOOTX64.EFI
# UEFI: systemd-boot boots its only entry at once.
printf 'default debian.conf\ntimeout 0\nconsole-mode keep\n' > "$tmp/loader.conf"
printf 'title Debian %s (nvme-emu boot image)\nlinux /vmlinuz\ninitrd /initrd.img\noptions %s\n' \
	"$suite" "$cmdline" > "$tmp/debian.conf"
mcopy -i "$esp" "$tmp/loader.conf" ::/loader/loader.conf
mcopy -i "$esp" "$tmp/debian.conf" ::/loader/entries/debian.conf

# Partition 2: ext4 from the tree (root-owned files as they are).
mke2fs -q -t ext4 -L nvme-emu-root -U "$root_uuid" -d "$tree" \
	-b 4096 -E "offset=$((root_start * 512))" "$raw" $((root_sectors / 2))k >&2
e2fsck -fn "$raw?offset=$((root_start * 512))" >&2 || die "e2fsck finds the new root file system damaged"

mv -T "$raw" "$img"
for old in "$cache"/boot-*.img; do
	[ "$old" != "$img" ] || continue
	msg "removing the outdated $old"
	rm -f "$old"
done
msg "done in $(($(date +%s) - start)) s: kernel $kver, $(du -m "$img" | cut -f1) MiB used of ${disk_mib} MiB"
echo "$img"
