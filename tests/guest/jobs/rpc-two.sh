# Guest job: two controllers of one nvme-emu process, configured by JSON-RPC from a save_config file, bound by the guest's nvme driver, each with its own namespace size; fio crc32c verify on both at once.
. "$GUEST_LIB"

for s in nvme-emu-rpc-a nvme-emu-rpc-b; do
	step "controller $s bound" wait_for 30 nvme_ns_by_serial "$s"
done
d0=$(nvme_ns_by_serial nvme-emu-rpc-a)
d1=$(nvme_ns_by_serial nvme-emu-rpc-b)
step "two distinct namespaces ($d0, $d1)" test -n "$d0" -a -n "$d1" -a "$d0" != "$d1"
size_is() { [ "$(blockdev --getsize64 "$1")" = "$2" ]; }
step "$d0 is 32 MiB (malloc bdev)" size_is "$d0" 33554432
step "$d1 is 48 MiB (aio bdev)" size_is "$d1" 50331648
model_is() { nvme id-ctrl "/dev/$(nvme_ctrl_by_serial "$1")" | grep -q "^mn *: $2"; }
step "model number from nvmf_create_subsystem" model_is nvme-emu-rpc-a "nvme-emu rpc A"
both_verify() {
	FIO_DEV=$d0 FIO_SIZE=8M fio --output-format=json --output="$JOB_OUT/verify-a.json" \
		fio/verify-crc32c.fio &
	p0=$!
	FIO_DEV=$d1 FIO_SIZE=8M fio --output-format=json --output="$JOB_OUT/verify-b.json" \
		fio/verify-crc32c.fio
	r1=$?
	wait $p0 && [ $r1 -eq 0 ]
}
step "fio crc32c verify on both at once" both_verify
guest_finish
