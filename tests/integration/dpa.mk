# tests/integration/dpa.mk: dpa/ over the real hw/ device and the vfio-user
# test client through the socket (included by tests/integration/module.mk).
INTEG_TESTS += dpa_hw_test
dpa_hw_test_SRCS := tests/integration/dpa_hw_test.c tests/integration/itest.c
dpa_hw_test_LIBS := dpa hw vfu host common
