#!/usr/bin/env bash
# `loom robust -- loom train ...` with faults injected into one rank (issue 5's "Done means"):
# - SIGSTOP: the driver detects the stopped rank, names it, dumps stacks, evicts the machine
#   (blocklist), replaces it with the warm standby and resumes from the newest verified
#   checkpoint, without a person; training then finishes.
# - SIGKILL: a first crash restarts in place on the same machines from the checkpoint.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
driver=""
trap 'if [[ -n $driver ]]; then kill -9 "$driver" 2>/dev/null || true; fi; rm -rf "$SCRATCH"' EXIT

# run_with_fault NAME SIGNAL: starts loom robust, sends SIGNAL to rank 1 after step 40 was
# checkpointed, waits for the driver; the log is $SCRATCH/NAME.txt, the run dir $SCRATCH/NAME.
run_with_fault() {
  local name=$1 sig=$2 run=$SCRATCH/$1 log=$SCRATCH/$1.txt pid="" latest
  "$LOOM" robust --machines 2 --standby 1 --run-dir "$run" --heartbeat-ms 250 --confirm 2 -- \
    loom train "${TINY[@]}" steps=160 ckpt.every=20 ckpt.async=false eval.every=0 \
    optim.warmup_steps=2 data.source=file data.path="$corpus" > "$log" 2>&1 &
  driver=$!
  for _ in $(seq 1 600); do
    if [[ -z $pid && -f $run/robust/decisions.jsonl ]]; then
      pid=$(/usr/bin/python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("attempt") == 0 and "pids" in r: print(r["pids"]["m1"])' "$run/robust/decisions.jsonl")
    fi
    latest=$(cat "$run/train/ckpt/latest" 2>/dev/null || true)
    [[ -n $pid && $latest > step_00000039 ]] && break
    kill -0 $driver 2>/dev/null || { cat "$log"; fail "$name: driver exited early"; }
    sleep 0.2
  done
  [[ -n $pid ]] || { cat "$log"; fail "$name: no rank pids logged"; }
  kill -"$sig" "$pid"
  wait $driver || { cat "$log"; fail "$name: loom robust should finish the job"; }
  grep "^\[robust\]" "$log" || true
  # The last attempt trained up to the last step.
  /usr/bin/python3 - "$run/train/metrics.jsonl" <<'PY'
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if '"loss"' in l]
assert steps and max(steps) == 160, max(steps)
PY
}

run_with_fault stop STOP
log=$SCRATCH/stop.txt run=$SCRATCH/stop
expect_contains "$log" "SUSPENDED stopped on m1" "the stopped machine is named"
expect_contains "$log" "DUMP .*m1 rank 1 state T" "last state of every rank is dumped"
[[ -s $run/robust/incident-0/stacks-m1.txt ]] || fail "stacks of the stopped rank were saved"
grep -q "TID" "$run/robust/incident-0/stacks-m1.txt" || fail "eu-stack output in stacks-m1.txt"
expect_contains "$log" "EVICT .*m1 -> blocklist; replaced by standby m2" "m1 evicted, m2 replaces it"
expect_contains "$log" "RESTORE .*from .*step_000000[0-9]0 (step" "restored from a verified checkpoint"
expect_contains "$log" "LAUNCH .*attempt 1 on m0,m2, resume=" "relaunched on m0 and m2"
expect_contains "$log" "training finished after 2 attempt(s), 1 incident(s), evicted m1" "job finished"
grep -q '"machine": "m1"' "$run/robust/blocklist.json" || fail "m1 is on the persistent blocklist"

run_with_fault kill KILL
log=$SCRATCH/kill.txt run=$SCRATCH/kill
expect_contains "$log" "SUSPENDED exit on m1: rank 1 was killed by signal 9" "the crashed rank is named"
grep -q "no stacks" "$run/robust/incident-0/stacks-m1.txt" || fail "a dead rank's dump says so"
expect_contains "$log" "m1 crashed once and passes its checks: restart in place" "first crash: no eviction"
expect_contains "$log" "LAUNCH .*attempt 1 on m0,m1, resume=" "relaunched in place"
expect_contains "$log" "training finished after 2 attempt(s), 1 incident(s), evicted (none)" "job finished"
echo "ok: SIGSTOP -> m1 evicted and replaced; SIGKILL -> restarted in place"
