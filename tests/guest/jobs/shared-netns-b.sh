# Guest job of test-shared-resv-netns.sh, guest B: its one NVMe controller comes from daemon B
# (network namespace B), which shares an RBD image with daemon A (guest A's, see
# shared-netns-a.sh). B finds A's reservation, preempts it with abort while A's fio writes and
# overwrites the blocks A was writing, then holds Write Exclusive - Registrants Only; its state
# stays while daemon A is killed; finally the image grows and this guest sees it.
. "$GUEST_LIB"
. ./shared-netns-lib.sh

serial=NVMEEMU-NETNS
step "the controller of daemon B is bound, its namespace has a block device" \
	wait_for 90 nvme_ns_by_serial "$serial"
c=$(nvme_ctrl_by_serial "$serial")
B=/dev/$c
dev=$(nvme_ns_by_serial "$serial")
echo "controller $B cntlid $(cat /sys/class/nvme/"$c"/cntlid), namespace $dev"
nvme id-ns "$B" -n 1 | sed -n 's/^nguid *: *//p' > "$JOB_OUT/nguid"
cat "/sys/class/nvme/$c/cntlid" > "$JOB_OUT/cntlid"
printf '\262\262\262\262\000\000\000\000\000\000\000\000\000\000\000\002' > /tmp/hid-b
step "host B: Host Identifier b2b2b2b2...02" nvme set-feature "$B" -f 0x81 -V 1 -l 16 -d /tmp/hid-b

step "A holds Write Exclusive (host)" host_says 240 a-holds
head -c 4096 /dev/zero | tr '\0' 'b' > /tmp/wb
step "B's write fails with Reservation Conflict: daemon B knows A's reservation" sh -c \
	"! nvme write $B -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wb 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
step "B reads (Write Exclusive lets others read)" nvme read "$B" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/rb
step "B registers key 0xb" nvme resv-register "$B" -n 1 --nrkey=0xb --rrega=0
step "resv-report through daemon B: the same state as through A" report_has "$B" \
	'"rtype":1,' '"regctl":2,' '"rkey":10,"hostid":"a1a1a1a1000000000000000000000001"' \
	'"rkey":11,"hostid":"b2b2b2b2000000000000000000000002"'
touch "$JOB_OUT/b-registered"

step "A's fio is writing (host)" host_says 240 a-fio-running
step "B preempts A and aborts its commands (racqa 2)" \
	nvme resv-acquire "$B" -n 1 --crkey=0xb --prkey=0xa --rtype=1 --racqa=2
# B overwrites every block A's fio was writing: any write of A's landing later would show.
step "B writes blocks 8-16 MiB (0xbb) and flushes" sh -c \
	"head -c 8M /dev/zero | tr '\\0' '\\273' | dd of=$dev bs=1M seek=8 oflag=direct status=none && nvme flush $B -n 1"
touch "$JOB_OUT/b-preempted"

step "A checked its side (host)" host_says 240 a-checked
step "B releases" nvme resv-release "$B" -n 1 --crkey=0xb --rtype=1 --rrela=0
step "B acquires Write Exclusive - Registrants Only" \
	nvme resv-acquire "$B" -n 1 --crkey=0xb --rtype=5 --racqa=0
touch "$JOB_OUT/b-wero"

step "daemon A was killed with SIGKILL mid-fio (host)" host_says 300 a-killed
step "resv-report through daemon B after A's daemon died: B holds Registrants Only, A's key 0xa2" \
	report_has "$B" '"rtype":5,' '"regctl":2,' '"rkey":11,"hostid":"b2b2b2b2000000000000000000000002"' \
	'"rkey":162,"hostid":"a1a1a1a1000000000000000000000001"'
step "B (the holder) writes a marker at LBA 4096 while daemon A is down" sh -c \
	"printf 'written by host B' | dd of=/tmp/mb bs=4096 conv=sync status=none &&
	 nvme write $B -n 1 -s 4096 -c 7 -z 4096 -d /tmp/mb && nvme flush $B -n 1"
touch "$JOB_OUT/b-after-kill"

step "the image grew (host)" host_says 300 resized
grown() { [ "$(cat /sys/block/"${dev#/dev/}"/size)" = 262144 ]; }
step "guest B sees the namespace grow to 128 MiB (Namespace Attribute Changed)" wait_for 60 grown
touch "$JOB_OUT/b-done"
guest_finish
