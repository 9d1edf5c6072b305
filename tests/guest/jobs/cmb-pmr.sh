# Guest job: the Controller Memory Buffer and the Persistent Memory Region with the real driver
# and nvme-cli. show-regs reports both; the driver tried the CMB (this Debian kernel has no
# CONFIG_PCI_P2PDMA, so it gives the CMB back: "failed to register the CMB", CMBMSC 0); nvme
# set-reg turns CMBMSC.CRE on and CMBSZ/CMBLOC show the 16 MiB CMB in BAR2, which the guest maps
# and reads back; the PMR is enabled with set-reg, written through the guest's own mapping of
# BAR4 (sysfs resource4), a PMRSTS read makes a second write persistent (PMRWBM bit 1), the PMR
# is disabled and PMRSTS.NRDY says all of it is persistent: the host then kills the daemon
# (SIGKILL) and finds both in the PMR file. fio verify runs on the namespace
# meanwhile (mapped BARs turn QEMU's posted writes off for the whole function). Then the
# endurance group with nvme-cli: id-ctrl, list-endgrp, endurance-log against smart-log after fio,
# endurance-event-agg-log.
. "$GUEST_LIB"

dev=/dev/nvme0
ns=/dev/nvme0n1
bdf=$(basename "$(readlink -f /sys/class/nvme/nvme0/device)")
res=/sys/bus/pci/devices/$bdf
out=$JOB_OUT

# reg OFF [VALUE]: a BAR0 register, 32 bits, read (printed in decimal) or written, through the
# guest's own mapping of resource0.
reg() {
	python3 - "$res/resource0" "$@" <<'PY'
import mmap, struct, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 16384)
off = int(sys.argv[2], 0)
if len(sys.argv) > 3:
    m[off:off + 4] = struct.pack("<I", int(sys.argv[3], 0))
else:
    print(struct.unpack("<I", m[off:off + 4])[0])
PY
}
# bar BAR OFF write TEXT | bar BAR OFF read LEN: bytes of a memory BAR through resourceN.
bar() {
	python3 - "$res/resource$1" "$2" "$3" "$4" <<'PY'
import mmap, os, sys
path, off, op, arg = sys.argv[1], int(sys.argv[2], 0), sys.argv[3], sys.argv[4]
f = open(path, "r+b")
m = mmap.mmap(f.fileno(), os.path.getsize(path))
if op == "write":
    m[off:off + len(arg)] = arg.encode()
    m.flush()
else:
    sys.stdout.write(m[off:off + int(arg)].decode(errors="replace"))
PY
}
bit_set() { [ $(($(reg "$1") & $2)) -ne 0 ]; }
bit_clear() { [ $(($(reg "$1") & $2)) -eq 0 ]; }

step "show-regs: CAP.CMBS and CAP.PMRS, the PMR registers" sh -c "
	nvme show-regs $dev -H > /tmp/regs.txt || exit 1
	cat /tmp/regs.txt
	grep -qi 'Controller Memory Buffer is Supported' /tmp/regs.txt &&
	grep -qi 'Persistent Memory Region is Supported' /tmp/regs.txt"
cap_bits() {
	v=$(reg 4)
	echo "CAP[63:32] $v"
	[ $((v >> 24 & 3)) -eq 3 ]
}
step "CAP (dword 1): CMBS (bit 57) and PMRS (bit 56)" cap_bits
step "the driver tried the CMB: no PCI P2PDMA in this kernel, CMB given back" sh -c "
	dmesg | grep -i cmb; dmesg | grep -q 'failed to register the CMB'"
step "set-reg CMBMSC.CRE" nvme set-reg $dev --cmbmsc=1
cmbsz_16m() {
	v=$(reg 0x3c)
	echo "CMBSZ $v"
	[ "$v" = $((0x1021f)) ]
}
cmbloc_bar2() {
	v=$(reg 0x38)
	echo "CMBLOC $v"
	[ $((v & 7)) -eq 2 ] && [ $((v >> 12)) -eq 0 ]
}
cmb_mapped() {
	bar 2 0x1000 write cmb-in-the-guest && [ "$(bar 2 0x1000 read 16)" = cmb-in-the-guest ]
}
step "CMBSZ: 16 MiB (SZ 16, SZU 1 MiB), SQS CQS LISTS RDS WDS" cmbsz_16m
step "CMBLOC: BAR2 at offset 0" cmbloc_bar2
step "BAR2 is the CMB, mapped by the guest" cmb_mapped
step "set-reg CMBMSC 0 (as the driver left it)" nvme set-reg $dev --cmbmsc=0

marker="pmr-$(cat /proc/sys/kernel/random/uuid)"
step "PMRSTS.NRDY set while the PMR is disabled" bit_set 0xe08 0x100
step "set-reg PMRCTL.EN" nvme set-reg $dev --pmrctl=1
step "PMRSTS.NRDY clears" wait_for 60 bit_clear 0xe08 0x100
pmr_write() {
	bar 4 0 write "$marker" && bar 4 $((0x400000 - 4096)) write "$marker" &&
		[ "$(bar 4 0 read ${#marker})" = "$marker" ]
}
step "write the marker at the PMR's start and end through the guest's mapping" pmr_write
marker2="barrier-$(cat /proc/sys/kernel/random/uuid)"
pmr_barrier() {
	bar 4 8192 write "$marker2" && reg 0xe08 > /dev/null
}
step "a second marker, then a PMRSTS read (PMRWBM bit 1: a write barrier)" pmr_barrier
echo "$marker2" > "$out/pmr-marker2"
step "set-reg PMRCTL 0" nvme set-reg $dev --pmrctl=0
step "PMRSTS.NRDY sets: the PMR is persistent" wait_for 60 bit_set 0xe08 0x100
pmr_healthy() { [ $(($(reg 0xe08) & 0xeff)) -eq 0 ]; }
step "PMRSTS: healthy, no error" pmr_healthy
echo "$marker" > "$out/pmr-marker"
step "fio verify on the namespace" fio --name=v --filename=$ns --direct=1 --rw=randwrite \
	--bs=4k --size=8M --iodepth=8 --ioengine=libaio --verify=crc32c --do_verify=1 \
	--output=/tmp/fio.txt

# Endurance groups with nvme-cli (binary output, parsed here): group 1 in Identify, its log
# against the namespace's SMART counters after the fio run, no event in the aggregate log.
eg_identify() {
	nvme list-endgrp $dev | tee /tmp/egl.txt &&
	grep -q 'num of endurance group ids: 1' /tmp/egl.txt && grep -q '\[   0\]:0x1' /tmp/egl.txt &&
	nvme id-ctrl $dev -b > /tmp/idc.bin &&
	python3 - <<'PY'
import struct
idc = open("/tmp/idc.bin", "rb").read()
ctratt, = struct.unpack_from("<I", idc, 96)
endgidmax, = struct.unpack_from("<H", idc, 340)
print("CTRATT %#x ENDGIDMAX %d" % (ctratt, endgidmax))
assert ctratt & 0x10 and endgidmax == 1
PY
}
step "Identify: CTRATT.EGS, ENDGIDMAX 1, nvme list-endgrp lists group 1" eg_identify
eg_log() {
	nvme endurance-log $dev --group-id=1 || return 1
	nvme endurance-log $dev --group-id=1 -o binary > /tmp/eg.bin &&
	nvme smart-log $dev --namespace-id=1 -o binary > /tmp/smart.bin &&
	nvme endurance-event-agg-log $dev -o binary > /tmp/egagg.bin &&
	python3 - <<'PY'
import struct
eg = open("/tmp/eg.bin", "rb").read()
sm = open("/tmp/smart.bin", "rb").read()
agg = open("/tmp/egagg.bin", "rb").read()
wr_eg, = struct.unpack_from("<Q", eg, 112)
wr_sm, = struct.unpack_from("<Q", sm, 80)
tegcap, = struct.unpack_from("<Q", eg, 160)
duw, = struct.unpack_from("<Q", eg, 64)
print("spare %d/%d used %d host writes %d (SMART %d) DUW %d TEGCAP %d aggregate %d" %
      (eg[3], eg[4], eg[5], wr_eg, wr_sm, duw, tegcap, struct.unpack_from("<Q", agg, 0)[0]))
assert len(eg) >= 512 and eg[0] == 0 and eg[3] == 100 and eg[4] == 10 and eg[5] == sm[5]
assert wr_eg == wr_sm and wr_eg > 0 and duw >= 1 and tegcap == 64 << 20
assert struct.unpack_from("<Q", agg, 0)[0] == 0
PY
}
step "nvme endurance-log: group 1 against the namespace's SMART log, aggregate log empty" eg_log

# SQs in the CMB with a data check, in the guest: the kernel cannot (no CONFIG_PCI_P2PDMA), so the
# nvme driver lets go of the function and a small user-space driver takes it through the guest's
# own mappings of BAR0 and BAR2: admin and I/O queues, PRPs and data all in the CMB (no host
# memory is involved, so no DMA), 64 writes of 4 KiB with distinct patterns, then the reads back.
cmb_userspace_io() {
	echo "$bdf" > /sys/bus/pci/drivers/nvme/unbind || return 1
	# The driver cleared Bus Master Enable when it let go; the controller fetches nothing
	# without it, its own memory included.
	setpci -s "$bdf" COMMAND=0x0006:0x0006 || return 1
	python3 - "$res" <<'PY'
import mmap, os, struct, sys, time
res = sys.argv[1]
def bar(n):
    f = open("%s/resource%d" % (res, n), "r+b")
    return mmap.mmap(f.fileno(), os.path.getsize(f.name))
r0, cmb = bar(0), bar(2)
cba = int(open(res + "/resource").read().split("\n")[2].split()[0], 16)
def rd(o): return struct.unpack("<I", r0[o:o + 4])[0]
def wr(o, v): r0[o:o + 4] = struct.pack("<I", v & 0xffffffff)
def wr64(o, v): wr(o, v); wr(o + 4, v >> 32)
def wait(cond, what):
    t = time.time() + 30
    while not cond():
        if time.time() > t: sys.exit("timeout: " + what)
        time.sleep(0.001)
ASQ, ACQ, IOSQ, IOCQ, WBUF, RBUF = 0, 0x1000, 0x2000, 0x3000, 0x100000, 0x200000
wr(0x14, 0); wait(lambda: rd(0x1c) & 1 == 0, "CSTS.RDY 0")
wr64(0x50, 1); wr(0x54, cba >> 32); wr(0x50, 1 | 2 | cba)  # CMBMSC: CRE; CMSE, CBA (high half first)
assert rd(0x58) & 1 == 0, "CMBSTS.CBAI"
cmb[0:0x400000] = bytes(0x400000)
wr(0x24, (15 << 16) | 15); wr64(0x28, cba + ASQ); wr64(0x30, cba + ACQ)
wr(0x14, 0x460001); wait(lambda: rd(0x1c) & 1, "CSTS.RDY 1")
state = {0: [0, 0, 1, 16, ASQ, ACQ], 1: [0, 0, 1, 64, IOSQ, IOCQ]}  # tail, head, phase, depth
cid = [0]
def cmd(q, opc, nsid=0, prp1=0, c10=0, c11=0, c12=0, c13=0):
    tail, head, ph, depth, sq, cq = state[q]
    cid[0] = (cid[0] + 1) & 0xffff
    cmb[sq + tail * 64:sq + tail * 64 + 64] = struct.pack("<BBHI8xQQQIIIIII", opc, 0, cid[0],
        nsid, 0, prp1, 0, c10, c11, c12, c13, 0, 0)
    tail = (tail + 1) % depth
    wr(0x1000 + 8 * q, tail)
    wait(lambda: (struct.unpack("<H", cmb[cq + head * 16 + 14:cq + head * 16 + 16])[0] & 1) == ph,
         "CQE of opcode %#x" % opc)
    dw0, _, sqhd, sqid, c, st = struct.unpack("<IIHHHH", cmb[cq + head * 16:cq + head * 16 + 16])
    head = (head + 1) % depth
    if head == 0: ph ^= 1
    wr(0x1000 + 8 * q + 4, head)
    state[q][:3] = [tail, head, ph]
    assert c == cid[0], "cid"
    if st >> 1: sys.exit("opcode %#x status %#x" % (opc, st >> 1))
cmd(0, 0x09, c10=0x07, c11=0)                                  # one I/O queue pair
cmd(0, 0x05, prp1=cba + IOCQ, c10=(63 << 16) | 1, c11=1)       # I/O CQ in the CMB, polled
cmd(0, 0x01, prp1=cba + IOSQ, c10=(63 << 16) | 1, c11=(1 << 16) | 1)  # I/O SQ in the CMB
for i in range(64):
    cmb[WBUF + i * 4096:WBUF + (i + 1) * 4096] = bytes([(i * 7 + j) & 0xff for j in range(256)]) * 16
    cmd(1, 0x01, nsid=1, prp1=cba + WBUF + i * 4096, c10=2048 + i * 8, c12=7)
for i in range(64):
    cmd(1, 0x02, nsid=1, prp1=cba + RBUF + i * 4096, c10=2048 + i * 8, c12=7)
bad = [i for i in range(64) if cmb[RBUF + i * 4096:RBUF + (i + 1) * 4096] !=
       cmb[WBUF + i * 4096:WBUF + (i + 1) * 4096]]
print("SQs at CMB %#x: 64 writes and 64 reads of 4 KiB, %d differ" % (cba + IOSQ, len(bad)))
sys.exit(1 if bad else 0)
PY
}
step "SQs, CQs, PRPs and data in the CMB: a user-space driver writes 256 KiB and reads it back" cmb_userspace_io
guest_finish
