# Shared by scripts/bench/robust_faults.sh and scripts/bench/robust_ettr.sh (sourced, not run):
# session bookkeeping, bounded waits, the tiny training config and step counting.
# The caller sets $root, $loom_src (the loom binary), $seed and $name before sourcing; sourcing
# checks the binary, sets $commit, makes the scratch directory $work (removed on exit) with a
# private copy of the binary in $loom (others relink the build while a bench runs), seeds $RANDOM
# and installs the cleanup traps.

[ -x "$loom_src" ] || { echo "no loom binary at $loom_src (build it, or pass --loom)" >&2; exit 2; }
commit=$(git -C "$root" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
work=$(mktemp -d "/tmp/loom-$name.XXXXXX")
mkdir -p "$work/bin"
loom=$work/bin/loom
cp "$loom_src" "$loom"
export LOOM_CACHE_DIR=$work/cache
RANDOM=$seed

sessions=()      # session ids of everything started here (drivers, torchrun)
injectors=()     # pids of `loom monitor inject` (SIGTERM first: they revert their fault)
kill_session() {  # sid: SIGKILL every process of that session (only ours: we made the session)
  local p
  for p in $(ps -e -o pid=,sid= | awk -v s="$1" '$2 == s { print $1 }'); do
    kill -9 "$p" 2>/dev/null || true
    # A SIGKILLed `loom robust executor` cannot remove its app-metrics socket.
    rm -f /tmp/loom-app-*-"$p".sock
  done
}
cleanup() {
  local p s
  for p in "${injectors[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${injectors[@]}"; do wait "$p" 2>/dev/null || true; done
  for s in "${sessions[@]}"; do kill_session "$s"; done
  if [ -n "${KEEP:-}" ]; then  # KEEP=DIR: keep the logs (not binaries or checkpoints) for a look
    mkdir -p "$KEEP" && (cd "$work" && find . \( -name '*.log' -o -name '*.jsonl' \) \
      -not -path '*/ckpt/*' -exec cp --parents {} "$KEEP" \;) || true
  fi
  rm -rf "$work"
}

trap cleanup EXIT
trap 'exit 130' INT TERM

corpus=$work/corpus.txt
for i in $(seq 1 400); do
  echo "And it came to pass in the day $i that the people went out to the field and sang."
done > "$corpus"
TINY=(model.n_layers=1 model.d_model=64 model.n_heads=2 model.context_length=64
      batch.global=4 batch.micro=2 sample.tokens=16 precision=fp32 eval.every=0
      optim.warmup_steps=2 data.source=file data.path="$corpus")

now_ms() { date +%s%3N; }

# Starts a command in a new session in the background; sets $started_pid (= its session id).
start_session() {  # log cmd...
  local log=$1; shift
  setsid "$@" > "$log" 2>&1 &
  started_pid=$!
  sessions+=("$started_pid")
}

# Waits for pid to exit within timeout seconds; returns its exit code, 124 on timeout (killed).
wait_bounded() {  # pid sid timeout_s
  local pid=$1 sid=$2 t=$3 i rc
  for ((i = 0; i < t * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || { rc=0; wait "$pid" || rc=$?; return $rc; }
    sleep 0.2
  done
  kill_session "$sid"
  wait "$pid" 2>/dev/null || true
  return 124
}

# Starts `loom monitor inject` for one fault in the background (hang = SIGSTOP held hold_s,
# crash = SIGKILL, straggler = a CPU quota of cpu_fraction of a core held hold_s); the onset goes to
# the log as ground truth. Sets $injected_pid (also added to $injectors for the cleanup).
inject_fault() {  # type pid hold_s log [cpu_fraction]
  local -a args
  case $1 in
    hang) args=(--fault stop --duration "$3") ;;
    crash) args=(--fault kill) ;;
    straggler) args=(--fault cpu_quota --cpu-fraction "${5:-0.3}" --duration "$3") ;;
    *) echo "unknown fault type $1" >&2; exit 2 ;;
  esac
  "$loom" monitor inject "${args[@]}" --pid "$2" --log "$4" > /dev/null 2>> "$work/inject.err" &
  injected_pid=$!
  injectors+=("$injected_pid")
}

max_step() {  # metrics.jsonl -> the highest completed step (0 if none)
  [ -f "$1" ] || { echo 0; return; }
  awk -F'"step":' '/"loss"/ { split($2, a, /[,}]/); if (a[1] + 0 > m) m = a[1] + 0 } END { print m + 0 }' "$1"
}
