# Guest job: LBA formats and end-to-end protection information (the host's test-pi.sh). The
# namespace (a 32 MiB file) is formatted with nvme-cli to 512+8 Type 1 (16b guard), then fio
# verifies through the kernel's block-integrity path (Linux generates the tuple on writes, checks
# it on reads; the controller checks it too); blocks written without protection processing and a
# block the host corrupts in the backing file fail with End-to-end Guard Check Error. Then
# 4096+16 Type 1 with the 64b guard (CRC-64), Type 3, extended LBAs, and format 0 again. Copy
# with protection information (PRINFOR/PRINFOW, descriptor formats 0h and 1h) on both guards;
# cross-namespace Copy (formats 2h/3h) advertised and refused until Host Behavior Support enables
# it, which a Linux guest cannot do.
# Host and guest meet through files in $JOB_OUT: the guest writes "written", the host "corrupted".
. "$GUEST_LIB"

dev_up() { nvme_ns_by_serial NVMEEMU-PI; }
step "the namespace appears" wait_for 60 dev_up
dev=$(dev_up)
n=$(basename "$dev")
ng=/dev/ng${n#nvme}
sectors() { cat /sys/block/"$n"/size; }
# wait_size N: the kernel revalidated the namespace to N 512-byte sectors.
wait_size() { wait_for 30 sh -c "[ \$(cat /sys/block/$n/size) = $1 ]"; }
# fmt LBAF PI [MSET]: Format NVM through nvme-cli (it rescans the namespace afterwards).
fmt() { nvme format "$dev" --lbaf="$1" --pi="$2" --ms="${3:-0}" --force; }
fio_verify() {
	fio --name=pi --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite --bs="$1" \
		--size=4M --iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--output=/tmp/fio.out || { cat /tmp/fio.out; return 1; }
	grep -q "err= 0" /tmp/fio.out
}
# expect_fail PATTERN CMD...: CMD fails and its stderr says PATTERN (case-insensitive).
expect_fail() {
	pat=$1
	shift
	if "$@" > /tmp/ef.out 2> /tmp/ef.err; then
		echo "unexpected success"
		return 1
	fi
	cat /tmp/ef.err
	grep -qi "$pat" /tmp/ef.err
}

step "id-ns: 16 LBA formats (512/4096 x 0/8/16/16/64/64 metadata, four with a storage tag), both metadata placements, PI types 1-3 first or last" sh -c \
	"nvme id-ns $dev -o json | tr -d ' \n' > /tmp/id && cat /tmp/id | head -c 400; echo;
	 grep -q '\"nlbaf\":15,' /tmp/id && grep -q '\"mc\":3,' /tmp/id && grep -q '\"dpc\":31,' /tmp/id &&
	 grep -q '\"flbas\":0,' /tmp/id"
step "id-ns -H names the formats" sh -c \
	"nvme id-ns $dev -H > /tmp/idh; grep 'LBA Format' /tmp/idh;
	 grep -q 'LBA Format  1 : Metadata Size: 8 .*Data Size: 512 bytes' /tmp/idh &&
	 grep -q 'LBA Format  9 : Metadata Size: 16 .*Data Size: 4096 bytes' /tmp/idh &&
	 grep -q 'LBA Format  0 .*(in use)' /tmp/idh"
step "nvm-id-ns: the 64b guard (PIF 2) for formats 3, 5, 9, 11; 32b (PIF 1) for 13; the Qualified Type (PIF 3) for 14 and 15" sh -c \
	"nvme nvm-id-ns $dev -o json | tr -d ' \n' > /tmp/nvm; head -c 600 /tmp/nvm; echo;
	 [ \$(grep -o '\"pif\":2' /tmp/nvm | wc -l) = 4 ] && [ \$(grep -o '\"pif\":1' /tmp/nvm | wc -l) = 1 ] &&
	 [ \$(grep -o '\"pif\":3' /tmp/nvm | wc -l) = 2 ]"
step "32 MiB file = 65536 sectors in format 0" wait_size 65536

# ---- 512 + 8, Type 1, 16b guard ----
step "format --lbaf=1 --pi=1" fmt 1 1
step "the capacity halves (each block takes two 512-byte bdev blocks)" wait_size 32768
step "the kernel registered a T10-DIF Type 1 integrity profile" sh -c \
	"cat /sys/block/$n/integrity/format; grep -q 'T10-DIF-TYPE1-CRC' /sys/block/$n/integrity/format"
step "fio randwrite + crc32c verify (kernel-generated, device- and kernel-checked guards)" fio_verify 4k
head -c 512 /dev/urandom > /tmp/d
step "nvme write with PRACT: the controller inserts the tuple" \
	nvme write "$ng" -s 5 -c 0 -z 512 -d /tmp/d -p 8 -r 5
step "nvme read, all checks, ILBRT = SLBA: guard and reference tag are right" \
	nvme read "$ng" -s 5 -c 0 -z 512 -d /tmp/r -y 8 -M /tmp/md -p 7 -r 5
step "... the data came back" cmp /tmp/d /tmp/r
step "nvme copy with PRACT: LBA 5 to 6000, source checked, tuple regenerated (ref 6000, app 77h)" \
	nvme copy "$ng" --sdlba=6000 --slbs=5 --blocks=0 --prinfor=15 --prinfow=15 \
	--expected-ref-tags=5 --expected-app-tags=0 --expected-app-tag-masks=0xffff \
	--ref-tag=6000 --app-tag=0x77 --app-tag-mask=0xffff
step "... the copy reads back with every check against the destination's tags" sh -c \
	"nvme read $ng -s 6000 -c 0 -z 512 -d /tmp/rc -y 8 -M /tmp/mdc -p 7 -r 6000 -a 0x77 -m 0xffff &&
	 cmp /tmp/d /tmp/rc && od -An -tx1 /tmp/mdc"
step "nvme copy without PRACT keeps the source's tuple: the destination's ref check fails (0x284)" \
	expect_fail 'ref.*tag\|0x284' nvme copy "$ng" --sdlba=6001 --slbs=5 --blocks=0 --prinfor=7 \
	--prinfow=7 --expected-ref-tags=5 --ref-tag=6001
step "nvme copy with a source EILBRT that is not its SLBA (Type 1): Invalid Protection Information" \
	expect_fail 'protection\|0x181' nvme copy "$ng" --sdlba=6002 --slbs=6000,5 --blocks=0,0 \
	--prinfor=9 --prinfow=8 --expected-ref-tags=6000,6 --ref-tag=6002
step "nvme copy --format=1 on a 16b guard format: Invalid Format" expect_fail 'format\|0x10a' \
	nvme copy "$ng" --format=1 --sdlba=6003 --slbs=5 --blocks=0
step "Type 1 with ILBRT != SLBA: Invalid Protection Information" expect_fail \
	'protection\|0x181' nvme read "$ng" -s 5 -c 0 -z 512 -d /tmp/r -y 8 -M /tmp/md -p 7 -r 6
step "application tag check with another tag: End-to-end Application Tag Check Error" expect_fail \
	'app.*tag\|0x283' nvme read "$ng" -s 5 -c 0 -z 512 -d /tmp/r -y 8 -M /tmp/md -p 2 -a 0x1234 -m 0xffff
dd if=/dev/zero of=/tmp/badmd bs=8 count=1 2> /dev/null
step "a block written with a wrong tuple and no checks (PRINFO 0)" \
	nvme write "$ng" -s 2000 -c 0 -z 512 -d /tmp/d -y 8 -M /tmp/badmd -p 0
step "nvme read with the guard check: End-to-end Guard Check Error" expect_fail \
	'guard\|0x282' nvme read "$ng" -s 2000 -c 0 -z 512 -d /tmp/r -y 8 -M /tmp/md -p 4
step "nvme copy of it with the source guard check: End-to-end Guard Check Error" expect_fail \
	'guard\|0x282' nvme copy "$ng" --sdlba=6100 --slbs=2000 --blocks=0 --prinfor=4 --prinfow=0
# The kernel maps a protection status to BLK_STS_PROTECTION: EILSEQ for the reader.
step "a kernel read of it fails with EILSEQ (a protection error)" expect_fail 'multibyte' \
	dd if="$dev" of=/dev/null bs=512 skip=2000 count=1 iflag=direct
step "nvme verify with the reference tag check: End-to-end Reference Tag Check Error" expect_fail \
	'ref.*tag\|0x284' nvme verify "$ng" -s 2000 -c 0 -p 1 -r 2000
step "a never-written block reads (all-ones tuple: checks escaped)" sh -c \
	"nvme read $ng -s 9000 -c 0 -z 512 -d /tmp/r -y 8 -M /tmp/md -p 7 -r 9000 &&
	 [ \"\$(od -An -tx1 /tmp/md | tr -d ' \n')\" = ffffffffffffffff ]"
step "write LBA 3000 through the kernel (it generates the tuple), read it back" sh -c \
	"dd if=/tmp/d of=$dev bs=512 seek=3000 count=1 oflag=direct 2> /dev/null &&
	 dd if=$dev of=/tmp/r bs=512 skip=3000 count=1 iflag=direct 2> /dev/null && cmp /tmp/d /tmp/r"
touch "$JOB_OUT/written"
corrupted() { [ -e "$JOB_OUT/corrupted" ]; }
step "the host flipped a byte of LBA 3000 in the backing file" wait_for 60 corrupted
step "reading LBA 3000 fails with EILSEQ" expect_fail 'multibyte' \
	dd if="$dev" of=/dev/null bs=512 skip=3000 count=1 iflag=direct
step "the kernel log shows the guard check error (SCT 2h, SC 82h) at LBA 3000" sh -c \
	"dmesg | grep 'sc 0x82' | tail -n 3; dmesg | grep -q 'LBA 3000, 1 blocks, I/O Error (sct 0x2 / sc 0x82)'"

# ---- 4096 + 16, Type 1, 64b guard ----
step "format --lbaf=9 --pi=1 (4096+16, 64b guard)" fmt 9 1
step "capacity: 65536 / 9 blocks of 4096 bytes" wait_size $((65536 / 9 * 8))
step "4096-byte logical blocks" sh -c "[ \$(blockdev --getss $dev) = 4096 ]"
step "the kernel registered a CRC64 integrity profile" sh -c \
	"cat /sys/block/$n/integrity/format; grep -q 'CRC64' /sys/block/$n/integrity/format"
step "fio randwrite + crc32c verify on the 64b guard" fio_verify 16k
head -c 4096 /dev/urandom > /tmp/d4
step "nvme write with PRACT, read with all checks" sh -c \
	"nvme write $ng -s 7 -c 0 -z 4096 -d /tmp/d4 -p 8 -r 7 &&
	 nvme read $ng -s 7 -c 0 -z 4096 -d /tmp/r4 -y 16 -M /tmp/md -p 7 -r 7 && cmp /tmp/d4 /tmp/r4"
step "nvme copy --format=1 (48-bit big-endian EILBRT) with PRACT: LBA 7 to 20, CRC-64 guard regenerated" \
	nvme copy "$ng" --format=1 --sdlba=20 --slbs=7 --blocks=0 --prinfor=15 --prinfow=15 \
	--expected-ref-tags=7 --ref-tag=20
step "... it reads back with every check at ref 20" sh -c \
	"nvme read $ng -s 20 -c 0 -z 4096 -d /tmp/r4c -y 16 -M /tmp/md -p 7 -r 20 && cmp /tmp/d4 /tmp/r4c"
step "nvme copy --format=0 on the 64b guard: Invalid Format" expect_fail 'format\|0x10a' \
	nvme copy "$ng" --format=0 --sdlba=21 --slbs=7 --blocks=0
dd if=/dev/zero of=/tmp/badmd bs=16 count=1 2> /dev/null
step "a wrong 64b tuple is caught by the guard check" sh -c \
	"nvme write $ng -s 8 -c 0 -z 4096 -d /tmp/d4 -y 16 -M /tmp/badmd -p 0 &&
	 ! nvme read $ng -s 8 -c 0 -z 4096 -d /tmp/r4 -y 16 -M /tmp/md -p 4 2> /tmp/e; cat /tmp/e;
	 grep -qi 'guard\|0x282' /tmp/e"

# ---- Type 3, then extended LBAs, then back ----
step "format --lbaf=1 --pi=3" fmt 1 3
step "the kernel registered Type 3" sh -c \
	"cat /sys/block/$n/integrity/format; grep -q 'TYPE3' /sys/block/$n/integrity/format"
step "fio verify on Type 3" fio_verify 4k
step "format --lbaf=4 --ms=1 (512+64, extended LBAs, no PI)" fmt 4 0 1
head -c 576 /dev/urandom > /tmp/e576
step "passthrough write/read of one extended block (data and metadata in one buffer)" sh -c \
	"nvme write $ng -s 3 -c 0 -z 576 -d /tmp/e576 && nvme read $ng -s 3 -c 0 -z 576 -d /tmp/r576 &&
	 cmp /tmp/e576 /tmp/r576"
step "format --lbaf=0 --pi=0: 65536 sectors again" sh -c "nvme format $dev --lbaf=0 --pi=0 --ms=0 --force"
step "capacity back" wait_size 65536
step "no integrity profile any more" sh -c \
	"f=\$(cat /sys/block/$n/integrity/format); echo \$f; [ \"\$f\" = none ]"
step "fio verify on format 0" fio_verify 4k

# ---- Copy across namespaces (descriptor formats 2h/3h) ----
# The data path runs in tests/integration/copy_xns_test.c: a Linux guest cannot enable the
# formats, its kernel (6.12.117) refuses Set Features of Host Behavior Support (FID 16h, which
# the driver manages itself) from userspace with EACCES. The refusal comes before the source
# namespace is looked at, so namespace 1 serves as its own source here.
ctrl=/dev/$(nvme_ctrl_by_serial NVMEEMU-PI)
step "id-ctrl: OCFS 0xf (copy descriptor formats 0h-3h)" sh -c \
	"nvme id-ctrl $ctrl | grep '^ocfs'; nvme id-ctrl $ctrl | grep -q '^ocfs *: 0xf'"
step "nvme copy --format=2 --snsids=1 before Host Behavior Support enables it: Invalid Field" \
	expect_fail 'invalid field\|4002' nvme copy "$ng" --format=2 --sdlba=5000 --slbs=100 \
	--blocks=7 --snsids=1
step "get-feature 16h (Host Behavior Support): CDFE 0, LBAFEE as the kernel set it (1)" sh -c \
	"nvme get-feature $ctrl -f 0x16 --data-len=512 --raw-binary > /tmp/hbs &&
	 [ \"\$(od -An -tx1 -N6 /tmp/hbs | tr -d ' ')\" = 000001000000 ]"
{ printf '\000\000\001\000\014'; head -c 507 /dev/zero; } > /tmp/hbs
step "the kernel refuses set-feature 16h from userspace (Permission denied)" expect_fail \
	'permission denied' nvme set-feature "$ctrl" -f 0x16 --data-len=512 --data=/tmp/hbs
guest_finish
