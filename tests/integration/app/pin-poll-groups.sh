#!/usr/bin/env bash
# Integration: poll-group threads ("poll-group<i>") and their CPUs. A count (-m N) pins nothing;
# a cpumask (-m 0xMASK) pins each poll group to its bit's CPU, in bit order; --pin-poll-groups
# pins poll group i to the i-th CPU the process may run on; CPUs outside that set (taskset) and
# more groups than CPUs are refused with a message, in target mode too (nvmf_create_transport).
# Read from /proc/PID/task/*/status.
# Usage: pin-poll-groups.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-pin-test.XXXXXX)
WAIT=$D/s
dpid=
. "$TOP/tests/lib/check.sh"
cleanup() {
	stop_daemon
	rm -rf "$D"
}
trap cleanup EXIT

# The CPUs this shell may run on, one per line ("0-2,5" expanded).
cpus=$(python3 -c 'import os; print("\n".join(str(c) for c in sorted(os.sched_getaffinity(0))))')
ncpu=$(echo "$cpus" | wc -l)
first=$(echo "$cpus" | sed -n 1p)
second=$(echo "$cpus" | sed -n 2p)
own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)

# pg_cpus: "poll-group<i>=<Cpus_allowed_list>" of the daemon's poll-group threads, sorted.
pg_cpus() {
	for t in /proc/"$dpid"/task/*; do
		n=$(cat "$t/comm" 2> /dev/null) || continue
		case $n in poll-group*) ;; *) continue ;; esac
		echo "$n=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")"
	done | sort
}
# expect WANT: the poll-group threads are exactly WANT (space separated).
expect() {
	local got
	got=$(pg_cpus | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$1" ] || { echo "  poll groups: '$got', expected '$1'"; return 1; }
}
# refused MESSAGE ARGS...: nvme-emu ARGS exits non-zero (at once) and says MESSAGE.
refused() {
	local msg=$1
	shift
	timeout 10 "$@" --socket "$D/r.sock" --null 64M > "$D/r.log" 2>&1 && return 1
	grep -q -- "$msg" "$D/r.log" || { echo "  said: $(cat "$D/r.log")"; return 1; }
}

check "-m 2: two named poll groups, not pinned (the process's CPUs, $own)" \
	daemon --socket "$D/s" --null 64M -m 2
check "  poll-group0 and poll-group1 on $own" expect "poll-group0=$own poll-group1=$own"
last=$(echo "$cpus" | tail -1)
mask=$(printf '0x%x' $((1 << last)))
check "-m $mask: one poll group" daemon --socket "$D/s" --null 64M -m "$mask"
check "  pinned to CPU $last" expect "poll-group0=$last"
check "  the log says so" grep -q "poll group 0 pinned to CPU $last" "$D/daemon.log"
check "--pin-poll-groups -m 1: poll group 0 on the first allowed CPU" \
	daemon --socket "$D/s" --null 64M -m 1 --pin-poll-groups
check "  pinned to CPU $first" expect "poll-group0=$first"
stop_daemon
if [ "$ncpu" -ge 2 ]; then
	mask=$(printf '0x%x' $(((1 << first) | (1 << second))))
	check "-m $mask: two poll groups" daemon --socket "$D/s" --null 64M -m "$mask"
	check "  pinned to CPUs $first and $second, in bit order" \
		expect "poll-group0=$first poll-group1=$second"
	check "--pin-poll-groups -m 2" daemon --socket "$D/s" --null 64M -m 2 --pin-poll-groups
	check "  poll group i on the i-th allowed CPU" expect "poll-group0=$first poll-group1=$second"
	stop_daemon
	mask=$(printf '0x%x' $((1 << second)))
	check "taskset -c $first, -m $mask: CPU $second is refused" \
		refused "CPU $second is not one this process may run on ($first)" \
		taskset -c "$first" "$BIN/nvme-emu" -m "$mask"
	check "taskset -c $first, --pin-poll-groups -m 2: more groups than CPUs, refused" \
		refused "cannot pin 2 poll groups to a CPU each: this process may run on 1 CPU(s)" \
		taskset -c "$first" "$BIN/nvme-emu" -m 2 --pin-poll-groups
else
	echo "# one CPU only: the two-CPU cases are skipped"
fi
# Target mode: nvmf_create_transport takes the command line's mask; a num_poll_groups that
# contradicts it is refused, the mask's own count is pinned.
rpc() { "$BIN/nvme-emu-rpc" -s "$D/rpc.sock" "$@"; }
mask=$(printf '0x%x' $((1 << first)))
WAIT=$D/rpc.sock
check "target mode with -m $mask" daemon -r "$D/rpc.sock" -m "$mask"
# rpc_refused MESSAGE ARGS...: the call fails and says MESSAGE.
rpc_refused() {
	local msg=$1 out
	shift
	out=$(rpc "$@" 2>&1) && return 1
	grep -q -- "$msg" <<< "$out" || { echo "  said: $out"; return 1; }
}
check "  nvmf_create_transport num_poll_groups 2 against a one-CPU mask is refused" \
	rpc_refused "num_poll_groups 2 differs from the cpumask $mask (1 CPUs)" \
	nvmf_create_transport --trtype PCIE_EMU --num_poll_groups 2
check "  nvmf_create_transport without a count: created" \
	sh -c "'$BIN/nvme-emu-rpc' -s '$D/rpc.sock' nvmf_create_transport --trtype PCIE_EMU > /dev/null"
check "  poll group 0 pinned to CPU $first" expect "poll-group0=$first"
stop_daemon
check "--pin-poll-groups with more groups than CPUs is refused" \
	refused "cannot pin $((ncpu + 1)) poll groups" "$BIN/nvme-emu" -m $((ncpu + 1)) --pin-poll-groups
check "-m 0x0 and a mask past CPU 63 are refused" sh -c \
	"! '$BIN/nvme-emu' -m 0x0 --socket '$D/x' --null 1M 2> /dev/null && ! '$BIN/nvme-emu' -m 0x10000000000000000 --socket '$D/x' --null 1M 2> /dev/null"
finish
