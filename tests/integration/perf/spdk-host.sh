#!/usr/bin/env bash
# Integration: SPDK's own vfio-user NVMe host, unchanged, drives nvme-emu: spdk_nvme_identify
# (controller and namespace data), spdk_nvme_perf (reads and writes, no errors), SPDK's
# hello_world example (a write read back through the controller), bdevperf's verify workload
# through SPDK's bdev_nvme (every block written is read back and compared), and SPDK's
# nvme_compliance suite, NVMe test apps and nvme_fuzz when they are built, on a malloc
# namespace; the function is handed over enabled (SPDK's host never writes COMMAND), DMA_UNMAP
# with an fd is taken, its hugepage files are taken without a trust flag, and the daemon logs no
# refused message. Then nvme-emu-perf drives SPDK's own nvmf_tgt (VFIOUSER) with verified writes
# and reads.
# SPDK is not packaged by Debian and nothing of it is in this repository: SPDK_DIR names an SPDK
# build of your own (configure --with-vfio-user). Needs 2 MiB hugepages (reserved for the run
# when root, and given back).
# Usage: spdk-host.sh BUILD_DIR. Ends with "N passed, N failed"; skips (0 passed, 0 failed) when
# SPDK_DIR is not set.
set -u
TOP=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=$TOP/${1:-build}/bin
SPDK=${SPDK_DIR:-}
if [ -z "$SPDK" ] || [ ! -x "$SPDK/build/bin/spdk_nvme_perf" ]; then
	echo "skipped: no SPDK build (set SPDK_DIR to an SPDK tree built with --with-vfio-user)"
	echo "0 passed, 0 failed"
	exit 0
fi
D=$(mktemp -d /tmp/nvme-emu-spdk-host.XXXXXX)
dpid=
tpid=
pages=
mounted=
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2> /dev/null
	[ -n "$tpid" ] && kill -9 "$tpid" 2> /dev/null
	wait 2> /dev/null
	[ -n "$mounted" ] && umount "$mounted" 2> /dev/null
	[ -n "$pages" ] && echo "$pages" > /proc/sys/vm/nr_hugepages
	rm -rf "$D"
}
trap cleanup EXIT
. "$TOP/tests/lib/check.sh"
export LD_LIBRARY_PATH=$SPDK/build/lib:$SPDK/build/libvfio-user/build-release/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NQN=nqn.2026-11.io.nvme-emu:NVMEEMU0001
TRID="trtype:VFIOUSER traddr:$D/emu subnqn:$NQN"

free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "$free" -lt 512 ]; then
	pages=$(cat /proc/sys/vm/nr_hugepages)
	echo $((pages + 512 - free)) > /proc/sys/vm/nr_hugepages 2> /dev/null
fi
check "512 free 2 MiB hugepages" test "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge 512
# DPDK finds its hugepages through a hugetlbfs mount: one is made for the run when there is none.
if ! grep -q ' hugetlbfs ' /proc/mounts; then
	mkdir -p "$D/huge" && mount -t hugetlbfs nodev "$D/huge" 2> /dev/null && mounted=$D/huge
fi
check "a hugetlbfs mount" grep -q ' hugetlbfs ' /proc/mounts

mkdir -p "$D/emu"
# No trust flag: DPDK's hugepage files are hugetlbfs files, taken like memfds.
"$BIN/nvme-emu" --socket "$D/emu/cntrl" --malloc 64M > "$D/daemon.log" 2>&1 &
dpid=$!
check "nvme-emu (malloc 64 MiB, default trust)" wait_sock "$D/emu/cntrl"

"$SPDK/build/bin/spdk_nvme_identify" -r "$TRID" > "$D/identify.txt" 2>&1
check "spdk_nvme_identify" grep -q "Serial Number: *NVMEEMU0001" "$D/identify.txt"
check "... the namespace (64 MiB of 512-byte blocks)" grep -q "Size (in LBAs): *131072" "$D/identify.txt"

perf() {
	"$SPDK/build/bin/spdk_nvme_perf" -r "$TRID" -g -t 1 -c 0x1 "$@" > "$D/perf.txt" 2>&1 &&
		! grep -q "errors occurred" "$D/perf.txt" &&
		awk '/^Total/ {exit !($3 > 1000)}' "$D/perf.txt"
}
check "spdk_nvme_perf 4 KiB random reads, QD32" perf -q 32 -o 4096 -w randread
check "spdk_nvme_perf 128 KiB writes, QD8" perf -q 8 -o 131072 -w write
check "spdk_nvme_perf 70/30 random mix, QD16" perf -q 16 -o 4096 -w randrw -M 70

# SPDK's examples (hello_world, bdevperf) are built unless SPDK was configured
# --disable-examples.
if [ -x "$SPDK/build/examples/hello_world" ]; then
	"$SPDK/build/examples/hello_world" -r "$TRID" -g > "$D/hello.txt" 2>&1
	check "SPDK's hello_world (a write read back)" grep -q "^Hello world!" "$D/hello.txt"
else
	echo "note: SPDK's examples not built (configure without --disable-examples)"
fi

cat > "$D/bdevperf.json" << EOF
{"subsystems": [{"subsystem": "bdev", "config": [{"method": "bdev_nvme_attach_controller",
  "params": {"name": "Emu", "trtype": "vfiouser", "traddr": "$D/emu", "subnqn": "$NQN"}}]}]}
EOF
if [ -x "$SPDK/build/examples/bdevperf" ]; then
	timeout 120 "$SPDK/build/examples/bdevperf" --json "$D/bdevperf.json" -q 32 -o 4096 \
		-w verify -t 3 -m 0x1 -g > "$D/bdevperf.txt" 2>&1
	check "bdevperf verify through SPDK's bdev_nvme: I/O done, none failed" \
		awk '/^[ \t]*Emun1[ \t]*:/ {found = 1; ok = ($4 > 1000 && $6 == 0)} END {exit !(found && ok)}' \
		"$D/bdevperf.txt"
fi
check "no message refused, memory space never off" sh -c \
	"! grep -E 'failed:|refused|memory space disabled|fds on a command' '$D/daemon.log'"
# SPDK's own NVMe compliance suite (test/nvme/compliance, built with SPDK's tests: `make -C
# lib/ut && make -C test/nvme/compliance`): the statuses of Identify, Get Features, Get Log Page
# and queue creation and deletion, here and again with Namespace Management (a capacity pool),
# where Identify Namespace FFFFFFFFh answers instead of failing.
COMPLIANCE=$SPDK/test/nvme/compliance/nvme_compliance
compliance() {
	timeout 120 "$COMPLIANCE" -g -r "$TRID" > "$D/compliance.txt" 2>&1 &&
		awk '$1 == "tests" {found = 1; ok = ($3 > 0 && $4 == $3 && $5 == 0)}
		     END {exit !(found && ok)}' "$D/compliance.txt"
}
if [ -x "$COMPLIANCE" ]; then
	check "SPDK's nvme_compliance: every test passes" compliance
fi
# SPDK's NVMe test apps (test/nvme, built with SPDK's tests): a temperature-threshold AER and its
# SMART log, Copy (written LBAs copied and compared), 1024 fused Compare and Write pairs in
# order, and reservations (register, acquire, report, release).
NVT=$SPDK/test/nvme
if [ -x "$NVT/aer/aer" ]; then
	check "SPDK's aer -T: temperature AER" sh -c \
		"timeout 60 '$NVT/aer/aer' -g -T -r '$TRID' > '$D/aer.txt' 2>&1 &&
		 grep -q 'aer_cb for log page 2' '$D/aer.txt'"
	check "SPDK's simple_copy" sh -c \
		"timeout 60 '$NVT/simple_copy/simple_copy' -r '$TRID' > '$D/copy.txt' 2>&1 &&
		 grep -q 'LBAs matching Written Data: 64' '$D/copy.txt'"
	check "SPDK's fused_ordering: 1024 fused pairs" sh -c \
		"timeout 60 '$NVT/fused_ordering/fused_ordering' -r '$TRID' > '$D/fused.txt' 2>&1 &&
		 grep -q '^fused_ordering(1023)' '$D/fused.txt'"
	check "SPDK's reserve: register, acquire, report, release" sh -c \
		"timeout 60 '$NVT/reserve/reserve' -r '$TRID' > '$D/reserve.txt' 2>&1 &&
		 grep -q 'Reservation Generation Counter' '$D/reserve.txt'"
else
	echo "note: SPDK's test/nvme apps not built (make -C test/nvme in SPDK)"
fi
# SPDK's nvme_fuzz (test/app/fuzz/nvme_fuzz), as SPDK's own vfio-user fuzz job runs it: random
# admin and I/O commands for SPDK_FUZZ_TIME seconds (default 10; `make soak` runs an hour against
# the ASan build), seed SPDK_FUZZ_SEED (default 123456) (-U: no IOMMU to check for; -g: one fd
# per memory segment list). The daemon must live through it and answer afterwards.
FUZZ=$SPDK/test/app/fuzz/nvme_fuzz/nvme_fuzz
FUZZ_TIME=${SPDK_FUZZ_TIME:-10}
fuzz() {
	timeout $((FUZZ_TIME + 60)) "$FUZZ" -m 0x1 -g -t "$FUZZ_TIME" -S "${SPDK_FUZZ_SEED:-123456}" \
		-F "$TRID" -N -a -U > "$D/fuzz.txt" 2>&1 &&
		grep -q "^Fuzzing completed" "$D/fuzz.txt" &&
		awk '/Total commands completed:/ {n++; for (i = 1; i < NF; i++) if ($i == "completed:" &&
		     $(i + 1) + 0 < 1000) bad = 1} END {exit !(n == 2 && !bad)}' "$D/fuzz.txt"
}
if [ -x "$FUZZ" ]; then
	check "SPDK's nvme_fuzz: $FUZZ_TIME s of random admin and I/O commands" fuzz
	# What the random commands left behind may be a sanitize still running or failed, or
	# another LBA format: I/O may rightly fail now, but the controller answers.
	timeout 60 "$SPDK/build/bin/spdk_nvme_identify" -r "$TRID" > "$D/identify2.txt" 2>&1
	check "... then the controller still answers Identify" \
		grep -q "Serial Number: *NVMEEMU0001" "$D/identify2.txt"
else
	echo "note: $FUZZ not built (make -C test/app/fuzz/nvme_fuzz in SPDK)"
fi
check "nvme-emu alive" kill -0 "$dpid"
kill "$dpid"
wait "$dpid"
check "nvme-emu exits cleanly" test $? -eq 0
dpid=
if [ -x "$COMPLIANCE" ]; then
	"$BIN/nvme-emu" --socket "$D/emu/cntrl" --malloc 64M --ns-pool ram:256M \
		> "$D/daemon-pool.log" 2>&1 &
	dpid=$!
	check "nvme-emu with a namespace pool" wait_sock "$D/emu/cntrl"
	check "SPDK's nvme_compliance with Namespace Management: every test passes" compliance
	kill "$dpid"
	wait "$dpid"
	check "nvme-emu (pool) exits cleanly" test $? -eq 0
	dpid=
else
	echo "note: $COMPLIANCE not built (make -C lib/ut && make -C test/nvme/compliance in SPDK)"
fi

# The other way round: nvme-emu-perf against SPDK's own target.
mkdir -p "$D/spdk"
"$SPDK/build/bin/nvmf_tgt" -m 0x1 -s 256 -r "$D/spdk.rpc" > "$D/tgt.log" 2>&1 &
tpid=$!
rpc() { /usr/bin/python3 "$SPDK/scripts/rpc.py" -s "$D/spdk.rpc" "$@" > /dev/null; }
tgt_setup() {
	wait_sock "$D/spdk.rpc" &&
		rpc framework_wait_init && rpc nvmf_create_transport -t VFIOUSER &&
		rpc bdev_malloc_create -b M0 64 512 &&
		rpc nvmf_create_subsystem nqn.2019-07.io.spdk:cnode0 -a -s SPDK0 &&
		rpc nvmf_subsystem_add_ns nqn.2019-07.io.spdk:cnode0 M0 &&
		rpc nvmf_subsystem_add_listener nqn.2019-07.io.spdk:cnode0 -t VFIOUSER -a "$D/spdk" \
			-s 0 && wait_sock "$D/spdk/cntrl"
}
check "SPDK's nvmf_tgt with a VFIOUSER listener" tgt_setup
perf_check "$D/spdk/cntrl" "nvme-emu-perf: verified write of SPDK's namespace" \
	'r["ios"] == 16384 and r["errors"] == 0 and r["verify_errors"] == 0' -w write -V -q 8
perf_check "$D/spdk/cntrl" "nvme-emu-perf: verified random reads from SPDK's target" \
	'r["ios"] > 1000 and r["errors"] == 0 and r["verify_errors"] == 0' -w randread -V -t 1
kill -INT "$tpid"
wait "$tpid" 2> /dev/null
tpid=
finish
