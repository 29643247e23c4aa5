#!/usr/bin/env python3
"""Per-layer MoE breakdown of a `loom bench overlap` JSON (issue 7's gap analysis).

The MoE workload is two ops: layer 0 (dispatch + grouped GEMM, an all-gather-like schedule) and
layer 1 (grouped GEMM + combine, sent in column chunks). Each trial records every variant's
per-layer wall times (`parts`) and the reference variant's compute-only and comm-only layers
(`t_comp_parts`, `t_comm_parts`; the ranks merged by max). Per arm and variant this prints the
medians over trials of each layer's time beside its closed form from that trial's own t_c and
t_m per layer (W = 2; C = 2 decomposed column chunks; S = the fused splits):

    layer 0  sequential t_c + t_m    decomposed max(t_c, t_m + t_c/W)    fused max(t_c, t_m + t_c/(W S))
    layer 1  sequential t_c + t_m    chunked pipeline of k chunks: t_c/k + (k-1) max(t_c, t_m)/k + t_m/k
             (decomposed k = C, fused k = S)

and, for the fused variants, decomposed/fused measured beside the same ratio of the models.
`layers_s<S>` is the per-layer fused schedule (each layer fused, one after the other). `fused_s<S>`
is MoePair's cross-layer schedule; its layer columns are layer 0's tiles and the rest of the call,
and its model is the block's, with C = t_c0 + t_c1:

    cross-layer  max(C + t_m1/S, t_m0 + t_c1 (W-1)/(W S) + t_m1)

(the cores run every GEMM and then wait for the last combine chunk; the link carries the dispatch,
then the combine, whose first split needs the remote rows' first layer-1 split).

    scripts/bench/overlap_moe_breakdown.py RUN.json [R=1 ...]
"""
import json
import statistics as st
import sys

W, C = 2, 2


def layer0_model(v, tc, tm):
    if v == "sequential":
        return tc + tm
    if v == "decomposed":
        return max(tc, tm + tc / W)
    s = int(v.split("_s")[1])
    return max(tc, tm + tc / (W * s))


def layer1_model(v, tc, tm):
    if v == "sequential":
        return tc + tm
    k = C if v == "decomposed" else int(v.split("_s")[1])
    return tc / k + (k - 1) * max(tc, tm) / k + tm / k


def cross_layer_model(v, tc, tm):
    s = int(v.split("_s")[1])
    return max(tc[0] + tc[1] + tm[1] / s, tm[0] + tc[1] * (W - 1) / (W * s) + tm[1])


def models(v, tc, tm):
    """(layer 0, layer 1) models; the cross-layer schedule's block model is split evenly."""
    if v.startswith("fused_s"):
        return [cross_layer_model(v, tc, tm) / 2] * 2
    v = v.replace("layers_s", "fused_s")
    return [layer0_model(v, tc[0], tm[0]), layer1_model(v, tc[1], tm[1])]


def main():
    doc = json.load(open(sys.argv[1]))
    for w in doc["results"]["workloads"]:
        if w["workload"]["op"] != "moe":
            continue
        for arm in w["arms"]:
            if len(sys.argv) > 2 and arm["label"] not in sys.argv[2:]:
                continue
            rows = {}
            for tr in arm["trials"]:
                if "t_comp_parts" not in tr:
                    sys.exit("overlap_moe_breakdown: no per-layer times in this JSON (older run)")
                tc = [tr["t_comp_parts"][f"layer{i}_s"] for i in (0, 1)]
                tm = [tr["t_comm_parts"][f"layer{i}_s"] for i in (0, 1)]
                for v, x in tr["x"].items():
                    if v == "auto":
                        continue
                    lay = [x["parts"][f"layer{i}_s"] for i in (0, 1)]
                    mod = models(v, tc, tm)
                    rows.setdefault(v, []).append((lay[0], mod[0], lay[1], mod[1], x["wall_s"],
                                                   tc[0], tm[0], tc[1], tm[1]))
            print(f"{w['workload']['name']} {arm['label']} "
                  f"(B {arm['bytes_per_second'] / 1e6:.1f} MB/s, {len(arm['trials'])} trials; "
                  f"medians; ms)")
            r0 = next(iter(rows.values()))
            med = lambda r, i: st.median(x[i] for x in r) * 1e3  # noqa: E731
            print(f"  reference layers: t_c {med(r0, 5):.1f} + {med(r0, 7):.1f}, "
                  f"t_m {med(r0, 6):.1f} + {med(r0, 8):.1f}")
            print(f"  {'variant':11s} {'L0':>7s} {'model':>7s} {'L1':>7s} {'model':>7s} "
                  f"{'L0/mod':>6s} {'L1/mod':>6s} {'t_x':>7s}")
            dec = rows.get("decomposed")
            order = sorted(rows, key=lambda v: (v != "sequential", v != "decomposed", len(v), v))
            for v in order:
                r = rows[v]
                q0 = st.median(x[0] / x[1] for x in r)
                q1 = st.median(x[2] / x[3] for x in r)
                line = (f"  {v:11s} {med(r, 0):7.1f} {med(r, 1):7.1f} {med(r, 2):7.1f} "
                        f"{med(r, 3):7.1f} {q0:6.3f} {q1:6.3f} {med(r, 4):7.1f}")
                if v.startswith("fused"):
                    line = (f"  {v:11s} {med(r, 0):7.1f} {'':>7s} {med(r, 2):7.1f} {'':>7s} "
                            f"{'block':>6s} {med(r, 4) / (med(r, 1) + med(r, 3)):6.3f} "
                            f"{med(r, 4):7.1f}")
                if dec and (v.startswith("fused") or v.startswith("layers")):
                    meas = st.median(d[4] / f[4] for d, f in zip(dec, r))
                    mod = st.median((d[1] + d[3]) / (f[1] + f[3]) for d, f in zip(dec, r))
                    line += f"   dec/this measured {meas:.3f} model {mod:.3f}"
                print(line)


if __name__ == "__main__":
    main()
