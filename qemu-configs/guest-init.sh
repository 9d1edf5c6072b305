#!/bin/busybox sh
# PID 1 of the test guest: mounts the sysroot over 9p, runs the job, reports its status, powers off.
#
# Lives in the initramfs built by initramfs.sh. The sysroot (9p tag "root") is
# mounted read-only and entered with chroot, with tmpfs wherever a program
# needs to write. The job share (9p tag "job") is mounted on /job; the job is
# /job/job.sh, its output goes to /job/out/output.log and to the console, its
# exit status to /job/out/status and to the console as a marker line (the
# launcher reads the file and falls back to the marker). job.sh runs through
# its "#!" line when it is executable and has one, otherwise with /bin/sh.

PATH=/bin
export PATH
NR=/newroot

say() { echo "nvme-emu-init: $*" > /dev/console; }

# Never return from PID 1: that would panic the kernel. Power off instead,
# after telling the host why.
die() {
	say "FAILED: $*"
	echo "NVME_EMU_INIT_FAILED" > /dev/console
	sync
	poweroff -f
	sleep 1000000
}

/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc || die "mount /proc"
mount -t sysfs sysfs /sys || die "mount /sys"
mount -t devtmpfs devtmpfs /dev || die "mount /dev"

# Modules the 9p root needs, dependencies first (see initramfs.sh).
while read -r m; do
	insmod "/lib/modules/$m" || die "insmod $m"
done < /modules.order

mkdir -p $NR
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 root $NR ||
	die "mount 9p root"
mount -t proc proc $NR/proc || die "mount $NR/proc"
mount -t sysfs sysfs $NR/sys || die "mount $NR/sys"
mount -t devtmpfs devtmpfs $NR/dev || die "mount $NR/dev"
mkdir -p $NR/dev/shm $NR/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $NR/dev/shm || die "mount /dev/shm"
mount -t devpts devpts $NR/dev/pts || die "mount /dev/pts"
for d in tmp run var root mnt; do
	mount -t tmpfs -o mode=0755 tmpfs $NR/$d || die "mount tmpfs on /$d"
done
chmod 1777 $NR/tmp
mkdir -p $NR/var/tmp $NR/var/log $NR/var/lib $NR/var/cache
chmod 1777 $NR/var/tmp
# Cache off: what the job writes must be on the host when the guest stops.
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=512000 job $NR/job ||
	die "mount 9p job share"
[ -f $NR/job/job.sh ] || die "no job.sh in the job share"
mkdir -p $NR/job/out

# Disk drivers come from the sysroot (nvme pulls in nvme-core). There is no
# udev to load them when a device shows up, and a driver loaded now also
# binds devices hot-added later. A guest without such a device still runs
# its job, so a failure here is reported, not fatal.
for m in nvme virtio_blk; do
	chroot $NR /sbin/modprobe $m || say "modprobe $m failed"
done

read -r up _ < /proc/uptime
echo "$up" > $NR/job/out/boot-seconds
say "job start after ${up}s of guest uptime"

mkfifo /job-fifo
tee $NR/job/out/output.log < /job-fifo > /dev/console &
teepid=$!
chroot $NR /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
	GUEST_LIB=/job/.harness/guest-lib.sh JOB_OUT=/job/out \
	/bin/sh -c 'cd /job &&
		if [ -x job.sh ] && [ "$(head -c 2 job.sh)" = "#!" ]; then exec ./job.sh; fi
		exec /bin/sh ./job.sh' > /job-fifo 2>&1 < /dev/null
rc=$?
wait $teepid

read -r up _ < /proc/uptime
echo "$rc" > $NR/job/out/status
sync
umount $NR/job
say "job done at ${up}s, exit status $rc"
echo "NVME_EMU_JOB_EXIT=$rc" > /dev/console
poweroff -f
sleep 1000000
