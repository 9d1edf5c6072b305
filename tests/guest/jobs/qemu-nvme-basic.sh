# Guest job: QEMU's built-in NVMe device is bound by the nvme driver, listed by nvme-cli, and passes a crc32c fio verify.
. "$GUEST_LIB"

serial=nvme-emu-q0
has_serial() { nvme list | grep -q "$serial"; }
step "nvme driver bound the controller" wait_for 30 nvme_ns_by_serial "$serial"
step "nvme list shows $serial" has_serial
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
step "nvme id-ctrl $ctrl" nvme id-ctrl "$ctrl"
step "nvme id-ns $dev" nvme id-ns "$dev"
step "fio crc32c verify on $dev" env FIO_DEV="$dev" FIO_SIZE=32M \
	fio --output-format=json --output="$JOB_OUT/verify-crc32c.json" fio/verify-crc32c.fio
guest_finish
