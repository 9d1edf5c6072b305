#!/usr/bin/env bash
# Integration: the CNTLIDs of one NVM subsystem exported by several daemons (a namespace with
# shared_reservations on one RBD image) come from the cluster (app/app_cluster_cntlid.c), on a
# throwaway Ceph cluster started here. Three daemons with the default range add two listeners
# each at the same moment: six distinct CNTLIDs, 1..6, and the table in RADOS lists them; a
# daemon killed with SIGKILL and started again from its saved configuration takes back its own;
# a removed listener's CNTLID is released and the next claim takes it; a full range fails with
# the error; a shared namespace added after listeners is refused. Usage: cluster-cntlid.sh
# BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-build}
BIN=$TOP/$BUILD/bin
D=$(mktemp -d /tmp/nvme-emu-cntlid.XXXXXX)
NQN=nqn.2026-11.io.nvme-emu:cntlid
declare -A pid
cleanup() {
	for p in "${pid[@]}"; do kill -9 "$p" 2> /dev/null; done
	"$TOP/tests/lib/ceph-cluster.sh" stop "$D/ceph" > /dev/null 2>&1
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

. "$TOP/tests/lib/check.sh"
ceph_up "$D/ceph"
check "rbd create rbd/cntlid (layering only)" rbd create --size 16M --image-feature layering rbd/cntlid
rpc() { "$BIN/nvme-emu-rpc" -s "$D/$1.rpc" "${@:2}"; }
# start N: daemon N (its own --socket function aside), then the bdev, the subsystem (default CNTLID range unless
# MAX is set) and the shared namespace.
start() {
	"$BIN/nvme-emu" -r "$D/$1.rpc" --malloc 1M --serial "D$1" --socket "$D/own$1.sock" \
		>> "$D/$1.log" 2>&1 &
	pid[$1]=$!
	for _ in $(seq 100); do [ -S "$D/$1.rpc" ] && break; sleep 0.1; done
	rpc "$1" bdev_rbd_create --name R --pool_name rbd --rbd_name cntlid --block_size 512 > /dev/null &&
		rpc "$1" nvmf_create_subsystem --nqn "$NQN" --serial_number '"SHARED"' \
			${MAX:+--max_cntlid "$MAX"} > /dev/null &&
		rpc "$1" nvmf_subsystem_add_ns --nqn "$NQN" --namespace.bdev_name R \
			--namespace.shared_reservations true > /dev/null
}
add() { rpc "$1" nvmf_subsystem_add_listener --nqn "$NQN" --listen_address.trtype PCIE_EMU \
	--listen_address.traddr "$D/$1-$2.sock"; }
# cntlids N: daemon N's listeners' CNTLIDs, sorted.
cntlids() {
	rpc "$1" nvmf_get_subsystems --nqn "$NQN" | python3 -c '
import json, sys
print(" ".join(str(c) for c in sorted(l["cntlid"] for s in json.load(sys.stdin) for l in s["listen_addresses"])))'
}
table() { rados -p rbd get "nvme-emu.cntlid.$(python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$NQN")" "$D/table" && cat "$D/table"; }

for n in 1 2 3; do check "daemon $n: RBD bdev, subsystem, shared namespace" start $n; done
# Six claims at once, two from each daemon.
for n in 1 2 3; do for l in a b; do add $n $l > "$D/add-$n$l" 2>&1 & done; done
wait_adds() { for j in $(jobs -p); do case " ${pid[*]} " in *" $j "*) ;; *) wait "$j" || return 1 ;; esac; done; }
check "six listeners added at once on three daemons" wait_adds
all="$(cntlids 1) $(cntlids 2) $(cntlids 3)"
echo "# CNTLIDs: daemon 1: $(cntlids 1); 2: $(cntlids 2); 3: $(cntlids 3);" \
	"compare-and-swap rounds lost to another daemon: $(cat "$D"/[123].log | grep -o 'after [0-9]* lost' | awk '{s+=$2} END {print s+0}')"
check "six distinct CNTLIDs, 1..6" test "$(echo $all | tr ' ' '\n' | sort -n | tr '\n' ' ')" = "1 2 3 4 5 6 "
check "the table in RADOS lists the six" sh -c "[ \$( (rados -p rbd ls | grep -c '^nvme-emu.cntlid\.') ) -eq 1 ]"
table > "$D/t1" 2>&1
cat "$D/t1"
check "the table: six lines, one per listener" test "$(grep -c "$(hostname):$D/" "$D/t1")" -eq 6

# Daemon 1 killed and started again from its saved configuration: the same CNTLIDs.
before=$(cntlids 1)
rpc 1 save_config > "$D/1.json"
kill -9 "${pid[1]}"
{ wait "${pid[1]}"; } 2> /dev/null
rm -f "$D/1.rpc" "$D"/1-*.sock "$D/own1.sock"
"$BIN/nvme-emu" -r "$D/1.rpc" -c "$D/1.json" >> "$D/1.log" 2>&1 &
pid[1]=$!
up1() { for _ in $(seq 150); do [ -S "$D/1-a.sock" ] && [ -S "$D/1-b.sock" ] && return 0; sleep 0.1; done; return 1; }
check "daemon 1 killed with SIGKILL and started again from save_config" up1
check "daemon 1 took back its CNTLIDs ($before)" test "$(cntlids 1)" = "$before"

# A listener removed: its CNTLID is released, the next claim takes it.
gone=$(rpc 2 nvmf_get_subsystems --nqn "$NQN" | python3 -c '
import json, sys
print([l["cntlid"] for s in json.load(sys.stdin) for l in s["listen_addresses"] if l["traddr"] == sys.argv[1]][0])' "$D/2-a.sock")
check "daemon 2 removes its listener a" rpc 2 nvmf_subsystem_remove_listener --nqn "$NQN" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/2-a.sock"
table > "$D/t2" 2>&1
check "the table lost CNTLID $gone" sh -c "! grep -q '^$gone ' '$D/t2' && [ \$(wc -l < '$D/t2') -eq 5 ]"
MAX=6 check "daemon 4, range 1..6" start 4
add 4 a > /dev/null
check "daemon 4's listener takes the released CNTLID $gone" test $? -eq 0
check "daemon 4's CNTLID is $gone" test "$(cntlids 4)" = "$gone"
add 4 b > "$D/full" 2>&1
rc=$?
cat "$D/full"
check "a full range fails the listener add with the error" sh -c "[ $rc -ne 0 ] && grep -q 'every CNTLID of 1..6 is taken in the cluster' '$D/full'"
check "no socket was made for it" test ! -e "$D/4-b.sock"
rpc 3 bdev_rbd_create --name R2 --pool_name rbd --rbd_name cntlid --block_size 512 > /dev/null
out=$(rpc 3 nvmf_create_subsystem --nqn "$NQN-late" 2>&1 && rpc 3 nvmf_subsystem_add_listener --nqn "$NQN-late" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/late.sock" 2>&1 &&
	rpc 3 nvmf_subsystem_add_ns --nqn "$NQN-late" --namespace.bdev_name R2 --namespace.shared_reservations true 2>&1)
echo "$out" | tail -1
check "a shared namespace added after the listeners is refused" sh -c "echo '$out' | grep -q 'add a namespace with shared_reservations before them'"

for n in 1 2 3 4; do
	kill -TERM "${pid[$n]}"
	wait "${pid[$n]}"
	check "daemon $n stops cleanly" test $? -eq 0
	unset "pid[$n]"
done
finish
