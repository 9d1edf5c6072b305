#!/usr/bin/env bash
# Guest test: test-nvme-emu.sh's whole compliance job and SIGKILL persistence check on the
# io_uring backend.
NVME_EMU_BACKEND=uring exec bash "$(dirname "$0")/test-nvme-emu.sh"
