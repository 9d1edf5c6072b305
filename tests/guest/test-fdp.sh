#!/usr/bin/env bash
# Guest test: Flexible Data Placement (the job: tests/guest/jobs/fdp.sh). nvme-emu --fdp 2:1M
# makes the namespace a placement bdev over an aio file; the guest runs nvme fdp configs / usage
# / status / update / set-events / events / stats and writes a marker with each placement handle
# (nvme write --dir-type 2 --dir-spec N). The host then reads the base file: through the map the
# file holds, LBA 0 (handle 0) and LBA 4096 (handle 1) are in two different reclaim units, each
# holding its marker; save_config keeps bdev_fdp_create and fdp_ruh.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup fdp
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --aio "$GT_DIR/base.img:64M" \
	--fdp 2:1M --serial NVMEEMU-FDP > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null' EXIT
rc=1
if host_step "nvme-emu serves the socket" gt_wait_sockets "$GT_DIR/nvme.sock"; then
	"$GT_LAUNCH" --job "$GT_JOBS/fdp.sh" --vfio-user "$GT_DIR/nvme.sock" \
		--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT"
	rc=$?
	host_step "save_config keeps bdev_fdp_create (2 handles, 1 MiB units) and fdp_ruh" sh -c "
		'$BIN/nvme-emu-rpc' -s '$GT_DIR/rpc.sock' save_config | tr -d ' \n' > '$GT_DIR/saved.json' &&
		grep -q '\"method\":\"bdev_fdp_create\"' '$GT_DIR/saved.json' &&
		grep -q '\"num_ruh\":2' '$GT_DIR/saved.json' && grep -q '\"ru_size\":1048576' '$GT_DIR/saved.json' &&
		grep -q '\"fdp_ruh\":2' '$GT_DIR/saved.json'"
	host_step "the guest wrote its markers" test -f "$GT_DIR/run/out/written"
	host_step "in the base file each handle's marker is in a reclaim unit of its own" python3 - "$GT_DIR/base.img" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
sb = f.read(512)
assert sb[:16] == b"NVMEEMU-FDP-MAP1", sb[:16]
rub, nru, nblocks, map_off, _, data_off = struct.unpack_from("<6Q", sb, 32)
def phys(lba):
    f.seek(map_off * 512 + lba * 8)
    e = struct.unpack("<Q", f.read(8))[0]
    assert e, "LBA %d unmapped" % lba
    return e - 1
units = []
for lba, marker in ((0, b"FDP-HANDLE-0-MARKER"), (4096, b"FDP-HANDLE-1-MARKER")):
    p = phys(lba)
    f.seek((data_off + p) * 512)
    assert f.read(len(marker)) == marker, "LBA %d: no marker at block %d" % (lba, p)
    units.append(p // rub)
    print("LBA %d (handle %d) at block %d, reclaim unit %d" % (lba, len(units) - 1, p, p // rub))
assert units[0] != units[1], units
PY
	kill -TERM "$daemon"
	wait "$daemon" 2> /dev/null
	trap - EXIT
fi
[ "$host_failed" -eq 0 ] || tail -n 30 "$GT_DIR/daemon.log"
gt_report_with_host "$rc"
