#!/usr/bin/env bash
# Guest test: a zoned file system survives SIGKILL of the daemon (issue 33). nvme-emu serves a
# conventional namespace and a zoned one (bdev_zone_block_create over an aio file, with a zone
# state file), both on files. The first boot makes f2fs across them (mkfs.f2fs -m -c), mounts it
# and writes numbered files, syncing each and publishing the last synced one, with fio writing
# beside them; the host kills the daemon with SIGKILL in the middle, stops that guest, starts the
# daemon again on the same files and boots a second guest: fsck.f2fs must find the file system
# clean and every file synced before the kill must be whole.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup zoned-fs
bin=$GT_TOP/build/bin/nvme-emu
sock=$GT_DIR/nvme.sock
cfg=$GT_DIR/config.json
meta=$(gt_disk meta 256M)
zimg=$(gt_disk zoned 512M)
cat > "$cfg" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[
 {"method":"bdev_aio_create","params":{"name":"meta","filename":"$meta","block_size":4096}},
 {"method":"bdev_aio_create","params":{"name":"zbase","filename":"$zimg","block_size":4096}},
 {"method":"bdev_zone_block_create","params":{"name":"z0","base_bdev":"zbase",
  "zone_capacity":4096,"optimal_open_zones":1,"state_file":"$GT_DIR/zoned.state"}}]},
 {"subsystem":"nvmf","config":[
 {"method":"nvmf_create_transport","params":{"trtype":"PCIE_EMU"}},
 {"method":"nvmf_create_subsystem","params":{"nqn":"nqn.2026-11.io.nvme-emu:zfs",
  "serial_number":"NVMEEMU-ZFS"}},
 {"method":"nvmf_subsystem_add_ns","params":{"nqn":"nqn.2026-11.io.nvme-emu:zfs",
  "namespace":{"bdev_name":"meta","nsid":1}}},
 {"method":"nvmf_subsystem_add_ns","params":{"nqn":"nqn.2026-11.io.nvme-emu:zfs",
  "namespace":{"bdev_name":"z0","nsid":2}}},
 {"method":"nvmf_subsystem_add_listener","params":{"nqn":"nqn.2026-11.io.nvme-emu:zfs",
  "listen_address":{"trtype":"PCIE_EMU","traddr":"$sock"}}}]}]}
JSON
start_daemon() {
	rm -f "$sock"
	"$bin" -c "$cfg" -r "$GT_DIR/rpc.sock" -m 2 >> "$GT_DIR/daemon.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	[ -S "$sock" ]
}
launcher=
trap 'kill -9 ${daemon:-} 2> /dev/null; [ -n "$launcher" ] && kill $launcher 2> /dev/null' EXIT
out=$GT_DIR/run/out
host_step "the daemon serves the two namespaces" start_daemon || {
	tail -n 20 "$GT_DIR/daemon.log"; exit 1; }
"$GT_LAUNCH" --job "$GT_JOBS/zoned-fs-1.sh" --vfio-user "$sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" --quiet &
launcher=$!
killed=0
if host_step "f2fs is made and synced files flow" quiet_wait "$GT_TIMEOUT" ready; then
	sleep 5 # more files, and fio writing zones
	host_step "the daemon is alive before the kill" kill -0 "$daemon"
	kill -9 "$daemon"
	wait "$daemon" 2> /dev/null
	killed=1
fi
synced=$(cat "$out/synced" 2> /dev/null || echo 0)
kill "$launcher" 2> /dev/null
wait "$launcher" 2> /dev/null
launcher=
cp "$out/output.log" "$GT_DIR/first-boot.log" 2> /dev/null
grep -E '^(ok|not ok) - ' "$GT_DIR/first-boot.log" 2> /dev/null | sed 's/^/first boot: /'
first_failed=$(grep -c '^not ok - ' "$GT_DIR/first-boot.log" 2> /dev/null)
host_failed=$((host_failed + ${first_failed:-0}))
devices=$(cat "$out/devices" 2> /dev/null)
rc=1
if [ "$killed" -eq 1 ]; then
	echo "files synced before the kill: $synced"
	host_step "the daemon starts again on the same files" start_daemon
	{ echo "ZFS_SYNCED=$synced ZFS_DEVICES='$devices'"; cat "$GT_JOBS/zoned-fs-2.sh"; } \
		> "$GT_DIR/zoned-fs-2.sh"
	"$GT_LAUNCH" --job "$GT_DIR/zoned-fs-2.sh" --vfio-user "$sock" \
		--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
	launcher=$!
	wait "$launcher"
	rc=$?
	launcher=
fi
kill -9 "$daemon" 2> /dev/null
trap - EXIT
[ "$host_failed" -eq 0 ] || { echo "--- nvme-emu log tail"; tail -n 20 "$GT_DIR/daemon.log"; }
gt_report_with_host $rc
