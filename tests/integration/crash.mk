# tests/integration/crash.mk: the crash torture (included by tests/integration/module.mk): the
# real daemon on real files, killed with SIGKILL at random points with commands in flight and
# started again; CRASH_ROUNDS, CRASH_SEED; `make soak` runs it long. nvme_powerloss_test, the
# same program: the power-loss run (nbdkit's writeback cache) and the start-up checks.
INTEG_TESTS += nvme_crash_test nvme_powerloss_test
nvme_crash_test_SRCS := $(wildcard tests/integration/crash/*.c) tests/integration/nvme_itest.c \
			tests/integration/itest.c
nvme_crash_test_LIBS := host common
nvme_powerloss_test_SRCS := $(nvme_crash_test_SRCS)
nvme_powerloss_test_LIBS := host common
$(BUILD)/bin/nvme_crash_test $(BUILD)/bin/nvme_powerloss_test: $(BUILD)/bin/nvme-emu
# The power-loss run's fault layer, preloaded into the daemon (no sanitizer: the ASan daemon is
# told not to mind the order).
$(BUILD)/lib/nvme_synced_watch.so: tests/integration/synced_watch.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl
$(BUILD)/bin/nvme_powerloss_test: $(BUILD)/lib/nvme_synced_watch.so
