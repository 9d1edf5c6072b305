# tests/lib/check.sh - what the integration scripts share (sourced): "ok - " / "not ok - " lines
# and their count, a check of a command, waiting for a socket, a check of nvme-emu-perf's JSON,
# and the closing "N passed, N failed" line. Needs $BIN (the build's bin directory) for perf_check.

passed=0
failed=0
pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "not ok - $1"; failed=$((failed + 1)); }

# check NAME CMD...: passes when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# wait_sock PATH [TENTHS]: waits (15 s by default) for a unix socket to appear.
wait_sock() {
	for _ in $(seq "${2:-150}"); do [ -S "$1" ] && return 0; sleep 0.1; done
	return 1
}

# perf_check SOCKET NAME PYEXPR ARGS...: nvme-emu-perf -j ARGS against SOCKET succeeds and the
# Python expression PYEXPR holds for its JSON object `r`.
perf_check() {
	local sock=$1 name=$2 expr=$3 out err
	shift 3
	err=$(mktemp)
	if out=$("$BIN/nvme-emu-perf" -s "$sock" -j "$@" 2> "$err") &&
		python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if ($expr) else 1)" "$out"; then
		pass "$name"
	else
		fail "$name: $out $(cat "$err")"
	fi
	rm -f "$err"
}

# finish: the closing line; the script's status.
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
