# Guest job: keeps fio writing (random 4k, QD16) while a loop writes numbered 4 KiB records, flushes
# after each and then publishes the number of the last flushed record in $JOB_OUT/flushed. The host
# kills the daemon with SIGKILL in the middle and checks that every published record is in the file.
. "$GUEST_LIB"

serial=NVMEEMU-KILL
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
ctrl=/dev/$(nvme_ctrl_by_serial "$serial")
dev=$(nvme_ns_by_serial "$serial")
echo "controller $ctrl namespace $dev"

# The background load: fio in the first 64 MiB, time-based far beyond the test's length.
fio --name=load --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
	--iodepth=16 --size=64m --time_based --runtime=600 > /tmp/fio.log 2>&1 &
fio_pid=$!
# A subshell cannot wait for its sibling: it watches the pid instead.
(while kill -0 "$fio_pid" 2> /dev/null; do sleep 0.2; done
 cat /tmp/fio.log; touch "$JOB_OUT/fio-ended") &

# Records live from 128 MiB on, one per 4 KiB block: "record N" padded with '.'.
record() { printf 'record %08d ' "$1"; head -c 4081 /dev/zero | tr '\0' '.'; }
i=1
while :; do
	record "$i" > /tmp/rec
	dd if=/tmp/rec of="$dev" bs=4096 seek=$((32768 + i)) count=1 oflag=direct 2> /dev/null || break
	nvme flush "$ctrl" -n 1 > /dev/null 2>&1 || break
	echo "$i" > "$JOB_OUT/flushed.tmp" && mv "$JOB_OUT/flushed.tmp" "$JOB_OUT/flushed"
	[ "$i" -eq 8 ] && touch "$JOB_OUT/ready"
	i=$((i + 1))
done
# Only reached when the device went away: the host is about to stop this guest.
echo "record loop ended at $i"
guest_finish
