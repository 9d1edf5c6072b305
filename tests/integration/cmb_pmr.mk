# tests/integration/cmb_pmr.mk: the Controller Memory Buffer and the Persistent Memory Region of
# the real daemon through its socket, with SIGKILL and a restart on the PMR file (included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_cmb_pmr_test
nvme_cmb_pmr_test_SRCS := tests/integration/cmb_pmr_test.c tests/integration/nvme_itest.c \
			  tests/integration/itest.c
nvme_cmb_pmr_test_LIBS := host common
$(BUILD)/bin/nvme_cmb_pmr_test: $(BUILD)/bin/nvme-emu
