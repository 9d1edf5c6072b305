#!/usr/bin/env bash
# Integration: every JSON-RPC method of nvme-emu through the nvme-emu-rpc CLI, success and each error class; config round trip (save_config, restart with -c); 8 controllers in one process; --wait-for-rpc; the default socket; the legacy command line with -r.
# Usage: rpc-cli.sh BUILD_DIR (build or build-asan). Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-rpc-cli.XXXXXX)
SOCK=$D/rpc.sock
passed=0
failed=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$D"
}
trap cleanup EXIT

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "not ok - $1"; failed=$((failed + 1)); }

# rpc ARGS...: the CLI on the current socket; output in $out, stderr in $err.
rpc() {
	out=$("$BIN/nvme-emu-rpc" -s "$SOCK" -t 60 "$@" 2> "$D/err")
	local rc=$?
	err=$(cat "$D/err")
	return $rc
}

# ok NAME ARGS...: the call succeeds.
ok() {
	local name=$1
	shift
	if rpc "$@"; then pass "$name"; else fail "$name: $err"; fi
}

# ok_out NAME REGEX ARGS...: the call succeeds and its output matches REGEX.
ok_out() {
	local name=$1 re=$2
	shift 2
	if rpc "$@" && grep -Eq -- "$re" <<< "$out"; then
		pass "$name"
	else
		fail "$name: rc/out/err: $out $err"
	fi
}

# bad NAME REGEX ARGS...: the call fails and the error message matches REGEX.
bad() {
	local name=$1 re=$2
	shift 2
	if rpc "$@"; then
		fail "$name: succeeded: $out"
	elif grep -Eq -- "$re" <<< "$err"; then
		pass "$name"
	else
		fail "$name: wrong error: $err"
	fi
}

# check NAME CMD...: a plain command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# start_daemon LOG ARGS...: starts nvme-emu, waits (bounded) for $SOCK; pid in $dpid.
start_daemon() {
	local log=$1
	shift
	"$BIN/nvme-emu" "$@" > "$log" 2>&1 &
	dpid=$!
	pids+=("$dpid")
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && "$BIN/nvme-emu-rpc" -s "$SOCK" -t 5 spdk_get_version \
			> /dev/null 2>&1 && return 0
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	echo "daemon did not start:"
	tail -n 20 "$log"
	return 1
}

# stop_daemon: SIGTERM, wait (bounded); returns the exit status (ASan leaks make it non-zero).
stop_daemon() {
	kill -TERM "$dpid" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$dpid" 2>/dev/null && kill -9 "$dpid"
	wait "$dpid"
}

NQN1=nqn.2026-11.io.nvme-emu:test1
NQN2=nqn.2026-11.io.nvme-emu:test2

check "daemon starts with -r" start_daemon "$D/d1.log" -r "$SOCK"
check "socket mode 0600" test "$(stat -c %a "$SOCK")" = 600

# ---- framework ----
ok_out "rpc_get_methods lists nvmf_subsystem_add_listener" '"nvmf_subsystem_add_listener"' \
	rpc_get_methods
ok "rpc_get_methods" rpc_get_methods
check "... without the aliases by default (as SPDK)" test "$(grep -c nvmf_doca_ <<< "$out")" -eq 0
ok_out "rpc_get_methods --include_aliases lists nvmf_doca_*" '"nvmf_doca_create_function"' \
	rpc_get_methods --include_aliases
check "CLI --help lists the server's methods" sh -c "'$BIN/nvme-emu-rpc' -s '$SOCK' --help | grep -q nvmf_get_stats"
ok_out "spdk_get_version" '"version": "SPDK v' spdk_get_version
ok_out "nvme_emu_get_version" '"nvme-emu [0-9]' nvme_emu_get_version
bad "unknown method: -32601" 'code -32601' no_such_method
bad "params of the wrong type: -32602" 'code -32602' spdk_get_version --x 1
ok_out "log_get_level" '^info$' log_get_level
ok "log_set_level debug" log_set_level --level debug
ok_out "log_get_level after set" '^debug$' log_get_level
bad "log_set_level bogus" 'level must be' log_set_level --level bogus
bad "log_set_level without level" "missing parameter 'level'" log_set_level
ok "log_set_level INFO (SPDK spelling)" log_set_level --level INFO
bad "framework_start_init when running: -32601" 'code -32601' framework_start_init
ok_out "framework_wait_init when running" true framework_wait_init

# ---- bdevs ----
ok_out "bdev_malloc_create named" '^M0$' bdev_malloc_create --name M0 --num_blocks 16384 \
	--block_size 512
ok_out "bdev_malloc_create auto-named" '^Malloc0$' bdev_malloc_create --num_blocks 8192 \
	--block_size 4096
ok_out "bdev_malloc_create with uuid (JSON params)" '^M1$' bdev_malloc_create \
	'{"name": "M1", "num_blocks": 16384, "block_size": 512, "uuid": "11111111-2222-3333-4444-555555555555"}'
bad "bdev_malloc_create duplicate" 'already exists' bdev_malloc_create --name M0 \
	--num_blocks 16 --block_size 512
bad "bdev_malloc_create bad block size" 'block_size' bdev_malloc_create --name X \
	--num_blocks 16 --block_size 1000
bad "bdev_malloc_create missing num_blocks" "code -32602" bdev_malloc_create --name X \
	--block_size 512
bad "bdev_malloc_create num_blocks a string" "'num_blocks' must be" bdev_malloc_create \
	--name X --num_blocks abc --block_size 512
bad "bdev_malloc_create negative num_blocks" "'num_blocks' must be" bdev_malloc_create \
	--name X --num_blocks -5 --block_size 512
bad "bdev_malloc_create unknown parameter" "unknown parameter 'colour'" bdev_malloc_create \
	--name X --num_blocks 16 --block_size 512 --colour blue
bad "bdev_malloc_create bad uuid" 'bad uuid' bdev_malloc_create --name X --num_blocks 16 \
	--block_size 512 --uuid nope
ok_out "bdev_null_create" '^N0$' bdev_null_create --name N0 --num_blocks 16384 --block_size 512
bad "bdev_null_create duplicate" 'already exists' bdev_null_create --name N0 --num_blocks 16 \
	--block_size 512
truncate -s 8M "$D/aio.img"
ok_out "bdev_aio_create" '^A0$' bdev_aio_create --name A0 --filename "$D/aio.img" \
	--block_size 512
bad "bdev_aio_create missing file" 'cannot open' bdev_aio_create --name A1 \
	--filename "$D/nope/none.img"
bad "bdev_aio_create without filename" "missing parameter 'filename'" bdev_aio_create \
	--name A1
# Polled io_uring needs a device with poll queues; where /tmp's has none, the create says so.
if [ "$(cat "/sys/dev/block/$(stat -c '%Hd:%Ld' "$D")/queue/io_poll" \
	"/sys/dev/block/$(stat -c '%Hd:%Ld' "$D")/../queue/io_poll" 2> /dev/null | head -1)" = 1 ]; then
	ok_out "bdev_uring_create poll" '^U9$' bdev_uring_create --name U9 --filename "$D/aio.img" \
		--poll
	ok_out "bdev_get_bdevs uring poll" '"poll": true' bdev_get_bdevs --name U9
	ok "bdev_uring_delete polled" bdev_uring_delete --name U9
else
	bad "bdev_uring_create poll on a device that does not poll" 'cannot poll.*O_DIRECT' \
		bdev_uring_create --name U9 --filename "$D/aio.img" --poll
	bad "bdev_uring_create poll: nothing created" 'no bdev' bdev_get_bdevs --name U9
fi
ok_out "bdev_get_bdevs lists 5" '"name": "A0"' bdev_get_bdevs
check "bdev_get_bdevs count is 5" test "$(grep -c '"product_name"' <<< "$out")" -eq 5
ok_out "bdev_get_bdevs by name" '"num_blocks": 16384' bdev_get_bdevs --name M1
check "bdev_get_bdevs keeps the uuid" grep -q 11111111-2222-3333-4444-555555555555 <<< "$out"
ok_out "bdev_get_bdevs aio filename" "\"filename\": \"$D/aio.img\"" bdev_get_bdevs --name A0
bad "bdev_get_bdevs unknown" 'no bdev' bdev_get_bdevs --name zzz
ok "bdev_null_delete" bdev_null_delete --name N0
bad "bdev_null_delete again" 'no null bdev' bdev_null_delete --name N0
ok_out "bdev_null_create read_zeroes" '^NZ$' bdev_null_create --name NZ --num_blocks 64 \
	--block_size 512 --read_zeroes true
ok_out "save_config keeps read_zeroes" '"read_zeroes": true' save_config
bad "bdev_null_create read_zeroes not a bool" "'read_zeroes' must be" bdev_null_create \
	--name NY --num_blocks 64 --block_size 512 --read_zeroes 7
ok "bdev_null_delete read_zeroes" bdev_null_delete --name NZ
bad "bdev_malloc_delete of an aio bdev" 'no malloc bdev' bdev_malloc_delete --name A0
ok "bdev_aio_delete" bdev_aio_delete --name A0
ok "bdev_malloc_delete" bdev_malloc_delete --name Malloc0
# Stacked bdevs: SPDK's bdev_error and bdev_delay.
ok_out "bdev_error_create answers true" '^true$' bdev_error_create --base_name M1
bad "bdev_error_create twice" 'already exists' bdev_error_create --base_name M1
bad "bdev_delay_create over a claimed base" 'is claimed' bdev_delay_create --base_bdev_name M1 \
	--name Dx --avg_read_latency 1 --p99_read_latency 1 --avg_write_latency 1 \
	--p99_write_latency 1
bad "bdev_error_create over nothing" 'does not exist' bdev_error_create --base_name zzz
bad "bdev_malloc_delete of a stacked-on base" 'in use' bdev_malloc_delete --name M1
ok_out "bdev_delay_create answers the name" '^D0$' bdev_delay_create --base_bdev_name EE_M1 \
	--name D0 --avg_read_latency 10 --p99_read_latency 100 --avg_write_latency 10 \
	--p99_write_latency 100
ok_out "bdev_get_bdevs: delay's driver_specific" '"base_bdev_name": "EE_M1"' bdev_get_bdevs --name D0
ok "bdev_error_inject_error nvme_failure" bdev_error_inject_error --name EE_M1 --io_type read \
	--error_type nvme_failure --nvme_sct 2 --nvme_sc 129 --num 3
bad "bdev_error_inject_error bad io_type" "io_type 'sideways'" bdev_error_inject_error \
	--name EE_M1 --io_type sideways --error_type failure
bad "bdev_error_inject_error corrupt_data without a value" 'corrupt_value' \
	bdev_error_inject_error --name EE_M1 --io_type read --error_type corrupt_data
bad "bdev_error_inject_error on a non-error bdev" 'no error bdev' bdev_error_inject_error \
	--name D0 --io_type read --error_type failure
ok "bdev_error_inject_error clear" bdev_error_inject_error --name EE_M1 --io_type clear \
	--error_type failure
ok "bdev_error_resume_pending" bdev_error_resume_pending --name EE_M1
ok "bdev_delay_update_latency" bdev_delay_update_latency --delay_bdev_name D0 \
	--latency_type p99_write --latency_us 5000
ok_out "the new latency is shown" '"p99_write_latency": 5000' bdev_get_bdevs --name D0
bad "bdev_delay_update_latency bad type" "latency_type 'p50'" bdev_delay_update_latency \
	--delay_bdev_name D0 --latency_type p50 --latency_us 1
bad "bdev_error_delete while stacked on" 'in use' bdev_error_delete --name EE_M1
ok "bdev_delay_delete" bdev_delay_delete --name D0
ok "bdev_error_delete" bdev_error_delete --name EE_M1

# ---- transport ----
ok "subsystem before the transport" nvmf_create_subsystem --nqn nqn.2026-11.io.nvme-emu:pre
bad "add_listener before a transport" 'nvmf_create_transport first' \
	nvmf_subsystem_add_listener --nqn nqn.2026-11.io.nvme-emu:pre \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/x.sock"
ok "nvmf_delete_subsystem" nvmf_delete_subsystem --nqn nqn.2026-11.io.nvme-emu:pre
ok "nvmf_get_transports" nvmf_get_transports
check "nvmf_get_transports is empty" test "$(tr -d ' \n' <<< "$out")" = "[]"
ok_out "nvmf_get_stats without a transport: empty, as SPDK" '"tick_rate": 1000000' nvmf_get_stats
check "... with no poll group" test "$(grep -c nvmf_tgt_poll_group <<< "$out")" -eq 0
bad "nvmf_create_transport bad trtype" 'not supported' nvmf_create_transport --trtype TCP
bad "nvmf_create_transport bad doorbells" 'doorbells must be' nvmf_create_transport \
	--trtype PCIE_EMU --doorbells sometimes
bad "nvmf_create_transport bad max_io_size" 'max_io_size' nvmf_create_transport \
	--trtype PCIE_EMU --max_io_size 5000
ok "nvmf_create_transport (DOCA alias, 2 poll groups)" nvmf_create_transport --trtype DOCA \
	--num_poll_groups 2 --dpa_harts 1 --max_io_qpairs_per_ctrlr 4 --max_io_size 131072
bad "nvmf_create_transport twice" 'already exists' nvmf_create_transport --trtype PCIE_EMU
ok_out "nvmf_get_transports" '"num_poll_groups": 2' nvmf_get_transports
ok_out "nvmf_get_transports by trtype" '"max_io_qpairs_per_ctrlr": 4' nvmf_get_transports \
	--trtype PCIE_EMU

# ---- subsystems and namespaces ----
bad "nvmf_create_subsystem empty event_log_file" 'must not be empty' nvmf_create_subsystem \
	--nqn "$NQN1" --event_log_file ""
ok "nvmf_create_subsystem" nvmf_create_subsystem --nqn "$NQN1" --serial_number SN0001 \
	--model_number "nvme-emu test" --allow_any_host --event_log_file "$D/ev1.pel"
bad "nvmf_create_subsystem duplicate" 'already exists' nvmf_create_subsystem --nqn "$NQN1"
bad "nvmf_create_subsystem bad nqn" 'invalid NQN' nvmf_create_subsystem --nqn foo
bad "nvmf_create_subsystem long serial" 'serial_number' nvmf_create_subsystem --nqn "$NQN2" \
	--serial_number 123456789012345678901
bad "nvmf_create_subsystem numeric serial" "'serial_number' must be a string" \
	nvmf_create_subsystem --nqn "$NQN2" --serial_number 1234
ok "nvmf_create_subsystem quoted digits" nvmf_create_subsystem --nqn "$NQN2" \
	--serial_number '"1234"' --max_namespaces 4
ok_out "nvmf_subsystem_add_ns returns the nsid" '^1$' nvmf_subsystem_add_ns --nqn "$NQN1" \
	--namespace.bdev_name M0
ok_out "nvmf_subsystem_add_ns with nsid and uuid" '^3$' nvmf_subsystem_add_ns --nqn "$NQN1" \
	--namespace '{"bdev_name": "M1", "nsid": 3, "uuid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}'
bad "nvmf_subsystem_add_ns bdev already used" 'already a namespace' nvmf_subsystem_add_ns \
	--nqn "$NQN2" --namespace.bdev_name M0
bad "nvmf_subsystem_add_ns unknown bdev" 'does not exist' nvmf_subsystem_add_ns \
	--nqn "$NQN2" --namespace.bdev_name nope
bad "nvmf_subsystem_add_ns unknown subsystem" 'no subsystem' nvmf_subsystem_add_ns \
	--nqn nqn.2026-11.io.nvme-emu:none --namespace.bdev_name M0
bad "nvmf_subsystem_add_ns without namespace" "missing parameter 'namespace'" \
	nvmf_subsystem_add_ns --nqn "$NQN1"
ok "bdev for nsid tests" bdev_malloc_create --name M2 --num_blocks 2048 --block_size 512
bad "nvmf_subsystem_add_ns nsid in use" 'in use' nvmf_subsystem_add_ns --nqn "$NQN1" \
	--namespace.bdev_name M2 --namespace.nsid 3
bad "nvmf_subsystem_add_ns nsid above max_namespaces" 'max_namespaces' nvmf_subsystem_add_ns \
	--nqn "$NQN2" --namespace.bdev_name M2 --namespace.nsid 5
bad "bdev_malloc_delete of a namespace's bdev" 'in use' bdev_malloc_delete --name M0
ok_out "nvmf_get_subsystems" '"serial_number": "SN0001"' nvmf_get_subsystems
ok_out "nvmf_get_subsystems by nqn" '"max_namespaces": 4' nvmf_get_subsystems --nqn "$NQN2"
bad "nvmf_get_subsystems unknown" 'no subsystem' nvmf_get_subsystems \
	--nqn nqn.2026-11.io.nvme-emu:none

# ---- listeners ----
ok "nvmf_subsystem_add_listener on a path" nvmf_subsystem_add_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.adrfam PCIE \
	--listen_address.traddr "$D/c1.sock"
check "the function's vfio-user socket exists" test -S "$D/c1.sock"
# SMART / Health steering of that controller.
ok_out "nvmf_emu_get_health: 40 C idle, 100 % spare" '"available_spare": 100' \
	nvmf_emu_get_health --nqn "$NQN1"
ok_out "nvmf_emu_set_health 85 C: temperature warning" '"critical_warning": 2' \
	nvmf_emu_set_health --nqn "$NQN1" --temperature_c 85
ok_out "nvmf_emu_set_health reset" '"critical_warning": 0' nvmf_emu_set_health --nqn "$NQN1" \
	--reset true
bad "nvmf_emu_set_health spare 101" 'available_spare' nvmf_emu_set_health --nqn "$NQN1" \
	--available_spare 101
bad "nvmf_emu_get_health of no subsystem" 'no subsystem' nvmf_emu_get_health --nqn nope
bad "nvmf_emu_inject_media_error on no namespace" 'no namespace 9' nvmf_emu_inject_media_error \
	--nqn "$NQN1" --nsid 9 --lba 0
# A second listener is a second controller of the subsystem (CNTLID 2), until it is removed.
ok "a second listener" nvmf_subsystem_add_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1b.sock"
ok_out "nvmf_subsystem_get_listeners: two, CNTLIDs 1 and 2" '"cntlid": 2' \
	nvmf_subsystem_get_listeners --nqn "$NQN1"
check "... and both sockets" grep -q 'c1b.sock' <<< "$out"
bad "the same socket twice" 'already a listener of .*controller 2' nvmf_subsystem_add_listener \
	--nqn "$NQN1" --listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1b.sock"
ok "remove the second listener" nvmf_subsystem_remove_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1b.sock"
bad "remove it again" 'no listener at' nvmf_subsystem_remove_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1b.sock"
bad "nvmf_emu_get_health of controller 2 (gone)" 'no controller 2' nvmf_emu_get_health \
	--nqn "$NQN1" --cntlid 2
bad "listener on a socket in use" 'already a listener' nvmf_subsystem_add_listener \
	--nqn "$NQN2" --listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1.sock"
bad "listener in a missing directory" 'cannot create a socket' nvmf_subsystem_add_listener \
	--nqn "$NQN2" --listen_address.trtype PCIE_EMU --listen_address.traddr "$D/no/c2.sock"
bad "listener on an unknown VUID" 'no function with VUID' nvmf_subsystem_add_listener \
	--nqn "$NQN2" --listen_address.trtype PCIE_EMU --listen_address.traddr nosuchvuid
bad "listener with a bad trtype" 'not supported' nvmf_subsystem_add_listener --nqn "$NQN2" \
	--listen_address.trtype RDMA --listen_address.traddr "$D/c2.sock"
bad "listener without traddr" "missing parameter 'traddr'" nvmf_subsystem_add_listener \
	--nqn "$NQN2" --listen_address.trtype PCIE_EMU
ok_out "nvmf_get_subsystems shows the listener" "\"traddr\": \"$D/c1.sock\"" \
	nvmf_get_subsystems --nqn "$NQN1"
ok_out "nvmf_get_stats: poll groups" 'nvmf_tgt_poll_group_1' nvmf_get_stats
check "nvmf_get_stats: the controller" grep -q "\"nqn\": \"$NQN1\"" <<< "$out"
check "nvmf_get_stats: DPA harts" grep -q '"hart": 0' <<< "$out"
check "nvmf_get_stats: the poll window (0: harts poll, not the group)" grep -q '"poll_window_us": 0' <<< "$out"
ok "nvmf_subsystem_add_ns on a live controller" nvmf_subsystem_add_ns --nqn "$NQN1" \
	--namespace.bdev_name M2
ok "nvmf_subsystem_remove_ns on a live controller" nvmf_subsystem_remove_ns --nqn "$NQN1" \
	--nsid 2
bad "nvmf_subsystem_remove_ns again" 'no namespace 2' nvmf_subsystem_remove_ns \
	--nqn "$NQN1" --nsid 2
# Zone faults on a zoned namespace of the live controller (16 zones of 1024 blocks).
check "a zoned namespace 2 (bdev_zone_block_create over MZ)" sh -c "
	'$BIN/nvme-emu-rpc' -s '$SOCK' bdev_malloc_create --name MZ --num_blocks 16384 --block_size 512 &&
	'$BIN/nvme-emu-rpc' -s '$SOCK' bdev_zone_block_create --name ZB --base_bdev MZ \
		--zone_capacity 1024 --optimal_open_zones 1 --zone_desc_ext_size 256 \
		--state_file '$D/zb.state' &&
	'$BIN/nvme-emu-rpc' -s '$SOCK' nvmf_subsystem_add_ns --nqn '$NQN1' --namespace.bdev_name ZB \
		--namespace.nsid 2 > /dev/null"
ok_out "bdev_get_bdevs: zone_desc_ext_size" '"zone_desc_ext_size": 256' bdev_get_bdevs --name ZB
check "bdev_get_bdevs: state_file" grep -q "\"state_file\": \"$D/zb.state\"" <<< "$out"
# The zone state file is made with the namespace (its live words change with the zones):
# header, live words, 16 x 256 bytes of descriptor extensions, two checkpoints, 4 KiB each.
check "the zone state file made with the zoned namespace (5 x 4 KiB)" \
	test "$(stat -c %s "$D/zb.state" 2> /dev/null)" = 20480
bad "bdev_zone_block_create empty state_file" 'empty state_file' bdev_zone_block_create \
	--name ZB2 --base_bdev M2 --zone_capacity 64 --optimal_open_zones 1 --state_file ""
bad "bdev_zone_block_create zone_desc_ext_size 100" 'zone_desc_ext_size \(a multiple of 64' \
	bdev_zone_block_create --name ZB2 --base_bdev M2 --zone_capacity 64 --optimal_open_zones 1 \
	--zone_desc_ext_size 100
# Placement bdevs (Flexible Data Placement, issue 35).
ok "bdev_malloc_create MF (8 MiB)" bdev_malloc_create --name MF --num_blocks 16384 --block_size 512
ok "bdev_fdp_create FD over MF: 2 handles, 512 KiB reclaim units" bdev_fdp_create --name FD \
	--base_bdev MF --num_ruh 2 --ru_size 524288
ok_out "bdev_get_bdevs: FD's placement" '"num_ruh": 2' bdev_get_bdevs --name FD
check "bdev_get_bdevs: ru_size" grep -q '"ru_size": 524288' <<< "$out"
bad "bdev_fdp_create num_ruh 0" 'num_ruh must be 1..128' bdev_fdp_create --name FD2 \
	--base_bdev M2 --num_ruh 0 --ru_size 524288
bad "bdev_fdp_create num_ruh 129" 'num_ruh must be 1..128' bdev_fdp_create --name FD2 \
	--base_bdev M2 --num_ruh 129 --ru_size 524288
bad "bdev_fdp_create ru_size not a multiple of the block size" 'num_ruh must be 1..128' \
	bdev_fdp_create --name FD2 --base_bdev M2 --num_ruh 2 --ru_size 1000
bad "bdev_fdp_create too few reclaim units" 'fewer than num_ruh' bdev_fdp_create --name FD2 \
	--base_bdev M2 --num_ruh 2 --ru_size 1073741824
bad "bdev_fdp_create on a claimed base" 'is claimed' bdev_fdp_create --name FD2 --base_bdev MF \
	--num_ruh 2 --ru_size 524288
bad "bdev_fdp_create on no base" 'does not exist' bdev_fdp_create --name FD2 --base_bdev nope \
	--num_ruh 2 --ru_size 524288
bad "nvmf_create_subsystem fdp_ruh 200" 'fdp_ruh is 0..128' nvmf_create_subsystem \
	--nqn nqn.2026-11.io.nvme-emu:fdpbad --fdp_ruh 200
bad "nvmf_create_subsystem fdp_ru_size without fdp_ruh" 'fdp_ruh is 0..128' \
	nvmf_create_subsystem --nqn nqn.2026-11.io.nvme-emu:fdpbad --fdp_ru_size 1048576
ok "bdev_fdp_delete FD" bdev_fdp_delete --name FD
# Answered once the owner thread has drained and exited and the base is released.
check "bdev_fdp_delete answered after its owner thread exited" \
	test "$(grep -lx bdev-fdp /proc/$dpid/task/*/comm 2> /dev/null | wc -l)" = 0
# A creation that fails on the owner thread (MF holds FD's layout: 2 handles) is answered with
# the reason once the superblock was read, and leaves no bdev and no owner thread behind.
bad "bdev_fdp_create over a layout of other handles" \
	'placement layout of other parameters \(2 handles, reclaim units of 1024 blocks' \
	bdev_fdp_create --name FD3 --base_bdev MF --num_ruh 3 --ru_size 524288
bad "bdev_fdp_create over a layout of another unit size" \
	'placement layout of other parameters \(2 handles, reclaim units of 1024 blocks' \
	bdev_fdp_create --name FD3 --base_bdev MF --num_ruh 2 --ru_size 262144
bad "no bdev FD3 left" 'FD3' bdev_get_bdevs --name FD3
check "no bdev-fdp thread left" test "$(grep -lx bdev-fdp /proc/$dpid/task/*/comm 2> /dev/null |
	wc -l)" = 0
ok "bdev_fdp_create FD over MF again (its layout found), answered after the load" \
	bdev_fdp_create --name FD --base_bdev MF --num_ruh 2 --ru_size 524288
check "its owner thread runs" test "$(grep -lx bdev-fdp /proc/$dpid/task/*/comm 2> /dev/null |
	wc -l)" = 1
# A subsystem of FDP (2 handles, 512 KiB units) with a live controller: a namespace whose bdev
# does not fit the configuration is refused with the reason.
NQNF=nqn.2026-11.io.nvme-emu:fdp
ok "nvmf_create_subsystem with fdp_ruh 2, fdp_ru_size 512 KiB" nvmf_create_subsystem \
	--nqn "$NQNF" --fdp_ruh 2 --fdp_ru_size 524288
ok "its listener" nvmf_subsystem_add_listener --nqn "$NQNF" --listen_address.trtype PCIE_EMU \
	--listen_address.adrfam PCIE --listen_address.traddr "$D/cf.sock"
ok "bdev_malloc_create FDB3 (8 MiB)" bdev_malloc_create --name FDB3 --num_blocks 16384 \
	--block_size 512
ok "bdev_fdp_create FD3 over FDB3: 3 handles" bdev_fdp_create --name FD3 --base_bdev FDB3 \
	--num_ruh 3 --ru_size 524288
bad "nvmf_subsystem_add_ns of a plain bdev: the reason" 'bdev M2 places nothing .*2 handles and reclaim units of 524288 bytes' \
	nvmf_subsystem_add_ns --nqn "$NQNF" --namespace.bdev_name M2
bad "nvmf_subsystem_add_ns of 3 handles: the reason" 'bdev FD3 has 3 placement handles and reclaim units of 524288 bytes, the FDP configuration 2 and 524288' \
	nvmf_subsystem_add_ns --nqn "$NQNF" --namespace.bdev_name FD3
ok "nvmf_subsystem_add_ns of FD (2 handles, 512 KiB)" nvmf_subsystem_add_ns --nqn "$NQNF" \
	--namespace.bdev_name FD
ok "nvmf_delete_subsystem of FDP" nvmf_delete_subsystem --nqn "$NQNF"
ok "bdev_fdp_delete FD3" bdev_fdp_delete --name FD3
ok "bdev_fdp_delete FD" bdev_fdp_delete --name FD
bad "bdev_fdp_delete FD again" 'no fdp bdev FD' bdev_fdp_delete --name FD
bad "bdev_fdp_delete of a malloc bdev" 'no fdp bdev MF' bdev_fdp_delete --name MF
ok_out "nvmf_emu_set_zone_state read_only: read back from the controller" \
	'"state": "read_only"' nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 2048 \
	--state read_only
ok_out "nvmf_emu_set_zone_state offline" '"state": "offline"' nvmf_emu_set_zone_state \
	--nqn "$NQN1" --nsid 2 --zslba 2048 --state offline
bad "nvmf_emu_set_zone_state offline -> read_only" 'no way back' nvmf_emu_set_zone_state \
	--nqn "$NQN1" --nsid 2 --zslba 2048 --state read_only
bad "nvmf_emu_set_zone_state not a zone start" 'not the first LBA of a zone' \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 2049 --state offline
bad "nvmf_emu_set_zone_state past the namespace" 'not the first LBA of a zone' \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 16384 --state offline
bad "nvmf_emu_set_zone_state bad state" "state 'full'" nvmf_emu_set_zone_state \
	--nqn "$NQN1" --nsid 2 --zslba 0 --state full
bad "nvmf_emu_set_zone_state on an NVM namespace" 'namespace 1 of .* is not zoned' \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 1 --zslba 0 --state offline
bad "nvmf_emu_set_zone_state on no namespace" 'no namespace 9' nvmf_emu_set_zone_state \
	--nqn "$NQN1" --nsid 9 --zslba 0 --state offline
bad "nvmf_emu_set_zone_state on a subsystem without controller" 'has no controller' \
	nvmf_emu_set_zone_state --nqn "$NQN2" --nsid 1 --zslba 0 --state offline
bad "nvmf_emu_set_zone_state without state" "missing parameter 'state'" \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 0
# The zoned namespace stays: its zones go through the configuration round trip below.

# ---- managers and functions ----
ok_out "nvmf_emu_get_managers has local" '"name": "local"' nvmf_emu_get_managers
ok "nvmf_emu_create_manager" nvmf_emu_create_manager --name qemu0 \
	--qmp_socket "$D/qmp-none.sock" --hotplug_ports '["hp0", "hp1"]'
bad "nvmf_emu_create_manager duplicate" 'already exists' nvmf_emu_create_manager \
	--name qemu0 --qmp_socket "$D/q.sock"
bad "nvmf_emu_create_manager without qmp_socket" "missing parameter 'qmp_socket'" \
	nvmf_emu_create_manager --name qemu1
ok_out "nvmf_doca_get_managers (alias)" '"qmp_socket"' nvmf_doca_get_managers
ok_out "nvmf_emu_create_function returns a VUID" '^nvme-emu-[0-9]+$' \
	nvmf_emu_create_function --manager local
VUID=$out
ok_out "nvmf_emu_create_function with a VUID and socket" '^fnA$' nvmf_emu_create_function \
	--vuid fnA --socket "$D/fnA.sock"
bad "nvmf_emu_create_function duplicate VUID" 'already exists' nvmf_emu_create_function \
	--vuid fnA
bad "nvmf_emu_create_function unknown manager" 'no emulation manager' \
	nvmf_emu_create_function --manager nope
ok "nvmf_doca_create_function (alias) on a QEMU manager" nvmf_doca_create_function \
	--dev_name qemu0 --vuid fnQ
ok "listener on a function by VUID" nvmf_subsystem_add_listener --nqn "$NQN2" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr fnA
check "fnA's socket exists" test -S "$D/fnA.sock"
ok_out "nvmf_emu_list_functions shows fnA attached" "\"subsystem\": \"$NQN2\"" \
	nvmf_emu_list_functions
ok_out "nvmf_doca_list_functions by manager" '"vuid": "fnQ"' nvmf_doca_list_functions \
	--manager qemu0
bad "nvmf_emu_destroy_function attached" 'is the listener of' nvmf_emu_destroy_function \
	--vuid fnA
bad "nvmf_emu_delete_manager with functions" 'still has function' nvmf_emu_delete_manager \
	--name qemu0
ok "nvmf_emu_create_subsystem for QEMU" nvmf_create_subsystem \
	--nqn nqn.2026-11.io.nvme-emu:q --serial_number QQ
bad "listener on a QEMU manager whose QMP socket is missing" 'QMP socket' \
	nvmf_subsystem_add_listener --nqn nqn.2026-11.io.nvme-emu:q \
	--listen_address.trtype PCIE_EMU --listen_address.traddr fnQ
ok "nvmf_get_subsystems after the failed hotplug" nvmf_get_subsystems \
	--nqn nqn.2026-11.io.nvme-emu:q
check "the failed hotplug left no listener" grep -q '"listen_addresses":\[\]' \
	<<< "$(tr -d ' \n' <<< "$out")"
ok_out "... and the function is free" '"subsystem": null' nvmf_emu_list_functions \
	--manager qemu0
ok "nvmf_delete_subsystem (no listener)" nvmf_delete_subsystem --nqn nqn.2026-11.io.nvme-emu:q
ok "nvmf_emu_destroy_function" nvmf_emu_destroy_function --vuid fnQ
bad "nvmf_emu_destroy_function again" 'no function' nvmf_emu_destroy_function --vuid fnQ
ok "nvmf_emu_delete_manager" nvmf_emu_delete_manager --name qemu0
bad "nvmf_emu_delete_manager local" 'cannot be deleted' nvmf_emu_delete_manager --name local

# ---- configuration ----
ok_out "framework_get_config bdev" '"method": "bdev_malloc_create"' framework_get_config \
	--name bdev
ok_out "framework_get_config nvmf" '"method": "nvmf_subsystem_add_listener"' \
	framework_get_config --name nvmf
bad "framework_get_config unknown" 'no subsystem' framework_get_config --name iscsi
ok "save_config" save_config
echo "$out" > "$D/config.json"
check "save_config keeps event_log_file" grep -q "\"event_log_file\": \"$D/ev1.pel\"" \
	"$D/config.json"
check "the controller's event log file" test -s "$D/ev1.pel"
# -o FILE: the result replaces FILE whole (no temporary file left beside it), as printed.
echo stale > "$D/saved.json"
ok "save_config -o FILE" -o "$D/saved.json" save_config
check "save_config -o FILE holds the configuration" cmp -s "$D/saved.json" "$D/config.json"
check "save_config -o FILE leaves no temporary file" \
	test "$(ls "$D" | grep -c '^saved\.json')" = 1
ok_out "nvmf_subsystem_remove_listener" true nvmf_subsystem_remove_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1.sock"
check "the socket is gone" test ! -e "$D/c1.sock"
bad "nvmf_subsystem_remove_listener again" 'has no listener' \
	nvmf_subsystem_remove_listener --nqn "$NQN1" --listen_address.trtype PCIE_EMU \
	--listen_address.traddr "$D/c1.sock"
bad "nvmf_subsystem_remove_listener wrong address" 'no listener at' \
	nvmf_subsystem_remove_listener --nqn "$NQN2" --listen_address.trtype PCIE_EMU \
	--listen_address.traddr "$D/other.sock"
ok "listener back on the same path" nvmf_subsystem_add_listener --nqn "$NQN1" \
	--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/c1.sock"
ok "nvmf_delete_subsystem with a live listener" nvmf_delete_subsystem --nqn "$NQN1"
check "its socket is gone" test ! -e "$D/c1.sock"
check "the zone state file kept when the zoned namespace went (5 x 4 KiB)" \
	test "$(stat -c %s "$D/zb.state" 2> /dev/null)" = 20480
bad "nvmf_delete_subsystem again" 'no subsystem' nvmf_delete_subsystem --nqn "$NQN1"
ok "M0 is free again: bdev_malloc_delete" bdev_malloc_delete --name M0

check "daemon exits cleanly on SIGTERM" stop_daemon
check "RPC socket removed at exit" test ! -e "$SOCK"

# Round trip: the saved configuration comes back with -c.
check "daemon starts with -c" start_daemon "$D/d2.log" -r "$SOCK" -c "$D/config.json"
ok "save_config after -c" save_config
echo "$out" > "$D/config2.json"
check "same configuration after the restart" cmp -s "$D/config.json" "$D/config2.json"
check "listener sockets back" test -S "$D/c1.sock" -a -S "$D/fnA.sock"
bad "zone 2048 is still offline after the restart (state_file)" 'no way back' \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 2048 --state read_only
ok_out "the other zones are as they were (zone 0 can go read only)" '"state": "read_only"' \
	nvmf_emu_set_zone_state --nqn "$NQN1" --nsid 2 --zslba 0 --state read_only

# Many functions: 8 more controllers, each with its own socket, subsystem and namespace.
many_ok=1
for i in $(seq 0 7); do
	rpc bdev_malloc_create --name "MF$i" --num_blocks 4096 --block_size 512 &&
		rpc nvmf_create_subsystem --nqn "nqn.2026-11.io.nvme-emu:many$i" \
			--serial_number "\"MANY$i\"" &&
		rpc nvmf_subsystem_add_ns --nqn "nqn.2026-11.io.nvme-emu:many$i" \
			--namespace.bdev_name "MF$i" &&
		rpc nvmf_subsystem_add_listener --nqn "nqn.2026-11.io.nvme-emu:many$i" \
			--listen_address.trtype PCIE_EMU --listen_address.traddr "$D/many$i.sock" &&
		[ -S "$D/many$i.sock" ] || { many_ok=0; echo "controller $i: $err"; }
done
check "8 more controllers, each with its own socket" test "$many_ok" = 1
ok_out "nvmf_get_stats lists 10 controllers" 'many7' nvmf_get_stats
check "10 controllers in the stats" test "$(grep -c '"vuid"' <<< "$out")" -eq 10
check "daemon with 10 controllers exits cleanly" stop_daemon

# --wait-for-rpc: only startup methods until framework_start_init, which replays -c.
check "daemon starts with --wait-for-rpc" start_daemon "$D/d3.log" -r "$SOCK" \
	--wait-for-rpc -c "$D/config.json"
bad "runtime method before framework_start_init" 'framework_start_init' bdev_get_bdevs
ok_out "rpc_get_methods --current before init" 'framework_start_init' rpc_get_methods \
	--current
check "... without runtime methods" test "$(grep -c bdev_get_bdevs <<< "$out")" -eq 0
ok "framework_start_init (replays -c)" framework_start_init
ok_out "the configuration is loaded" '"name": "M1"' bdev_get_bdevs
bad "framework_start_init twice: -32601" 'code -32601' framework_start_init
check "daemon exits cleanly" stop_daemon

# The default socket, under $XDG_RUNTIME_DIR.
mkdir -p "$D/xdg"
SOCK=$D/xdg/nvme-emu.sock
export XDG_RUNTIME_DIR=$D/xdg
check "daemon starts on the default socket" start_daemon "$D/d4.log"
check "CLI finds the default socket" sh -c "'$BIN/nvme-emu-rpc' spdk_get_version > /dev/null"
check "a second daemon refuses the live socket" sh -c "! '$BIN/nvme-emu' > '$D/d5.log' 2>&1"
check "daemon exits cleanly" stop_daemon
unset XDG_RUNTIME_DIR

# The command line of one controller still works, with RPC beside it.
SOCK=$D/legacy-rpc.sock
check "nvme-emu --socket --malloc -r starts" start_daemon "$D/d6.log" --socket "$D/legacy.sock" \
	--malloc 8M --null 4M -m 0x3 -r "$SOCK"
ok_out "its subsystem has two namespaces" '"bdev_name": "Null1"' nvmf_get_subsystems
ok_out "its transport has 2 poll groups (cpumask 0x3)" '"num_poll_groups": 2' \
	nvmf_get_transports
check "daemon exits cleanly" stop_daemon
check "--zoned ZCAP:OPEN:ACTIVE:ZDES starts" start_daemon "$D/d6z.log" --socket "$D/legacy.sock" \
	--malloc 8M --zoned 1024:2:4:128 -r "$SOCK"
ok_out "--zoned: the zone block bdev has 128-byte zone descriptor extensions" \
	'"zone_desc_ext_size": 128' bdev_get_bdevs --name Zoned0
check "daemon exits cleanly" stop_daemon
check "--zoned with ZDES not in 64-byte units is refused" sh -c \
	"! '$BIN/nvme-emu' --socket '$D/legacy.sock' --malloc 8M --zoned 1024:2:4:100 > '$D/d6y.log' 2>&1 &&
	 grep -q 'extension size' '$D/d6y.log'"

# Socket safety (issue 11): no socket in a directory other users can write (not sticky), nothing
# but a stale socket of ours replaced, and the default directory private.
mkdir -m 0777 "$D/open"
chmod 0777 "$D/open"
check "refuses an RPC socket in a world-writable directory" sh -c \
	"! '$BIN/nvme-emu' -r '$D/open/rpc.sock' > '$D/d7.log' 2>&1 && grep -q 'writable' '$D/d7.log' && [ ! -e '$D/open/rpc.sock' ]"
echo keep > "$D/notasocket"
check "refuses to replace a file that is not its socket" sh -c \
	"! '$BIN/nvme-emu' -r '$D/notasocket' > '$D/d8.log' 2>&1 && [ \"\$(cat '$D/notasocket')\" = keep ]"
ln -s "$D/elsewhere.sock" "$D/link.sock"
check "refuses a symlink at the socket path" sh -c \
	"! '$BIN/nvme-emu' -r '$D/link.sock' > '$D/d9.log' 2>&1 && [ ! -e '$D/elsewhere.sock' ]"
SOCK=$D/stale.sock
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$SOCK"
check "replaces a stale socket of ours" start_daemon "$D/d10.log" -r "$SOCK"
check "daemon exits cleanly" stop_daemon

# CLI usage errors.
check "CLI without a server fails" sh -c "! '$BIN/nvme-emu-rpc' -s '$D/none.sock' spdk_get_version 2> /dev/null"
check "CLI with bad JSON params fails" sh -c "! '$BIN/nvme-emu-rpc' -s '$D/none.sock' x '{bad' 2> /dev/null"
check "nvme-emu --help" sh -c "'$BIN/nvme-emu' --help | grep -q rpc-socket"
check "nvme-emu -v" sh -c "'$BIN/nvme-emu' -v | grep -q 'nvme-emu [0-9]'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
