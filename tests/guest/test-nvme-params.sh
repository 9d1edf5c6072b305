#!/usr/bin/env bash
# Guest test: the Linux nvme driver with the module parameters that change what it sends to the device (nvme.poll_queues=2, nvme.io_queue_depth=16, nvme.sgl_threshold=1 with nvme-emu's --sgl, nvme.max_host_mem_size_mb=64) against an aio namespace: the parameters took effect, and fio verify runs through shallow interrupt-driven queues, polled queues and SGLs (jobs/nvme-params.sh).
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup nvme-params
sock=$GT_DIR/par.sock
disk=$(gt_disk disk 256M)
"$GT_TOP/build/bin/nvme-emu" --socket "$sock" --aio "$disk" --serial NVMEEMU-PAR --sgl \
	> "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2> /dev/null' EXIT
rc=1
if host_step "nvme-emu serves the function" gt_wait_sockets "$sock"; then
	"$GT_LAUNCH" --job "$GT_JOBS/nvme-params.sh" --add "$GT_FIO" --vfio-user "$sock" \
		--kernel-arg nvme.poll_queues=2 --kernel-arg nvme.io_queue_depth=16 \
		--kernel-arg nvme.sgl_threshold=1 --kernel-arg nvme.max_host_mem_size_mb=64 \
		--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
	rc=$?
	host_step "the daemon is alive after the guest" kill -0 "$daemon"
fi
gt_stop_daemon "$daemon" "$GT_DIR/daemon.log"
gt_report_with_host "$rc"
