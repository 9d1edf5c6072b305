# tests/unit/hw: CUnit suites of the generic emulated PCIe function (type
# validation, config space, stateful regions, doorbells, MSI-X, host memory).
hw_TEST_LIBS := hw vfu common
hw_TEST_SRCS := tests/unit/hw/hw_test_util.c
