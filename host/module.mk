# host/: the host side, library "host": the vfio-user client (vfu_client.c) and the NVMe host
# driver (nvme_host.c controller and admin, nvme_qpair.c queues, nvme_host_vfu.c its vfio-user
# transport), used by the integration tests, the unit tests' loopback and nvme-emu-perf.
MODULES += host
host_SRCS := $(wildcard host/*.c)
