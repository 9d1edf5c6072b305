# tests/integration/write_multi.mk: batched submission (REGION_WRITE_MULTI doorbells, batched
# socket reads, hostile batches) against the daemon with trapped doorbells (included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_write_multi_test
nvme_write_multi_test_SRCS := tests/integration/write_multi_test.c \
			      tests/integration/nvme_itest.c tests/integration/itest.c
nvme_write_multi_test_LIBS := host common
$(BUILD)/bin/nvme_write_multi_test: $(BUILD)/bin/nvme-emu
