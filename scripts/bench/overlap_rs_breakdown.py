#!/usr/bin/env python3
"""Per-trial GEMM+RS breakdown of a `loom bench overlap` JSON (issue 7's gap analysis).

For every gemm_rs arm (or the labels given) and variant: medians over trials of the op time t_x,
the variant's own compute time t_c (GEMM + owner's reduction on the compute thread), its link busy
time t_m, R_own = t_m / t_c, the time blocked waiting for partials, the proxy's CPU duty, and the
closed form from that trial's own t_c and t_m (W = 2):
    decomposed  t_c/2 + max(t_c/2, t_m)        fused(S)  max(t_c, t_c/(2S) + t_m)
For the fused variants it prints decomposed/fused measured (median of per-trial ratios) beside
the same ratio of the closed forms: when the two agree, the schedule is at its model and a ratio
below 1.41 comes from R_own != 1, not from the schedule.

    scripts/bench/overlap_rs_breakdown.py RUN.json [R=1 ...]
"""
import json
import statistics as st
import sys

doc = json.load(open(sys.argv[1]))
for w in doc["results"]["workloads"]:
    if w["workload"]["op"] != "gemm_rs":
        continue
    for arm in w["arms"]:
        if arm["label"] == "unlimited" or (len(sys.argv) > 2 and arm["label"] not in sys.argv[2:]):
            continue
        rows = {}
        for tr in arm["trials"]:
            for v, x in tr["x"].items():
                if v == "auto" or v == "sequential":
                    continue
                tc, tm, wall = x["compute_s"], x["link_busy_s"], x["wall_s"]
                if v == "decomposed":
                    model = tc / 2 + max(tc / 2, tm)
                else:
                    s = int(v.split("_s")[1])
                    model = max(tc, tc / (2 * s) + tm)
                rows.setdefault(v, []).append((wall, model, tc, tm, x["wait_s"], tm / tc,
                                               x["proxy_cpu_s"] / wall))
        print(f"{w['workload']['name']} {arm['label']} (B {arm['bytes_per_second']/1e6:.1f} MB/s, "
              f"{len(arm['trials'])} trials; medians; ms)")
        print(f"  {'variant':11s} {'t_x':>7s} {'model':>7s} {'x/model':>7s} {'t_c':>7s} "
              f"{'t_m':>7s} {'R_own':>6s} {'wait':>7s} {'duty':>6s}")
        dec = rows.get("decomposed")
        for v, r in sorted(rows.items(), key=lambda kv: (kv[0] != "decomposed", len(kv[0]), kv[0])):
            med = lambda i: st.median(x[i] for x in r)
            ratio = st.median(x[0] / x[1] for x in r)
            line = (f"  {v:11s} {med(0)*1e3:7.1f} {med(1)*1e3:7.1f} {ratio:7.3f} {med(2)*1e3:7.1f} "
                    f"{med(3)*1e3:7.1f} {med(5):6.2f} {med(4)*1e3:7.1f} {med(6):6.3f}")
            if dec and v != "decomposed":
                meas = st.median(d[0] / f[0] for d, f in zip(dec, r))
                mod = st.median(d[1] / f[1] for d, f in zip(dec, r))
                line += f"   dec/this measured {meas:.3f} model {mod:.3f}"
            print(line)
