#!/usr/bin/env bash
# Builds (once, opt-in: `make qemu-patched`) Debian's trixie-backports QEMU, x86_64-softmmu only, with patches/qemu/*.patch applied, and prints the path of a runnable qemu-system-x86_64.
#
# Why: QEMU 11.1.3 aborts when it finalizes a vfio-user-pci device that has
# MSI-X (see patches/qemu/0001-*.patch). Nothing on the server side avoids it,
# so hot-unplug tests need a QEMU carrying our fix.
#
# Measured on our 2-core build machines (Nov 2026): step 1 takes 25-35 s;
# step 2 fails there, the Debian mirror we reach serves binary packages only
# (404 on every source file), so the source build needs QEMU_SOURCE; --binary
# (below) takes under a second and is what works there today.
#
# Steps, each cached under ${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu/ and built
# into a temporary directory renamed into place (an interrupted run leaves no
# half result; concurrent callers wait on a lock):
#   1. qemu-buildroot-<hash of its package list>: a Debian trixie build root made by
#      mmdebstrap with its own apt sources (trixie, trixie-backports and its
#      deb-src): the host's apt configuration is never read or changed.
#   2. The QEMU source package (Debian's, with Debian's patches), downloaded
#      into the build root by apt-get source (or QEMU_SOURCE, see below).
#   3. qemu-patched-<hash of this file, the patches, QEMU_SOURCE>: the source unpacked,
#      our patches applied, configured for x86_64-softmmu with what the guest
#      harness uses (KVM, TCG, virtio-9p, vfio-user-pci...), built with ninja
#      inside the build root (a private mount namespace, /proc and /dev bound),
#      and a wrapper script qemu-system-x86_64 that runs the binary through the
#      build root's own loader and libraries (like launch-guest.sh does with the
#      sysroot's QEMU). Firmware comes from the sysroot: the launcher passes -L.
#
# Usage: build-qemu.sh [--binary | --print-key | --print-path]
#   (default) build what is missing, print the wrapper's path on stdout
#   --binary      stopgap where no QEMU source can be had: copy the sysroot's
#                 Debian QEMU binary with the aborting call turned into a NOP
#                 (patches/qemu/binary-fix.py, which refuses any binary that
#                 does not have the expected shape) into
#                 qemu-binfix-<hash of this file, binary-fix.py, the sysroot key>
#                 and print its wrapper's path
#   --print-path  print the path of the source build when it is there, else of
#                 the --binary copy, exit 1 when neither is (never builds: the
#                 guest tests use this to find one)
#   --print-key   print the cache key of the source build
# Progress and per-step timings go to stderr; the build log to
# <cache>/qemu-patched-<key>.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu
mirror=http://deb.debian.org/debian
suite=trixie-backports
me=build-qemu

# --enable-vfio-user-client: vfio-user-pci is off unless asked for (Debian asks).
# Build dependencies: only what this configuration needs (Debian's full
# build-dep list pulls in GTK, SDL, Xen, spice, ceph... and takes far longer).
build_deps=(build-essential dpkg-dev ca-certificates xz-utils python3 python3-venv
	    meson ninja-build pkg-config flex bison libglib2.0-dev libpixman-1-dev
	    zlib1g-dev libcap-ng-dev libattr1-dev libaio-dev liburing-dev libfdt-dev
	    libzstd-dev)
configure_flags=(--target-list=x86_64-softmmu --prefix=/usr --disable-docs
		 --disable-werror --disable-install-blobs --disable-tools
		 --disable-guest-agent --disable-user --enable-system --enable-kvm
		 --enable-tcg --enable-virtfs --enable-linux-aio --enable-linux-io-uring
		 --disable-gtk --disable-sdl --disable-vnc --disable-opengl
		 --disable-spice --disable-xen --enable-vfio-user-client)

shopt -s nullglob
patches=("$top"/patches/qemu/*.patch)
shopt -u nullglob

# The build root depends only on what goes into it; the result on this whole
# recipe and the patches.
root_key=$(echo "$mirror $suite ${build_deps[*]}" | sha256sum | cut -c1-16)
key=$( (cat "${BASH_SOURCE[0]}" "${patches[@]}"; echo "${QEMU_SOURCE:-}") | sha256sum | cut -c1-16)
broot=$cache/qemu-buildroot-$root_key
out=$cache/qemu-patched-$key
wrapper=$out/qemu-system-x86_64

bin_key=$( (cat "${BASH_SOURCE[0]}" "$top/patches/qemu/binary-fix.py"
	  "$here/sysroot.sh" --print-key) | sha256sum | cut -c1-16)
bin_out=$cache/qemu-binfix-$bin_key

# binary_fix: the --binary mode (see the usage above).
binary_fix() {
	local root t
	if [ -e "$bin_out/.nvme-emu-complete" ]; then
		echo "$bin_out/qemu-system-x86_64"
		return 0
	fi
	root=$("$here/sysroot.sh")
	mkdir -p "$cache"
	exec 9>"$cache/qemu-patched.lock"
	flock 9
	rm -rf --one-file-system "$cache"/qemu-binfix-*.tmp.*
	t=$(mktemp -d "$bin_out.tmp.XXXXXX")
	"$top/patches/qemu/binary-fix.py" "$root/usr/bin/qemu-system-x86_64" \
		"$t/qemu-system-x86_64.bin" || { rm -rf "$t"; return 1; }
	chmod 0755 "$t/qemu-system-x86_64.bin"
	cat > "$t/qemu-system-x86_64" <<WRAPPER
#!/bin/sh
# The sysroot's QEMU with patches/qemu/binary-fix.py applied (qemu-configs/build-qemu.sh --binary); runs through the sysroot's loader and libraries.
exec "$root/lib64/ld-linux-x86-64.so.2" \\
	--library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \\
	"\$(dirname "\$0")/qemu-system-x86_64.bin" "\$@"
WRAPPER
	chmod 0755 "$t/qemu-system-x86_64"
	"$t/qemu-system-x86_64" --version | head -n 1 >&2 || { rm -rf "$t"; return 1; }
	touch "$t/.nvme-emu-complete"
	mv -T "$t" "$bin_out"
	echo "$bin_out/qemu-system-x86_64"
}

case ${1:-} in
--print-key) echo "$key"; exit 0 ;;
--print-path)
	if [ -e "$out/.nvme-emu-complete" ]; then
		echo "$wrapper"
	elif [ -e "$bin_out/.nvme-emu-complete" ]; then
		echo "$bin_out/qemu-system-x86_64"
	else
		exit 1
	fi
	exit 0 ;;
--binary) binary_fix; exit ;;
"") ;;
*) echo "usage: $me [--binary | --print-key | --print-path]" >&2; exit 2 ;;
esac
if [ -e "$out/.nvme-emu-complete" ]; then
	echo "$wrapper"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/qemu-patched.lock"
flock 9
if [ -e "$out/.nvme-emu-complete" ]; then
	echo "$wrapper"
	exit 0
fi
# Leftovers of killed runs (we hold the lock, so none is running).
# --one-file-system: never follow a mount a killed run left behind.
rm -rf --one-file-system "$cache"/qemu-buildroot-*.tmp.* "$cache"/qemu-patched-*.tmp.*

tmp=""
cleanup() { [ -z "$tmp" ] || rm -rf --one-file-system "$tmp"; }
trap cleanup EXIT
t0=$(date +%s)
step_start=$t0
step_done() {
	local now
	now=$(date +%s)
	echo "$me: $1 done in $((now - step_start)) s" >&2
	step_start=$now
}

# --- 1. the build root ------------------------------------------------------
if [ ! -e "$broot/.nvme-emu-complete" ]; then
	tmp=$(mktemp -d "$broot.tmp.XXXXXX")
	rmdir "$tmp" # mmdebstrap wants to create the target itself
	echo "$me: building the build root $broot (mmdebstrap)" >&2
	inc=$(printf '%s,' "${build_deps[@]}")
	mmdebstrap --variant=apt --mode=root --format=directory --components=main \
		--include="${inc%,}" \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		trixie "$tmp" \
		"deb $mirror trixie main" \
		"deb $mirror $suite main" \
		"deb-src $mirror $suite main" >&2
	mkdir -p "$tmp/src" "$tmp/build"
	touch "$tmp/.nvme-emu-complete"
	mv -T "$tmp" "$broot"
	tmp=""
	step_done "build root"
fi

# broot_run CMD...: runs CMD (a shell command line) inside the build root, in
# a private mount namespace (its /proc and /dev mounts vanish with it).
broot_run() {
	unshare --mount --propagation private sh -c '
		set -e
		mount -t proc proc "$1/proc"
		mount --rbind /dev "$1/dev"
		root=$1
		shift
		exec chroot "$root" /bin/sh -c "$1"
	' sh "$broot" "$1"
}

# --- 2. the source -----------------------------------------------------------
# Debian's source package by default: apt-get update and apt-get source inside
# the build root, on its own sources list (the host's apt is never used).
# QEMU_SOURCE=PATH takes a .dsc (with its files beside it), an upstream
# qemu-X.Y.Z.tar.* or an unpacked source directory instead, for mirrors that
# serve no source packages.
src_in=${QEMU_SOURCE:-}
if [ -z "$src_in" ]; then
	if ! ls "$broot"/src/qemu_*.dsc > /dev/null 2>&1; then
		echo "$me: downloading the qemu source package from $suite" >&2
		cp /etc/resolv.conf "$broot/etc/resolv.conf"
		broot_run "cd /src && apt-get -q update && apt-get -q source --download-only qemu/$suite" >&2 || {
			echo "$me: apt-get source qemu/$suite failed (does $mirror serve source" \
				"packages here?); set QEMU_SOURCE to a .dsc, an upstream tarball" \
				"or a source tree" >&2
			exit 1
		}
		step_done "source download"
	fi
	src_in=$(ls "$broot"/src/qemu_*.dsc | sort -V | tail -n 1)
fi
[ -e "$src_in" ] || { echo "$me: QEMU_SOURCE: no such file or directory $src_in" >&2; exit 1; }

# --- 3. unpack, patch, configure, build -------------------------------------
[ ${#patches[@]} -gt 0 ] || { echo "$me: no patches in $top/patches/qemu" >&2; exit 1; }
# Build trees live inside the build root (the compiler runs there); the result
# directory $out only holds the binary, the wrapper and the list of patches.
tmp=$(mktemp -d "$out.tmp.XXXXXX")
work=$(mktemp -d "$broot/build/tmp.XXXXXX")
in_root=${work#"$broot"}
cleanup() {
	[ -z "$tmp" ] || rm -rf --one-file-system "$tmp"
	[ -z "$work" ] || rm -rf --one-file-system "$work"
}
# dpkg-source and patch run inside the build root (the host may lack them).
echo "$me: unpacking $src_in" >&2
case $src_in in
"$broot"/*.dsc) broot_run "cd '$in_root' && dpkg-source --no-check -x '${src_in#"$broot"}' src" > /dev/null ;;
*.dsc) (cd "$work" && dpkg-source --no-check -x "$(realpath "$src_in")" src > /dev/null) ;;
*.tar.*) mkdir "$work/src" && tar -xf "$src_in" -C "$work/src" --strip-components=1 ;;
*) [ -d "$src_in" ] || { echo "$me: QEMU_SOURCE: not a .dsc, tarball or directory" >&2; exit 1; }
   cp -a "$src_in/." "$work/src/" ;;
esac
mkdir "$work/patches"
cp "${patches[@]}" "$work/patches/"
for p in "${patches[@]}"; do
	echo "$me: applying $(basename "$p")" >&2
	broot_run "patch -d '$in_root/src' -p1 --forward --quiet < '$in_root/patches/$(basename "$p")'" >&2
done
cp "${patches[@]}" "$tmp/"
step_done "unpack and patch"

log=$out.log
echo "$me: configuring and building x86_64-softmmu (log: $log)" >&2
broot_run "
	set -e
	cd '$in_root/src'
	mkdir build && cd build
	../configure ${configure_flags[*]}
	ninja -j\$(nproc) qemu-system-x86_64
" > "$log" 2>&1 || {
	echo "$me: build failed, last lines of $log:" >&2
	tail -n 30 "$log" >&2
	exit 1
}
step_done "configure and build"

install -m 0755 "$work/src/build/qemu-system-x86_64" "$tmp/qemu-system-x86_64.bin"
cat > "$tmp/qemu-system-x86_64" <<WRAPPER
#!/bin/sh
# QEMU x86_64-softmmu built by qemu-configs/build-qemu.sh with patches/qemu/ applied; runs through its build root's loader and libraries.
here=\$(dirname "\$0")
exec "$broot/lib64/ld-linux-x86-64.so.2" \\
	--library-path "$broot/lib/x86_64-linux-gnu:$broot/usr/lib/x86_64-linux-gnu" \\
	"\$here/qemu-system-x86_64.bin" "\$@"
WRAPPER
chmod 0755 "$tmp/qemu-system-x86_64"
"$tmp/qemu-system-x86_64" --version | head -n 1 >&2
touch "$tmp/.nvme-emu-complete"
mv -T "$tmp" "$out"
tmp=""
echo "$me: done in $(($(date +%s) - t0)) s: $wrapper" >&2
echo "$wrapper"
