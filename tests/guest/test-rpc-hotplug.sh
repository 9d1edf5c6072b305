#!/usr/bin/env bash
# Guest test: nvme-emu configured by JSON-RPC hot-plugs three controllers one after the other into a running guest (QEMU manager: QMP device_add into empty root ports; fio verify on each) and unplugs them (nvmf_subsystem_remove_listener: device_del, the guest releases it): the last one with the stock QEMU, all three with a QEMU carrying patches/qemu/.
#
# QEMU 11.1.3 aborts when it finalizes a vfio-user-pci device that has MSI-X
# (hw/vfio-user/pci.c vfio_user_msix_teardown() deletes the PBA subregion from
# a BAR region already finalized: "memory_region_del_subregion: Assertion
# `subregion->container == mr' failed"; upstream discussion "vfio-user: do not
# remove PBA region", qemu-devel, Oct 2025). It does so after the guest has
# released the device, so DEVICE_DELETED never comes and the guest dies with
# QEMU. That is why, with the stock QEMU, only the last controller is
# unplugged, and why the host accepts that exact abort (and nothing else) in
# place of DEVICE_DELETED.
#
# With a QEMU that has our fix (patches/qemu/0001-*.patch): NVME_EMU_QEMU=PATH,
# or, when that is unset, the build `make qemu-patched` or `make qemu-binfix` left in the cache
# (qemu-configs/build-qemu.sh --print-path; NVME_EMU_QEMU= set empty keeps the
# stock one), the abort is not excused and all
# three controllers are unplugged, last first, the guest checking each time
# that the unplugged one is gone and the others still answer.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup rpc-hotplug
rpc_sock=$GT_DIR/rpc.sock
qmp_sock=$GT_DIR/qmp.sock
QEMU_BUG='memory_region_del_subregion: Assertion .subregion->container == mr. failed'
gt_fixed_qemu
if [ "$qemu_fixed" = 1 ]; then
	echo "QEMU with the vfio-user-pci finalize fix: $NVME_EMU_QEMU (unplugging all three)"
fi
rpc() { "$BIN/nvme-emu-rpc" -s "$rpc_sock" -t 90 "$@"; }

gt_hotplug_start "$GT_JOBS/rpc-hotplug.sh"


# plug N: bdev, subsystem, namespace and a listener on the QEMU manager.
plug() {
	local n=$1 nqn=nqn.2026-11.io.nvme-emu:hp$1
	rpc bdev_malloc_create --name "HP$n" --num_blocks 16384 --block_size 512 > /dev/null &&
		rpc nvmf_create_subsystem --nqn "$nqn" --serial_number "nvme-emu-rpc$n" &&
		rpc nvmf_subsystem_add_ns --nqn "$nqn" --namespace.bdev_name "HP$n" > /dev/null &&
		rpc nvmf_subsystem_add_listener --nqn "$nqn" --manager qemu0 \
			--listen_address.trtype PCIE_EMU --listen_address.traddr "$GT_DIR/fn$n.sock"
}

# unplug N: remove_listener (device_del, wait for DEVICE_DELETED).
unplug() {
	rpc nvmf_subsystem_remove_listener --nqn "nqn.2026-11.io.nvme-emu:hp$1" \
		--listen_address.trtype PCIE_EMU --listen_address.traddr "$GT_DIR/fn$1.sock"
}

# unplug 3. Succeeds, or, with the stock QEMU only, fails because QEMU hit the
# finalize abort described above. Sets unplugged_cleanly when it succeeded.
unplugged_cleanly=0
unplug_last() {
	local msg
	if msg=$(unplug 3 2>&1); then
		unplugged_cleanly=1
		return 0
	fi
	echo "remove_listener: $msg"
	[ "$qemu_fixed" -eq 0 ] || return 1
	wait "$launcher" 2> /dev/null
	grep -q 'the guest had released it' <<< "$msg" &&
		grep -Eq "$QEMU_BUG" "$GT_DIR/run/qemu.log" &&
		echo "the guest released the device, then QEMU aborted in vfio-user-pci finalize" \
			"(known QEMU bug)"
}

# no_listener N: nvmf_get_subsystems shows no listener left on hpN.
no_listener() {
	host_step "nvmf_get_subsystems: no listener left on hp$1" sh -c \
		"'$BIN/nvme-emu-rpc' -s '$rpc_sock' nvmf_get_subsystems --nqn nqn.2026-11.io.nvme-emu:hp$1 | tr -d ' \n' | grep -q '\"listen_addresses\":\[\]'"
}

if host_step "guest job started" quiet_wait "$GT_TIMEOUT" ready &&
	host_step "transport and QEMU manager" sh -c "
		'$BIN/nvme-emu-rpc' -s '$rpc_sock' nvmf_create_transport --trtype PCIE_EMU &&
		'$BIN/nvme-emu-rpc' -s '$rpc_sock' nvmf_emu_create_manager --name qemu0 \
			--qmp_socket '$qmp_sock' --hotplug_ports '[\"hp0\", \"hp1\", \"hp2\"]'"; then
	for n in 1 2 3; do
		host_step "round $n: add_listener hot-plugs the controller" plug "$n" || break
		host_step "round $n: the function sits on port hp$((n - 1))" sh -c \
			"'$BIN/nvme-emu-rpc' -s '$rpc_sock' nvmf_emu_list_functions | grep -q '\"bus\": \"hp$((n - 1))\"'"
		seen=$(gt_wait_file "$GT_TIMEOUT" "used$n" gone-wrong)
		host_step "round $n: the guest found it and verified it" test "$seen" = "used$n" ||
			break
	done
	if [ "$host_failed" -eq 0 ]; then
		host_step "remove_listener unplugs the third" unplug_last
		host_step "its socket is closed" test ! -e "$GT_DIR/fn3.sock"
		no_listener 3
	fi
	# QEMU survived the first unplug: the other two go as well, one at a time,
	# each after the guest has seen the previous one leave.
	if [ "$host_failed" -eq 0 ] && [ "$unplugged_cleanly" -eq 1 ]; then
		for n in 2 1; do
			seen=$(gt_wait_file "$GT_TIMEOUT" "gone$((n + 1))" gone-wrong)
			host_step "the guest saw controller $((n + 1)) leave" \
				test "$seen" = "gone$((n + 1))" || break
			host_step "remove_listener unplugs controller $n" unplug "$n" || break
			host_step "its socket is closed" test ! -e "$GT_DIR/fn$n.sock"
			no_listener "$n"
		done
	fi
fi

[ "$host_failed" -eq 0 ] || kill "$launcher" 2>/dev/null
wait "$launcher"
rc=$?
# Only the known QEMU abort, and only with the stock QEMU, excuses the
# launcher's status.
if [ "$rc" -ne 0 ] && [ "$host_failed" -eq 0 ] && [ "$qemu_fixed" -eq 0 ] &&
	grep -Eq "$QEMU_BUG" "$GT_DIR/run/qemu.log" 2> /dev/null; then
	rc=0
fi
gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
