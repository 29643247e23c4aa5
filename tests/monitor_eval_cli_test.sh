#!/usr/bin/env bash
# `loom monitor eval --json --html` on a small simulated evaluation, then `loom monitor report`
# on the saved JSON: the summary has the issue's keys as numbers, the HTML page has the targets,
# the comparison table and charts, and the report rebuilt from the JSON is the same page. Bad
# input (not JSON, not an eval report) exits 2 with a message.
source "$(dirname "$0")/lib.sh"

"$LOOM" monitor eval --quick --detectors minder,mahalanobis --timing-machines 16,64 \
  --json "$SCRATCH/eval.json" --html "$SCRATCH/eval.html" > "$SCRATCH/eval.out" 2>&1 ||
  fail "monitor eval failed: $(tail -n 5 "$SCRATCH/eval.out")"
/usr/bin/python3 - "$SCRATCH/eval.json" <<'PY' || fail "eval JSON summary is incomplete"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
for k in ("minder_f1", "mahalanobis_f1", "false_alarms_per_machine_day", "ttd_p50_hang_s",
          "per_call_ms_1024"):
    assert k in s, k
for k in ("minder_f1", "mahalanobis_f1", "false_alarms_per_machine_day"):
    assert isinstance(s[k], (int, float)) and 0 <= s[k], (k, s[k])
assert s["minder_f1"] <= 1 and s["mahalanobis_f1"] <= 1
# --timing-machines 16,64: no 1024-machine timing in this run, so that key is null, not 0.
assert s["per_call_ms_1024"] is None, s["per_call_ms_1024"]
PY
html=$SCRATCH/eval.html
grep -q '<h2>Targets</h2>' "$html" || fail "no targets section"
grep -q '<td>minder</td><td>streaming</td>' "$html" || fail "no minder row"
grep -q '<td>mahalanobis</td><td>streaming</td>' "$html" || fail "no mahalanobis row"
[ "$(grep -o '<svg' "$html" | wc -l)" -ge 1 ] || fail "no chart"
grep -q 'not in this report' "$html" || fail "the missing 1024-machine timing is not flagged"
"$LOOM" monitor report "$SCRATCH/eval.json" --html "$SCRATCH/again.html" > "$SCRATCH/report.out" ||
  fail "monitor report failed"
cmp -s "$html" "$SCRATCH/again.html" || fail "report from the saved JSON differs from eval --html"
grep -q 'Minder F1 minus Mahalanobis F1' "$SCRATCH/report.out" || fail "targets not printed"

echo 'not json' > "$SCRATCH/bad.json"
rc=0; "$LOOM" monitor report "$SCRATCH/bad.json" --html "$SCRATCH/x.html" 2> "$SCRATCH/err" || rc=$?
[ "$rc" = 2 ] || fail "non-JSON input: exit $rc, want 2"
grep -q 'is not JSON' "$SCRATCH/err" || fail "non-JSON input: $(cat "$SCRATCH/err")"
echo '{"rows": []}' > "$SCRATCH/other.json"
rc=0; "$LOOM" monitor report "$SCRATCH/other.json" --html "$SCRATCH/x.html" > "$SCRATCH/out" 2> "$SCRATCH/err" || rc=$?
[ "$rc" = 2 ] || fail "non-report JSON: exit $rc, want 2"
grep -q 'no "detectors" array' "$SCRATCH/err" || fail "non-report JSON: $(cat "$SCRATCH/err")"
[ ! -e "$SCRATCH/x.html" ] || fail "a failed report wrote its output"
[ ! -s "$SCRATCH/out" ] || fail "a failed report printed targets: $(cat "$SCRATCH/out")"
echo PASS
