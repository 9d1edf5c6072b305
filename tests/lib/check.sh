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

# ceph_up DIR: a throwaway Ceph cluster in DIR (tests/lib/ceph-cluster.sh; the caller stops it),
# its configuration's path in $conf and CEPH_CONF (exported), a check passed. When no cluster can run on this machine it says why as a
# skipped check and exits the script (passing); when it fails to start, the script fails. Needs
# $TOP.
ceph_up() {
	local rc
	conf=$("$TOP/tests/lib/ceph-cluster.sh" start "$1" 2> "$1.err")
	rc=$?
	if [ "$rc" -eq 77 ]; then
		echo "ok - SKIPPED: $(cat "$1.err")"
		echo "1 passed, 0 failed"
		exit 0
	fi
	check "a single-node Ceph cluster on 127.0.0.1" test "$rc" -eq 0
	[ "$rc" -eq 0 ] || { cat "$1.err"; finish; exit 1; }
	export CEPH_CONF=$conf
}

# program_counts LOG: adds the "N passed, N failed" line a test program wrote into LOG to the
# script's counts (none: one failure).
program_counts() {
	local line f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		failed=$((failed + 1))
		return
	fi
	passed=$((passed + ${line%% passed*}))
	f=${line#*passed, }
	failed=$((failed + ${f%% failed*}))
}

# finish: the closing line; the script's status.
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
