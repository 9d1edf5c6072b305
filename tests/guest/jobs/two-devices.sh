# Guest job: two QEMU NVMe controllers and a virtio-blk disk at once, each visible with its own size, the NVMe pair passing concurrent crc32c verifies.
. "$GUEST_LIB"

for s in nvme-emu-q0 nvme-emu-q1; do
	step "controller $s bound" wait_for 30 nvme_ns_by_serial "$s"
done
d0=$(nvme_ns_by_serial nvme-emu-q0)
d1=$(nvme_ns_by_serial nvme-emu-q1)
listed_both() { nvme list > /tmp/list && grep -q nvme-emu-q0 /tmp/list && grep -q nvme-emu-q1 /tmp/list; }
step "nvme list shows both" listed_both
step "two distinct namespaces ($d0, $d1)" test -n "$d0" -a -n "$d1" -a "$d0" != "$d1"
# Different sizes prove each namespace is backed by its own disk.
size_is() { [ "$(blockdev --getsize64 "$1")" = "$2" ]; }
step "$d0 is 128 MiB" size_is "$d0" 134217728
step "$d1 is 192 MiB" size_is "$d1" 201326592
step "virtio-blk /dev/vda is there" wait_for 30 test -b /dev/vda
step "/dev/vda is 64 MiB" size_is /dev/vda 67108864
# Both verifies at once: the two controllers serve I/O concurrently.
both_verify() {
	FIO_DEV=$d0 FIO_SIZE=16M fio --output-format=json --output="$JOB_OUT/verify-q0.json" \
		fio/verify-crc32c.fio &
	p0=$!
	FIO_DEV=$d1 FIO_SIZE=16M fio --output-format=json --output="$JOB_OUT/verify-q1.json" \
		fio/verify-crc32c.fio
	r1=$?
	wait $p0 && [ $r1 -eq 0 ]
}
step "fio crc32c verify on both at once" both_verify
guest_finish
