# Guest job: fio writes 16 MiB of random 4 KiB blocks with crc32c checksums on an NBD-backed
# nvme-emu namespace, then reads them all back and verifies them. The host restarts the NBD
# server in the middle of the writes: fio must end without an error and every block must verify.
. "$GUEST_LIB"

serial=NVMEEMU-NBDRS
step "nvme driver bound nvme-emu" wait_for 30 nvme_ns_by_serial "$serial"
dev=$(nvme_ns_by_serial "$serial")
echo "namespace $dev"
touch "$JOB_OUT/fio-started"
fio --name=restart --filename="$dev" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
	--iodepth=16 --size=16m --verify=crc32c --do_verify=1 --verify_fatal=1 \
	--output="$JOB_OUT/fio.txt" > /dev/null 2>&1
rc=$?
touch "$JOB_OUT/fio-ended"
cat "$JOB_OUT/fio.txt"
step "fio (write across the server restart, then verify) exited 0" test "$rc" -eq 0
step "fio reports no error" grep -q "err= 0" "$JOB_OUT/fio.txt"
step "fio verified what it wrote (no verify failure)" sh -c "! grep -qi 'verify.*fail\|bad magic\|crc32c: verify' '$JOB_OUT/fio.txt'"
guest_finish
