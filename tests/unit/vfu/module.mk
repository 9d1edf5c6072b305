# tests/unit/vfu: the DMA window table and the vfio-user endpoint driven by
# the test client over a real socket, against a fake device (fake_dev.c).
vfu_TEST_LIBS := host vfu common
vfu_TEST_SRCS := tests/unit/vfu/fake_dev.c
