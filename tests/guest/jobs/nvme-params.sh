# Guest job of test-nvme-params.sh: the Linux nvme driver loaded with module parameters that change what it sends (poll_queues, io_queue_depth, sgl_threshold, max_host_mem_size_mb, from the kernel command line): they took effect, and fio verify runs through interrupt-driven queues deeper than the queue, through polled queues, with SGLs for every request.
. "$GUEST_LIB"

serial=NVMEEMU-PAR
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
c=$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
p=/sys/module/nvme/parameters
echo "poll_queues=$(cat $p/poll_queues) io_queue_depth=$(cat $p/io_queue_depth)" \
	"sgl_threshold=$(cat $p/sgl_threshold) max_host_mem_size_mb=$(cat $p/max_host_mem_size_mb)"
step "the parameters took effect" sh -c "[ \$(cat $p/poll_queues) = 2 ] && [ \$(cat $p/io_queue_depth) = 16 ] &&
	[ \$(cat $p/sgl_threshold) = 1 ] && [ \$(cat $p/max_host_mem_size_mb) = 64 ]"
dmesg | grep -E "$c: .*queues" | tail -n 1
step "two poll queues created" sh -c "dmesg | grep -E '$c: .*/2 default/read/poll queues'"
step "polling enabled on $dev" test "$(cat /sys/block/$(basename "$dev")/queue/io_poll)" = 1
# The request queue is the path's (nvmeXcYnZ) when /dev/nvmeXnZ is a multipath head.
path=$(basename "$dev")
for q in /sys/block/"$c"c*n1; do [ -d "$q/mq" ] && path=$(basename "$q"); done
echo "request queue of $dev: $path"
tags=$(cat /sys/block/"$path"/mq/*/nr_tags | sort -n | tail -n 1)
echo "nr_tags=$tags"
step "tags per hardware queue bounded by io_queue_depth ($tags)" test "$tags" -le 16
sgls=$(nvme id-ctrl "/dev/$c" | sed -n 's/^sgls *: *//p')
echo "sgls=$sgls"
step "SGLs offered (sgl_threshold 1: every request with data is an SGL)" test "$((sgls & 3))" -ne 0
hmpre=$(nvme id-ctrl "/dev/$c" | sed -n 's/^hmpre *: *//p')
echo "hmpre=$hmpre"
if [ "$hmpre" = 0 ]; then
	step "no Host Memory Buffer offered (HMPRE 0): none allocated" \
		sh -c "! dmesg | grep -qi 'host memory buffer'"
else
	step "Host Memory Buffer allocated within max_host_mem_size_mb" \
		sh -c "dmesg | grep -i 'host memory buffer'"
fi
step "fio crc32c verify, QD32 over 15-deep queues, SGLs" env FIO_DEV="$dev" FIO_SIZE=16M \
	fio --output-format=json --output="$JOB_OUT/verify-qd32.json" --iodepth=32 \
	fio/verify-crc32c.fio
step "fio crc32c verify through the poll queues (io_uring IOPOLL)" fio --name=polled \
	--filename="$dev" --direct=1 --ioengine=io_uring --hipri=1 --rw=randwrite --bs=4k \
	--size=8M --offset=32M --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--output-format=json --output="$JOB_OUT/verify-polled.json"
# IOPOLL rings only complete on pollable queues (a queue without poll support fails them with
# EOPNOTSUPP), and the poll queues have no interrupt vector: admin + 2 default ones only.
grep "${c}q" /proc/interrupts | sed 's/  */ /g'
step "interrupt vectors: the admin and the 2 default queues, none for the poll queues" \
	test "$(grep -c "${c}q" /proc/interrupts)" -eq 3
step "large transfer (1 MiB, many SGL segments) verify" fio --name=big --filename="$dev" \
	--direct=1 --ioengine=libaio --iodepth=4 --rw=write --bs=1M --size=16M --offset=64M \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=json \
	--output="$JOB_OUT/verify-1m.json"
guest_finish
