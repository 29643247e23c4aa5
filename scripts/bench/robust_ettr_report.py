"""Scores one scripts/bench/robust_ettr.sh run from its work directory (or a KEEP= copy of it):
per arm the ETTR, the final step, step times, attempts, and per injected fault its downtime
(onset -> the first step of a later attempt) and lost work (steps redone after the restore).

    /usr/bin/python3 scripts/bench/robust_ettr_report.py --work DIR --t0-ms T0 --t1-ms T1 \
        --out FILE.json [--arms loom,tuned,default] [--loom-ckpt-every 400] ...

ETTR = S_final x median step time / wall time. S_final is the last step of the run (the steps
that count); the median is over every step of every attempt. Detection, restarts, redone steps,
checkpoint stalls and start-up are the unproductive rest. On a shared host the median hides slow
stretches, so the report also gives the productive fraction: the measured durations of the steps
that count (each attempt's steps up to where the next attempt restored) over the wall time. It
charges only downtime, redone steps and start-up; checkpoint saves inside a step count as work.
"""
import argparse
import json
import os
import re
import statistics


def loom_rows(work):
    """[(attempt, step, duration_s or None)] from metrics.jsonl (every attempt appends to it;
    elapsed_s restarts and step drops back where an attempt restored)."""
    rows, att, prev = [], 0, None
    for line in open(os.path.join(work, "loom/run/train/metrics.jsonl")):
        if '"loss"' not in line:
            continue
        r = json.loads(line)
        if prev and (r["step"] <= prev["step"] or r["elapsed_s"] < prev["elapsed_s"]):
            att, prev = att + 1, None
        dur = None
        if prev:
            dur = (r["elapsed_s"] - prev["elapsed_s"]) / (r["step"] - prev["step"])
        rows.append((att, r["step"], dur, dur * (r["step"] - prev["step"]) if prev else None))
        prev = r
    return rows


def torchrun_rows(work, arm):
    """[(restart, step, ts_s, duration_s or None)] of rank 0's step events."""
    rows, prev = [], None
    for line in open(os.path.join(work, arm, "events.jsonl")):
        e = json.loads(line)
        if e["event"] != "step":
            continue
        dur = None
        if prev and prev["restart"] == e["restart"] and e["step"] == prev["step"] + 1:
            dur = (e["ts_ms"] - prev["ts_ms"]) / 1000.0
        rows.append((e["restart"], e["step"], e["ts_ms"] / 1000.0, dur))
        prev = e
    return rows


def onset_of(work, fault):
    path = fault["inject_log"]
    if not os.path.isabs(path):
        path = os.path.join(work, path)
    else:  # older runs logged absolute paths into their (since removed) work directory
        path = os.path.join(work, fault["arm"], os.path.basename(path))
    return [json.loads(l) for l in open(path) if l.strip()][0]["onset_ms"] / 1000.0


def score_loom(work, a, faults, t0):
    rows = loom_rows(work)
    dec = [json.loads(l) for l in open(os.path.join(work, "loom/run/robust/decisions.jsonl"))]
    a["evictions"] = [r["text"].split(" ")[0] for r in dec if r["state"] == "EVICT"]
    a["incidents"] = sum(1 for r in dec if r["state"] == "SUSPENDED")
    a["attempts"] = sum(1 for r in dec if r["state"] == "LAUNCH") or 1 + rows[-1][0]
    running = [r["ts_ms"] / 1000.0 for r in dec
               if r["state"] == "RUNNING" and "completed step" in r.get("text", "")]
    incidents = [r["ts_ms"] / 1000.0 for r in dec if r["state"] == "SUSPENDED"]
    restores = [r for r in dec if r["state"] == "RESTORE" and "step" in r]
    last_of = {}  # attempt -> last logged step (rows are logged every log.every steps)
    for att, step, _, _ in rows:
        last_of[att] = step
    for f in faults:
        g = fault_base(work, f, t0)
        if "onset_s" in g:
            onset = g["onset_s"] + t0
            after = [t for t in running if t > onset]
            if after:
                g["downtime_s"] = after[0] - onset
            else:
                g["not_recovered_by_end"] = True
            det = [t for t in incidents if t >= onset - 1]
            if det:
                g["detect_s"] = det[0] - onset
            # The restore that followed this fault, and the attempt it ended.
            k = sum(1 for t in incidents if t < onset - 1)  # incidents before this one
            if k < len(restores) and k in last_of:
                g["restored_step"] = restores[k]["step"]
                g["lost_steps"] = max(0, last_of[k] - restores[k]["step"])
        a["faults"].append(g)
    # Attempt k + 1 restored restores[k]: attempt k's steps after it were redone.
    cut = {k: r["step"] for k, r in enumerate(restores)}
    a["productive_s"] = sum(iv for att, step, _, iv in rows
                            if iv is not None and step <= cut.get(att, float("inf")))
    return [(att, step, d) for att, step, d, _ in rows]


def score_torchrun(work, arm, a, faults, t0):
    rows = torchrun_rows(work, arm)
    ev = [json.loads(l) for l in open(os.path.join(work, arm, "events.jsonl")) if l.strip()]
    starts = [e for e in ev if e["event"] == "start" and e["rank"] == 0]
    a["attempts"] = 1 + max([e["restart"] for e in starts] + [0])
    for f in faults:
        g = fault_base(work, f, t0)
        if "onset_s" in g:
            onset = g["onset_s"] + t0
            before = [r for r in rows if r[2] <= onset]
            att = before[-1][0] if before else 0
            after = [r[2] for r in rows if r[0] > att and r[2] > onset]
            if after:
                g["downtime_s"] = after[0] - onset
            else:
                g["not_recovered_by_end"] = True
            nxt = [e for e in starts if e["restart"] == att + 1]
            if before and nxt:
                g["restored_step"] = nxt[0]["resumed_step"]
                g["lost_steps"] = max(0, before[-1][1] - nxt[0]["resumed_step"])
        a["faults"].append(g)
    resumed = {e["restart"]: e["resumed_step"] for e in starts}
    a["productive_s"] = sum(r[3] for r in rows if r[3] is not None
                            and r[1] <= resumed.get(r[0] + 1, float("inf")))
    return [(r[0], r[1], r[3]) for r in rows]


def fault_base(work, f, t0):
    g = {"fault": f["fault"], "type": f["type"]}
    if "skipped" in f:
        g["skipped"] = f["skipped"]
        g["ts_s"] = f["ts_ms"] / 1000.0 - t0
        return g
    g["target"] = f["target"]
    try:
        g["onset_s"] = onset_of(work, f) - t0
    except (OSError, IndexError, KeyError, ValueError) as e:
        g["error"] = "no ground-truth onset: %s" % e
    return g


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--t0-ms", type=int, required=True)
    p.add_argument("--t1-ms", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arms", default="loom,tuned,default")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--label", default="")
    p.add_argument("--loom-sha", default="")
    p.add_argument("--loom-ckpt-every", type=int, default=400)
    p.add_argument("--torchrun-ckpt-every", type=int, default=1000)
    p.add_argument("--straggler-threshold", default="0.75")
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--types", default="hang,crash")
    o = p.parse_args()
    t0, t1 = o.t0_ms / 1000.0, o.t1_ms / 1000.0
    wall = t1 - t0
    faults = [json.loads(l) for l in open(os.path.join(o.work, "faults.jsonl")) if l.strip()]
    result = {
        "commit": o.commit, "label": o.label, "loom_sha256_12": o.loom_sha, "minutes": o.minutes,
        "t0_ms": o.t0_ms, "t1_ms": o.t1_ms, "wall_s": wall, "fault_types": o.types.split(","),
        "definition": "ETTR = S_final x median step time / wall time",
        "setups": {
            "loom": "loom robust --machines 2 --standby k --heartbeat-ms 250 --confirm 2 "
                    "--straggler-threshold %s; loom train (tiny) ckpt.every=%d"
                    % (o.straggler_threshold, o.loom_ckpt_every),
            "tuned": "torchrun --monitor_interval 1 --max_restarts 2k+2, pg timeout 30 s, FileTimer "
                     "expires(after=10); torchrun_peer.py --width 512 --ckpt-every %d"
                     % o.torchrun_ckpt_every,
            "default": "torchrun --max_restarts 2k+2 (monitor 5 s, collective timeout 30 min); "
                       "torchrun_peer.py --width 512 --ckpt-every %d" % o.torchrun_ckpt_every},
        "arms": {}}
    for arm in o.arms.split(","):
        a = {"faults": []}
        mine = [f for f in faults if f["arm"] == arm]
        try:
            if arm == "loom":
                rows = score_loom(o.work, a, mine, t0)
            else:
                rows = score_torchrun(o.work, arm, a, mine, t0)
        except OSError as e:
            result["arms"][arm] = {"error": str(e)}
            continue
        durs = [d for (_, _, d) in rows if d is not None and d > 0]
        med = statistics.median(durs) if durs else None
        a["steps_final"] = rows[-1][1] if rows else 0
        a["median_step_s"] = med
        a["mean_step_s"] = statistics.fmean(durs) if durs else None
        a["ettr"] = a["steps_final"] * med / wall if med else 0.0
        a["productive_fraction"] = a["productive_s"] / wall
        every = o.loom_ckpt_every if arm == "loom" else o.torchrun_ckpt_every
        a["ckpt_interval_s"] = every * med if med else None
        for g in a["faults"]:
            if "lost_steps" in g and med:
                g["lost_work_s"] = g["lost_steps"] * med
        result["arms"][arm] = a
    with open(o.out, "w") as f:
        json.dump(result, f, indent=1)
    print("%-8s %6s %6s %8s %9s %9s %8s  %s" % ("arm", "ETTR", "prod", "S_final", "med step",
                                                "ckpt int", "attempts",
                                                "per fault: downtime / lost work (s)"))
    for arm, a in result["arms"].items():
        if "error" in a:
            print(arm, a["error"])
            continue
        cells = []
        for g in a["faults"]:
            if "skipped" in g:
                cells.append("skipped (down)")
            elif g.get("not_recovered_by_end"):
                cells.append("never")
            else:
                cells.append("%.1f / %s" % (g.get("downtime_s", float("nan")),
                                             "%.1f" % g["lost_work_s"] if "lost_work_s" in g else "?"))
        print("%-8s %6.3f %6.3f %8d %7.1fms %8.1fs %8d  %s" % (
            arm, a["ettr"], a["productive_fraction"], a["steps_final"], 1000 * (a["median_step_s"] or 0),
            a["ckpt_interval_s"] or 0, a["attempts"], ", ".join(cells)))
    print("wall %.1f s; wrote %s" % (wall, o.out))


if __name__ == "__main__":
    main()
