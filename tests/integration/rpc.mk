# tests/integration/rpc.mk: the JSON-RPC server, its methods and the nvme-emu-rpc CLI (included
# by tests/integration/module.mk). rpc-cli.sh drives every method through the CLI; rpc_raw_test
# speaks raw JSON-RPC on the socket (hostile input) and plays a QEMU on a QMP socket.
SCRIPT_TESTS += tests/integration/rpc/rpc-cli.sh
