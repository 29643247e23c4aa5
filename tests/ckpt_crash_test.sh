#!/usr/bin/env bash
# Crash consistency: a 2-rank training run that checkpoints every step (~10 MB each, in the
# background) is killed with SIGKILL at random moments, again and again, into the same checkpoint
# directory. After every kill, `latest` (once it exists) must name a committed step whose
# checksums verify; uncommitted step_*.tmp directories may remain but are never `latest`, and the
# next run removes them. Finally a run resumes from whatever survived.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
ck=$SCRATCH/ck
args=(model.n_layers=2 model.d_model=192 model.n_heads=2 model.context_length=64 batch.global=4
      batch.micro=2 sample.tokens=0 log.every=1 precision=fp32 eval.every=0 steps=100000
      data.source=file data.path="$corpus" ckpt.every=1 ckpt.keep=2 ckpt.dir="$ck")
RANDOM=7  # reproducible delays
shopt -s nullglob
verified=0
torn=0  # kills that interrupted a save (an uncommitted .tmp was left)
for i in $(seq 1 8); do
  # TMPDIR: the SIGKILLed launcher cannot remove its rendezvous store; keep it in $SCRATCH.
  TMPDIR=$SCRATCH setsid "$LOOM" train --nproc 2 "${args[@]}" run_dir="$SCRATCH/run$i" \
    > "$SCRATCH/run$i.txt" 2>&1 &
  pid=$!
  # Kill at a random moment once training runs: start-up (loading libtorch, measuring the GEMM
  # peak with an empty cache) takes seconds on a loaded machine and must not eat the window.
  for _ in $(seq 1 300); do
    grep -qE 'step +[0-9]+/' "$SCRATCH/run$i.txt" 2> /dev/null && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  sleep "$(( RANDOM % 3 )).$(( RANDOM % 10 ))"
  kill -KILL -- "-$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  sleep 0.2
  if [[ -f $ck/latest ]]; then
    step=$(cat "$ck/latest")
    [[ -f $ck/$step/COMMITTED ]] || fail "kill $i: latest names $step, which is not committed"
    "$LOOM" ckpt verify "$ck" > "$SCRATCH/verify$i.txt" 2>&1 \
      || { cat "$SCRATCH/verify$i.txt"; fail "kill $i: latest checkpoint $step does not verify"; }
    verified=$((verified + 1))
  fi
  for d in "$ck"/step_*; do  # every committed step is whole
    if [[ $d == *.tmp ]]; then torn=$((torn + 1)); continue; fi
    [[ -f $d/COMMITTED && -f $d/.metadata.json ]] || fail "kill $i: $d lacks COMMITTED or metadata"
  done
done
(( verified >= 4 )) || fail "only $verified of 8 kills left a checkpoint behind (runs too short?)"
step=$(cat "$ck/latest")
"$LOOM" train --nproc 2 "${args[@]}" resume="$ck" steps=$(( 10#${step#step_} + 2 )) \
  run_dir="$SCRATCH/final" > "$SCRATCH/final.txt" 2>&1 || { cat "$SCRATCH/final.txt"; fail "resume failed"; }
expect_contains "$SCRATCH/final.txt" "resumed from $ck/$step" "resume from the surviving step"
if ls "$ck" | grep -q '\.tmp$'; then
  ls -la "$ck"; grep -E 'ckpt|removing|prun|WARN' "$SCRATCH/final.txt" | tail -20
  fail "the resumed run should have removed leftover .tmp directories"
fi
echo "PASS ($verified kills checked, $torn interrupted a save, resumed from $step)"
