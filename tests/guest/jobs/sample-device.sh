# Guest job: the hw/ sample device (a generic, non-NVMe PCI type) attached
# over vfio-user is enumerated with its IDs, class, BAR size and MSI-X cap.
. "$GUEST_LIB"

find_sample() {
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x4e58 ] && [ "$(cat "$d/device")" = 0x00a0 ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}
step "sample device 4e58:00a0 enumerated" wait_for 20 find_sample
bdf=$(find_sample)
sys=/sys/bus/pci/devices/$bdf
echo "sample device at $bdf"
step "class 0xff0000" sh -c "[ \$(cat $sys/class) = 0xff0000 ]"
bar0_size() { set -- $(head -n1 "$sys/resource"); echo $(( $2 - $1 + 1 )); }
echo "BAR0 size $(bar0_size)"
step "BAR0 is 32 KiB" sh -c "[ $(bar0_size) -eq 32768 ]"
step "BAR0 is 64-bit memory" sh -c "lspci -s $bdf -v | grep -q 'Memory at .*64-bit'"
lspci -s "$bdf" -vv
step "MSI-X capability with 8 vectors" sh -c "lspci -s $bdf -vv | grep -q 'MSI-X: Enable. Count=8'"
step "PCI Express capability with FLR" sh -c "lspci -s $bdf -vv | grep -q 'FLReset+'"
step "no legacy interrupt pin" sh -c "[ \$(cat $sys/irq) -eq 0 ] || ! lspci -s $bdf -vv | grep -q 'Interrupt: pin'"
guest_finish
