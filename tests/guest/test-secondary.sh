#!/usr/bin/env bash
# Guest test: secondary controllers (issue 35). nvme-emu, configured over JSON-RPC with a QEMU manager, hot-plugs a primary controller with two secondaries into a running guest; nvme-cli in the guest reads primary-ctrl-caps and list-secondary, assigns VQ/VI resources and brings secondary 2 online (nvme virt-mgmt): nvme-emu hot-plugs it as a function of its own, the guest binds it with the queues and vector assigned and runs fio verify on the namespace through it; offline unplugs it again.
#
# The host checks what it sees meanwhile: the secondary's listener (its primary, its port, its
# socket), the I/O it served, the primary's state file; and, once the guest took it offline, the
# socket closed and the listener gone. The unplug needs a QEMU with the vfio-user-pci finalize fix
# (patches/qemu/, `make qemu-binfix`; see tests/guest/test-rpc-hotplug.sh): with the stock QEMU
# the guest is told (marker "stock-qemu") to leave the secondary online.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
NQN=nqn.2026-11.io.nvme-emu:secondary
gt_setup secondary
rpc_sock=$GT_DIR/rpc.sock
qmp_sock=$GT_DIR/qmp.sock
out=$GT_DIR/run/out
gt_fixed_qemu
if [ "$qemu_fixed" = 1 ]; then
	echo "QEMU with the vfio-user-pci finalize fix: $NVME_EMU_QEMU"
else
	echo "stock QEMU: the secondary is not taken offline (its unplug would abort QEMU)"
fi
rpc() { "$BIN/nvme-emu-rpc" -s "$rpc_sock" -t 90 "$@"; }

gt_hotplug_start "$GT_JOBS/secondary.sh"

# The primary: 8 I/O queue pairs, 2 secondaries sharing 6 VQ and 4 VI (3 and 2 at most each),
# its state file beside the test, hot-plugged on the QEMU manager.
setup() {
	rpc nvmf_create_transport --trtype PCIE_EMU --max_io_qpairs_per_ctrlr 8 &&
		rpc nvmf_emu_create_manager --name qemu0 --qmp_socket "$qmp_sock" \
			--hotplug_ports '["hp0", "hp1", "hp2"]' &&
		rpc bdev_malloc_create --name SEC --num_blocks 65536 --block_size 512 > /dev/null &&
		rpc nvmf_create_subsystem --nqn "$NQN" --serial_number NVMEEMU-SEC \
			--state_file "$GT_DIR/sec.state" &&
		rpc nvmf_subsystem_add_ns --nqn "$NQN" --namespace.bdev_name SEC > /dev/null &&
		rpc nvmf_subsystem_add_listener --nqn "$NQN" --manager qemu0 \
			--listen_address.trtype PCIE_EMU --listen_address.traddr "$GT_DIR/prim.sock" \
			--secondaries 2 --vq_flexible 6 --vi_flexible 4 --max_vq_per_secondary 3 \
			--max_vi_per_secondary 2
}
subsys() { rpc nvmf_get_subsystems --nqn "$NQN" | tr -d ' \n'; }
# The secondary's listener: CNTLID 2 of primary 1, on port hp1, at its socket.
sec_listener() {
	subsys | grep -Eq '"bus":"hp1","state":"live","cntlid":2,"primary_cntlid":1' &&
		test -S "$GT_DIR/prim.sock.sec2"
}
# The secondary served I/O (nvme write, and fio over the round-robin paths).
sec_io() {
	rpc nvmf_get_stats | tr -d ' \n' > "$GT_DIR/stats"
	grep -Eo '"cntlid":2,[^}]*"io_cmds":[0-9]+' "$GT_DIR/stats" | grep -Eq '"io_cmds":[1-9]'
}
state_online() {
	tr -d ' \n' < "$GT_DIR/sec.state" |
		grep -q '"secondaries":\[{"cntlid":2,"nvq":2,"nvi":1,"online":true}\]'
}
state_offline() { tr -d ' \n' < "$GT_DIR/sec.state" | grep -q '"secondaries":\[\]'; }
no_sec_listener() { ! subsys | grep -q '"primary_cntlid"'; }

if host_step "guest job started" quiet_wait "$GT_TIMEOUT" ready &&
	host_step "transport, QEMU manager, subsystem, primary with 2 secondaries" setup; then
	seen=$(gt_wait_file "$GT_TIMEOUT" online gone-wrong)
	if host_step "the guest brought secondary 2 online and used it" test "$seen" = online; then
		host_step "its listener: CNTLID 2 of primary 1, live on hp1, socket prim.sock.sec2" \
			sec_listener
		host_step "nvmf_get_stats: secondary 2 served the guest's I/O" sec_io
		host_step "the primary's state file: secondary 2 online, 2 VQ, 1 VI" state_online
		[ "$qemu_fixed" -eq 1 ] || touch "$out/stock-qemu"
		touch "$out/looked"
		if [ "$qemu_fixed" -eq 1 ]; then
			seen=$(gt_wait_file "$GT_TIMEOUT" offline gone-wrong)
			host_step "the guest took secondary 2 offline" test "$seen" = offline
			host_step "its socket is closed" test ! -e "$GT_DIR/prim.sock.sec2"
			host_step "its listener is gone" no_sec_listener
			host_step "the primary's state file: nothing assigned" state_offline
		fi
	fi
fi

[ "$host_failed" -eq 0 ] || kill "$launcher" 2> /dev/null
wait "$launcher"
rc=$?
gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
