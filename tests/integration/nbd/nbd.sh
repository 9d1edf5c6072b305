#!/usr/bin/env bash
# Integration: namespaces on NBD exports served by real nbdkit and qemu-nbd processes started here.
# --nbd on the command line (nbdkit memory on a unix socket, multi-conn, and over TCP on
# 127.0.0.1; qemu-nbd on a raw file, one connection),
# data written and verified through the emulated controller by nvme-emu-perf, the file holding it;
# bdev_nbd_create / bdev_nbd_delete / bdev_get_bdevs over JSON-RPC with their errors, the config
# round trip (save_config, restart with -c); nbdkit killed and restarted during a verified write:
# no I/O error, and every block reads back verified through the restarted server.
# Usage: nbd.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-nbd-test.XXXXXX)
dpid=
spid=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	[ -n "$spid" ] && kill -9 "$spid" 2> /dev/null
	[ -n "${KEEP:-}" ] && echo "kept $D" || rm -rf "$D"
}
trap cleanup EXIT
. "$TOP/tests/lib/check.sh"
# server CMD...: starts an NBD server on $D/nbd.sock (replacing the previous one).
server() {
	stop_server
	rm -f "$D/nbd.sock"
	"$@" > "$D/server.log" 2>&1 &
	spid=$!
	wait_sock "$D/nbd.sock"
}
stop_server() {
	[ -n "$spid" ] && { kill -9 "$spid" 2> /dev/null; wait "$spid" 2> /dev/null; }
	spid=
}
perf() { perf_check "$D/fn" "$@"; }
rpc() {
	out=$("$BIN/nvme-emu-rpc" -s "$D/rpc.sock" -t 60 "$@" 2> "$D/err")
	local rc=$?
	err=$(cat "$D/err")
	return $rc
}
URI="nbd+unix:///?socket=$D/nbd.sock"
WAIT=$D/fn

# 1. --nbd on nbdkit's memory plugin (multi-conn): verified write, then verified random reads.
check "nbdkit memory 16 MiB" server nbdkit --foreground -U "$D/nbd.sock" memory size=16M
check "nvme-emu --nbd (memory export)" daemon --socket "$D/fn" --nbd "$URI" -q 2
perf "verified write of the whole namespace over NBD" \
	'r["ios"] == 4096 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -n 2 -q 16
perf "verified random reads over NBD" \
	'r["ios"] > 0 and r["errors"] == 0 and r["verify_errors"] == 0' -w randread -V -n 2 -q 16 -t 1
check "the log names the export and its 4 connections" \
	grep -q "NBD export $URI, 16777216 bytes.*4 connection(s) (multi-conn)" "$D/daemon.log"
stop_daemon

# 1b. Over TCP on 127.0.0.1 (nbd://HOST:PORT/EXPORT).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
stop_server
nbdkit --foreground --exit-with-parent -i 127.0.0.1 -p "$port" memory size=4M > "$D/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break; sleep 0.1; done
check "nvme-emu --nbd nbd://127.0.0.1:$port/" daemon --socket "$D/fn" --nbd "nbd://127.0.0.1:$port/"
perf "verified write over TCP" 'r["ios"] == 1024 and r["errors"] == 0 and r["verify_errors"] == 0' \
	-w write -V -q 8
stop_daemon
stop_server

# 2. qemu-nbd on a raw file (one connection allowed): the file holds what was written.
truncate -s 8M "$D/disk.raw"
check "qemu-nbd on a raw file" server qemu-nbd --persistent -k "$D/nbd.sock" -f raw --cache=none "$D/disk.raw"
check "nvme-emu --nbd (qemu-nbd export)" daemon --socket "$D/fn" --nbd "$URI"
perf "verified write over qemu-nbd" \
	'r["ios"] == 2048 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -q 8
check "one connection without multi-conn" grep -q "8388608 bytes.*1 connection(s)$" "$D/daemon.log"
stop_daemon
check "the raw file holds data (not all zeroes)" python3 -c "
d=open('$D/disk.raw','rb').read(); assert len(d)==8<<20 and d.count(0) < len(d)//2"
stop_server

# 3. The server dies during a verified write and comes back: no error, nothing lost.
truncate -s 16M "$D/disk2.raw"
NBDKIT_FILE=(nbdkit --foreground -U "$D/nbd.sock" --filter=delay file "$D/disk2.raw" delay-write=2ms)
check "nbdkit file plugin (2 ms per write)" server "${NBDKIT_FILE[@]}"
check "nvme-emu --nbd (file export)" daemon --socket "$D/fn" --nbd "$URI"
"$BIN/nvme-emu-perf" -s "$D/fn" -j -w write -V -q 8 > "$D/restart.json" 2> "$D/restart.err" &
ppid=$!
sleep 1
stop_server
sleep 0.5
check "nbdkit restarted on the same socket" server "${NBDKIT_FILE[@]}"
wait "$ppid"
prc=$?
check "the verified write finished with no error across the restart" python3 -c "
import json; r=json.load(open('$D/restart.json'))
assert $prc == 0 and r['ios'] == 4096 and r['errors'] == 0 and r['verify_errors'] == 0, r"
check "the daemon saw the loss and the return" grep -q "lost.*reconnecting" "$D/daemon.log"
stop_daemon
# Through a fresh server process, from the file: every block verified.
check "nbdkit again (no delay)" server nbdkit --foreground -U "$D/nbd.sock" file "$D/disk2.raw"
check "nvme-emu --nbd (same file)" daemon --socket "$D/fn" --nbd "$URI"
# A sequential read of at least 4096 blocks covers the namespace (it wraps around).
perf "every block written across the restart reads back verified" \
	'r["ios"] >= 4096 and r["errors"] == 0 and r["verify_errors"] == 0' -w read -V -q 8 -t 8
# The export grows while the server is down: the namespace grows when it is back.
stop_server
truncate -s 32M "$D/disk2.raw"
check "nbdkit back with a 32 MiB export" server nbdkit --foreground -U "$D/nbd.sock" file \
	"$D/disk2.raw"
grown() { grep -q "now 65536 blocks" "$D/daemon.log"; }
for _ in $(seq 100); do grown && break; sleep 0.1; done
check "the bdev grew to 65536 blocks on reconnect" grown
perf "the namespace grew: a verified write covers 32 MiB" \
	'r["ios"] == 8192 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -q 8
stop_daemon
truncate -s 16M "$D/disk2.raw"
check "nbdkit on the 16 MiB file again" server nbdkit --foreground -U "$D/nbd.sock" file \
	"$D/disk2.raw"

# 4. JSON-RPC: create, describe, save_config round trip, delete, errors.
WAIT=$D/rpc.sock
check "nvme-emu target mode" daemon -r "$D/rpc.sock"
if rpc bdev_nbd_create --name Nbd0 --uri "$URI" --num_connections 2 && [ "$out" = Nbd0 ]; then
	pass "bdev_nbd_create answers the name"
else
	fail "bdev_nbd_create: $out $err"
fi
# The second connection is opened once the first handshake allowed it (after the create
# answered): give it a moment, bounded.
wait_two_connected() {
	for _ in $(seq 50); do
		rpc bdev_get_bdevs --name Nbd0 && grep -q '"connected": 2' <<< "$out" && return 0
		sleep 0.1
	done
	return 1
}
wait_two_connected
if rpc bdev_get_bdevs --name Nbd0 && python3 -c "
import json,sys; b=json.loads(sys.argv[1])[0]; n=b['driver_specific']['nbd']
assert b['product_name']=='NBD disk' and b['num_blocks']==32768 and n['uri']=='$URI' and n['num_connections']==2 and n['connected']==2 and n['multi_conn'], b" "$out"; then
	pass "bdev_get_bdevs: driver_specific.nbd (multi-conn, 2 connected)"
else
	fail "bdev_get_bdevs: $out $err"
fi
if rpc bdev_nbd_create --name Nbd1 --uri "nbd+unix:///?socket=$D/none.sock"; then
	fail "unreachable server accepted"
elif grep -q "NBD export nbd+unix:///?socket=$D/none.sock" <<< "$err"; then
	pass "unreachable server: the error names the export"
else
	fail "unreachable server: $err"
fi
if ! rpc bdev_nbd_create --name Nbd1 --uri "http://x/" && grep -q "not an NBD URI" <<< "$err"; then
	pass "a non-NBD URI is refused"
else
	fail "non-NBD URI: $out $err"
fi
if ! rpc bdev_nbd_create --name Nbd0 --uri "$URI" && grep -q "already exists" <<< "$err"; then
	pass "a taken name is refused"
else
	fail "taken name: $out $err"
fi
if ! rpc bdev_nbd_delete --name Nope && grep -q "no nbd bdev" <<< "$err"; then
	pass "bdev_nbd_delete of an unknown bdev"
else
	fail "delete unknown: $out $err"
fi
rpc save_config > /dev/null && printf '%s\n' "$out" > "$D/config.json"
check "save_config holds bdev_nbd_create with the uri" python3 -c "
import json; c=json.load(open('$D/config.json'))
b=[x for s in c['subsystems'] if s['subsystem']=='bdev' for x in s['config'] if x['method']=='bdev_nbd_create']
assert len(b)==1 and b[0]['params']['uri']=='$URI' and b[0]['params']['num_connections']==2, b"
stop_daemon
rm -f "$D/rpc.sock"
check "restart with -c config.json" daemon -r "$D/rpc.sock" -c "$D/config.json"
# bdev creates from the file are asynchronous: wait for the end of the load, as SPDK users do.
check "framework_wait_init after -c" rpc framework_wait_init
wait_two_connected
if rpc bdev_get_bdevs --name Nbd0 && grep -q '"connected": 2' <<< "$out"; then
	pass "the NBD bdev is back, connected"
else
	fail "after -c: $out $err"
fi
check "bdev_nbd_delete" rpc bdev_nbd_delete --name Nbd0
if ! rpc bdev_get_bdevs --name Nbd0; then pass "deleted"; else fail "still there: $out"; fi
stop_daemon
stop_server
finish
