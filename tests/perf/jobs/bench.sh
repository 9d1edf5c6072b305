# Guest job of `make bench`: the same fio workloads on every disk of the guest (QEMU's built-in
# NVMe device, virtio-blk, each nvme-emu configuration), in rotating order, BENCH_RUNS times;
# fio's JSON files go to $JOB_OUT for the host, and $JOB_OUT/current names the job running (the
# host samples CPU and prints progress from it).
. "$GUEST_LIB"
# BENCH_RUNS, BENCH_RUNTIME, BENCH_RAMP, BENCH_WORKLOADS ("randread-4k-qd32 seqwrite-128k-qd8 ..."),
# BENCH_DEVICES ("label=nvme:SERIAL label=vblk:SERIAL ...")
. ./bench.env

# vblk_by_serial SERIAL: prints /dev/vdX of the virtio-blk disk with serial SERIAL; 1 when none.
vblk_by_serial() {
	for _b in /sys/block/vd*; do
		[ -e "$_b/serial" ] || continue
		if [ "$(cat "$_b/serial")" = "$1" ]; then
			echo "/dev/$(basename "$_b")"
			return 0
		fi
	done
	return 1
}

# disk_of SPEC: the block device of a BENCH_DEVICES entry.
disk_of() {
	_s=${1#*=}
	case $_s in
	nvme:*) nvme_ns_by_serial "${_s#nvme:}" ;;
	vblk:*) vblk_by_serial "${_s#vblk:}" ;;
	*) return 1 ;;
	esac
}

# fio_args WORKLOAD: fio's options for <rw>-<bs>-qd<N> (libaio, N in flight) or <rw>-<bs>-psync
# (a synchronous host: one pread or pwrite at a time, the system call waits for the completion),
# rw randread or seqwrite.
fio_args() {
	_rw=${1%%-*}
	_rest=${1#*-}
	_bs=${_rest%%-*}
	case ${_rest#*-} in
	psync) _engine="--ioengine=psync" ;;
	qd*) _engine="--ioengine=libaio --iodepth=${_rest#*-qd}" ;;
	*) return 1 ;;
	esac
	case $_rw in
	randread) echo "--rw=randread --norandommap --randrepeat=0 --bs=$_bs $_engine" ;;
	seqwrite) echo "--rw=write --bs=$_bs $_engine" ;;
	*) return 1 ;;
	esac
}

# irq_name SPEC: the prefix of the device's lines in /proc/interrupts (nvme0q, virtio2-).
irq_name() {
	_s=${1#*=}
	case $_s in
	nvme:*) echo "$(nvme_ctrl_by_serial "${_s#nvme:}")q" ;;
	vblk:*) _d=$(vblk_by_serial "${_s#vblk:}") &&
		echo "$(basename "$(readlink -f "/sys/block/${_d#/dev/}/device")")-" ;;
	*) return 1 ;;
	esac
}

# guest_counts PREFIX: "<interrupts of the device> <busy jiffies> <all jiffies>", the guest's
# side of a job's cost (the report divides their growth over the job by its I/Os).
guest_counts() {
	awk -v p="$1" '$NF ~ "^" p { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i }
		END { printf "%d ", n }' /proc/interrupts
	awk '$1 == "cpu" { printf "%d %d\n", $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat
}

{
	uname -r
	fio --version
	nproc
} > "$JOB_OUT/guest-info"
for spec in $BENCH_DEVICES; do
	step "device ${spec%%=*} present" wait_for 30 disk_of "$spec"
done
run=1
while [ "$run" -le "$BENCH_RUNS" ]; do
	# Rotate the order every run so no device always goes first.
	order=$(echo "$BENCH_DEVICES" | tr ' ' '\n' | awk -v r="$run" '{ a[NR] = $0 } END { for (i = 0; i < NR; i++) print a[(i + r) % NR + 1] }')
	for spec in $order; do
		label=${spec%%=*}
		dev=$(disk_of "$spec")
		irqs=$(irq_name "$spec")
		for w in $BENCH_WORKLOADS; do
			echo "$label $w $run" > "$JOB_OUT/current"
			before=$(guest_counts "$irqs")
			# shellcheck disable=SC2046
			step "run $run $label $w" fio --name="$w" --filename="$dev" $(fio_args "$w") \
				--direct=1 --time_based --runtime="$BENCH_RUNTIME" \
				--ramp_time="$BENCH_RAMP" --size=1G --lat_percentiles=1 --output-format=json \
				--output="$JOB_OUT/$label-$w-$run.json"
			echo "$before $(guest_counts "$irqs")" > "$JOB_OUT/$label-$w-$run.guest"
		done
	done
	run=$((run + 1))
done
echo "done" > "$JOB_OUT/current"
guest_finish
