# Opt-in QEMU with our vfio-user-pci finalize fix (patches/qemu/): `make qemu-patched` (source build) or `make qemu-binfix` (stopgap binary fix); `make test` applies the stopgap (qemu-binfix, under a second) and never builds from source.
#
# Both land in the cache (qemu-configs/build-qemu.sh). The guest test that
# needs the fix (tests/guest/test-rpc-hotplug.sh) uses whichever is there
# (build-qemu.sh --print-path, the source build first); any launch can use one
# with NVME_EMU_QEMU=PATH or `qemu-configs/launch-guest.sh --qemu PATH`.
# QEMU_SOURCE=PATH builds from a local .dsc, upstream tarball or source tree
# instead of apt-get source (for mirrors that serve no source packages).

.PHONY: qemu-patched qemu-binfix
qemu-patched: deps
	@qemu-configs/build-qemu.sh

# The sysroot's own QEMU binary with the one aborting call turned into a NOP
# (patches/qemu/binary-fix.py): for hosts where no QEMU source can be had.
qemu-binfix: deps guest-image
	@qemu-configs/build-qemu.sh --binary
