# Shared by the guest jobs ns-mgmt-1.sh and ns-mgmt-2.sh (test-ns-mgmt.sh adds it to the job
# share): the controller with serial $SERIAL, and its namespaces by NSID.
SERIAL=nvme-emu-nsm
step "controller bound" wait_for 60 nvme_ns_by_serial "$SERIAL"
c=$(nvme_ctrl_by_serial "$SERIAL")
dev=/dev/$c
# ns_dev NSID: prints the block device of namespace NSID of $c (Linux names disks by instance,
# not NSID: /sys/block/*/nsid says which is which); 1 when there is none.
ns_dev() {
	for _b in /sys/block/"${c}"n*; do
		[ -e "$_b/nsid" ] || continue
		if [ "$(cat "$_b/nsid")" = "$1" ]; then
			echo "/dev/$(basename "$_b")"
			return 0
		fi
	done
	return 1
}
has_ns() { _d=$(ns_dev "$1") && [ -b "$_d" ]; }
no_ns() { ! ns_dev "$1" > /dev/null; }
idf() { nvme id-ctrl "$dev" | sed -n "s/^$1 *: *//p"; }
