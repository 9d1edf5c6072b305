#!/usr/bin/env bash
# Builds the Debian package build/nvme-emu_<version>_<arch>.deb (make deb): a hardened build of
# its own in build-deb/ (dpkg-buildflags, hardening=+all), `make install` into a staging root
# (PREFIX=/usr, units in /lib/systemd/system as bookworm's systemd reads them), binaries stripped,
# man pages and changelog compressed, Depends from dpkg-shlibdeps, md5sums, conffiles, maintainer
# scripts, then dpkg-deb. Prints the package's path last.
#
# Usage: packaging/mkdeb.sh VERSION
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: mkdeb.sh VERSION}
for t in dpkg-buildflags dpkg-shlibdeps dpkg-deb dpkg-architecture strip gzip md5sum; do
	command -v "$t" >/dev/null || { echo "mkdeb: $t not found (make deps installs packaging/deps.list)" >&2; exit 1; }
done
arch=$(dpkg --print-architecture)
maintainer=${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || echo 'nvme-emu maintainers <nvme-emu@localhost>')}
# Reproducible: the last commit's time, unless the caller set one.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
deb=build/nvme-emu_${version}_${arch}.deb

# The hardened build: the flags come in from the environment, where the Makefile's += appends its
# own (warnings, -std) to them.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS=$(dpkg-buildflags --get CFLAGS)
CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS)
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
export CFLAGS CPPFLAGS LDFLAGS
make --no-print-directory -j2 BUILD=build-deb build-deb/bin/nvme-emu build-deb/bin/nvme-emu-rpc \
	build-deb/bin/nvme-emu-perf build-deb/bin/mangen >&2
unset CFLAGS CPPFLAGS LDFLAGS

stage=build/deb/root
rm -rf build/deb
mkdir -p "$stage/DEBIAN"
umask 022
make --no-print-directory BUILD=build-deb DESTDIR="$PWD/$stage" PREFIX=/usr SYSCONFDIR=/etc \
	SYSTEMDUNITDIR=/lib/systemd/system install >&2

# Debian policy 10.1 and 12: stripped binaries, compressed man pages and changelog, the copyright.
for b in "$stage/usr/sbin/nvme-emu" "$stage/usr/sbin/nvme-emu-rpc" "$stage/usr/bin/nvme-emu-perf"; do
	strip --remove-section=.comment --remove-section=.note --strip-unneeded "$b"
done
gzip -9n "$stage"/usr/share/man/man*/*
doc=$stage/usr/share/doc/nvme-emu
sed -e "s|@MAINTAINER@|$maintainer|g" packaging/debian/copyright > "$doc/copyright"
sed -e "s|@VERSION@|$version|g" -e "s|@MAINTAINER@|$maintainer|g" \
	-e "s|@DATE@|$(date -R -u -d "@$SOURCE_DATE_EPOCH")|g" packaging/debian/changelog > "$doc/changelog"
gzip -9n "$doc/changelog"

# Depends: the shared libraries the binaries link, as dpkg-shlibdeps names their packages.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debian"
printf 'Source: nvme-emu\n\nPackage: nvme-emu\nArchitecture: any\n' > "$tmp/debian/control"
abs=$PWD/$stage
depends=$(cd "$tmp" && dpkg-shlibdeps -O -e"$abs/usr/sbin/nvme-emu" -e"$abs/usr/sbin/nvme-emu-rpc" \
	-e"$abs/usr/bin/nvme-emu-perf" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" -e "s|@MAINTAINER@|$maintainer|g" \
	-e "s|@SIZE@|$size|g" -e "s|@DEPENDS@|$depends|g" packaging/debian/control.in \
	> "$stage/DEBIAN/control"
echo /etc/default/nvme-emu > "$stage/DEBIAN/conffiles"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm \
	"$stage/DEBIAN/"
(cd "$stage" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\n' | LC_ALL=C sort |
	xargs md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
# Files dated to SOURCE_DATE_EPOCH, owned by root: the same tree gives the same package.
find "$stage" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch --no-dereference --date="@$SOURCE_DATE_EPOCH"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "Depends: $depends" >&2
echo "$deb"
