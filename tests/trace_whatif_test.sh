#!/usr/bin/env bash
# `loom trace replay` and `loom trace whatif` on the traces of a 2-rank TINY run: both succeed,
# print measured vs predicted iteration time, a finite replay error and the critical path, write
# valid JSON and a synthetic trace; bad input (missing directory, malformed trace) fails with a
# message naming the directory / file. No wall-clock thresholds.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
run=$SCRATCH/run
"$LOOM" train --nproc 2 "${TINY[@]}" steps=16 eval.every=0 data.source=file data.path="$corpus" \
  run_dir="$run" trace.steps=5-15 > "$SCRATCH/train.txt" 2>&1 \
  || { cat "$SCRATCH/train.txt"; fail "loom train exited non-zero"; }
dir=$run/trace

"$LOOM" trace replay "$dir" --json "$SCRATCH/replay.json" --trace-out "$SCRATCH/replay.trace.json" \
  > "$SCRATCH/replay.txt" 2>&1 || { cat "$SCRATCH/replay.txt"; fail "loom trace replay failed"; }
cat "$SCRATCH/replay.txt"
for f in "measured iteration:" "predicted iteration:" "replay error:" "critical path: compute" \
         "link fit:" "compute slowdown:"; do
  expect_contains "$SCRATCH/replay.txt" "$f" "trace replay output"
done

"$LOOM" trace whatif "$dir" --bandwidth 0.5x --bucket 8MiB --overlap off --straggler 1:1.5 \
  --world 4 --compress int4 --json "$SCRATCH/whatif.json" > "$SCRATCH/whatif.txt" 2>&1 \
  || { cat "$SCRATCH/whatif.txt"; fail "loom trace whatif failed"; }
cat "$SCRATCH/whatif.txt"
for f in "predicted base:" "predicted what-if:" "critical path (what-if): compute" \
         "bandwidth x0.5" "bucket 8 MiB" "overlap off" "straggler rank 1 x1.5"; do
  expect_contains "$SCRATCH/whatif.txt" "$f" "trace whatif output"
done

# Slower link, no overlap: only adds time (the graph gains edges and longer SENDs).
"$LOOM" trace whatif "$dir" --bandwidth 0.5x --overlap off --json "$SCRATCH/slower.json" \
  > "$SCRATCH/slower.txt" 2>&1 || { cat "$SCRATCH/slower.txt"; fail "loom trace whatif (slower) failed"; }

/usr/bin/python3 - "$SCRATCH/replay.json" "$SCRATCH/whatif.json" "$SCRATCH/replay.trace.json" \
  "$SCRATCH/slower.json" <<'PY'
import json, math, sys
rep, wi, tr, slower = (json.load(open(p)) for p in sys.argv[1:])
assert rep["measured_ms"] > 0 and rep["predicted_ms"] > 0, rep
assert math.isfinite(rep["replay_error"]), rep["replay_error"]
cp = rep["critical_path"]
total = cp["compute_ms"] + cp["comm_ms"] + cp["gap_ms"] + cp["wait_ms"]
assert abs(total - rep["predicted_ms"]) <= 1e-6 * max(1, rep["predicted_ms"]), (total, rep)
assert rep["model"]["ranks"] == 2 and rep["model"]["buckets"] >= 1, rep["model"]
assert wi["predicted_ms"] > 0 and wi["base_ms"] > 0, wi
assert abs(wi["base_ms"] - rep["predicted_ms"]) <= 1e-9 * rep["predicted_ms"], (wi, rep)
assert slower["predicted_ms"] >= slower["base_ms"] * (1 - 1e-9), slower
xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
assert xs and all(e["dur"] >= 0 for e in xs), "synthetic trace events"
print("replay error %+.2f%%; what-if %.3f ms vs base %.3f ms" %
      (100 * rep["replay_error"], wi["predicted_ms"], wi["base_ms"]))
PY

# Chakra export of the same run: one .et per rank, starting with a varint length prefix.
"$LOOM" trace export-chakra "$dir" "$SCRATCH/et/run" > "$SCRATCH/et.txt" 2>&1 \
  || { cat "$SCRATCH/et.txt"; fail "export-chakra failed"; }
for r in 0 1; do
  [[ -s $SCRATCH/et/run.$r.et ]] || fail "export-chakra wrote no $SCRATCH/et/run.$r.et"
  expect_contains "$SCRATCH/et.txt" "run.$r.et" "export-chakra lists rank $r's file"
done

# Bad input: a directory without traces, and a truncated trace, name what is wrong.
mkdir -p "$SCRATCH/empty"
if "$LOOM" trace replay "$SCRATCH/empty" > "$SCRATCH/bad1.txt" 2>&1; then fail "empty dir accepted"; fi
expect_contains "$SCRATCH/bad1.txt" "$SCRATCH/empty" "error names the directory"
mkdir -p "$SCRATCH/trunc"
cp "$dir/rank1.trace.json" "$SCRATCH/trunc/"
head -c 2000 "$dir/rank0.trace.json" > "$SCRATCH/trunc/rank0.trace.json"
if "$LOOM" trace replay "$SCRATCH/trunc" > "$SCRATCH/bad2.txt" 2>&1; then fail "truncated trace accepted"; fi
expect_contains "$SCRATCH/bad2.txt" "rank0.trace.json" "error names the truncated file"
if "$LOOM" trace whatif "$dir" --bandwidth fast > "$SCRATCH/bad3.txt" 2>&1; then fail "bad flag accepted"; fi
expect_contains "$SCRATCH/bad3.txt" "bandwidth" "error names the flag"
if "$LOOM" trace whatif "$dir" --link-alpha-us 10 > "$SCRATCH/bad4.txt" 2>&1; then
  fail "--link-alpha-us without --link-shape accepted"
fi
expect_contains "$SCRATCH/bad4.txt" "--link-shape" "error names the missing flag"

# A shaped link's own latency: 5 ms per message costs more than none, on the same 100 MB/s links.
for us in 0 5000; do
  "$LOOM" trace whatif "$dir" --link-shape 100 --link-alpha-us $us --json "$SCRATCH/alpha$us.json" \
    > "$SCRATCH/alpha$us.txt" 2>&1 || { cat "$SCRATCH/alpha$us.txt"; fail "whatif --link-alpha-us $us failed"; }
done
expect_contains "$SCRATCH/alpha5000.txt" "link latency 5000 us" "what-if describes the latency"
/usr/bin/python3 - "$SCRATCH/alpha0.json" "$SCRATCH/alpha5000.json" <<'PY'
import json, sys
a0, a5 = (json.load(open(p)) for p in sys.argv[1:])
assert a5["predicted_ms"] > a0["predicted_ms"] + 5, (a0["predicted_ms"], a5["predicted_ms"])
PY

# The global DFG as neutral JSON (for peer replayers, scripts/peers/dpro_replay.py): the same
# graph `trace replay` replays (equal prediction and measurement), consistent ids, one SEND and
# one RECV per bucket, rank and ring step, durations = dur · ratio + link time.
"$LOOM" trace export-dfg "$dir" "$SCRATCH/dfg.json" > "$SCRATCH/dfg.txt" 2>&1 \
  || { cat "$SCRATCH/dfg.txt"; fail "export-dfg failed"; }
expect_contains "$SCRATCH/dfg.txt" "dfg.json" "export-dfg names its output"
/usr/bin/python3 - "$SCRATCH/dfg.json" "$SCRATCH/replay.json" <<'PY'
import json, sys
d, rep = (json.load(open(p)) for p in sys.argv[1:])
assert d["format"] == "loom-dfg" and d["version"] == 1 and d["ranks"] == 2, d.get("format")
n, loom = d["nodes"], d["loom"]
assert abs(loom["predicted_iteration_ns"] / 1e6 - rep["predicted_ms"]) <= 1e-9 * rep["predicted_ms"]
assert abs(loom["measured_iteration_ns"] / 1e6 - rep["measured_ms"]) <= 1e-9 * rep["measured_ms"]
assert abs(max(x["loom_end_ns"] for x in n) - loom["predicted_iteration_ns"]) <= 1e-6 * loom["predicted_iteration_ns"]
assert [x["id"] for x in n] == list(range(len(n)))
assert all(0 <= e["from"] < len(n) and 0 <= e["to"] < len(n) and e["gap_ns"] >= 0 for e in d["edges"])
kinds = {x["kind"] for x in n}
assert {"BW", "UPDATE", "SYNC", "SEND", "RECV"} <= kinds, kinds
m = rep["model"]
steps = 2 if m["collective"] == "allreduce" else 1
for k in ("SEND", "RECV"):
    c = sum(1 for x in n if x["kind"] == k and x["bucket"] >= 0)
    assert c == m["buckets"] * 2 * steps, (k, c, m["buckets"], steps)
for x in n:
    assert abs(x["duration_ns"] - (x["dur_ns"] * x["ratio"] + x["link_ns"])) <= 1e-6 * max(1, x["duration_ns"]), x
print("export-dfg: %d nodes, %d edges" % (len(n), len(d["edges"])))
PY
if "$LOOM" trace export-dfg "$SCRATCH/empty" "$SCRATCH/x.json" > "$SCRATCH/bad4.txt" 2>&1; then
  fail "export-dfg of an empty dir accepted"
fi
expect_contains "$SCRATCH/bad4.txt" "$SCRATCH/empty" "export-dfg error names the directory"
echo PASS
