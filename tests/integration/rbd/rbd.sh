#!/usr/bin/env bash
# Integration: namespaces on Ceph RBD images of a throwaway cluster started here
# (tests/lib/ceph-cluster.sh: one monitor, one memstore OSD, 127.0.0.1). --rbd POOL/IMAGE with
# $CEPH_CONF: a verified write and verified reads through the emulated controller by
# nvme-emu-perf, the data then read by the rbd CLI; bdev_rbd_create (SPDK's parameters, config as
# a map) / bdev_get_bdevs / bdev_rbd_resize / bdev_rbd_delete over JSON-RPC with their errors;
# save_config and a restart with -c. When no cluster can run on this machine, one line says why.
# Usage: rbd.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-rbd-test.XXXXXX)
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	"$TOP/tests/lib/ceph-cluster.sh" stop "$D/ceph" > /dev/null 2>&1
	rm -rf "$D"
}
trap cleanup EXIT
. "$TOP/tests/lib/check.sh"
perf() { perf_check "$D/fn" "$@"; }
rpc() {
	out=$("$BIN/nvme-emu-rpc" -s "$D/rpc.sock" -t 90 "$@" 2> "$D/err")
	local rc=$?
	err=$(cat "$D/err")
	return $rc
}

ceph_up "$D/ceph"
check "rbd create rbd/disk0 (16 MiB)" rbd create --size 16M rbd/disk0

# 1. --rbd: verified write of the whole namespace, verified reads; the rbd CLI sees the data.
WAIT=$D/fn
check "nvme-emu --rbd rbd/disk0" daemon --socket "$D/fn" --rbd rbd/disk0 -q 2
perf "verified write of the whole namespace on RBD" \
	'r["ios"] == 4096 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -n 2 -q 16
perf "verified random reads on RBD" \
	'r["ios"] > 0 and r["errors"] == 0 and r["verify_errors"] == 0' -w randread -V -n 2 -q 16 -t 1
check "nvme-emu exits cleanly (image closed)" stop_daemon
check "rbd export: the image holds the written data" sh -c \
	"rbd export rbd/disk0 '$D/disk0.raw' > /dev/null 2>&1 && python3 -c \"
d=open('$D/disk0.raw','rb').read(); assert len(d)==16<<20 and d.count(0) < len(d)//2\""
check "--rbd of a missing image fails with the reason" sh -c \
	"! '$BIN/nvme-emu' --socket '$D/fn2' --rbd rbd/nope > '$D/bad.log' 2>&1 && grep -q 'image rbd/nope' '$D/bad.log'"

# 2. JSON-RPC with SPDK's parameters, config as a map (no file).
WAIT=$D/rpc.sock
check "nvme-emu target mode" daemon -r "$D/rpc.sock"
mon=$(sed -n 's/^mon host = //p' "$conf")
cfg="{\"mon_host\": \"$mon\", \"auth_client_required\": \"none\"}"
if rpc bdev_rbd_create "{\"name\": \"Ceph0\", \"pool_name\": \"rbd\", \"rbd_name\": \"disk0\", \"block_size\": 4096, \"config\": $cfg}" &&
	[ "$out" = Ceph0 ]; then
	pass "bdev_rbd_create (config map) answers the name"
else
	fail "bdev_rbd_create: $out $err"
fi
if rpc bdev_get_bdevs --name Ceph0 && python3 -c "
import json,sys; b=json.loads(sys.argv[1])[0]; r=b['driver_specific']['rbd']
assert b['product_name']=='Ceph Rbd Disk' and b['block_size']==4096 and b['num_blocks']==4096 and r['pool_name']=='rbd' and r['rbd_name']=='disk0' and r['config']['mon_host']=='$mon', b" "$out"; then
	pass "bdev_get_bdevs: driver_specific.rbd"
else
	fail "bdev_get_bdevs: $out $err"
fi
if ! rpc bdev_rbd_create --pool_name rbd --rbd_name missing --block_size 512 && grep -q "image rbd/missing" <<< "$err"; then
	pass "a missing image: the error names it"
else
	fail "missing image: $out $err"
fi
if ! rpc bdev_rbd_create --pool_name rbd --rbd_name disk0 --block_size 512 --read_only true && grep -q "read_only" <<< "$err"; then
	pass "read_only is refused by name"
else
	fail "read_only: $out $err"
fi
check "bdev_rbd_resize to 32 MiB" rpc bdev_rbd_resize --name Ceph0 --new_size 32
if rpc bdev_get_bdevs --name Ceph0 && grep -q '"num_blocks": 8192' <<< "$out"; then
	pass "the bdev has the new size"
else
	fail "after resize: $out"
fi
if ! rpc bdev_rbd_resize --name Ceph0 --new_size 8 && grep -q "smaller" <<< "$err"; then
	pass "shrinking is refused"
else
	fail "shrink: $out $err"
fi
check "rbd info: the image is 32 MiB" sh -c "rbd info rbd/disk0 | grep -q 'size 32 MiB'"
rpc save_config > /dev/null && printf '%s\n' "$out" > "$D/config.json"
check "save_config holds bdev_rbd_create with its config map" python3 -c "
import json; c=json.load(open('$D/config.json'))
b=[x for s in c['subsystems'] if s['subsystem']=='bdev' for x in s['config'] if x['method']=='bdev_rbd_create']
assert len(b)==1 and b[0]['params']['rbd_name']=='disk0' and b[0]['params']['config']['mon_host']=='$mon', b"
check "nvme-emu exits cleanly" stop_daemon
rm -f "$D/rpc.sock"
check "restart with -c config.json" daemon -r "$D/rpc.sock" -c "$D/config.json"
# bdev creates from the file are asynchronous: wait for the end of the load, as SPDK users do.
check "framework_wait_init after -c" rpc framework_wait_init
if rpc bdev_get_bdevs --name Ceph0 && grep -q '"num_blocks": 8192' <<< "$out"; then
	pass "the RBD bdev is back"
else
	fail "after -c: $out $err"
fi
check "bdev_rbd_delete" rpc bdev_rbd_delete --name Ceph0
if ! rpc bdev_get_bdevs --name Ceph0; then pass "deleted"; else fail "still there: $out"; fi
check "nvme-emu exits cleanly after the delete" stop_daemon
finish
