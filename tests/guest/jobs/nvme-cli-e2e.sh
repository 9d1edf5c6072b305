# Guest job of test-nvme-cli-e2e.sh: nvme-cli's own end-to-end suite (tests/e2e of the nvme-cli tree the tester gave, with the nvme binary built from it) against the controller whose serial is in e2e-serial; one line per case, the cases in e2e-known (module.case and why, one a line) reported but not counted against us, those in e2e-skip (same form) allowed to skip themselves (a feature the device does not offer), any other that does not pass (fails, errors or is skipped) and any module whose report is missing or short of its TAP plan a failure.
. "$GUEST_LIB"

serial=$(cat e2e-serial)
step "controller $serial is bound" wait_for 60 nvme_ctrl_by_serial "$serial"
ctrl=$(nvme_ctrl_by_serial "$serial")
step "nvme-cli under test runs" ./nvme version
# The suite reads Identify Namespace of its namespace before anything else: with Namespace
# Management, namespace 1 is made first as a user would, the whole capacity in format 0.
oacs=$(nvme id-ctrl "/dev/$ctrl" -o json | sed -n 's/.*"oacs" *: *\([0-9]*\).*/\1/p')
if [ $((oacs & 8)) -ne 0 ] && [ ! -e "/dev/${ctrl}n1" ]; then
	tnvmcap=$(nvme id-ctrl "/dev/$ctrl" -o json | sed -n 's/.*"tnvmcap" *: *\([0-9]*\).*/\1/p')
	cntlid=$(nvme id-ctrl "/dev/$ctrl" -o json | sed -n 's/.*"cntlid" *: *\([0-9]*\).*/\1/p')
	step "create-ns 1: $((tnvmcap / 512)) blocks of 512" nvme create-ns "/dev/$ctrl" \
		--nsze=$((tnvmcap / 512)) --ncap=$((tnvmcap / 512)) --flbas=0
	step "attach-ns 1" nvme attach-ns "/dev/$ctrl" --namespace-id=1 --controllers="$cntlid"
	step "/dev/${ctrl}n1 appears" wait_for 30 test -b "/dev/${ctrl}n1"
fi
mkdir -p "$JOB_OUT/e2e" "$JOB_OUT/e2e-logs"
for m in $(cat e2e-modules); do
	echo "--- e2e module $m"
	# The suite's own runner: TAP on stdout, a JSON report per module.
	timeout 900 python3 "$PWD/tests/nvme-cli-e2e" --source-root "$PWD" --controller "/dev/$ctrl" \
		--ns1 "/dev/${ctrl}n1" --nvme-bin "$PWD/nvme" --log-dir "$JOB_OUT/e2e-logs" \
		--plugins none --json-report "$JOB_OUT/e2e/$m.json" "$m" > "$JOB_OUT/e2e/$m.tap" 2>&1
	echo "$m: exit $?"
	grep -E '^(not )?ok ' "$JOB_OUT/e2e/$m.tap"
done
# One step per case: passed, or a known failure (either outcome is reported, neither counts).
python3 - "$JOB_OUT/e2e" e2e-modules e2e-known e2e-skip > "$JOB_OUT/e2e-steps" << 'PY'
import json, os, sys
out, modules, known_file, skip_file = sys.argv[1:5]
def cases(path):
    d = {}
    for line in open(path):
        if line.strip():
            name, _, why = line.strip().partition(' ')
            d[name] = why
    return d
known, may_skip = cases(known_file), cases(skip_file)
with open(os.path.join(out, 'summary.txt'), 'w') as s:
    for m in open(modules).read().split():
        path = os.path.join(out, m + '.json')
        if not os.path.exists(path):
            print(f'not ok - e2e {m}: no report (the module did not run to its end)')
            s.write(f'{m} - noreport\n')
            continue
        tests = json.load(open(path))['tests']
        # The runner's TAP plan says how many cases the module has: each must have a record.
        plan = [l for l in open(os.path.join(out, m + '.tap')) if l.startswith('1..')]
        want = int(plan[0][3:]) if plan else -1
        if want <= 0 or len(tests) != want:
            print(f'not ok - e2e {m}: {len(tests)} cases reported, the plan says {want}')
            s.write(f'{m} - incomplete\n')
        for t in tests:
            name, outcome = t['name'], t['outcome']
            s.write(f"{m} {name} {outcome}\n")
            if f'{m}.{name}' in known:
                print(f'ok - e2e {m}.{name}: {outcome} (known: {known[f"{m}.{name}"]})')
            elif outcome == 'pass':
                print(f'ok - e2e {m}.{name}')
            elif outcome == 'skip' and f'{m}.{name}' in may_skip:
                print(f'ok - e2e {m}.{name}: skip (the device lacks it: {may_skip[f"{m}.{name}"]})')
            else:
                msg = (t.get('message') or '').strip().splitlines()
                print(f'not ok - e2e {m}.{name}: {outcome}: {msg[-1] if msg else ""}')
PY
while IFS= read -r line; do
	case $line in
	"ok - "*) GUEST_PASSED=$((GUEST_PASSED + 1)) ;;
	"not ok - "*) GUEST_FAILED=$((GUEST_FAILED + 1)) ;;
	esac
	echo "$line"
done < "$JOB_OUT/e2e-steps"
guest_finish
