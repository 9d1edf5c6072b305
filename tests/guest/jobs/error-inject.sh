# Guest job: namespace 2 sits on an error-injection bdev over a delay bdev (bdev_error_create,
# bdev_delay_create, added at run time by the host). A read the host made fail with NVMe status
# 02h/81h reaches nvme-cli as Unrecovered Read Error, exactly; the next read works; with 20 ms of
# read latency injected by bdev_delay_update_latency, a direct read takes at least that long.
# Then the host sets the health (95 C, 3 % spare) and a bad block on namespace 1: nvme smart-log
# shows the critical warnings, the read of that block fails until it is written.
# Host and guest meet through files in $JOB_OUT: "ready", then "seen" (the guest has nvme0n2),
# then the host writes "injected", "delayed" and "health".
. "$GUEST_LIB"

touch "$JOB_OUT/ready"
ns2() { [ -b /dev/nvme0n2 ]; }
step "namespace 2 (EE_Delay1 over Delay1 over Malloc1) appears after nvmf_subsystem_add_ns" wait_for 60 ns2
touch "$JOB_OUT/seen"
injected() { [ -e "$JOB_OUT/injected" ]; }
step "the host injected the error" wait_for 60 injected
step "the read fails with Unrecovered Read Error (SCT 2h, SC 81h)" sh -c \
	"! nvme read /dev/nvme0n2 -s 8 -c 0 -z 512 -d /tmp/r 2> /tmp/err; cat /tmp/err; grep -qi 'UNRECOVERED_READ\|Unrecovered Read Error' /tmp/err && grep -q '0x281\|(2h\|281' /tmp/err"
step "the next read works" nvme read /dev/nvme0n2 -s 8 -c 0 -z 512 -d /tmp/r
touch "$JOB_OUT/read-done"
delayed() { [ -e "$JOB_OUT/delayed" ]; }
step "the host set a 20 ms read latency" wait_for 60 delayed
slow_read() {
	t0=$(date +%s%N)
	dd if=/dev/nvme0n2 of=/dev/null bs=4096 count=5 iflag=direct 2> /dev/null || return 1
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "5 direct reads took $ms ms"
	[ "$ms" -ge 100 ]
}
step "5 direct reads take at least 5 x 20 ms" slow_read
touch "$JOB_OUT/slow-done"
health() { [ -e "$JOB_OUT/health" ]; }
step "the host injected health events" wait_for 60 health
step "smart-log: critical warning 0x7 (spare, temperature over 70 C, reliability), 95 C, spare 3%" sh -c \
	"nvme smart-log /dev/nvme0 -o json | tr -d ' ' > /tmp/s && grep -q '\"critical_warning\":7,' /tmp/s &&
	 grep -q '\"temperature\":368,' /tmp/s && grep -q '\"avail_spare\":3,' /tmp/s"
step "a read of the injected bad block fails with Unrecovered Read Error" sh -c \
	"! nvme read /dev/nvme0n1 -s 100 -c 0 -z 512 -d /tmp/r 2> /tmp/err; cat /tmp/err; grep -qi 'Unrecovered Read Error' /tmp/err"
step "the block next to it reads" nvme read /dev/nvme0n1 -s 101 -c 0 -z 512 -d /tmp/r
step "written again, the bad block reads" sh -c \
	"nvme write /dev/nvme0n1 -s 100 -c 0 -z 512 -d /tmp/r && nvme read /dev/nvme0n1 -s 100 -c 0 -z 512 -d /tmp/r"
guest_finish
