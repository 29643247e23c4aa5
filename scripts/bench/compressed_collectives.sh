#!/usr/bin/env bash
# Compressed vs fp32 collectives over a real (shaped) link: runs `loom bench collectives
# --compress ...` on the two-namespace testbed (scripts/testbed/netns_2host.sh: one rank per
# namespace, veth pair, `tc tbf` on both ends) at each link rate, merges the per-rate JSONs into one
# document and prints a table.
#
#   scripts/bench/compressed_collectives.sh [--reps 3] [--rates "100mbit 1gbit 2500mbit unshaped"]
#       [--compress int4:g128:hadamard,int8:g128] [--maxbytes 64M] [--mpi auto|on|off]
#       [--out FILE] [--loom build/src/loom/cli/loom] [--resume DIR]
#
# Output: bench/results/compressed_collectives_<commit>.json (or --out) with "summary":
#   int4_allreduce_speedup_1gbit  best Gloo fp32 all-reduce time / int4 all-reduce time, 64 MiB
#   crossover_gbit                link rate below which int4 all-reduce beats Gloo fp32 at 64 MiB:
#                                 interpolated (log-log) between two measured rates where the
#                                 winner changes, else from the model t_fp32 = B/R,
#                                 t_int4 = t_compute + B_c/R with t_compute = the unshaped int4
#                                 time (crossover_method says which; both are in the summary).
#                                 Cross-check when only unshaped loses: crossover_gbit_interpolated_
#                                 to_unshaped treats unshaped as a rate = what fp32 reached there.
# Iterations per rate are scaled so a run takes minutes (64 MiB fp32 at 100 Mbit/s is ~5 s per
# call): -n 1 at 100mbit, 2 at 1gbit, 5 above. --maxbytes 4M makes a quick smoke run.
# OpenMPI (--mpi auto: when mpirun exists and loom was built with MPI) runs on the same link:
# scripts/testbed/netns_mpirun.sh starts the ranks with mpirun across the two namespaces
# (`ip netns exec` as mpirun's launch agent instead of ssh), btl tcp on the veth.
# A rate whose run fails (e.g. a hung collective: LOOM_COMM_TIMEOUT_MS is 60 s here) is retried
# once; the JSON counts retries. Needs root (network namespaces); exits 77 where they are missing.
# The testbed removes its namespaces and store; this script removes its scratch directory, except
# after a failure, when it keeps the finished rates' JSONs there for --resume DIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
loom=${LOOM:-$root/build/src/loom/cli/loom}
reps=3
rates="100mbit 1gbit 2500mbit unshaped"
specs=int4:g128:hadamard,int8:g128
maxbytes=64M
mpi=auto
out=""
resume=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --compress) specs=$2; shift 2 ;;
    --maxbytes) maxbytes=$2; shift 2 ;;
    --mpi) mpi=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --loom) loom=$2; shift 2 ;;
    --resume) resume=$2; shift 2 ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
done
[ -x "$loom" ] || { echo "no loom binary at $loom (build it, or pass --loom)" >&2; exit 2; }
launch=()
if [ "$mpi" != off ]; then
  if command -v mpirun > /dev/null && grep -q "MPI_Init" "$loom"; then
    launch=("$root/scripts/testbed/netns_mpirun.sh")
  elif [ "$mpi" = on ]; then
    echo "--mpi on needs mpirun and a loom built with MPI" >&2; exit 2
  fi
fi
commit=$(git -C "$root" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
[ -n "$out" ] || out=$root/bench/results/compressed_collectives_${commit}.json
work=${resume:-$(mktemp -d /tmp/loom-cc-sweep.XXXXXX)}
trap 'rm -rf "$work"' EXIT
keep_work() { trap - EXIT; echo "finished rates kept in $work: rerun with --resume $work" >&2; }
export LOOM_COMM_TIMEOUT_MS=${LOOM_COMM_TIMEOUT_MS:-60000}

for rate in $rates; do
  shape=()
  case "$rate" in
    unshaped) ;;
    *) shape=(--rate "$rate") ;;
  esac
  case "$rate" in
    100mbit) iters=(-n 1 -w 1) ;;
    1gbit) iters=(-n 2 -w 1) ;;
    *) iters=(-n 5 -w 2) ;;
  esac
  if [ -s "$work/$rate.json" ]; then echo "== $rate: done in $work" >&2; continue; fi
  echo "== $rate: loom bench collectives ${iters[*]} --reps $reps --compress $specs" >&2
  for attempt in 1 2; do
    set +e
    "$root/scripts/testbed/netns_2host.sh" "${shape[@]}" -- "${launch[@]}" "$loom" bench \
      collectives --ops allreduce,reduce_scatter -b 1M -e "$maxbytes" -f 4 "${iters[@]}" \
      --reps "$reps" --compress "$specs" --json "$work/$rate.json" > "$work/$rate.log" 2>&1
    rc=$?
    set -e
    [ "$rc" -eq 0 ] && break
    cat "$work/$rate.log" >&2
    [ "$rc" -eq 77 ] && exit 77
    echo "FAILED at $rate (rc $rc, attempt $attempt)" >&2
    echo "$rate" >> "$work/retries"
    [ "$attempt" -eq 2 ] && { keep_work; exit 1; }
  done
  grep -E "^\[host a\] +(bytes|[0-9]+ |cpu|.*on the wire)" "$work/$rate.log" >&2 || true
done

/usr/bin/python3 - "$work" "$out" "$rates" "$specs" "$reps" "$maxbytes" <<'PY'
import json, math, os, sys

work, out, rates, specs, reps, maxbytes = sys.argv[1:7]
rates = rates.split()
INT4 = "loom_" + next((s for s in specs.split(",") if s.startswith("int4")), "int4:g128:hadamard")

def gbit(rate):  # tc units: SI, bits per second
    if rate == "unshaped":
        return None
    for suffix, scale in (("gbit", 1.0), ("mbit", 1e-3), ("kbit", 1e-6)):
        if rate.endswith(suffix):
            return float(rate[: -len(suffix)]) * scale
    raise SystemExit(f"cannot read the rate '{rate}'")

runs, rows = {}, []
for rate in rates:
    doc = json.load(open(os.path.join(work, rate + ".json")))
    retries = open(os.path.join(work, "retries")).read().split() if os.path.exists(
        os.path.join(work, "retries")) else []
    runs[rate] = {"link_gbit": gbit(rate), "config": doc["config"], "summary": doc["summary"],
                  "retries": retries.count(rate)}
    host = doc["host"]
    for row in doc["results"]:
        rows.append(dict(row, rate=rate, link_gbit=gbit(rate)))

def row_at(rate, op, nbytes=None):
    cands = [r for r in rows if r["rate"] == rate and r["op"] == op]
    if nbytes is None:
        nbytes = max(r["bytes"] for r in cands)
    return next(r for r in cands if r["bytes"] == nbytes)

def gloo_best(row):
    return min((a["time_us_median"], n) for n, a in row["arms"].items() if n.startswith("gloo_"))

summary = {"compressed_arm": INT4, "bytes": None}
speed = {}  # rate -> Gloo best / int4 at 64 MiB all-reduce
for rate in rates:
    r = row_at(rate, "allreduce")
    summary["bytes"] = r["bytes"]
    speed[rate] = gloo_best(r)[0] / r["arms"][INT4]["time_us_median"]
if "1gbit" in speed:
    summary["int4_allreduce_speedup_1gbit"] = speed["1gbit"]
summary["int4_allreduce_speedup_by_rate"] = speed
vs_mpi = {rate: row_at(rate, "allreduce")["arms"]["mpi"]["time_us_median"] /
          row_at(rate, "allreduce")["arms"][INT4]["time_us_median"]
          for rate in rates if "mpi" in row_at(rate, "allreduce")["arms"]}
if vs_mpi:
    summary["int4_allreduce_speedup_vs_mpi_by_rate"] = vs_mpi

# Model from the unshaped run: t_fp32 = B/R, t_int4 = t_compute + B_c/R => R* = (B - B_c)/t_compute.
model = None
if "unshaped" in rates:
    r = row_at("unshaped", "allreduce")
    arm = r["arms"][INT4]
    t_compute = arm["time_us_median"] * 1e-6
    B, Bc = arm["fp32_wire_bytes_per_rank"], arm["wire_bytes_per_rank"]
    model = (B - Bc) * 8 / t_compute / 1e9
    summary["crossover_gbit_model"] = model
    summary["crossover_model_inputs"] = {
        "fp32_wire_bytes_per_rank": B, "int4_wire_bytes_per_rank": Bc,
        "t_compute_s": t_compute,
        "note": "t_compute = int4 all-reduce time on the unshaped veth (includes that transfer, "
                "so R* is a slight underestimate); fp32 time taken as pure transfer B/R"}
shaped = sorted((gbit(x), x) for x in rates if gbit(x) is not None)
interp = None
for (r1, n1), (r2, n2) in zip(shaped, shaped[1:]):
    s1, s2 = speed[n1], speed[n2]
    if s1 > 1 >= s2:
        f = math.log(s1) / (math.log(s1) - math.log(s2))
        interp = math.exp(math.log(r1) + f * (math.log(r2) - math.log(r1)))
        summary["crossover_gbit_interpolated"] = interp
        summary["crossover_between"] = [n1, n2]
        break
# Cross-check: the unshaped veth as one more measured rate, at the rate fp32 actually reached there
# (fp32 wire bytes / best Gloo time).
if interp is None and "unshaped" in rates and shaped:
    ru = row_at("unshaped", "allreduce")
    t_u, g_u = gloo_best(ru)
    eff = ru["arms"][g_u]["wire_bytes_per_rank"] * 8 / (t_u * 1e-6) / 1e9
    summary["unshaped_effective_gbit"] = eff
    (r1, n1), s1, s2 = shaped[-1], speed[shaped[-1][1]], speed["unshaped"]
    if s1 > 1 >= s2 and eff > r1:
        f = math.log(s1) / (math.log(s1) - math.log(s2))
        summary["crossover_gbit_interpolated_to_unshaped"] = math.exp(
            math.log(r1) + f * (math.log(eff) - math.log(r1)))
if interp is not None:
    summary["crossover_gbit"], summary["crossover_method"] = interp, (
        "log-log interpolation of Gloo-best/int4 time between the measured rates "
        f"{summary['crossover_between'][0]} and {summary['crossover_between'][1]}")
elif model is not None:
    side = "int4" if all(speed[n] > 1 for _, n in shaped) else "fp32" if all(
        speed[n] <= 1 for _, n in shaped) else "mixed"
    summary["crossover_gbit"], summary["crossover_method"] = model, (
        f"model from the unshaped int4 time (every shaped rate favours {side})")

doc = {"bench": "compressed_collectives", "host": host,
       "config": {"rates": rates, "compress": specs, "reps": int(reps),
                  "testbed": "scripts/testbed/netns_2host.sh: 2 namespaces, veth pair, tc tbf "
                             "(burst 256kb, latency 50ms) on both ends",
                  "command": "loom bench collectives --mpi off --ops allreduce,reduce_scatter "
                             f"-b 1M -e {maxbytes} -f 4 --compress " + specs},
       "summary": summary, "runs": runs, "results": rows}
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(out + ".tmp", out)

def mb(x):
    return f"{x / 1e6:8.2f}"

print(f"\n# {int(summary['bytes']) >> 20} MiB (largest size): time ms, effective fp32 busbw GB/s, wire MB/rank/call, "
      f"speedup = best Gloo fp32 time / arm time (and OpenMPI's / arm time), rel L2 error vs "
      f"fp64, CPU ms/call/rank")
print(f"{'rate':>9} {'op':>14} {'arm':>26} {'ms':>9} {'GB/s':>7} {'wire MB':>8} {'vs gloo':>8} "
      f"{'vs mpi':>8} {'rel err':>9} {'cpu ms':>8}")
for rate in rates:
    for op in ("allreduce", "reduce_scatter"):
        r = row_at(rate, op)
        g = gloo_best(r)[0]
        m = r["arms"]["mpi"]["time_us_median"] if "mpi" in r["arms"] else None
        for name, a in r["arms"].items():
            err = f"{a['rel_l2_error']:9.2e}" if "rel_l2_error" in a else f"{'exact':>9}"
            t = a["time_us_median"]
            vm = f"{m / t:7.2f}x" if m else f"{'-':>8}"
            print(f"{rate:>9} {op:>14} {name:>26} {t / 1e3:9.1f} "
                  f"{a['busbw_GBps']:7.3f} {mb(a['wire_bytes_per_rank'])} "
                  f"{g / t:7.2f}x {vm} {err} {a['cpu_s_per_call'] * 1e3:8.1f}")
comp = sorted({n for r in rows for n, a in r["arms"].items() if "rel_l2_error" in a})
print("\n# speedup of each compressed arm over the best Gloo fp32 arm, by size")
sizes = sorted({r["bytes"] for r in rows})
print(f"{'rate':>9} {'op':>14} {'arm':>26} " + " ".join(f"{int(b) >> 20:>6}M" for b in sizes))
for rate in rates:
    for op in ("allreduce", "reduce_scatter"):
        for name in comp:
            cells = []
            for b in sizes:
                r = row_at(rate, op, b)
                cells.append(f"{gloo_best(r)[0] / r['arms'][name]['time_us_median']:6.2f}x")
            print(f"{rate:>9} {op:>14} {name:>26} " + " ".join(cells))
print("\nsummary:", json.dumps({k: v for k, v in summary.items() if k != "crossover_model_inputs"},
                               indent=1))
print("wrote", out)
PY
