#!/usr/bin/env bash
# Guest test: the Controller Memory Buffer and the Persistent Memory Region with the real driver
# and nvme-cli (the job: tests/guest/jobs/cmb-pmr.sh). nvme-emu -c config.json serves one
# subsystem made with cmb_size_mib 16 and a 4 MiB pmr_file. The guest enables the PMR, writes a
# marker through its own mapping of BAR4, disables it and waits for PMRSTS.NRDY; then the daemon
# is killed with SIGKILL (no clean stop, no last flush) and the marker must be in the PMR file.
# The same guest checks the endurance group with nvme-cli (list-endgrp, endurance-log), then
# unbinds the driver and runs I/O with its SQs, CQs, PRPs and data in the CMB from user space.
# The guest kernel boots with iomem=relaxed: Debian's IO_STRICT_DEVMEM refuses mappings of BARs
# a driver holds (nvme-cli's show-regs and set-reg map BAR0 the same way).
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup cmb-pmr
nqn=nqn.2026-11.io.nvme-emu:cmb
cat > "$GT_DIR/config.json" <<JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "M", "num_blocks": 131072, "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "$nqn", "serial_number": "NVMEEMU-CMB",
   "cmb_size_mib": 16, "pmr_file": "$GT_DIR/pmr.bin", "pmr_size_mib": 4}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$nqn", "namespace": {"bdev_name": "M"}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$nqn", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/nvme.sock"}}}]}]}
JSON

"$BIN/nvme-emu" -r "$GT_DIR/rpc.sock" -c "$GT_DIR/config.json" >> "$GT_DIR/nvme-emu.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
rc=1
if host_step "nvme-emu -c serves the socket" gt_wait_sockets "$GT_DIR/nvme.sock"; then
	"$GT_LAUNCH" --job "$GT_JOBS/cmb-pmr.sh" --vfio-user "$GT_DIR/nvme.sock" \
		--kernel-arg iomem=relaxed --run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
	rc=$?
	host_step "save_config keeps the CMB and the PMR" sh -c "
		'$BIN/nvme-emu-rpc' -s '$GT_DIR/rpc.sock' save_config | tr -d ' \n' > '$GT_DIR/saved.json' &&
		grep -q '\"cmb_size_mib\":16' '$GT_DIR/saved.json' &&
		grep -q '\"pmr_size_mib\":4' '$GT_DIR/saved.json' && grep -q 'pmr.bin' '$GT_DIR/saved.json'"
	kill -KILL "$daemon"
	wait "$daemon" 2> /dev/null
	trap - EXIT
	marker=$(cat "$GT_DIR/run/out/pmr-marker" 2> /dev/null)
	host_step "the guest wrote a marker" test -n "$marker"
	host_step "after SIGKILL the PMR file holds it at the start and the end" sh -c "
		[ \"\$(head -c ${#marker} '$GT_DIR/pmr.bin')\" = '$marker' ] &&
		[ \"\$(tail -c 4096 '$GT_DIR/pmr.bin' | head -c ${#marker})\" = '$marker' ]"
	marker2=$(cat "$GT_DIR/run/out/pmr-marker2" 2> /dev/null)
	host_step "... and the marker the PMRSTS read made persistent" sh -c "
		[ -n '$marker2' ] &&
		[ \"\$(dd if='$GT_DIR/pmr.bin' bs=1 skip=8192 count=${#marker2} 2> /dev/null)\" = '$marker2' ]"
fi
[ "$host_failed" -eq 0 ] || tail -n 30 "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
