#!/usr/bin/env bash
# Guest test: Zoned Namespaces. Namespace 1 is zoned from the command line (--zoned: 32 zones of
# 2 MiB with 1.5 MiB of capacity, at most 4 open / 6 active), namespace 2 through the RPC
# (bdev_zone_block_create over a malloc bdev, SPDK's parameters). The guest's kernel sees
# host-managed zoned block devices; nvme-cli's zns commands and fio zonemode=zbd with verify
# run on them. The host checks bdev_get_bdevs and save_config, then fails two zones of
# namespace 1 (nvmf_emu_set_zone_state) for the guest to see.
set -uo pipefail
. "$(dirname "$0")/host-lib.sh"

BIN=$GT_TOP/build/bin
gt_setup zns
rpc() { "$BIN/nvme-emu-rpc" -s "$GT_DIR/rpc.sock" -t 60 "$@"; }
out=$GT_DIR/run/out
"$BIN/nvme-emu" --socket "$GT_DIR/nvme.sock" -r "$GT_DIR/rpc.sock" --malloc 64M \
	--zoned 3072:4:6 --serial NVMEEMU-ZNS > "$GT_DIR/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$GT_DIR/nvme.sock" ] && break; sleep 0.1; done
"$GT_LAUNCH" --job "$GT_JOBS/zns.sh" --vfio-user "$GT_DIR/nvme.sock" \
	--run-dir "$GT_DIR/run" --timeout "$GT_TIMEOUT" &
launcher=$!
trap 'kill $launcher $daemon 2>/dev/null' EXIT
if host_step "the guest is ready" quiet_wait 120 ready; then
	host_step "bdev_zone_block_create ZNS1 over Malloc1 (zone capacity 2048, no limits, 64-byte zone descriptor extensions) as ns 2" \
		sh -c "$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc bdev_malloc_create --name Malloc1 --num_blocks 65536 --block_size 512 > /dev/null &&
		rpc bdev_zone_block_create --name ZNS1 --base_bdev Malloc1 --zone_capacity 2048 \
			--optimal_open_zones 1 --zone_desc_ext_size 64 > /dev/null &&
		rpc nvmf_subsystem_add_ns --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ZNS \
			--namespace.bdev_name ZNS1 --namespace.nsid 2 > /dev/null"
	host_step "bdev_get_bdevs: ZNS1 zoned, zone size 2048, extensions 64, over Malloc1" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc bdev_get_bdevs --name ZNS1 | tr -d ' \n' > '$GT_DIR/zns1.json'
		grep -q '\"zoned\":true' '$GT_DIR/zns1.json' &&
		grep -q '\"zone_size\":2048' '$GT_DIR/zns1.json' &&
		grep -q '\"zone_desc_ext_size\":64' '$GT_DIR/zns1.json' &&
		grep -q '\"base_bdev_name\":\"Malloc1\"' '$GT_DIR/zns1.json'"
	host_step "save_config replays both zoned bdevs with their parameters" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc save_config | tr -d ' \n' > '$GT_DIR/config.json'
		grep -o '\"method\":\"bdev_zone_block_create\",\"params\":{[^}]*}' '$GT_DIR/config.json' > '$GT_DIR/zb.txt'
		cat '$GT_DIR/zb.txt'
		[ \$(wc -l < '$GT_DIR/zb.txt') -eq 2 ] &&
		grep -q '\"zone_capacity\":3072' '$GT_DIR/zb.txt' && grep -q '\"max_open_zones\":4' '$GT_DIR/zb.txt' &&
		grep -q '\"max_active_zones\":6' '$GT_DIR/zb.txt' && grep -q '\"base_bdev\":\"Malloc1\"' '$GT_DIR/zb.txt' &&
		grep -q '\"zone_desc_ext_size\":64' '$GT_DIR/zb.txt'"
	touch "$out/ns2"
fi
if host_step "the guest asks for zone faults" quiet_wait 300 zone-fault-wanted; then
	host_step "nvmf_emu_set_zone_state: zone 31 read_only, zone 30 offline" sh -c "
		$(declare -f rpc); BIN='$BIN'; GT_DIR='$GT_DIR'
		rpc nvmf_emu_set_zone_state --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ZNS --nsid 1 \
			--zslba 126976 --state read_only | grep -q '\"read_only\"' &&
		rpc nvmf_emu_set_zone_state --nqn nqn.2026-11.io.nvme-emu:NVMEEMU-ZNS --nsid 1 \
			--zslba 122880 --state offline | grep -q '\"offline\"'"
	touch "$out/zone-fault"
fi
wait "$launcher"
rc=$?
kill -0 "$daemon" 2>/dev/null && echo "ok - daemon alive after the guest" >> "$out/output.log" ||
	{ echo "not ok - daemon died during the guest run" >> "$out/output.log"; tail -20 "$GT_DIR/daemon.log"; }
gt_report_with_host $rc
