# Guest job: Flexible Data Placement with the real driver and nvme-cli (nvme-emu --fdp 2:1M on
# an aio file). The FID supported and effects log shows Features 1Dh and 1Eh with their scopes;
# nvme fdp configs shows the one configuration (2 handles, 1 MiB reclaim units),
# usage its two handles, status their RUAMW; nvme write --dir-type 2 --dir-spec 0 / 1 writes a
# marker through each handle (the host then finds each in its own reclaim unit of the base file);
# status shows each handle's unit taken by those blocks; update moves handle 1 to a fresh unit
# (status full again) and events (-E) lists the RU Not Fully Written event once set-events
# enabled it; stats counts host and media bytes; the markers read back.
. "$GUEST_LIB"

serial=NVMEEMU-FDP
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
out=$JOB_OUT
echo "controller $ctrl namespace $dev"

step "id-ctrl: CTRATT has FDPS (bit 19)" sh -c \
	"nvme id-ctrl $ctrl > /tmp/id; grep -E '^ctratt' /tmp/id; [ \$(( \$(awk '/^ctratt/ {print \$3}' /tmp/id) & 0x80000 )) -ne 0 ]"
step "get-feature 0x1d: FDP enabled in endurance group 1" sh -c \
	"nvme get-feature $ctrl -f 0x1d --cdw11=1 | tee /tmp/f; grep -Eq 'value:? *(0x)?0*1\b' /tmp/f"
step "fid-support-effects-log: 1Dh the endurance group's, 1Eh a namespace's" sh -c \
	"nvme fid-support-effects-log $ctrl -o binary > /tmp/fis; [ \$(stat -c %s /tmp/fis) -eq 1024 ] &&
	 od -An -tx4 -w4 -v /tmp/fis | sed -n '30p;31p' | tr -d ' ' | tr '\n' ' ' | tee /dev/stderr |
	 grep -q '^00800001 00100001 '"
step "fdp configs: one configuration, 2 handles, 1 MiB reclaim units" sh -c \
	"nvme fdp configs $ctrl -e 1 -o json | tee /tmp/c; tr -d ' \n' < /tmp/c > /tmp/cj;
	 grep -q '\"nruh\":2' /tmp/cj && grep -q '\"runs\":1048576' /tmp/cj"
step "fdp usage: two handles" sh -c \
	"nvme fdp usage $ctrl -e 1 -o json | tee /tmp/u; tr -d ' \n' < /tmp/u | grep -Eq '\"nruh(sd)?\":2'"
step "fdp status: both handles with a whole unit (2048 blocks)" sh -c \
	"nvme fdp status $dev -o json | tee /tmp/s; [ \$(tr -d ' \n' < /tmp/s | grep -o '\"ruamw\":2048' | wc -l) -eq 2 ]"
printf 'FDP-HANDLE-0-MARKER' > /tmp/m0
printf 'FDP-HANDLE-1-MARKER' > /tmp/m1
dd if=/dev/zero bs=4096 count=1 2> /dev/null >> /tmp/m0
dd if=/dev/zero bs=4096 count=1 2> /dev/null >> /tmp/m1
head -c 4096 /tmp/m0 > /tmp/w0
head -c 4096 /tmp/m1 > /tmp/w1
step "nvme write --dir-type 2 --dir-spec 0 at LBA 0" \
	nvme write "$dev" -s 0 -c 7 -z 4096 -d /tmp/w0 --dir-type=2 --dir-spec=0
step "nvme write --dir-type 2 --dir-spec 1 at LBA 4096" \
	nvme write "$dev" -s 4096 -c 7 -z 4096 -d /tmp/w1 --dir-type=2 --dir-spec=1
step "nvme flush" nvme flush "$dev"
step "fdp status: each handle's unit took 8 blocks" sh -c \
	"nvme fdp status $dev -o json | tee /tmp/s; [ \$(tr -d ' \n' < /tmp/s | grep -o '\"ruamw\":2040' | wc -l) -eq 2 ]"
step "fdp set-events: RU Not Fully Written on handle 1" \
	nvme fdp set-events "$dev" -p 1 -t 0 -e
step "fdp update handle 1: a fresh unit" sh -c \
	"nvme fdp update $dev -p 1 && nvme fdp status $dev -o json | tee /tmp/s;
	 [ \$(tr -d ' \n' < /tmp/s | grep -o '\"ruamw\":2048' | wc -l) -eq 1 ]"
step "fdp events -E: RU Not Fully Written of handle 1" sh -c \
	"nvme fdp events $ctrl -e 1 -E -o json | tee /tmp/e; tr -d ' \n' < /tmp/e > /tmp/ej;
	 grep -Eq '\"type\":(0|\"0x0\")' /tmp/ej && grep -Eq '\"pid\":1' /tmp/ej"
step "fdp stats: host and media bytes written 8 KiB" sh -c \
	"nvme fdp stats $ctrl -e 1 -o json | tee /tmp/st; tr -d ' \n' < /tmp/st > /tmp/stj;
	 grep -q '\"hbmw\":\"\\?8192' /tmp/stj && grep -q '\"mbmw\":\"\\?8192' /tmp/stj"
step "a write with an unknown directive type fails" sh -c \
	"! nvme write $dev -s 0 -c 7 -z 4096 -d /tmp/w0 --dir-type=1 --dir-spec=0"
step "the markers read back" sh -c \
	"nvme read $dev -s 0 -c 7 -z 4096 -d /tmp/r0 && cmp /tmp/r0 /tmp/w0 &&
	 nvme read $dev -s 4096 -c 7 -z 4096 -d /tmp/r1 && cmp /tmp/r1 /tmp/w1"
touch "$out/written"
