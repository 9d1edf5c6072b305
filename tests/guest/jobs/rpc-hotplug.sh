# Guest job: controllers hot-plugged by nvme-emu's nvmf_subsystem_add_listener (QMP device_add on a QEMU manager) appear one after the other in the running guest and pass a fio verify; then they disappear cleanly after nvmf_subsystem_remove_listener (device_del), last first, while the others keep working.
#
# The host test drives the RPCs; the two sides meet through files in $JOB_OUT:
# the guest writes "ready"; for round N the host plugs a controller with
# serial nvme-emu-rpcN and the guest writes "usedN" (or "gone-wrong" when a
# step failed); after round 3 the host removes that listener and the guest
# writes "gone3" once the controller has left. With the stock QEMU 11.1.3,
# QEMU aborts right after that unplug (see tests/guest/test-rpc-hotplug.sh)
# and the guest dies with it; with a fixed QEMU the host goes on with
# controller 2 (the guest writes "gone2"), then controller 1 ("gone1").
. "$GUEST_LIB"

touch "$JOB_OUT/ready"
devs=""
for round in 1 2 3; do
	serial=nvme-emu-rpc$round
	if ! step "round $round: $serial appears after add_listener, without a reboot" \
		wait_for 60 nvme_ns_by_serial "$serial"; then
		touch "$JOB_OUT/gone-wrong"
		break
	fi
	dev=$(nvme_ns_by_serial "$serial")
	devs="$devs $dev"
	on_root_port() {
		pdev=$(readlink -f "/sys/class/nvme/$(nvme_ctrl_by_serial "$serial")/device")
		port=$(dirname "$pdev")
		[ "$(cat "$port/vendor"):$(cat "$port/device")" = 0x1b36:0x000c ]
	}
	step "round $round: it sits behind a pcie-root-port" on_root_port
	step "round $round: fio crc32c verify on $dev" env FIO_DEV="$dev" FIO_SIZE=4M \
		fio --output-format=json --output="$JOB_OUT/verify-$round.json" \
		fio/verify-crc32c.fio
	if [ "$GUEST_FAILED" -ne 0 ]; then
		touch "$JOB_OUT/gone-wrong"
		break
	fi
	touch "$JOB_OUT/used$round"
done
# gone N: controller N leaves after remove_listener; its block device goes
# with it and the controllers still plugged keep answering. Writes "goneN".
# Controllers leave last first, so N's block device is the Nth of $devs.
gone() {
	serial=nvme-emu-rpc$1
	gone_dev=$(echo $devs | cut -d ' ' -f "$1")
	absent() { ! nvme_ctrl_by_serial "$serial" > /dev/null; }
	step "$serial gone after remove_listener" wait_for 60 absent
	step "its block device $gone_dev is gone" sh -c "! test -b '$gone_dev'"
	left=""
	for d in $devs; do
		[ "$d" = "$gone_dev" ] || left="$left $d"
	done
	devs=$left
	# The ones still plugged are untouched: read one block of each.
	others_ok() {
		for d in $devs; do
			dd if="$d" of=/dev/null bs=4096 count=1 iflag=direct 2> /dev/null || return 1
		done
	}
	[ -z "$devs" ] || step "the controllers still plugged ($(echo $devs)) answer" others_ok
	if [ "$GUEST_FAILED" -ne 0 ]; then
		touch "$JOB_OUT/gone-wrong"
		return 1
	fi
	touch "$JOB_OUT/gone$1"
}
if [ "$GUEST_FAILED" -eq 0 ]; then
	gone 3 && gone 2 && gone 1
fi
guest_finish
