# Guest job (second boot of test-resv.sh, after the daemon restarted from its config): the
# reservation came back from the PTPL file. This host has not set a Host Identifier, so it is
# another host than A: Exclusive Access refuses its reads and writes with Reservation Conflict.
# Then it becomes host A again, finds its registration, and releases and unregisters.
. "$GUEST_LIB"

serial=NVMEEMU-RESV
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
step "another host: a read fails with reservation conflict" sh -c \
	"! nvme read $dev -n 1 -s 80 -c 7 -z 4096 -d /dev/null 2>&1 | tee /tmp/e; grep -qi 'conflict' /tmp/e"
step "another host: a write fails with reservation conflict" sh -c \
	"head -c 4096 /dev/zero > /tmp/z; ! nvme write $dev -n 1 -s 80 -c 7 -z 4096 -d /tmp/z 2>&1 | tee /tmp/e; grep -qi 'conflict' /tmp/e"
step "another host: acquire without registering is a conflict" sh -c \
	"! nvme resv-acquire $dev -n 1 --crkey=0x1111 --rtype=2 --racqa=0 2>&1 | tee /tmp/e; grep -qi 'conflict' /tmp/e"
step "host id 0 is 64-bit: resv-report (no --eds) lists A with no controller (CNTLID 0xffff)" sh -c \
	"nvme resv-report $dev -n 1 -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo && grep -q '\"rtype\":2,' /tmp/r && grep -q '\"ptpls\":1' /tmp/r && grep -q '\"cntlid\":65535' /tmp/r && grep -q '\"rkey\":4369' /tmp/r"
# Octal escapes: the guest's shell printf has no \x.
printf '\132\132\132\132\001\002\003\004\005\006\007\010\011\012\013\014' > /tmp/hostid
step "host A is back (set-feature 0x81)" nvme set-feature "$ctrl" -f 0x81 -V 1 -l 16 -d /tmp/hostid
step "its marker is there" sh -c \
	"yes resv-holder-A | head -c 4096 > /tmp/m && dd if=$dev bs=4096 skip=10 count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/m"
step "resv-release" nvme resv-release "$dev" -n 1 --crkey=0x1111 --rtype=2 --rrela=0
step "resv-register: unregister, PTPL off" \
	nvme resv-register "$dev" -n 1 --crkey=0x1111 --rrega=1 --cptpl=2
step "resv-report --eds: nothing left" sh -c \
	"nvme resv-report $dev -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo && grep -q '\"rtype\":0,' /tmp/r && grep -q '\"regctl\":0,' /tmp/r"
guest_finish
