# tests/integration/multi_ctrl.mk: one subsystem with several controllers (listeners), two test
# hosts at once through the real sockets (included by tests/integration/module.mk).
INTEG_TESTS += nvme_multi_ctrl_test
nvme_multi_ctrl_test_SRCS := tests/integration/multi_ctrl_test.c tests/integration/nvme_itest.c \
			     tests/integration/itest.c
nvme_multi_ctrl_test_LIBS := host common
$(BUILD)/bin/nvme_multi_ctrl_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
