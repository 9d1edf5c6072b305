# Guest job: an RBD namespace grows under a running guest. The host resizes the image
# (bdev_rbd_resize) once the guest wrote "ready"; the controller reports the new size with a
# Namespace Attribute Changed event and the kernel picks it up (its block device grows, no
# rescan asked); data before the old end is intact and the new blocks take I/O checked byte for byte.
. "$GUEST_LIB"

serial=NVMEEMU-RBD
step "nvme driver bound the RBD namespace" wait_for 30 nvme_ns_by_serial "$serial"
dev=$(nvme_ns_by_serial "$serial")
blk=$(basename "$dev")
step "64 MiB to begin with" sh -c "[ \$(cat /sys/block/$blk/size) -eq 131072 ]"
step "a pattern in the last MiB" sh -c \
	"yes rbd-before | head -c 1048576 > /tmp/a && dd if=/tmp/a of=$dev bs=1M seek=63 oflag=direct 2>/dev/null"
touch "$JOB_OUT/ready"
grown() { [ "$(cat /sys/block/$blk/size)" -eq 262144 ]; }
step "the block device grows to 128 MiB after the host's resize (AEN)" wait_for 60 grown
step "nvme id-ns: nsze 128 MiB" sh -c "nvme id-ns $dev | grep -q '^nsze *: 0x40000'"
step "the pattern before the old end is intact" sh -c \
	"dd if=$dev of=/tmp/b bs=1M skip=63 count=1 iflag=direct 2>/dev/null && cmp -s /tmp/a /tmp/b"
step "16 MiB of random data written past the old end (64..80 MiB, and up to the last MiB) read back" sh -c \
	"head -c 16M /dev/urandom > /tmp/r && dd if=/tmp/r of=$dev bs=1M seek=64 oflag=direct 2>/dev/null &&
	 dd if=/tmp/r of=$dev bs=1M seek=127 count=1 oflag=direct 2>/dev/null &&
	 dd if=$dev of=/tmp/s bs=1M skip=64 count=16 iflag=direct 2>/dev/null && cmp -s /tmp/r /tmp/s &&
	 dd if=$dev of=/tmp/t bs=1M skip=127 count=1 iflag=direct 2>/dev/null && head -c 1M /tmp/r | cmp -s - /tmp/t"
guest_finish
