# tests/fuzz: a time-bounded fuzz-style integration test of the vfio-user
# endpoint (part of `make test`), and `make fuzz`: a libFuzzer target over the
# message parser built with clang (not part of `make test`).
INTEG_TESTS += vfu_fuzz
vfu_fuzz_SRCS := tests/fuzz/vfu_fuzz.c tests/unit/vfu/fake_dev.c
vfu_fuzz_LIBS := host vfu common

# `make fuzz` (FUZZ_TIME seconds, default 60): libFuzzer over the endpoint's
# message parser, built with clang straight from the sources.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_TARGET_SRCS := tests/fuzz/vfu_libfuzzer.c tests/unit/vfu/fake_dev.c $(vfu_SRCS) \
		    host/vfu_client.c $(common_SRCS)
$(BUILD)/fuzz/vfu_libfuzzer: $(FUZZ_TARGET_SRCS) $(wildcard hw/*.h host/*.h tests/unit/vfu/*.h)
	@command -v $(FUZZ_CC) >/dev/null || \
	    { echo "make fuzz needs $(FUZZ_CC) with libFuzzer (Debian: clang libclang-rt-14-dev)"; exit 1; }
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-o $@ $(FUZZ_TARGET_SRCS) -ljson-c -lpthread -lm

# The whole function in one process (endpoint, device model, controller, poll group, DPA), with
# a dictionary of lifecycle messages.
NVME_FUZZ_SRCS := tests/fuzz/nvme_libfuzzer.c $(host_SRCS) \
		  $(transport_SRCS) $(controller_SRCS) $(backend_SRCS) $(dpa_SRCS) $(hw_SRCS) $(vfu_SRCS) $(common_SRCS)
$(BUILD)/fuzz/nvme_libfuzzer: $(NVME_FUZZ_SRCS) $(wildcard */*.h */*/*.h)
	@command -v $(FUZZ_CC) >/dev/null || \
	    { echo "make fuzz needs $(FUZZ_CC) with libFuzzer (Debian: clang libclang-rt-14-dev)"; exit 1; }
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -DNVME_EMU_DEBUG \
		-fsanitize=fuzzer,address,undefined -o $@ $(NVME_FUZZ_SRCS) -ljson-c -laio -luring -lnbd -lrbd -lrados -lpthread -lm

FUZZ_TARGETS := $(BUILD)/fuzz/vfu_libfuzzer $(BUILD)/fuzz/nvme_libfuzzer

.PHONY: fuzz fuzz-targets
fuzz-targets: $(FUZZ_TARGETS)
fuzz: $(FUZZ_TARGETS)
	@tests/fuzz/run-libfuzzer.sh $(FUZZ_TIME) $(BUILD)/fuzz $(FUZZ_TARGETS)

# `make test` runs both for a short budget (FUZZ_CHECK_TIME seconds each, default 20) through
# tests/fuzz/libfuzzer-check.sh; `make soak` for an hour each.
