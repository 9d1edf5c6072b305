# Opt-in QEMU with our fixes (patches/qemu/): `make qemu-patched` builds it with qemu-configs/build-qemu.sh into the cache; `make test` never builds it.
#
# The guest tests that need the fix (tests/guest/test-rpc-hotplug.sh) use the
# build when it is in the cache; any launch can with NVME_EMU_QEMU=PATH or
# `qemu-configs/launch-guest.sh --qemu PATH`. QEMU_SOURCE=PATH builds from a
# local .dsc, upstream tarball or source tree instead of apt-get source.

.PHONY: qemu-patched
qemu-patched: deps
	@qemu-configs/build-qemu.sh
