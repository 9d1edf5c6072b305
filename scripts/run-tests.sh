#!/usr/bin/env bash
# Runs test suites and prints one closing line "N passed, N failed".
# Each argument is "group:name=command args...". A suite's own count is read
# from its last line of the form "N passed, N failed"; a suite that prints
# none counts as one test; one that reports "0 passed, 0 failed" is shown as
# SKIP and named at the end. A non-zero exit with no failure counted, a crash or
# a timeout counts as one failure. Logs: build/test-logs/<group>-<name>.log.
set -u
cd "$(dirname "$0")/.."
logdir=build/test-logs
mkdir -p "$logdir"
# Per suite: a hung suite fails alone instead of eating CI's hour.
unit_timeout=${TEST_TIMEOUT:-180}
guest_timeout=${GUEST_TEST_TIMEOUT:-600}
total_pass=0 total_fail=0
skipped=()
for spec in "$@"; do
    label=${spec%%=*}
    cmd=${spec#*=}
    log="$logdir/${label//[:\/]/-}.log"
    timeout_s=$unit_timeout
    # Guests boot; the service group builds the package (a compile of its own).
    [[ $label == guest:* || $label == service:* ]] && timeout_s=$guest_timeout
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout --kill-after=10 "$timeout_s" $cmd >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        p=$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed.*/\2/' <<<"$line")
        f=$(sed -E 's/^([A-Za-z-]+: )?[0-9]+ passed, ([0-9]+) failed.*/\2/' <<<"$line")
    elif [ $rc -eq 0 ]; then p=1 f=0
    else p=0 f=1
    fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
    if [ "$f" -ne 0 ]; then status=FAIL
    elif [ "$p" -eq 0 ]; then status=SKIP; skipped+=("$label")
    else status=ok
    fi
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && status="FAIL (timeout ${timeout_s}s)"
    printf '%-6s %-48s %4d ok %3d bad  %6ss\n' "$status" "$label" "$p" "$f" "$secs"
    if [ "$f" -ne 0 ]; then
        echo "------ tail of $log"
        tail -n 40 "$log" | sed 's/^/  | /'
        echo "------"
    fi
    # A suite that ran nothing says why in its log: show it.
    [ "$status" = SKIP ] && grep -iE 'skip|not found|cannot|missing' "$log" | tail -n 2 | sed 's/^/  | /'
done
# Skipped suites (0 passed, 0 failed: a missing tool or peer) are named, not counted as passed.
[ ${#skipped[@]} -gt 0 ] && echo "${#skipped[@]} suite(s) skipped: ${skipped[*]}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
