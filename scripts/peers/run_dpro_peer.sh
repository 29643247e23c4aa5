#!/usr/bin/env bash
# dPRO's own replayer as a peer of loom's (issue 6), on the traced base runs of
# `loom bench replay --quick` (two ranks in network namespaces, tc tbf 200 Mbit; needs root):
# for every traced base run (the profile and one per repetition) it exports the global DFG
# loom replays (`loom trace export-dfg --split 256KiB`, the bench's own model options), replays it
# with dPRO (scripts/peers/dpro_replay.py, backends NCCL and default), does the same for the
# graph fitted with κ fixed to 1 (a model both replayers can express), and writes one JSON with
# measured vs loom vs dPRO vs the analytical baselines.
#
#   sudo scripts/peers/run_dpro_peer.sh /path/to/dpro-checkout OUT.json [WORK_DIR]
#   env: LOOM (default build/src/loom/cli/loom), REPS (default 3), REUSE=1 (keep WORK_DIR's bench
#   run and only redo the exports and dPRO replays)
#
# The dPRO checkout is the user's; nothing is downloaded. Needs Debian's python3-networkx,
# python3-ujson, python3-tqdm, python3-xlsxwriter, python3-matplotlib, python3-intervaltree.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 DPRO_CHECKOUT OUT.json [WORK_DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dpro=$1
out=$2
work=${3:-$(mktemp -d /tmp/dpro_peer.XXXXXX)}
loom=${LOOM:-$repo/build/src/loom/cli/loom}
reps=${REPS:-3}
peer=$here/dpro_replay.py
[[ -f $dpro/dpro/replay.py ]] || { echo "$0: '$dpro' is not a dPRO checkout" >&2; exit 2; }
[[ -x $loom ]] || { echo "$0: loom binary '$loom' not found (set LOOM)" >&2; exit 2; }
mkdir -p "$work"
bench_cmd=("$loom" bench replay --quick --reps "$reps" --dir "$work/br" --keep
           --json "$work/br.json")
if [[ ${REUSE:-0} == 1 && -f $work/br.json ]]; then
  echo "# reusing $work/br.json (REUSE=1)"
else
  echo "# ${bench_cmd[*]}"
  nice -n -5 "${bench_cmd[@]}" > "$work/br.log" 2>&1 || { tail -20 "$work/br.log"; exit 1; }
fi
runs=()
for t in "$work"/br/profile/trace "$work"/br/rep*-c0/trace; do
  [[ -f $t/rank0.trace.json ]] || continue
  name=$(basename "$(dirname "$t")")
  runs+=("$name")
  "$loom" trace export-dfg "$t" "$work/$name.dfg.json" --split 256KiB > "$work/$name.export.txt"
  "$loom" trace export-dfg "$t" "$work/$name.k1.dfg.json" --split 256KiB --kappa 1 \
    > "$work/$name.k1.export.txt"
  for g in "$name" "$name.k1"; do
    for backend in NCCL default; do
      /usr/bin/python3 "$peer" "$dpro" "$work/$g.dfg.json" --backend "$backend" \
        --json "$work/$g.dpro_$backend.json" > "$work/$g.dpro_$backend.txt"
    done
  done
  echo "# $name: $(head -1 "$work/$name.dpro_NCCL.txt")"
done
[[ ${#runs[@]} -gt 0 ]] || { echo "$0: no traced base runs in $work/br" >&2; exit 1; }
/usr/bin/python3 - "$work" "$out" "${bench_cmd[*]}" "${runs[@]}" <<'PY'
import json, statistics, sys, time
work, out, bench_cmd, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
br = json.load(open(f"{work}/br.json"))
def load(p):
    return json.load(open(p))
rows = []
for name in runs:
    row = {"run": name}
    for tag, g in (("fitted_kappa", name), ("kappa_1", name + ".k1")):
        nccl = load(f"{work}/{g}.dpro_NCCL.json")
        dflt = load(f"{work}/{g}.dpro_default.json")
        meas = nccl["measured_iter_ms"]
        err = lambda x: (x - meas) / meas
        row[tag] = {
            "measured_ms": meas,
            "loom_replay_ms": nccl["loom_predicted_iter_ms"],
            "dpro_nccl_ms": nccl["dpro_predicted_iter_ms"],
            "dpro_default_ms": dflt["dpro_predicted_iter_ms"],
            "baseline_sum_ms": nccl["baseline_sum_ms"],
            "baseline_overlap_ms": nccl["baseline_overlap_ms"],
            "error": {k: err(nccl[v]) for k, v in (
                ("loom_replay", "loom_predicted_iter_ms"), ("dpro_nccl", "dpro_predicted_iter_ms"),
                ("baseline_sum", "baseline_sum_ms"), ("baseline_overlap", "baseline_overlap_ms"))}
                | {"dpro_default": err(dflt["dpro_predicted_iter_ms"])},
            "dpro_vs_loom": nccl["dpro_vs_loom"],
            "kappa": nccl["conversion"]["kappa"],
            "conversion": nccl["conversion"],
            "node_end_abs_diff_vs_loom_us": nccl["node_end_abs_diff_vs_loom_us"],
            "node_start_abs_diff_vs_loom_us": nccl["node_start_abs_diff_vs_loom_us"],
            "dpro_replay_wall_s": nccl["dpro_replay_wall_s"],
        }
    rows.append(row)
summary = {}
for tag in ("fitted_kappa", "kappa_1"):
    s = {}
    for k in ("loom_replay", "dpro_nccl", "dpro_default", "baseline_sum", "baseline_overlap"):
        e = [abs(r[tag]["error"][k]) for r in rows]
        s[k] = {"median_abs_error": statistics.median(e), "max_abs_error": max(e)}
    s["dpro_vs_loom_median_abs"] = statistics.median(abs(r[tag]["dpro_vs_loom"]) for r in rows)
    summary[tag] = s
first = load(f"{work}/{runs[0]}.dpro_NCCL.json")
doc = {"bench": "dpro_peer", "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "commands": {
           "bench": bench_cmd,
           "export": "loom trace export-dfg <run>/trace <run>.dfg.json --split 256KiB [--kappa 1]",
           "dpro": "/usr/bin/python3 scripts/peers/dpro_replay.py <dpro> <run>.dfg.json "
                   "--backend NCCL|default"},
       "dpro_commit": first["dpro_commit"], "dpro_shims": first["shims"], "python": first["python"],
       "bench_replay_summary": br.get("summary", {}),
       "bench_replay_base_runs": br.get("results", {}).get("base_runs", []),
       "host": br.get("host", {}),
       "runs": rows, "summary": summary}
json.dump(doc, open(out, "w"), indent=1)
print(f"wrote {out}")
for tag in summary:
    print(tag, json.dumps(summary[tag]))
PY
