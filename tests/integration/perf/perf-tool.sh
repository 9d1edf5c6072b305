#!/usr/bin/env bash
# Integration: nvme-emu-perf against a real nvme-emu: a verified write of the whole namespace then
# verified random reads (4 KiB and 128 KiB, two queues), figures that make sense (IOPS, latency
# percentiles in order, the server's CPU found through the socket), interrupts (counted) and shadow
# doorbells, trapped doorbells coalesced into REGION_WRITE_MULTI (--write-multi), two threads on
# mmap doorbells, a read-back of unwritten blocks that must fail verification, and usage errors.
# Usage: perf-tool.sh BUILD_DIR. Ends with "N passed, N failed".
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
D=$(mktemp -d /tmp/nvme-emu-perf-test.XXXXXX)
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	rm -rf "$D"
}
trap cleanup EXIT
. "$TOP/tests/lib/check.sh"
start() {
	[ -n "$dpid" ] && { kill "$dpid"; wait "$dpid" 2> /dev/null; }
	rm -f "$D/s" "$D/r.sock"
	"$BIN/nvme-emu" --socket "$D/s" -r "$D/r.sock" --malloc 16M -q 4 "$@" > "$D/daemon.log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do [ -S "$D/s" ] && [ -S "$D/r.sock" ] && return 0; sleep 0.1; done
	return 1
}
# perf NAME PYEXPR ARGS...: nvme-emu-perf -j succeeds and PYEXPR holds for its JSON `r`.
perf() { perf_check "$D/s" "$@"; }

check "nvme-emu (malloc 16 MiB, trapped doorbells)" start --doorbells trap
perf "verified write of the whole namespace (4096 x 4 KiB, two queues)" \
	'r["ios"] == 4096 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -n 2 -q 8
perf "verified random reads, two queues: IOPS, ordered percentiles, server CPU" \
	'r["ios"] > 100 and r["iops"] > 0 and r["verify_errors"] == 0 and 0 < r["lat_us"]["p50"] <= r["lat_us"]["p99"] <= r["lat_us"]["p99_9"] and r["lat_us"]["max"] > 0 and r["server_cpu_s"] > 0 and r["server_pid"] > 0' \
	-w randread -V -n 2 -t 1
perf "verified 128 KiB random reads" 'r["ios"] > 10 and r["verify_errors"] == 0' \
	-w randread -o 131072 -q 4 -V -t 1
perf "shadow doorbells and interrupts: verified reads (before rw overwrites the pattern), interrupts counted (at most one per I/O)" \
	'r["shadow_doorbells"] and r["ios"] > 100 and r["verify_errors"] == 0 and 0 < r["irqs"] <= r["ios"] and r["irqs_per_io"] > 0' \
	-w randread -V -S -I -q 16 -t 1
perf "--write-multi: verified reads on two queues (before rw overwrites the pattern), each poll round's doorbells in one REGION_WRITE_MULTI" \
	'r["write_multi"] and r["ios"] > 100 and r["verify_errors"] == 0 and r["errors"] == 0 and 0 < r["db_messages"] < r["db_writes_coalesced"]' \
	-w randread -V -n 2 -W -t 1
perf "mixed 70/30 with interrupts" 'r["ios"] > 100 and r["interrupts"] and r["errors"] == 0' \
	-w rw -M 70 -I -t 1
perf "--write-multi with interrupts" \
	'r["write_multi"] and r["interrupts"] and r["ios"] > 100 and r["errors"] == 0 and r["db_messages"] > 0' \
	-w randread -I -W -q 16 -t 1
# The server's own count of a --write-multi run (nvmf_get_stats, the controller's vfio_user
# object, before and after): each multi-write message the client sent arrived as one, with its
# doorbells among the region writes, and socket reads brought the messages.
server_counts_write_multi() {
	local rpc=("$BIN/nvme-emu-rpc" -s "$D/r.sock")
	"${rpc[@]}" nvmf_get_stats > "$D/before.json" &&
		"$BIN/nvme-emu-perf" -s "$D/s" -j -w randread -n 2 -W -t 1 > "$D/wm.json" &&
		"${rpc[@]}" nvmf_get_stats > "$D/after.json" && python3 - "$D" << 'EOF'
import json, sys
b, a, r = (json.load(open('%s/%s.json' % (sys.argv[1], n))) for n in ('before', 'after', 'wm'))
vb, va = b['controllers'][0]['vfio_user'], a['controllers'][0]['vfio_user']
d = {k: va[k] - vb[k] for k in va}
assert 0 < d['write_multis'] <= r['db_messages'], (d, r['db_messages'])
assert d['region_writes'] >= r['db_writes_coalesced'], (d, r['db_writes_coalesced'])
assert 0 < d['socket_reads'] <= d['msgs_rx'], d
assert va['clients_attached'] >= 1 and d['bad_messages'] == 0 and d['db_writes'] > 0, va
EOF
}
check "nvmf_get_stats counts the client's REGION_WRITE_MULTI messages and socket reads" \
	server_counts_write_multi
check "-c 2 on trapped doorbells is refused (exit 2)" sh -c \
	"'$BIN/nvme-emu-perf' -s '$D/s' -n 2 -c 2 -t 1 > /dev/null 2>&1; [ \$? -eq 2 ]"
check "nvme-emu (mmap doorbells, one DPA hart)" start --doorbells mmap --dpa-harts 1
perf "two threads on two queues (mmap doorbells)" \
	'r["threads"] == 2 and r["doorbells"] == "mmap" and r["ios"] > 100 and r["errors"] == 0' \
	-w randread -n 2 -c 2 -t 1
check "--write-multi on mmap doorbells is refused (exit 2)" sh -c \
	"'$BIN/nvme-emu-perf' -s '$D/s' -W -t 1 > /dev/null 2>&1; [ \$? -eq 2 ]"
check "unwritten blocks fail verification (exit 1)" sh -c \
	"! '$BIN/nvme-emu-perf' -s '$D/s' -w randread -V -t 1 -j > '$D/v.json' 2> /dev/null && python3 -c \"import json; r=json.load(open('$D/v.json')); assert r['verify_errors'] > 0\""
# io_uring: the transfers use guest memory registered as fixed buffers, and the registration
# goes with the client (nothing of its memory stays mapped in the daemon). The verified write
# fills the namespace whatever -t says.
start_uring() {
	[ -n "$dpid" ] && { kill "$dpid"; wait "$dpid" 2> /dev/null; }
	rm -f "$D/s" "$D/rpc.sock"
	"$BIN/nvme-emu" --socket "$D/s" -r "$D/rpc.sock" --uring "$D/u.img:32M" -q 2 \
		> "$D/daemon.log" 2>&1 &
	dpid=$!
	for _ in $(seq 100); do [ -S "$D/s" ] && [ -S "$D/rpc.sock" ] && return 0; sleep 0.1; done
	return 1
}
uring_info() { "$BIN/nvme-emu-rpc" -s "$D/rpc.sock" bdev_get_bdevs > "$D/b.json"; }
uring_field() { python3 -c "import json; print(json.load(open('$D/b.json'))[0]['driver_specific']['uring']['$1'])"; }
check "nvme-emu --uring (32 MiB file)" start_uring
perf "verified write of the whole namespace with -t 1 (8192 x 4 KiB)" \
	'r["ios"] == 8192 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -q 8 -t 1
perf "verified random reads on io_uring" 'r["ios"] > 100 and r["verify_errors"] == 0' \
	-w randread -V -q 16 -t 1
check "the transfers used fixed buffers (fixed_ios > 0)" sh -c \
	"uring_info() { '$BIN/nvme-emu-rpc' -s '$D/rpc.sock' bdev_get_bdevs > '$D/b.json'; }; uring_info &&
	python3 -c \"import json; u=json.load(open('$D/b.json'))[0]['driver_specific']['uring']; assert u['fixed_ios'] > 8192, u\""
released() {
	uring_info && [ "$(uring_field fixed_buffers)" = 0 ] && ! grep -q vfu-client-ram "/proc/$dpid/maps"
}
for _ in $(seq 50); do released && break; sleep 0.1; done
check "client gone: registrations dropped, its memory unmapped" released
check "-q 0 is a usage error (exit 2)" sh -c \
	"'$BIN/nvme-emu-perf' -s '$D/s' -q 0 > /dev/null 2>&1; [ \$? -eq 2 ]"
check "a missing socket is an error (exit 1)" sh -c \
	"'$BIN/nvme-emu-perf' -s '$D/none' -t 1 > /dev/null 2>&1; [ \$? -eq 1 ]"
check "--help" sh -c "'$BIN/nvme-emu-perf' --help | grep -q -- '--workload'"
kill "$dpid"
wait "$dpid"
check "nvme-emu exits cleanly" test $? -eq 0
dpid=
finish
