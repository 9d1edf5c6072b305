#!/usr/bin/env bash
# Guest test: one RBD image exported by two nvme-emu daemons (two "DPUs", as two hosts would each
# run one) with shared_reservations: the reservation state is one RADOS object both daemons change
# (a throwaway cluster started here). The guest gets a function of each daemon: one subsystem NQN,
# CNTLIDs 1 (daemon A) and 2 (daemon B), one namespace with the same identifiers on both, so
# Linux joins them into one subsystem with two paths, and each controller plays a host with its
# own Host Identifier. The CNTLIDs come from the cluster (daemon A starts first: 1, then B: 2),
# not from any per-daemon range. nvme-cli registers, acquires, reports, conflicts and releases across the
# two daemons, and B preempts A (with abort) while A keeps writing through daemon A
# (jobs/shared-resv.sh). The host reads the image with rbd export: B's marker, and B's blocks where
# A's write loop ran (none of A's writes landed after B's preempt); then B's daemon, killed with
# SIGKILL and started again, finds the state, and the record in RADOS is checked.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
NQN=nqn.2026-11.io.nvme-emu:shared-resv
gt_setup shared-resv
gt_ceph_start
# Layering only: exclusive-lock would make the two daemons take turns at every write.
rbd create --size 64M --image-feature layering rbd/shared || { gt_ceph_stop; echo "0 passed, 1 failed"; exit 1; }
# config NAME: daemon NAME's configuration (the default CNTLID range: the cluster allocates).
config() {
	cat << JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_rbd_create", "params": {"name": "R", "pool_name": "rbd", "rbd_name": "shared", "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "$NQN", "serial_number": "NVMEEMU-SHARED"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$NQN", "namespace": {"bdev_name": "R", "nsid": 1, "shared_reservations": true}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$NQN", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/$1.sock"}}}]}]}
JSON
}
config a > "$GT_DIR/a.json"
config b > "$GT_DIR/b.json"
start() { "$BIN/nvme-emu" -r "$GT_DIR/$1.rpc" -c "$GT_DIR/$1.json" >> "$GT_DIR/nvme-emu-$1.log" 2>&1 & }
start a
da=$!
gt_wait_sockets "$GT_DIR/a.sock"
start b
db=$!
launcher=
trap 'kill $launcher $da $db 2>/dev/null; gt_ceph_stop' EXIT
rpc() { "$BIN/nvme-emu-rpc" -s "$GT_DIR/$1.rpc" "${@:2}"; }
rc=1
sockets_up() { gt_wait_sockets "$GT_DIR/a.sock" "$GT_DIR/b.sock"; }
if host_step "two daemons serve the image's namespace (CNTLIDs 1 and 2)" sockets_up; then
	"$GT_LAUNCH" --job "$GT_JOBS/shared-resv.sh" --add "$GT_FIO" --vfio-user "$GT_DIR/a.sock" \
		--vfio-user "$GT_DIR/b.sock" --run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
	launcher=$!
	wait "$launcher"
	rc=$?
	launcher=
	host_step "the marker host B wrote through daemon B is in the image (rbd export)" sh -c \
		"rbd export rbd/shared '$GT_DIR/img' > /dev/null 2>&1 &&
		 dd if='$GT_DIR/img' bs=512 skip=4096 count=1 status=none | grep -q 'written by host B'"
	host_step "blocks 8192-8199 in the image hold B's data, none of A's write loop (rbd export)" bash -c \
		"dd if='$GT_DIR/img' bs=512 skip=8192 count=8 status=none | cmp - <(head -c 4096 /dev/zero | tr '\\0' b)"
	host_step "save_config of daemon A keeps shared_reservations" sh -c \
		"$BIN/nvme-emu-rpc -s $GT_DIR/a.rpc save_config | tr -d ' \n' | grep -q '\"shared_reservations\":true'"
	# Daemon B dies; started again it reads the state from the cluster: the guest left B
	# registered with key 0xb2 (jobs/shared-resv.sh's last step), nothing is held.
	kill -9 "$db"
	wait "$db" 2> /dev/null
	start b
	db=$!
	host_step "daemon B killed with SIGKILL and started again" gt_wait_sockets "$GT_DIR/b.sock"
	host_step "the record in RADOS: B's key 0xb2 registered, no reservation" sh -c \
		"id=\$(rbd info rbd/shared --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"id\"])') &&
		 rados -p rbd get nvme-emu.resv.\$id '$GT_DIR/record' && tr -d ' \n' < '$GT_DIR/record' |
		 grep -q '\"rtype\":0,' && grep -q '0x00000000000000b2' '$GT_DIR/record'"
fi
gt_stop_daemon "$db" "$GT_DIR/nvme-emu-b.log"
gt_stop_daemon "$da" "$GT_DIR/nvme-emu-a.log"
gt_ceph_stop
gt_report_with_host "$rc"
