# tests/integration/copy_xns.mk: cross-namespace Copy (descriptor formats 2h/3h, Host Behavior
# Support) through the real vfio-user socket (included by tests/integration/module.mk).
INTEG_TESTS += nvme_copy_xns_test
nvme_copy_xns_test_SRCS := tests/integration/copy_xns_test.c tests/integration/nvme_itest.c \
			   tests/integration/itest.c
nvme_copy_xns_test_LIBS := host common
$(BUILD)/bin/nvme_copy_xns_test: $(BUILD)/bin/nvme-emu
