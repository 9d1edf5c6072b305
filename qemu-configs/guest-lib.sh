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

# guest_finish: the job's last command.
guest_finish() {
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

# nvme_ns_dev CTRL NSID: prints /dev/<block device> of namespace NSID of controller CTRL
# (nvme0) by its NSID, since Linux names namespaces in the order its parallel scan
# finds them; 1 when there is none.
nvme_ns_dev() {
	for _b in /sys/block/"$1"n*; do
		[ "$(cat "$_b/nsid" 2> /dev/null)" = "$2" ] && { echo "/dev/${_b##*/}"; return 0; }
	done
	return 1
}

# nvme_ns_by_serial SERIAL: prints /dev/<namespace 1 block device> of the
# controller with serial SERIAL once it exists; 1 when there is none.
nvme_ns_by_serial() {
	_c=$(nvme_ctrl_by_serial "$1") || return 1
	for _n in /sys/class/nvme/"$_c"/nvme*n1; do
		[ -e "$_n" ] || continue
		_dev=/dev/$(basename "$_n")
		# The controller's own node may name the namespace of a shared
		# subsystem (nvme0c0n1): the block device is nvmeXn1.
		case $_dev in
		*c*n1) _dev=/dev/$(basename "$_n" | sed 's/c[0-9]*n/n/') ;;
		esac
		[ -b "$_dev" ] && { echo "$_dev"; return 0; }
	done
	return 1
}
