# tests/fuzz: a time-bounded fuzz-style integration test of the vfio-user
# endpoint (part of `make test`), and `make fuzz`: a libFuzzer target over the
# message parser built with clang (not part of `make test`).
INTEG_TESTS += vfu_fuzz
vfu_fuzz_SRCS := tests/fuzz/vfu_fuzz.c tests/unit/vfu/fake_dev.c
vfu_fuzz_LIBS := vfuclient vfu common
