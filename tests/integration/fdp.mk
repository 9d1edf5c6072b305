# tests/integration/fdp.mk: Flexible Data Placement of the real daemon through its socket (placement
# in the base file per handle, RUH Status/Update, GC under overwrite, SIGKILL with FUA writes in
# flight and a restart, hostile values; included by tests/integration/module.mk).
INTEG_TESTS += nvme_fdp_test
nvme_fdp_test_SRCS := tests/integration/fdp_test.c tests/integration/nvme_itest.c \
		      tests/integration/itest.c
nvme_fdp_test_LIBS := host common
$(BUILD)/bin/nvme_fdp_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
