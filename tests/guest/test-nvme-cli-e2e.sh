#!/usr/bin/env bash
# Guest test: nvme-cli's end-to-end suite (tests/e2e of linux-nvme/nvme-cli) in the guest, with the nvme binary built from the same tree, against a function with an empty RAM namespace pool (--ns-pool ram:256M): every case must pass but the two that fail on any device with this guest (copy descriptor formats 2h/3h: Linux refuses userspace Set Features 16h; get-lba-status: the suite passes a device path as --namespace-id). NVME_CLI_SRC names the tree (default ../shared/nvme-cli beside the checkout); skipped (0 passed, 0 failed) without it. NVME_CLI_E2E_TARGET=qemu runs the same against QEMU's NVMe device for reference, where the cases that skip themselves for a feature it does not offer (Namespace Management, PI formats, Copy, Verify, Write Uncorrectable, Get LBA Status) may skip; nothing may skip against nvme-emu. NVME_CLI_E2E_MODULES narrows the modules.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

SRC=${NVME_CLI_SRC:-$GT_TOP/../shared/nvme-cli}
target=${NVME_CLI_E2E_TARGET:-nvme-emu}
if [ ! -f "$SRC/tests/e2e/runner.py" ] || [ ! -f "$SRC/tests/e2e/meson.build" ]; then
	echo "skipped: nvme-cli's tests/e2e is not at $SRC (set NVME_CLI_SRC to an nvme-cli tree)"
	echo "0 passed, 0 failed"
	exit 0
fi
if ! command -v meson > /dev/null; then
	echo "skipped: meson is not installed (make deps), nvme-cli cannot be built"
	echo "0 passed, 0 failed"
	exit 0
fi
gt_setup "nvme-cli-e2e-$target"
nvme_bin=$("$GT_TOP/tests/guest/nvme-cli-build.sh" "$SRC") ||
	{ echo "not ok - host: nvme-cli builds from $SRC"; echo "0 passed, 1 failed"; exit 1; }
echo "nvme-cli: $nvme_bin"
# The modules the suite's own meson.build runs, in its order (the template is not one).
modules=${NVME_CLI_E2E_MODULES:-$(sed -n "s/^ *'\(nvme_[a-z0-9_]*_test\)\.py',\$/\1/p" \
	"$SRC/tests/e2e/meson.build")}
echo "$modules" > "$GT_DIR/e2e-modules"
cp "$nvme_bin" "$GT_DIR/nvme"
cat > "$GT_DIR/e2e-known" << 'KNOWN'
nvme_copy_test.test_copy_format_2 Linux refuses userspace Set Features 16h (Host Behavior Support): formats 2h/3h cannot be enabled
nvme_copy_test.test_copy_format_2_sopts Linux refuses userspace Set Features 16h (Host Behavior Support): formats 2h/3h cannot be enabled
nvme_copy_test.test_copy_format_3 Linux refuses userspace Set Features 16h (Host Behavior Support): formats 2h/3h cannot be enabled
nvme_copy_test.test_copy_format_3_sopts Linux refuses userspace Set Features 16h (Host Behavior Support): formats 2h/3h cannot be enabled
nvme_get_lba_status_test.test_get_lba_status the suite passes a device path as --namespace-id
KNOWN
# The reference run: the cases that skip themselves on QEMU's NVMe as the launcher gives it (one
# namespace on a drive, no subsystem: no Namespace Management, no PI formats, no Copy limits).
# Against nvme-emu none may skip.
: > "$GT_DIR/e2e-skip"
[ "$target" = qemu ] && cat > "$GT_DIR/e2e-skip" << 'SKIP'
nvme_attach_detach_ns_test.test_attach_detach_ns no Namespace Management
nvme_create_max_ns_test.test_attach_detach_ns no Namespace Management
nvme_format_test.test_format_ns no Namespace Management (the case reformats through it)
nvme_qpif_test.test_nvme_write_qpif no Namespace Management, no format with a storage tag
nvme_writeuncor_test.test_write_uncor no Write Uncorrectable (ONCS bit 1)
nvme_copy_test.test_copy_format_0 MCL, MSSRL and MSRC are 0
nvme_copy_test.test_copy_format_1 no format with the 64b guard
nvme_verify_test.test_verify no Verify (ONCS bit 7)
nvme_lba_status_log_test.test_lba_stat_log no Get LBA Status (OACS bit 9)
SKIP
timeout_s=${NVME_CLI_E2E_TIMEOUT:-2400}
adds=(--add "$GT_DIR/e2e-modules" --add "$GT_DIR/e2e-known" --add "$GT_DIR/e2e-skip" --add "$GT_DIR/e2e-serial"
      --add "$GT_DIR/nvme" --add "$SRC/tests")
rc=1
daemon=
if [ "$target" = qemu ]; then
	echo nvme-emu-q0 > "$GT_DIR/e2e-serial"
	disk=$(gt_disk disk0 256M)
	"$GT_LAUNCH" --job "$GT_JOBS/nvme-cli-e2e.sh" "${adds[@]}" --qemu-nvme "$disk" \
		--run-dir "$GT_DIR/run" --timeout "$timeout_s"
	rc=$?
else
	echo nvme-emu-e2e > "$GT_DIR/e2e-serial"
	sock=$GT_DIR/e2e.sock
	"$GT_TOP/build/bin/nvme-emu" --socket "$sock" --serial nvme-emu-e2e --ns-pool ram:256M \
		> "$GT_DIR/nvme-emu.log" 2>&1 &
	daemon=$!
	trap 'kill $daemon 2> /dev/null' EXIT
	if host_step "nvme-emu serves a function with an empty RAM pool" gt_wait_sockets "$sock"; then
		"$GT_LAUNCH" --job "$GT_JOBS/nvme-cli-e2e.sh" "${adds[@]}" --vfio-user "$sock" \
			--run-dir "$GT_DIR/run" --timeout "$timeout_s"
		rc=$?
		host_step "the daemon is alive after the suite" kill -0 "$daemon"
	fi
	gt_stop_daemon "$daemon" "$GT_DIR/nvme-emu.log"
fi
[ -f "$GT_DIR/run/out/e2e/summary.txt" ] && { echo "--- per case"; cat "$GT_DIR/run/out/e2e/summary.txt"; }
gt_report_with_host "$rc"
