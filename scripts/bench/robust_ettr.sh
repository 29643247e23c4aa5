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
name=robust-ettr
source "$root/scripts/bench/robust_lib.sh"  # sets commit, work, loom; traps
[ -n "$out" ] || out=$root/bench/results/robust_ettr_${commit}.json

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
      inject_fault "$type" "$pid" "$hold" "$inj" 0.3
      echo "{\"arm\": \"$arm\", \"fault\": $j, \"type\": \"$type\", \"target\": \"$name\", \"pid\": $pid, \"inject_log\": \"$arm/inject_$j.jsonl\"}" >> "$faults_log"
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
"$python" "$root/scripts/bench/robust_ettr_report.py" --work "$work" --t0-ms "$t_start" \
  --t1-ms "$t_end" --out "$out" --commit "$commit" --label "$label" --arms "$arms" \
  --loom-ckpt-every "$loom_every" --torchrun-ckpt-every "$tr_every" \
  --straggler-threshold "$straggler_threshold" --minutes "$minutes" --types "$types" \
  --loom-sha "$(sha256sum < "$loom" | cut -c1-12)"
