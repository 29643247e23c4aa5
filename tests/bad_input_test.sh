#!/usr/bin/env bash
# Bad configuration gets one clear message naming the key/file and a non-zero exit, before any
# rank starts.
source "$(dirname "$0")/lib.sh"
check() {  # expected-substring, args...
  local want=$1; shift
  set +e
  "$LOOM" train "$@" > "$SCRATCH/out.txt" 2>&1
  local rc=$?
  set -e
  [ "$rc" -ne 0 ] || fail "'loom train $*' exited 0"
  expect_contains "$SCRATCH/out.txt" "$want" "loom train $*"
  [ "$(grep -c "$want" "$SCRATCH/out.txt")" -eq 1 ] || fail "'$want' printed more than once"
}
check "unknown key 'stepz' (did you mean 'steps'?)" stepz=3
check "expected dotted.key=value" steps
check "'steps=ten': expected an integer" steps=ten
check "batch.global" --nproc 3
check "/nonexistent/corpus.txt" data.source=file data.path=/nonexistent/corpus.txt
check "config key 'compress.grad': codec spec 'int3'" compress.grad=int3
check "group 100 must be a multiple of 32" compress.grad=int4:g100
check "config key 'compress.weights': weight spec 'qwd5'" compress.weights=qwd5
check "it needs dist.mode=zero1" compress.weights=qwd4 dist.mode=allreduce
echo '{"model": {"n_layer": 2}}' > "$SCRATCH/bad.json"
check "unknown key 'model.n_layer'" --config "$SCRATCH/bad.json"
echo '{"steps": ' > "$SCRATCH/broken.json"
check "broken.json: invalid JSON" --config "$SCRATCH/broken.json"
echo PASS
