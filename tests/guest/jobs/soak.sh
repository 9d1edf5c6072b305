# Guest job of the soak test (tests/guest/test-soak.sh): fio verify, time based, on every
# static nvme-emu controller at once (serials in soak.conf); when VICTIM is set, the controller
# with that serial is meanwhile reset (nvme reset) and function-level reset (sysfs) in a loop,
# while the host hot-unplugs and re-plugs it. The two sides meet through files in $JOB_OUT:
# "ready" when the static controllers are bound, "soak-done" at the end.
. "$GUEST_LIB"
. ./soak.conf

devs=""
for s in $SERIALS; do
	step "controller $s bound" wait_for 60 nvme_ns_by_serial "$s"
	devs="$devs $(nvme_ns_by_serial "$s")"
done
touch "$JOB_OUT/ready"

# The victim's loop: whatever the host does to it, the guest keeps resetting it while present.
victim_loop() {
	local end=$(($(date +%s) + RUNTIME)) resets=0 flrs=0 c pci
	while [ "$(date +%s)" -lt "$end" ]; do
		if c=$(nvme_ctrl_by_serial "$VICTIM" 2> /dev/null); then
			nvme reset "/dev/$c" > /dev/null 2>&1 && resets=$((resets + 1))
			pci=$(readlink -f "/sys/class/nvme/$c/device" 2> /dev/null)
			[ -n "$pci" ] && echo 1 > "$pci/reset" 2> /dev/null && flrs=$((flrs + 1))
		fi
		sleep 1
	done
	echo "$resets $flrs" > "$JOB_OUT/victim-counts"
}
[ -n "${VICTIM:-}" ] && { victim_loop & vpid=$!; }

pids=""
i=0
for d in $devs; do
	FIO_DEV=$d FIO_SIZE=16M FIO_RUNTIME=$RUNTIME fio --output-format=json \
		--output="$JOB_OUT/soak-$i.json" fio/soak-verify.fio > /dev/null 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
i=0
for p in $pids; do
	step "fio verify on $(echo $devs | cut -d ' ' -f $((i + 1))): no error, no mismatch" wait "$p"
	i=$((i + 1))
done
[ -n "${VICTIM:-}" ] && wait "$vpid"
touch "$JOB_OUT/soak-done"
guest_finish
