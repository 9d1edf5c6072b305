# Guest job of test-secondary.sh: a primary controller (serial NVMEEMU-SEC, CNTLID 1, hot-plugged by
# its add_listener) with two secondary controllers (CNTLIDs 2 and 3). nvme-cli reads its
# capabilities and secondary list, assigns VQ and VI resources to secondary 2 and brings it
# online (nvme virt-mgmt): nvme-emu hot-plugs it as a function of its own, the driver binds it
# into the primary's NVMe subsystem with the queues and vectors assigned, and fio verifies the
# namespace through both paths; then it goes offline and the device leaves the guest.
#
# The host and the guest meet through files in $JOB_OUT: the guest writes "ready", then "online"
# once secondary 2 was used (or "gone-wrong"); the host checks its side and writes "looked"; the
# guest takes it offline and writes "offline". With the stock QEMU 11.1.3 an unplug of a
# vfio-user-pci device aborts QEMU (tests/guest/test-rpc-hotplug.sh): the host then writes
# "stock-qemu" before "looked" and the guest leaves secondary 2 online.
. "$GUEST_LIB"

serial=NVMEEMU-SEC
touch "$JOB_OUT/ready"
# ctrl_by_cntlid ID: the controller (nvme0...) of the subsystem with that CNTLID.
ctrl_by_cntlid() {
	for c in $(nvme_ctrls_by_serial "$serial"); do
		[ "$(cat /sys/class/nvme/"$c"/cntlid)" = "$1" ] && { echo "$c"; return 0; }
	done
	return 1
}
fail_out() {
	touch "$JOB_OUT/gone-wrong"
	guest_finish
	exit 1
}
step "the primary controller (CNTLID 1) is hot-plugged" wait_for 90 ctrl_by_cntlid 1 || fail_out
P=/dev/$(ctrl_by_cntlid 1)
step "the namespace has a block device" wait_for 30 nvme_ns_by_serial "$serial" || fail_out
dev=$(nvme_ns_by_serial "$serial")
echo "primary $P, namespace $dev"

# The primary: 8 I/O queue pairs (9 VQ resources with the admin queue), 9 vectors; 6 VQ and 4 VI
# flexible, at most 3 and 2 per secondary.
# oacs_vm CTRL: OACS bit 7 (Virtualization Management) in its Identify Controller.
oacs_vm() {
	v=$(nvme id-ctrl "$1" | sed -n 's/^oacs *: *//p')
	echo "oacs $v"
	[ -n "$v" ] && [ $((v & 0x80)) -ne 0 ]
}
step "id-ctrl: OACS bit 7 (Virtualization Management)" oacs_vm "$P"
caps() {
	nvme primary-ctrl-caps "$P" > /tmp/caps || return 1
	cat /tmp/caps
	for kv in "cntlid:0x1" "crt:0x3" "vqfrt:6" "vqrfa:$1" "vqrfap:0" "vqprt:3" "vqfrsm:3" \
		"vqgran:1" "vifrt:4" "virfa:$2" "virfap:0" "viprt:5" "vifrsm:2" "vigran:1"; do
		tr -d ' ' < /tmp/caps | grep -qx "$kv" || { echo "no $kv"; return 1; }
	done
}
step "primary-ctrl-caps: the flexible and private resources" caps 0 0
# sec_entry SCID SCS NVQ NVI: secondary SCID's entry of list-secondary is that (primary 1, VFN 0:
# a function of its own). nvme-cli prints zero as 0000 and the others as 0x..: read as numbers.
sec_entry() {
	nvme list-secondary "$P" > /tmp/ls || return 1
	grep -q 'Number of Identifiers *: 2' /tmp/ls || return 1
	awk -F': ' '/^ *(SCID|PCID|SCS|VFN|NVQ|NVI) /{ split($NF, a, " "); print a[1] }' \
		/tmp/ls > /tmp/vals
	while read -r scid && read -r pcid && read -r scs && read -r vfn && read -r nvq &&
		read -r nvi; do
		[ $((scid)) -eq "$1" ] || continue
		echo "SCID $scid PCID $pcid SCS $scs VFN $vfn NVQ $nvq NVI $nvi"
		[ $((pcid)) -eq 1 ] && [ $((scs)) -eq "$2" ] && [ $((vfn)) -eq 0 ] &&
			[ $((nvq)) -eq "$3" ] && [ $((nvi)) -eq "$4" ]
		return
	done < /tmp/vals
	return 1
}
both_offline() { sec_entry 2 0 0 0 && sec_entry 3 0 0 0; }
step "list-secondary: CNTLIDs 2 and 3, offline, no resources" both_offline

# What the primary refuses.
step "virt-mgmt: online without resources is refused" sh -c "! nvme virt-mgmt $P -c 2 -a 9"
step "virt-mgmt: a CNTLID that is not a secondary is refused" sh -c \
	"! nvme virt-mgmt $P -c 9 -r 0 -a 8 -n 2"
step "virt-mgmt: more VQ than one secondary may have is refused" sh -c \
	"! nvme virt-mgmt $P -c 2 -r 0 -a 8 -n 4"

# Secondary 2: 2 VQ (its admin queue and 1 I/O queue pair, though the guest has 2 vCPUs) and 1
# VI, online.
step "virt-mgmt: assign 2 VQ to secondary 2" nvme virt-mgmt "$P" -c 2 -r 0 -a 8 -n 2
step "virt-mgmt: assign 1 VI to secondary 2" nvme virt-mgmt "$P" -c 2 -r 1 -a 8 -n 1
step "virt-mgmt: secondary 2 online" nvme virt-mgmt "$P" -c 2 -a 9 || fail_out
step "secondary 2 appears (hot-plugged)" wait_for 90 ctrl_by_cntlid 2 || fail_out
S=/dev/$(ctrl_by_cntlid 2)
echo "secondary $S"
online_listed() { sec_entry 2 1 2 1 && sec_entry 3 0 0 0; }
step "list-secondary: secondary 2 online with 2 VQ and 1 VI" online_listed
step "primary-ctrl-caps: 2 VQ and 1 VI assigned" caps 2 1
same() { nvme_same_subsys "$(basename "$P")" "$(basename "$S")"; }
step "one NVMe subsystem holds the primary and the secondary" same
no_vm() { ! oacs_vm "$S"; }
step "id-ctrl of the secondary: CNTLID 2" sh -c "nvme id-ctrl $S | grep -q '^cntlid *: 0x2'"
step "id-ctrl of the secondary: no Virtualization Management" no_vm
step "primary-ctrl-caps of the secondary: its own 2 VQ and 1 VI" sh -c \
	"nvme primary-ctrl-caps $S | tr -d ' ' > /tmp/sc; cat /tmp/sc;
	 grep -qx 'vqprt:2' /tmp/sc && grep -qx 'viprt:1' /tmp/sc && grep -qx 'cntlid:0x2' /tmp/sc"
step "Number of Queues on the secondary: 1 I/O queue pair" sh -c \
	"nvme get-feature $S -f 7 | tee /tmp/nq; grep -Eqi 'value: *(0x)?0+\$' /tmp/nq"
msix() { [ "$(ls /sys/class/nvme/"$(basename "$S")"/device/msi_irqs | wc -l)" -eq 1 ]; }
step "the secondary's function has 1 MSI-X vector" msix
step "the driver made 1 I/O queue on it" sh -c \
	"dmesg | grep -E '$(basename "$S"): 1/0/0 default/read/poll queues'"
# The namespace through the secondary: its character device reaches it through that controller
# only; written there, read through the primary.
head -c 8192 /dev/urandom > /tmp/w
step "nvme write through the secondary" nvme write "$S" -n 1 -s 4096 -c 15 -z 8192 -d /tmp/w
step "read back through the primary" sh -c \
	"nvme read $P -n 1 -s 4096 -c 15 -z 8192 -d /tmp/r && cmp /tmp/r /tmp/w"
subsys=$(basename "$(dirname "$(ls -d /sys/class/nvme-subsystem/*/"$(basename "$P")")")")
step "multipath: round-robin over both controllers" sh -c \
	"echo round-robin > /sys/class/nvme-subsystem/$subsys/iopolicy"
step "fio crc32c verify on the namespace (both paths)" env FIO_DEV="$dev" FIO_SIZE=8M \
	fio --output-format=json --output="$JOB_OUT/verify.json" fio/verify-crc32c.fio
[ "$GUEST_FAILED" -eq 0 ] || fail_out
touch "$JOB_OUT/online"

looked() { [ -e "$JOB_OUT/looked" ]; }
step "the host checked its side" wait_for 120 looked
if [ -e "$JOB_OUT/stock-qemu" ]; then
	echo "stock QEMU: its vfio-user-pci unplug aborts; secondary 2 stays online"
	guest_finish
	exit
fi
# Offline: nvme-emu unplugs the function (the command completes once the guest released it).
step "virt-mgmt: secondary 2 offline" nvme virt-mgmt "$P" -c 2 -a 7
absent() { ! ctrl_by_cntlid 2; }
step "secondary 2 left the guest" wait_for 60 absent
step "list-secondary: offline, its resources back in the pool" both_offline
step "primary-ctrl-caps: nothing assigned" caps 0 0
step "the namespace answers through the primary" \
	dd if="$dev" of=/dev/null bs=4096 count=16 iflag=direct
touch "$JOB_OUT/offline"
guest_finish
