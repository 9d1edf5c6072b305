# tests/integration/irq_moderation.mk: interrupt moderation (adaptive, and Set Features 08h)
# through the real vfio-user socket, interrupts counted against completions (included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_irq_moderation_test
nvme_irq_moderation_test_SRCS := tests/integration/irq_moderation_test.c \
				 tests/integration/nvme_itest.c tests/integration/itest.c
nvme_irq_moderation_test_LIBS := host common
$(BUILD)/bin/nvme_irq_moderation_test: $(BUILD)/bin/nvme-emu
