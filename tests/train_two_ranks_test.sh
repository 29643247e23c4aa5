#!/usr/bin/env bash
# `loom train --nproc 2` on real processes: loss falls, the run directory has config.json,
# metrics.jsonl rows with step/loss/tokens_per_s/mfu, and a report.html with SVG charts.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
run=$SCRATCH/run
"$LOOM" train --nproc 2 "${TINY[@]}" steps=30 eval.every=10 optim.warmup_steps=5 optim.lr=3e-3 \
  data.source=file data.path="$corpus" run_dir="$run" > "$SCRATCH/out.txt" 2>&1 \
  || { cat "$SCRATCH/out.txt"; fail "loom train exited non-zero"; }
expect_contains "$SCRATCH/out.txt" "\[rank 0\] step 30/30" "progress line of the last step"
expect_contains "$SCRATCH/out.txt" "GEMM peak" "the measured peak is printed"
expect_contains "$SCRATCH/out.txt" "MFU = tokens/s" "the MFU convention is printed"
expect_contains "$SCRATCH/out.txt" "sample (16 bytes" "a generated sample"
for f in config.json metrics.jsonl report.html; do [ -s "$run/$f" ] || fail "missing $run/$f"; done
expect_contains "$run/report.html" "<svg" "inline SVG charts"
/usr/bin/python3 - "$run/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 30, f"expected 30 rows, got {len(rows)}"
for r in rows:
    for k in ("step", "loss", "tokens_per_s", "mfu"):
        assert k in r, f"row misses {k}: {r}"
    assert r["tokens_per_s"] > 0 and 0 < r["mfu"] < 1.5, r
first = sum(r["loss"] for r in rows[:3]) / 3
last = sum(r["loss"] for r in rows[-3:]) / 3
assert last < first - 0.5, f"loss did not fall: {first:.3f} -> {last:.3f}"
assert sum("eval_loss" in r for r in rows) == 3, "eval every 10 steps"
print(f"loss {first:.3f} -> {last:.3f}")
PY
echo PASS
