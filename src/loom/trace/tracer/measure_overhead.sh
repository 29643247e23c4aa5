#!/usr/bin/env bash
# Tracer overhead, interleaved at step granularity: trace.every=2 traces odd steps only, so traced
# and untraced steps alternate in one run under the same machine load. Control: no tracing.
set -euo pipefail
LOOM=${LOOM:-build/src/loom/cli/loom}
D=${OUT_DIR:-/tmp/tracer_overhead}; mkdir -p $D
[ -f $D/corpus.txt ] || for i in $(seq 1 400); do echo "And it came to pass in the day $i that the people went out to the field and sang."; done > $D/corpus.txt
export LOOM_CACHE_DIR=$D/cache OPENBLAS_NUM_THREADS=1
TINY=(model.n_layers=1 model.d_model=64 model.n_heads=2 model.context_length=64 batch.global=4 batch.micro=2 sample.tokens=16 log.every=1 precision=fp32)
REPS=${REPS:-5}
for rep in $(seq 1 $REPS); do
  for mode in alt ctl; do
    extra=(); [ $mode = alt ] && extra=(trace.steps=1-400 trace.every=2)
    rm -rf $D/run-$mode-$rep
    "$LOOM" train --nproc 2 "${TINY[@]}" steps=400 eval.every=0 data.source=file data.path=$D/corpus.txt \
      run_dir=$D/run-$mode-$rep "${extra[@]}" > $D/out-$mode-$rep.txt 2>&1
  done
done
/usr/bin/python3 - $D $REPS <<'PY'
import json, sys, statistics as st
d, reps = sys.argv[1], int(sys.argv[2])
for mode in ("alt", "ctl"):
    ratios = []
    for r in range(1, reps + 1):
        rows = [json.loads(l) for l in open(f"{d}/run-{mode}-{r}/metrics.jsonl")][10:]
        ms = {x["step"]: 256 / x["tokens_per_s"] * 1e3 for x in rows}
        odd = st.median(v for k, v in ms.items() if k % 2 == 1)   # traced in "alt"
        even = st.median(v for k, v in ms.items() if k % 2 == 0)
        ratios.append(odd / even)
        print(mode, r, f"odd {odd:.3f} ms even {even:.3f} ms ratio {odd/even:.4f}")
    print(mode, "median odd/even ratio over runs:", f"{st.median(ratios):.4f}", [round(x, 4) for x in ratios])
PY
