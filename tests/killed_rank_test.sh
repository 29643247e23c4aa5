#!/usr/bin/env bash
# A rank killed mid-training: the launcher stops the other rank and exits non-zero within the
# timeout, naming the killed rank; the surviving rank's error names the failed peer.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
start=$(date +%s)
set +e
LOOM_COMM_TIMEOUT_MS=60000 "$LOOM" launch -n 2 --grace 2 -- /bin/sh -c '
  if [ "$LOOM_RANK" = 1 ]; then (sleep 4; kill -9 $$) & fi
  exec "$0" "$@"' "$LOOM" train "${TINY[@]}" steps=100000 data.source=file data.path="$corpus" \
  run_dir="$SCRATCH/run" > "$SCRATCH/out.txt" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || fail "launcher exited 0 although rank 1 was killed"
[ "$elapsed" -lt 45 ] || fail "took ${elapsed}s to notice the dead rank"
expect_contains "$SCRATCH/out.txt" "rank 1 (pid [0-9]*) was killed by signal 9" "launcher names the killed rank"
expect_contains "$SCRATCH/out.txt" "\\[rank 0\\] loom train: rank 0: .*rank 1" "rank 0's error names its failed peer"
echo "PASS (rc $rc after ${elapsed}s)"
