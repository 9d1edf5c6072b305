#!/usr/bin/env bash
# Guest test: LBA formats, metadata and end-to-end protection information with the guest's own
# nvme driver, nvme-cli and fio. The namespace sits on a file (aio bdev) so that the host can
# corrupt a block behind the guest's back: a read of it must then fail with End-to-end Guard
# Check Error. Formats: 512+8 Type 1 (16b guard), 4096+16 Type 1 (64b guard), Type 3, and back.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup pi
out=$GT_DIR/run/out
img=$(gt_disk pi 32M)
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --aio "$img" \
	--serial NVMEEMU-PI > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/pi.sh" --vfio-user "$GT_DIR/nvme.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher $daemon 2>/dev/null' EXIT

# corrupt LBA: flips one data byte of logical block LBA in the backing file. Format 1 (512 data +
# 8 metadata) stores each block in two 512-byte bdev blocks: data, then metadata and padding.
corrupt() {
	python3 - "$img" "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
off = int(sys.argv[2]) * 1024 + 100
b = os.pread(fd, 1, off)
os.pwrite(fd, bytes([b[0] ^ 0x5a]), off)
os.fsync(fd)
os.close(fd)
PY
}
if host_step "the guest wrote LBA 3000 on the PI format" quiet_wait 200 written; then
	host_step "one data byte of LBA 3000 flipped in the backing file" corrupt 3000
	touch "$out/corrupted"
fi
wait "$launcher"
rc=$?
gt_report_with_host $rc
