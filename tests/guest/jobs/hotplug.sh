# Guest job: an NVMe controller hot-added through QMP appears and works, then disappears when hot-removed.
#
# The host test drives QMP; the two sides meet through files in $JOB_OUT:
# the guest writes "ready" (checked the slot is empty), the host hot-adds;
# the guest writes "added" (or "gone-wrong" when a step failed), the host
# hot-removes; the guest waits for the device to go and finishes.
. "$GUEST_LIB"

serial=nvme-emu-hp0
absent() { ! nvme_ctrl_by_serial "$serial" > /dev/null; }
step "no $serial before the hot-add" absent
touch "$JOB_OUT/ready"

if step "$serial appears after device_add" wait_for 150 nvme_ns_by_serial "$serial"; then
	dev=$(nvme_ns_by_serial "$serial")
	# Its PCI parent is a QEMU pcie-root-port (1b36:000c) on the root bus.
	on_root_port() {
		pdev=$(readlink -f "/sys/class/nvme/$(nvme_ctrl_by_serial "$serial")/device")
		port=$(dirname "$pdev")
		echo "$pdev"
		[ "$(cat "$port/vendor"):$(cat "$port/device")" = 0x1b36:0x000c ]
	}
	step "it sits behind a pcie-root-port" on_root_port
	step "nvme list shows $serial" sh -c "nvme list | grep -q $serial"
	step "fio crc32c verify on the hot-added $dev" env FIO_DEV="$dev" FIO_SIZE=8M \
		fio --output-format=json --output="$JOB_OUT/verify-hotplug.json" fio/verify-crc32c.fio
fi
if [ "$GUEST_FAILED" -eq 0 ]; then
	touch "$JOB_OUT/added"
	step "$serial gone after device_del" wait_for 150 absent
	step "its block device is gone" sh -c "! test -b '$dev'"
else
	touch "$JOB_OUT/gone-wrong"
fi
guest_finish
