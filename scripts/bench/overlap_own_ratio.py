#!/usr/bin/env python3
"""The R = 1 target of `loom bench overlap` judged at each trial's own R, over one or more runs.

Reads the `own_ratio` metrics the benchmark writes per arm (src/loom/overlap/bench/own_ratio.h)
and prints, per run and workload, for the arms labelled R (default 1) and the best fused S:
the per-trial R (median and IQR of t_comm / the round's t_comp), the pair's own R, measured
fused/decomposed (median of per-trial ratios), the closed form at the pairs' own R, and the same
restricted to pairs in the band (both variants' own R in [0.8, 1.25]). Then every run's in-band
pairs of each op pooled: the median measured fused/decomposed against the 1.3x target, and the
median of measured / closed form at each variant's own t_c.

    scripts/bench/overlap_own_ratio.py RUN.json [RUN2.json ...] [--ratio 1] [--splits best|8|16]
"""
import argparse
import json
import statistics as st


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+")
    p.add_argument("--ratio", type=float, default=1.0)
    p.add_argument("--splits", default="best", help="best (the arm's fastest S) or an S value")
    a = p.parse_args()
    pooled = {}
    print("| run | workload | R own (median, IQR) | R_pair | fused/dec | closed form at R_pair | "
          "measured / closed form (own t_c) | pairs in band | fused/dec in band | "
          "closed form in band |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in a.runs:
        doc = json.load(open(path))
        run = path.rsplit("/", 1)[-1].removesuffix(".json")
        for w in doc["results"]["workloads"]:
            for arm in w["arms"]:
                if arm.get("ratio") is None or abs(arm["ratio"] - a.ratio) > 1e-9:
                    continue
                own = arm["metrics"]["own_ratio"]
                key = "fused_best" if a.splits == "best" else f"fused_s{a.splits}"
                pair = own["pairs"][key]
                s = (arm["metrics"]["best_fused"] if a.splits == "best" else key)[7:]
                lo, hi = own["band"]
                rs = own["r_trial_stats"]
                inb = pair["in_band"]
                print(f"| {run} | {w['workload']['name']} (S={s}) | {fmt(rs['median'])} "
                      f"({fmt(rs['p25'])}-{fmt(rs['p75'])}) "
                      f"| {fmt(pair['r_pair_stats']['median'])} "
                      f"| {fmt(pair['measured_median'], '%.3f')} "
                      f"| {fmt(pair['closed_form_median'], '%.3f')} "
                      f"| {fmt(pair['vs_closed_form_median'], '%.3f')} "
                      f"({fmt(pair['vs_closed_form_own_tc_median'], '%.3f')}) | {inb['n']}/"
                      f"{len(pair['r_pair'])} | {fmt(inb['measured_median'], '%.3f')} "
                      f"| {fmt(inb['closed_form_median'], '%.3f')} |")
                acc = pooled.setdefault(w["workload"]["op"], {"m": [], "cf": [], "v": [], "n": 0})
                acc["n"] += len(pair["r_pair"])
                for inb_i, m, cf, v in zip(pair["in_band_flags"], pair["measured"],
                                           pair["closed_form"], pair["vs_closed_form_own_tc"]):
                    if inb_i and m is not None:
                        acc["m"].append(m)
                        acc["cf"].append(cf)
                        acc["v"].append(v)
    print()
    for op, acc in pooled.items():
        if not acc["m"]:
            print(f"{op}: no pair in the band")
            continue
        m, cf = st.median(acc["m"]), st.median(acc["cf"])
        q = st.quantiles(acc["m"], n=4) if len(acc["m"]) > 1 else [m, m, m]
        print(f"{op}: {len(acc['m'])} of {acc['n']} pairs with own R in the band; fused/dec "
              f"median {m:.3f} (IQR {q[0]:.3f}-{q[2]:.3f}), closed form median {cf:.3f}, "
              f"share of pairs >= 1.3: {sum(x >= 1.3 for x in acc['m']) / len(acc['m']):.2f}, "
              f"measured / closed form at own t_c {st.median(acc['v']):.3f}; "
              f"target fused >= 1.3x decomposed: {'met' if m >= 1.3 else 'NOT met'}")


if __name__ == "__main__":
    main()
