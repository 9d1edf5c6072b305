#!/usr/bin/env bash
# The Debian package: `make deb` builds build/nvme-emu_<version>_<arch>.deb; its Depends are the
# packages of exactly the shared libraries the binaries need (each NEEDED library's package, as
# dpkg -S names it, and nothing more); it holds the daemon, nvme-emu-rpc, nvme-emu-perf, their man
# pages, the unit, the configuration directory and defaults, the DOCA plugin, the dashboard; its
# binaries are stripped and hardened (PIE, full RELRO, BIND_NOW, stack protector, fortified
# functions); the unit passes systemd-analyze verify; lintian (pedantic, with info tags) reports
# no error and no warning (other tags are printed).
# Usage: deb.sh. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
D=$(mktemp -d /tmp/nvme-emu-deb-test.XXXXXX)
trap 'rm -rf "$D"' EXIT
. "$TOP/tests/lib/check.sh"
cd "$TOP"

if ! deb=$(make -s deb 2> "$D/make.log" | tail -n 1) || [ ! -f "$deb" ]; then
	fail "make deb: $(tail -n 5 "$D/make.log")"
	finish
fi
version=$(sed -n 's/^#define APP_VERSION "\(.*\)"$/\1/p' app/app_internal.h)
check "make deb: $deb" test "$deb" = "build/nvme-emu_${version}_$(dpkg --print-architecture).deb"
dpkg-deb -x "$deb" "$D/root"
dpkg-deb -e "$deb" "$D/DEBIAN"

# Depends: the packages of the NEEDED libraries, no more, no fewer.
needed=
for b in usr/sbin/nvme-emu usr/sbin/nvme-emu-rpc usr/bin/nvme-emu-perf; do
	for lib in $(readelf -d "$D/root/$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|x32|64/ {print $NF; exit}')
		pkg=$(dpkg -S "$(readlink -f "$path")" 2> /dev/null | head -n 1 | cut -d: -f1)
		[ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2> /dev/null | head -n 1 | cut -d: -f1)
		needed="$needed $pkg"
	done
done
needed=$(tr ' ' '\n' <<< "$needed" | sed '/^$/d' | sort -u | tr '\n' ' ')
depends=$(sed -n 's/^Depends: //p' "$D/DEBIAN/control" | tr ',' '\n' | sed 's/ *(.*//; s/^ *//' |
	sort -u | tr '\n' ' ')
echo "# Depends: $(sed -n 's/^Depends: //p' "$D/DEBIAN/control")"
check "Depends names exactly the packages of the libraries the binaries need ($needed)" \
	test "$needed" = "$depends"

missing=
for f in usr/sbin/nvme-emu usr/sbin/nvme-emu-rpc usr/bin/nvme-emu-perf \
	usr/share/man/man8/nvme-emu.8.gz usr/share/man/man8/nvme-emu-rpc.8.gz \
	usr/share/man/man1/nvme-emu-perf.1.gz lib/systemd/system/nvme-emu@.service \
	etc/default/nvme-emu usr/share/nvme-emu/rpc_nvmf_doca.py \
	usr/share/nvme-emu/nvme-emu-dashboard.json usr/share/doc/nvme-emu/copyright \
	usr/share/doc/nvme-emu/changelog.gz usr/share/doc/nvme-emu/service.md \
	usr/share/doc/nvme-emu/examples/example.json; do
	[ -f "$D/root/$f" ] || missing="$missing $f"
done
check "the package's files${missing:+ (missing:$missing)}" test -z "$missing" -a -d "$D/root/etc/nvme-emu"
check "conffiles: /etc/default/nvme-emu" grep -qx /etc/default/nvme-emu "$D/DEBIAN/conffiles"
check "maintainer scripts: postinst, prerm, postrm" test -x "$D/DEBIAN/postinst" -a -x "$D/DEBIAN/prerm" \
	-a -x "$D/DEBIAN/postrm"

hardened() {
	local b=$1 hdr dyn syms
	hdr=$(readelf -lhW "$b")
	dyn=$(readelf -dW "$b")
	syms=$(readelf --dyn-syms -W "$b")
	grep -q "Type: *DYN" <<< "$hdr" && grep -q GNU_RELRO <<< "$hdr" &&
		grep -qE "BIND_NOW|FLAGS.*NOW" <<< "$dyn" && grep -q __stack_chk_fail <<< "$syms" &&
		grep -q "_chk@" <<< "$syms" && ! readelf -SW "$b" | grep -q "\.debug_info\|\.symtab"
}
for b in usr/sbin/nvme-emu usr/sbin/nvme-emu-rpc usr/bin/nvme-emu-perf; do
	check "$b: stripped, PIE, full RELRO, BIND_NOW, stack protector, fortified" hardened "$D/root/$b"
done
if command -v systemd-analyze > /dev/null; then
	# The package's root with this system's own units beside it (the targets the unit names).
	cp -rn /lib/systemd/system/. "$D/root/lib/systemd/system/" 2> /dev/null
	check "the unit passes systemd-analyze verify" \
		systemd-analyze verify --man=no --root="$D/root" /lib/systemd/system/nvme-emu@.service
fi
if command -v lintian > /dev/null; then
	lintian --pedantic --display-info "$deb" 2>&1 | grep -v "running with root privileges" \
		> "$D/lintian"
	sed 's/^/# lintian: /' "$D/lintian"
	check "lintian (pedantic): no error, no warning" sh -c "! grep -q '^[EW]: ' '$D/lintian'"
else
	fail "lintian is not installed (make deps installs it)"
fi
finish
