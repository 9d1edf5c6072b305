#!/usr/bin/env bash
# Guest test: QMP hotplug of a QEMU NVMe device into a free pcie-root-port (blockdev-add + device_add), then device_del.
#
# The guest job (jobs/hotplug.sh) polls for the device; host and guest
# meet through marker files in the job's output directory (see the job).
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

QMP=$GT_TOP/qemu-configs/qmp.py
gt_setup hotplug
disk=$(gt_disk hp0 64M)
qmp_sock=$GT_DIR/qmp.sock

"$GT_LAUNCH" --job "$GT_JOBS/hotplug.sh" --add "$GT_FIO" --qmp "$qmp_sock" --hotplug-ports 2 \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher 2>/dev/null' EXIT

if host_step "guest job started" quiet_wait "$GT_TIMEOUT" ready &&
	host_step "blockdev-add + device_add nvme into hp0" "$QMP" "$qmp_sock" \
		'{"execute":"blockdev-add","arguments":{"driver":"raw","node-name":"hp0disk","file":{"driver":"file","filename":"'"$disk"'"}}}' \
		'{"execute":"device_add","arguments":{"driver":"nvme","id":"hpnvme0","bus":"hp0","drive":"hp0disk","serial":"nvme-emu-hp0"}}'; then
	seen=$(gt_wait_file "$GT_TIMEOUT" added gone-wrong)
	host_step "guest used the hot-added device" test "$seen" = added &&
		host_step "device_del, DEVICE_DELETED event, blockdev-del" "$QMP" --timeout 120 "$qmp_sock" \
			'{"execute":"device_del","arguments":{"id":"hpnvme0"}}' event:DEVICE_DELETED:hpnvme0 \
			'{"execute":"blockdev-del","arguments":{"node-name":"hp0disk"}}'
fi

# The guest would wait out its own timeouts for a hotplug that is not
# coming: stop it at once.
[ "$host_failed" -eq 0 ] || kill "$launcher" 2>/dev/null
wait "$launcher"
rc=$?
trap - EXIT
# The guest's own checks are in output.log; the host's are added to them.
gt_report_with_host "$rc"
