#!/usr/bin/env bash
# Injected faults on real runs: `loom robust` against torchrun (Debian's 1.13, default and tuned)
# on the same hangs (SIGSTOP), crashes (SIGKILL) and stragglers (cgroup CPU quota) injected into
# one rank of a 2-rank tiny-model run with `loom monitor inject` (which logs the onset as ground
# truth). Per injection: time to detect (onset -> the tool notices), whether the named machine is
# the injected one, time to recover (onset -> first completed step after the restart), lost steps
# (step at the incident - restored step), evictions, and whether the run still finished.
#
#   scripts/bench/robust_faults.sh [--repeats 10] [--types hang,crash,straggler]
#       [--torchrun default,tuned|none] [--torchrun-repeats 3] [--out FILE.json] [--seed 1]
#       [--cpu-fraction 0.3]        # the straggler's CPU quota (fraction of one core)
#       [--label TEXT]              # recorded in every loom row (which build was measured)
#       [--straggler-threshold T] # loom robust's NVRx trigger (default 0.75, loom robust's; 0: off)
#       [--soak-json FILE]          # merge a soak result made by --soak
#   scripts/bench/robust_faults.sh --rows-from A.json,B.json --soak-json FILE [--out FILE.json]
#       # no new runs: merge and re-summarise earlier results with a soak that ran alongside
#   scripts/bench/robust_faults.sh --soak MINUTES --soak-out FILE.json   # fault-free soak
#
# Output: a table and bench/results/robust_faults_<commit>.json: "rows" (one per injection),
# "soak" and "summary" (per tool and fault type: n, detected, correctly named, TTD p50/p95,
# TTR p50, lost steps p50; soak minutes and false incidents).
# Needs root (cgroup v1 cpu controller for the straggler, signals to the ranks) and Debian's
# /usr/bin/python3 (torch 1.13) + /usr/bin/torchrun for the torchrun rows. Every process this
# script starts runs in its own session and is killed by session id on exit. KEEP=DIR keeps the
# logs, decision logs and ground-truth logs of every run in DIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3
repeats=10
types=hang,crash,straggler
torchrun_setups=default,tuned
torchrun_repeats=3
out=""
seed=1
soak_min=0
soak_out=""
soak_json=""
rows_from=""
cpu_fraction=0.3
label=""
straggler_threshold=0.75
loom_src=${LOOM:-$root/build/src/loom/cli/loom}
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) repeats=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --torchrun) torchrun_setups=$2; shift 2 ;;
    --torchrun-repeats) torchrun_repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --soak) soak_min=$2; shift 2 ;;
    --soak-out) soak_out=$2; shift 2 ;;
    --soak-json) soak_json=$2; shift 2 ;;
    --loom) loom_src=$2; shift 2 ;;
    --cpu-fraction) cpu_fraction=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --straggler-threshold) straggler_threshold=$2; shift 2 ;;
    --rows-from) rows_from=$2; repeats=0; torchrun_setups=none; shift 2 ;;
    *) sed -n '2,25p' "$0" >&2; exit 2 ;;
  esac
done
name=robust-faults
source "$root/scripts/bench/robust_lib.sh"  # sets commit, work, loom; traps
[ -n "$out" ] || out=$root/bench/results/robust_faults_${commit}.json

# ---------------------------------------------------------------- fault-free soak (loom robust)
if [ "$soak_min" != 0 ]; then
  [ -n "$soak_out" ] || { echo "--soak needs --soak-out FILE.json" >&2; exit 2; }
  run=$work/soak
  t0=$(now_ms)
  start_session "$work/soak.log" nice -n 10 "$loom" robust --machines 2 --standby 1 \
    --heartbeat-ms 250 --confirm 2 --straggler-threshold "$straggler_threshold" --run-dir "$run" \
    -- loom train "${TINY[@]}" steps=100000000 \
    ckpt.every=500 ckpt.async=false log.every=100
  drv=$started_pid
  end=$(( $(date +%s) + soak_min * 60 ))
  while [ "$(date +%s)" -lt "$end" ] && kill -0 "$drv" 2>/dev/null; do sleep 5; done
  alive=0; kill -0 "$drv" 2>/dev/null && alive=1
  t1=$(now_ms)
  steps=$(max_step "$run/train/metrics.jsonl")
  kill_session "$drv"; wait "$drv" 2>/dev/null || true
  "$python" - "$run/robust/decisions.jsonl" "$t0" "$t1" "$alive" "$steps" "$soak_out" \
    "$straggler_threshold" <<'PY'
import json, sys
path, t0, t1, alive, steps, out, threshold = sys.argv[1:]
recs = [json.loads(l) for l in open(path)]
states = [r["state"] for r in recs]
soak = {"tool": "loom robust", "straggler_threshold": float(threshold),
        "minutes": (int(t1) - int(t0)) / 60000.0,
        "steps": int(steps), "still_running_at_end": alive == "1",
        "incidents": states.count("SUSPENDED"), "evictions": states.count("EVICT"),
        "attempts": states.count("LAUNCH"),
        # detector alerts (SUSPECT notes) that the confirmation window dropped
        "unconfirmed_suspects": sum(1 for r in recs if r["state"] == "NOTE"
                                    and r.get("text", "").startswith("SUSPECT ")),
        "incident_texts": [r["text"] for r in recs if r["state"] in ("SUSPENDED", "EVICT")]}
json.dump(soak, open(out, "w"), indent=1)
print(json.dumps(soak))
PY
  exit 0
fi

rows=$work/rows.jsonl
: > "$rows"

# ---------------------------------------------------------------- loom robust injections
# One run: start the driver, wait until a random step after the first checkpoint (step 10),
# inject into a random rank, wait for the job to finish, then score it from the ground truth log
# and the driver's decisions.jsonl.
loom_run() {  # type index
  local type=$1 i=$2 steps=150 hold=60 target m pid="" dec step0 inj_rc=0
  [ "$type" = straggler ] && steps=400
  local run=$work/loom_${type}_$i inj=$work/loom_${type}_$i.inject.jsonl
  target=$((11 + RANDOM % 20))
  m=m$((RANDOM % 2))
  start_session "$work/loom_${type}_$i.log" "$loom" robust --machines 2 --standby 1 \
    --heartbeat-ms 250 --confirm 2 --straggler-threshold "$straggler_threshold" --run-dir "$run" \
    -- loom train "${TINY[@]}" steps=$steps \
    ckpt.every=10 ckpt.async=false log.every=1
  local drv=$started_pid
  dec=$run/robust/decisions.jsonl
  local t_end=$(( $(date +%s) + 120 ))
  while [ "$(date +%s)" -lt "$t_end" ]; do
    if [ -z "$pid" ] && [ -f "$dec" ]; then
      pid=$("$python" -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("attempt") == 0 and "pids" in r: print(r["pids"][sys.argv[2]])' "$dec" "$m")
    fi
    [ -n "$pid" ] && [ "$(max_step "$run/train/metrics.jsonl")" -ge "$target" ] && break
    kill -0 "$drv" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$pid" ] || ! kill -0 "$drv" 2>/dev/null; then
    echo "loom $type #$i: never reached step $target (see log); skipped" >&2
    kill_session "$drv"; wait "$drv" 2>/dev/null || true
    return
  fi
  step0=$(max_step "$run/train/metrics.jsonl")
  inject_fault "$type" "$pid" "$hold" "$inj" "$cpu_fraction"
  local injp=$injected_pid
  local rc=0
  wait_bounded "$drv" "$drv" 300 || rc=$?
  wait "$injp" 2>/dev/null || inj_rc=$?
  local final
  final=$(max_step "$run/train/metrics.jsonl")
  "$python" - "$dec" "$inj" "$type" "$i" "$m" "$step0" "$rc" "$final" "$steps" "$inj_rc" \
    "$run/train/metrics.jsonl" "$cpu_fraction" "$label" "$(sha256sum < "$loom" | cut -c1-12)" \
    "$straggler_threshold" >> "$rows" <<'PY'
import json, sys
dec, inj, ftype, idx, machine, step0, rc, final, steps, inj_rc, metrics, frac, label, sha, \
    threshold = sys.argv[1:]
if ftype == "straggler": ftype = "straggler@%s" % frac
# The step at the incident: the last step attempt 0 logged (metrics.jsonl is appended by every
# attempt; the step count drops where the restored attempt starts).
at_incident = 0
try:
    for l in open(metrics):
        if '"loss"' not in l: continue
        s = json.loads(l)["step"]
        if s < at_incident: break
        at_incident = s
except OSError:
    pass
row = {"tool": "loom robust",
       "setup": "--heartbeat-ms 250 --confirm 2 --straggler-threshold %s, 1 standby" % threshold,
       "type": ftype, "index": int(idx), "injected": machine, "step_at_injection": int(step0),
       "step_at_incident": at_incident,
       "exit_code": int(rc), "finished": int(rc) == 0 and int(final) >= int(steps),
       "inject_exit_code": int(inj_rc), "loom_sha256_12": sha, "label": label}
try:
    truth = [json.loads(l) for l in open(inj) if l.strip()]
    onset = truth[0]["onset_ms"]
except (OSError, IndexError, KeyError, ValueError) as e:
    row["error"] = "no ground truth onset: %s" % e
    print(json.dumps(row)); sys.exit(0)
row["onset_ms"] = onset
recs = [json.loads(l) for l in open(dec)]
susp = [r for r in recs if r["state"] == "SUSPENDED"]
# onset_ms is read after kill()/the cgroup write returns; a driver on the other core can log
# the incident a few ms earlier. Incidents up to 1 s before the onset count as this one.
row["false_incidents_before_onset"] = sum(1 for r in susp if r["ts_ms"] < onset - 1000)
after = [r for r in susp if r["ts_ms"] >= onset - 1000]
row["detected"] = bool(after)
row["evictions"] = [r["text"].split(" ")[0] for r in recs if r["state"] == "EVICT"]
# Suspicions the confirmation window dropped (e.g. a straggler score that flickers).
row["unconfirmed_suspects"] = sum(1 for r in recs if r["state"] == "NOTE"
                                  and r.get("text", "").startswith("SUSPECT ") and r["ts_ms"] >= onset)
if after:
    s = after[0]
    row["trigger"] = s.get("kind")
    row["named"] = s.get("machines")
    row["named_correctly"] = s.get("machines") == [machine]
    row["ttd_s"] = (s["ts_ms"] - onset) / 1000.0
    row["driver_detect_s"] = s.get("detect_s")
    # The step at the incident: the newest step any rank reported in its last heartbeat (the
    # DUMP line); metrics.jsonl loses rank 0's unflushed tail when the rank is killed.
    dump = [r for r in recs if r["state"] == "DUMP" and r["ts_ms"] >= s["ts_ms"]]
    if dump:
        import re
        hb = [int(x) for x in re.findall(r" step (\d+) ", dump[0]["text"])]
        if hb:
            at_incident = max(hb)
            row["step_at_incident"] = at_incident
    rest = [r for r in recs if r["state"] == "RESTORE" and "step" in r and r["ts_ms"] >= s["ts_ms"]]
    if rest:
        row["restored_step"] = rest[0]["step"]
        row["lost_steps"] = at_incident - rest[0]["step"]
    run = [r for r in recs if r["state"] == "RUNNING" and "completed step" in r.get("text", "")
           and r["ts_ms"] >= s["ts_ms"]]
    if run:
        row["ttr_s"] = (run[0]["ts_ms"] - onset) / 1000.0
print(json.dumps(row))
PY
  tail -n 1 "$rows" | "$python" -c 'import json,sys; r=json.loads(sys.stdin.read()); print("loom %-9s #%s: detected=%s named=%s ttd=%s ttr=%s lost=%s finished=%s" % (r["type"], r["index"], r.get("detected"), r.get("named"), r.get("ttd_s"), r.get("ttr_s"), r.get("lost_steps"), r["finished"]))' >&2
}

IFS=, read -r -a type_list <<< "$types"
for ((i = 0; i < repeats; i++)); do
  for type in "${type_list[@]}"; do
    [ -n "$type" ] && loom_run "$type" "$i"
  done
done

# ---------------------------------------------------------------- torchrun (Debian 1.13)
# torchrun without the shim: Debian's entry point as users get it (expected: it does not start).
torchrun_unpatched=$work/torchrun_unpatched.json
if [ "$torchrun_setups" != none ]; then
  start_session "$work/torchrun_unpatched.log" timeout 60 /usr/bin/torchrun --nproc_per_node 2 \
    "$root/bench/torchrun_peer.py" --steps 5 --dir "$work/tr_unpatched" --log "$work/tr_unpatched.jsonl"
  rc=0; wait_bounded "$started_pid" "$started_pid" 70 || rc=$?
  "$python" - "$work/torchrun_unpatched.log" "$rc" "$work/tr_unpatched.jsonl" > "$torchrun_unpatched" <<'PY'
import json, os, sys
log, rc, ev = sys.argv[1:]
lines = [l.rstrip() for l in open(log) if l.strip()]
print(json.dumps({"command": "/usr/bin/torchrun --nproc_per_node 2 bench/torchrun_peer.py ...",
                  "exit_code": int(rc), "started_workers": os.path.exists(ev),
                  "error": lines[-1] if lines else ""}))
PY
  echo "torchrun (Debian, unpatched): exit $rc: $(tail -n 1 "$work/torchrun_unpatched.log")" >&2
fi

# One torchrun run: same protocol as loom_run (random step after the first checkpoint, random
# rank); detection is read from the agent's timestamped log, recovery from the peer's events.
torchrun_run() {  # setup type index
  local setup=$1 type=$2 i=$3 steps=400 target r pid="" rc=0 inj_rc=0 limit=240 hold=60
  local dir=$work/tr_${setup}_${type}_$i inj=$work/tr_${setup}_${type}_$i.inject.jsonl
  mkdir -p "$dir"
  target=$((11 + RANDOM % 20))
  r=$((RANDOM % 2))
  local -a cmd=("$python" "$root/bench/torchrun_shim.py" --nproc_per_node 2 --max_restarts 3)
  local -a peer=("$root/bench/torchrun_peer.py" --steps $steps --width 512 --dir "$dir"
                 --log "$dir/events.jsonl")
  if [ "$setup" = tuned ]; then
    cmd=(env TORCHELASTIC_ENABLE_FILE_TIMER=1 TORCHELASTIC_TIMER_FILE="$dir/watchdog"
         "${cmd[@]}" --monitor_interval 1)
    peer+=(--pg-timeout 30 --file-timer 10)
  fi
  # default: no hang detection below the 30 min collective timeout; give up after 120 s.
  [ "$setup" = default ] && [ "$type" = hang ] && { limit=120; hold=150; }
  start_session "$dir/agent.log" "${cmd[@]}" "${peer[@]}"
  local agent=$started_pid t_end=$(( $(date +%s) + 120 ))
  while [ "$(date +%s)" -lt "$t_end" ]; do
    if [ -z "$pid" ] && [ -f "$dir/events.jsonl" ]; then
      pid=$("$python" -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] == "start" and e["restart"] == 0 and e["rank"] == int(sys.argv[2]): print(e["pid"])' \
        "$dir/events.jsonl" "$r")
    fi
    if [ -n "$pid" ] && [ "$(grep -c '"event": "step"' "$dir/events.jsonl")" -ge "$target" ]; then
      break
    fi
    kill -0 "$agent" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$pid" ] || ! kill -0 "$agent" 2>/dev/null; then
    echo "torchrun $setup $type #$i: never reached step $target; skipped" >&2
    kill_session "$agent"; wait "$agent" 2>/dev/null || true
    return
  fi
  inject_fault "$type" "$pid" "$hold" "$inj"
  local injp=$injected_pid
  wait_bounded "$agent" "$agent" $limit || rc=$?
  kill -TERM "$injp" 2>/dev/null || true
  wait "$injp" 2>/dev/null || inj_rc=$?
  "$python" - "$dir" "$inj" "$setup" "$type" "$i" "$r" "$rc" "$steps" "$limit" >> "$rows" <<'PY'
import json, re, sys
d, inj, setup, ftype, idx, rank, rc, steps, limit = sys.argv[1:]
rank = int(rank)
setups = {"default": "defaults (--max_restarts 3; monitor 5 s, collective timeout 30 min)",
          "tuned": "--monitor_interval 1, pg timeout 30 s, FileTimer expires(after=10) per step"}
row = {"tool": "torchrun", "setup": setup, "setup_text": setups[setup], "type": ftype,
       "index": int(idx), "injected": "rank%d" % rank, "exit_code": int(rc)}
ev = [json.loads(l) for l in open(d + "/events.jsonl") if l.strip()]
try:
    onset = [json.loads(l) for l in open(inj) if l.strip()][0]["onset_ms"]
except (OSError, IndexError, KeyError, ValueError) as e:
    row["error"] = "no ground truth onset: %s" % e
    print(json.dumps(row)); sys.exit(0)
row["onset_ms"] = onset
pid_rank = {e["pid"]: e["rank"] for e in ev if e["event"] == "start" and e["restart"] == 0}
steps0 = [e["step"] for e in ev if e["event"] == "step" and e["restart"] == 0]
row["step_at_incident"] = max(steps0) if steps0 else 0
row["finished"] = any(e["event"] == "done" and e["step"] == int(steps) for e in ev)
# Detection: the first agent log line after the onset that reports a failed worker or a reaped
# one (FileTimer watchdog). The named rank: the local_rank / pid in that line.
pat = re.compile(r"^(\d+\.\d+) .*(failed \(exitcode: (-?\d+)\) local_rank: (\d+)|"
                 r"Reaping worker_pid=\[(\d+)\])")
det = None
for l in open(d + "/agent.log", errors="replace"):
    m = pat.match(l)
    if m and float(m.group(1)) * 1000 >= onset:
        det = m; break
row["detected"] = det is not None
if det:
    row["ttd_s"] = round(float(det.group(1)) - onset / 1000.0, 3)
    named = int(det.group(4)) if det.group(4) else pid_rank.get(int(det.group(5)), -1)
    row["named"] = ["rank%d" % named]
    row["named_correctly"] = named == rank
    row["trigger"] = "worker exit" if det.group(2).startswith("failed") else "FileTimer watchdog"
else:
    row["not_detected_within_s"] = int(limit)
after = [e for e in ev if e["event"] == "step" and e["restart"] >= 1]
if after:
    row["ttr_s"] = round((after[0]["ts_ms"] - onset) / 1000.0, 3)
    res = [e["resumed_step"] for e in ev if e["event"] == "start" and e["restart"] >= 1]
    if res:
        row["restored_step"] = res[0]
        row["lost_steps"] = row["step_at_incident"] - res[0]
row["restarts"] = max([e["restart"] for e in ev] + [0])
print(json.dumps(row))
PY
  tail -n 1 "$rows" | "$python" -c 'import json,sys; r=json.loads(sys.stdin.read()); print("torchrun %-7s %-6s #%s: detected=%s named=%s ttd=%s ttr=%s lost=%s finished=%s" % (r["setup"], r["type"], r["index"], r.get("detected"), r.get("named"), r.get("ttd_s"), r.get("ttr_s"), r.get("lost_steps"), r.get("finished")))' >&2
  kill_session "$agent"
}

if [ "$torchrun_setups" != none ]; then
  IFS=, read -r -a setup_list <<< "$torchrun_setups"
  for ((i = 0; i < torchrun_repeats; i++)); do
    for setup in "${setup_list[@]}"; do
      for type in hang crash; do
        torchrun_run "$setup" "$type" "$i"
      done
    done
  done
fi

# ---------------------------------------------------------------- summary
mkdir -p "$(dirname "$out")"
"$python" - "$rows" "$out" "$commit" "${soak_json:-}" "$repeats" "$torchrun_repeats" \
  "${torchrun_unpatched:-}" "${rows_from:-}" <<'PY'
import json, os, sys
rows_path, out, commit, soak_path, repeats, tr_repeats, unpatched, rows_from = sys.argv[1:]
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
soak = json.load(open(soak_path)) if soak_path else None
unpatched = json.load(open(unpatched)) if unpatched and os.path.exists(unpatched) else None
for path in filter(None, rows_from.split(",")):  # re-summarise earlier runs (+ a soak)
    old = json.load(open(path))
    rows = old["rows"] + rows
    unpatched = unpatched or old.get("torchrun_unpatched")
    soak = soak or old.get("soak")
    commit = old["commit"]
    repeats = max(int(repeats), int(old["repeats_per_type"]))
    tr_repeats = max(int(tr_repeats), int(old["torchrun_repeats_per_type"]))

def pct(xs, q):
    xs = sorted(xs)
    if not xs: return None
    k = (len(xs) - 1) * q
    lo = int(k); hi = min(lo + 1, len(xs) - 1)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), 3)

summary = {}
for r in rows:
    tool = r["tool"] + (" [%s]" % r["label"] if r.get("label") else "")
    key = "%s | %s" % (tool if r["tool"] == "loom robust" else tool + " " + r["setup"], r["type"])
    summary.setdefault(key, []).append(r)
table = {}
for key, rs in summary.items():
    ttd = [r["ttd_s"] for r in rs if r.get("detected") and r.get("ttd_s") is not None]
    ttr = [r["ttr_s"] for r in rs if r.get("ttr_s") is not None]
    lost = [r["lost_steps"] for r in rs if r.get("lost_steps") is not None]
    table[key] = {
        "n": len(rs), "detected": sum(1 for r in rs if r.get("detected")),
        "named_correctly": sum(1 for r in rs if r.get("named_correctly")),
        "ttd_p50_s": pct(ttd, 0.5), "ttd_p95_s": pct(ttd, 0.95), "ttr_p50_s": pct(ttr, 0.5),
        "lost_steps_p50": pct(lost, 0.5), "finished": sum(1 for r in rs if r.get("finished")),
        "evictions": sum(len(r.get("evictions", [])) for r in rs),
        "unconfirmed_suspects": sum(r.get("unconfirmed_suspects", 0) for r in rs),
        # evictions of machines that were not injected (e.g. a noisy self-check on shared cores)
        "healthy_evicted": sum(1 for r in rs for m in r.get("evictions", []) if m != r["injected"]),
        "not_detected_within_s": max([r.get("not_detected_within_s", 0) for r in rs]) or None}
result = {"commit": commit, "repeats_per_type": int(repeats),
          "torchrun_repeats_per_type": int(tr_repeats), "summary": table, "soak": soak,
          "torchrun_unpatched": unpatched,
          "rows": rows}
if soak:
    result["summary_soak"] = {"minutes": round(soak["minutes"], 1),
                              "false_incidents": soak["incidents"], "evictions": soak["evictions"]}
json.dump(result, open(out, "w"), indent=1)
hdr = "%-50s %3s %4s %5s %8s %8s %8s %6s %4s" % ("tool | fault", "n", "det", "named", "TTD p50",
                                                 "TTD p95", "TTR p50", "lost", "fin")
print(hdr); print("-" * len(hdr))
f = lambda x: "-" if x is None else "%.2f" % x
for key in sorted(table):
    t = table[key]
    print("%-50s %3d %4d %5d %8s %8s %8s %6s %4d" % (key, t["n"], t["detected"],
          t["named_correctly"], f(t["ttd_p50_s"]), f(t["ttd_p95_s"]), f(t["ttr_p50_s"]),
          f(t["lost_steps_p50"]), t["finished"]))
if soak:
    print("soak (loom robust, no injection): %.1f min, %d steps, %d incidents, %d evictions"
          % (soak["minutes"], soak["steps"], soak["incidents"], soak["evictions"]))
if unpatched:
    print("torchrun as shipped (no shim): exit %d, %s" % (unpatched["exit_code"], unpatched["error"]))
print("wrote", out)
PY
