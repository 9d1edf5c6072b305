#!/usr/bin/env bash
# Guest test: SPDK's bdev_error and bdev_delay under a namespace of a running guest: an injected
# NVMe status reaches nvme-cli exactly, and an injected latency is felt by the guest's reads;
# then the SMART / Health injections (nvmf_emu_set_health, nvmf_emu_inject_media_error) as
# nvme smart-log and nvme read see them.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup error-inject
rpc() { "$BIN/nvme-emu-rpc" -s "$GT_DIR/rpc.sock" -t 60 "$@" > /dev/null; }
out=$GT_DIR/run/out
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --malloc 64M \
	--serial NVMEEMU-ERR > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/error-inject.sh" --vfio-user "$GT_DIR/nvme.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher $daemon 2>/dev/null' EXIT
if host_step "the guest is ready" quiet_wait 120 ready; then
	host_step "Malloc1, Delay1 over it, EE_Delay1 over that, as namespace 2" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc bdev_malloc_create --name Malloc1 --num_blocks 8192 --block_size 512 &&
		rpc bdev_delay_create --base_bdev_name Malloc1 --name Delay1 --avg_read_latency 0 \
			--p99_read_latency 0 --avg_write_latency 0 --p99_write_latency 0 &&
		rpc bdev_error_create --base_name Delay1 &&
		rpc nvmf_subsystem_add_ns --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ERR \
			--namespace.bdev_name EE_Delay1 --namespace.nsid 2"
fi
if host_step "the guest sees namespace 2" quiet_wait 90 seen; then
	host_step "bdev_error_inject_error read nvme_failure 2/0x81" rpc bdev_error_inject_error \
		--name EE_Delay1 --io_type read --error_type nvme_failure --nvme_sct 2 --nvme_sc 129
	touch "$out/injected"
fi
if host_step "the guest read" quiet_wait 90 read-done; then
	host_step "bdev_delay_update_latency avg_read/p99_read 20000 us" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc bdev_delay_update_latency --delay_bdev_name Delay1 --latency_type avg_read --latency_us 20000 &&
		rpc bdev_delay_update_latency --delay_bdev_name Delay1 --latency_type p99_read --latency_us 20000"
	touch "$out/delayed"
fi
if host_step "the guest felt the delay" quiet_wait 90 slow-done; then
	host_step "nvmf_emu_set_health 95 C, spare 3 %; a bad block at LBA 100 of namespace 1" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc nvmf_emu_set_health --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ERR --temperature_c 95 \
			--available_spare 3 &&
		rpc nvmf_emu_inject_media_error --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ERR --nsid 1 \
			--lba 100 --num_blocks 1"
	touch "$out/health"
fi
wait "$launcher"
rc=$?
gt_report_with_host $rc
