# Guest tests of our own controller (the harness's tests are listed in
# qemu-configs/module.mk). They use build/bin/nvme-emu.
GUEST_TESTS += tests/guest/test-nvme-emu.sh
# The same on the io_uring backend.
GUEST_TESTS += tests/guest/test-nvme-emu-uring.sh
# The same on an NBD export (nbdkit file plugin).
GUEST_TESTS += tests/guest/test-nvme-emu-nbd.sh
# The same on a Ceph RBD image (a throwaway cluster on 127.0.0.1).
GUEST_TESTS += tests/guest/test-nvme-emu-rbd.sh
# The NBD server restarted in the middle of the guest's fio: no acknowledged write lost.
GUEST_TESTS += tests/guest/test-nbd-restart.sh
# An RBD namespace grown under a running guest (Namespace Attribute Changed).
GUEST_TESTS += tests/guest/test-rbd-resize.sh
# bdev_error / bdev_delay under a namespace of a running guest.
GUEST_TESTS += tests/guest/test-error-inject.sh
# The Controller Memory Buffer and the Persistent Memory Region: show-regs, set-reg, the guest's
# own mappings of BAR2 and BAR4, PMR persistence across SIGKILL of the daemon.
GUEST_TESTS += tests/guest/test-cmb-pmr.sh
# Flexible Data Placement with nvme-cli (nvme fdp ..., nvme write --dir-type 2 --dir-spec N),
# each handle's data found in its own reclaim unit of the base file.
GUEST_TESTS += tests/guest/test-fdp.sh
# Device self-test, sanitize, telemetry and the persistent event log with nvme-cli.
GUEST_TESTS += tests/guest/test-admin-ext.sh
# Zoned Namespaces: nvme-cli zns commands and fio zonemode=zbd on --zoned and RPC-made namespaces.
GUEST_TESTS += tests/guest/test-zns.sh
GUEST_TESTS += tests/guest/test-sample-device.sh
# SIGKILL of the daemon while the guest writes: every flushed write is in the file.
GUEST_TESTS += tests/guest/test-kill-during-io.sh
# f2fs on a zoned namespace (mkfs.f2fs -m -c), SIGKILL of the daemon while it writes, restart,
# a second boot: fsck.f2fs clean, every synced file whole.
GUEST_TESTS += tests/guest/test-zoned-fs.sh
# The same compliance job on a function made with SPDK's own rpc.py (VFIOUSER listener).
GUEST_TESTS += tests/guest/test-spdk-rpc.sh
# Reservations with nvme-cli, and Persist Through Power Loss across a daemon restart.
GUEST_TESTS += tests/guest/test-resv.sh
# Secondary controllers: nvme-cli's primary-ctrl-caps, list-secondary and virt-mgmt; a secondary
# brought online is hot-plugged as a function of its own, fio verify through it, offline unplugs it.
GUEST_TESTS += tests/guest/test-secondary.sh
# One subsystem with two controllers in one guest: Linux multipath, reservations between the
# controllers' two host identifiers with nvme-cli.
GUEST_TESTS += tests/guest/test-two-hosts.sh
# Namespace Management and Attachment from nvme-cli over a file pool, across a daemon restart.
GUEST_TESTS += tests/guest/test-ns-mgmt.sh
# Two guests, eight functions, fio verify while one is reset, FLR'd and re-plugged (60 s here;
# make soak: an hour).
GUEST_TESTS += tests/guest/test-soak.sh
# The installed Debian image (qemu-configs/boot-image.sh) booted from an nvme-emu disk by SeaBIOS
# and by OVMF: nvme list, fio verify on the root file system, reboot, boot again.
GUEST_TESTS += tests/guest/test-boot-bios.sh tests/guest/test-boot-uefi.sh
# LBA formats with metadata and end-to-end protection: nvme format --pi, fio verify through the
# kernel's integrity path, guard errors from bad tuples and from a corrupted backing file.
GUEST_TESTS += tests/guest/test-pi.sh
# The Debian package installed by apt into an mmdebstrap root booted with systemd (nspawn): the
# nvme-emu@ unit's readiness, sandbox, journal, reload under a guest's I/O, clean stop and watchdog.
GUEST_TESTS += tests/guest/test-systemd-unit.sh
# The Linux nvme driver's module parameters that change what it sends (poll queues, a shallow
# io_queue_depth, SGLs for every request, max_host_mem_size_mb without an HMB offered).
GUEST_TESTS += tests/guest/test-nvme-params.sh
# nvme-cli's own tests/e2e (tests/guest/test-nvme-cli-e2e.sh, about 20 minutes) runs in `make
# soak`, against nvme-emu and QEMU's NVMe: see the Makefile.
# One RBD image exported by two daemons with shared_reservations (the state in RADOS): one guest
# with a function of each, nvme-cli's reservations across them, a daemon killed and restarted.
GUEST_TESTS += tests/guest/test-shared-resv.sh
# The same across two network namespaces ("hosts"), each with its own daemon and its own guest:
# Preempt and Abort during fio, SIGKILL of one daemon mid-fio, a resize seen by both.
GUEST_TESTS += tests/guest/test-shared-resv-netns.sh
