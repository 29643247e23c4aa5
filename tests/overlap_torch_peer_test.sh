#!/usr/bin/env bash
# The Python torch.distributed peer of `loom bench overlap` (scripts/bench/overlap_torch_peer.py,
# impl torch_decomposed: PyTorch async-TP's chunked all_gather / all_to_all with async_op=True
# overlapping torch.mm), two local ranks over loopback gloo, on odd shapes (37-row shards in 3
# chunks of 13/12/12 rows, K 19, N 23): the script exits non-zero unless the decomposed result
# equals the local reference (max relative error <= 1e-4), and its JSON must say so. Then the
# peer's JSON for the tiny AG+GEMM shape (unshaped, so it belongs to the unlimited arm) is attached
# by `loom bench overlap --peers DIR` and shown in the table. The MoE layer pair runs on 37 tokens
# over 4 experts (hidden 19, ffn 23, 3 column chunks), uniform and Zipf. Skipped (77) without Debian's
# python3-torch.
source "$(dirname "$0")/lib.sh"
peer=$(cd "$(dirname "$0")/.." && pwd)/scripts/bench/overlap_torch_peer.py
/usr/bin/python3 -c "import torch.distributed" 2>/dev/null \
  || { echo "SKIP: /usr/bin/python3 has no torch (Debian python3-torch)"; exit 77; }
out=$SCRATCH/out.txt

for op in ag_gemm gemm_rs; do
  timeout 120 /usr/bin/python3 "$peer" --op "$op" --m-shard 37 --k 19 --n 23 --chunks 3 \
    --trials 2 --warmup 1 --panel-rows 8 --json "$SCRATCH/torch_$op.json" > "$out" 2>&1 ||
    { cat "$out"; fail "torch_decomposed $op failed (or differs from the reference)"; }
  expect_contains "$out" "torch_decomposed" "the peer's one-line summary"
done
for routing in uniform zipf; do
  timeout 120 /usr/bin/python3 "$peer" --op moe --routing "$routing" --tokens 37 --experts 4 \
    --hidden 19 --ffn 23 --chunks 3 --trials 2 --warmup 1 --json "$SCRATCH/torch_moe_$routing.json" \
    > "$out" 2>&1 || { cat "$out"; fail "torch_decomposed moe $routing failed (or differs from the reference)"; }
done
/usr/bin/python3 - "$SCRATCH" <<'PY' || fail "torch_decomposed peer JSON wrong (see above)"
import json, math, sys
for op in ["ag_gemm", "gemm_rs"]:
    doc = json.load(open(f"{sys.argv[1]}/torch_{op}.json"))
    assert doc["op"] == op and doc["impl"] == "torch_decomposed", doc["impl"]
    assert doc["transport"].startswith("torch.distributed gloo"), doc["transport"]
    assert doc["shape"] == {"world": 2, "m_shard": 37, "k": 19, "n_local": 23}, doc["shape"]
    v = doc["verify"]
    assert v["ok"] and 0 <= v["max_rel_err"] <= v["tolerance"] == 1e-4, v
    assert doc["decomposed"]["chunks"] == 3 and doc["decomposed"]["async_op"], doc["decomposed"]
    assert doc["ignored_flags"] == ["--panel-rows", "8"], doc["ignored_flags"]
    assert len(doc["per_trial"]["t_x_s"]) == 2, doc["per_trial"]
    assert all(t > 0 and math.isfinite(t) for t in doc["per_trial"]["t_x_s"]), doc["per_trial"]
for routing in ["uniform", "zipf"]:
    doc = json.load(open(f"{sys.argv[1]}/torch_moe_{routing}.json"))
    assert doc["op"] == "moe" and doc["impl"] == "torch_decomposed", doc["impl"]
    assert doc["shape"] == {"world": 2, "experts": 4, "topk": 2, "hidden": 19, "ffn": 23,
                            "tokens_per_rank": 37, "routing": routing}, doc["shape"]
    v = doc["verify"]
    assert v["ok"] and 0 <= v["max_rel_err"] <= v["tolerance"] == 1e-4, v
    # Rows to the other rank's experts and partial sums back: more than zero, at most every
    # token's top-2 rows plus one partial per token, at 19 floats each.
    assert 0 < doc["comm_bytes_per_rank"] <= (2 * 37 + 37) * 19 * 4, doc["comm_bytes_per_rank"]
    assert all(t > 0 and math.isfinite(t) for t in doc["per_trial"]["t_x_s"]), doc["per_trial"]
print("torch_decomposed peers ok")
PY

# Attached to loom's table: the unshaped peer matches the unlimited arm of the same shape.
mkdir -p "$SCRATCH/peers"
timeout 120 /usr/bin/python3 "$peer" --op ag_gemm --m-shard 64 --k 256 --n 128 --chunks 2 \
  --trials 2 --warmup 0 --json "$SCRATCH/peers/torch.json" > "$out" 2>&1 ||
  { cat "$out"; fail "torch_decomposed on the tiny shape failed"; }
timeout 120 "$LOOM" bench overlap --quick --tiny --ops ag_gemm --ratios 1 --splits 2 --trials 2 \
  --warmup 0 --peers "$SCRATCH/peers" --json "$SCRATCH/overlap.json" --dir "$SCRATCH/work" \
  > "$out" 2>&1 || { cat "$out"; fail "loom bench overlap --peers DIR failed"; }
expect_contains "$out" "torch_dec" "a torch_dec column"
expect_contains "$out" "(1 of 1 peer results matched a row)" "the torch peer attached"
/usr/bin/python3 - "$SCRATCH/overlap.json" <<'PY' || fail "torch peer not in the report JSON"
import json, sys
arms = json.load(open(sys.argv[1]))["results"]["workloads"][0]["arms"]
assert arms[1]["label"] == "unlimited", arms[1]["label"]
assert arms[1]["peers"]["torch_decomposed"]["t_x_s"]["median"] > 0, arms[1]["peers"]
assert "peers" not in arms[0], arms[0].get("peers")
print("attached ok")
PY
echo PASS
