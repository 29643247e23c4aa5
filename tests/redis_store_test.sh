#!/usr/bin/env bash
# Rendezvous through Gloo's RedisStore (the store for hosts without a shared filesystem).
source "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed"; exit 77; }
port=$(( 20000 + RANDOM % 20000 ))
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no > "$SCRATCH/redis.log" 2>&1 &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null; rm -rf "$SCRATCH"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
corpus=$(make_corpus)
"$LOOM" launch -n 2 --store "redis://127.0.0.1:$port" -- "$LOOM" train "${TINY[@]}" steps=3 \
  data.source=file data.path="$corpus" run_dir="$SCRATCH/run" > "$SCRATCH/out.txt" 2>&1 \
  || { cat "$SCRATCH/out.txt"; fail "training with a redis store failed"; }
[ -n "$(redis-cli -p "$port" --scan | head -n 1)" ] || fail "nothing was written to redis"
echo PASS
