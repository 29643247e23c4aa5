#!/usr/bin/env bash
# The default data source: the King James Bible from Debian's bible-kjv package.
source "$(dirname "$0")/lib.sh"
command -v bible >/dev/null || PATH=$PATH:/usr/games
command -v bible >/dev/null || fail "bible-kjv is not installed (scripts/setup installs it)"
"$LOOM" train --nproc 2 "${TINY[@]}" steps=3 run_dir="$SCRATCH/run" > "$SCRATCH/out.txt" 2>&1 \
  || { cat "$SCRATCH/out.txt"; fail "loom train on the bible exited non-zero"; }
expect_contains "$SCRATCH/out.txt" "King James Bible" "the data source is named"
echo PASS
