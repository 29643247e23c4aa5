#!/usr/bin/env bash
# `loom bench overlap --quick` on tiny shapes: two rank processes, every op (AG+GEMM, GEMM+RS,
# MoE uniform/Zipf) at R=1 and the unlimited negative control, no peers. The table is printed
# (with the modelled-link and negative-control statements) and the JSON summary has the issue's
# keys with finite values. A bad --ops value is a usage error. Then the decomposed Gloo peer
# (`loom bench overlap-peer --impl gloo_decomposed`, two local ranks over loopback TCP, odd
# shapes) for every op: its output must equal the local reference (the command fails otherwise)
# and the JSON must record the result check and the decomposed schedule's statistics.
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
        moe = x["workload"]["op"] == "moe"
        # MoE: fused_s2 is the cross-layer schedule, layers_s2 each layer fused on its own.
        for v in ["sequential", "decomposed", "fused_s2", "auto"] + (["layers_s2"] if moe else []):
            t = a["metrics"]["variants"][v]["t_x_s"]["median"]
            assert t > 0, (x["workload"]["name"], a["label"], v, t)
        # MoE records each layer's wall time. The parent keeps the max over ranks of every
        # number, so the op's time lies between the slower layer and the sum of the two.
        for tr in a["trials"]:
            for name, v in tr["x"].items():
                if x["workload"]["op"] != "moe":
                    assert "parts" not in v, name
                    continue
                p = v["parts"]
                assert p["layer0_s"] > 0 and p["layer1_s"] > 0, (name, p)
                assert ("fill_s" in p) == (name == "fused_s2"), (name, p)
                lo, hi = max(p["layer0_s"], p["layer1_s"]), p["layer0_s"] + p["layer1_s"]
                assert lo <= v["wall_s"] <= hi * (1 + 1e-9), (name, p, v["wall_s"])
            if x["workload"]["op"] == "moe":
                assert tr["t_comp_parts"]["layer1_s"] > 0 and tr["t_comm_parts"]["layer0_s"] > 0, tr
cross = s["moe_cross_layer_R1"]
assert len(cross) == 2, cross  # both routings
for name, c in cross.items():
    assert c["splits"] == 2 and c["per_layer_over_cross_layer"] > 0, (name, c)
print("summary ok:", {k: round(v, 3) for k, v in s.items() if isinstance(v, float)})
PY
set +e
"$LOOM" bench overlap --ops ag_gemm,nope --peers none > "$out" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat "$out"; fail "a bad --ops value should exit 2, got $rc"; }
expect_contains "$out" "nope" "the error names the bad op"
set -e

# Decomposed Gloo peer: unbound-buffer Isend/Irecv per chunk, GEMM panels of 8 rows (37 rows per
# shard: a short last panel), every op; MoE with Zipf routing over 4 experts.
peer_args=(--impl gloo_decomposed --trials 2 --warmup 1 --panel-rows 8 --m-shard 37 --k 19
           --n 23 --experts 4 --topk 2 --hidden 24 --ffn 40 --tokens 53 --routing zipf)
for op in ag_gemm gemm_rs moe; do
  timeout 120 "$LOOM" bench overlap-peer --op "$op" "${peer_args[@]}" \
    --json "$SCRATCH/peer_$op.json" > "$out" 2>&1 ||
    { cat "$out"; fail "overlap-peer $op gloo_decomposed failed (or differs from the reference)"; }
  expect_contains "$out" "gloo_decomposed" "the peer's one-line summary"
done
/usr/bin/python3 - "$SCRATCH" <<'PY' || fail "gloo_decomposed peer JSON wrong (see above)"
import json, math, sys
for op in ["ag_gemm", "gemm_rs", "moe"]:
    doc = json.load(open(f"{sys.argv[1]}/peer_{op}.json"))
    assert doc["op"] == op and doc["impl"] == "gloo_decomposed", doc["impl"]
    assert doc["transport"] == "gloo", doc["transport"]
    v = doc["verify"]
    assert v["ok"] and 0 <= v["max_rel_err"] <= v["tolerance"] == 1e-4, v
    d = doc["decomposed"]
    assert d["progress"].startswith("transport thread"), d
    assert d["test_between_panels"] is False, d
    assert len(d["per_trial_wait_s"]) == 2 and all(w >= 0 for w in d["per_trial_wait_s"]), d
    assert d["per_trial_tests_rank0"] == [0, 0], d  # nothing polled: Gloo has no Test()
    assert all(0 <= f <= 1 for f in d["per_trial_chunks_ready_fraction_rank0"]), d
    assert all(t > 0 and math.isfinite(t) for t in doc["per_trial"]["t_x_s"]), doc["per_trial"]
print("gloo_decomposed peers ok")
PY
echo PASS
