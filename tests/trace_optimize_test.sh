#!/usr/bin/env bash
# `loom trace optimize` on the traces of a 2-rank TINY run (given the run directory: the traces
# are found in its trace/): prints base vs best predicted time, the strategy, replays and search
# time and the fusion-only DP; best <= base, replays within the budget, the base equals `loom
# trace replay`'s prediction, the same seed gives the same strategy; bad codecs / budgets fail
# naming the flag. No wall-clock thresholds.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
run=$SCRATCH/run
"$LOOM" train --nproc 2 "${TINY[@]}" steps=12 eval.every=0 data.source=file data.path="$corpus" \
  run_dir="$run" trace.steps=4-11 > "$SCRATCH/train.txt" 2>&1 \
  || { cat "$SCRATCH/train.txt"; fail "loom train exited non-zero"; }

"$LOOM" trace replay "$run/trace" --split 32KiB --json "$SCRATCH/replay.json" > "$SCRATCH/replay.txt" 2>&1 \
  || { cat "$SCRATCH/replay.txt"; fail "loom trace replay failed"; }
for seed_run in a b; do
  "$LOOM" trace optimize "$run" --split 32KiB --codecs none,fp16,int4 --max-replays 60 --seed 3 \
    --json "$SCRATCH/opt_$seed_run.json" > "$SCRATCH/opt_$seed_run.txt" 2>&1 \
    || { cat "$SCRATCH/opt_$seed_run.txt"; fail "loom trace optimize failed"; }
done
cat "$SCRATCH/opt_a.txt"
for f in "base:" "best:" "search:    simulated annealing" "replays" "fusion-only DP:" "overlap o"; do
  expect_contains "$SCRATCH/opt_a.txt" "$f" "trace optimize output"
done

/usr/bin/python3 - "$SCRATCH/replay.json" "$SCRATCH/opt_a.json" "$SCRATCH/opt_b.json" <<'PY'
import json, sys
rep, a, b = (json.load(open(p)) for p in sys.argv[1:])
assert 0 < a["predicted_ms"] <= a["base_ms"] * (1 + 1e-12), a
assert abs(a["base_ms"] - rep["predicted_ms"]) <= 1e-9 * rep["predicted_ms"], (a["base_ms"], rep)
assert 1 <= a["replays"] <= 60, a["replays"]
best = a["best"]
assert best["bucket_begin"][0] == 0 and len(best["codecs"]) == best["buckets"], best
assert set(best["codecs"]) <= {"none", "fp16", "int4"}, best
assert sum(best["bucket_bytes"]) == sum(a["base"]["bucket_bytes"]) > 0, best
assert a["best"] == b["best"] and a["replays"] == b["replays"], "same seed, different result"
dp = a["fusion_dp"]
assert dp["replayed_ms"] > 0 and dp["bucket_replays"] > 0, dp
assert set(dp["strategy"]["codecs"]) == {"none"}, dp
print("optimize: base %.3f ms -> best %.3f ms (%s), %d replays in %.3f s; DP %.3f ms (%s)" %
      (a["base_ms"], a["predicted_ms"], best["describe"], a["replays"], a["search_seconds"],
       dp["replayed_ms"], "exact" if dp["exact"] else "heuristic: " + dp["inexact_reason"]))
PY

if "$LOOM" trace optimize "$run" --codecs none,int3 > "$SCRATCH/bad1.txt" 2>&1; then
  fail "unknown codec accepted"
fi
expect_contains "$SCRATCH/bad1.txt" "int3" "error names the codec"
if "$LOOM" trace optimize "$run" --max-replays 0 > "$SCRATCH/bad2.txt" 2>&1; then
  fail "zero replay budget accepted"
fi
expect_contains "$SCRATCH/bad2.txt" "max_replays" "error names the budget"
echo PASS
