#!/usr/bin/env bash
# Boots the test guest (sysroot over 9p, kernel, initramfs) with the requested devices, runs one job, returns its status.
#
# See qemu-configs/README.md. Exit status: the job's own exit status, or
# 124 when the guest did not finish within --timeout, or 125 when the harness
# failed (bad option, QEMU refused to start, the guest never reached the job).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
me=launch-guest

usage() {
	cat <<USAGE
usage: $me --job DIR|SCRIPT [options]
  --job DIR|SCRIPT     the job: a script (run as job.sh) or a directory holding job.sh
  --add PATH           copy a file or directory into the job share (repeatable)
  --vfio-user SOCKET   attach a vfio-user-pci device served on SOCKET (repeatable)
  --qemu-nvme FILE|null[:SIZE]
                       QEMU's built-in nvme device on a raw FILE or a null-co
                       backend (default size 1G) (repeatable)
  --virtio-blk FILE    a virtio-blk disk on a raw FILE (repeatable)
  --cpus N             vCPUs (default 2)
  --mem SIZE           guest RAM, a shared memfd (default 1G)
  --qmp SOCKET         a QMP server socket (for hotplug)
  --hotplug-ports N    N empty pcie-root-ports hp0..hp<N-1> for hotplug
  --timeout S          fail when the guest is not done after S seconds (default 240)
  --run-dir DIR        where the run's files go (default build/guest/runs/<job>-<time>)
  --log FILE           serial console log (default <run-dir>/console.log)
  --kvm auto|on|off    KVM when a probe boot works (auto, cached), or forced (default auto)
  --qemu PATH          run this QEMU executable instead of the sysroot's (default:
                       \$NVME_EMU_QEMU when set), e.g. the patched build printed by
                       qemu-configs/build-qemu.sh; firmware still comes from the sysroot
  --qemu-arg ARG       pass ARG to QEMU unchanged (repeatable)
  --kernel-arg ARG     add ARG to the guest kernel command line (repeatable),
                       e.g. loglevel=7 to see the whole boot in the console log
  --dry-run            print the QEMU command line and exit
  --quiet              do not stream the job's output
USAGE
}

msg() { echo "$me: $*" >&2; }
harness_fail() {
	msg "error: $*"
	exit 125
}

job="" run_dir="" log="" qmp="" qemu_bin=${NVME_EMU_QEMU:-} timeout_s=240 cpus=2 mem=1G kvm=auto dry=0 quiet=0 hp_ports=0
adds=() vfio_socks=() qnvmes=() vblks=() extra=() kargs=()
while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--dry-run) dry=1; shift; continue ;;
	--quiet) quiet=1; shift; continue ;;
	-h|--help) usage; exit 0 ;;
	esac
	[ $# -ge 2 ] || { usage >&2; harness_fail "$opt needs a value"; }
	val=$2
	shift 2
	case $opt in
	--job) job=$val ;;
	--add) adds+=("$val") ;;
	--vfio-user) vfio_socks+=("$val") ;;
	--qemu-nvme) qnvmes+=("$val") ;;
	--virtio-blk) vblks+=("$val") ;;
	--cpus) cpus=$val ;;
	--mem) mem=$val ;;
	--qmp) qmp=$val ;;
	--hotplug-ports) hp_ports=$val ;;
	--timeout) timeout_s=$val ;;
	--run-dir) run_dir=$val ;;
	--log) log=$val ;;
	--kvm) kvm=$val ;;
	--qemu) qemu_bin=$val ;;
	--qemu-arg) extra+=("$val") ;;
	--kernel-arg) kargs+=("$val") ;;
	*) usage >&2; harness_fail "unknown option $opt" ;;
	esac
done

[ -n "$job" ] || { usage >&2; harness_fail "--job is required"; }
[ -e "$job" ] || harness_fail "no job $job"
[ -d "$job" ] && [ ! -f "$job/job.sh" ] && harness_fail "job directory $job has no job.sh"
for n in "$cpus" "$timeout_s" "$hp_ports"; do
	[[ $n =~ ^[0-9]+$ ]] || harness_fail "not a number: $n"
done
[ "$cpus" -ge 1 ] && [ "$timeout_s" -ge 1 ] || harness_fail "--cpus and --timeout must be > 0"
[ "$hp_ports" -le 30 ] || harness_fail "--hotplug-ports: at most 30"
# With a unit: QEMU reads a bare -m number as MiB but a bare size= as bytes.
[[ $mem =~ ^[1-9][0-9]*[MG]$ ]] || harness_fail "--mem: a size like 1G or 512M"
case $kvm in auto|on|off) ;; *) harness_fail "--kvm auto|on|off" ;; esac
for f in "${vblks[@]}" "${adds[@]}"; do
	[ -e "$f" ] || harness_fail "no such file: $f"
done

# Paths handed to QEMU are made absolute: QEMU parses commas in option
# values, so refuse them rather than quote.
abspath() {
	case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac
}
# size_bytes 512M|4G|N: prints the size in bytes; 1 when malformed.
size_bytes() {
	case $1 in
	*[0-9]K) [[ ${1%K} =~ ^[0-9]+$ ]] && echo $((${1%K} << 10)) ;;
	*[0-9]M) [[ ${1%M} =~ ^[0-9]+$ ]] && echo $((${1%M} << 20)) ;;
	*[0-9]G) [[ ${1%G} =~ ^[0-9]+$ ]] && echo $((${1%G} << 30)) ;;
	*) [[ $1 =~ ^[0-9]+$ ]] && echo "$1" ;;
	esac
}
nocomma() {
	[[ $1 != *,* ]] || harness_fail "a path with a comma is not supported: $1"
}

root=$("$here/sysroot.sh") || harness_fail "sysroot build failed"
initrd=$("$here/initramfs.sh" "$root") || harness_fail "initramfs build failed"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
if [ -n "$qemu_bin" ]; then
	# Another QEMU (e.g. build-qemu.sh's wrapper) runs as it is; it gets the
	# sysroot's firmware, which matches it when it is the same QEMU version.
	[ -x "$qemu_bin" ] || harness_fail "--qemu: not an executable: $qemu_bin"
	qemu=("$(abspath "$qemu_bin")")
else
	qemu=("$root/lib64/ld-linux-x86-64.so.2"
	      --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu"
	      "$root/usr/bin/qemu-system-x86_64")
fi
qemu+=(-L "$root/usr/share/qemu" -L "$root/usr/share/seabios")

if [ -z "$run_dir" ]; then
	name=$(basename "$job")
	run_dir=$top/build/guest/runs/${name%.sh}-$(date +%Y%m%d-%H%M%S)-$$
fi
run_dir=$(abspath "$run_dir")
nocomma "$run_dir"
log=$(abspath "${log:-$run_dir/console.log}")
nocomma "$log"
share=$run_dir/job
rm -rf "$share"
mkdir -p "$share/out" "$share/.harness" "$(dirname "$log")"
ln -sfn job/out "$run_dir/out"
if [ -d "$job" ]; then
	cp -a "$job/." "$share/"
else
	cp "$job" "$share/job.sh"
fi
for f in "${adds[@]}"; do
	cp -a "$f" "$share/"
done
cp "$here/guest-lib.sh" "$share/.harness/guest-lib.sh"

# --- KVM: decided by booting, not by the existence of /dev/kvm -------------
. "$here/kvm-lib.sh"
if [ "$kvm" = auto ]; then
	mkdir -p "$top/build/guest"
	if [ "$dry" = 1 ]; then kvm=off; else kvm=$(kvm_probe "$root"); fi
	msg "kvm auto: $( [ "$kvm" = on ] && echo "KVM works, using it" || echo "using TCG")"
fi
if [ "$kvm" = on ]; then
	accel=(-accel kvm -cpu host)
else
	accel=(-accel tcg,thread=multi -cpu max)
fi

# --- QEMU command line -----------------------------------------------------
args=(-name nvme-emu-guest -nodefaults -no-reboot -display none -vga none -nic none
      -monitor none "${accel[@]}" -smp "$cpus" -m "$mem"
      -object "memory-backend-memfd,id=mem,size=$mem,share=on"
      -readconfig "$here/q35-guest.cfg"
      -kernel "$kernel" -initrd "$initrd"
      -append "console=ttyS0,115200 panic=-1 loglevel=4 rdinit=/init${kargs[*]:+ ${kargs[*]}}"
      -chardev "file,id=con0,path=$log" -serial chardev:con0
      -fsdev "local,id=fsroot,path=$root,security_model=none,readonly=on"
      -device virtio-9p-pci,fsdev=fsroot,mount_tag=root
      -fsdev "local,id=fsjob,path=$share,security_model=none"
      -device virtio-9p-pci,fsdev=fsjob,mount_tag=job)
if [ -n "$qmp" ]; then
	qmp=$(abspath "$qmp")
	nocomma "$qmp"
	args+=(-qmp "unix:$qmp,server=on,wait=off")
fi
for ((i = 0; i < hp_ports; i++)); do
	args+=(-device "pcie-root-port,id=hp$i,bus=pcie.0,chassis=$((i + 1)),slot=$((i + 1))")
done
i=0
for d in "${qnvmes[@]}"; do
	case $d in
	null|null:*)
		size=${d#null}
		size=${size#:}
		bytes=$(size_bytes "${size:-1G}") ||
			harness_fail "--qemu-nvme null:SIZE, e.g. null:4G"
		bd="driver=null-co,node-name=qnvme$i,size=$bytes,read-zeroes=on" ;;
	*)
		[ -f "$d" ] || harness_fail "--qemu-nvme: no such file $d"
		d=$(abspath "$d")
		nocomma "$d"
		bd="driver=raw,node-name=qnvme$i,file.driver=file,file.filename=$d,file.aio=threads,cache.direct=off" ;;
	esac
	args+=(-blockdev "$bd" -device "nvme,id=qnvme$i,serial=nvme-emu-q$i,drive=qnvme$i")
	i=$((i + 1))
done
i=0
for f in "${vblks[@]}"; do
	f=$(abspath "$f")
	nocomma "$f"
	args+=(-blockdev "driver=raw,node-name=vblk$i,file.driver=file,file.filename=$f"
	       -device "virtio-blk-pci,id=vblk$i,drive=vblk$i,serial=nvme-emu-vblk$i")
	i=$((i + 1))
done
i=0
for s in "${vfio_socks[@]}"; do
	s=$(abspath "$s")
	[[ $s != *'"'* && $s != *'\'* ]] || harness_fail "--vfio-user: unsupported character in $s"
	args+=(-device "{\"driver\":\"vfio-user-pci\",\"id\":\"vfu$i\",\"socket\":{\"path\":\"$s\",\"type\":\"unix\"}}")
	i=$((i + 1))
done
args+=("${extra[@]}")

# The command twice: shell-quoted to paste, and one argument a line to read.
printf '%q ' "${qemu[@]}" "${args[@]}" > "$run_dir/qemu-cmdline"
echo >> "$run_dir/qemu-cmdline"
printf '%s\n' "${qemu[@]}" "${args[@]}" > "$run_dir/qemu-args"
if [ "$dry" = 1 ]; then
	cat "$run_dir/qemu-cmdline"
	exit 0
fi

# --- run --------------------------------------------------------------------
: > "$log"
qpid="" tailpid=""
stop_all() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null
	[ -n "$tailpid" ] && kill "$tailpid" 2>/dev/null
	wait 2>/dev/null
}
trap 'stop_all; exit 130' INT TERM
msg "run dir $run_dir ($([ "$kvm" = on ] && echo KVM || echo TCG), timeout ${timeout_s}s)"
start=$(date +%s.%N)
timeout --kill-after=10 "$timeout_s" "${qemu[@]}" "${args[@]}" > "$run_dir/qemu.log" 2>&1 &
qpid=$!
if [ "$quiet" = 0 ]; then
	tail -n +1 -F --pid="$qpid" "$share/out/output.log" 2>/dev/null &
	tailpid=$!
fi
set +e
wait "$qpid"
qrc=$?
set -e
qpid=
[ -z "$tailpid" ] || wait "$tailpid" 2>/dev/null || true
tailpid=
wall=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")

console_tail() {
	msg "---- last 40 lines of $log"
	tail -n 40 "$log" | sed 's/^/  | /' >&2
	if [ -s "$run_dir/qemu.log" ]; then
		msg "---- QEMU said ($run_dir/qemu.log)"
		tail -n 20 "$run_dir/qemu.log" | sed 's/^/  | /' >&2
	fi
}

status=
if [ -s "$share/out/status" ]; then
	status=$(cat "$share/out/status")
else
	status=$(sed -n 's/^NVME_EMU_JOB_EXIT=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	msg "error: guest not done after ${timeout_s}s: killed"
	console_tail
	exit 124
fi
if ! [[ $status =~ ^[0-9]+$ ]]; then
	msg "error: the guest ended without reporting a job status (QEMU exit $qrc)"
	console_tail
	exit 125
fi
boot=$(cat "$share/out/boot-seconds" 2>/dev/null || echo '?')
msg "boot to job ${boot}s (guest clock), wall ${wall}s, job exit status $status"
[ "$status" -eq 0 ] || console_tail
exit "$status"
