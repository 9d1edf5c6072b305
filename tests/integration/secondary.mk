# tests/integration/secondary.mk: secondary controllers and Virtualization Management through the
# real daemon's sockets, with SIGKILL and a restart on the primary's state file (included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_secondary_test
nvme_secondary_test_SRCS := tests/integration/secondary_test.c tests/integration/nvme_itest.c \
			    tests/integration/itest.c
nvme_secondary_test_LIBS := host common
$(BUILD)/bin/nvme_secondary_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
