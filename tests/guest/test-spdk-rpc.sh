#!/usr/bin/env bash
# Guest test: the compliance job of test-nvme-emu.sh (nvme-cli, fio verify, ext4, discard, reset,
# FLR, Write Uncorrectable, Copy...) on a function created entirely with SPDK's own rpc.py,
# unchanged, the SPDK way: an aio bdev, the VFIOUSER transport, a subsystem, a namespace and a
# VFIOUSER listener whose socket is <dir>/cntrl, the path QEMU command lines written for SPDK
# use. Skips (0 passed, 0 failed) when SPDK's rpc.py is not beside the checkout
# (../shared/spdk-rpc) nor in $SPDK_RPC_DIR.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

SPDK=${SPDK_RPC_DIR:-$GT_TOP/../shared/spdk-rpc}
if [ ! -f "$SPDK/scripts/rpc.py" ]; then
	echo "skipped: SPDK's rpc.py is not at $SPDK (set SPDK_RPC_DIR)"
	echo "0 passed, 0 failed"
	exit 0
fi
gt_setup spdk-rpc
sock=$GT_DIR/rpc.sock
disk=$GT_DIR/disk.img
nqn=nqn.2016-06.io.spdk:cnode1
truncate -s 256M "$disk"
"$GT_TOP/build/bin/nvme-emu" -r "$sock" > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2> /dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
rpc() { PYTHONPATH="$SPDK/python" python3 "$SPDK/scripts/rpc.py" -s "$sock" "$@"; }
host_step "rpc.py bdev_aio_create" rpc bdev_aio_create "$disk" Aio0 512 &&
	host_step "rpc.py nvmf_create_transport -t VFIOUSER" rpc nvmf_create_transport -t VFIOUSER &&
	host_step "rpc.py nvmf_create_subsystem" rpc nvmf_create_subsystem $nqn -a -s NVMEEMU-GT1 \
		-d "nvme-emu guest test" &&
	host_step "rpc.py nvmf_subsystem_add_ns" rpc nvmf_subsystem_add_ns $nqn Aio0 &&
	host_step "rpc.py nvmf_subsystem_add_listener -t VFIOUSER -a DIR -s 0" \
		rpc nvmf_subsystem_add_listener $nqn -t VFIOUSER -a "$GT_DIR/vfu" -s 0
rc=1
if [ "$host_failed" -eq 0 ]; then
	"$GT_LAUNCH" --job "$GT_JOBS/nvme-emu.sh" --vfio-user "$GT_DIR/vfu/cntrl" \
		--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" --quiet
	rc=$?
	host_step "the daemon is alive after the guest" kill -0 "$daemon"
	host_step "rpc.py nvmf_delete_subsystem" rpc nvmf_delete_subsystem $nqn
	host_step "rpc.py spdk_kill_instance SIGTERM" rpc spdk_kill_instance SIGTERM
	wait "$daemon"
	host_step "nvme-emu exits cleanly" test $? -eq 0
fi
trap - EXIT
[ "$host_failed" -eq 0 ] || { echo "--- nvme-emu log tail"; tail -n 20 "$GT_DIR/daemon.log"; }
gt_report_with_host "$rc"
