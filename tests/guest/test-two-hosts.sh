#!/usr/bin/env bash
# Guest test: one NVM subsystem with two controllers (two listeners of nvmf_create_subsystem, from
# a save_config file), both given to one guest. Linux puts them in one subsystem with two paths
# to one shared namespace (native multipath), and each controller is a host of its own for
# reservations (its own Host Identifier): nvme-cli registers, acquires, reports, conflicts and
# preempts across them (jobs/two-hosts.sh). On the host: both controllers with their host IDs in
# nvmf_subsystem_get_controllers, both listeners kept by save_config, and the guest's marker
# written through the second controller in the backing file.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
NQN=nqn.2026-11.io.nvme-emu:two-hosts
gt_setup two-hosts
rpc_sock=$GT_DIR/rpc.sock
truncate -s 64M "$GT_DIR/disk.img"
cat > "$GT_DIR/config.json" <<JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_aio_create", "params": {"name": "S", "filename": "$GT_DIR/disk.img", "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU", "num_poll_groups": 2}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "$NQN", "serial_number": "NVMEEMU-TWO"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$NQN", "namespace": {"bdev_name": "S"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$NQN", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/a.sock"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$NQN", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/b.sock"}}}]}]}
JSON

"$BIN/nvme-emu" -r "$rpc_sock" -c "$GT_DIR/config.json" > "$GT_DIR/nvme-emu.log" 2>&1 &
daemon=$!
launcher=
trap 'kill $launcher $daemon 2>/dev/null' EXIT
sockets_up() { gt_wait_sockets "$GT_DIR/a.sock" "$GT_DIR/b.sock"; }
rpc() { "$BIN/nvme-emu-rpc" -s "$rpc_sock" "$@"; }
rc=1
if host_step "nvme-emu -c serves two listeners of one subsystem" sockets_up; then
	host_step "nvmf_get_subsystems: two listen addresses, CNTLIDs 1 and 2" sh -c \
		"$BIN/nvme-emu-rpc -s $rpc_sock nvmf_get_subsystems --nqn $NQN | tr -d ' \n' | grep -Eq '\"cntlid\":1[,}].*\"cntlid\":2[,}]'"
	"$GT_LAUNCH" --job "$GT_JOBS/two-hosts.sh" --add "$GT_FIO" --vfio-user "$GT_DIR/a.sock" \
		--vfio-user "$GT_DIR/b.sock" --run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
	launcher=$!
	# The guest writes "hostids" once both controllers have their host identifiers; the
	# host looks at them while the controllers are enabled, then writes "looked".
	if host_step "the guest set both host identifiers" quiet_wait 240 hostids; then
		ctrls=$(rpc nvmf_subsystem_get_controllers --nqn "$NQN" 2>&1 | tr -d ' \n')
		echo "$ctrls"
		host_step "get_controllers: controller 1 with host A's identifier" \
			grep -q '"cntlid":1,"hostnqn":"","hostid":"a1a1a1a1000000000000000000000001"' <<< "$ctrls"
		host_step "get_controllers: controller 2 with host B's identifier" \
			grep -q '"cntlid":2,"hostnqn":"","hostid":"b2b2b2b2000000000000000000000002"' <<< "$ctrls"
	fi
	touch "$GT_DIR/run/out/looked"
	wait "$launcher"
	rc=$?
	host_step "save_config keeps both listeners" sh -c \
		"[ \$($BIN/nvme-emu-rpc -s $rpc_sock save_config | grep -c nvmf_subsystem_add_listener) -eq 2 ]"
	host_step "the marker written through controller 2 is in the backing file (LBA 4096)" sh -c \
		"dd if=$GT_DIR/disk.img bs=512 skip=4096 count=1 status=none | grep -q 'written by host B'"
fi
gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
