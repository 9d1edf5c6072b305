# Guest job of test-two-hosts.sh: two controllers of one subsystem (serial NVMEEMU-TWO). Linux
# joins them into one NVMe subsystem with one shared namespace; each controller's character
# device (/dev/nvmeX) addresses the namespace through that controller only, so each plays one
# host with its own Host Identifier.
. "$GUEST_LIB"

serial=NVMEEMU-TWO
ctrls() { nvme_ctrls_by_serial "$serial"; }
two_ctrls() { [ "$(ctrls | wc -l)" -eq 2 ]; }
step "both controllers bound" wait_for 30 two_ctrls
step "the shared namespace has a block device" wait_for 30 nvme_ns_by_serial "$serial"
dev=$(nvme_ns_by_serial "$serial")
# Controller A is CNTLID 1, B is CNTLID 2, whatever the kernel named them.
for c in $(ctrls); do
	case $(cat /sys/class/nvme/"$c"/cntlid) in
	1) A=/dev/$c ;;
	2) B=/dev/$c ;;
	esac
done
echo "namespace $dev, A=$A B=$B"
step "CNTLIDs 1 and 2" test -n "${A:-}" -a -n "${B:-}"
same_subsys() { nvme_same_subsys "$(basename "$A")" "$(basename "$B")"; }
step "one NVMe subsystem holds both controllers" same_subsys
step "the subsystem NQN" grep -q 'nqn.2026-11.io.nvme-emu:two-hosts' /sys/class/nvme/"$(basename "$A")"/subsysnqn
step "id-ctrl: CMIC bit 1 (two or more controllers)" sh -c \
	"nvme id-ctrl $A | grep -q '^cmic *: 0x2'"
step "id-ns: NMIC bit 0 (shared namespace)" sh -c "nvme id-ns $dev -n 1 | grep -q '^nmic *: 0x1'"
step "list-ctrl: controllers 1 and 2 of the subsystem" sh -c \
	"nvme list-ctrl $B | tee /tmp/lc; grep -q '0x1' /tmp/lc && grep -q '0x2' /tmp/lc"
step "fio crc32c verify on the shared namespace" sh -c \
	"FIO_DEV=$dev FIO_SIZE=8M fio --output-format=json --output=$JOB_OUT/verify.json fio/verify-crc32c.fio"

# Two hosts: 128-bit identifiers (octal escapes: the guest shell's printf has no \x).
printf '\241\241\241\241\000\000\000\000\000\000\000\000\000\000\000\001' > /tmp/hid-a
printf '\262\262\262\262\000\000\000\000\000\000\000\000\000\000\000\002' > /tmp/hid-b
step "host A: set-feature 0x81 on controller 1" nvme set-feature "$A" -f 0x81 -V 1 -l 16 -d /tmp/hid-a
step "host B: set-feature 0x81 on controller 2" nvme set-feature "$B" -f 0x81 -V 1 -l 16 -d /tmp/hid-b
# The host checks nvmf_subsystem_get_controllers now (test-two-hosts.sh).
touch "$JOB_OUT/hostids"
looked() { [ -e "$JOB_OUT/looked" ]; }
step "the host read the controllers' identifiers" wait_for 60 looked
step "A registers key 0xa" nvme resv-register "$A" -n 1 --nrkey=0xa --rrega=0
step "A acquires Write Exclusive" nvme resv-acquire "$A" -n 1 --crkey=0xa --rtype=1 --racqa=0
head -c 4096 /dev/zero | tr '\0' 'a' > /tmp/wa
head -c 4096 /dev/zero | tr '\0' 'b' > /tmp/wb
step "A (the holder) writes" nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
step "B reads (Write Exclusive lets others read)" sh -c \
	"nvme read $B -n 1 -s 2048 -c 7 -z 4096 -d /tmp/rb && cmp /tmp/rb /tmp/wa"
step "B's write fails with Reservation Conflict" sh -c \
	"! nvme write $B -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wb 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
step "B registers key 0xb" nvme resv-register "$B" -n 1 --nrkey=0xb --rrega=0
step "resv-report --eds through B: Write Exclusive, two registrants, A holds it" sh -c \
	"nvme resv-report $B -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo &&
	 grep -q '\"rtype\":1,' /tmp/r && grep -q '\"regctl\":2,' /tmp/r &&
	 grep -qi 'a1a1a1a1000000000000000000000001' /tmp/r && grep -qi 'b2b2b2b2000000000000000000000002' /tmp/r"
step "B preempts A (racqa 1)" nvme resv-acquire "$B" -n 1 --crkey=0xb --prkey=0xa --rtype=1 --racqa=1
step "now B writes (marker at LBA 4096)" sh -c \
	"printf 'written by host B' | dd of=/tmp/mb bs=4096 conv=sync status=none &&
	 nvme write $B -n 1 -s 4096 -c 7 -z 4096 -d /tmp/mb"
step "and A's write fails with Reservation Conflict" sh -c \
	"! nvme write $A -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
notif_type() {
	nvme get-log "$A" --log-id=0x80 --log-len=64 -b > /tmp/notif 2>/dev/null &&
		[ "$(od -An -tu1 -j8 -N1 /tmp/notif | tr -d ' ')" = 1 ] &&
		[ "$(od -An -tu1 -j12 -N1 /tmp/notif | tr -d ' ')" = 1 ]
}
step "A's reservation notification log: Registration Preempted, namespace 1" notif_type
step "resv-report: one registrant left (B)" sh -c \
	"nvme resv-report $A -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo && grep -q '\"regctl\":1,' /tmp/r"
step "B releases" nvme resv-release "$B" -n 1 --crkey=0xb --rtype=1 --rrela=0
step "A writes again" nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
step "B unregisters" nvme resv-register "$B" -n 1 --crkey=0xb --rrega=1
step "flush" nvme flush "$B" -n 1
guest_finish
