#!/usr/bin/env bash
# Guest test (issue 32): the Debian package run as a service. `apt-get install ./nvme-emu_*.deb`
# in a fresh Debian bookworm root made with mmdebstrap (apt brings the libraries it needs), booted
# with systemd as PID 1 in a container (systemd-nspawn; the host's PID 1 is not systemd, and a
# guest attaches to the function only from the same kernel: vfio-user passes fds). Its
# nvme-emu@svctest.service serves /etc/nvme-emu/svctest.json, the function's socket bound out to
# the host, where the harness's QEMU guest attaches to it (tests/guest/jobs/systemd-unit.sh).
# Checked: `systemctl start` returns once READY=1 (the socket is there), the sandbox (read-only
# /usr, writable state directory, private /tmp, no new privileges, capabilities, seccomp), journal
# priorities, the metrics seen from the host, `systemctl reload` adding a namespace under the
# guest's fio verify and refusing a transport change (the service stays up), `systemctl stop`
# clean with the PTPL, zone state and event log files written, and the watchdog: a main loop and
# then a poll group made to hang (NVME_EMU_TEST_FAULTS=1 in a test drop-in, WatchdogSec=3s)
# each get the daemon killed and restarted by systemd.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

gt_setup systemd-unit
for t in mmdebstrap systemd-nspawn nsenter; do
	if ! command -v "$t" > /dev/null; then
		echo "$t not installed (make deps installs packaging/deps.list): skipping"
		echo "0 passed, 0 failed"
		exit 0
	fi
done
deb=$(ls -t "$GT_TOP"/build/nvme-emu_*.deb 2> /dev/null | head -n 1)
if [ -z "$deb" ] || [ "$deb" -ot "$GT_TOP/build/bin/nvme-emu" ]; then
	deb=$(make -s -C "$GT_TOP" deb 2> "$GT_DIR/make-deb.log" | tail -n 1)
	deb=$GT_TOP/$deb
fi
host_step "the package: $(basename "$deb")" test -f "$deb"
root=$GT_DIR/root
vfu=$GT_DIR/vfu
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvme-emu/systemd-test-debs
mkdir -p "$vfu" "$cache"
nspawn=
launcher=
cleanup() {
	[ -n "$launcher" ] && kill "$launcher" 2> /dev/null
	if [ -n "$nspawn" ]; then
		kill -TERM "$nspawn" 2> /dev/null
		for _ in $(seq 100); do kill -0 "$nspawn" 2> /dev/null || break; sleep 0.1; done
		kill -9 "$nspawn" 2> /dev/null
	fi
}
trap cleanup EXIT

# A fresh root, the package installed by apt from a local file as a user would; the downloaded
# packages are kept between runs (mmdebstrap's cache hooks), nothing else is.
mmdebstrap --variant=minbase --mode=unshare --include=systemd-sysv --skip=download/empty \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $cache /var/cache/apt/archives/" \
	--customize-hook="copy-in $deb /tmp" \
	--customize-hook="chroot \"\$1\" apt-get install -y /tmp/$(basename "$deb")" \
	--customize-hook="sync-out /var/cache/apt/archives $cache" \
	bookworm "$root" http://deb.debian.org/debian > "$GT_DIR/mmdebstrap.log" 2>&1
sed -n '/^The following NEW packages will be installed:/,/newly installed/p' "$GT_DIR/mmdebstrap.log" |
	sed 's/^/# apt: /'
host_step "apt-get install ./$(basename "$deb") in a fresh bookworm root pulls what it needs" \
	grep -q "^Setting up nvme-emu " "$GT_DIR/mmdebstrap.log"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nqn=nqn.2026-11.io.nvme-emu:svctest
# config NS3 TRANSPORT_EXTRA: the unit's configuration (namespace 3 or not, a transport option).
config() {
	local ns3_bdev= ns3=
	if [ "$1" = ns3 ]; then
		ns3_bdev=',{"method": "bdev_malloc_create", "params": {"name": "M3", "num_blocks": 32768, "block_size": 512}}'
		ns3=',{"method": "nvmf_subsystem_add_ns", "params": {"nqn": "'$nqn'", "namespace": {"bdev_name": "M3", "nsid": 3}}}'
	fi
	cat << JSON
{"subsystems": [
 {"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "M1", "num_blocks": 131072, "block_size": 512}},
  {"method": "bdev_malloc_create", "params": {"name": "Z0", "num_blocks": 131072, "block_size": 512}},
  {"method": "bdev_zone_block_create", "params": {"name": "Zoned0", "base_bdev": "Z0", "zone_capacity": 4096, "optimal_open_zones": 1, "state_file": "/var/lib/nvme-emu/svctest.zones"}}$ns3_bdev]},
 {"subsystem": "nvmf", "config": [
  {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"$2}},
  {"method": "nvmf_create_subsystem", "params": {"nqn": "$nqn", "serial_number": "SVCTEST1", "event_log_file": "/var/lib/nvme-emu/svctest.pel"}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$nqn", "namespace": {"bdev_name": "M1", "nsid": 1, "ptpl_file": "/var/lib/nvme-emu/svctest-ns1.ptpl"}}},
  {"method": "nvmf_subsystem_add_ns", "params": {"nqn": "$nqn", "namespace": {"bdev_name": "Zoned0", "nsid": 2}}}$ns3,
  {"method": "nvmf_subsystem_add_listener", "params": {"nqn": "$nqn", "listen_address": {"trtype": "PCIE_EMU", "traddr": "/run/nvme-emu/svctest/cntrl.sock"}}}]},
 {"subsystem": "service", "config": [
  {"method": "nvmf_emu_metrics_start", "params": {"listen_address": "127.0.0.1:$port"}}]}]}
JSON
}
if [ -d "$root/etc/nvme-emu" ]; then
	config no "" > "$root/etc/nvme-emu/svctest.json"
	# The test's drop-in: the test-only faults on, a short watchdog, no core files.
	mkdir -p "$root/etc/systemd/system/nvme-emu@svctest.service.d"
	printf '[Service]\nEnvironment=NVME_EMU_TEST_FAULTS=1\nWatchdogSec=3s\nRestartSec=1s\nLimitCORE=0\n' \
		> "$root/etc/systemd/system/nvme-emu@svctest.service.d/test.conf"
	systemd-nspawn -D "$root" --register=no --keep-unit -b --console=pipe \
		--capability=CAP_IPC_LOCK --bind="$vfu:/run/nvme-emu/svctest" \
		> "$GT_DIR/container.log" 2>&1 &
	nspawn=$!
fi
pid1=
for _ in $(seq 100); do
	pid1=$(ps -o pid= --ppid "$nspawn" 2> /dev/null | head -n 1 | tr -d ' ')
	[ -n "$pid1" ] && break
	sleep 0.1
done
in_ct() { nsenter -t "$pid1" -a "$@"; }
unit=nvme-emu@svctest.service
prop() { in_ct systemctl show -p "$1" --value "$unit"; }
# Until its manager answers (is-system-running says "offline" before), then until the boot is over.
booted() {
	local _ st
	[ -n "$pid1" ] || return 1
	for _ in $(seq 600); do
		st=$(timeout 60 nsenter -t "$pid1" -a systemctl is-system-running --wait 2> /dev/null)
		case $st in running | degraded) return 0 ;; esac
		sleep 0.1
	done
	echo "container state: $st"
	return 1
}
host_step "the container boots systemd as its PID 1" booted

started() { in_ct systemctl start "$unit" && test -S "$vfu/cntrl.sock"; }
host_step "systemctl start returns once READY=1: the function's socket is there" started
mainpid=$(prop MainPID)
sandboxed() {
	local st
	st=$(in_ct cat "/proc/$mainpid/status") || return 1
	grep -q "^NoNewPrivs:	1" <<< "$st" && grep -q "^Seccomp:	2" <<< "$st" &&
		grep -q "^CapBnd:	0000000000004000" <<< "$st" &&
		! in_ct nsenter -t "$mainpid" -m touch /usr/lib/nvme-emu-probe 2> /dev/null &&
		in_ct nsenter -t "$mainpid" -m touch /var/lib/nvme-emu/probe &&
		in_ct touch /tmp/nvme-emu-probe && ! in_ct nsenter -t "$mainpid" -m test -e /tmp/nvme-emu-probe
}
host_step "sandboxed: /usr read-only, the state directory writable, a private /tmp, no new privileges, CAP_IPC_LOCK only, seccomp" sandboxed
journal_prio() { in_ct journalctl -u "$unit" -p "$1..$1" -o cat --no-pager | grep -q "$2"; }
host_step "journal: info lines at priority 6" journal_prio 6 "configuration /etc/nvme-emu/svctest.json loaded"
metric() {
	curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" -v l="$2" \
		'index($1, m "{") == 1 && index($1, l) {s += $2} END {print s + 0}'
}

"$GT_LAUNCH" --job "$GT_JOBS/systemd-unit.sh" --add "$GT_FIO" --vfio-user "$vfu/cntrl.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
if host_step "the guest's fio started on namespace 1" quiet_wait "$GT_TIMEOUT" io-started; then
	config ns3 "" > "$root/etc/nvme-emu/svctest.json"
	host_step "systemctl reload: namespace 3 added under the guest's I/O" in_ct systemctl reload "$unit"
	config ns3 ', "num_poll_groups": 2' > "$root/etc/nvme-emu/svctest.json"
	refused() { ! in_ct systemctl reload "$unit" 2> /dev/null && [ "$(prop ActiveState)" = active ] &&
		in_ct journalctl -u "$unit" -p 3..3 -o cat --no-pager | grep -q "restart to apply"; }
	host_step "systemctl reload of a transport change fails (logged at priority 3), the service stays up" refused
	config ns3 "" > "$root/etc/nvme-emu/svctest.json"
fi
wait "$launcher"
guest_rc=$?
launcher=
seen() { [ "$(metric nvme_emu_io_commands_total 'nsid="1",opclass="write"')" -gt 0 ] &&
	[ "$(metric nvme_emu_config_reloads_total 'result="success"')" -eq 1 ] &&
	[ "$(metric nvme_emu_config_reloads_total 'result="failure"')" -eq 1 ]; }
host_step "the metrics (scraped from the host): namespace 1's writes, one reload done and one refused" seen

stopped() {
	in_ct systemctl stop "$unit" && [ "$(prop Result)" = success ] &&
		[ "$(prop ExecMainStatus)" = 0 ] && [ ! -S "$vfu/cntrl.sock" ]
}
host_step "systemctl stop: a clean stop (status 0, the socket removed)" stopped
state=$root/var/lib/nvme-emu
host_step "the stop left the PTPL file (PTPL on, the guest's key)" sh -c \
	"tr -d ' \n' < '$state/svctest-ns1.ptpl' | grep -q '\"ptpl\":true' && tr -d ' \n' < '$state/svctest-ns1.ptpl' | grep -q '0x0000000000002222'"
host_step "the stop wrote the zone state file and the event log" test -s "$state/svctest.zones" -a -s "$state/svctest.pel"

# The watchdog: a loop made to hang gets the daemon killed and restarted.
restarted_after() {
	local before=$1 old=$2 _
	for _ in $(seq 200); do
		if [ "$(prop NRestarts)" -gt "$before" ] && [ "$(prop ActiveState)" = active ] &&
			[ "$(prop MainPID)" != "$old" ]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}
for fault in hang_main_loop hang_poll_group; do
	if [ "$(prop ActiveState)" != active ]; then
		in_ct systemctl start "$unit"
	fi
	n=$(prop NRestarts)
	old=$(prop MainPID)
	in_ct nvme-emu-rpc -s /run/nvme-emu/svctest.sock nvmf_emu_test_fault --fault "$fault" \
		--poll-group 0 > /dev/null 2>&1
	host_step "$fault: systemd's watchdog kills the daemon and restarts it" restarted_after "$n" "$old"
done
host_step "the journal says why: a watchdog timeout (after the test fault, at priority 2)" sh -c \
	"$(declare -f in_ct); pid1=$pid1; in_ct journalctl -u $unit -o cat --no-pager | grep -q 'Watchdog timeout' &&
	 in_ct journalctl -u $unit -p 2..2 -o cat --no-pager | grep -q 'test fault: the main loop hangs'"
in_ct systemctl stop "$unit"
if [ "$host_failed" -ne 0 ]; then
	echo "--- journal of $unit"
	in_ct journalctl -u "$unit" -o short-monotonic --no-pager | tail -n 40
	echo "--- mmdebstrap log tail"
	tail -n 5 "$GT_DIR/mmdebstrap.log"
fi
cleanup
nspawn=
trap - EXIT
# The container's root (300 MB) goes; the logs stay in $GT_DIR.
rm -rf --one-file-system "$root"
gt_report_with_host "$guest_rc"
