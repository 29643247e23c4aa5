#!/usr/bin/env bash
# ETTR (effective training time ratio) of a run with k injected faults: `loom robust` against
# torchrun (Debian's 1.13, tuned and default) on the same fault schedule, all arms side by side
# on this host for the same wall time.
#
#   scripts/bench/robust_ettr.sh [--minutes 30] [--faults 4] [--types hang,crash]
#       [--arms loom,tuned,default] [--seed 1] [--out FILE.json] [--label TEXT]
#       [--loom-ckpt-every 400] [--torchrun-ckpt-every 1000]   # steps (~30 s each here)
#       [--straggler-threshold 0.75]                           # passed to loom robust (its default)
#
# Fault j of k is injected at (j + 0.5) / k of the run into a random rank of each arm (type j of
# --types, cycled): hang = SIGSTOP held to the end of the run, crash = SIGKILL, straggler = a
# 0.3-core CPU quota held for 60 s. An arm that has made no progress for 30 s when its fault is
# due is already down (e.g. default torchrun after a hang): the fault is skipped there and
# recorded as such, so a later crash cannot rescue a hung job.
#
# ETTR = S_final x median step time / wall time, where S_final is the last step of the run (the
# steps that count) and the median is over every step of every attempt. Everything else is
# unproductive: detection, restarts, redone steps, checkpoint stalls, start-up.
# Output: a table and bench/results/robust_ettr_<commit>.json ("arms": per arm the ETTR, S_final,
# median and mean step time, restarts, faults injected/skipped with their onsets, and the
# downtime of each fault: onset -> the first step after it).
# Needs root (signals, cgroup v1 cpu for stragglers) and /usr/bin/python3 + torch for torchrun.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
python=/usr/bin/python3
minutes=30
faults=4
types=hang,crash
arms=loom,tuned,default
seed=1
out=""
label=""
loom_every=400
tr_every=1000
straggler_threshold=0.75
loom_src=${LOOM:-$root/build/src/loom/cli/loom}
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --arms) arms=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --loom) loom_src=$2; shift 2 ;;
    --loom-ckpt-every) loom_every=$2; shift 2 ;;
    --torchrun-ckpt-every) tr_every=$2; shift 2 ;;
    --straggler-threshold) straggler_threshold=$2; shift 2 ;;
    *) sed -n '2,24p' "$0" >&2; exit 2 ;;
  esac
done
[ -x "$loom_src" ] || { echo "no loom binary at $loom_src (build it, or pass --loom)" >&2; exit 2; }
commit=$(git -C "$root" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
[ -n "$out" ] || out=$root/bench/results/robust_ettr_${commit}.json
work=$(mktemp -d /tmp/loom-robust-ettr.XXXXXX)
mkdir -p "$work/bin"
loom=$work/bin/loom  # a private copy: others relink the build while this runs
cp "$loom_src" "$loom"
export LOOM_CACHE_DIR=$work/cache
RANDOM=$seed

source "$root/scripts/bench/robust_lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

IFS=, read -r -a arm_list <<< "$arms"
IFS=, read -r -a type_list <<< "$types"
duration_s=$((minutes * 60))
t_start=$(now_ms)
declare -A arm_sid
for arm in "${arm_list[@]}"; do
  mkdir -p "$work/$arm"
  case $arm in
    loom)
      start_session "$work/loom/driver.log" "$loom" robust --machines 2 --standby "$faults" \
        --heartbeat-ms 250 --confirm 2 --straggler-threshold "$straggler_threshold" \
        --run-dir "$work/loom/run" -- loom train "${TINY[@]}" steps=100000000 \
        ckpt.every="$loom_every" ckpt.async=false log.every=10 ;;
    tuned|default)
      # Each torchrun arm needs its own rendezvous port (torchrun's default is 29500 for all).
      port=29500
      [ "$arm" = default ] && port=29510
      cmd=("$python" "$root/bench/torchrun_shim.py" --nproc_per_node 2 --master_port "$port"
           --max_restarts $((2 * faults + 2)))
      peer=("$root/bench/torchrun_peer.py" --steps 100000000 --width 512
            --ckpt-every "$tr_every" --dir "$work/$arm" --log "$work/$arm/events.jsonl")
      if [ "$arm" = tuned ]; then
        cmd=(env TORCHELASTIC_ENABLE_FILE_TIMER=1 TORCHELASTIC_TIMER_FILE="$work/tuned/watchdog"
             "${cmd[@]}" --monitor_interval 1)
        peer+=(--pg-timeout 30 --file-timer 10)
      fi
      start_session "$work/$arm/agent.log" "${cmd[@]}" "${peer[@]}" ;;
    *) echo "unknown arm $arm (loom, tuned, default)" >&2; exit 2 ;;
  esac
  arm_sid[$arm]=$started_pid
done

# The arm's current worker pids, one per line ("name pid"), and its newest step.
arm_pids() {  # arm
  if [ "$1" = loom ]; then
    "$python" -c 'import json,sys
last = None
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "pids" in r: last = r["pids"]
for k in sorted(last or {}): print(k, last[k])' "$work/loom/run/robust/decisions.jsonl" 2>/dev/null
  else
    "$python" -c 'import json,sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
st = [e for e in ev if e["event"] == "start"]
r = max((e["restart"] for e in st), default=None)
for e in sorted(st, key=lambda e: e["rank"]):
    if e["restart"] == r: print("rank%d" % e["rank"], e["pid"])' "$work/$1/events.jsonl" 2>/dev/null
  fi
}
arm_step() {  # arm
  if [ "$1" = loom ]; then max_step "$work/loom/run/train/metrics.jsonl"
  else grep -c '"event": "step"' "$work/$1/events.jsonl" 2>/dev/null || echo 0
  fi
}

faults_log=$work/faults.jsonl
: > "$faults_log"
declare -A last_step last_move
for arm in "${arm_list[@]}"; do last_step[$arm]=0; last_move[$arm]=$(date +%s); done
j=0
echo "ETTR run: ${minutes} min, $faults faults (${types}), arms ${arms}" >&2
while :; do
  now=$(date +%s)
  elapsed=$(( now - t_start / 1000 ))
  [ "$elapsed" -ge "$duration_s" ] && break
  for arm in "${arm_list[@]}"; do  # progress bookkeeping (the 30-s "already down" rule)
    s=$(arm_step "$arm")
    if [ "$s" != "${last_step[$arm]}" ]; then last_step[$arm]=$s; last_move[$arm]=$now; fi
  done
  if [ "$j" -lt "$faults" ] && [ $(( elapsed * 2 * faults )) -ge $(( (2 * j + 1) * duration_s )) ]; then
    type=${type_list[$((j % ${#type_list[@]}))]}
    hold=$(( duration_s - elapsed + 60 ))
    [ "$type" = straggler ] && hold=60
    for arm in "${arm_list[@]}"; do
      mapfile -t pids < <(arm_pids "$arm")
      pick=$((RANDOM % 2))
      if [ $(( now - last_move[$arm] )) -ge 30 ] || [ "${#pids[@]}" -lt 2 ]; then
        echo "{\"arm\": \"$arm\", \"fault\": $j, \"type\": \"$type\", \"skipped\": \"no progress for 30 s\", \"ts_ms\": $(now_ms)}" >> "$faults_log"
        echo "fault $j ($type): $arm is down already; skipped" >&2
        continue
      fi
      read -r name pid <<< "${pids[$pick]}"
      inj=$work/$arm/inject_$j.jsonl
      case $type in
        hang) "$loom" monitor inject --fault stop --pid "$pid" --duration "$hold" --log "$inj" \
                > /dev/null 2>> "$work/inject.err" & ;;
        crash) "$loom" monitor inject --fault kill --pid "$pid" --log "$inj" \
                > /dev/null 2>> "$work/inject.err" & ;;
        straggler) "$loom" monitor inject --fault cpu_quota --cpu-fraction 0.3 --pid "$pid" \
                --duration "$hold" --log "$inj" > /dev/null 2>> "$work/inject.err" & ;;
        *) echo "unknown fault type $type" >&2; exit 2 ;;
      esac
      injectors+=("$!")
      echo "{\"arm\": \"$arm\", \"fault\": $j, \"type\": \"$type\", \"target\": \"$name\", \"pid\": $pid, \"inject_log\": \"$inj\"}" >> "$faults_log"
      echo "fault $j ($type) at ${elapsed}s: $arm $name (pid $pid), step ${last_step[$arm]}" >&2
    done
    j=$((j + 1))
  fi
  sleep 1
done
t_end=$(now_ms)
for arm in "${arm_list[@]}"; do kill_session "${arm_sid[$arm]}"; done
sleep 1

mkdir -p "$(dirname "$out")"
"$python" - "$work" "$faults_log" "$t_start" "$t_end" "$out" "$commit" "$label" "$arms" \
  "$loom_every" "$tr_every" "$straggler_threshold" "$minutes" "$types" \
  "$(sha256sum < "$loom" | cut -c1-12)" <<'PY'
import json, statistics, sys
(work, faults_log, t0, t1, out, commit, label, arms, loom_every, tr_every, threshold, minutes,
 types, sha) = sys.argv[1:]
t0, t1 = int(t0), int(t1)
wall = (t1 - t0) / 1000.0

def steps_of(arm):
    """[(attempt, step, ts_s or None, duration_s of this step or None)], in file order."""
    rows = []
    if arm == "loom":
        # metrics.jsonl: every attempt appends; elapsed_s restarts from 0 with each attempt.
        att, prev = 0, None
        for l in open(work + "/loom/run/train/metrics.jsonl"):
            if '"loss"' not in l: continue
            r = json.loads(l)
            if prev and (r["step"] <= prev["step"] or r["elapsed_s"] < prev["elapsed_s"]):
                att += 1; prev = None
            dur = None
            if prev:
                dur = (r["elapsed_s"] - prev["elapsed_s"]) / (r["step"] - prev["step"])
            rows.append((att, r["step"], None, dur))
            prev = r
    else:
        prev = None
        for l in open(work + "/" + arm + "/events.jsonl"):
            e = json.loads(l)
            if e["event"] != "step": continue
            dur = None
            if prev and prev["restart"] == e["restart"] and e["step"] == prev["step"] + 1:
                dur = (e["ts_ms"] - prev["ts_ms"]) / 1000.0
            rows.append((e["restart"], e["step"], e["ts_ms"] / 1000.0, dur))
            prev = e
    return rows

faults = [json.loads(l) for l in open(faults_log) if l.strip()]
result = {"commit": commit, "label": label, "loom_sha256_12": sha, "minutes": float(minutes),
          "wall_s": wall, "fault_types": types.split(","),
          "definition": "ETTR = S_final x median step time / wall time",
          "setups": {
              "loom": "loom robust --machines 2 --standby k --heartbeat-ms 250 --confirm 2 "
                      "--straggler-threshold %s; loom train (tiny) ckpt.every=%s" % (threshold, loom_every),
              "tuned": "torchrun --monitor_interval 1 --max_restarts 2k+2, pg timeout 30 s, "
                       "FileTimer expires(after=10); torchrun_peer.py --width 512 --ckpt-every %s" % tr_every,
              "default": "torchrun --max_restarts 2k+2 (monitor 5 s, collective timeout 30 min); "
                         "torchrun_peer.py --width 512 --ckpt-every %s" % tr_every},
          "arms": {}}
for arm in arms.split(","):
    try:
        rows = steps_of(arm)
    except OSError as e:
        result["arms"][arm] = {"error": str(e)}; continue
    durs = [d for (_, _, _, d) in rows if d is not None and d > 0]
    med = statistics.median(durs) if durs else None
    s_final = rows[-1][1] if rows else 0
    a = {"steps_final": s_final, "steps_executed": len(rows),
         "attempts": 1 + max([r[0] for r in rows] + [0]),
         "median_step_s": med, "mean_step_s": statistics.fmean(durs) if durs else None,
         "ettr": s_final * med / wall if med else 0.0, "faults": []}
    if arm == "loom":
        a["steps_executed"] = None  # log.every=10: steps are sampled, not all logged
        dec = [json.loads(l) for l in open(work + "/loom/run/robust/decisions.jsonl")]
        a["evictions"] = [r["text"].split(" ")[0] for r in dec if r["state"] == "EVICT"]
        a["incidents"] = sum(1 for r in dec if r["state"] == "SUSPENDED")
        a["final_state"] = dec[-1]["state"] if dec else None
        running = [r["ts_ms"] / 1000.0 for r in dec
                   if r["state"] == "RUNNING" and "completed step" in r.get("text", "")]
    ckpt_every = int(loom_every if arm == "loom" else tr_every)
    a["ckpt_interval_s"] = ckpt_every * med if med else None
    for f in (f for f in faults if f["arm"] == arm):
        g = {"fault": f["fault"], "type": f["type"]}
        if "skipped" in f:
            g["skipped"] = f["skipped"]; g["ts_s"] = f["ts_ms"] / 1000.0 - t0 / 1000.0
            a["faults"].append(g); continue
        g["target"] = f["target"]
        try:
            onset = [json.loads(l) for l in open(f["inject_log"]) if l.strip()][0]["onset_ms"] / 1000.0
        except (OSError, IndexError, KeyError, ValueError) as e:
            g["error"] = "no ground-truth onset: %s" % e; a["faults"].append(g); continue
        g["onset_s"] = onset - t0 / 1000.0
        # Downtime: onset -> the first step of a later attempt (loom: the driver's "completed
        # step" RUNNING record; torchrun: the first step event of a higher restart count).
        if arm == "loom":
            after = [t for t in running if t > onset]
        else:
            before = [r for r in rows if r[2] is not None and r[2] <= onset]
            att = before[-1][0] if before else 0
            after = [r[2] for r in rows if r[0] > att and r[2] is not None and r[2] > onset]
        if after:
            g["downtime_s"] = after[0] - onset
        else:
            g["not_recovered_by_end"] = True
        a["faults"].append(g)
    result["arms"][arm] = a
json.dump(result, open(out, "w"), indent=1)
print("%-8s %6s %8s %9s %9s %8s %s" % ("arm", "ETTR", "S_final", "med step", "ckpt int",
                                        "attempts", "downtime per fault (s)"))
for arm, a in result["arms"].items():
    if "error" in a: print(arm, a["error"]); continue
    dts = ["skip" if "skipped" in g else ("never" if g.get("not_recovered_by_end") else
           "%.1f" % g["downtime_s"] if "downtime_s" in g else "?") for g in a["faults"]]
    print("%-8s %6.3f %8d %8.1fms %8.1fs %8d %s" % (arm, a["ettr"], a["steps_final"],
          1000 * (a["median_step_s"] or 0), a["ckpt_interval_s"] or 0, a["attempts"], " ".join(dts)))
print("wall %.1f s; wrote %s" % (wall, out))
PY
