# tests/integration/crash.mk: the crash torture (included by tests/integration/module.mk): the
# real daemon on real files, killed with SIGKILL at random points with commands in flight and
# started again; CRASH_ROUNDS, CRASH_SEED; `make soak` runs it long. nvme_powerloss_test, the
# same program: the power-loss run (nbdkit's writeback cache) and the start-up checks.
INTEG_TESTS += nvme_crash_test nvme_powerloss_test
nvme_crash_test_SRCS := tests/integration/crash_test.c tests/integration/nvme_itest.c \
			tests/integration/itest.c
nvme_crash_test_LIBS := host common
nvme_powerloss_test_SRCS := $(nvme_crash_test_SRCS)
nvme_powerloss_test_LIBS := host common
$(BUILD)/bin/nvme_crash_test $(BUILD)/bin/nvme_powerloss_test: $(BUILD)/bin/nvme-emu
