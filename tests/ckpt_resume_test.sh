#!/usr/bin/env bash
# Checkpoint and resume through `loom train`: 2 ranks save every 6 steps; resuming step 6 with the
# same layout reproduces the loss bit for bit, and resuming with 1 and 3 ranks (and from an
# all-reduce checkpoint into ZeRO-1) continues the curve. The tools read what the trainer wrote:
# verify, inspect, diff, report, export to safetensors (loaded by Python's torch when present).
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
common=("${TINY[@]}" steps=12 optim.warmup_steps=2 optim.lr=3e-3 eval.every=0
        data.source=file data.path="$corpus")
train() {  # name nproc args...
  local name=$1 nproc=$2; shift 2
  "$LOOM" train --nproc "$nproc" run_dir="$SCRATCH/$name" "$@" > "$SCRATCH/$name.txt" 2>&1 \
    || { cat "$SCRATCH/$name.txt"; fail "$name: loom train failed"; }
}
losses() {  # metrics.jsonl -> "step loss" lines
  /usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[1]): r = json.loads(l); print(r["step"], repr(r["loss"]))' "$1"
}

train full 2 "${common[@]}" ckpt.every=6
expect_contains "$SCRATCH/full.txt" "checkpoints: 2 committed, 0 failed" "two checkpoints"
ck=$SCRATCH/full/ckpt
[[ $(cat "$ck/latest") == step_00000012 ]] || fail "latest should name step 12"
"$LOOM" ckpt verify "$ck/step_00000006" > "$SCRATCH/verify.txt" || fail "verify failed"
expect_contains "$SCRATCH/verify.txt" "OK, " "checksums verified"
"$LOOM" ckpt inspect "$ck" > "$SCRATCH/inspect.txt" || fail "inspect failed"
expect_contains "$SCRATCH/inspect.txt" "optim.exp_avg_sq.wte" "optimizer state listed"
"$LOOM" ckpt report "$ck" > "$SCRATCH/report.txt" || fail "report failed"
expect_contains "$SCRATCH/report.txt" "^12 *write *2 " "per-rank write times of step 12"

# Same layout: bit-exact continuation. The resumed run takes model/data/optim from the checkpoint.
train same 2 resume="$ck/step_00000006" ckpt.every=6
diff <(losses "$SCRATCH/full/metrics.jsonl" | tail -n 6) <(losses "$SCRATCH/same/metrics.jsonl") \
  || fail "resuming with the same layout must reproduce steps 7-12 exactly"
"$LOOM" ckpt diff --tensors-only "$ck/step_00000012" "$SCRATCH/same/ckpt/step_00000012" > "$SCRATCH/diff.txt" \
  || { cat "$SCRATCH/diff.txt"; fail "step-12 checkpoints of both runs must be identical"; }

# Other world sizes: 1 rank (2 micro-steps per step) and 3 ranks (batch.global=6).
train one 1 resume="$ck/step_00000006"
train three 3 resume="$ck/step_00000006" batch.global=6
expect_contains "$SCRATCH/three.txt" "saved by 2 rank(s), now 3" "reshard 2 -> 3"
/usr/bin/python3 - "$SCRATCH" <<'PY'
import json, sys
d = sys.argv[1]
rows = lambda n: {r["step"]: r["loss"] for r in map(json.loads, open(f"{d}/{n}/metrics.jsonl"))}
full, one, three = rows("full"), rows("one"), rows("three")
assert sorted(one) == list(range(7, 13)), sorted(one)
for s in range(7, 13):
    assert abs(one[s] - full[s]) < 1e-3, ("1 rank", s, one[s], full[s])
    assert abs(three[s] - full[s]) < 0.15, ("3 ranks", s, three[s], full[s])
assert three[12] < full[1] - 0.3, (three[12], full[1])  # continued, not restarted
print("resume 2->1 and 2->3 continue the curve:", round(full[7], 4), round(one[7], 4), round(three[7], 4))
PY

# All-reduce DP (replicated state, deduplicated at save) -> ZeRO-1 with 3 ranks.
train ar 2 "${common[@]}" dist.mode=allreduce ckpt.every=6 steps=6
train ar_zero 3 resume="$SCRATCH/ar/ckpt" dist.mode=zero1 batch.global=6 steps=8
expect_contains "$SCRATCH/ar_zero.txt" "at step 6" "resumed the all-reduce checkpoint"

# Two tiers and resume=auto (a restart loop): every step goes to a fast dir, then to a persistent
# one; resume=auto takes the newest committed step, or starts fresh when there is none.
train tiers 2 "${common[@]}" steps=8 ckpt.every=4 ckpt.dir="$SCRATCH/fast" ckpt.persist_dir="$SCRATCH/disk"
[[ $(cat "$SCRATCH/fast/latest") == step_00000008 && $(cat "$SCRATCH/disk/latest") == step_00000008 ]] \
  || fail "both tiers should hold step 8"
"$LOOM" ckpt verify "$SCRATCH/disk" > /dev/null || fail "the persistent copy does not verify"
train auto 2 "${common[@]}" steps=10 ckpt.every=5 ckpt.dir="$SCRATCH/fast" \
  ckpt.persist_dir="$SCRATCH/disk" resume=auto
expect_contains "$SCRATCH/auto.txt" "resumed from $SCRATCH/fast/step_00000008" "resume=auto picks step 8"
train fresh 1 "${common[@]}" steps=2 ckpt.dir="$SCRATCH/empty" resume=auto
expect_contains "$SCRATCH/fresh.txt" "resume=auto: no checkpoint" "resume=auto without a checkpoint"

# Export to safetensors; Python's torch reads it and it equals the checkpoint's weights.
"$LOOM" ckpt export "$ck" --safetensors "$SCRATCH/w.safetensors" --select model. --strip model. \
  > "$SCRATCH/export.txt" || { cat "$SCRATCH/export.txt"; fail "export failed"; }
if /usr/bin/python3 -c 'import torch' 2> /dev/null; then
  tool=$(dirname "$0")/../tools/loom_ckpt_torch.py
  /usr/bin/python3 "$tool" load-safetensors "$SCRATCH/w.safetensors" "$SCRATCH/w.pt" > /dev/null
  /usr/bin/python3 "$tool" to-torch "$ck" "$SCRATCH/c.pt" --select model. --strip model. > /dev/null
  /usr/bin/python3 - "$SCRATCH" <<'PY'
import sys, torch
d = sys.argv[1]
w, c = torch.load(f"{d}/w.pt"), torch.load(f"{d}/c.pt")
assert w.keys() == c.keys() and len(w) > 10, (len(w), len(c))
assert all(torch.equal(w[k], c[k]) for k in w)
assert w["wte"].dtype == torch.float32
print("safetensors export loads in torch:", len(w), "tensors")
PY
  # torch state dict -> loom checkpoint -> identical to the export.
  /usr/bin/python3 "$tool" from-torch "$SCRATCH/c.pt" "$SCRATCH/from_torch" --step 12 > /dev/null
  "$LOOM" ckpt diff "$SCRATCH/from_torch" "$SCRATCH/w.safetensors" > /dev/null \
    || fail "from-torch checkpoint differs from the export"
fi
echo PASS
