#!/usr/bin/python3
"""dPRO's own Python replayer on loom's global data-flow graph (issue 6, peer replayer).

    loom trace export-dfg RUN_DIR dfg.json [--split 256KiB ...]
    /usr/bin/python3 scripts/peers/dpro_replay.py /path/to/dpro-checkout dfg.json \
        [--backend NCCL|default] [--json OUT] [--trace-out synthetic.json]

Reads the neutral JSON `loom trace export-dfg` writes (loom/trace/replay/dfg_json.h), converts it
to dPRO's graph (networkx DiGraph, long names "host0.rank<r>-><op>", node attribute "avg" in ms,
gap attributes in µs), runs dPRO's `replay.Replayer` on it and prints (and with --json writes) the
predicted iteration next to loom's prediction, the measured iteration and the analytical
baselines that the export carries.

The dPRO checkout is the user's (e.g. a clone of github.com/joapolarbear/dpro); this script never
downloads or builds it. Only dPRO's replayer is imported: the package `dpro` is registered
without running dpro/__init__.py (which imports the trace collector and its BytePS/scapy
dependencies), and when `cvxpy` is not installed an empty module stands in for it — dPRO imports
it at the top of bps_helper/graph.py but uses it only for BytePS clock alignment, which the
replayer of an NCCL/default-backend graph never calls. Nothing of dPRO's logic is replaced.
Needs Debian's python3-networkx, python3-ujson, python3-tqdm, python3-xlsxwriter,
python3-matplotlib, python3-intervaltree, python3-numpy.

What dPRO's graph vocabulary can and cannot say (each reported under "conversion"):
  * per-node durations, data edges, per-(rank, category) serial devices, queue priorities by
    name (FW 0 < OUTPUT 1 < BW 2 < UPDATE_ 3 < Comm 100): mapped one to one;
  * gaps: dPRO has a per-node gap to the next op on the same device ("<cat>GAP<cat>") and a
    per-node gap from an operator/Sync to its Comm successors ("operatorGAPComm"). A loom edge
    gap of another shape is first folded into the source node's duration (the minimum over its
    out-edges: exact for every successor's ready time, the device is held instead of idle); what
    still does not fit is dropped (dropped_gap_ns) or, where one per-node value must serve edges
    with different gaps, over-applied (extra_gap_ns);
  * release times (the step's head gap): folded into the first node's duration;
  * κ (compute slowed while comm runs) and processor-shared links: dPRO has neither (ignored);
  * Sync nodes run on dPRO's own "Comm~>Sync" queue, loom runs them on the rank's comm device;
  * device-less nodes (loom's zero-length STEP_END) run on the rank's compute device.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

KIND_PRIORITY_NAME = {"FW": "FW", "BW": "BW", "UPDATE": "UPDATE_", "OTHER": "OUTPUT"}
COMM_OP = {"SYNC": "Sync", "SEND": "SEND", "RECV": "RECV", "COMPRESS": "COMPRESS",
           "DECOMPRESS": "DECOMPRESS", "OTHER": "OTHER"}


def fail(msg):
    print("dpro_replay: " + msg, file=sys.stderr)
    sys.exit(2)


def load_dpro(checkout):
    """Imports dPRO's replayer from a checkout; returns (modules, shims, commit)."""
    pkg_dir = os.path.join(checkout, "dpro")
    if not os.path.isfile(os.path.join(pkg_dir, "replay.py")):
        fail("'%s' is not a dPRO checkout (no dpro/replay.py)" % checkout)
    os.environ.setdefault("MPLBACKEND", "Agg")  # dag_utils imports matplotlib.pyplot
    shims = []
    pkg = types.ModuleType("dpro")
    pkg.__path__ = [pkg_dir]
    pkg.__file__ = os.path.join(pkg_dir, "__init__.py")
    sys.modules["dpro"] = pkg
    shims.append("dpro/__init__.py not run (it imports the collector: scapy, BytePS helpers)")
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        sys.modules["cvxpy"] = types.ModuleType("cvxpy")
        shims.append("cvxpy: empty module (imported by dpro/bps_helper/graph.py, used only for "
                     "BytePS clock alignment)")
    try:
        import dpro.replay as replay
        import dpro.trace_utils as trace_utils
        import dpro.logger_utils as logger_utils
    except ImportError as e:
        fail("cannot import dPRO's replayer from '%s': %s (Debian: apt-get install "
             "python3-networkx python3-ujson python3-tqdm python3-xlsxwriter "
             "python3-matplotlib python3-intervaltree)" % (checkout, e))
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return replay, trace_utils, logger_utils, shims, commit


def read_dfg(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail("cannot read '%s': %s" % (path, e))
    except ValueError as e:
        fail("'%s' is not JSON: %s" % (path, e))
    if doc.get("format") != "loom-dfg" or doc.get("version") != 1:
        fail("'%s' is not a loom-dfg version 1 file (write it with `loom trace export-dfg`)"
             % path)
    for key in ("nodes", "edges", "devices"):
        if key not in doc:
            fail("'%s' has no \"%s\"" % (path, key))
    return doc


def dpro_name(node, devices):
    """dPRO long name of a loom node: the category and priority dPRO derives from the name."""
    rank, kind, nid = node["rank"], node["kind"], node["id"]
    if rank < 0:
        fail("node %d ('%s') has no rank" % (nid, node["name"]))
    pid = "host0.rank%d" % rank
    dev = node["device"]
    if dev >= 0 and devices[dev]["is_comm"]:
        group = "b%d" % node["bucket"] if node["bucket"] >= 0 else "x"
        return "%s->Comm.%s.%s~>%d" % (pid, group, COMM_OP.get(kind, "OTHER"), nid)
    if kind in KIND_PRIORITY_NAME:
        return "%s->%s.n%d" % (pid, KIND_PRIORITY_NAME[kind], nid)
    # Comm work on a compute device (ZeRO-1's parameter all-gather inside the optimizer step):
    # an operator for dPRO, priority 100 as loom's comm kinds.
    return "%s->COMP.n%d_%s" % (pid, nid, kind.lower())


def convert(doc, replay_mod, trace_utils):
    """loom-dfg JSON -> (networkx DiGraph in dPRO's vocabulary, names, conversion report)."""
    import networkx as nx
    nodes, edges, devices = doc["nodes"], doc["edges"], doc["devices"]
    names = [dpro_name(n, devices) for n in nodes]
    cat = [trace_utils.parse_cat_from_name(s) for s in names]

    # dPRO's device of a name, as Replayer.name2device picks it for the NCCL/default backends
    # (needed before the replayer exists; run_dpro checks it against dPRO's own choice).
    def dpro_device(i):
        pid = trace_utils.parse_pid_from_name(names[i])
        if cat[i] == "Comm":
            if "SEND" in names[i] or "RECV" in names[i]:
                return pid + "->Comm"
            if "Sync" in names[i]:
                return pid + "->Comm~>Sync"
            return pid + "->Comm"
        return pid + "->" + cat[i]

    dev = [dpro_device(i) for i in range(len(nodes))]
    out = [[] for _ in nodes]
    for e in edges:
        out[e["from"]].append((e["to"], float(e["gap_ns"])))
    indeg = [0] * len(nodes)
    for e in edges:
        indeg[e["to"]] += 1

    rep = {"nodes": len(nodes), "edges": len(edges), "edge_gaps": 0, "edge_gap_ns": 0.0,
           "folded_nodes": 0, "folded_gap_ns": 0.0, "dropped_edges": 0, "dropped_gap_ns": 0.0,
           "max_dropped_gap_ns": 0.0, "dropped_examples": [], "extra_gap_edges": 0,
           "extra_gap_ns": 0.0,
           "release_folded_ns": 0.0, "release_dropped_ns": 0.0, "deviceless_nodes": 0,
           "priority_mismatches": 0, "kappa": doc.get("kappa", []),
           "shared_links": sum(1 for l in doc.get("links", []) if l.get("shared"))}
    avg_ns = [float(n["duration_ns"]) for n in nodes]
    # What each node's dPRO duration holds besides its own work: a folded release time at its
    # start, a folded out-edge gap at its end (used to line dPRO's times up with loom's).
    head_fold = [0.0] * len(nodes)
    tail_fold = [0.0] * len(nodes)
    attrs = [dict() for _ in nodes]
    for i, n in enumerate(nodes):
        if n["device"] < 0:
            rep["deviceless_nodes"] += 1
        if replay_mod.ret_priority(names[i]) != n["priority"]:
            rep["priority_mismatches"] += 1
        if n["release_ns"] > 0:
            if indeg[i] == 0:
                avg_ns[i] += n["release_ns"]
                head_fold[i] = n["release_ns"]
                rep["release_folded_ns"] += n["release_ns"]
            else:
                rep["release_dropped_ns"] += n["release_ns"]
        loom_dev_gap = devices[n["device"]]["gap_ns"] if n["device"] >= 0 else 0.0
        same, o2c, other, other_edges = [], [], [], []
        for v, g in out[i]:
            if g > 0:
                rep["edge_gaps"] += 1
                rep["edge_gap_ns"] += g
            if dev[v] == dev[i]:
                same.append(g)
            elif (cat[i] == "operator" or "Sync" in names[i]) and cat[v] == "Comm":
                o2c.append(g)  # dPRO adds operatorGAPComm on operator/Sync -> Comm edges
            else:
                other.append(g)
                other_edges.append((v, g))
        need_fold = any(g > 0 for g in other) or len(set(same)) > 1 or len(set(o2c)) > 1
        fold = min(g for _, g in out[i]) if (need_fold and out[i]) else 0.0
        if fold > 0:
            avg_ns[i] += fold
            tail_fold[i] = fold
            rep["folded_nodes"] += 1
            rep["folded_gap_ns"] += fold
        same = [g - fold for g in same]
        o2c = [g - fold for g in o2c]
        other = [(v, g - fold) for v, g in other_edges]
        for v, g in other:
            if g > 0:
                if len(rep["dropped_examples"]) < 4:
                    rep["dropped_examples"].append("%s -> %s: %.1f us" % (
                        n["name"], nodes[v]["name"], g / 1e3))
                rep["dropped_edges"] += 1
                rep["dropped_gap_ns"] += g
                rep["max_dropped_gap_ns"] = max(rep["max_dropped_gap_ns"], g)
        dev_gap = (max(same) if same else 0.0) + loom_dev_gap
        for group in (same, o2c):
            top = max(group) if group else 0.0
            for g in group:
                if g < top:
                    rep["extra_gap_edges"] += 1
                    rep["extra_gap_ns"] += top - g
        if dev_gap > 0:
            attrs[i]["%sGAP%s" % (cat[i], cat[i])] = dev_gap / 1e3  # µs
        if o2c and max(o2c) > 0:
            attrs[i][trace_utils.GAP_STR_OP2COMM] = max(o2c) / 1e3  # µs
    dag = nx.DiGraph()
    for i in range(len(nodes)):
        dag.add_node(names[i], avg=avg_ns[i] / 1e6, **attrs[i])  # avg in ms
    for e in edges:
        dag.add_edge(names[e["from"]], names[e["to"]])
    comm_sources = [names[i] for i in range(len(nodes)) if indeg[i] == 0 and cat[i] == "Comm"]
    if comm_sources:
        fail("comm nodes without predecessors (dPRO's replayer would stop to ask): %s"
             % ", ".join(comm_sources[:5]))
    rep["dpro_devices"] = sorted(set(dev))
    return dag, names, dev, rep, (head_fold, tail_fold)


def run_dpro(dag, names, dev, backend, replay_mod, logger_utils, trace_utils, workdir,
             trace_out):
    logger_utils.SingleLogger(workdir, "dpro_peer", logging_level="error", is_clean=True)
    trace_utils.QueueType("NCCL")  # dPRO's queue vocabulary (Replayer.name2device reads it)
    replayer = replay_mod.Replayer(dag, _step_num=1, dump_path=workdir, comm_backend=backend,
                                   full_trace=True)
    t0 = time.time()
    step_end = replayer.replay(_output=False)
    wall = time.time() - t0
    if trace_out:
        replayer.output_traces(_path=trace_out, verbose=False)
    timing = {}
    for ev in replayer.rst_traces:
        timing[ev["args"]["name"]] = (ev["ts"], ev["ts"] + ev["dur"])  # µs
    wrong = [n for n, d in zip(names, dev) if replayer.name2device(n).device_name != d]
    if wrong:
        fail("dPRO put %d node(s) on other devices than the gap conversion assumed, e.g. %s on %s"
             % (len(wrong), wrong[0], replayer.name2device(wrong[0]).device_name))
    missing = [n for n in names if n not in timing]
    if missing:
        fail("dPRO did not execute %d node(s), e.g. %s" % (len(missing), missing[0]))
    return dict(step_end), timing, wall


def median_or_nan(values):
    return statistics.median(values) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dpro_checkout", help="a dPRO source checkout (directory holding dpro/)")
    ap.add_argument("dfg_json", help="`loom trace export-dfg` output")
    ap.add_argument("--backend", default="NCCL", choices=["NCCL", "default"],
                    help="dPRO comm_backend: NCCL (RECV ready at SEND end; dPRO's CLI default) "
                         "or default (RECV ready at SEND start)")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--trace-out", help="write dPRO's synthetic trace (Chrome JSON) here")
    a = ap.parse_args()

    replay_mod, trace_utils, logger_utils, shims, commit = load_dpro(a.dpro_checkout)
    doc = read_dfg(a.dfg_json)
    dag, names, dev, rep, (head_fold, tail_fold) = convert(doc, replay_mod, trace_utils)
    with tempfile.TemporaryDirectory(prefix="dpro_peer_") as workdir:
        step_end, timing, wall = run_dpro(dag, names, dev, a.backend, replay_mod, logger_utils,
                                          trace_utils, workdir, a.trace_out)
    dpro_ns = 1e3 * max(step_end.values())
    loom = doc.get("loom", {})
    loom_ns = loom.get("predicted_iteration_ns")
    meas_ns = loom.get("measured_iteration_ns")

    def ms(ns):
        return None if ns is None else ns / 1e6

    def rel(x, ref):
        return None if (x is None or not ref) else (x - ref) / ref

    # Per node, dPRO's start/end (µs) against loom's replay of the same graph, with the folded
    # release (start) and folded gap (end) taken back out: 0 where both scheduled it alike.
    node_start_diff, node_end_diff = [], []
    worst = None
    for i, n in enumerate(doc["nodes"]):
        if "loom_end_ns" not in n:
            break
        start_us, end_us = timing[names[i]]
        node_start_diff.append(abs(1e3 * start_us + head_fold[i] - n["loom_start_ns"]))
        d = 1e3 * end_us - tail_fold[i] - n["loom_end_ns"]
        node_end_diff.append(abs(d))
        if worst is None or abs(d) > abs(worst[1]):
            worst = (n["name"], d)
    result = {
        "dpro_predicted_iter_ms": ms(dpro_ns),
        "loom_predicted_iter_ms": ms(loom_ns),
        "measured_iter_ms": ms(meas_ns),
        "baseline_sum_ms": ms(loom.get("baseline_sum_ns")),
        "baseline_overlap_ms": ms(loom.get("baseline_overlap_ns")),
        "dpro_error_vs_measured": rel(dpro_ns, meas_ns),
        "loom_error_vs_measured": rel(loom_ns, meas_ns),
        "dpro_vs_loom": rel(dpro_ns, loom_ns),
        "dpro_rank_end_ms": {k: v / 1e3 for k, v in sorted(step_end.items())},
        "node_end_abs_diff_vs_loom_us": {
            "median": median_or_nan(node_end_diff) / 1e3,
            "max": (max(node_end_diff) / 1e3) if node_end_diff else float("nan"),
            "worst_node": worst[0] if worst else None,
            "nodes_over_1us": sum(1 for d in node_end_diff if d > 1e3),
        },
        "node_start_abs_diff_vs_loom_us": {
            "median": median_or_nan(node_start_diff) / 1e3,
            "max": (max(node_start_diff) / 1e3) if node_start_diff else float("nan"),
            "nodes_over_1us": sum(1 for d in node_start_diff if d > 1e3),
        },
        "dpro_replay_wall_s": wall,
        "dpro_backend": a.backend,
        "dpro_commit": commit,
        "dpro_checkout": os.path.abspath(a.dpro_checkout),
        "shims": shims,
        "dfg": os.path.abspath(a.dfg_json),
        "dfg_source": doc.get("source", ""),
        "conversion": rep,
        "python": sys.version.split()[0],
    }
    text = json.dumps(result, indent=1, allow_nan=True)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print("dPRO replay (%s backend, commit %s): %.3f ms | loom replay %s ms | measured %s ms"
          % (a.backend, commit[:12] or "?", ms(dpro_ns),
             "%.3f" % ms(loom_ns) if loom_ns is not None else "?",
             "%.3f" % ms(meas_ns) if meas_ns is not None else "?"))
    print(text)
    return 0 if math.isfinite(dpro_ns) else 1


if __name__ == "__main__":
    sys.exit(main())
