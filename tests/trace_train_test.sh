#!/usr/bin/env bash
# `loom train --nproc 2 trace.steps=2-3` writes one Kineto JSON trace per rank: valid JSON with the
# Kineto top-level fields, ProfilerStep#2 and #3 only, forward/backward/optimizer spans, NCCL-style
# collective args, and SEND/RECV ring-step records whose flow ids match across the two files.
source "$(dirname "$0")/lib.sh"
corpus=$(make_corpus)
run=$SCRATCH/run
"$LOOM" train --nproc 2 "${TINY[@]}" steps=5 eval.every=0 data.source=file data.path="$corpus" \
  run_dir="$run" trace.steps=2-3 > "$SCRATCH/out.txt" 2>&1 \
  || { cat "$SCRATCH/out.txt"; fail "loom train exited non-zero"; }
expect_contains "$SCRATCH/out.txt" "rank0.trace.json" "rank 0 reports its trace file"
for r in 0 1; do [ -s "$run/trace/rank$r.trace.json" ] || fail "missing $run/trace/rank$r.trace.json"; done
/usr/bin/python3 - "$run/trace/rank0.trace.json" "$run/trace/rank1.trace.json" <<'PY'
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
flows = []
for rank, d in enumerate(docs):
    for k in ("schemaVersion", "traceName", "displayTimeUnit", "baseTimeNanoseconds", "traceEvents"):
        assert k in d, f"rank {rank}: missing {k}"
    di = d["distributedInfo"]
    assert di["rank"] == rank and di["world_size"] == 2 and di["backend"] == "loom", di
    assert "clock_offset_ns" in d["loom"] and d["loom"]["dropped"] == 0, d["loom"]
    if rank == 1:
        assert d["loom"]["clock_rounds"] == 32 and d["loom"]["rtt_ns"] > 0, d["loom"]
    ev = d["traceEvents"]
    names = {e["name"] for e in ev if e["ph"] == "X"}
    steps = sorted(n for n in names if n.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"], f"rank {rank}: steps {steps}"
    for n in ("forward", "backward", "optimizer", "dataloader"):
        assert n in names, f"rank {rank}: no {n} span"
    for e in ev:
        if e["ph"] == "X":
            assert e["pid"] == rank and e["dur"] >= 0 and e["args"]["step"] in (2, 3), e
    threads = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"main", "comm"} <= threads, f"rank {rank}: threads {threads}"
    coll = [e for e in ev if e["ph"] == "X" and e["cat"] == "comm" and "Group size" in e["args"]]
    assert coll and all(e["args"]["Group size"] == 2 for e in coll), "NCCL-style collective args"
    sends = [e for e in ev if e["ph"] == "X" and e["name"].startswith("SEND.")]
    recvs = [e for e in ev if e["ph"] == "X" and e["name"].startswith("RECV.")]
    assert sends and recvs, f"rank {rank}: no SEND/RECV ring-step spans"
    flows.append(({e["id"] for e in ev if e["ph"] == "s"}, {e["id"] for e in ev if e["ph"] == "f"}))
    assert len(flows[-1][0]) == len(sends) and len(flows[-1][1]) == len(recvs)
(s0, f0), (s1, f1) = flows
assert s0 == f1 and s1 == f0, "SEND flow ids of one rank must be the RECV flow ids of the other"
print(f"{len(s0)}+{len(s1)} SEND->RECV flows matched; events per rank:",
      [len(d["traceEvents"]) for d in docs])
PY
echo PASS
