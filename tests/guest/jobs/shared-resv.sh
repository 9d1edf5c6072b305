# Guest job of test-shared-resv.sh: one controller of each of two daemons sharing an RBD image
# (serial NVMEEMU-SHARED, CNTLID 1 from daemon A, 2 from daemon B). Linux joins them into one
# NVMe subsystem with one shared namespace; each controller's character device addresses the
# namespace through that controller only, so each plays one host with its own Host Identifier,
# and every reservation change one makes reaches the other through the cluster.
. "$GUEST_LIB"

serial=NVMEEMU-SHARED
ctrls() { nvme_ctrls_by_serial "$serial"; }
two_ctrls() { [ "$(ctrls | wc -l)" -eq 2 ]; }
step "both controllers bound" wait_for 60 two_ctrls
step "the shared namespace has a block device" wait_for 30 nvme_ns_by_serial "$serial"
dev=$(nvme_ns_by_serial "$serial")
for c in $(ctrls); do
	case $(cat /sys/class/nvme/"$c"/cntlid) in
	1) A=/dev/$c ;;
	2) B=/dev/$c ;;
	esac
done
echo "namespace $dev, A=$A B=$B"
step "CNTLIDs 1 (daemon A) and 2 (daemon B)" test -n "${A:-}" -a -n "${B:-}"
same_subsys() { nvme_same_subsys "$(basename "$A")" "$(basename "$B")"; }
step "one NVMe subsystem holds both daemons' controllers" same_subsys
step "id-ns through each: the same NGUID (derived from the image), NMIC bit 0" sh -c \
	"[ -n \"\$(nvme id-ns $A -n 1 | sed -n 's/^nguid *: *//p')\" ] &&
	 [ \"\$(nvme id-ns $A -n 1 | sed -n 's/^nguid *: *//p')\" = \"\$(nvme id-ns $B -n 1 | sed -n 's/^nguid *: *//p')\" ] &&
	 nvme id-ns $B -n 1 | grep -q '^nmic *: 0x1'"
step "fio crc32c verify on the shared namespace" sh -c \
	"FIO_DEV=$dev FIO_SIZE=8M fio --output-format=json --output=$JOB_OUT/verify.json fio/verify-crc32c.fio"

printf '\241\241\241\241\000\000\000\000\000\000\000\000\000\000\000\001' > /tmp/hid-a
printf '\262\262\262\262\000\000\000\000\000\000\000\000\000\000\000\002' > /tmp/hid-b
step "host A: set-feature 0x81 on controller 1" nvme set-feature "$A" -f 0x81 -V 1 -l 16 -d /tmp/hid-a
step "host B: set-feature 0x81 on controller 2" nvme set-feature "$B" -f 0x81 -V 1 -l 16 -d /tmp/hid-b
step "A registers key 0xa (daemon A)" nvme resv-register "$A" -n 1 --nrkey=0xa --rrega=0
step "A acquires Write Exclusive" nvme resv-acquire "$A" -n 1 --crkey=0xa --rtype=1 --racqa=0
head -c 4096 /dev/zero | tr '\0' 'a' > /tmp/wa
head -c 4096 /dev/zero | tr '\0' 'b' > /tmp/wb
step "A (the holder) writes" nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
step "B reads through daemon B (Write Exclusive lets others read)" sh -c \
	"nvme read $B -n 1 -s 2048 -c 7 -z 4096 -d /tmp/rb && cmp /tmp/rb /tmp/wa"
step "B's write fails with Reservation Conflict: daemon B knows A's reservation" sh -c \
	"! nvme write $B -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wb 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
step "B registers key 0xb (daemon B)" nvme resv-register "$B" -n 1 --nrkey=0xb --rrega=0
step "resv-report --eds through A: Write Exclusive, two registrants, A holds it" sh -c \
	"nvme resv-report $A -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo &&
	 grep -q '\"rtype\":1,' /tmp/r && grep -q '\"regctl\":2,' /tmp/r &&
	 grep -qi 'a1a1a1a1000000000000000000000001' /tmp/r && grep -qi 'b2b2b2b2000000000000000000000002' /tmp/r"
# A keeps writing blocks 8192-8199 through daemon A until it is refused; B preempts it meanwhile.
( while nvme write "$A" -n 1 -s 8192 -c 7 -z 4096 -d /tmp/wa > /dev/null 2>&1; do :; done ) &
loop=$!
a_writing() { nvme read "$B" -n 1 -s 8192 -c 7 -z 4096 -d /tmp/r8 2> /dev/null && cmp -s /tmp/r8 /tmp/wa; }
step "A's write loop is landing (read back through B)" wait_for 30 a_writing
step "B preempts A and aborts its commands (racqa 2)" \
	nvme resv-acquire "$B" -n 1 --crkey=0xb --prkey=0xa --rtype=1 --racqa=2
step "B writes blocks 8192-8199 at once" nvme write "$B" -n 1 -s 8192 -c 7 -z 4096 -d /tmp/wb
wait "$loop"
step "A's loop was stopped, and none of A's writes landed after B's preempt: B's data stays" sh -c \
	"nvme read $B -n 1 -s 8192 -c 7 -z 4096 -d /tmp/r8 && cmp /tmp/r8 /tmp/wb"
step "A's write fails with Reservation Conflict at once: daemon A took the change" sh -c \
	"! nvme write $A -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
step "now B writes (marker at LBA 4096)" sh -c \
	"printf 'written by host B' | dd of=/tmp/mb bs=4096 conv=sync status=none &&
	 nvme write $B -n 1 -s 4096 -c 7 -z 4096 -d /tmp/mb && nvme flush $B -n 1"
notif_type() {
	nvme get-log "$A" --log-id=0x80 --log-len=64 -b > /tmp/notif 2>/dev/null &&
		[ "$(od -An -tu1 -j8 -N1 /tmp/notif | tr -d ' ')" = 1 ] &&
		[ "$(od -An -tu1 -j12 -N1 /tmp/notif | tr -d ' ')" = 1 ]
}
step "A's reservation notification log (daemon A): Registration Preempted, namespace 1" notif_type
step "resv-report through A: one registrant left (B)" sh -c \
	"nvme resv-report $A -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo && grep -q '\"regctl\":1,' /tmp/r"
step "B releases" nvme resv-release "$B" -n 1 --crkey=0xb --rtype=1 --rrela=0
step "A writes again" nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
step "B replaces its key with 0xb2" nvme resv-register "$B" -n 1 --crkey=0xb --nrkey=0xb2 --rrega=2
guest_finish
