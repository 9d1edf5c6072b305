#!/usr/bin/env bash
# Guest test: two "hosts" sharing one RBD image through Ceph, each a network namespace with its
# own address on a bridge (tests/lib/netns-hosts.sh), each running its own nvme-emu daemon with
# shared_reservations and serving its own guest; the throwaway Ceph cluster listens on the
# bridge. Guest A (jobs/shared-netns-a.sh) and guest B (jobs/shared-netns-b.sh) meet through
# marker files the host relays. Shown: both daemons watch the reservation record from their own
# addresses; the namespace has the same NGUID in both guests and the controllers different
# CNTLIDs; register/acquire/report agree across the guests; a non-holder's write conflicts;
# B's Preempt and Abort stops A's running fio and none of A's writes lands afterwards (rbd
# export); A's daemon killed with SIGKILL mid-fio leaves B's state intact, and started again
# (its function hot-added to guest A by QMP) reports the same state; the image grown with rbd
# resize is seen by both guests.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"
. "$GT_TOP/tests/lib/netns-hosts.sh"

BIN=$GT_TOP/build/bin
QMP=$GT_TOP/qemu-configs/qmp.py
# Daemon B is started with flags (its subsystem's NQN is made from its serial), daemon A from a
# configuration with the same NQN: one NVM subsystem, CNTLIDs allocated through the cluster.
NQN=nqn.2026-11.io.nvme-emu:NVMEEMU-NETNS
gt_setup shared-resv-netns
da= db= la= lb=
cleanup() {
	kill $la $lb 2> /dev/null
	[ -n "$da" ] && kill -9 "$da" 2> /dev/null
	[ -n "$db" ] && kill -9 "$db" 2> /dev/null
	gt_ceph_stop
	netns_hosts_down
}
trap cleanup EXIT
trap "exit 143" TERM INT
if ! netns_hosts_up "$(($$ % 100000))" 2 2> "$GT_DIR/netns.err"; then
	echo "ok - SKIPPED: no network namespaces here: $(cat "$GT_DIR/netns.err")"
	echo "1 passed, 0 failed"
	exit 0
fi
export CEPH_ADDR=$NETNS_HOST_ADDR
gt_ceph_start
host_step "a Ceph cluster on the bridge ($CEPH_ADDR), two host namespaces" true
# Layering only: exclusive-lock would make the two daemons take turns at every write.
host_step "rbd create rbd/shared 64M" rbd create --size 64M --image-feature layering rbd/shared
img_id=$(rbd info rbd/shared --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# config NAME: daemon NAME's configuration.
config() {
	cat << JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_rbd_create", "params": {"name": "R", "pool_name": "rbd", "rbd_name": "shared", "block_size": 512}}]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "$NQN", "serial_number": "NVMEEMU-NETNS"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$NQN", "namespace": {"bdev_name": "R", "nsid": 1, "shared_reservations": true}}},
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$NQN", "listen_address": {"trtype": "PCIE_EMU", "traddr": "$GT_DIR/$1.sock"}}}]}]}
JSON
}
config a > "$GT_DIR/a.json"
# start NAME HOST: daemon NAME in host namespace HOST; its pid in $started. A from its
# configuration, B from flags.
start() {
	rm -f "$GT_DIR/$1.sock"
	if [ "$1" = a ]; then
		netns_run "$2" "$BIN/nvme-emu" -r "$GT_DIR/$1.rpc" -c "$GT_DIR/$1.json" >> "$GT_DIR/nvme-emu-$1.log" 2>&1 &
	else
		netns_run "$2" "$BIN/nvme-emu" -r "$GT_DIR/$1.rpc" --socket "$GT_DIR/$1.sock" \
			--rbd rbd/shared --shared-reservations --serial NVMEEMU-NETNS >> "$GT_DIR/nvme-emu-$1.log" 2>&1 &
	fi
	started=$!
}
start a 1
da=$started
gt_wait_sockets "$GT_DIR/a.sock"
start b 2
db=$started
# relay FROM TO FILE: waits (SECONDS) until guest FROM's job wrote FILE, then gives it to guest TO.
relay() {
	local left=$(($4 * 5))
	while [ ! -e "$GT_DIR/run-$1/out/$3" ]; do
		[ "$left" -gt 0 ] && kill -0 "$la" "$lb" 2> /dev/null || return 1
		sleep 0.2
		left=$((left - 1))
	done
	touch "$GT_DIR/run-$2/out/$3"
}
watchers() {
	rados -p rbd listwatchers "nvme-emu.resv.$img_id" > "$GT_DIR/watchers" 2>&1 && cat "$GT_DIR/watchers" &&
		grep -q "watcher=${NETNS_HOST_ADDR%.1}.2:" "$GT_DIR/watchers" &&
		grep -q "watcher=${NETNS_HOST_ADDR%.1}.3:" "$GT_DIR/watchers"
}
if host_step "daemons A and B serve the image's namespace from their own namespaces" \
	gt_wait_sockets "$GT_DIR/a.sock" "$GT_DIR/b.sock"; then
	host_step "the reservation record is watched from both hosts' addresses (rados listwatchers)" watchers
	ln -s run-a "$GT_DIR/run"
	"$GT_LAUNCH" --job "$GT_JOBS/shared-netns-a.sh" --add "$GT_JOBS/shared-netns-lib.sh" --add "$GT_FIO" --vfio-user "$GT_DIR/a.sock" \
		--qmp "$GT_DIR/qmp-a.sock" --hotplug-ports 1 --cpus 1 --quiet \
		--run-dir "$GT_DIR/run-a" --timeout $((GT_TIMEOUT * 3)) > "$GT_DIR/launch-a.log" 2>&1 &
	la=$!
	"$GT_LAUNCH" --job "$GT_JOBS/shared-netns-b.sh" --add "$GT_JOBS/shared-netns-lib.sh" --vfio-user "$GT_DIR/b.sock" --cpus 1 --quiet \
		--run-dir "$GT_DIR/run-b" --timeout $((GT_TIMEOUT * 3)) > "$GT_DIR/launch-b.log" 2>&1 &
	lb=$!
	T=$((GT_TIMEOUT * 2))
	relay a b a-holds "$T" && relay b a b-registered "$T" && relay a b a-fio-running "$T" &&
		relay b a b-preempted "$T" && relay a b a-checked "$T" && relay b a b-wero "$T" &&
		relay a a a-fio2-running "$T"
	if host_step "guest A's second fio runs (marker a-fio2-running)" test -e "$GT_DIR/run-a/out/a-fio2-running"; then
		kill -9 "$da"
		wait "$da" 2> /dev/null
		touch "$GT_DIR/run-b/out/a-killed" "$GT_DIR/run-a/out/a-killed"
		start a 1
		da=$started
		host_step "daemon A, killed with SIGKILL mid-fio, started again" gt_wait_sockets "$GT_DIR/a.sock"
		# Guest A lets go of the dead function first (its CNTLID is the new one's).
		relay a a a-old-gone "$T" &&
			host_step "its function hot-added to guest A (QMP device_add vfio-user-pci)" "$QMP" "$GT_DIR/qmp-a.sock" \
				'{"execute":"device_add","arguments":{"driver":"vfio-user-pci","id":"vfua2","bus":"hp0","socket":{"path":"'"$GT_DIR/a.sock"'","type":"unix"}}}' &&
			touch "$GT_DIR/run-a/out/a-readded"
		if relay a a a-back "$T" && relay b b b-after-kill "$T"; then
			host_step "rbd resize rbd/shared to 128M" rbd resize --size 128M rbd/shared &&
				touch "$GT_DIR/run-a/out/resized" "$GT_DIR/run-b/out/resized"
		fi
	fi
	wait "$la"
	ra=$?
	wait "$lb"
	rb=$?
	la= lb=
	for g in a b; do
		G=$(echo $g | tr a-z A-Z)
		sed -n -e "s/^ok - /ok - guest $G: /p" -e "s/^not ok - /not ok - guest $G: /p" \
			"$GT_DIR/run-$g/out/output.log" 2> /dev/null
	done
	host_step "guest B's job finished (launcher status $rb)" test "$rb" -eq 0
	# Guest B's checks count beside the host's; guest A's are the report's own (run -> run-a).
	n=$(grep -c '^ok - ' "$GT_DIR/run-b/out/output.log" 2> /dev/null)
	host_passed=$((host_passed + ${n:-0}))
	n=$(grep -c '^not ok - ' "$GT_DIR/run-b/out/output.log" 2> /dev/null)
	host_failed=$((host_failed + ${n:-0}))
	host_step "the same NGUID in both guests (derived from the image)" sh -c \
		"[ -s '$GT_DIR/run-a/out/nguid' ] && cmp '$GT_DIR/run-a/out/nguid' '$GT_DIR/run-b/out/nguid'"
	host_step "CNTLIDs 1 (A) and 2 (B) from the cluster ($(cat "$GT_DIR"/run-[ab]/out/cntlid 2> /dev/null | tr '\n' ' '))" sh -c \
		"[ \"\$(cat '$GT_DIR/run-a/out/cntlid')\" = 1 ] && [ \"\$(cat '$GT_DIR/run-b/out/cntlid')\" = 2 ]"
	host_step "the restarted daemon A took back CNTLID 1" sh -c "[ \"\$(cat '$GT_DIR/run-a/out/cntlid2')\" = 1 ]"
	rbd export rbd/shared "$GT_DIR/img" > /dev/null 2>&1
	host_step "blocks 8-16 MiB hold B's 0xbb only: none of A's fio writes landed after B's preempt (rbd export)" \
		bash -c "dd if='$GT_DIR/img' bs=1M skip=8 count=8 status=none | cmp - <(head -c 8M /dev/zero | tr '\\0' '\\273')"
	host_step "B's marker written while daemon A was down is in the image" sh -c \
		"dd if='$GT_DIR/img' bs=512 skip=4096 count=1 status=none | grep -q 'written by host B'"
fi
gt_stop_daemon "$db" "$GT_DIR/nvme-emu-b.log"
db=
gt_stop_daemon "$da" "$GT_DIR/nvme-emu-a.log"
da=
trap cleanup EXIT
trap "exit 143" TERM INT
rc=${ra:-1}
gt_report_with_host "$rc"
