# Host-side helpers for the guest tests (sourced by tests/guest/test-*.sh): runs, disk images, the closing count.
#
# A guest test boots one guest through qemu-configs/launch-guest.sh; its
# checks are the job's "ok - " / "not ok - " lines. guest_report turns them and
# the launcher's exit status into the closing "N passed, N failed" line: a
# guest that never reached its job, timed out or exited non-zero without a
# failed step counts as one failure.

GT_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GT_LAUNCH=$GT_TOP/qemu-configs/launch-guest.sh
GT_FIO=$GT_TOP/tests/perf/fio
GT_JOBS=$GT_TOP/tests/guest/jobs
GT_TIMEOUT=${GUEST_TIMEOUT:-240}

# gt_setup NAME: makes a fresh work directory $GT_DIR = build/guest/tests/NAME.
gt_setup() {
	GT_DIR=$GT_TOP/build/guest/tests/$1
	rm -rf "$GT_DIR"
	mkdir -p "$GT_DIR"
}

# gt_disk NAME SIZE: creates a sparse raw image in $GT_DIR, prints its path.
gt_disk() {
	truncate -s "$2" "$GT_DIR/$1.img"
	echo "$GT_DIR/$1.img"
}

# gt_report RC: prints the closing line from $GT_DIR/run/out/output.log and
# the launcher's exit status RC; returns non-zero on any failure.
gt_report() {
	local rc=$1 out=$GT_DIR/run/out/output.log passed=0 failed=0
	if [ -f "$out" ]; then
		passed=$(grep -c '^ok - ' "$out" || true)
		failed=$(grep -c '^not ok - ' "$out" || true)
	fi
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		echo "guest test: launcher exit status $rc (124 = timeout, 125 = the guest never reported)"
		failed=1
	fi
	[ "$passed" -gt 0 ] || [ "$failed" -gt 0 ] || failed=1
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# Checks made on the host side of a guest test, counted beside the guest's.
host_passed=0
host_failed=0
# host_step NAME CMD...: runs CMD, prints "ok - host: NAME" or "not ok - ...".
host_step() {
	local name=$1
	shift
	if "$@"; then
		echo "ok - host: $name"
		host_passed=$((host_passed + 1))
		return 0
	fi
	echo "not ok - host: $name"
	host_failed=$((host_failed + 1))
	return 1
}

# gt_wait_file SECONDS FILE...: polls $GT_DIR/run/out until one of FILE
# exists (prints it) while the launcher $launcher runs; 1 otherwise.
gt_wait_file() {
	local left=$(($1 * 5)) f out=$GT_DIR/run/out
	shift
	while [ "$left" -gt 0 ] && kill -0 "$launcher" 2>/dev/null; do
		for f in "$@"; do
			[ -e "$out/$f" ] && { echo "$f"; return 0; }
		done
		sleep 0.2
		left=$((left - 1))
	done
	for f in "$@"; do
		[ -e "$out/$f" ] && { echo "$f"; return 0; }
	done
	return 1
}
quiet_wait() { gt_wait_file "$@" > /dev/null; }

# gt_stop_daemon PID LOG: SIGTERM to the test's nvme-emu, waits for it, counts its clean exit
# (status 0: also nothing for ASan) as a host check, drops the EXIT trap that would kill it, and
# shows LOG's tail when a host check failed.
gt_stop_daemon() {
	local drc
	kill -TERM "$1" 2> /dev/null
	wait "$1"
	drc=$?
	trap - EXIT
	host_step "nvme-emu exits cleanly" test "$drc" -eq 0
	[ "$host_failed" -eq 0 ] || { echo "--- nvme-emu log tail"; tail -n 30 "$2"; }
}

# gt_wait_sockets PATH...: waits (10 s at most) until every PATH is a socket, as QEMU refuses
# to start before its vfio-user sockets listen; 1 on timeout.
gt_wait_sockets() {
	local _ all s
	for _ in $(seq 100); do
		all=1
		for s in "$@"; do [ -S "$s" ] || all=0; done
		[ "$all" -eq 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# gt_fixed_qemu: the QEMU with the vfio-user-pci finalize fix (patches/qemu/, `make
# qemu-binfix`) when one is cached, exported as NVME_EMU_QEMU for the launcher, and qemu_fixed=1;
# else the stock QEMU and qemu_fixed=0. NVME_EMU_QEMU set but empty: the stock QEMU even when a
# fixed one is cached.
gt_fixed_qemu() {
	if [ -z "${NVME_EMU_QEMU+set}" ]; then
		NVME_EMU_QEMU=$("$GT_TOP/qemu-configs/build-qemu.sh" --print-path 2> /dev/null) ||
			NVME_EMU_QEMU=""
	fi
	if [ -n "$NVME_EMU_QEMU" ]; then
		export NVME_EMU_QEMU # the launcher runs it
		qemu_fixed=1
	else
		qemu_fixed=0
	fi
}

# gt_hotplug_start JOB: nvme-emu serving RPC on $rpc_sock alone (daemon=its pid), and the guest
# booted with JOB, a QMP socket ($qmp_sock) and 3 hot-plug ports (launcher=its pid); both killed
# when the test exits.
gt_hotplug_start() {
	"$GT_TOP/build/bin/nvme-emu" -r "$rpc_sock" > "$GT_DIR/nvme-emu.log" 2>&1 &
	daemon=$!
	"$GT_LAUNCH" --job "$1" --add "$GT_FIO" --qmp "$qmp_sock" \
		--hotplug-ports 3 --run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
	launcher=$!
	trap 'kill $launcher $daemon 2>/dev/null' EXIT
}

# gt_report_with_host RC: gt_report plus the host_step counts in the
# closing line.
gt_report_with_host() {
	local p f
	gt_report "$1" > "$GT_DIR/report"
	head -n -1 "$GT_DIR/report"
	read -r p _ f _ < <(tail -n 1 "$GT_DIR/report")
	echo "$((p + host_passed)) passed, $((f + host_failed)) failed"
	[ $((f + host_failed)) -eq 0 ]
}

# gt_ceph_start: a throwaway Ceph cluster in $GT_DIR/ceph (tests/lib/ceph-cluster.sh), stopped
# when the test exits; exports CEPH_CONF. When no cluster can run here it prints why as a
# skipped check and the closing line, and exits the test (passing).
gt_ceph_start() {
	local rc
	CEPH_CONF=$("$GT_TOP/tests/lib/ceph-cluster.sh" start "$GT_DIR/ceph" 2> "$GT_DIR/ceph.err")
	rc=$?
	if [ "$rc" -eq 77 ]; then
		echo "ok - SKIPPED: $(cat "$GT_DIR/ceph.err")"
		echo "1 passed, 0 failed"
		exit 0
	fi
	if [ "$rc" -ne 0 ]; then
		cat "$GT_DIR/ceph.err"
		echo "0 passed, 1 failed"
		exit 1
	fi
	export CEPH_CONF
}
gt_ceph_stop() {
	"$GT_TOP/tests/lib/ceph-cluster.sh" stop "$GT_DIR/ceph" > /dev/null 2>&1
}
