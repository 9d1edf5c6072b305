# Guest job of `make demo`: nvme list, nvme id-ctrl and the standard fio workloads on the demo disk.
. "$GUEST_LIB"
. ./demo.env # DEMO_KIND, DEMO_RUNTIME (written by qemu-configs/demo.sh)

first_nvme_ns() {
	for n in /sys/class/nvme/nvme*/nvme*n1; do
		[ -e "$n" ] || continue
		d=/dev/$(basename "$n" | sed 's/c[0-9]*n/n/')
		[ -b "$d" ] && { echo "$d"; return 0; }
	done
	return 1
}

if [ "$DEMO_KIND" = virtio-blk ]; then
	step "virtio-blk disk present" wait_for 30 test -b /dev/vda
	dev=/dev/vda
else
	step "an NVMe namespace appeared" wait_for 30 first_nvme_ns
	dev=$(first_nvme_ns)
	ctrl=${dev%n1}
	step "nvme list" nvme list
	step "nvme id-ctrl $ctrl" nvme id-ctrl "$ctrl"
fi
[ -b "$dev" ] || { echo "no disk to run fio on"; guest_finish; exit 1; }

for w in randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32 seqread-128k seqwrite-128k; do
	step "fio $w on $dev (${DEMO_RUNTIME}s)" env FIO_DEV="$dev" FIO_SIZE=512M FIO_RUNTIME="$DEMO_RUNTIME" \
		fio --output-format=json --output="$JOB_OUT/$w.json" "fio/$w.fio"
done
step "fio verify-crc32c on $dev" env FIO_DEV="$dev" FIO_SIZE=64M \
	fio --output-format=json --output="$JOB_OUT/verify-crc32c.json" fio/verify-crc32c.fio
guest_finish
