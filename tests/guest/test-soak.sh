#!/usr/bin/env bash
# Guest soak: one nvme-emu process serves two guests four functions each; every function but one
# runs a time-based fio verify (SOAK_TIME seconds, default 60; `make soak` runs an hour) while
# the remaining one, the victim in guest A, is reset (nvme reset) and function-level reset
# (sysfs) in a loop by the guest and hot-unplugged and re-plugged by the host
# (nvmf_subsystem_remove_listener / add_listener on a QEMU manager). Passes with 0 verify
# errors, no completion of any other function slower than SOAK_MAX_LAT_US (fio's max completion
# latency: 25 s in make test, a hang guard; 2 s in make soak), and a daemon that exits cleanly.
#
# The listener churn needs a QEMU with the vfio-user-pci unplug fix (make qemu-binfix, run by
# make test; see tests/guest/test-rpc-hotplug.sh); with the stock QEMU the victim is only reset
# and FLR'd, and the test says so.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
SOAK_TIME=${SOAK_TIME:-60}
# A function stalled by another one's reset or FLR stops for seconds or for ever. How long a
# single completion takes with nothing stalled depends on the machine: a TCG guest on a
# saturated 2-core host shows 1.1 s, and 6-7 s beside two other test suites. So make test only
# guards against a hang, below Linux's 30 s I/O timeout (after which the guest would reset the
# function, which the verify would also see); `make soak` (quiet machine, an hour) holds the 2 s
# that separates a stall from a slow machine.
MAX_LAT_US=${SOAK_MAX_LAT_US:-25000000}
gt_setup soak
rpc_sock=$GT_DIR/rpc.sock
qmp_sock=$GT_DIR/qmp-a.sock
if [ -z "${NVME_EMU_QEMU+set}" ]; then
	NVME_EMU_QEMU=$("$GT_TOP/qemu-configs/build-qemu.sh" --print-path 2> /dev/null) ||
		NVME_EMU_QEMU=""
fi
[ -n "$NVME_EMU_QEMU" ] && export NVME_EMU_QEMU
rpc() { "$BIN/nvme-emu-rpc" -s "$rpc_sock" -t 90 "$@"; }

# Eight functions: A0 (the victim, hot-plugged) A1-A3 for guest A, B0-B3 for guest B.
{
	echo '{"subsystems": [{"subsystem": "bdev", "config": ['
	for f in A0 A1 A2 A3 B0 B1 B2 B3; do
		sep=,; [ $f = B3 ] && sep=
		echo "{\"method\": \"bdev_malloc_create\", \"params\": {\"name\": \"M$f\", \"num_blocks\": 65536, \"block_size\": 512}}$sep"
	done
	echo ']}, {"subsystem": "nvmf", "config": ['
	echo '{"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU", "num_poll_groups": 2}},'
	for f in A0 A1 A2 A3 B0 B1 B2 B3; do
		nqn=nqn.2026-11.io.nvme-emu:soak-$f
		echo "{\"method\": \"nvmf_create_subsystem\", \"params\": {\"nqn\": \"$nqn\", \"serial_number\": \"soak-$f\"}},"
		sep=,; [ $f = B3 ] && sep=
		echo "{\"method\": \"nvmf_subsystem_add_ns\", \"params\": {\"nqn\": \"$nqn\", \"namespace\": {\"bdev_name\": \"M$f\"}}}$sep"
	done
	echo ']}]}'
} > "$GT_DIR/config.json"
# Listeners of the static functions (the victim's comes from the QEMU manager later).
python3 - "$GT_DIR/config.json" "$GT_DIR" <<'PY'
import json, sys
path, d = sys.argv[1], sys.argv[2]
cfg = json.load(open(path))
nvmf = [s for s in cfg["subsystems"] if s["subsystem"] == "nvmf"][0]["config"]
for f in ["A1", "A2", "A3", "B0", "B1", "B2", "B3"]:
    nvmf.append({"method": "nvmf_subsystem_add_listener", "params": {
        "nqn": "nqn.2026-11.io.nvme-emu:soak-" + f,
        "listen_address": {"trtype": "PCIE_EMU", "traddr": "%s/%s.sock" % (d, f)}}})
json.dump(cfg, open(path, "w"), indent=1)
PY

"$BIN/nvme-emu" -r "$rpc_sock" -c "$GT_DIR/config.json" > "$GT_DIR/nvme-emu.log" 2>&1 &
daemon=$!
trap 'kill $launcher_a $launcher_b $daemon 2>/dev/null' EXIT
launcher_a= launcher_b=
sockets_up() {
	local f socks=()
	for f in A1 A2 A3 B0 B1 B2 B3; do socks+=("$GT_DIR/$f.sock"); done
	gt_wait_sockets "${socks[@]}"
}
if ! host_step "nvme-emu serves seven sockets" sockets_up; then
	gt_report_with_host 1
	exit 1
fi

# The guests: one vCPU each (two TCG vCPUs on this host's two cores, beside the daemon).
mkdir -p "$GT_DIR/ja" "$GT_DIR/jb"
cp "$GT_JOBS/soak.sh" "$GT_DIR/ja/job.sh"
cp "$GT_JOBS/soak.sh" "$GT_DIR/jb/job.sh"
printf 'SERIALS="soak-A1 soak-A2 soak-A3"\nVICTIM=soak-A0\nRUNTIME=%s\n' "$SOAK_TIME" > "$GT_DIR/ja/soak.conf"
printf 'SERIALS="soak-B0 soak-B1 soak-B2 soak-B3"\nRUNTIME=%s\n' "$SOAK_TIME" > "$GT_DIR/jb/soak.conf"
timeout_s=$((SOAK_TIME + GT_TIMEOUT))
"$GT_LAUNCH" --job "$GT_DIR/ja" --add "$GT_FIO" --cpus 1 --mem 768M --qmp "$qmp_sock" \
	--hotplug-ports 1 --vfio-user "$GT_DIR/A1.sock" --vfio-user "$GT_DIR/A2.sock" \
	--vfio-user "$GT_DIR/A3.sock" --run-dir "$GT_DIR/run" --timeout "$timeout_s" --quiet &
launcher_a=$!
launcher=$launcher_a # gt_wait_file watches guest A
"$GT_LAUNCH" --job "$GT_DIR/jb" --add "$GT_FIO" --cpus 1 --mem 768M \
	--vfio-user "$GT_DIR/B0.sock" --vfio-user "$GT_DIR/B1.sock" --vfio-user "$GT_DIR/B2.sock" \
	--vfio-user "$GT_DIR/B3.sock" --run-dir "$GT_DIR/run-b" --timeout "$timeout_s" --quiet &
launcher_b=$!

churns=0
victim_plug() {
	rpc nvmf_subsystem_add_listener --nqn nqn.2026-11.io.nvme-emu:soak-A0 --manager qemu0 \
		--listen_address.trtype PCIE_EMU --listen_address.traddr "$GT_DIR/A0.sock" > /dev/null
}
victim_unplug() {
	rpc nvmf_subsystem_remove_listener --nqn nqn.2026-11.io.nvme-emu:soak-A0 \
		--listen_address.trtype PCIE_EMU --listen_address.traddr "$GT_DIR/A0.sock" > /dev/null
}
if host_step "guest A's job started" quiet_wait "$GT_TIMEOUT" ready &&
	host_step "QEMU manager for guest A" rpc nvmf_emu_create_manager --name qemu0 \
		--qmp_socket "$qmp_sock" --hotplug_ports '["hp0"]' &&
	host_step "the victim is hot-plugged into guest A" victim_plug; then
	end=$(($(date +%s) + SOAK_TIME - 5))
	if [ -n "${NVME_EMU_QEMU:-}" ]; then
		# Listener churn: remove and add the victim's listener every few seconds.
		while [ "$(date +%s)" -lt "$end" ]; do
			sleep 4
			victim_unplug || { host_step "remove_listener of the victim" false; break; }
			sleep 1
			victim_plug || { host_step "add_listener of the victim" false; break; }
			churns=$((churns + 1))
		done
		host_step "the victim's listener removed and added again ($churns times)" \
			test "$churns" -gt 0
	else
		echo "stock QEMU (no vfio-user-pci unplug fix): the victim is only reset and FLR'd"
	fi
fi
wait "$launcher_a"
rc_a=$?
wait "$launcher_b"
rc_b=$?

# No stall: every verified function's fio saw no completion slower than a second.
max_lat() {
	python3 - "$@" <<'PY'
import json, sys
worst = 0
for p in sys.argv[1:]:
    j = json.load(open(p))
    for job in j["jobs"]:
        for d in ("read", "write"):
            worst = max(worst, job[d]["clat_ns"]["max"])
print(worst // 1000)
PY
}
for run in run run-b; do
	files=$(ls "$GT_DIR/$run/out"/soak-*.json 2> /dev/null)
	if host_step "fio results of $run" test -n "$files"; then
		lat=$(max_lat $files)
		host_step "$run: the longest completion took ${lat} us (< ${MAX_LAT_US} us)" \
			test "$lat" -lt "$MAX_LAT_US"
	fi
done
[ -f "$GT_DIR/run/out/victim-counts" ] &&
	echo "victim: $(cat "$GT_DIR/run/out/victim-counts") (nvme resets, FLRs), $churns listener churns"
# Guest B's checks count beside guest A's.
gb_pass=$(grep -c '^ok - ' "$GT_DIR/run-b/out/output.log" 2> /dev/null || true)
gb_fail=$(grep -c '^not ok - ' "$GT_DIR/run-b/out/output.log" 2> /dev/null || true)
host_passed=$((host_passed + gb_pass))
host_failed=$((host_failed + gb_fail))
[ "$rc_b" -eq 0 ] || host_step "guest B finished" false
gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
gt_report_with_host "$rc_a"
