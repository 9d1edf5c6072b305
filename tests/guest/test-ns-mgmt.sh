#!/usr/bin/env bash
# Guest test: Namespace Management and Attachment with nvme-cli in the guest, on a controller with an operator namespace and a file-backed capacity pool (--ns-pool file:...): create-ns/attach-ns/fio/detach-ns/delete-ns and the error statuses (jobs/ns-mgmt-1.sh), the Namespace Attribute Changed AEN counted by the daemon, the data found in the pool file at the namespace's extent (carved, not copied), then a daemon restart on the same pool file and a second boot that finds the namespaces, detaches and deletes them and gets the capacity back (jobs/ns-mgmt-2.sh).
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup ns-mgmt
rpc_sock=$GT_DIR/rpc.sock
sock=$GT_DIR/nsm.sock
pool=$GT_DIR/pool.img
rpc() { "$BIN/nvme-emu-rpc" -s "$rpc_sock" "$@"; }

start_daemon() {
	rm -f "$sock"
	"$BIN/nvme-emu" --socket "$sock" -r "$rpc_sock" --serial nvme-emu-nsm \
		--aio "$GT_DIR/op.img:32M" --ns-pool "file:$pool:96M" >> "$GT_DIR/nvme-emu.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && [ -S "$rpc_sock" ] && return 0
		sleep 0.1
	done
	return 1
}
stop_daemon() {
	kill -TERM "$daemon"
	wait "$daemon"
}
# aer_sent of the controller (nvmf_get_stats).
aer_sent() { rpc nvmf_get_stats | sed -n 's/.*"aer_sent": \([0-9]*\).*/\1/p' | head -n 1; }
# boot N: the guest runs jobs/ns-mgmt-N.sh; its output goes to $GT_DIR/runN.
boot() {
	"$GT_LAUNCH" --job "$GT_JOBS/ns-mgmt-$1.sh" --add "$GT_JOBS/ns-mgmt-lib.sh" --add "$GT_FIO" --vfio-user "$sock" \
		--run-dir "$GT_DIR/run$1" --timeout "$GT_TIMEOUT"
}

rc=1
trap 'kill $daemon 2>/dev/null' EXIT
if host_step "nvme-emu serves a controller with a file pool" start_daemon; then
	boot 1
	rc1=$?
	pool_json=$(rpc nvmf_emu_ns_pool_get)
	echo "$pool_json"
	# The guest wrote its marker at block 40000 of nsid 2: it is in the pool file at the
	# namespace's extent.
	off=$(python3 -c 'import json,sys; p=json.load(sys.stdin)[0]; print([n["offset_bytes"] for n in p["namespaces"] if n["nsid"]==2][0])' <<< "$pool_json")
	marker_in_pool() {
		dd if="$pool" bs=512 skip=$((off / 512 + 40000)) count=1 status=none |
			grep -q "nvme-emu ns-mgmt marker nsid2"
	}
	host_step "nsid 2's marker is in the pool file at its extent (offset $off)" marker_in_pool
	host_step "the pool lists nsid 2 and 4 attached, nsid 3 detached, 4 in format 6" python3 -c '
import json, sys
ns = {n["nsid"]: n for n in json.load(sys.stdin)[0]["namespaces"]}
assert sorted(ns) == [2, 3, 4] and ns[2]["attached"] and not ns[3]["attached"], ns
assert ns[4]["attached"] and ns[4]["flbas"] == 6 and ns[2]["flbas"] == 0, ns
# num_blocks: the 8-byte blocks of its packed region (32 MiB, 4 MiB, 4 MiB of 4 KiB blocks).
assert all(n["block_size"] == 8 for n in ns.values()), ns
assert ns[2]["num_blocks"] == 32 << 17 and ns[3]["num_blocks"] == 4 << 17, ns
assert ns[4]["num_blocks"] == 4 << 17, ns
' <<< "$pool_json"
	a=$(aer_sent)
	host_step "Namespace Attribute Changed AEN sent on attach ($a AERs completed)" test "${a:-0}" -ge 1
	host_step "save_config has the pool with its namespaces" sh -c \
		"'$BIN/nvme-emu-rpc' -s '$rpc_sock' save_config | grep -q nvmf_emu_ns_pool_create"
	host_step "nvme-emu stops cleanly" stop_daemon
	host_step "nvme-emu restarts on the same pool file" start_daemon
	boot 2
	rc2=$?
	a=$(aer_sent)
	host_step "AENs sent on detach and delete ($a)" test "${a:-0}" -ge 2
	host_step "the pool is empty again" python3 -c '
import json, sys
p = json.load(sys.stdin)[0]
assert p["namespaces"] == [] and p["free_bytes"] == p["total_bytes"] == 95 << 20, p
' < <(rpc nvmf_emu_ns_pool_get)
	host_step "nvme-emu stops cleanly" stop_daemon
	rc=$((rc1 || rc2))
	# Both boots' lines count: gt_report reads run/out, so join them there.
	mkdir -p "$GT_DIR/run/out"
	cat "$GT_DIR/run1/out/output.log" "$GT_DIR/run2/out/output.log" \
		> "$GT_DIR/run/out/output.log" 2> /dev/null
fi
trap - EXIT
[ "$host_failed" -eq 0 ] || tail -n 40 "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc"
