# tests/integration/app.mk: the daemon's command line (included by tests/integration/module.mk).
# pin-poll-groups.sh: poll-group threads pinned by -m 0xMASK and --pin-poll-groups.
SCRIPT_TESTS += tests/integration/app/pin-poll-groups.sh
