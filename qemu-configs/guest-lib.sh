# Shell helpers for guest jobs (sourced inside the guest as ". "$GUEST_LIB""): steps, bounded waits, NVMe lookups.
#
# A job reports each check as "ok - NAME" or "not ok - NAME" (the host-side
# tests count these lines) and ends with "guest_finish", which prints
# "N passed, N failed" and returns non-zero when a step failed.

GUEST_PASSED=0
GUEST_FAILED=0

# step NAME CMD...: runs CMD, prints its output, records ok / not ok.
step() {
	_name=$1
	shift
	echo "--- $_name: $*"
	if "$@"; then
		GUEST_PASSED=$((GUEST_PASSED + 1))
		echo "ok - $_name"
		return 0
	fi
	GUEST_FAILED=$((GUEST_FAILED + 1))
	echo "not ok - $_name"
	return 1
}

# guest_finish: the job's last command. It also fails the job if Linux found a completion by
# polling at its I/O timeout ("I/O tag N (ID) QID Q timeout, completion polled"): the device
# posted the CQE and its interrupt never came, a lost interrupt that the driver hides as one
# 30 s I/O (a warning, below the console's log level). Printed only then.
guest_finish() {
	if _polled=$(dmesg 2> /dev/null | grep "timeout, completion polled"); then
		GUEST_FAILED=$((GUEST_FAILED + 1))
		echo "$_polled"
		echo "not ok - every completion came with its interrupt (no 'completion polled')"
	fi
	echo "$GUEST_PASSED passed, $GUEST_FAILED failed"
	[ "$GUEST_FAILED" -eq 0 ] && [ "$GUEST_PASSED" -gt 0 ]
}

# wait_for SECONDS CMD...: polls CMD every 0.2 s until it succeeds; 1 on timeout.
wait_for() {
	_left=$(($1 * 5))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$_left" -gt 0 ] || return 1
		_left=$((_left - 1))
		sleep 0.2
	done
	return 0
}

# nvme_ctrl_by_serial SERIAL: prints the controller name (nvme0...) whose
# serial number is SERIAL; 1 when there is none.
nvme_ctrl_by_serial() {
	for _c in /sys/class/nvme/nvme*; do
		[ -e "$_c/serial" ] || continue
		if [ "$(sed 's/ *$//' "$_c/serial")" = "$1" ]; then
			basename "$_c"
			return 0
		fi
	done
	return 1
}

# nvme_ctrls_by_serial SERIAL: prints the name of every controller (nvme0...) whose serial
# number is SERIAL, one per line (several: paths of one subsystem).
nvme_ctrls_by_serial() {
	for _c in /sys/class/nvme/nvme*; do
		[ "$(sed 's/ *$//' "$_c/serial" 2> /dev/null)" = "$1" ] && basename "$_c"
	done
	return 0
}

# nvme_same_subsys CTRL CTRL: true when Linux put both controllers (nvme0, nvme1) in one NVMe
# subsystem.
nvme_same_subsys() {
	_sa=$(ls -d /sys/class/nvme-subsystem/*/"$1" 2> /dev/null)
	_sb=$(ls -d /sys/class/nvme-subsystem/*/"$2" 2> /dev/null)
	[ -n "$_sa" ] && [ "$(dirname "$_sa")" = "$(dirname "$_sb")" ]
}

# nvme_ns_dev CTRL NSID: prints /dev/<block device> of namespace NSID of controller CTRL
# (nvme0), found by the NSID each namespace node reports, since Linux names namespaces
# in the order its parallel scan finds them (nvme0n1 can be NSID 2); 1 when there is none.
# With multipath, the controller's node is a hidden path named nvme<subsystem>c<controller>n<head>
# and the block device is the head, nvme<subsystem>n<head>. (Variables carry a prefix: this runs
# inside step, whose own are global too.)
nvme_ns_dev() {
	for _nsd_node in /sys/class/nvme/"$1"/nvme*n*; do
		[ "$(cat "$_nsd_node/nsid" 2> /dev/null)" = "$2" ] || continue
		_nsd_name=$(echo "${_nsd_node##*/}" | sed 's/c[0-9]*n/n/')
		[ -b "/dev/$_nsd_name" ] && { echo "/dev/$_nsd_name"; return 0; }
	done
	return 1
}

# nvme_ns_by_serial SERIAL: prints /dev/<block device of NSID 1> of the
# controller with serial SERIAL once it exists; 1 when there is none.
nvme_ns_by_serial() {
	_c=$(nvme_ctrl_by_serial "$1") || return 1
	nvme_ns_dev "$_c" 1
}
