#!/usr/bin/env bash
# `loom bench replay --quick`: profile the base configuration in the two-namespace testbed,
# predict 4 configurations with the what-if replay, run them for real once, and check the table,
# the JSON summary keys and bad input. Exit 77 without network namespaces.
source "$(dirname "$0")/lib.sh"
set +e
"$LOOM" bench replay --quick --reps 1 --json "$SCRATCH/replay.json" > "$SCRATCH/out.txt" 2>&1
rc=$?
set -e
if [ "$rc" -eq 77 ]; then cat "$SCRATCH/out.txt"; exit 77; fi
[ "$rc" -eq 0 ] || { cat "$SCRATCH/out.txt"; fail "bench replay --quick failed (rc $rc)"; }
expect_contains "$SCRATCH/out.txt" "200mbit/b0.25/ov/none" "the base configuration row"
expect_contains "$SCRATCH/out.txt" "50mbit/b4/seq/none" "a slower, unoverlapped configuration"
expect_contains "$SCRATCH/out.txt" "what-if replay" "the predictor table"
expect_contains "$SCRATCH/out.txt" "baseline compute+comm" "the analytical baseline"
expect_contains "$SCRATCH/out.txt" "clock-offset recovery" "the clock recovery line"
/usr/bin/python3 - "$SCRATCH/replay.json" <<'PY' || fail "replay JSON"
import json, math, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
for k in ["replay_median_error", "whatif_median_error", "whatif_p90_error", "optimizer_regret",
          "tracer_overhead", "kendall_tau", "clock_offset_max_error_us"]:
    assert isinstance(s[k], (int, float)) and math.isfinite(s[k]), (k, s.get(k))
assert s["optimizer_regret"] >= 0 and -1 <= s["kendall_tau"] <= 1
assert s["clock_offset_max_error_us"] >= 0
rows = d["results"]["configs"]
assert len(rows) == 4, len(rows)
for r in rows:
    assert r["measured_ms"] > 0 and r["whatif_ms"] > 0 and r["baseline_sum_ms"] > 0, r
    assert r["baseline_sum_ms"] >= r["baseline_overlap_ms"], r
# Bandwidth factors are tbf rate / base rate (200 Mbit). The unshaped veth was probed, and a
# shaped target at another rate is predicted on the testbed's links: a token bucket at its TCP
# goodput (rate x 1448/1514) with tbf's 256 KiB burst (of wire bytes) over the probed veth, or
# the veth alone when it is not faster than that rate. The previous mapping is scored beside it.
probe = d["results"]["unshaped_link"]
veth = probe["model_rate_MBps"]
assert probe["bytes"] == 1048576 and probe["goodput_MBps"] > 0 and veth > 0, probe
assert probe["reduce_scatter"]["time_us"] > 0 and probe["allgather"]["time_us"] > 0, probe
assert "whatif_scaled_fits" in s, sorted(s)
by = {r["config"]: r for r in rows}
for cfg, bps, ratio in [("1gbit/b0.25/ov/none", 1e9, 5.0), ("50mbit/b4/seq/none", 50e6, 0.25)]:
    assert abs(by[cfg]["bandwidth_scale"] - ratio) < 1e-9, (cfg, by[cfg]["bandwidth_scale"], ratio)
    assert by[cfg]["whatif_scaled_fits_ms"] > 0, by[cfg]
    text = by[cfg]["whatif"]
    want = bps / 8 * 1448 / 1514 / 1e6
    if veth > want:
        assert text.startswith("links tbf ") or ", links tbf " in text, (cfg, text)
        rate = float(text.split("links tbf ")[1].split(" MB/s")[0])
        burst = float(text.split(" burst ")[1].split(" B at ")[0])
        line = float(text.split(" B at ")[1].split(" MB/s")[0])
        assert abs(rate - want) < 1e-4 * want, (cfg, rate, want)
        assert abs(burst - 262144 * 1448 / 1514) < 1, (cfg, burst)
        assert abs(line - veth) < 1e-4 * veth, (cfg, line, veth)
    else:
        rate = float(text.split("links ")[1].split(" MB/s")[0])
        assert abs(rate - veth) < 1e-4 * veth, (cfg, rate, veth)
assert by["200mbit/b0.25/ov/int4"]["whatif"].find("int4") >= 0, by["200mbit/b0.25/ov/int4"]
assert len(d["results"]["base_runs"]) == 2  # the profile + one traced repetition
print("json ok")
PY
set +e
"$LOOM" bench replay --quick --reps 0 > "$SCRATCH/bad.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--reps 0 should be a usage error (rc $rc)"
expect_contains "$SCRATCH/bad.txt" "reps must be >= 1" "the bad flag named"
set +e
"$LOOM" bench replay --quick --testbed /nonexistent/tb.sh > "$SCRATCH/bad2.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "a missing testbed script should fail"
expect_contains "$SCRATCH/bad2.txt" "/nonexistent/tb.sh" "the missing testbed named"
echo PASS
