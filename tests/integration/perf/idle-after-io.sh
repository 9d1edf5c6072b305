#!/usr/bin/env bash
# Integration: a daemon whose I/O has ended sleeps. For each storage backend a completion can
# signal from the kernel (libaio, io_uring) or from a thread of the daemon's own (the placement
# bdev's owner over aio), and for the null bdev as the reference: nvme-emu-perf writes for a
# second, detaches, and then over IDLE_S seconds every thread of the daemon must use under a
# tenth of a core (its CPU time from /proc, a counter: a thread that sleeps takes none of it, one
# that spins takes its share of a CPU however busy the machine is).
# Usage: idle-after-io.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
IDLE_S=${IDLE_S:-2}
D=$(mktemp -d /tmp/nvme-emu-idle-test.XXXXXX)
WAIT=$D/r.sock
trap 'stop_daemon; rm -rf "$D"' EXIT
# shellcheck source=../../lib/check.sh
. "$TOP/tests/lib/check.sh"

start() {
	stop_daemon
	rm -f "$D/s" "$D/r.sock"
	daemon --socket "$D/s" -r "$D/r.sock" "$@" && wait_sock "$D/s"
}

# thread_ticks: "<tid> <name> <utime+stime ticks>" for each thread of the daemon.
thread_ticks() {
	local t
	for t in /proc/"$dpid"/task/*; do
		# The name is in parentheses and may hold spaces: count fields after it.
		sed -E 's/^([0-9]+) \((.*)\) (.*)$/\1 \2 \3/' "$t/stat" 2> /dev/null |
			awk '{ n = NF; print $1, $2, $(n - 52 + 14) + $(n - 52 + 15) }'
	done
}

# idle_threads LABEL: after I/O, every thread takes under a tenth of a core while nothing comes.
idle_threads() {
	local hz busy
	hz=$(getconf CLK_TCK)
	sleep 0.5 # the client's detach and the controller reset settle
	thread_ticks > "$D/t0"
	sleep "$IDLE_S"
	thread_ticks > "$D/t1"
	busy=$(awk -v lim="$(echo "$hz * $IDLE_S / 10" | bc)" '
		NR == FNR { t0[$1] = $3; next }
		($1 in t0) && $3 - t0[$1] >= lim { printf "%s(%d ticks) ", $2, $3 - t0[$1] }' \
		"$D/t0" "$D/t1")
	[ -z "$busy" ] && return 0
	echo "  busy while idle: $busy(limit: a tenth of ${IDLE_S} s at $hz ticks/s)"
	return 1
}

truncate -s 64M "$D/base"
for backend in "null:--null 64M" "aio:--aio $D/base" "uring:--uring $D/base" \
	"placement over aio:--aio $D/base --fdp 2:4M"; do
	label=${backend%%:*}
	# shellcheck disable=SC2086 # the flags are words
	if ! check "$label: daemon starts" start ${backend#*:}; then
		cat "$D/daemon.log"
		continue
	fi
	perf_check "$D/s" "$label: 4 KiB random writes for a second" 'r["ios"] > 0 and r["errors"] == 0' \
		-w randwrite -q 8 -t 1
	check "$label: every thread sleeps once the I/O ended" idle_threads
	perf_check "$D/s" "$label: still serves verified writes after the idle period" \
		'r["ios"] > 0 and r["verify_errors"] == 0' -w write -V -q 4
done
finish
