#!/usr/bin/env bash
# Guest test (trapped doorbells, the non-default mode): one nvme-emu process started with -c (a configuration in save_config format: malloc and aio bdevs, two subsystems, two listeners) serves two controllers to one guest; fio verify on both at once; nvmf_get_stats counts their I/O.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup rpc-two
rpc_sock=$GT_DIR/rpc.sock
truncate -s 48M "$GT_DIR/b.img"
cat > "$GT_DIR/config.json" <<JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "A", "num_blocks": 65536, "block_size": 512}},
  {"method": "bdev_aio_create", "params": {"name": "B", "filename": "$GT_DIR/b.img", "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU", "num_poll_groups": 2, "doorbells": "trap"}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.2026-11.io.nvme-emu:a", "serial_number": "nvme-emu-rpc-a", "model_number": "nvme-emu rpc A"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "nqn.2026-11.io.nvme-emu:a", "namespace": {"bdev_name": "A"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.2026-11.io.nvme-emu:a", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/a.sock"}}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "nqn.2026-11.io.nvme-emu:b", "serial_number": "nvme-emu-rpc-b"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "nqn.2026-11.io.nvme-emu:b", "namespace": {"bdev_name": "B"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "nqn.2026-11.io.nvme-emu:b", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/b.sock"}}}]}]}
JSON

"$BIN/nvme-emu" -r "$rpc_sock" -c "$GT_DIR/config.json" > "$GT_DIR/nvme-emu.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
sockets_up() { gt_wait_sockets "$GT_DIR/a.sock" "$GT_DIR/b.sock"; }
rc=1
if host_step "nvme-emu -c serves two sockets" sockets_up; then
	"$GT_LAUNCH" --job "$GT_JOBS/rpc-two.sh" --add "$GT_FIO" --vfio-user "$GT_DIR/a.sock" \
		--vfio-user "$GT_DIR/b.sock" --run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
	rc=$?
	stats=$("$BIN/nvme-emu-rpc" -s "$rpc_sock" nvmf_get_stats)
	io_cmds_of() { grep -A6 "\"nqn\": \"nqn.2026-11.io.nvme-emu:$1\"" <<< "$stats" |
		sed -n 's/.*"io_cmds": \([0-9]*\).*/\1/p'; }
	host_step "nvmf_get_stats counts I/O on controller a" test "$(io_cmds_of a)" -gt 0
	host_step "nvmf_get_stats counts I/O on controller b" test "$(io_cmds_of b)" -gt 0
fi
gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
