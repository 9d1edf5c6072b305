# Guest harness: the cached sysroot and initramfs (guest-image), the demo, and the guest tests run by `make test`.

GUEST_TESTS += tests/guest/test-launcher.sh tests/guest/test-qemu-nvme.sh \
	       tests/guest/test-two-devices.sh tests/guest/test-hotplug.sh

# `make demo DEMO_DEVICE=...`: nvme-emu (our controller, started by the demo:
# the default), qemu-nvme (QEMU's built-in NVMe device on a file, the
# reference), virtio-blk, or vfio-user:SOCKET (a server already listening).
DEMO_DEVICE ?= nvme-emu
# `make demo BOOT=bios|uefi`: the guest boots Debian installed on the nvme-emu disk with SeaBIOS
# or OVMF (qemu-configs/demo-boot.sh); unset: the kernel and sysroot as above.
BOOT ?=

guest-image:
	@qemu-configs/initramfs.sh "$$(qemu-configs/sysroot.sh)" >/dev/null
	@echo "guest image: $$(qemu-configs/sysroot.sh) + $$(qemu-configs/initramfs.sh "$$(qemu-configs/sysroot.sh)")"

# The installed Debian image the boot tests and `make demo BOOT=bios|uefi` boot from an nvme-emu
# disk (qemu-configs/boot-image.sh; cached, about a minute the first time). Built before the tests
# so that its first build does not count in a boot test's time limit.
.PHONY: boot-image
boot-image: deps
	@echo "boot image: $$(qemu-configs/boot-image.sh)"
test test-guest: boot-image

demo: deps all guest-image
	@BOOT="$(BOOT)" qemu-configs/demo.sh "$(DEMO_DEVICE)"

# Only the guest tests (make test runs them too).
test-guest: deps guest-image
	@scripts/run-tests.sh $(foreach t,$(GUEST_TESTS),"guest:$(notdir $(t))=$(t)")
