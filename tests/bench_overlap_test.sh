#!/usr/bin/env bash
# `loom bench overlap --quick` on tiny shapes: two rank processes, every op (AG+GEMM, GEMM+RS,
# MoE uniform/Zipf) at R=1 and the unlimited negative control, no peers. The table is printed
# (with the modelled-link and negative-control statements) and the JSON summary has the issue's
# keys with finite values. A bad --ops value is a usage error.
source "$(dirname "$0")/lib.sh"
out=$SCRATCH/out.txt
json=$SCRATCH/overlap.json
svg=$SCRATCH/overlap.svg
timeout 120 "$LOOM" bench overlap --quick --tiny --ratios 1 --splits 2 --trials 3 --warmup 1 \
  --peers none --json "$json" --svg "$svg" --dir "$SCRATCH/work" > "$out" 2>&1 ||
  { cat "$out"; fail "loom bench overlap --quick failed"; }
expect_contains "$out" "## ag_gemm 64x256x128" "an AG+GEMM table"
expect_contains "$out" "## gemm_rs 64x256x128" "a GEMM+RS table"
expect_contains "$out" "## moe zipf" "a MoE table with Zipf routing"
expect_contains "$out" "paced proxy" "the table states that the link is modelled"
expect_contains "$out" "negative control (memory-speed link)" "the unlimited arm is labelled"
expect_contains "$out" "peers: none" "the table says peers were skipped"
expect_contains "$out" "tile_gemm_vs_openblas" "the targets list"
expect_contains "$svg" "<svg" "an SVG"
/usr/bin/python3 - "$json" <<'PY' || fail "summary keys missing or not finite (see above)"
import json, math, sys
doc = json.load(open(sys.argv[1]))
s = doc["summary"]
for k in ["ag_gemm_efficiency_R1", "ag_gemm_fused_vs_decomposed_R1",
          "gemm_rs_fused_vs_decomposed_R1", "moe_fused_vs_decomposed_R1",
          "tile_gemm_vs_openblas", "auto_worst_vs_best_of_seq_dec"]:
    assert isinstance(s.get(k), (int, float)) and math.isfinite(s[k]), (k, s.get(k))
assert s["tile_gemm_vs_openblas"] > 0
assert doc["host"]["commit"], doc["host"]
w = doc["results"]["workloads"]
assert [x["workload"]["op"] for x in w] == ["ag_gemm", "gemm_rs", "moe", "moe"], w
for x in w:
    labels = [a["label"] for a in x["arms"]]
    assert labels == ["R=1", "unlimited"], labels
    for a in x["arms"]:
        assert len(a["trials"]) == 3, len(a["trials"])
        for v in ["sequential", "decomposed", "fused_s2", "auto"]:
            t = a["metrics"]["variants"][v]["t_x_s"]["median"]
            assert t > 0, (x["workload"]["name"], a["label"], v, t)
print("summary ok:", {k: round(v, 3) for k, v in s.items() if isinstance(v, float)})
PY
set +e
"$LOOM" bench overlap --ops ag_gemm,nope --peers none > "$out" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$out"; fail "a bad --ops value should exit 2, got $rc"; }
expect_contains "$out" "nope" "the error names the bad op"
echo PASS
