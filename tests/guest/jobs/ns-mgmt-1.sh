# Guest job, first boot of test-ns-mgmt.sh: Namespace Management and Attachment with nvme-cli on a controller with an operator namespace (nsid 1) and a file-backed capacity pool: create-ns, attach-ns and the kernel seeing the namespace, fio verify and a marker on it, a second namespace created and left detached, the error statuses (too big, detach of a detached one, attach twice, delete of the operator's namespace).
. "$GUEST_LIB"

. ./ns-mgmt-lib.sh
oacs=$(idf oacs)
echo "oacs=$oacs"
step "OACS bit 3: Namespace Management" test $((oacs & 8)) -eq 8
tnvmcap=$(idf tnvmcap)
unvmcap0=$(idf unvmcap)
cntlid=$(idf cntlid)
echo "tnvmcap=$tnvmcap unvmcap=$unvmcap0 cntlid=$cntlid"
n1=$(ns_dev 1)
op_bytes=$(blockdev --getsize64 "$n1")
# The pool's namespace area (96 MiB file, first MiB for the layout) is all free.
step "UNVMCAP is the pool's 95 MiB, TNVMCAP adds the operator's namespace" \
	test "$unvmcap0" -eq $((95 << 20)) -a "$tnvmcap" -eq $((unvmcap0 + op_bytes))
echo "$unvmcap0" > "$JOB_OUT/unvmcap0"

# 32 MiB of 512-byte blocks: LBA format 0.
out=$(nvme create-ns "$dev" --nsze=65536 --ncap=65536 --flbas=0 --dps=0 --nmic=0 2>&1)
echo "$out"
step "create-ns succeeds and returns nsid 2" sh -c "echo '$out' | grep -q 'created nsid:2'"
step "UNVMCAP dropped by 32 MiB" test "$(idf unvmcap)" -eq $((unvmcap0 - (32 << 20)))
step "allocated list (CNS 10h) holds 1 and 2" sh -c \
	"nvme list-ns $dev --all | grep -q '\]:0x2' && nvme list-ns $dev --all | grep -q '\]:0x1'"
step "active list (CNS 02h) has no 2 yet" sh -c "! nvme list-ns $dev | grep -q '\]:0x2'"
step "Identify allocated NS (CNS 11h) of nsid 2: nsze 65536" sh -c \
	"nvme id-ns $dev -n 2 --force | grep -q '^nsze *: 0x10000'"
step "no block device for nsid 2 before attach" no_ns 2

out=$(nvme attach-ns "$dev" --namespace-id=2 --controllers="$cntlid" 2>&1)
echo "$out"
step "attach-ns succeeds" sh -c "echo '$out' | grep -qi success"
step "kernel sees a block device for nsid 2" wait_for 30 has_ns 2
n2=$(ns_dev 2)
step "$n2 (nsid 2) is 32 MiB" test "$(blockdev --getsize64 "$n2")" -eq $((32 << 20))
step "controller list of nsid 2 (CNS 12h) names this controller" sh -c \
	"nvme list-ctrl $dev --namespace-id=2 | grep -q '\]:$(printf 0x%x "$cntlid")'"
step "attaching it again: NS_ALREADY_ATTACHED" sh -c \
	"nvme attach-ns $dev -n 2 -c $cntlid 2>&1 | grep -qi 'already.*attached'"
step "attach with an unknown controller id: CONTROLLER_LIST_INVALID" sh -c \
	"nvme attach-ns $dev -n 2 -c $((cntlid + 7)) 2>&1 | grep -qi 'list.*invalid'"

fio_verify() {
	FIO_DEV=$1 FIO_SIZE=16M fio --output-format=json --output="$JOB_OUT/verify.json" \
		fio/verify-crc32c.fio
}
step "fio crc32c verify on the created namespace" fio_verify "$n2"
mark() { printf 'nvme-emu ns-mgmt marker %s\n' "$1" | dd of="$2" bs=512 seek="$3" conv=sync,fsync oflag=direct status=none; }
step "marker at block 40000 of nsid 2" mark nsid2 "$n2" 40000
step "marker at block 100 of nsid 1" mark nsid1 "$n1" 100

# A second one, left detached: it must come back so after a restart.
out=$(nvme create-ns "$dev" -s 8192 -c 8192 -f 0 2>&1)
echo "$out"
step "create-ns of a 4 MiB namespace returns nsid 3" sh -c "echo '$out' | grep -q 'created nsid:3'"
step "detach of the detached nsid 3: NS_NOT_ATTACHED" sh -c \
	"nvme detach-ns $dev -n 3 -c $cntlid 2>&1 | grep -qi 'not.*attached'"
step "create-ns bigger than what is left: NS_INSUFFICIENT_CAPACITY" sh -c \
	"nvme create-ns $dev -s $((200 << 11)) -c $((200 << 11)) -f 0 2>&1 | grep -qi 'insufficient'"
step "create-ns with NCAP < NSZE: THIN_PROVISIONING_NOT_SUPPORTED" sh -c \
	"nvme create-ns $dev -s 4096 -c 2048 -f 0 2>&1 | grep -qi 'thin'"
step "create-ns with protection information on a format without metadata: INVALID_FORMAT" sh -c \
	"nvme create-ns $dev -s 4096 -c 4096 -f 0 -d 1 2>&1 | grep -qi 'invalid.*format'"
# A namespace in LBA format 6 (4096-byte blocks), 4 MiB: its format must survive the restart.
out=$(nvme create-ns "$dev" -s 1024 -c 1024 -f 6 2>&1)
echo "$out"
step "create-ns of 1024 blocks of 4 KiB (flbas 6) returns nsid 4" sh -c "echo '$out' | grep -q 'created nsid:4'"
step "attach-ns 4" sh -c "nvme attach-ns $dev -n 4 -c $cntlid 2>&1 | grep -qi success"
step "kernel sees a block device for nsid 4" wait_for 30 has_ns 4
n4=$(ns_dev 4)
step "$n4 has 4096-byte logical blocks and 4 MiB" sh -c \
	"[ \$(blockdev --getss $n4) -eq 4096 ] && [ \$(blockdev --getsize64 $n4) -eq $((4 << 20)) ]"
mark4() { printf 'nvme-emu ns-mgmt marker %s\n' "$1" | dd of="$2" bs=4096 seek="$3" conv=sync,fsync oflag=direct status=none; }
step "marker at block 1000 of nsid 4" mark4 nsid4 "$n4" 1000
step "delete-ns of the operator's nsid 1 is refused" sh -c \
	"! nvme delete-ns $dev -n 1 > /dev/null 2>&1"
step "nsid 1 still there" has_ns 1
guest_finish
