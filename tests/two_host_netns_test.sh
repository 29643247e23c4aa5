#!/usr/bin/env bash
# A 2-"host" run: rank 0 and rank 1 in separate network namespaces joined by a veth pair
# (rate-limited to 1 Gbit/s with tc tbf), talking over 10.77.0.0/24, not loopback.
source "$(dirname "$0")/lib.sh"
testbed="$(dirname "$0")/../scripts/testbed/netns_2host.sh"
corpus=$(make_corpus)
set +e
"$testbed" --rate 1gbit -- "$LOOM" train "${TINY[@]}" steps=4 data.source=file \
  data.path="$corpus" run_dir="$SCRATCH/run" > "$SCRATCH/out.txt" 2>&1
rc=$?
set -e
if [ "$rc" -eq 77 ]; then cat "$SCRATCH/out.txt"; exit 77; fi
[ "$rc" -eq 0 ] || { cat "$SCRATCH/out.txt"; fail "two-host training failed (rc $rc)"; }
expect_contains "$SCRATCH/out.txt" "\[host a\] step 4/4" "rank 0 in host a finished"
expect_contains "$SCRATCH/out.txt" "2 rank(s)" "both hosts joined one world"
ip netns list | grep -q "loom-a-" && fail "namespaces left behind"
echo PASS
