#!/usr/bin/env bash
# Guest test: test-nvme-emu.sh's whole compliance job and SIGKILL persistence check on a Ceph RBD
# namespace (a throwaway single-node cluster started by the test, tests/lib/ceph-cluster.sh).
NVME_EMU_BACKEND=rbd exec bash "$(dirname "$0")/test-nvme-emu.sh"
