# Guest job of test-shared-resv-netns.sh, guest A: its one NVMe controller comes from daemon A
# (network namespace A), which shares an RBD image with daemon B (namespace B, guest B's). The
# host relays the two guests' marker files between their job directories; this guest waits for
# B's with host_says. A holds a reservation, keeps fio writing while B preempts it with abort,
# writes again under B's Write Exclusive - Registrants Only while its daemon is killed with
# SIGKILL, then uses the controller of the restarted daemon (hot-added by the host) and sees the
# state B sees; finally the image grows and this guest sees it.
. "$GUEST_LIB"
. ./shared-netns-lib.sh

serial=NVMEEMU-NETNS
step "the controller of daemon A is bound, its namespace has a block device" \
	wait_for 90 nvme_ns_by_serial "$serial"
c=$(nvme_ctrl_by_serial "$serial")
A=/dev/$c
dev=$(nvme_ns_by_serial "$serial")
old_pci=$(readlink -f /sys/class/nvme/"$c"/device)
echo "controller $A cntlid $(cat /sys/class/nvme/"$c"/cntlid), namespace $dev, at $old_pci"
nvme id-ns "$A" -n 1 | sed -n 's/^nguid *: *//p' > "$JOB_OUT/nguid"
cat "/sys/class/nvme/$c/cntlid" > "$JOB_OUT/cntlid"
step "NMIC bit 0: the namespace is shared" sh -c "nvme id-ns $A -n 1 | grep -q '^nmic *: 0x1'"
printf '\241\241\241\241\000\000\000\000\000\000\000\000\000\000\000\001' > /tmp/hid-a
step "host A: Host Identifier a1a1a1a1...01" nvme set-feature "$A" -f 0x81 -V 1 -l 16 -d /tmp/hid-a
step "A registers key 0xa" nvme resv-register "$A" -n 1 --nrkey=0xa --rrega=0
step "A acquires Write Exclusive" nvme resv-acquire "$A" -n 1 --crkey=0xa --rtype=1 --racqa=0
touch "$JOB_OUT/a-holds"

step "B registered (host)" host_says 240 b-registered
step "resv-report through daemon A: Write Exclusive held by A, B's registration seen" report_has "$A" \
	'"rtype":1,' '"regctl":2,' '"rkey":10,"hostid":"a1a1a1a1000000000000000000000001"' \
	'"rkey":11,"hostid":"b2b2b2b2000000000000000000000002"'
# fio writes blocks 8-16 MiB (0xaa) through daemon A until the reservation stops it.
fio --name=a-writes --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 --rw=write --bs=4k \
	--offset=8M --size=8M --time_based --runtime=200 --buffer_pattern=0xaa \
	--output-format=json --output="$JOB_OUT/fio-a1.json" > /dev/null 2>&1 &
fio_pid=$!
sleep 3
step "A's fio is writing" kill -0 "$fio_pid"
touch "$JOB_OUT/a-fio-running"
step "B preempted A (host)" host_says 240 b-preempted
fio_stopped() { ! kill -0 "$fio_pid"; }
step "A's fio stopped with an error after B's Preempt and Abort" sh -c \
	"for i in \$(seq 300); do kill -0 $fio_pid 2> /dev/null || break; sleep 0.2; done; ! kill -0 $fio_pid 2> /dev/null"
wait "$fio_pid"
fio_rc=$?
echo "fio exited with $fio_rc"
step "fio's status is an error" test "$fio_rc" -ne 0
head -c 4096 /dev/zero | tr '\0' 'a' > /tmp/wa
step "A's write fails with Reservation Conflict" sh -c \
	"! nvme write $A -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa 2>&1 | tee /tmp/e; grep -qi conflict /tmp/e"
notif_preempted() {
	nvme get-log "$A" --log-id=0x80 --log-len=64 -b > /tmp/notif 2>/dev/null &&
		[ "$(od -An -tu1 -j8 -N1 /tmp/notif | tr -d ' ')" = 1 ] &&
		[ "$(od -An -tu1 -j12 -N1 /tmp/notif | tr -d ' ')" = 1 ]
}
step "A's reservation notification log: Registration Preempted, namespace 1" notif_preempted
touch "$JOB_OUT/a-checked"

step "B holds Write Exclusive - Registrants Only (host)" host_says 240 b-wero
step "A registers again with key 0xa2" nvme resv-register "$A" -n 1 --nrkey=0xa2 --rrega=0
step "A (a registrant) may write under Registrants Only" \
	nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
fio --name=a-writes-2 --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 --rw=write --bs=4k \
	--offset=16M --size=8M --time_based --runtime=200 --buffer_pattern=0xaa \
	--output-format=json --output="$JOB_OUT/fio-a2.json" > /dev/null 2>&1 &
fio_pid=$!
sleep 3
step "A's second fio is writing" kill -0 "$fio_pid"
touch "$JOB_OUT/a-fio2-running"
# The host kills daemon A. The driver would notice the dead function at its next command timeout
# (30 s); an operator removes it at once, as here, so that the restarted daemon's function (same
# subsystem, same CNTLID) can join: Linux refuses a second controller with a CNTLID in use.
step "daemon A was killed with SIGKILL mid-fio (host)" host_says 300 a-killed
gone() { [ ! -e "$old_pci" ] && [ -z "$(nvme_ctrls_by_serial "$serial")" ]; }
step "the dead function removed (PCI remove): its controller and the namespace go" sh -c \
	"echo 1 > $old_pci/remove"
step "no controller of the subsystem is left" wait_for 60 gone
touch "$JOB_OUT/a-old-gone"
step "daemon A started again, its function hot-added (host)" host_says 300 a-readded
# The controller at the hot-added function (another PCI address), live, with its namespace.
new_ctrl() {
	for _nc in $(nvme_ctrls_by_serial "$serial"); do
		[ "$(readlink -f /sys/class/nvme/"$_nc"/device)" != "$old_pci" ] &&
			[ "$(cat /sys/class/nvme/"$_nc"/state)" = live ] && nvme_ns_dev "$_nc" 1 > /dev/null &&
			{ echo "$_nc"; return 0; }
	done
	return 1
}
step "the restarted daemon's controller is bound and its namespace is back" wait_for 120 new_ctrl
# The namespace fio wrote went away with the function: fio ended with an error.
kill "$fio_pid" 2> /dev/null
wait "$fio_pid"
echo "fio exited with $?"
c=$(new_ctrl)
A=/dev/$c
dev=$(nvme_ns_dev "$c" 1)
echo "controller $A cntlid $(cat /sys/class/nvme/"$c"/cntlid), namespace $dev"
cat "/sys/class/nvme/$c/cntlid" > "$JOB_OUT/cntlid2"
step "host A: Host Identifier again (a new controller)" nvme set-feature "$A" -f 0x81 -V 1 -l 16 -d /tmp/hid-a
step "resv-report through the restarted daemon A: what B sees (B holds Registrants Only, A's key 0xa2)" \
	report_has "$A" '"rtype":5,' '"regctl":2,' '"rkey":11,"hostid":"b2b2b2b2000000000000000000000002"' \
	'"rkey":162,"hostid":"a1a1a1a1000000000000000000000001"'
step "A writes through the restarted daemon (a registrant)" \
	nvme write "$A" -n 1 -s 2048 -c 7 -z 4096 -d /tmp/wa
touch "$JOB_OUT/a-back"

step "the image grew (host)" host_says 240 resized
grown() { [ "$(cat /sys/block/"${dev#/dev/}"/size)" = 262144 ]; }
step "guest A sees the namespace grow to 128 MiB (Namespace Attribute Changed)" wait_for 60 grown
touch "$JOB_OUT/a-done"
guest_finish
