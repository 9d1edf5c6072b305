# tests/integration/ns_pool.mk: a namespace pool's capacity as a host computes it, and packed
# blocks written from two poll groups, through the real vfio-user socket (included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_ns_pool_test
nvme_ns_pool_test_SRCS := tests/integration/ns_pool_test.c tests/integration/nvme_itest.c \
			  tests/integration/itest.c
nvme_ns_pool_test_LIBS := host common
$(BUILD)/bin/nvme_ns_pool_test: $(BUILD)/bin/nvme-emu
