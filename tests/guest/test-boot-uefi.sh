#!/usr/bin/env bash
# Guest test: OVMF (UEFI) boots Debian installed on an nvme-emu disk, nvme list, fio verify, reboot (test-boot.sh uefi).
exec "$(dirname "$0")/test-boot.sh" uefi
