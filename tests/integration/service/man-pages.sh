#!/usr/bin/env bash
# Integration: the man pages and --help of nvme-emu, nvme-emu-rpc and nvme-emu-perf. man(1) renders
# each page without a groff warning; the OPTIONS section of each page and the program's --help list
# the same options (long names with their short letters and arguments); each option --help lists is
# one the program's parser knows; then `make install` honours PREFIX and DESTDIR (every file where
# it belongs, the unit's paths rewritten for the prefix) and `make uninstall` takes them away.
# Usage: man-pages.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-build}
BIN=$TOP/$BUILD/bin
MAN=$TOP/$BUILD/man
D=$(mktemp -d /tmp/nvme-emu-man-test.XXXXXX)
trap 'rm -rf "$D"' EXIT
. "$TOP/tests/lib/check.sh"

# The options a --help text or a rendered OPTIONS section lists, one a line, sorted: "-s, --socket
# PATH" and "--null SIZE" lines (an option line starts with a dash after the indentation).
options_of() {
	grep -E '^ {2,8}-' | sed -E 's/^ +//; s/ {2,}.*$//' | LC_ALL=C sort
}

render() {
	LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings=all -l "$1" 2> "$D/warn" | col -bx
}

for prog in nvme-emu:8 nvme-emu-rpc:8 nvme-emu-perf:1; do
	name=${prog%:*}
	page=$MAN/$name.${prog#*:}
	if [ ! -f "$page" ]; then
		fail "$name: no page $page (make builds it)"
		continue
	fi
	render "$page" > "$D/$name.txt"
	check "$name(${prog#*:}): man renders it, no groff warning" \
		test -s "$D/$name.txt" -a ! -s "$D/warn"
	# The OPTIONS section of the rendered page.
	sed -n '/^OPTIONS$/,/^[A-Z][A-Z ]*$/p' "$D/$name.txt" | sed '1d;$d' | options_of > "$D/$name.man"
	"$BIN/$name" --help 2> /dev/null | options_of > "$D/$name.help"
	if [ -s "$D/$name.man" ] && cmp -s "$D/$name.man" "$D/$name.help"; then
		pass "$name: --help and the man page list the same $(wc -l < "$D/$name.help") options"
	else
		fail "$name: --help and the man page differ: $(diff "$D/$name.help" "$D/$name.man" | head -5 | tr '\n' ' ')"
	fi
	# Every long option --help lists is known to the parser: getopt_long's message for an unknown
	# one never appears. A bogus option after it makes the parse fail whatever the value given
	# ("x") does, so the program exits at once (a value refused for what it is exits too).
	unknown=
	while read -r line; do
		long=$(grep -oE -- '--[a-z0-9-]+' <<< "$line" | head -1)
		arg=$(sed -E 's/^.*--[a-z0-9-]+ ?//' <<< "$line")
		[ -n "$long" ] || continue
		[ "$long" = --help ] || [ "$long" = --version ] && continue
		if [ -n "$arg" ]; then
			out=$(timeout 10 "$BIN/$name" "$long" x --bogus-option-for-test 2>&1 < /dev/null)
		else
			out=$(timeout 10 "$BIN/$name" "$long" --bogus-option-for-test 2>&1 < /dev/null)
		fi
		rc=$?
		if grep -q "unrecognized option '$long'" <<< "$out" || [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
			unknown="$unknown $long"
		fi
	done < "$D/$name.help"
	check "$name: the parser knows every option --help lists${unknown:+ (not:$unknown)}" test -z "$unknown"
done
check "nvme-emu(8) documents the unit, the reload, the watchdog and the test-only fault" \
	grep -q "nvme-emu@NAME" "$D/nvme-emu.txt"
grep -q "WATCHDOG=1" "$D/nvme-emu.txt" && grep -q "NVME_EMU_TEST_FAULTS" "$D/nvme-emu.txt" &&
	grep -q "SIGHUP" "$D/nvme-emu.txt" || fail "nvme-emu(8): a section is missing"

# make install / uninstall with PREFIX and DESTDIR, from the tree under test.
root=$D/root
if make -s -C "$TOP" BUILD="$BUILD" PREFIX=/opt/ne DESTDIR="$root" install > "$D/install.log" 2>&1; then
	missing=
	for f in opt/ne/sbin/nvme-emu opt/ne/sbin/nvme-emu-rpc opt/ne/bin/nvme-emu-perf \
		opt/ne/share/man/man8/nvme-emu.8 opt/ne/share/man/man8/nvme-emu-rpc.8 \
		opt/ne/share/man/man1/nvme-emu-perf.1 opt/ne/lib/systemd/system/nvme-emu@.service \
		opt/ne/etc/default/nvme-emu opt/ne/share/nvme-emu/rpc_nvmf_doca.py \
		opt/ne/share/nvme-emu/nvme-emu-dashboard.json opt/ne/share/doc/nvme-emu/service.md \
		opt/ne/share/doc/nvme-emu/examples/example.json; do
		[ -f "$root/$f" ] || missing="$missing $f"
	done
	check "make install PREFIX=/opt/ne DESTDIR=...: every file in place${missing:+ (missing:$missing)}" \
		test -z "$missing" -a -d "$root/opt/ne/etc/nvme-emu"
	unit=$root/opt/ne/lib/systemd/system/nvme-emu@.service
	check "the installed unit runs the prefix's programs and reads the prefix's configuration" \
		grep -q "^ExecStart=/opt/ne/sbin/nvme-emu --json /opt/ne/etc/nvme-emu/%i.json" "$unit"
	check "nothing was installed outside DESTDIR" test ! -e /opt/ne
	make -s -C "$TOP" BUILD="$BUILD" PREFIX=/opt/ne DESTDIR="$root" uninstall > /dev/null 2>&1
	left=$(cd "$root" && find . -type f | grep -v "etc/default/nvme-emu" | head -3)
	check "make uninstall removes them (the configuration stays)${left:+: left $left}" \
		test -z "$left" -a -f "$root/opt/ne/etc/default/nvme-emu"
else
	fail "make install: $(tail -3 "$D/install.log")"
fi
finish
