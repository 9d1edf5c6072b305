#!/usr/bin/env bash
# tests/fuzz/libfuzzer-check.sh BUILD - the libFuzzer targets for a short budget, in `make test`
# (FUZZ_CHECK_TIME seconds each, default 20): a crash, a leak or a hang found in that time fails.
# Each target is one check. Needs clang with libFuzzer (Debian clang, libclang-rt-14-dev; the
# deps lists install them).
set -u
cd "$(dirname "$0")/../.."
build=${1:-build}
secs=${FUZZ_CHECK_TIME:-20}
if ! make --no-print-directory BUILD="$build" fuzz-targets >/dev/null 2>"$build/fuzz-build.log"; then
	echo "cannot build the libFuzzer targets:"
	tail -n 20 "$build/fuzz-build.log"
	echo "0 passed, 2 failed"
	exit 1
fi
pass=0 fail=0
for t in "$build"/fuzz/vfu_libfuzzer "$build"/fuzz/nvme_libfuzzer; do
	if tests/fuzz/run-libfuzzer.sh "$secs" "$build/fuzz" "$t"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
