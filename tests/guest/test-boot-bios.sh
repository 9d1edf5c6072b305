#!/usr/bin/env bash
# Guest test: SeaBIOS (QEMU's default firmware) boots Debian installed on an nvme-emu disk, nvme list, fio verify, reboot (test-boot.sh bios).
exec "$(dirname "$0")/test-boot.sh" bios
