# tests/integration/docs.mk: README.md and docs/ against the build (included by
# tests/integration/module.mk). docs-check.sh: every option of nvme-emu, nvme-emu-perf and
# nvme-emu-rpc and every JSON-RPC method of a running daemon documented, README's length, the
# pages' links and the paths into the tree they name.
SCRIPT_TESTS += tests/integration/docs/docs-check.sh
