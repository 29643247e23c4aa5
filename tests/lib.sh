# Helpers for loom's integration tests (sourced by tests/*.sh). Each test gets a scratch directory
# that is removed on exit, and fails with a message naming what was expected.
set -euo pipefail

LOOM=${LOOM:?set LOOM to the loom binary}
SCRATCH=$(mktemp -d /tmp/loom-itest.XXXXXX)
# Measured machine facts (the GEMM peak) of a loaded test machine must not leak into later runs.
export LOOM_CACHE_DIR=$SCRATCH/cache
trap 'rm -rf "$SCRATCH"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

expect_contains() {  # file pattern what
  grep -q -- "$2" "$1" || { echo "--- $1:" >&2; tail -n 40 "$1" >&2; fail "$3: expected '$2'"; }
}

# A small generated corpus so tests do not depend on the bible package.
make_corpus() {
  local out=$SCRATCH/corpus.txt i
  for i in $(seq 1 400); do
    echo "And it came to pass in the day $i that the people went out to the field and sang."
  done > "$out"
  echo "$out"
}

# A model small enough to train a few steps in a second or two.
TINY=(model.n_layers=1 model.d_model=64 model.n_heads=2 model.context_length=64
      batch.global=4 batch.micro=2 sample.tokens=16 log.every=1 precision=fp32)
