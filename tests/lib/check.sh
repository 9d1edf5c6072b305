# tests/lib/check.sh - what the integration scripts share (sourced): "ok - " / "not ok - " lines
# and their count, a check of a command, waiting for a socket, starting and stopping the daemon,
# a check of nvme-emu-perf's JSON, and the closing "N passed, N failed" line. Needs $BIN (the
# build's bin directory), and $D and $WAIT for daemon.

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

# daemon ARGS...: (re)starts nvme-emu with ARGS, its output in $D/daemon.log, its pid in $dpid;
# waits for the socket $WAIT. stop_daemon: SIGTERM, returns its exit status (0 when none ran).
daemon() {
	stop_daemon
	"$BIN/nvme-emu" "$@" > "$D/daemon.log" 2>&1 &
	dpid=$!
	wait_sock "$WAIT"
}
stop_daemon() {
	local rc=0
	if [ -n "${dpid:-}" ]; then
		kill "$dpid" 2> /dev/null
		wait "$dpid" 2> /dev/null
		rc=$?
	fi
	dpid=
	return $rc
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
