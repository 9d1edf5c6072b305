# hw/: the vfio-user protocol endpoint (library "vfu": hw/vfu_*.c, knows the
# wire protocol only) and the generic emulated PCIe function built on it
# (library "hw": every other hw/*.c). Link both: hw vfu.
MODULES += vfu hw
vfu_SRCS := $(wildcard hw/vfu_*.c)
hw_SRCS := $(filter-out hw/vfu_%,$(wildcard hw/*.c))

# The sample generic device (hw/samples/sample_device.c), driven by the
# integration tests in tests/integration/.
PROGRAMS += hw-sample-device
hw-sample-device_SRCS := hw/samples/sample_device.c
hw-sample-device_LIBS := hw vfu common
