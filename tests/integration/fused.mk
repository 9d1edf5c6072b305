# tests/integration/fused.mk: fused Compare and Write through the real vfio-user socket, on an NVM
# and a zoned namespace (included by tests/integration/module.mk).
INTEG_TESTS += nvme_fused_test
nvme_fused_test_SRCS := tests/integration/fused_test.c tests/integration/nvme_itest.c \
			tests/integration/itest.c
nvme_fused_test_LIBS := host common
$(BUILD)/bin/nvme_fused_test: $(BUILD)/bin/nvme-emu
