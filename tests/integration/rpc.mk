# tests/integration/rpc.mk: the JSON-RPC server, its methods and the nvme-emu-rpc CLI (included
# by tests/integration/module.mk). rpc-cli.sh drives every method through the CLI; rpc_raw_test
# speaks raw JSON-RPC on the socket (hostile input) and plays a QEMU on a QMP socket.
SCRIPT_TESTS += tests/integration/rpc/rpc-cli.sh
# SPDK's own rpc.py (../shared/spdk-rpc, or $SPDK_RPC_DIR) through the SPDK and DOCA workflows.
SCRIPT_TESTS += tests/integration/rpc/spdk-rpc.sh
INTEG_TESTS += rpc_raw_test
rpc_raw_test_SRCS := tests/integration/rpc_raw_test.c tests/integration/itest.c
rpc_raw_test_LIBS := host common
rpc_raw_test_LDLIBS := -lpthread
$(BUILD)/bin/rpc_raw_test: $(BUILD)/bin/nvme-emu
