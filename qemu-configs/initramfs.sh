#!/usr/bin/env bash
# Builds (once) and prints the path of the guest initramfs generated from the cached sysroot.
#
# The initramfs holds the sysroot's static busybox, guest-init.sh as /init and
# the decompressed modules the 9p root needs (with their dependencies, in
# load order). It is cached beside the sysroot, keyed by the sysroot's key and
# the hash of this script and of guest-init.sh.
#
# Usage: initramfs.sh SYSROOT   (progress on stderr, the path on stdout)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${1:?usage: initramfs.sh SYSROOT}
cache=$(dirname "$root")
# The modules mounting a 9p root needs; nvme is loaded later from the root.
wanted=(9p 9pnet_virtio)

key=$( (basename "$root"; cat "${BASH_SOURCE[0]}" "$here/guest-init.sh") | sha256sum | cut -c1-16)
out=$cache/initramfs-$key.cpio
if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi

kver=$(ls "$root/lib/modules" | sort -V | tail -n 1)
moddir=$root/lib/modules/$kver
[ -f "$moddir/modules.dep" ] || { echo "initramfs: no modules.dep in $moddir" >&2; exit 1; }

echo "initramfs: building $out (kernel $kver)" >&2
tmp=$(mktemp -d "$cache/initramfs.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree/bin" "$tmp/tree/lib/modules" "$tmp/tree/dev"
# The kernel opens /dev/console for init before devtmpfs is mounted.
mknod -m 600 "$tmp/tree/dev/console" c 5 1
cp "$root/bin/busybox" "$tmp/tree/bin/busybox"
cp "$here/guest-init.sh" "$tmp/tree/init"
chmod 0755 "$tmp/tree/init" "$tmp/tree/bin/busybox"

# Dependency closure from modules.dep, emitted dependencies first.
declare -A done_mods=()
order=()
add_module() {
	local path=$1 line dep
	[ -n "${done_mods[$path]:-}" ] && return 0
	done_mods[$path]=1
	line=$(grep -m1 "^$path:" "$moddir/modules.dep") ||
		{ echo "initramfs: $path not in modules.dep" >&2; return 1; }
	for dep in ${line#*:}; do
		add_module "$dep"
	done
	order+=("$path")
}
for m in "${wanted[@]}"; do
	path=$(grep -m1 -E "(^|/)$m\.ko(\.[a-z]+)?:" "$moddir/modules.dep" | cut -d: -f1) ||
		{ echo "initramfs: module $m not found" >&2; exit 1; }
	add_module "$path"
done
: > "$tmp/tree/modules.order"
for path in "${order[@]}"; do
	name=$(basename "$path")
	case $name in
	*.ko.xz) xz -dc "$moddir/$path" > "$tmp/tree/lib/modules/${name%.xz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$path" > "$tmp/tree/lib/modules/${name%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$path" > "$tmp/tree/lib/modules/${name%.gz}" ;;
	*.ko) cp "$moddir/$path" "$tmp/tree/lib/modules/$name" ;;
	*) echo "initramfs: unexpected module file $path" >&2; exit 1 ;;
	esac
	name=${name%.ko*}.ko
	echo "$name" >> "$tmp/tree/modules.order"
done
echo "initramfs: modules: $(tr '\n' ' ' < "$tmp/tree/modules.order")" >&2

# Uncompressed: it is small, and the kernel unpacks it fastest that way.
(cd "$tmp/tree" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) > "$tmp/initramfs.cpio"
mv -f "$tmp/initramfs.cpio" "$out"
# Older images are never used again (their key names an older recipe).
for old in "$cache"/initramfs-*.cpio; do
	[ "$old" = "$out" ] || rm -f "$old"
done
echo "$out"
