#!/usr/bin/env bash
# Integration: the front page and the manual in docs/ say what the build does. Every option that
# nvme-emu --help prints is in the options table of docs/user-guide.md (and every option that
# table names is one nvme-emu has); nvme-emu-perf's usage is in docs/performance.md and
# nvme-emu-rpc's in docs/rpc.md, word for word; every method a running daemon's rpc_get_methods
# returns, aliases included, is a row of docs/rpc.md's methods table (and every method the table
# names is one the daemon has); README.md has at most 250 lines; every relative link of README.md
# and docs/*.md reaches its file and heading; every path into the tree that README.md or
# docs/*.md other than DESIGN.md names exists. The Markdown is read by docs_check.py.
# Usage: docs-check.sh BUILD_DIR (build or build-asan). Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-docs-check.XXXXXX)
SOCK=$D/rpc.sock
WAIT=$SOCK
dpid=
. "$TOP/tests/lib/check.sh"
cleanup() {
	stop_daemon
	rm -rf "$D"
}
trap cleanup EXIT

CHECKER=$TOP/tests/integration/docs/docs_check.py
DOCS=$TOP/docs

# report MODE ARGS...: runs docs_check.py MODE ARGS; each "ok - " / "not ok - " line it prints
# counts here. The checker failing to run at all is a failure too.
report() {
	local line rc
	python3 "$CHECKER" "$@" > "$D/report" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "${line#ok - }" ;;
		"not ok - "*) fail "${line#not ok - }" ;;
		*) echo "$line" ;;
		esac
	done < "$D/report"
	[ $rc -eq 0 ] || fail "docs_check.py $1 exited with $rc"
}

# ---- options ----
check "nvme-emu --help" sh -c "'$BIN/nvme-emu' --help > '$D/nvme-emu.help'"
report options "$D/nvme-emu.help" "$DOCS/user-guide.md" Options
check "nvme-emu-perf --help" sh -c "'$BIN/nvme-emu-perf' --help > '$D/nvme-emu-perf.help'"
report mentions "$D/nvme-emu-perf.help" "$DOCS/performance.md"
report verbatim "$D/nvme-emu-perf.help" "$DOCS/performance.md"

# ---- methods, from a running daemon ----
check "daemon starts with -r" daemon -r "$SOCK"
methods=
for _ in $(seq 100); do
	methods=$("$BIN/nvme-emu-rpc" -s "$SOCK" -t 10 rpc_get_methods --include_aliases 2> /dev/null) &&
		break
	kill -0 "$dpid" 2> /dev/null || break
	sleep 0.1
done
if python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$methods" \
	> "$D/methods" 2> /dev/null && [ -s "$D/methods" ]; then
	pass "rpc_get_methods --include_aliases returns $(wc -l < "$D/methods") methods"
else
	fail "rpc_get_methods --include_aliases: $methods $(tail -n 5 "$D/daemon.log")"
fi
check "... the nvmf_doca_* aliases among them" grep -q '^nvmf_doca_create_function$' "$D/methods"
report methods "$D/methods" "$DOCS/rpc.md" Methods
# Its usage, without the server's methods that follow it.
check "nvme-emu-rpc --help" sh -c "'$BIN/nvme-emu-rpc' -s '$SOCK' --help > '$D/rpc.out' 2>&1"
sed '/^methods of the server:/,$d' "$D/rpc.out" > "$D/nvme-emu-rpc.help"
check "... lists the server's methods" grep -q '^  nvmf_get_stats$' "$D/rpc.out"
report mentions "$D/nvme-emu-rpc.help" "$DOCS/rpc.md"
report verbatim "$D/nvme-emu-rpc.help" "$DOCS/rpc.md"
check "daemon exits cleanly" stop_daemon

# ---- the pages themselves ----
pages=("$TOP/README.md" "$DOCS"/*.md)
own=()
for p in "${pages[@]}"; do [ "$(basename "$p")" = DESIGN.md ] || own+=("$p"); done
report length "$TOP/README.md" 250
report links "$TOP" "${pages[@]}"
report paths "$TOP" "${own[@]}"

finish
