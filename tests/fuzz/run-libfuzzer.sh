#!/usr/bin/env bash
# tests/fuzz/run-libfuzzer.sh SECONDS DIR TARGET... - runs each libFuzzer target for SECONDS with
# its dictionary (tests/fuzz/<name>.dict when there is one) and a corpus kept in DIR/corpus-<name>,
# then prints one line per target: executions, coverage (edges), features, corpus size. Exits
# non-zero if any target found a crash, a leak or a hang (libFuzzer's own exit status).
set -u
secs=$1 dir=$2
shift 2
rc=0
for t in "$@"; do
	name=$(basename "$t")
	dict=tests/fuzz/${name%_libfuzzer}.dict
	corpus=$dir/corpus-$name
	log=$dir/$name.log
	mkdir -p "$corpus"
	args=(-max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
	      -artifact_prefix="$dir/crash-$name-")
	[ -f "$dict" ] && args+=(-dict="$dict")
	"$t" "${args[@]}" "$corpus" >"$log" 2>&1
	st=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(sed -E -n 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
	ft=$(sed -E -n 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
	units=$(sed -E -n 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")
	printf '%-16s %ss: %s executions, cov %s, ft %s, corpus %s, exit %d\n' "$name" "$secs" \
	       "${execs:-?}" "${cov:-?}" "${ft:-?}" "${units:-?}" "$st"
	if [ $st -ne 0 ]; then
		rc=1
		echo "------ tail of $log"
		tail -n 40 "$log" | sed 's/^/  | /'
	fi
done
exit $rc
