# app/: the nvme-emu daemon (command line, JSON-RPC server and methods, hotplug through QMP) and
# the nvme-emu-rpc CLI. Library "app" = every app/*.c but the two mains.
MODULES += app
app_SRCS := $(filter-out app/main.c app/rpc_cli.c app/cli_rpc.c,$(wildcard app/*.c))

PROGRAMS += nvme-emu
nvme-emu_SRCS := app/main.c
nvme-emu_LIBS := app transport controller cluster backend dpa hw vfu common

PROGRAMS += nvme-emu-rpc
nvme-emu-rpc_SRCS := app/rpc_cli.c app/cli_rpc.c
nvme-emu-rpc_LIBS := common

# Guest tests of the RPC workflow (the top Makefile only includes tests/*/module.mk, and
# tests/guest has none: they are listed here).
GUEST_TESTS += tests/guest/test-rpc-hotplug.sh tests/guest/test-rpc-two.sh
