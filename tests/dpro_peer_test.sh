#!/usr/bin/env bash
# dPRO's own replayer on loom's exported DFG (scripts/peers/dpro_replay.py), when a dPRO checkout
# is given in LOOM_DPRO_CHECKOUT (exit 77 otherwise: the checkout is the user's, never fetched).
# 1. A hand-built graph whose times are known (FW 3..13 after a 3 ns release, 2 ns gap, BW
#    15..45, 6 ns BW->SEND gap, SEND 51..2155 on its α-β link, RECV 2155..2162): dPRO must give
#    2162 ns, with the release folded and both gaps in dPRO's own gap attributes.
# 2. A traced 2-rank TINY run exported with κ fixed to 1 (a model dPRO can express): dPRO's
#    prediction and every node's start and end equal loom's replay of the same graph.
source "$(dirname "$0")/lib.sh"
[[ -n ${LOOM_DPRO_CHECKOUT:-} ]] \
  || { echo "SKIP: set LOOM_DPRO_CHECKOUT to a dPRO checkout"; exit 77; }
peer=$(cd "$(dirname "$0")/.." && pwd)/scripts/peers/dpro_replay.py
/usr/bin/python3 -c "import networkx, ujson, tqdm, xlsxwriter, matplotlib, intervaltree" \
  2>/dev/null \
  || { echo "SKIP: dPRO's Python dependencies are not installed"; exit 77; }

cat > "$SCRATCH/small.json" <<'EOF'
{"format":"loom-dfg","version":1,"time_unit":"ns","source":"hand","ranks":2,"kappa":[1,1],
"devices":[{"id":0,"name":"rank0.compute","kind":"serial","rank":0,"is_comm":false,"gap_ns":0},
{"id":1,"name":"rank0.comm","kind":"serial","rank":0,"is_comm":true,"gap_ns":0},
{"id":2,"name":"rank1.comm","kind":"serial","rank":1,"is_comm":true,"gap_ns":0}],
"links":[{"id":0,"name":"rank0.egress","alpha_ns":100,"ns_per_byte":2,"shared":false}],
"nodes":[
{"id":0,"name":"rank0->FW.a","kind":"FW","rank":0,"device":0,"duration_ns":10,"bucket":-1,"priority":0,"release_ns":3,"loom_start_ns":3,"loom_end_ns":13},
{"id":1,"name":"rank0->BW.g0","kind":"BW","rank":0,"device":0,"duration_ns":30,"bucket":-1,"priority":2,"release_ns":0,"loom_start_ns":15,"loom_end_ns":45},
{"id":2,"name":"rank0->Comm.b0.SEND~>0","kind":"SEND","rank":0,"device":1,"duration_ns":2104,"bucket":0,"priority":100,"release_ns":0,"loom_start_ns":51,"loom_end_ns":2155},
{"id":3,"name":"rank1->Comm.b0.RECV~>0","kind":"RECV","rank":1,"device":2,"duration_ns":7,"bucket":0,"priority":100,"release_ns":0,"loom_start_ns":2155,"loom_end_ns":2162}],
"edges":[{"from":0,"to":1,"gap_ns":2},{"from":1,"to":2,"gap_ns":6},{"from":2,"to":3,"gap_ns":0}],
"loom":{"predicted_iteration_ns":2162}}
EOF
/usr/bin/python3 "$peer" "$LOOM_DPRO_CHECKOUT" "$SCRATCH/small.json" \
  --json "$SCRATCH/small.out.json" \
  > "$SCRATCH/small.txt" 2>&1 || { cat "$SCRATCH/small.txt"; fail "dpro_replay.py on the hand graph"; }

corpus=$(make_corpus)
"$LOOM" train --nproc 2 "${TINY[@]}" steps=12 eval.every=0 data.source=file data.path="$corpus" \
  run_dir="$SCRATCH/run" trace.steps=4-11 > "$SCRATCH/train.txt" 2>&1 \
  || { cat "$SCRATCH/train.txt"; fail "loom train exited non-zero"; }
"$LOOM" trace export-dfg "$SCRATCH/run" "$SCRATCH/dfg.json" --kappa 1 > "$SCRATCH/export.txt" 2>&1 \
  || { cat "$SCRATCH/export.txt"; fail "export-dfg failed"; }
/usr/bin/python3 "$peer" "$LOOM_DPRO_CHECKOUT" "$SCRATCH/dfg.json" --json "$SCRATCH/run.out.json" \
  > "$SCRATCH/run.txt" 2>&1 || { cat "$SCRATCH/run.txt"; fail "dpro_replay.py on the TINY run"; }
if /usr/bin/python3 "$peer" "$SCRATCH" "$SCRATCH/dfg.json" > "$SCRATCH/bad.txt" 2>&1; then
  fail "a directory without dpro/replay.py was accepted as a dPRO checkout"
fi
expect_contains "$SCRATCH/bad.txt" "is not a dPRO checkout" "bad checkout error"

/usr/bin/python3 - "$SCRATCH/small.out.json" "$SCRATCH/run.out.json" <<'PY'
import json, sys
small, run = (json.load(open(p)) for p in sys.argv[1:])
assert abs(small["dpro_predicted_iter_ms"] * 1e6 - 2162) < 1e-6, small["dpro_predicted_iter_ms"]
c = small["conversion"]
assert c["release_folded_ns"] == 3 and c["dropped_edges"] == 0 and c["folded_nodes"] == 0, c
assert c["edge_gaps"] == 2 and c["priority_mismatches"] == 0, c
assert small["node_end_abs_diff_vs_loom_us"]["max"] < 1e-9, small["node_end_abs_diff_vs_loom_us"]
assert abs(run["dpro_vs_loom"]) < 1e-9, run["dpro_vs_loom"]
assert run["node_end_abs_diff_vs_loom_us"]["nodes_over_1us"] == 0, run["node_end_abs_diff_vs_loom_us"]
assert run["node_start_abs_diff_vs_loom_us"]["nodes_over_1us"] == 0, run["node_start_abs_diff_vs_loom_us"]
assert run["conversion"]["nodes"] > 10 and run["conversion"]["priority_mismatches"] == 0, run["conversion"]
print("dPRO: hand graph %.0f ns; TINY run %.3f ms = loom %.3f ms (%d nodes)" % (
    small["dpro_predicted_iter_ms"] * 1e6, run["dpro_predicted_iter_ms"],
    run["loom_predicted_iter_ms"], run["conversion"]["nodes"]))
PY
echo PASS
