# Guest job, first boot of test-zoned-fs.sh: f2fs across a conventional namespace (metadata) and a
# zoned one (mkfs.f2fs -m -c), mounted; a loop writes numbered files, syncs each (fsync of the
# file, then sync -f) and publishes the number of the last synced one in $JOB_OUT/synced, while
# fio keeps writing a file beside them. The host kills the daemon with SIGKILL in the middle.
. "$GUEST_LIB"

serial=NVMEEMU-ZFS
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
c=$(nvme_ctrl_by_serial "$serial")
zoned_ready() { zoned=$(nvme_ns_dev "$c" 2) && meta=$(nvme_ns_dev "$c" 1) && [ -b "$zoned" ] &&
	[ "$(cat /sys/block/${zoned#/dev/}/queue/zoned)" = host-managed ]; }
step "namespace 2 is a host-managed zoned block device" wait_for 60 zoned_ready || { guest_finish; exit 1; }
zoned_ready
echo "$meta $zoned" > "$JOB_OUT/devices"
modprobe f2fs 2> /dev/null
mkdir -p /mnt/f2fs
# Without the file system nothing below means anything: the job ends (the host sees no "ready").
step "mkfs.f2fs -m -c (zoned device, metadata on the conventional one)" \
	mkfs.f2fs -f -m -c "$zoned" "$meta" || { guest_finish; exit 1; }
step "mount f2fs" mount -t f2fs "$meta" /mnt/f2fs || { guest_finish; exit 1; }
fio --name=load --directory=/mnt/f2fs --filename=load.bin --rw=write --bs=64k --size=96m \
	--time_based --runtime=600 --ioengine=psync > /tmp/fio.log 2>&1 &
# Files: f<N>, 64 KiB of "file N" lines.
content() { i=0; while [ $i -lt 4096 ]; do printf 'file %08d line\n' "$1"; i=$((i + 1)); done; }
n=1
while :; do
	content "$n" > /tmp/f
	dd if=/tmp/f of="/mnt/f2fs/f$n" bs=64k conv=fsync 2> /dev/null || break
	sync -f "/mnt/f2fs/f$n" 2> /dev/null || break
	echo "$n" > "$JOB_OUT/synced.tmp" && mv "$JOB_OUT/synced.tmp" "$JOB_OUT/synced"
	[ "$n" -eq 10 ] && touch "$JOB_OUT/ready"
	n=$((n + 1))
done
echo "file loop ended at $n"
guest_finish
