# tests/unit/app: the daemon's JSON-RPC parameter decoder and its QMP client (against a scripted
# QEMU on a real unix socket).
app_TEST_LIBS := app transport controller cluster backend dpa hw vfu common
