# The KVM verdict of the harness (sourced by launch-guest.sh and boot-lib.sh): does a KVM boot of the test guest work here?
#
# kvm_probe SYSROOT prints "on" or "off". /dev/kvm existing is not enough (a
# host may refuse to run a stock kernel under KVM), so the first call boots
# the test guest once with --kvm on and caches the verdict beside the
# sysroot, keyed by the host kernel and the sysroot. Needs msg() of the caller.

kvm_lib_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

kvm_probe() {
	local sysroot=$1 verdict key cache_file probe_dir probe
	key=$( (uname -r; basename "$sysroot") | sha256sum | cut -c1-16)
	cache_file=$(dirname "$sysroot")/kvm-verdict-$key
	if [ ! -w /dev/kvm ]; then
		echo off
		return
	fi
	# One probe at a time; whoever waited reuses the verdict.
	exec 8>"$cache_file.lock"
	flock 8
	if [ -s "$cache_file" ]; then
		cat "$cache_file"
		exec 8>&-
		return
	fi
	mkdir -p "$kvm_lib_here/../build/guest"
	probe_dir=$(mktemp -d "$kvm_lib_here/../build/guest/kvm-probe.XXXXXX")
	printf '#!/bin/sh\necho kvm probe ok\n' > "$probe_dir/probe.sh"
	msg "probing KVM with a test boot (cached in $cache_file)"
	"$kvm_lib_here/launch-guest.sh" --job "$probe_dir/probe.sh" --run-dir "$probe_dir/run" \
		--kvm on --timeout 45 --quiet --mem 256M --cpus 1 >/dev/null 2>&1 &
	probe=$!
	# A KVM boot reaches the job in a few seconds. A kernel KVM cannot run
	# usually stops at once with an internal error while its vCPU stays
	# stuck: stop there instead of waiting for the timeout.
	while kill -0 "$probe" 2>/dev/null; do
		if grep -q "KVM internal error" "$probe_dir/run/qemu.log" 2>/dev/null; then
			kill "$probe"
			break
		fi
		sleep 0.5
	done
	if wait "$probe"; then
		verdict=on
	else
		verdict=off
	fi
	rm -rf "$probe_dir"
	echo "$verdict" > "$cache_file.tmp.$$"
	mv -f "$cache_file.tmp.$$" "$cache_file"
	exec 8>&-
	echo "$verdict"
}
