#!/usr/bin/env bash
# ASTRA-sim's analytical network backend (congestion-unaware) as a peer of `loom trace replay`
# (issue 6): exports a traced run as Chakra ETs, simulates them with a user-built ASTRA-sim on a
# ring of N NPUs whose link is the α/β loom fitted from the same trace, and prints ASTRA-sim's
# simulated iteration time next to the measured one and loom's replay prediction.
#
#   scripts/peers/astra_sim_replay.sh --astra PATH/AstraSim_Analytical_Congestion_Unaware \
#       --trace-dir RUN/trace [--loom build/src/loom/cli/loom] [--steps A-B] \
#       [--alpha-us A] [--gbps B] [--splits 1] [--json OUT] [--keep DIR]
#
#   --astra     ASTRA-sim binary built by the user outside this repository (this script never
#               downloads or builds it; see src/loom/trace/README.md, "ASTRA-sim peer")
#   --trace-dir per-rank loom/Kineto traces of one run (rank<r>.trace.json)
#   --steps     traced steps to simulate (default: the steps `loom trace replay` used, i.e. the
#               window without its warm-up step); ASTRA-sim's time is divided by their count
#   --alpha-us, --gbps  link latency (µs) and bandwidth (GB/s); default: loom's fit of the trace
#   --splits    ASTRA-sim's preferred-dataset-splits (chunks per collective; default 1, as loom's
#               trainer sends one segment per ring step at these sizes)
#   --keep DIR  keep the ETs, configs and ASTRA-sim's log in DIR (default: a removed temp dir)
#
# ASTRA-sim replays each compute node's traced duration (roofline off), runs the collectives
# with its own ring algorithm over the α/β link, and ignores start times: gaps between nodes,
# loom's fitted compute slowdown κ and the measured inter-op gaps are not part of its model.
# Needs python3 (JSON), no root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
astra="" trace_dir="" loom="$root/build/src/loom/cli/loom" steps="" alpha_us="" gbps=""
splits=1 json_out="" keep=""
usage() {
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --astra) astra=$2; shift 2 ;;
    --trace-dir) trace_dir=$2; shift 2 ;;
    --loom) loom=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --alpha-us) alpha_us=$2; shift 2 ;;
    --gbps) gbps=$2; shift 2 ;;
    --splits) splits=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "astra_sim_replay: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$astra" ] && [ -n "$trace_dir" ] || usage
[ -x "$astra" ] || { echo "astra_sim_replay: ASTRA-sim binary '$astra' is not executable" >&2; exit 2; }
[ -d "$trace_dir" ] || { echo "astra_sim_replay: no trace directory '$trace_dir'" >&2; exit 2; }
[ -x "$loom" ] || { echo "astra_sim_replay: loom binary '$loom' is not executable" >&2; exit 2; }
trace_dir=$(cd "$trace_dir" && pwd)
astra=$(cd "$(dirname "$astra")" && pwd)/$(basename "$astra")

if [ -n "$keep" ]; then
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d /tmp/loom-astra-sim.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi

# 1. loom's own replay of the trace: measured step time, prediction, fitted link, steps used.
"$loom" trace replay "$trace_dir" --json "$work/loom_replay.json" > "$work/loom_replay.txt" 2>&1 \
  || { cat "$work/loom_replay.txt" >&2; echo "astra_sim_replay: loom trace replay failed" >&2; exit 1; }

# 2. The steps to simulate, selected from the trace files (ASTRA-sim simulates the whole ET).
mkdir -p "$work/trace" "$work/et"
python3 - "$trace_dir" "$work/trace" "$work/loom_replay.json" "$steps" > "$work/steps.txt" <<'PY'
import glob, json, os, sys
src, dst, replay, spec = sys.argv[1:5]
if spec:
    a, _, b = spec.partition("-")
    lo, hi = int(a), int(b or a)
    keep = None  # every traced step in [lo, hi]
else:
    keep = set(json.load(open(replay))["model"]["steps"])
    lo, hi = min(keep), max(keep)
files = sorted(glob.glob(os.path.join(src, "*.json")))
if not files:
    sys.exit(f"astra_sim_replay: no *.json traces in {src}")
seen = set()
for f in files:
    d = json.load(open(f))
    events = d["traceEvents"] if isinstance(d, dict) else d
    out = []
    for e in events:
        s = e.get("args", {}).get("step") if e.get("ph") == "X" else None
        if s is None and e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"):
            s = int(e["name"].split("#")[1])
        if s is not None and (s < lo or s > hi or (keep is not None and s not in keep)):
            continue
        if s is not None:
            seen.add(s)
        out.append(e)
    if isinstance(d, dict):
        d["traceEvents"] = out
    else:
        d = out
    json.dump(d, open(os.path.join(dst, os.path.basename(f)), "w"))
if not seen:
    sys.exit(f"astra_sim_replay: no traced step in {lo}-{hi}")
print(" ".join(str(s) for s in sorted(seen)))
PY
read -r -a step_list < "$work/steps.txt"

# 3. Chakra ETs, one per rank.
"$loom" trace export-chakra "$work/trace" "$work/et/run" > "$work/export.txt" 2>&1 \
  || { cat "$work/export.txt" >&2; echo "astra_sim_replay: loom trace export-chakra failed" >&2; exit 1; }
npus=$(grep -c '\.et$' "$work/export.txt")

# 4. ASTRA-sim inputs: a ring of N NPUs with loom's α/β, ring collectives, no memory model.
# When the shared fit could not identify β (latency-bound transfers), the per-egress fits are
# averaged (mean α, mean ns/B); --alpha-us/--gbps override either.
read -r fit_alpha fit_gbps fit_source measured_ms loom_ms < <(python3 - "$work/loom_replay.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
link, src = d["model"]["link"], "shared"
if not link.get("beta_identified", True) or link["gbps"] <= 0:
    own = [l for l in d["model"].get("rank_links", []) if l["gbps"] > 0]
    if own:
        inv = sum(1 / l["gbps"] for l in own) / len(own)
        link, src = {"alpha_us": sum(l["alpha_us"] for l in own) / len(own), "gbps": 1 / inv}, "egress_mean"
    else:
        link, src = {"alpha_us": link["alpha_us"], "gbps": 0}, "none"
print(link["alpha_us"], link["gbps"], src, d["measured_ms"], d["predicted_ms"])
PY
)
if [ -z "$gbps" ] && [ "$fit_source" = none ]; then
  echo "astra_sim_replay: loom could not fit the link bandwidth of this trace; pass --gbps" >&2
  exit 1
fi
[ "$fit_source" = egress_mean ] && [ -z "$gbps$alpha_us" ] \
  && echo "note: shared link fit had no bandwidth; using the mean of the per-egress fits" >&2
[ -n "$alpha_us" ] && [ -n "$gbps" ] && fit_source=user
alpha_us=${alpha_us:-$fit_alpha}
gbps=${gbps:-$fit_gbps}
latency_ns=$(python3 -c "print(float('$alpha_us') * 1000)")
cat > "$work/network.yml" <<EOF
topology: [ Ring ]
npus_count: [ $npus ]
bandwidth: [ $gbps ]  # GB/s (loom's fitted β)
latency: [ $latency_ns ]  # ns (loom's fitted α)
EOF
cat > "$work/system.json" <<EOF
{
  "scheduling-policy": "FIFO",
  "endpoint-delay": 10,
  "active-chunks-per-dimension": 1,
  "preferred-dataset-splits": $splits,
  "all-reduce-implementation": ["ring"],
  "all-gather-implementation": ["ring"],
  "reduce-scatter-implementation": ["ring"],
  "all-to-all-implementation": ["ring"],
  "collective-optimization": "baseline",
  "local-mem-bw": 1600,
  "boost-mode": 0,
  "roofline-enabled": 0
}
EOF
echo '{ "memory-type": "NO_MEMORY_EXPANSION" }' > "$work/remote_memory.json"

# 5. Simulate (ASTRA-sim writes log/ into its working directory).
( cd "$work" && "$astra" --workload-configuration="$work/et/run" \
    --comm-group-configuration=empty --system-configuration="$work/system.json" \
    --remote-memory-configuration="$work/remote_memory.json" \
    --network-configuration="$work/network.yml" ) > "$work/astra_sim.log" 2>&1 \
  || { tail -20 "$work/astra_sim.log" >&2; echo "astra_sim_replay: ASTRA-sim failed (log above)" >&2; exit 1; }

# 6. "sys[r] finished, C cycles, exposed communication E cycles." (1 cycle = 1 ns).
python3 - "$work/astra_sim.log" "$npus" "${#step_list[@]}" "$measured_ms" "$loom_ms" \
  "$alpha_us" "$gbps" "$splits" "${step_list[*]}" "$json_out" "$trace_dir" "$fit_source" <<'PY'
import json, re, sys
log, npus, nsteps, measured, loom_ms, alpha, gbps, splits, steps, out, tdir, src = sys.argv[1:13]
npus, nsteps = int(npus), int(nsteps)
fin = {}
for line in open(log):
    m = re.search(r"sys\[(\d+)\] finished, (\d+) cycles, exposed communication (\d+) cycles", line)
    if m:
        fin[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
if len(fin) != npus:
    sys.exit(f"astra_sim_replay: ASTRA-sim reported {len(fin)} of {npus} NPUs finished; see {log}")
total = max(c for c, _ in fin.values())
exposed = max(e for _, e in fin.values())
sim_ms = total / 1e6 / nsteps
measured, loom_ms = float(measured), float(loom_ms)
print(f"steps simulated: {steps} ({nsteps}); link alpha {float(alpha):.1f} us, beta {float(gbps):.4f} GB/s, {npus} NPUs (ring)")
print(f"ASTRA-sim total: {total / 1e6:.3f} ms; exposed communication {exposed / 1e6:.3f} ms")
print(f"measured iteration:        {measured:.3f} ms (loom trace replay: median over its steps)")
print(f"loom replay prediction:    {loom_ms:.3f} ms ({100 * (loom_ms - measured) / measured:+.1f} %)")
print(f"ASTRA-sim iteration:       {sim_ms:.3f} ms ({100 * (sim_ms - measured) / measured:+.1f} %)")
if out:
    doc = {"trace_dir": tdir, "steps": [int(s) for s in steps.split()], "npus": npus,
           "link": {"alpha_us": float(alpha), "gbps": float(gbps), "loom_fit": src}, "preferred_dataset_splits": int(splits),
           "astra_sim": {"total_ns": total, "exposed_comm_ns": exposed, "iteration_ms": sim_ms,
                         "error": (sim_ms - measured) / measured,
                         "per_npu": {str(k): {"finish_ns": v[0], "exposed_comm_ns": v[1]} for k, v in sorted(fin.items())}},
           "measured_ms": measured, "loom_replay_ms": loom_ms, "loom_replay_error": (loom_ms - measured) / measured}
    json.dump(doc, open(out, "w"), indent=2)
    print(f"wrote {out}")
PY
