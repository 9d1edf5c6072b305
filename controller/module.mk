# controller/: the NVMe controller and its PCIe-emulation transport.
MODULES += controller
controller_SRCS := $(wildcard controller/*.c)
