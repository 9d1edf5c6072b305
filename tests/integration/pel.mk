# tests/integration/pel.mk: the Persistent Event Log in its state file across a restart of the
# real daemon (included by tests/integration/module.mk).
INTEG_TESTS += nvme_pel_test
nvme_pel_test_SRCS := tests/integration/pel_test.c tests/integration/nvme_itest.c \
		      tests/integration/itest.c
nvme_pel_test_LIBS := host common
$(BUILD)/bin/nvme_pel_test: $(BUILD)/bin/nvme-emu
