# Guest job, second boot of test-zoned-fs.sh (the daemon was killed and started again on the same
# files): the mount recovers f2fs (a sudden power-off for it), every file the first boot synced is
# there whole, and after the umount fsck.f2fs finds the file system clean. The host puts
# ZFS_SYNCED (the last file synced) and ZFS_DEVICES (the names at mkfs) before this text.
. "$GUEST_LIB"

serial=NVMEEMU-ZFS
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
c=$(nvme_ctrl_by_serial "$serial")
zoned_ready() { zoned=$(nvme_ns_dev "$c" 2) && meta=$(nvme_ns_dev "$c" 1) && [ -b "$zoned" ] &&
	[ "$(cat /sys/block/${zoned#/dev/}/queue/zoned)" = host-managed ]; }
synced=${ZFS_SYNCED:-0}
echo "files synced before the kill: $synced"
modprobe f2fs 2> /dev/null
step "namespace 2 is back, host-managed zoned" wait_for 60 zoned_ready
zoned_ready
# The superblock names the zoned device by its path at mkfs; this boot may have named the two
# namespaces the other way round: the nodes are made again under the names of the first boot.
echo "this boot: $meta $zoned, at mkfs: ${ZFS_DEVICES:-}"
renode() {
	set -- ${ZFS_DEVICES:-}
	[ $# -eq 2 ] || return 1
	mm=$(cat /sys/block/${meta#/dev/}/dev) && zm=$(cat /sys/block/${zoned#/dev/}/dev) || return 1
	rm -f "$1" "$2" && mknod "$1" b "${mm%:*}" "${mm#*:}" && mknod "$2" b "${zm%:*}" "${zm#*:}" &&
		meta=$1 && zoned=$2
}
step "the namespaces under their names at mkfs" renode
mkdir -p /mnt/f2fs
step "mount f2fs" mount -t f2fs "$meta" /mnt/f2fs
content() { i=0; while [ $i -lt 4096 ]; do printf 'file %08d line\n' "$1"; i=$((i + 1)); done; }
check_files() {
	bad=0
	n=1
	while [ "$n" -le "$synced" ]; do
		content "$n" > /tmp/want
		cmp -s /tmp/want "/mnt/f2fs/f$n" || { echo "f$n missing or wrong"; bad=$((bad + 1)); }
		n=$((n + 1))
	done
	echo "$((synced - bad)) of $synced synced files intact"
	[ "$bad" -eq 0 ] && [ "$synced" -ge 10 ]
}
step "every file synced before the kill is whole" check_files
step "umount" umount /mnt/f2fs
fsck_clean() {
	fsck.f2fs -f "$meta" > /tmp/fsck.log 2>&1
	rc=$?
	cat /tmp/fsck.log
	[ "$rc" -eq 0 ] && ! grep -qi '\[fail\]' /tmp/fsck.log
}
step "fsck.f2fs after the recovery: clean" fsck_clean
guest_finish
