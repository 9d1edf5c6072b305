# tests/integration/endgrp.mk: Endurance Groups of the real daemon through its socket (Identify,
# logs 09h and 0Fh, Feature 18h, events from health injected over JSON-RPC; included by
# tests/integration/module.mk).
INTEG_TESTS += nvme_endgrp_test
nvme_endgrp_test_SRCS := tests/integration/endgrp_test.c tests/integration/nvme_itest.c \
			 tests/integration/itest.c
nvme_endgrp_test_LIBS := host common
$(BUILD)/bin/nvme_endgrp_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
