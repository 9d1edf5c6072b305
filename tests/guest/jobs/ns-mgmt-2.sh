# Guest job, second boot of test-ns-mgmt.sh (after the daemon restarted on the same pool file): the namespaces created in the first boot are back (nsid 2 attached with its data, nsid 3 allocated and detached), detach-ns makes the block device go, delete-ns (one, then all) gives the capacity back.
. "$GUEST_LIB"

. ./ns-mgmt-lib.sh
cntlid=$(idf cntlid)
step "nsid 2 is back, attached" wait_for 30 has_ns 2
has_marker() { dd if="$2" bs=512 skip="$3" count=1 iflag=direct status=none | grep -q "nvme-emu ns-mgmt marker $1"; }
step "nsid 2 kept its data across the restart" has_marker nsid2 "$(ns_dev 2)" 40000
step "nsid 1 kept its data" has_marker nsid1 "$(ns_dev 1)" 100
step "nsid 3 is allocated (CNS 10h) but not active" sh -c \
	"nvme list-ns $dev --all | grep -q '\]:0x3' && ! nvme list-ns $dev | grep -q '\]:0x3'"
step "UNVMCAP: 95 MiB less 32, 4 and 4" test "$(idf unvmcap)" -eq $(((95 - 40) << 20))
ns4_fmt() { _d=$(ns_dev 4) && [ "$(blockdev --getss "$_d")" -eq 4096 ]; }
ns4_data() {
	dd if="$(ns_dev 4)" bs=4096 skip=1000 count=1 iflag=direct status=none |
		grep -q 'nvme-emu ns-mgmt marker nsid4'
}
step "nsid 4 is back, attached" wait_for 30 has_ns 4
step "nsid 4 kept its format (4096-byte blocks)" ns4_fmt
step "nsid 4 kept its data" ns4_data

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
