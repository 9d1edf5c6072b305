# Guest job: zoned namespaces as Linux and nvme-cli use them. Namespace 1 (--zoned 3072:4:6 on
# 64 MiB: 32 zones of 4096 blocks, 3072 writable, at most 4 open and 6 active) must be a
# host-managed zoned block device with those limits; nvme zns id-ns / report-zones /
# zone-append / open-zone / close-zone / finish-zone / reset-zone behave as the ZNS spec says, a
# write not at the write pointer fails with Zone Invalid Write, reads past the write pointer
# return zeroes; fio zonemode=zbd with verify passes; zones the host fails (Read Only, Offline)
# show in the Changed Zone List, the notice, Report Zones and the statuses. Then the host adds
# namespace 2 through bdev_zone_block_create ("ns2" in $JOB_OUT) and the guest sees it zoned too.
. "$GUEST_LIB"

serial=NVMEEMU-ZNS
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
blk=$(basename "$dev")
echo "controller $ctrl namespace $dev"
touch "$JOB_OUT/ready"

step "the kernel sees a host-managed zoned device: 32 zones of 2 MiB, 4 open, 6 active" sh -c \
	"q=/sys/block/$blk/queue; grep -H . \$q/zoned \$q/nr_zones \$q/chunk_sectors \$q/max_open_zones \$q/max_active_zones \$q/zone_append_max_bytes;
	 [ \$(cat \$q/zoned) = host-managed ] && [ \$(cat \$q/nr_zones) = 32 ] &&
	 [ \$(cat \$q/chunk_sectors) = 4096 ] && [ \$(cat \$q/max_open_zones) = 4 ] &&
	 [ \$(cat \$q/max_active_zones) = 6 ] && [ \$(cat \$q/zone_append_max_bytes) -gt 0 ]"
step "zns id-ctrl and id-ns: ZSZE 4096, MOR 3, MAR 5" sh -c \
	"nvme zns id-ctrl $dev && nvme zns id-ns $dev > /tmp/idz; cat /tmp/idz;
	 grep -Eq '^mor *: *(0x)?3\$' /tmp/idz && grep -Eq '^mar *: *(0x)?5\$' /tmp/idz && grep -Eiq 'zsze *: *0?x?0*1000' /tmp/idz"
step "id-ns-descs: CSI 2 (zoned)" sh -c "nvme ns-descs $dev > /tmp/d; cat /tmp/d; grep -Eiq 'csi *: *(0x)?2\$' /tmp/d"
step "report-zones: 32 empty zones of capacity 3072" sh -c \
	"nvme zns report-zones $dev > /tmp/rz; head -4 /tmp/rz;
	 [ \$(grep -Ec 'EMPTY|State: *0x10' /tmp/rz) = 32 ] && grep -Eiq 'Cap: *0xc00' /tmp/rz"
head -c 8192 /dev/urandom > /tmp/a
head -c 4096 /dev/urandom > /tmp/b
step "zone-append returns the LBA written: 0, then 16" sh -c \
	"nvme zns zone-append $dev -s 0 -z 8192 -d /tmp/a | tee /tmp/za; grep -Eq 'LBA:? *(0x)?0\$' /tmp/za &&
	 nvme zns zone-append $dev -s 0 -z 4096 -d /tmp/b | tee /tmp/za; grep -Eq 'LBA:? *(0x)?10\$' /tmp/za"
step "the appended data reads back" sh -c \
	"nvme read $dev -s 0 -c 23 -z 12288 -d /tmp/r && cat /tmp/a /tmp/b > /tmp/ab && cmp /tmp/r /tmp/ab"
step "blocks past the write pointer read as zeroes" sh -c \
	"nvme read $dev -s 24 -c 7 -z 4096 -d /tmp/z && head -c 4096 /dev/zero > /tmp/zero && cmp /tmp/z /tmp/zero"
step "a write not at the write pointer fails with Zone Invalid Write" sh -c \
	"! nvme write $dev -s 8 -c 7 -z 4096 -d /tmp/b 2> /tmp/err; cat /tmp/err; grep -Eqi 'invalid.?write|1bc\b' /tmp/err"
step "a write at the write pointer works" nvme write "$dev" -s 24 -c 7 -z 4096 -d /tmp/b
# The state of the zone starting at LBA $1, as report-zones prints it (a name or the ZS byte).
cat > /tmp/zone_state << EOS
#!/bin/sh
nvme zns report-zones $dev -s "\$1" -d 1 | grep -Eo 'State: *[0-9A-Za-z_]+' | head -1 | awk '{print \$NF}'
EOS
chmod +x /tmp/zone_state
step "open-zone: zone 1 explicitly opened" sh -c \
	"nvme zns open-zone $dev -s 4096 && /tmp/zone_state 4096 | tee /dev/stderr | grep -Eq 'EXP|0x30'"
step "close-zone: zone 0 closed" sh -c \
	"nvme zns close-zone $dev -s 0 && /tmp/zone_state 0 | tee /dev/stderr | grep -Eq 'CLOSED|0x40'"
step "finish-zone: zone 1 full, a write to it fails with Zone Is Full" sh -c \
	"rm -f /tmp/err; nvme zns finish-zone $dev -s 4096 && /tmp/zone_state 4096 | tee /dev/stderr | grep -Eq 'FULL|0xe0' &&
	 ! nvme write $dev -s 4096 -c 0 -z 512 -d /tmp/b 2> /tmp/err; cat /tmp/err; grep -Eqi 'full|1b9\b' /tmp/err"
step "open-zone beyond the 4 open zones fails with Too Many Open Zones" sh -c \
	"rm -f /tmp/err; for z in 2 3 4 5; do nvme zns open-zone $dev -s \$((z * 4096)) || exit 1; done;
	 ! nvme zns open-zone $dev -s 24576 2> /tmp/err; cat /tmp/err; grep -Eqi 'too.?many.?open|1be\b' /tmp/err"
step "reset-zone: zone 1 empty again" sh -c \
	"nvme zns reset-zone $dev -s 4096 && /tmp/zone_state 4096 | tee /dev/stderr | grep -Eq 'EMPTY|0x10'"
step "reset-zone -a: every zone empty" sh -c \
	"nvme zns reset-zone $dev -a && [ \$(nvme zns report-zones $dev | grep -Ec 'EMPTY|State: *0x10') = 32 ]"
step "blkzone report (the kernel's zone report)" sh -c \
	"blkzone report /dev/$blk | head -3; [ \$(blkzone report /dev/$blk | wc -l) = 32 ]"
step "fio zonemode=zbd sequential write + crc32c verify over 12 zones" \
	fio --name=zbd --filename="$dev" --direct=1 --ioengine=psync --zonemode=zbd --rw=write \
	--bs=64k --offset=4M --size=24M --verify=crc32c --do_verify=1 --verify_fatal=1
step "fio zonemode=zbd random writes (libaio QD8, zone append off) + md5 verify" \
	fio --name=zbdr --filename="$dev" --direct=1 --ioengine=libaio --iodepth=8 \
	--zonemode=zbd --rw=randwrite --bs=16k --offset=32M --size=16M --max_open_zones=4 \
	--verify=md5 --do_verify=1 --verify_fatal=1 --io_size=8M
# Zone faults (nvmf_emu_set_zone_state on the host): zone 31 Read Only, zone 30 Offline. The
# guest enables Zone Descriptor Changed notices (AEC bit 27, which Linux leaves off), the kernel
# logs the notice it does not handle ("async event result 00bfef02": notice EFh, log BFh), and
# nvme-cli reads the Changed Zone List; Report Zones, blkzone and the I/O statuses show the states.
zro=126976 # zone 31 (0x1f000)
zof=122880 # zone 30 (0x1e000)
step "data in zone 31 before it fails" nvme write "$dev" -s $zro -c 7 -z 4096 -d /tmp/b
step "enable Zone Descriptor Changed notices (Set Features 0Bh, AEC bit 27)" sh -c \
	"nvme get-feature $ctrl -f 0xb > /tmp/aec; cat /tmp/aec;
	 cur=\$(grep -Eo 'value: *0x[0-9a-fA-F]+' /tmp/aec | grep -Eo '0x[0-9a-fA-F]+'); [ -n \"\$cur\" ] &&
	 nvme set-feature $ctrl -f 0xb --value=\$((cur | 0x8000000)) && nvme get-feature $ctrl -f 0xb | tee /dev/stderr |
	 grep -Eiq 'value: *0x0*8[0-9a-f]{6}\b'"
step "id-ctrl: OAES bit 27 (Zone Descriptor Changed Notices)" sh -c \
	"nvme id-ctrl $ctrl | grep -E '^oaes' | tee /dev/stderr | grep -Eiq 'oaes *: *0x0*8[0-9a-f]{6}\b'"
touch "$JOB_OUT/zone-fault-wanted"
zone_failed() { [ -e "$JOB_OUT/zone-fault" ]; }
step "the host failed zones 30 and 31 (nvmf_emu_set_zone_state)" wait_for 120 zone_failed
zdc_aen() { dmesg | grep -q 'async event result 00bfef02'; }
step "the kernel got the Zone Descriptor Changed notice (00bfef02)" wait_for 30 zdc_aen
step "changed-zone-list: zones 31 and 30" sh -c \
	"nvme zns changed-zone-list $dev > /tmp/czl; cat /tmp/czl;
	 grep -Eiq '(\b$zro\b|0x1f000\b)' /tmp/czl && grep -Eiq '(\b$zof\b|0x1e000\b)' /tmp/czl"
step "changed-zone-list read without RAE: empty now" sh -c \
	"nvme zns changed-zone-list $dev > /tmp/czl; cat /tmp/czl;
	 ! grep -Eiq '(\b$zro\b|0x1f000\b|\b$zof\b|0x1e000\b)' /tmp/czl"
step "report-zones: zone 31 read only, zone 30 offline" sh -c \
	"/tmp/zone_state $zro | tee /dev/stderr | grep -Eiq 'READ.?ONLY|0xd0' &&
	 /tmp/zone_state $zof | tee /dev/stderr | grep -Eiq 'OFFLINE|0xf0'"
step "blkzone report: the kernel sees zcond 13 (read only) and 15 (offline)" sh -c \
	"blkzone report -o $zof -c 2 /dev/$blk | tee /dev/stderr > /tmp/bz;
	 grep -q 'zcond:13' /tmp/bz && grep -q 'zcond:15' /tmp/bz"
step "a write to the read-only zone fails with Zone Is Read Only" sh -c \
	"rm -f /tmp/err; ! nvme write $dev -s $((zro + 8)) -c 0 -z 512 -d /tmp/b 2> /tmp/err; cat /tmp/err;
	 grep -Eqi 'read.?only|1ba\b' /tmp/err"
step "the read-only zone still reads back its data" sh -c \
	"rm -f /tmp/r; nvme read $dev -s $zro -c 7 -z 4096 -d /tmp/r && cmp /tmp/r /tmp/b"
step "a read of the offline zone fails with Zone Is Offline" sh -c \
	"rm -f /tmp/err; ! nvme read $dev -s $zof -c 0 -z 512 -d /tmp/r 2> /tmp/err; cat /tmp/err;
	 grep -Eqi 'offline|1bb\b' /tmp/err"
ns2_added() { [ -e "$JOB_OUT/ns2" ]; }
step "the host added namespace 2 (bdev_zone_block_create)" wait_for 90 ns2_added
ns2() { [ -e "/sys/block/${blk%n1}n2/queue/zoned" ]; }
step "namespace 2 appears, host-managed, zone size 2048 blocks, no open limit" wait_for 60 ns2
step "namespace 2 is zoned with 32 zones of 1 MiB" sh -c \
	"q=/sys/block/${blk%n1}n2/queue; grep -H . \$q/zoned \$q/nr_zones \$q/chunk_sectors \$q/max_open_zones;
	 [ \$(cat \$q/zoned) = host-managed ] && [ \$(cat \$q/nr_zones) = 32 ] && [ \$(cat \$q/chunk_sectors) = 2048 ] &&
	 [ \$(cat \$q/max_open_zones) = 0 ]"
# Zone descriptor extensions: namespace 2 has 64 bytes per zone (zone_desc_ext_size 64).
dev2=/dev/${blk%n1}n2
step "zns id-ns of namespace 2: ZDES 1 (64 bytes)" sh -c \
	"nvme zns id-ns $dev2 | tee /dev/stderr | grep -Eq 'zdes:? *(0x)?1\b'"
head -c 64 /dev/zero | tr '\0' 'Z' > /tmp/zde
step "set-zone-desc on zone 1 of namespace 2: the zone goes Closed" sh -c \
	"nvme zns set-zone-desc $dev2 -s 2048 -d /tmp/zde &&
	 nvme zns report-zones $dev2 -s 2048 -d 1 | tee /dev/stderr | grep -Eq 'CLOSED|State: *0x40'"
step "report-zones -e shows the extension (64 x 5a), zone 2 has none" sh -c \
	"nvme zns report-zones $dev2 -s 2048 -d 2 -e > /tmp/rze; cat /tmp/rze;
	 [ \$(grep -Eo '5a' /tmp/rze | wc -l) -ge 64 ] && [ \$(grep -c 'SLBA' /tmp/rze) = 2 ] &&
	 grep -Eq 'Attrs: *0x80' /tmp/rze"
step "the extended report refused on namespace 1 (no extensions)" sh -c \
	"! nvme zns report-zones $dev -d 1 -e > /tmp/rze 2>&1; cat /tmp/rze; grep -Eqi 'invalid|0x2\b|4002' /tmp/rze"
step "reset-zone drops the extension" sh -c \
	"nvme zns reset-zone $dev2 -s 2048 && nvme zns report-zones $dev2 -s 2048 -d 1 -e > /tmp/rze; cat /tmp/rze;
	 grep -Eq 'EMPTY|State: *0x10' /tmp/rze && ! grep -q '5a 5a' /tmp/rze"
step "fio zonemode=zbd on namespace 2 + verify" \
	fio --name=zbd2 --filename="/dev/${blk%n1}n2" --direct=1 --ioengine=psync --zonemode=zbd \
	--rw=write --bs=32k --size=8M --verify=crc32c --do_verify=1 --verify_fatal=1
guest_finish
