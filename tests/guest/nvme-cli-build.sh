#!/usr/bin/env bash
# Builds (once) nvme-cli from the source tree the tester gave and prints the path of its nvme binary.
#
# Usage: nvme-cli-build.sh SRC   (progress on stderr, the path on stdout)
#
# The binary links libnvme (in nvme-cli's tree since 3.0, a meson subproject before) and json-c
# statically, so the guest runs it whatever libnvme its Debian has; only libc stays shared (a
# bookworm build runs on the trixie guest). It is cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu/nvme-cli-<hash>, the hash taken over the tree's file
# names, sizes and times and this script: another tree, or an edit, builds again. Needs meson,
# ninja and libjson-c-dev (packaging/deps.list). Nothing of nvme-cli is kept in this project.
set -euo pipefail

src=$(cd "${1:?usage: nvme-cli-build.sh SRC}" && pwd)
[ -f "$src/meson.build" ] || { echo "nvme-cli-build: no meson.build in $src" >&2; exit 1; }
command -v meson > /dev/null || { echo "nvme-cli-build: meson is not installed" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu
key=$( (find "$src" -path "$src/.git" -prune -o -path "$src/.build" -prune -o -type f \
	-printf '%P %s %T@\n' | sort; cat "${BASH_SOURCE[0]}") | sha256sum | cut -c1-16)
out=$cache/nvme-cli-$key
if [ -x "$out/nvme" ]; then
	echo "$out/nvme"
	exit 0
fi
mkdir -p "$cache"
exec 9> "$cache/nvme-cli.lock"
flock 9
if [ -x "$out/nvme" ]; then
	echo "$out/nvme"
	exit 0
fi
tmp=$(mktemp -d "$cache/nvme-cli-$key.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Only the options this tree knows (they changed between releases): off what the e2e suite does
# not use and what would need more shared libraries in the guest.
opts=(-Ddefault_library=static -Dprefer_static=true --buildtype=release)
for o in json-c=enabled openssl=disabled keyutils=disabled libkmod=disabled python=disabled \
	mi=disabled nvmf-autoconnect=disabled top=disabled libdbus=disabled liburing=disabled \
	tests=false docs=false; do
	grep -q "'${o%%=*}'" "$src/meson_options.txt" && opts+=("-D$o")
done
echo "nvme-cli-build: building $src into $out (a few minutes, once)" >&2
meson setup "$tmp/build" "$src" "${opts[@]}" > "$tmp/setup.log" 2>&1 ||
	{ tail -n 20 "$tmp/setup.log" >&2; exit 1; }
ninja -C "$tmp/build" -j "$(nproc)" nvme > "$tmp/build.log" 2>&1 ||
	{ tail -n 20 "$tmp/build.log" >&2; exit 1; }
mkdir -p "$tmp/out"
cp "$tmp/build/nvme" "$tmp/out/nvme"
mv -T "$tmp/out" "$out"
echo "$out/nvme"
