# Guest job (first boot of test-resv.sh): host A with nvme-cli. Identify advertises reservations
# and fused Compare and Write; A sets its 128-bit Host Identifier, registers with PTPL on, takes
# Exclusive Access, reads Report (extended; the 64-bit form is refused), and writes a marker.
. "$GUEST_LIB"

serial=NVMEEMU-RESV
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
step "id-ctrl: ONCS bit 5 (reservations), FUSES 1 (compare and write)" sh -c \
	"nvme id-ctrl $ctrl -o json | tr -d ' \n' > /tmp/idc && oncs=\$(sed -n 's/.*\"oncs\":\([0-9]*\).*/\1/p' /tmp/idc) && [ \$((oncs & 32)) -ne 0 ] && grep -q '\"fuses\":1,' /tmp/idc"
step "id-ns: RESCAP 0xff (all types, IEKEY, PTPL)" sh -c \
	"nvme id-ns $dev -n 1 | grep -q '^rescap *: 0xff'"
# Octal escapes: the guest's shell printf has no \x.
printf '\132\132\132\132\001\002\003\004\005\006\007\010\011\012\013\014' > /tmp/hostid
step "set-feature 0x81: 128-bit host identifier" \
	nvme set-feature "$ctrl" -f 0x81 -V 1 -l 16 -d /tmp/hostid
step "resv-register with PTPL on" \
	nvme resv-register "$dev" -n 1 --nrkey=0x1111 --rrega=0 --cptpl=3
step "resv-register again with another key: reservation conflict" sh -c \
	"! nvme resv-register $dev -n 1 --nrkey=0x2222 --rrega=0 2>&1 | tee /tmp/e; grep -qi 'conflict' /tmp/e"
step "resv-acquire Exclusive Access" \
	nvme resv-acquire "$dev" -n 1 --crkey=0x1111 --rtype=2 --racqa=0
step "resv-report --eds: type 2, one registered controller, key, host id, PTPLS" sh -c \
	"nvme resv-report $dev -n 1 --eds -o json | tr -d ' \n' > /tmp/r && cat /tmp/r && echo && grep -q '\"rtype\":2,' /tmp/r && grep -q '\"regctl\":1,' /tmp/r && grep -q '\"ptpls\":1' /tmp/r && grep -q '\"rkey\":4369' /tmp/r && grep -qi '5a5a5a5a0102030405060708090a0b0c' /tmp/r"
step "resv-report without --eds: Host Identifier Inconsistent Format" sh -c \
	"! nvme resv-report $dev -n 1 2>&1 | tee /tmp/e; grep -qi 'inconsistent' /tmp/e"
step "the holder writes and reads" sh -c \
	"yes resv-holder-A | head -c 4096 > /tmp/m && dd if=/tmp/m of=$dev bs=4096 seek=10 oflag=direct 2>/dev/null && dd if=$dev bs=4096 skip=10 count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/m"
step "flush" nvme flush "$ctrl" -n 1
guest_finish
