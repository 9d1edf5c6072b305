# Shared by the guest jobs of test-shared-resv-netns.sh (shared-netns-a.sh, shared-netns-b.sh):
# waiting for the host's relayed markers, and Reservation Report checks.

# host_says SECONDS FILE: waits until the host put FILE in the job's output directory.
host_says() { wait_for "$1" test -e "$JOB_OUT/$2"; }

# report_has DEV PATTERN...: resv-report --eds through DEV (JSON, spaces dropped) matches every
# PATTERN.
report_has() {
	_rh_dev=$1
	shift
	nvme resv-report "$_rh_dev" -n 1 --eds -o json | tr -d ' \n' > /tmp/r || return 1
	cat /tmp/r; echo
	for _rh_p in "$@"; do grep -q "$_rh_p" /tmp/r || return 1; done
}
