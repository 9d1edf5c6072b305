#!/usr/bin/env bash
# Integration: SPDK's own rpc.py, unchanged (../shared/spdk-rpc beside the checkout, or
# $SPDK_RPC_DIR), drives nvme-emu the way SPDK and DOCA users do: bdevs, the VFIOUSER transport
# and listener (<dir>/cntrl answering vfio-user), subsystems, namespaces, hosts, queries,
# statistics, log flags, parameters SPDK sends by default accepted and asked-for-but-unsupported
# ones refused by name, save_config -> load_config and -c round trips, the DOCA plugin
# (scripts/rpc_nvmf_doca.py) and DOCA's transport options, spdk_kill_instance.
# Usage: spdk-rpc.sh BUILD_DIR. Ends with "N passed, N failed"; skips (0 passed, 0 failed) when
# SPDK's rpc.py is not there.
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
SPDK=${SPDK_RPC_DIR:-$TOP/../shared/spdk-rpc}
if [ ! -f "$SPDK/scripts/rpc.py" ]; then
	echo "skipped: SPDK's rpc.py is not at $SPDK (set SPDK_RPC_DIR to a copy of SPDK's scripts/ and python/)"
	echo "0 passed, 0 failed"
	exit 0
fi
D=$(mktemp -d /tmp/nvme-emu-spdk-rpc.XXXXXX)
SOCK=$D/rpc.sock
passed=0
failed=0
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	rm -rf "$D"
}
trap cleanup EXIT

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "not ok - $1"; failed=$((failed + 1)); }
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# rpc ARGS...: SPDK's rpc.py on $SOCK; stdout in $out, stderr in $err.
rpc() {
	out=$(PYTHONPATH="$SPDK/python:$TOP/scripts" python3 "$SPDK/scripts/rpc.py" -s "$SOCK" \
		-t 60 "$@" 2> "$D/err")
	local rc=$?
	err=$(cat "$D/err")
	return $rc
}
ok() {
	local name=$1
	shift
	if rpc "$@"; then pass "$name"; else fail "$name: $err"; fi
}
# ok_json NAME PYEXPR ARGS...: the call succeeds and PYEXPR holds for its JSON output `r`.
ok_json() {
	local name=$1 expr=$2
	shift 2
	if rpc "$@" && python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if ($expr) else 1)" "$out"; then
		pass "$name"
	else
		fail "$name: out/err: $out $err"
	fi
}
# ok_out NAME REGEX ARGS...: the call succeeds and prints a line matching REGEX (rpc.py prints
# string results bare).
ok_out() {
	local name=$1 re=$2
	shift 2
	if rpc "$@" && grep -Eq -- "$re" <<< "$out"; then pass "$name"; else fail "$name: $out $err"; fi
}
# bad NAME REGEX ARGS...: the call fails and its error (rpc.py prints it on stdout or stderr)
# matches REGEX.
bad() {
	local name=$1 re=$2
	shift 2
	if rpc "$@"; then
		fail "$name: succeeded: $out"
	elif grep -Eq -- "$re" <<< "$out$err"; then
		pass "$name"
	else
		fail "$name: wrong error: $err"
	fi
}

start_daemon() {
	"$BIN/nvme-emu" -r "$SOCK" "$@" > "$D/daemon-$$.$RANDOM.log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && rpc spdk_get_version && return 0
		sleep 0.1
	done
	return 1
}
stop_daemon() {
	kill -TERM "$dpid" 2> /dev/null
	wait "$dpid"
	local rc=$?
	dpid=
	return $rc
}

# A vfio-user VERSION exchange on a socket: the server answers as a vfio-user server does.
vfu_answers() {
	python3 - "$1" << 'PY'
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
caps = json.dumps({"capabilities": {"max_msg_fds": 8}}).encode() + b"\0"
payload = struct.pack("<HH", 0, 1) + caps
s.sendall(struct.pack("<HHIII", 7, 1, 16 + len(payload), 0, 0) + payload)
hdr = s.recv(16, socket.MSG_WAITALL)
mid, cmd, size, flags, err = struct.unpack("<HHIII", hdr)
sys.exit(0 if (mid, cmd, flags & 0xf, err) == (7, 1, 1, 0) and size > 16 else 1)
PY
}

# ---- the SPDK workflow, as written for SPDK ----
check "nvme-emu starts" start_daemon
ok_out "bdev_malloc_create -b Malloc0 64 512" '^Malloc0$' bdev_malloc_create -b Malloc0 64 512
ok_out "bdev_null_create Null0 64 512" '^Null0$' bdev_null_create Null0 64 512
truncate -s 64M "$D/aio.img"
ok_out "bdev_aio_create FILE Aio0 512" '^Aio0$' bdev_aio_create "$D/aio.img" Aio0 512
truncate -s 32M "$D/uring.img"
ok_out "bdev_uring_create FILE Uring0 4096" '^Uring0$' bdev_uring_create "$D/uring.img" Uring0 4096
ok_json "bdev_get_bdevs -b Uring0: io_uring, 8192 blocks of 4096" \
	'r[0]["module"] == "uring" and r[0]["num_blocks"] == 8192 and r[0]["block_size"] == 4096' \
	bdev_get_bdevs -b Uring0
ok_json "bdev_get_bdevs -b Malloc0: 131072 blocks of 512" \
	'r[0]["num_blocks"] == 131072 and r[0]["block_size"] == 512' bdev_get_bdevs -b Malloc0
bad "bdev_malloc_create --md-size 8: refused, by name" "md_size.*not supported" \
	bdev_malloc_create -b Md0 8 512 --md-size 8
bad "bdev_aio_create --readonly: refused, by name" "readonly.*not supported" \
	bdev_aio_create "$D/aio.img" Ro0 512 --readonly
bad "nvmf_create_transport --zcopy: refused, by name" "zcopy.*not supported" \
	nvmf_create_transport -t VFIOUSER --zcopy
ok_json "nvmf_get_stats before any transport: empty" 'r["poll_groups"] == []' nvmf_get_stats
ok "nvmf_create_transport -t VFIOUSER" nvmf_create_transport -t VFIOUSER
ok_json "nvmf_get_transports: VFIOUSER" 'r[0]["trtype"] == "VFIOUSER"' nvmf_get_transports
NQN=nqn.2016-06.io.spdk:cnode1
ok "nvmf_create_subsystem NQN -a -s SPDK001 -d ctrl1" nvmf_create_subsystem $NQN -a -s SPDK001 -d ctrl1
bad "nvmf_create_subsystem --ana-reporting: refused" "ana_reporting.*not supported" \
	nvmf_create_subsystem nqn.2016-06.io.spdk:cnode9 -r
ok "nvmf_subsystem_add_ns NQN Malloc0" nvmf_subsystem_add_ns $NQN Malloc0
ok "nvmf_subsystem_add_ns NQN Null0" nvmf_subsystem_add_ns $NQN Null0
ok_json "... as namespaces 1 and 2" \
	'[(n["nsid"], n["bdev_name"]) for n in r[0]["namespaces"]] == [(1, "Malloc0"), (2, "Null0")]' \
	nvmf_get_subsystems $NQN
echo '{"ptpl": tru' > "$D/bad-ptpl"
bad "nvmf_subsystem_add_ns --ptpl-file: a damaged state file is refused" "ptpl_file.*not a reservation state" \
	nvmf_subsystem_add_ns $NQN Aio0 -p "$D/bad-ptpl"
ok "nvmf_subsystem_add_ns --ptpl-file (reservations persist there)" \
	nvmf_subsystem_add_ns $NQN Aio0 -p "$D/ptpl"
ok_json "... reported" '[n["ptpl_file"] for n in r[0]["namespaces"] if n["nsid"] == 3] == ["'"$D/ptpl"'"]' \
	nvmf_get_subsystems $NQN
ok "nvmf_subsystem_add_listener NQN -t VFIOUSER -a DIR -s 0" \
	nvmf_subsystem_add_listener $NQN -t VFIOUSER -a "$D/vfu" -s 0
check "the socket is DIR/cntrl" test -S "$D/vfu/cntrl"
check "DIR/cntrl answers vfio-user" vfu_answers "$D/vfu/cntrl"
ok_json "nvmf_get_subsystems: serial, model, namespaces, listener" \
	'[s for s in r if s["nqn"] == "'$NQN'" and s["serial_number"] == "SPDK001" and s["model_number"] == "ctrl1" and len(s["namespaces"]) == 3 and s["listen_addresses"][0]["traddr"] == "'"$D/vfu"'"]' \
	nvmf_get_subsystems
ok_json "nvmf_subsystem_get_listeners: VFIOUSER DIR" \
	'r[0]["address"]["trtype"] == "VFIOUSER" and r[0]["address"]["traddr"] == "'"$D/vfu"'"' \
	nvmf_subsystem_get_listeners $NQN
ok_json "nvmf_subsystem_get_controllers: none enabled yet" 'r == []' nvmf_subsystem_get_controllers $NQN
ok_json "nvmf_subsystem_get_qpairs: none yet" 'r == []' nvmf_subsystem_get_qpairs $NQN
HOST=nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555
ok "nvmf_subsystem_add_host" nvmf_subsystem_add_host $NQN $HOST
ok_json "... listed" '[s for s in r if s["hosts"] == [{"nqn": "'$HOST'"}]]' nvmf_get_subsystems
bad "nvmf_subsystem_add_host --dhchap-key: refused" "dhchap_key.*not supported" \
	nvmf_subsystem_add_host $NQN nqn.2014-08.org.nvmexpress:uuid:x --dhchap-key key0
ok "nvmf_subsystem_allow_any_host --no-allow-any-host" \
	nvmf_subsystem_allow_any_host --no-allow-any-host $NQN
ok_json "... allow_any_host false" '[s for s in r if s["nqn"] == "'$NQN'" and not s["allow_any_host"]]' \
	nvmf_get_subsystems
ok_json "nvmf_get_stats: a poll group" 'len(r["poll_groups"]) >= 1' nvmf_get_stats
ok_json "bdev_get_iostat: every bdev" \
	'sorted(b["name"] for b in r["bdevs"]) == ["Aio0", "Malloc0", "Null0", "Uring0"]' bdev_get_iostat
ok_json "bdev_get_iostat --names Malloc0,Null0" \
	'[b["name"] for b in r["bdevs"]] == ["Malloc0", "Null0"]' bdev_get_iostat --names Malloc0,Null0
bad "bdev_get_iostat --per-channel: refused" "per_channel.*not supported" bdev_get_iostat -c
ok "bdev_wait_for_examine" bdev_wait_for_examine
ok "framework_wait_init" framework_wait_init
ok_json "framework_get_subsystems: bdev and nvmf" \
	'[s["subsystem"] for s in r][-2:] == ["bdev", "nvmf"]' framework_get_subsystems
ok "log_set_flag ctrlr" log_set_flag ctrlr
ok_json "log_get_flags: ctrlr on" 'r["ctrlr"] is True and r["bdev"] is False' log_get_flags
ok "log_clear_flag ctrlr" log_clear_flag ctrlr
bad "log_set_flag of no component" "no log flag" log_set_flag nosuchflag
ok "log_set_level WARNING" log_set_level WARNING
ok_json "log_get_level" 'r.upper().startswith("WARN")' log_get_level
ok "log_set_level INFO" log_set_level INFO
ok_json "rpc_get_methods lists the SPDK tooling's methods" \
	'all(m in r for m in ["framework_get_subsystems", "save_config", "bdev_get_iostat", "nvmf_subsystem_get_qpairs", "spdk_kill_instance", "log_get_flags"])' \
	rpc_get_methods

# ---- save_config -> load_config, and -c ----
describe() {
	rpc nvmf_get_subsystems && python3 -c "
import json, sys
subs = json.loads(sys.argv[1])
for s in subs:
    for a in s['listen_addresses']:
        a.pop('state', None); a.pop('vuid', None)
print(json.dumps(sorted(subs, key=lambda s: s['nqn']), sort_keys=True))" "$out" > "$1" &&
		rpc bdev_get_bdevs && python3 -c "
import json, sys
print(json.dumps(sorted((b['name'], b['num_blocks'], b['block_size'], b['uuid']) for b in json.loads(sys.argv[1]))))" "$out" >> "$1"
}
check "the running target described" describe "$D/before.txt"
if rpc save_config > /dev/null && printf '%s\n' "$out" > "$D/target.json" &&
	grep -q '"VFIOUSER"' "$D/target.json"; then
	pass "save_config (rpc.py's: framework_get_subsystems + framework_get_config)"
else
	fail "save_config: $err"
fi
ok "spdk_kill_instance SIGTERM" spdk_kill_instance SIGTERM
for _ in $(seq 50); do kill -0 "$dpid" 2> /dev/null || break; sleep 0.1; done
check "... the daemon exits cleanly" stop_daemon
check "a fresh daemon" start_daemon
if rpc load_config < "$D/target.json"; then pass "load_config of the saved file"; else fail "load_config: $err"; fi
describe "$D/after-load.txt"
check "... identical bdevs, subsystems, namespaces, listeners, hosts" cmp -s "$D/before.txt" "$D/after-load.txt"
check "... DIR/cntrl answers again" vfu_answers "$D/vfu/cntrl"
check "daemon exits cleanly" stop_daemon
check "nvme-emu -c target.json" start_daemon -c "$D/target.json"
describe "$D/after-c.txt"
check "... identical" cmp -s "$D/before.txt" "$D/after-c.txt"
check "daemon exits cleanly" stop_daemon

# ---- DOCA: the transport options and the plugin ----
check "a fresh daemon" start_daemon
ok "nvmf_create_transport -t doca -u 8192 -i 131072 -c 8192" \
	nvmf_create_transport -t doca -u 8192 -i 131072 -c 8192
ok_json "... reported" \
	'r[0]["trtype"] == "DOCA" and r[0]["io_unit_size"] == 8192 and r[0]["max_io_size"] == 131072 and r[0]["in_capsule_data_size"] == 8192' \
	nvmf_get_transports
ok_json "--plugin rpc_nvmf_doca nvmf_doca_get_managers" '[m for m in r if m["name"] == "local"]' \
	--plugin rpc_nvmf_doca nvmf_doca_get_managers
ok_json "--plugin rpc_nvmf_doca nvmf_doca_create_function -d local" 'isinstance(r, str) and r' \
	--plugin rpc_nvmf_doca nvmf_doca_create_function -d local
VUID=$(python3 -c "import json,sys; print(json.loads(sys.argv[1]))" "$out" 2> /dev/null)
echo "function $VUID"
ok_json "--plugin rpc_nvmf_doca nvmf_doca_list_functions -d local" \
	'"'"$VUID"'" in json.dumps(r)' --plugin rpc_nvmf_doca nvmf_doca_list_functions -d local
ok "bdev_malloc_create -b Malloc1 32 4096" bdev_malloc_create -b Malloc1 32 4096
ok "nvmf_create_subsystem" nvmf_create_subsystem nqn.2016-06.io.spdk:doca1 -a
ok "nvmf_subsystem_add_ns" nvmf_subsystem_add_ns nqn.2016-06.io.spdk:doca1 Malloc1
ok "nvmf_subsystem_add_listener NQN -t doca -a VUID" \
	nvmf_subsystem_add_listener nqn.2016-06.io.spdk:doca1 -t doca -a "$VUID"
ok_json "... the function serves the subsystem" \
	'[s for s in r if s["nqn"] == "nqn.2016-06.io.spdk:doca1" and s["listen_addresses"][0]["vuid"] == "'"$VUID"'"]' \
	nvmf_get_subsystems
ok "nvmf_subsystem_remove_listener NQN -t doca -a VUID" \
	nvmf_subsystem_remove_listener nqn.2016-06.io.spdk:doca1 -t doca -a "$VUID"
ok "--plugin rpc_nvmf_doca nvmf_doca_destroy_function -d local -v VUID" \
	--plugin rpc_nvmf_doca nvmf_doca_destroy_function -d local -v "$VUID"
ok_json "... gone" '"'"$VUID"'" not in json.dumps(r)' \
	--plugin rpc_nvmf_doca nvmf_doca_list_functions -d local
ok "nvmf_delete_subsystem" nvmf_delete_subsystem nqn.2016-06.io.spdk:doca1
ok "bdev_malloc_delete" bdev_malloc_delete Malloc1
ok "spdk_kill_instance SIGINT" spdk_kill_instance SIGINT
for _ in $(seq 50); do kill -0 "$dpid" 2> /dev/null || break; sleep 0.1; done
check "... the daemon exits cleanly" stop_daemon

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
