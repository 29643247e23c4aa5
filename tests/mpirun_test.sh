#!/usr/bin/env bash
# Under OpenMPI's mpirun, `loom train` runs as one rank per process and takes rank, size and job
# id from mpirun's environment.
source "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
corpus=$(make_corpus)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$SCRATCH"
mpirun -n 2 --oversubscribe --bind-to none --mca btl self,tcp \
  "$LOOM" train "${TINY[@]}" steps=3 data.source=file data.path="$corpus" run_dir="$SCRATCH/run" \
  > "$SCRATCH/out.txt" 2>&1 || { cat "$SCRATCH/out.txt"; fail "loom train under mpirun failed"; }
expect_contains "$SCRATCH/out.txt" "2 rank(s), launcher mpirun" "rank 0 reports mpirun's world"
[ -s "$SCRATCH/run/metrics.jsonl" ] || fail "no metrics written"
echo PASS
