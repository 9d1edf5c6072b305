# tests/integration: hw integration tests, one program per DOCA DevEmu
# sample, each spawning hw-sample-device and driving it with the vfio-user
# test client. Run as "<prog> <build dir>".
HW_ITESTS := hw_sample_list_test hw_sample_hotplug_test hw_sample_stateful_test \
	     hw_sample_db_test hw_sample_msix_test hw_sample_dma_test hw_sample_flr_test \
	     hw_sample_hostile_test
INTEG_TESTS += $(HW_ITESTS)
$(foreach t,$(HW_ITESTS),$(eval $(t)_SRCS := tests/integration/$(t).c tests/integration/itest.c))
$(foreach t,$(HW_ITESTS),$(eval $(t)_LIBS := host common))

# Controller integration: the nvme-emu daemon driven by the test client's
# NVMe host driver.
INTEG_TESTS += nvme_ctrl_test
nvme_ctrl_test_SRCS := tests/integration/nvme_ctrl_test.c tests/integration/nvme_itest.c \
		       tests/integration/itest.c
nvme_ctrl_test_LIBS := host common
$(BUILD)/bin/nvme_ctrl_test: $(BUILD)/bin/nvme-emu

# Issue 11's hostile-client findings, each through the real socket, with a second function
# doing verified I/O all along.
INTEG_TESTS += nvme_hostile_test
nvme_hostile_test_SRCS := tests/integration/hostile_ctrl_test.c tests/integration/nvme_itest.c \
			  tests/integration/itest.c
nvme_hostile_test_LIBS := host common
$(BUILD)/bin/nvme_hostile_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc

# The lifecycle torture test: seeded random interleavings of unmaps, resets, FLRs, queue changes
# and reconnects with I/O in flight (TORTURE_STEPS, TORTURE_SEED; `make soak` runs millions).
INTEG_TESTS += nvme_torture_test
nvme_torture_test_SRCS := tests/integration/torture_test.c tests/integration/nvme_itest.c \
			  tests/integration/itest.c
nvme_torture_test_LIBS := host common
$(BUILD)/bin/nvme_torture_test: $(BUILD)/bin/nvme-emu

# nvme-emu-perf against the real daemon.
SCRIPT_TESTS += tests/integration/perf/perf-tool.sh
# Every thread sleeps once the I/O ended (null, aio, io_uring, the placement bdev's owner).
SCRIPT_TESTS += tests/integration/perf/idle-after-io.sh
# SPDK's own vfio-user host against nvme-emu, nvme-emu-perf against SPDK's target (SPDK_DIR; else
# skipped).
SCRIPT_TESTS += tests/integration/perf/spdk-host.sh
# Namespaces on NBD exports (nbdkit, qemu-nbd started by the test).
SCRIPT_TESTS += tests/integration/nbd/nbd.sh
# Namespaces on Ceph RBD images (a throwaway cluster started by the test).
SCRIPT_TESTS += tests/integration/rbd/rbd.sh

include $(filter-out tests/integration/module.mk,$(wildcard tests/integration/*.mk))
