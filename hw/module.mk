# hw/: vfio-user server and the generic emulated PCIe function.
MODULES += hw
hw_SRCS := $(wildcard hw/*.c)
