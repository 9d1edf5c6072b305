#!/usr/bin/env bash
# Guest test: reservations with real nvme-cli, and Persist Through Power Loss across a restart of
# the daemon. nvme-emu -c config.json serves one subsystem whose namespace (an aio bdev) has a
# ptpl_file. Boot 1 (jobs/resv.sh): host A (128-bit host identifier) registers with PTPL on,
# takes Exclusive Access, checks Report. The daemon is stopped; the state file must hold the
# reservation. The daemon starts again from the same config; boot 2 (jobs/resv-ptpl.sh): a host
# without identifier (another host) is refused reads and writes with Reservation Conflict, sees
# A's registration in Report, then becomes A and releases. The second host of a subsystem with
# two controllers at once is test-two-hosts.sh.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup resv
rpc_sock=$GT_DIR/rpc.sock
truncate -s 64M "$GT_DIR/disk.img"
cat > "$GT_DIR/config.json" <<JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_aio_create", "params": {"name": "R", "filename": "$GT_DIR/disk.img", "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.2026-11.io.nvme-emu:resv", "serial_number": "NVMEEMU-RESV"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "nqn.2026-11.io.nvme-emu:resv", "namespace": {"bdev_name": "R", "ptpl_file": "$GT_DIR/ptpl.json"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.2026-11.io.nvme-emu:resv", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/nvme.sock"}}}]}]}
JSON

daemon=
start_daemon() {
	rm -f "$GT_DIR/nvme.sock"
	"$BIN/nvme-emu" -r "$rpc_sock" -c "$GT_DIR/config.json" >> "$GT_DIR/nvme-emu.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && return 0; sleep 0.1; done
	return 1
}
stop_daemon() {
	kill -TERM "$daemon" 2>/dev/null
	wait "$daemon"
}
trap 'kill $daemon 2>/dev/null' EXIT
ptpl_holds() { tr -d ' \n' < "$GT_DIR/ptpl.json" | grep -q "$1"; }

rc=1
if host_step "nvme-emu -c serves the socket" start_daemon; then
	"$GT_LAUNCH" --job "$GT_JOBS/resv.sh" --vfio-user "$GT_DIR/nvme.sock" \
		--run-dir "$GT_DIR/run1" --timeout "$GT_TIMEOUT"
	rc=$?
	host_step "nvme-emu exits cleanly" stop_daemon
	host_step "the PTPL file holds the reservation (type 2, PTPL on)" \
		ptpl_holds '"ptpl":true,"generation":1,"rtype":2,"holder":"5a5a5a5a0102030405060708090a0b0c"'
	host_step "... and A's registration" \
		ptpl_holds '"hostid":"5a5a5a5a0102030405060708090a0b0c","rkey":"0x0000000000001111"'
	if host_step "nvme-emu starts again from the same config" start_daemon; then
		"$GT_LAUNCH" --job "$GT_JOBS/resv-ptpl.sh" --vfio-user "$GT_DIR/nvme.sock" \
			--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
		rc2=$?
		[ "$rc" -ne 0 ] || rc=$rc2
		host_step "nvme-emu exits cleanly (2)" stop_daemon
		host_step "the PTPL file says PTPL off" ptpl_holds '"ptpl":false'
	fi
fi
trap - EXIT
# Both boots' checks are counted: the first run's lines go into the second's log.
if [ -f "$GT_DIR/run1/out/output.log" ]; then
	mkdir -p "$GT_DIR/run/out"
	cat "$GT_DIR/run1/out/output.log" >> "$GT_DIR/run/out/output.log"
fi
[ "$host_failed" -eq 0 ] || tail -n 30 "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
