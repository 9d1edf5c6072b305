# tests/fuzz: a time-bounded fuzz-style integration test of the vfio-user
# endpoint (part of `make test`), and `make fuzz`: a libFuzzer target over the
# message parser built with clang (not part of `make test`).
INTEG_TESTS += vfu_fuzz
vfu_fuzz_SRCS := tests/fuzz/vfu_fuzz.c tests/unit/vfu/fake_dev.c
vfu_fuzz_LIBS := vfuclient vfu common

# `make fuzz` (FUZZ_TIME seconds, default 60): libFuzzer over the endpoint's
# message parser, built with clang straight from the sources.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_TARGET_SRCS := tests/fuzz/vfu_libfuzzer.c tests/unit/vfu/fake_dev.c $(vfu_SRCS) \
		    tests/client/vfu_client.c $(common_SRCS)
$(BUILD)/fuzz/vfu_libfuzzer: $(FUZZ_TARGET_SRCS) $(wildcard hw/*.h tests/client/*.h tests/unit/vfu/*.h)
	@command -v $(FUZZ_CC) >/dev/null || \
	    { echo "make fuzz needs $(FUZZ_CC) with libFuzzer (Debian: clang libclang-rt-14-dev)"; exit 1; }
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -g -O1 -I. -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-o $@ $(FUZZ_TARGET_SRCS) -ljson-c -lpthread

.PHONY: fuzz
fuzz: $(BUILD)/fuzz/vfu_libfuzzer
	@mkdir -p $(BUILD)/fuzz/corpus
	$< -max_total_time=$(FUZZ_TIME) -timeout=20 $(BUILD)/fuzz/corpus
