# Guest job: the Linux nvme driver binds nvme-emu over vfio-user; nvme-cli
# admin/log/feature/vendor commands, fio crc32c verify (4k random, 128k
# sequential, QD1 and QD32, two jobs), ext4, discard, controller reset and PCI
# FLR, Write Uncorrectable, Get LBA Status and Copy all work; finally a pattern is written and flushed for the host to find
# in the backing file after killing the daemon.
. "$GUEST_LIB"

serial=NVMEEMU-GT1
model="nvme-emu guest test"
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
bdf=$(basename "$(readlink -f "/sys/class/nvme/$(basename "$ctrl")/device")")
echo "controller $ctrl namespace $dev pci $bdf"

step "nvme list shows model and serial" sh -c "nvme list | grep '$serial' | grep -q '$model'"
step "id-ctrl: model, serial, SQES/CQES" sh -c \
	"nvme id-ctrl $ctrl > /tmp/idc && grep -q '^mn *: $model' /tmp/idc && grep -q '^sn *: $serial' /tmp/idc && grep -q '^sqes *: 0x66' /tmp/idc && grep -q '^cqes *: 0x44' /tmp/idc"
step "id-ns: 256 MiB of 512-byte blocks" sh -c \
	"nvme id-ns $dev | grep -q '^nsze *: 0x80000'"
step "get-feature -f 7 (number of queues)" sh -c \
	"nvme get-feature $ctrl -f 7 | grep -qi 'current value'"
step "smart-log" sh -c "nvme smart-log $ctrl | grep -qi 'temperature'"
step "error-log" nvme error-log "$ctrl" -e 4
step "fw-log" sh -c "nvme fw-log $ctrl | grep -qi 'frs1'"
# Firmware update as fleet tools do it: download (three 4 KiB units), commit to slot 2 for the
# next reset, reset, then a second image activated at once (the kernel sees the activation
# notice); the revision is the image's first 8 bytes.
step "fw-download + fw-commit slot 2 action 1: in the slot log, active after nvme reset" sh -c \
	"printf 9.9.9-gt > /tmp/fw1.bin && head -c 12280 /dev/urandom >> /tmp/fw1.bin &&
	 nvme fw-download $ctrl --fw=/tmp/fw1.bin --xfer=4096 &&
	 nvme fw-commit $ctrl --slot=2 --action=1 && nvme fw-log $ctrl | grep -q '9.9.9-gt' &&
	 nvme reset $ctrl && sleep 1 && nvme id-ctrl $ctrl | grep -q '^fr *: 9.9.9-gt'"
step "fw-commit slot 3 action 3: activated at once" sh -c \
	"printf 9.9.10gt > /tmp/fw2.bin && head -c 12280 /dev/urandom >> /tmp/fw2.bin &&
	 nvme fw-download $ctrl --fw=/tmp/fw2.bin &&
	 nvme fw-commit $ctrl --slot=3 --action=3 && sleep 1 && nvme id-ctrl $ctrl | grep -q '^fr *: 9.9.10gt'"
step "fw-commit of slot 1 (read-only) is refused" sh -c \
	"! nvme fw-commit $ctrl --slot=1 --action=0 2> /tmp/fwerr; cat /tmp/fwerr; grep -qi 'slot' /tmp/fwerr"
step "I/O after the firmware activations" sh -c "dd if=$dev of=/dev/null bs=4096 count=8 iflag=direct"
step "admin-passthru 0xc0 (vendor info blob)" sh -c \
	"nvme admin-passthru $ctrl --opcode=0xc0 --data-len=4096 --read -b > /tmp/vs && grep -q NVMEEMU1 /tmp/vs"
# I/O 0x80: CRC-32C of an LBA range in CDW0; it must change with the data.
crc() { nvme io-passthru "$dev" --opcode=0x80 --namespace-id=1 --cdw10=2048 --cdw12=7 2>&1 |
	sed -n 's/.*result: *\(0x[0-9a-f]*\).*/\1/ip' | head -n1; }
dd if=/dev/zero of="$dev" bs=4096 seek=256 count=1 oflag=direct 2>/dev/null
c1=$(crc)
dd if=/dev/urandom of="$dev" bs=4096 seek=256 count=1 oflag=direct 2>/dev/null
c2=$(crc)
echo "checksums: $c1 $c2"
step "io-passthru 0x80 (LBA range checksum)" sh -c "[ -n '$c1' ] && [ -n '$c2' ] && [ '$c1' != '$c2' ]"

for spec in "randwrite 4k 1" "randwrite 4k 32" "write 128k 1" "write 128k 32"; do
	set -- $spec
	step "fio verify $1 bs=$2 iodepth=$3 numjobs=2" fio --name=v --filename="$dev" \
		--rw="$1" --bs="$2" --iodepth="$3" --numjobs=2 --size=16M --offset_increment=32M \
		--ioengine=libaio --direct=1 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--group_reporting --output-format=terse
done
step "smart-log counts the fio writes" sh -c \
	"nvme smart-log $ctrl -o json | tee /dev/stderr | grep -q '\"data_units_written\" *: *[1-9]'"
step "smart-log of namespace 1 (LPA bit 0) counts its writes" sh -c \
	"nvme smart-log $ctrl -n 1 -o json | tee /dev/stderr | grep -q '\"data_units_written\" *: *[1-9]'"
step "both I/O queues carried interrupts" sh -c \
	"[ \$(grep -c 'nvme0q[1-9]' /proc/interrupts) -ge 2 ]"

modprobe ext4 2>/dev/null
step "mkfs.ext4" mkfs.ext4 -q -F "$dev"
mkdir -p /mnt/t
step "mount" mount "$dev" /mnt/t
step "write files" sh -c 'for i in 1 2 3 4 5 6 7 8; do dd if=/dev/urandom of=/mnt/t/f$i bs=64k count=16 2>/dev/null || exit 1; done; sync; md5sum /mnt/t/f* > /tmp/sums'
step "umount" umount /mnt/t
step "fsck -n is clean" fsck.ext4 -n -f "$dev"
step "mount again, files intact" sh -c "mount $dev /mnt/t && md5sum -c --quiet /tmp/sums && umount /mnt/t"
step "blkdiscard" blkdiscard -f "$dev"
step "discarded blocks read back as zeroes" sh -c \
	"dd if=$dev bs=64k count=16 iflag=direct 2>/dev/null | cmp -s - /dev/zero -n 1048576"

# Write Uncorrectable, Get LBA Status, the LBA status log and Copy (4 KiB blocks at 2 MiB on).
oncs=$(nvme id-ctrl "$ctrl" | sed -n 's/^oncs *: *//p')
oacs=$(nvme id-ctrl "$ctrl" | sed -n 's/^oacs *: *//p')
echo "oncs $oncs oacs $oacs"
step "ONCS: Write Uncorrectable, Copy; OACS: Get LBA Status" sh -c \
	"[ \$(($oncs & 0x102)) -eq 258 ] && [ \$(($oacs & 0x200)) -eq 512 ]"
dd if=/dev/urandom of=/tmp/u bs=4096 count=1 2>/dev/null
dd if=/tmp/u of="$dev" bs=4096 seek=512 oflag=direct 2>/dev/null
step "write-uncor" nvme write-uncor "$dev" -n 1 -s 4096 -c 7
step "a read of the marked blocks fails" sh -c \
	"! dd if=$dev of=/dev/null bs=4096 skip=512 count=1 iflag=direct 2>/dev/null"
step "get-lba-status reports them" sh -c \
	"nvme get-lba-status $dev -n 1 -s 0 -m 1023 -a 0x11 | grep -q 'DSLBA: 0x0*1000, NLB: 0x0*8,'"
step "lba-status-log names the namespace and the blocks" sh -c \
	"nvme lba-status-log $ctrl | tr -d ' ' > /tmp/lsl && grep -q '^NamespaceElementIdentifier:1' /tmp/lsl && grep -q '^RSLBA.0.:4096' /tmp/lsl && grep -q '^RNLB.0.:8' /tmp/lsl"
step "a write makes them readable" sh -c \
	"dd if=/tmp/u of=$dev bs=4096 seek=512 oflag=direct 2>/dev/null && dd if=$dev bs=4096 skip=512 count=1 iflag=direct 2>/dev/null | cmp -s - /tmp/u"
dd if=/dev/urandom of=/tmp/c bs=4096 count=2 2>/dev/null
dd if=/tmp/c of="$dev" bs=4096 seek=1024 oflag=direct 2>/dev/null
step "copy two ranges" nvme copy "$dev" -n 1 --sdlba=16384 --slbs=8200,8192 --blocks=7,7
step "the copy holds the ranges in order" sh -c \
	"dd if=/tmp/c bs=4096 skip=1 count=1 2>/dev/null > /tmp/c2 && dd if=/tmp/c bs=4096 count=1 2>/dev/null >> /tmp/c2 && dd if=$dev bs=4096 skip=2048 count=2 iflag=direct 2>/dev/null | cmp -s - /tmp/c2"

io_works() { dd if=/dev/urandom of=/tmp/blk bs=4096 count=8 2>/dev/null &&
	dd if=/tmp/blk of="$dev" bs=4096 seek=64 oflag=direct 2>/dev/null &&
	dd if="$dev" of=/tmp/blk2 bs=4096 skip=64 count=8 iflag=direct 2>/dev/null &&
	cmp /tmp/blk /tmp/blk2; }
step "nvme reset" nvme reset "$ctrl"
step "I/O after nvme reset" wait_for 20 io_works
step "PCI function level reset" sh -c "echo 1 > /sys/bus/pci/devices/$bdf/reset"
step "I/O after FLR" wait_for 20 io_works

# The host checks this pattern in the backing file after killing the daemon.
step "write and flush the persistence pattern" sh -c \
	"yes nvme-emu-persist | head -c 1048576 > /tmp/pat && dd if=/tmp/pat of=$dev bs=1M seek=100 oflag=direct 2>/dev/null && nvme flush $ctrl -n 1"
guest_finish
