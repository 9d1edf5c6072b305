# vfu/: our own vfio-user server library: the protocol endpoint (socket,
# framing, commands, late replies) and the DMA window table. It knows the wire
# protocol and nothing about PCI or NVMe; hw/ builds the device model on it.
MODULES += vfu
vfu_SRCS := $(wildcard vfu/*.c)
