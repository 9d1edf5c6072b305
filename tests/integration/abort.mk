# tests/integration/abort.mk: Abort of commands not fetched yet, through the real vfio-user socket
# (the namespace on an error bdev made over JSON-RPC; included by tests/integration/module.mk).
INTEG_TESTS += nvme_abort_test
nvme_abort_test_SRCS := tests/integration/abort_test.c tests/integration/nvme_itest.c \
			tests/integration/itest.c
nvme_abort_test_LIBS := host common
$(BUILD)/bin/nvme_abort_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
