#!/usr/bin/env bash
# Guest test: test-nvme-emu.sh's whole compliance job and SIGKILL persistence check on an NBD
# namespace (nbdkit's file plugin on a unix socket, started by the test).
NVME_EMU_BACKEND=nbd exec bash "$(dirname "$0")/test-nvme-emu.sh"
