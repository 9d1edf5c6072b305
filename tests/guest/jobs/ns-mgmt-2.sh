# Guest job, second boot of test-ns-mgmt.sh (after the daemon restarted on the same pool file): the namespaces created in the first boot are back (nsid 2 attached with its data, nsid 3 allocated and detached), detach-ns makes the block device go, delete-ns (one, then all) gives the capacity back.
. "$GUEST_LIB"

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
cntlid=$(idf cntlid)
step "nsid 2 is back, attached" wait_for 30 has_ns 2
has_marker() { dd if="$2" bs=512 skip="$3" count=1 iflag=direct status=none | grep -q "nvme-emu ns-mgmt marker $1"; }
step "nsid 2 kept its data across the restart" has_marker nsid2 "$(ns_dev 2)" 40000
step "nsid 1 kept its data" has_marker nsid1 "$(ns_dev 1)" 100
step "nsid 3 is allocated (CNS 10h) but not active" sh -c \
	"nvme list-ns $dev --all | grep -q '\]:0x3' && ! nvme list-ns $dev | grep -q '\]:0x3'"
step "UNVMCAP: 95 MiB less 32 and 4" test "$(idf unvmcap)" -eq $(((95 - 36) << 20))

out=$(nvme detach-ns "$dev" --namespace-id=2 --controllers="$cntlid" 2>&1)
echo "$out"
step "detach-ns succeeds" sh -c "echo '$out' | grep -qi success"
step "nsid 2's block device disappears" wait_for 30 no_ns 2
step "controller list of nsid 2 (CNS 12h) is empty" sh -c \
	"nvme list-ctrl $dev --namespace-id=2 | grep -q '^num of ctrls present: 0'"
out=$(nvme delete-ns "$dev" --namespace-id=2 2>&1)
echo "$out"
step "delete-ns 2 succeeds" sh -c "echo '$out' | grep -qi success"
step "nsid 2 no longer allocated" sh -c "! nvme list-ns $dev --all | grep -q '\]:0x2'"
# Attach 3 then delete everything (NSID FFFFFFFFh): an attached namespace is detached first.
step "attach-ns 3" sh -c "nvme attach-ns $dev -n 3 -c $cntlid 2>&1 | grep -qi success"
step "kernel sees a block device for nsid 3" wait_for 30 has_ns 3
out=$(nvme delete-ns "$dev" --namespace-id=0xffffffff 2>&1)
echo "$out"
step "delete-ns of all namespaces succeeds" sh -c "echo '$out' | grep -qi success"
step "nsid 3's block device disappears" wait_for 30 no_ns 3
step "UNVMCAP back to the whole pool" test "$(idf unvmcap)" -eq $((95 << 20))
step "the operator's nsid 1 stays" has_ns 1
guest_finish
