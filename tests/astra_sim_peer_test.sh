#!/usr/bin/env bash
# ASTRA-sim's analytical backend on loom's Chakra export (scripts/peers/astra_sim_replay.sh), when
# LOOM_ASTRA_SIM names a user-built AstraSim_Analytical_Congestion_Unaware binary (exit 77
# otherwise: ASTRA-sim is built by the user outside this repository, never fetched here).
# A traced 2-rank TINY run is simulated twice:
# 1. with loom's fitted link: every NPU reports "sys[r] finished" (the exports before the
#    ASTRA-sim fixes aborted on pg_name "default" or stalled without finishing) and the
#    simulated iteration is positive;
# 2. with a 1 ms latency and a fast link: collectives of one group are chained and each needs at
#    least one message, so an iteration takes at least (collectives per step) x 1 ms; latency
#    written in the wrong unit (µs for ns) would give ~1000x less.
source "$(dirname "$0")/lib.sh"
[[ -n ${LOOM_ASTRA_SIM:-} ]] \
  || { echo "SKIP: set LOOM_ASTRA_SIM to an ASTRA-sim analytical (congestion-unaware) binary"; exit 77; }
[[ -x $LOOM_ASTRA_SIM ]] || fail "LOOM_ASTRA_SIM='$LOOM_ASTRA_SIM' is not executable"
peer=$(cd "$(dirname "$0")/.." && pwd)/scripts/peers/astra_sim_replay.sh
corpus=$(make_corpus)
run=$SCRATCH/run
"$LOOM" train --nproc 2 "${TINY[@]}" steps=8 eval.every=0 data.source=file data.path="$corpus" \
  run_dir="$run" trace.steps=2-7 > "$SCRATCH/train.txt" 2>&1 \
  || { cat "$SCRATCH/train.txt"; fail "loom train exited non-zero"; }

"$peer" --astra "$LOOM_ASTRA_SIM" --trace-dir "$run/trace" --loom "$LOOM" --keep "$SCRATCH/fit" \
  --json "$SCRATCH/fit.json" > "$SCRATCH/fit.txt" 2>&1 \
  || { cat "$SCRATCH/fit.txt"; fail "astra_sim_replay.sh failed with loom's fitted link"; }
expect_contains "$SCRATCH/fit.txt" "ASTRA-sim iteration:" "the simulated iteration is printed"
"$peer" --astra "$LOOM_ASTRA_SIM" --trace-dir "$run/trace" --loom "$LOOM" --alpha-us 1000 \
  --gbps 1000 --keep "$SCRATCH/slow" --json "$SCRATCH/slow.json" > "$SCRATCH/slow.txt" 2>&1 \
  || { cat "$SCRATCH/slow.txt"; fail "astra_sim_replay.sh failed with a 1 ms link latency"; }
expect_contains "$SCRATCH/slow/network.yml" "latency: \[ 1000000.0 \]" "latency is written in ns"

/usr/bin/python3 - "$SCRATCH/fit.json" "$SCRATCH/slow.json" "$SCRATCH/fit/trace/rank0.trace.json" <<'PY'
import json, math, sys
fit, slow = (json.load(open(p)) for p in sys.argv[1:3])
for d in (fit, slow):
    assert sorted(d["astra_sim"]["per_npu"]) == ["0", "1"], d["astra_sim"]["per_npu"]
    assert all(v["finish_ns"] > 0 for v in d["astra_sim"]["per_npu"].values()), d
    assert d["npus"] == 2 and len(d["steps"]) >= 3, d
it = fit["astra_sim"]["iteration_ms"]
assert math.isfinite(it) and it > 0, fit
assert fit["measured_ms"] > 0 and fit["loom_replay_ms"] > 0, fit
events = json.load(open(sys.argv[3]))["traceEvents"]
colls = [e for e in events if e.get("ph") == "X" and e["args"].get("loom_category") == "collective"
         and e["args"].get("step") in fit["steps"]]
per_step = len(colls) / len(fit["steps"])
assert per_step >= 1, "no collectives in the simulated steps"
floor_ms = per_step * 1.0
assert slow["astra_sim"]["iteration_ms"] >= floor_ms, (slow["astra_sim"]["iteration_ms"], floor_ms)
print(f"ASTRA-sim {it:.3f} ms vs measured {fit['measured_ms']:.3f} ms, loom {fit['loom_replay_ms']:.3f} ms; "
      f"1 ms latency: {slow['astra_sim']['iteration_ms']:.3f} ms >= {floor_ms:.1f} ms")
PY
echo PASS
