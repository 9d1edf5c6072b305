# Booting the installed image from an nvme-emu disk (sourced by tests/guest/test-boot-*.sh and demo.sh): daemon, QEMU with SeaBIOS or OVMF, the serial shell.
#
# The guest's only disk is a vfio-user-pci function served by build/bin/nvme-emu
# on a copy of the image boot-image.sh caches; QEMU gets no -kernel: the
# firmware (SeaBIOS, QEMU's default, or OVMF from Debian's ovmf package) finds
# the NVMe controller, the loader on its ESP (SYSLINUX or systemd-boot) loads
# the kernel, which mounts its root from the same disk. The serial console is
# a unix socket driven by serial-shell.py as a coprocess.
#
#   boot_setup RUN_DIR              work directory (files below), traps cleanup
#   boot_disk                       copies the cached image to $BOOT_DIR/disk.img
#   boot_daemon [ARGS...]           nvme-emu on that disk (ARGS: more options)
#   boot_qemu bios|uefi             QEMU, its console, the shell driver
#   boot_req VERB TIMEOUT [ARG]     a serial-shell.py request: sets BOOT_RC,
#                                   BOOT_SECS, BOOT_OUT (the output)
#   boot_cleanup                    stops QEMU, the driver and the daemon
#
# Files in RUN_DIR: disk.img, nvme-emu.log, console.log (everything the guest
# printed on ttyS0), firmware.log (the firmware's debug port 402h: SeaBIOS
# logs there), qemu.log, qemu-cmdline, OVMF_VARS.fd (uefi).

BOOT_LIB_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BOOT_TOP=$(cd "$BOOT_LIB_HERE/.." && pwd)
BOOT_OVMF_CODE=${NVME_EMU_OVMF_CODE:-/usr/share/OVMF/OVMF_CODE.fd}
BOOT_OVMF_VARS=${NVME_EMU_OVMF_VARS:-/usr/share/OVMF/OVMF_VARS.fd}
BOOT_DIR="" BOOT_DAEMON="" BOOT_QEMU="" BOOT_TOKEN="" BOOT_FIRMWARE=""
BOOT_RC=0 BOOT_SECS=0 BOOT_OUT=""

boot_msg() { echo "boot: $*" >&2; }

boot_setup() {
	BOOT_DIR=$1
	rm -rf "$BOOT_DIR"
	mkdir -p "$BOOT_DIR"
	trap boot_cleanup EXIT
	trap 'boot_cleanup; exit 143' TERM
	trap 'boot_cleanup; exit 130' INT
}

# boot_disk: a fresh copy of the cached image (copy on write where the file
# system can, sparse otherwise): every run starts from the installed state.
boot_disk() {
	local img
	img=$("$BOOT_LIB_HERE/boot-image.sh") || { boot_msg "error: boot-image.sh failed"; return 1; }
	cp --reflink=auto --sparse=always "$img" "$BOOT_DIR/disk.img"
}

boot_daemon() {
	local sock=$BOOT_DIR/nvme.sock
	"$BOOT_TOP/build/bin/nvme-emu" --socket "$sock" --aio "$BOOT_DIR/disk.img" "$@" \
		>"$BOOT_DIR/nvme-emu.log" 2>&1 &
	BOOT_DAEMON=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && return 0
		kill -0 "$BOOT_DAEMON" 2>/dev/null || break
		sleep 0.1
	done
	boot_msg "error: nvme-emu did not start:"
	tail -n 20 "$BOOT_DIR/nvme-emu.log" >&2
	return 1
}

# boot_qemu bios|uefi: starts QEMU (console socket server, waiting for the
# driver) and serial-shell.py connected to it; BOOT_T0 is QEMU's start.
boot_qemu() {
	local fw=$1 root kvm accel qemu args extra con=$BOOT_DIR/console.sock
	BOOT_FIRMWARE=$fw
	root=$("$BOOT_LIB_HERE/sysroot.sh") || { boot_msg "error: sysroot.sh failed"; return 1; }
	case $BOOT_DIR in *,*) boot_msg "error: a comma in $BOOT_DIR"; return 1 ;; esac
	if [ -n "${NVME_EMU_QEMU:-}" ]; then
		qemu=("$NVME_EMU_QEMU")
	else
		qemu=("$root/lib64/ld-linux-x86-64.so.2"
		      --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu"
		      "$root/usr/bin/qemu-system-x86_64")
	fi
	msg() { boot_msg "$@"; }
	. "$BOOT_LIB_HERE/kvm-lib.sh"
	kvm=${NVME_EMU_KVM:-$(kvm_probe "$root")}
	if [ "$kvm" = on ]; then
		accel=(-accel kvm -cpu host)
	else
		accel=(-accel tcg,thread=multi -cpu max)
	fi
	# No -no-reboot: a guest reboot resets the machine and boots again.
	args=(-L "$root/usr/share/qemu" -L "$root/usr/share/seabios"
	      -name nvme-emu-boot -nodefaults -display none -vga none -nic none -monitor none
	      "${accel[@]}" -smp 2 -m 1G
	      -object memory-backend-memfd,id=mem,size=1G,share=on
	      -readconfig "$BOOT_LIB_HERE/q35-guest.cfg"
	      -chardev "socket,id=con0,path=$con,server=on,wait=on" -serial chardev:con0
	      -chardev "file,id=fwlog,path=$BOOT_DIR/firmware.log"
	      -device isa-debugcon,iobase=0x402,chardev=fwlog
	      -device "{\"driver\":\"vfio-user-pci\",\"id\":\"boot0\",\"bootindex\":1,\"socket\":{\"path\":\"$BOOT_DIR/nvme.sock\",\"type\":\"unix\"}}")
	case $fw in
	bios) ;; # SeaBIOS: QEMU's default firmware
	uefi)
		if [ ! -f "$BOOT_OVMF_CODE" ] || [ ! -f "$BOOT_OVMF_VARS" ]; then
			boot_msg "error: no $BOOT_OVMF_CODE / $BOOT_OVMF_VARS (package ovmf; make deps)"
			return 1
		fi
		# The variable store is per run: written by the firmware and the loader.
		cp "$BOOT_OVMF_VARS" "$BOOT_DIR/OVMF_VARS.fd"
		args+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$BOOT_OVMF_CODE"
		       -drive "if=pflash,format=raw,unit=1,file=$BOOT_DIR/OVMF_VARS.fd") ;;
	*) boot_msg "error: firmware must be bios or uefi, not '$fw'"; return 1 ;;
	esac
	# NVME_EMU_BOOT_QEMU_ARGS: more QEMU options (e.g. a monitor to debug a boot).
	read -ra extra <<<"${NVME_EMU_BOOT_QEMU_ARGS:-}"
	args+=("${extra[@]}")
	printf '%q ' "${qemu[@]}" "${args[@]}" > "$BOOT_DIR/qemu-cmdline"
	echo >> "$BOOT_DIR/qemu-cmdline"
	BOOT_T0=$(date +%s.%N)
	"${qemu[@]}" "${args[@]}" > "$BOOT_DIR/qemu.log" 2>&1 &
	BOOT_QEMU=$!
	BOOT_TOKEN=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
	coproc BOOT_CON { python3 "$BOOT_LIB_HERE/serial-shell.py" --socket "$con" \
		--log "$BOOT_DIR/console.log" --token "$BOOT_TOKEN" --t0 "$BOOT_T0" \
		--connect-timeout 60 2>>"$BOOT_DIR/serial-shell.log"; }
	boot_msg "$fw, $([ "$kvm" = on ] && echo KVM || echo TCG), files in $BOOT_DIR"
}

# boot_req VERB TIMEOUT [ARG]: one request to the driver (see serial-shell.py);
# returns BOOT_RC (0: done).
boot_req() {
	local verb=$1 t=$2 line
	shift 2
	BOOT_OUT="" BOOT_RC=125 BOOT_SECS=0
	if [ -z "${BOOT_CON_PID:-}" ] || ! kill -0 "$BOOT_CON_PID" 2>/dev/null; then
		boot_msg "error: the serial shell driver is not running (see $BOOT_DIR/serial-shell.log)"
		return 125
	fi
	echo "$verb $t${1:+ $1}" >&"${BOOT_CON[1]}"
	# The driver enforces the timeout; a margin catches a driver gone wrong.
	while IFS= read -r -t $((${t%.*} + 30)) line <&"${BOOT_CON[0]}"; do
		if [[ $line == "@@$BOOT_TOKEN "* ]]; then
			BOOT_RC=$(sed -E 's/.* rc=([0-9]+).*/\1/' <<<"$line")
			BOOT_SECS=$(sed -E 's/.* secs=([0-9.]+).*/\1/' <<<"$line")
			return "$BOOT_RC"
		fi
		BOOT_OUT+=$line$'\n'
	done
	boot_msg "error: no answer from the serial shell driver to '$verb'"
	return 125
}

boot_cleanup() {
	if [ -n "$BOOT_QEMU" ]; then
		kill "$BOOT_QEMU" 2>/dev/null
		wait "$BOOT_QEMU" 2>/dev/null
		BOOT_QEMU=""
	fi
	if [ -n "${BOOT_CON_PID:-}" ]; then
		kill "$BOOT_CON_PID" 2>/dev/null
		wait "$BOOT_CON_PID" 2>/dev/null
	fi
	if [ -n "$BOOT_DAEMON" ]; then
		kill "$BOOT_DAEMON" 2>/dev/null
		wait "$BOOT_DAEMON" 2>/dev/null
		BOOT_DAEMON=""
	fi
	return 0
}
