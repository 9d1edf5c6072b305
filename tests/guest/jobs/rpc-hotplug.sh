# Guest job: controllers hot-plugged by nvme-emu's nvmf_subsystem_add_listener (QMP device_add on a QEMU manager) appear one after the other in the running guest and pass a fio verify; the last one disappears cleanly after nvmf_subsystem_remove_listener (device_del) while the others keep working.
#
# The host test drives the RPCs; the two sides meet through files in $JOB_OUT:
# the guest writes "ready"; for round N the host plugs a controller with
# serial nvme-emu-rpcN and the guest writes "usedN" (or "gone-wrong" when a
# step failed); after round 3 the host removes that listener and the guest
# writes "gone3" once the controller has left.
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
if [ "$GUEST_FAILED" -eq 0 ]; then
	serial=nvme-emu-rpc3
	absent() { ! nvme_ctrl_by_serial "$serial" > /dev/null; }
	step "$serial gone after remove_listener" wait_for 60 absent
	step "its block device $dev is gone" sh -c "! test -b '$dev'"
	# The first two are untouched: read one block of each.
	first_two_ok() {
		for d in $devs; do
			[ "$d" = "$dev" ] && continue
			dd if="$d" of=/dev/null bs=4096 count=1 iflag=direct 2> /dev/null || return 1
		done
	}
	step "the other two controllers still answer" first_two_ok
	touch "$JOB_OUT/gone3"
fi
guest_finish
