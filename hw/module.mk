# hw/: the generic emulated PCIe function (library "hw"), served to a host
# through the vfio-user endpoint of vfu/. Link both: hw vfu.
MODULES += hw
hw_SRCS := $(wildcard hw/*.c)

# The sample generic device (hw/samples/sample_device.c), driven by the
# integration tests in tests/integration/.
PROGRAMS += hw-sample-device
hw-sample-device_SRCS := hw/samples/sample_device.c
hw-sample-device_LIBS := hw vfu common
