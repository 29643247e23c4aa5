#!/usr/bin/env bash
# The trainer's other paths on real processes: gradient accumulation (2 micro-steps per step),
# plain all-reduce data parallelism, bf16 compute, the parallel block and sliding-window attention,
# a 3-rank world, and compressed gradients (SDP4Bit's int4 + Hadamard) with quantized weight
# differences, and int4 gradients through the parameter-server push_pull (compress.mode=ps). Each run must finish and lower the loss.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
run_case() {  # name nproc args...
  local name=$1 nproc=$2; shift 2
  "$LOOM" train --nproc "$nproc" "${TINY[@]}" steps=16 optim.warmup_steps=2 optim.lr=3e-3 \
    data.source=file data.path="$corpus" run_dir="$SCRATCH/$name" "$@" > "$SCRATCH/$name.txt" 2>&1 \
    || { cat "$SCRATCH/$name.txt"; fail "$name: loom train failed"; }
  /usr/bin/python3 - "$SCRATCH/$name/metrics.jsonl" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 16, (sys.argv[2], len(rows))
assert rows[-1]["loss"] < rows[0]["loss"] - 0.3, (sys.argv[2], rows[0]["loss"], rows[-1]["loss"])
print(sys.argv[2], "loss", round(rows[0]["loss"], 3), "->", round(rows[-1]["loss"], 3))
PY
}
run_case accumulation 2 batch.global=8 batch.micro=2
expect_contains "$SCRATCH/accumulation.txt" "2 ranks x 2 micro x 2 accum" "two micro-steps per step"
run_case allreduce_bf16 2 dist.mode=allreduce precision=bf16 batch.global=8 batch.micro=2
run_case zero1_bf16_accum 2 dist.mode=zero1 precision=bf16 batch.global=8 batch.micro=2
run_case parallel_window 2 model.parallel_block=true model.sliding_window=16
run_case three_ranks 3 batch.global=6 batch.micro=2 dist.bucket_mb=0.01
run_case compressed 2 compress.grad=int4:g128:hadamard compress.weights=qwd4:g2048
expect_contains "$SCRATCH/compressed.txt" "compress: grad int4:g128:stochastic:hadamard" "codecs named"
expect_contains "$SCRATCH/compressed.txt" "compressed traffic (this rank): gradients" "traffic reported"
run_case compressed_allreduce 2 dist.mode=allreduce compress.grad=int8:g64 compress.error_feedback=true
# SDP4Bit's two-level route (int8 inside nodes of 2 ranks, int4 across) on 4 processes; the
# small-tensor bypass threshold is printed (these ~17k-element buckets stay compressed).
run_case two_level 4 batch.global=8 compress.grad=int4:g128:hadamard compress.node_size=2 \
  dist.bucket_mb=0.1 compress.min_elements=16384
expect_contains "$SCRATCH/two_level.txt" "within nodes of 2 ranks (two-level)" "two-level named"
expect_contains "$SCRATCH/two_level.txt" "compressed traffic (this rank): gradients" "two-level traffic"
expect_contains "$SCRATCH/two_level.txt" "buckets under 16384 elements travel uncompressed" "bypass stated"
run_case powersgd 2 dist.mode=allreduce compress.grad=powersgd:r4 compress.warmup_steps=2
run_case push_pull 2 dist.mode=allreduce compress.mode=ps compress.grad=int4:g128 \
  compress.error_feedback=true dist.bucket_mb=0.05 compress.min_elements=0
expect_contains "$SCRATCH/push_pull.txt" "via parameter-server push_pull" "push_pull named"
expect_contains "$SCRATCH/push_pull.txt" "compressed traffic (this rank): gradients" "ps traffic"
run_case topk_ef 2 compress.grad=topk:0.1 compress.error_feedback=true
run_case qsgd_nesterov 2 compress.grad=qsgd:s16:g128 compress.nesterov=0.5
run_case planned 2 compress.plan=auto compress.warmup_steps=3 dist.bucket_mb=0.05
expect_contains "$SCRATCH/planned.txt" "compress.plan=auto after step 3" "the planner ran"
[ -f "$SCRATCH/planned/compress_plan.json" ] || fail "no compress_plan.json"
run_case replanned 2 compress.plan="$SCRATCH/planned/compress_plan.json" dist.bucket_mb=0.05
expect_contains "$SCRATCH/replanned.txt" "compress.plan: " "the plan file was applied"
set +e
"$LOOM" train --nproc 2 "${TINY[@]}" steps=2 data.source=file data.path="$corpus" \
  run_dir="$SCRATCH/wrong" compress.plan="$SCRATCH/planned/compress_plan.json" > "$SCRATCH/wrong.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a plan made for other buckets was accepted"
expect_contains "$SCRATCH/wrong.txt" "compression plan: has" "the bucket mismatch is named"
echo PASS
