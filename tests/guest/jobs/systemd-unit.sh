# Guest job of test-systemd-unit.sh: a guest of the function nvme-emu@svctest.service serves from
# inside a systemd container. It registers a reservation key with Persist Through Power Loss on
# namespace 1 (the unit's stop must leave the PTPL file behind) and appends to zone 0 of the zoned
# namespace 2 (its zone state file is written at the stop); then fio verifies namespace 1 while the
# host runs `systemctl reload` with a configuration that adds namespace 3: fio goes on without an
# error, namespace 3 appears (Namespace Attribute Changed) and takes a write read back.
. "$GUEST_LIB"

serial=SVCTEST1
step "the nvme driver bound the unit's function" wait_for 60 nvme_ns_by_serial "$serial"
ctrl=$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
ns_dev() { nvme_ns_dev "$ctrl" "$1"; }
# Namespaces are found by NSID: the kernel scans them in parallel and names them in the order found.
zoned() { zdev=$(ns_dev 2) && [ "$(cat "/sys/block/${zdev#/dev/}/queue/zoned")" = host-managed ]; }
step "namespace 2 is zoned" wait_for 30 zoned
zdev=$(ns_dev 2)
step "reservation key registered with PTPL on (namespace 1)" \
	nvme resv-register "$dev" -n 1 --nrkey=0x2222 --rrega=0 --cptpl=3
step "zone append to zone 0 of namespace 2" sh -c \
	"head -c 8192 /dev/urandom > /tmp/za && nvme zns zone-append $zdev -s 0 -z 8192 -d /tmp/za"

FIO_DEV=$dev FIO_SIZE=24M fio --output-format=json --output="$JOB_OUT/verify.json" \
	fio/verify-crc32c.fio > "$JOB_OUT/fio.log" 2>&1 &
fio_pid=$!
touch "$JOB_OUT/io-started"
step "namespace 3 appears once the host reloaded the unit" wait_for 120 ns_dev 3
wait "$fio_pid"
step "fio crc32c verify on namespace 1 passed through the reload" test $? -eq 0
n3=$(ns_dev 3)
step "namespace 3 ($n3) takes a write and reads it back" sh -c \
	"head -c 65536 /dev/urandom > /tmp/w && dd if=/tmp/w of=$n3 bs=4096 oflag=direct 2>/dev/null &&
	 dd if=$n3 bs=4096 count=16 iflag=direct 2>/dev/null | cmp -s - /tmp/w"
guest_finish
