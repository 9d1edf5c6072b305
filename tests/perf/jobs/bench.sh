# Guest job of `make bench`: the same fio workloads, in alternating order, on
# every device of the guest (QEMU's built-in NVMe device and each nvme-emu
# configuration), BENCH_RUNS times; the JSON files go to $JOB_OUT for the host.
. "$GUEST_LIB"
. ./bench.env # BENCH_RUNS, BENCH_RUNTIME, BENCH_DEVICES ("label=serial ...")

for spec in $BENCH_DEVICES; do
	step "device ${spec%%=*} present" wait_for 30 nvme_ns_by_serial "${spec#*=}"
done
run=1
while [ "$run" -le "$BENCH_RUNS" ]; do
	# Rotate the order every run so no device always goes first.
	order=$(echo $BENCH_DEVICES | tr ' ' '\n' | awk -v r="$run" '{ a[NR] = $0 } END { for (i = 0; i < NR; i++) print a[(i + r) % NR + 1] }')
	for spec in $order; do
		label=${spec%%=*}
		dev=$(nvme_ns_by_serial "${spec#*=}")
		step "run $run $label randread-4k-qd32" fio --name=randread-4k-qd32 --filename="$dev" \
			--rw=randread --bs=4k --iodepth=32 --ioengine=libaio --direct=1 --time_based \
			--runtime="$BENCH_RUNTIME" --ramp_time=1 --size=1G --norandommap --randrepeat=0 \
			--output-format=json --output="$JOB_OUT/$label-randread-4k-qd32-$run.json"
		step "run $run $label randread-4k-qd1" fio --name=randread-4k-qd1 --filename="$dev" \
			--rw=randread --bs=4k --iodepth=1 --ioengine=libaio --direct=1 --time_based \
			--runtime="$BENCH_RUNTIME" --ramp_time=1 --size=1G --norandommap --randrepeat=0 \
			--output-format=json --output="$JOB_OUT/$label-randread-4k-qd1-$run.json"
		step "run $run $label seqwrite-128k-qd8" fio --name=seqwrite-128k-qd8 --filename="$dev" \
			--rw=write --bs=128k --iodepth=8 --ioengine=libaio --direct=1 --time_based \
			--runtime="$BENCH_RUNTIME" --ramp_time=1 --size=1G \
			--output-format=json --output="$JOB_OUT/$label-seqwrite-128k-qd8-$run.json"
	done
	run=$((run + 1))
done
guest_finish
