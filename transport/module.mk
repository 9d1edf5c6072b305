# transport/: NVMe over PCIe: binds the controller core to the emulated PCIe function (hw/) and
# the DPA model (dpa/): BAR0, doorbells, poll groups, interrupts.
MODULES += transport
transport_SRCS := $(wildcard transport/*.c)
