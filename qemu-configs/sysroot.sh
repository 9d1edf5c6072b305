#!/usr/bin/env bash
# Builds (once) and prints the path of the cached Debian trixie guest sysroot.
#
# The sysroot holds everything the guest harness runs: QEMU from
# trixie-backports (it has vfio-user-pci), the guest kernel and the guest's
# userland (nvme-cli, fio, busybox-static, kmod...). It lives outside the work
# tree, under ${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu/sysroot-<hash>, where
# <hash> is taken over this file: a clean clone reuses it, a recipe change
# rebuilds it. It is built into a temporary directory and renamed into place,
# so an interrupted build never leaves a half sysroot behind.
#
# Usage: sysroot.sh [--print-key]   (progress on stderr, the path on stdout)
set -euo pipefail

cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu
mirror=http://deb.debian.org/debian

# The recipe. Everything the sysroot depends on is in this file, so its hash
# is the cache key. QEMU and its firmware come from trixie-backports as one
# set, the rest from trixie.
backports=(qemu-system-x86 qemu-system-common qemu-system-data qemu-system-modules-spice- seabios)
packages=(linux-image-amd64 tiny-initramfs nvme-cli fio busybox-static kmod util-linux
	  e2fsprogs f2fs-tools pciutils procps)

key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
if [ "${1:-}" = --print-key ]; then
	echo "$key"
	exit 0
fi
root=$cache/sysroot-$key
if [ -x "$root/usr/bin/qemu-system-x86_64" ] && [ -e "$root/.nvme-emu-complete" ]; then
	echo "$root"
	exit 0
fi

mkdir -p "$cache"
# One builder at a time: a second caller waits and then reuses the result.
exec 9>"$cache/sysroot.lock"
flock 9
if [ -e "$root/.nvme-emu-complete" ]; then
	echo "$root"
	exit 0
fi

# Leftovers of builds that were killed (we hold the lock, so none is
# running). --one-file-system: never follow a mount a killed mmdebstrap left.
rm -rf --one-file-system "$cache"/sysroot-*.tmp.*
tmp=$(mktemp -d "$cache/sysroot-$key.tmp.XXXXXX")
cleanup() { rm -rf --one-file-system "$tmp"; }
trap cleanup EXIT
rmdir "$tmp" # mmdebstrap wants to create the target itself

inc=$(printf '%s,' "${packages[@]}")
for p in "${backports[@]}"; do
	case $p in
	*-) inc+="$p," ;;
	*) inc+="$p/trixie-backports," ;;
	esac
done

echo "sysroot: building $root (Debian trixie + trixie-backports, about a minute)" >&2
start=$(date +%s)
# Own sources list: the host's apt configuration is never read or changed.
mmdebstrap --variant=essential --mode=root --format=directory \
	--components=main \
	--include="${inc%,}" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--customize-hook='mkdir -p "$1/job"' \
	trixie "$tmp" \
	"deb $mirror trixie main" \
	"deb $mirror trixie-backports main" >&2
touch "$tmp/.nvme-emu-complete"
mv -T "$tmp" "$root"
trap - EXIT
# Sysroots of older recipes are dead weight (about 400 MB each).
for old in "$cache"/sysroot-*; do
	[ "$old" != "$root" ] && [ -e "$old/.nvme-emu-complete" ] || continue
	echo "sysroot: removing the outdated $old" >&2
	rm -rf --one-file-system "$old"
done
echo "sysroot: done in $(($(date +%s) - start)) s" >&2
echo "$root"
