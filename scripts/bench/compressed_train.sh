#!/usr/bin/env bash
# End-to-end training throughput with and without gradient compression over a shaped link:
# loom's trainer (uncompressed, SDP4Bit settings, PowerSGD, compress.plan=auto) against PyTorch
# DDP (no hook, fp16_compress_hook, powerSGD_hook) on the two-namespace testbed (netns_2host.sh:
# one rank per namespace, veth pair, `tc tbf` on both ends). Same model, data, batches and
# initial weights in every arm; arms interleaved within each repetition.
#
#   scripts/bench/compressed_train.sh [--rates "100mbit 1gbit unshaped"] [--steps 16] [--reps 1]
#       [--out FILE] [--loom build/src/loom/cli/loom] [-- loom train key=value ...]
#
# Output: a table (rate x arm: tokens/s median over steps > 3, final train loss) and
# bench/results/compressed_train_<commit>.json whose "summary" has, per rate, loom SDP4Bit / loom
# uncompressed and loom SDP4Bit / DDP (best hook) tokens/s.
# Needs root (network namespaces) and Debian's /usr/bin/python3 with torch; exits 77 without
# namespaces. The testbed removes its namespaces; this script removes its scratch directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
loom=${LOOM:-$root/build/src/loom/cli/loom}
python=/usr/bin/python3
rates="100mbit 1gbit unshaped"
steps=16
reps=1
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --loom) loom=$2; shift 2 ;;
    --) shift; break ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
extra=("$@")
[ -x "$loom" ] || { echo "no loom binary at $loom (build it, or pass --loom)" >&2; exit 2; }
commit=$(git -C "$root" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
[ -n "$out" ] || out=$root/bench/results/compressed_train_${commit}.json
work=$(mktemp -d /tmp/loom-ct-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
testbed=$root/scripts/testbed/netns_2host.sh

# One corpus, config and set of initial weights for every arm (written by a 1-step loom run);
# the corpus is what data.source=bible reads (the bible-kjv package).
PATH="$PATH:/usr/games" bible -f gen1:1-rev22:21 > "$work/corpus.txt"
common=(steps="$steps" log.every=1 eval.every=0 sample.tokens=0 threads=1 data.source=file
        data.path="$work/corpus.txt" "${extra[@]}")
"$loom" train --nproc 2 "${common[@]}" steps=1 run_dir="$work/init" \
  init.export="$work/init.safetensors" > "$work/init.log" 2>&1 \
  || { cat "$work/init.log"; exit 1; }
"$python" -c "import json,sys; c=json.load(open(sys.argv[1])); c['steps']=int(sys.argv[2]); \
json.dump(c, open(sys.argv[3], 'w'))" "$work/init/config.json" "$steps" "$work/ddp_config.json"

loom_arm() {  # name args...
  local name=$1; shift
  "$testbed" ${shape[@]+"${shape[@]}"} -- "$loom" train "${common[@]}" \
    run_dir="$work/$rate/$name-$rep" "$@" > "$work/$rate/$name-$rep.log" 2>&1
}
ddp_arm() {  # name hook
  local name=$1 hook=$2
  # The testbed gives each host LOOM_RANK; torch wants RANK/WORLD_SIZE/MASTER_*: host a is
  # 10.77.0.1 (netns_2host.sh's fixed addresses). Gloo must use the veth (the namespace's only
  # other interface), not whatever the hostname resolves to.
  "$testbed" ${shape[@]+"${shape[@]}"} -- env PYTHONPATH="$root/bench" bash -c \
    'export GLOO_SOCKET_IFNAME=$(ip -o link show | awk -F": " "\$2 != \"lo\" {print \$2}" \
       | cut -d@ -f1 | head -1)
     RANK=$LOOM_RANK WORLD_SIZE=$LOOM_WORLD_SIZE MASTER_ADDR=10.77.0.1 MASTER_PORT=29517 \
     exec "$0" "$@"' "$python" "$root/bench/ddp_peer.py" --config "$work/ddp_config.json" \
    --init "$work/init.safetensors" --data "$work/corpus.txt" --out "$work/$rate/$name-$rep" \
    --comm-hook "$hook" --hook-start 2 > "$work/$rate/$name-$rep.log" 2>&1
}

for rate in $rates; do
  shape=()
  [ "$rate" = unshaped ] || shape=(--rate "$rate")
  mkdir -p "$work/$rate"
  for rep in $(seq 1 "$reps"); do
    echo "== $rate, repetition $rep" >&2
    for arm in loom_fp32 ddp_none loom_sdp4bit ddp_fp16 loom_powersgd4 ddp_powersgd4 loom_planned; do
      set +e
      case $arm in
        loom_fp32) loom_arm "$arm" ;;
        loom_sdp4bit) loom_arm "$arm" compress.grad=int4:g128:hadamard compress.weights=qwd4:g2048 ;;
        loom_powersgd4) loom_arm "$arm" dist.mode=allreduce compress.grad=powersgd:r4 \
                          compress.warmup_steps=2 ;;
        ddp_none) ddp_arm "$arm" none ;;
        ddp_fp16) ddp_arm "$arm" fp16 ;;
        ddp_powersgd4) ddp_arm "$arm" powersgd:4 ;;
        loom_planned) loom_arm "$arm" compress.plan=auto compress.warmup_steps=3 ;;
      esac
      rc=$?
      set -e
      if [ "$rc" -ne 0 ]; then
        tail -20 "$work/$rate/$arm-$rep.log" >&2
        [ "$rc" -eq 77 ] && exit 77
        echo "FAILED: $arm at $rate (rc $rc)" >&2
        exit 1
      fi
      echo "   $arm done" >&2
    done
  done
done

"$python" - "$work" "$out" "$rates" "$reps" "$steps" "$commit" <<'PY'
import json, os, statistics, sys

work, out, rates, reps, steps, commit = sys.argv[1:7]
rates, reps = rates.split(), int(reps)
arms = ["loom_fp32", "loom_sdp4bit", "loom_powersgd4", "loom_planned", "ddp_none", "ddp_fp16",
        "ddp_powersgd4"]
results, summary = [], {}
print(f"\n# tokens/s (median over steps > 3, all repetitions), final train loss; {steps} steps, "
      "2 ranks, one per namespace")
print(f"{'rate':>9} {'arm':>16} {'tokens/s':>10} {'p10':>8} {'p90':>8} {'loss':>8}")
for rate in rates:
    tps = {}
    for arm in arms:
        vals, losses = [], []
        for rep in range(1, reps + 1):
            rows = [json.loads(l) for l in open(os.path.join(work, rate, f"{arm}-{rep}",
                                                             "metrics.jsonl"))]
            vals += [r["tokens_per_s"] for r in rows if r["step"] > 3]
            losses.append(rows[-1]["loss"])
        vals.sort()
        med = statistics.median(vals)
        tps[arm] = med
        q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]
        results.append({"rate": rate, "arm": arm, "tokens_per_s_median": med,
                        "tokens_per_s_p10": q(0.1), "tokens_per_s_p90": q(0.9),
                        "final_loss": statistics.mean(losses), "steps_measured": len(vals)})
        print(f"{rate:>9} {arm:>16} {med:10.0f} {q(0.1):8.0f} {q(0.9):8.0f} "
              f"{statistics.mean(losses):8.4f}")
    best_ddp = max(tps["ddp_none"], tps["ddp_fp16"], tps["ddp_powersgd4"])
    plans = []
    for rep in range(1, reps + 1):
        plan = json.load(open(os.path.join(work, rate, f"loom_planned-{rep}", "compress_plan.json")))
        plans.append(sum(t["codec"] != "none" for t in plan["tensors"]))
    n_buckets = len(plan["tensors"])
    summary[rate] = {"sdp4bit_over_loom_fp32": tps["loom_sdp4bit"] / tps["loom_fp32"],
                     "powersgd4_over_loom_fp32": tps["loom_powersgd4"] / tps["loom_fp32"],
                     "loom_sdp4bit_over_best_ddp": tps["loom_sdp4bit"] / best_ddp,
                     "loom_fp32_over_ddp_none": tps["loom_fp32"] / tps["ddp_none"],
                     "planned_over_loom_fp32": tps["loom_planned"] / tps["loom_fp32"],
                     "planner_compressed_buckets": plans, "buckets": n_buckets}
    print(f"{rate:>9} SDP4Bit/loom fp32 {summary[rate]['sdp4bit_over_loom_fp32']:.2f}x, "
          f"SDP4Bit/best DDP {summary[rate]['loom_sdp4bit_over_best_ddp']:.2f}x, planner "
          f"compressed {plans} of {n_buckets} buckets")
doc = {"bench": "compressed_train", "config": {"rates": rates, "reps": reps, "steps": int(steps),
       "commit": commit, "testbed": "scripts/testbed/netns_2host.sh (tc tbf both ends)"},
       "summary": summary, "results": results}
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(out + ".tmp", out)
print("wrote", out)
PY
