#!/usr/bin/env bash
# Harness self-test without a full guest run: launcher options and command line (vfio-user, hotplug ports), QEMU start failures, the fio table parser.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup launcher
passed=0 failed=0
check() {
	local name=$1
	shift
	if "$@"; then
		echo "ok - $name"
		passed=$((passed + 1))
	else
		echo "not ok - $name"
		failed=$((failed + 1))
	fi
}
has() { grep -q -F -- "$1" "$GT_DIR/run/qemu-args"; }
# arg_is OPT VALUE: QEMU gets OPT followed by VALUE.
arg_is() { grep -A1 -x -F -- "$1" "$GT_DIR/run/qemu-args" | tail -n 1 | grep -q -x -F -- "$2"; }
status_is() {
	local want=$1 rc
	shift
	"$@" > "$GT_DIR/last.log" 2>&1
	rc=$?
	[ "$rc" -eq "$want" ] || { echo "exit status $rc, wanted $want"; tail -n 5 "$GT_DIR/last.log"; return 1; }
}

printf '#!/bin/sh\ntrue\n' > "$GT_DIR/job.sh"
disk=$(gt_disk disk0 16M)
"$GT_LAUNCH" --dry-run --job "$GT_DIR/job.sh" --run-dir "$GT_DIR/run" \
	--vfio-user "$GT_DIR/a.sock" --vfio-user "$GT_DIR/b.sock" --qemu-nvme "$disk" \
	--qemu-nvme null:2G --virtio-blk "$disk" --hotplug-ports 3 --qmp "$GT_DIR/qmp.sock" \
	--cpus 3 --mem 512M --kernel-arg loglevel=7 --kernel-arg nokaslr > "$GT_DIR/cmdline" 2>&1
check "dry run succeeds" test $? -eq 0
check "first vfio-user device" has "{\"driver\":\"vfio-user-pci\",\"id\":\"vfu0\",\"socket\":{\"path\":\"$GT_DIR/a.sock\",\"type\":\"unix\"}}"
check "second vfio-user device" has "\"id\":\"vfu1\",\"socket\":{\"path\":\"$GT_DIR/b.sock\""
check "guest RAM is a shared memfd" has "memory-backend-memfd,id=mem,size=512M,share=on"
check "the q35 machine fragment is read" arg_is -readconfig "$GT_TOP/qemu-configs/q35-guest.cfg"
check "the fragment gives q35 the memfd RAM" grep -qx '  memory-backend = "mem"' "$GT_TOP/qemu-configs/q35-guest.cfg"
check "three hotplug ports" has "pcie-root-port,id=hp2,bus=pcie.0,chassis=3,slot=3"
check "no fourth port" bash -c "! grep -q id=hp3 '$GT_DIR/run/qemu-args'"
check "null-co nvme of 2 GiB" has "driver=null-co,node-name=qnvme1,size=2147483648"
check "file nvme" has "file.filename=$disk"
check "virtio-blk" has "virtio-blk-pci,id=vblk0,drive=vblk0"
check "qmp socket" has "unix:$GT_DIR/qmp.sock,server=on,wait=off"
check "vcpus" arg_is -smp 3
check "memory" arg_is -m 512M
check "kernel arguments appended" arg_is -append "console=ttyS0,115200 panic=-1 loglevel=4 rdinit=/init loglevel=7 nokaslr"

check "missing --job is a harness error (125)" status_is 125 "$GT_LAUNCH"
check "unknown option is a harness error" status_is 125 "$GT_LAUNCH" --job "$GT_DIR/job.sh" --bogus 1
check "bad --mem is refused" status_is 125 "$GT_LAUNCH" --job "$GT_DIR/job.sh" --mem lots --dry-run
check "bad null size is refused" status_is 125 "$GT_LAUNCH" --job "$GT_DIR/job.sh" --qemu-nvme null:xx --dry-run
check "path with a comma is refused" status_is 125 "$GT_LAUNCH" --job "$GT_DIR/job.sh" --qemu-nvme "$GT_DIR/a,b" --dry-run

# QEMU 11 has the vfio-user client, and its socket property is the one we use.
root=$("$GT_TOP/qemu-configs/sysroot.sh")
qemu_props() {
	"$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
		"$root/usr/bin/qemu-system-x86_64" -L "$root/usr/share/qemu" -device vfio-user-pci,help 2>&1
}
check "QEMU knows vfio-user-pci with a socket property" bash -c "$(declare -f qemu_props); root='$root'; qemu_props | grep -q 'socket='"

# A vfio-user socket nobody serves: QEMU refuses to start, and the launcher
# says so (125) with QEMU's message instead of waiting for the timeout.
check "unserved vfio-user socket fails fast (125)" status_is 125 "$GT_LAUNCH" --kvm off --timeout 60 \
	--job "$GT_DIR/job.sh" --run-dir "$GT_DIR/run2" --vfio-user "$GT_DIR/nobody.sock"
check "QEMU's complaint is shown" grep -q "vfio-user" "$GT_DIR/last.log"

# fio_table.py on a minimal fio JSON document.
cat > "$GT_DIR/fio.json" <<'JSON'
note: fio may print text before the JSON
{"jobs": [{"jobname": "randread-4k-qd1", "error": 0,
  "read": {"io_bytes": 4096000, "iops": 1000.0, "bw_bytes": 4096000,
           "lat_ns": {"mean": 55500.0}, "clat_ns": {"percentile": {"99.000000": 120000}}},
  "write": {"io_bytes": 0, "iops": 0, "bw_bytes": 0, "lat_ns": {"mean": 0}, "clat_ns": {}}}]}
JSON
"$GT_FIO/fio_table.py" "$GT_DIR/fio.json" > "$GT_DIR/table" 2>&1
check "fio table parses" test $? -eq 0
check "fio table row" grep -qE '^randread-4k-qd1 +read +1000 +3\.9 +55\.5 +120\.0$' "$GT_DIR/table"
check "fio table has no row for an idle direction" bash -c "! grep -q write '$GT_DIR/table'"
echo '{"jobs": [' > "$GT_DIR/bad.json"
check "fio table rejects broken JSON" status_is 1 "$GT_FIO/fio_table.py" "$GT_DIR/bad.json"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
