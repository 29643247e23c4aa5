#!/usr/bin/env python3
"""Writes the small hand-designed 2-rank traces used by trace_reader_test / clock tests:

  kineto_rank{0,1}.json  Kineto dict as recent torch writes on CPU/gloo: ProfilerStep#N,
                         aten::* cpu_ops, autograd BW, Optimizer.step, record_param_comms (with
                         Process Group Name "0", In msg nelems, dtype) and gloo:all_reduce
                         (Input Dims / Input type), ts in epoch microseconds with ns decimals.
  loom_rank{0,1}.json    loom's tracer export (src/loom/trace/tracer/export_kineto.cc): a
                         "loom" object with clock_offset_ns, loom_category/seq/flow_id args,
                         SEND.<op>.<seq>~><ring step>_<chunk> slices and s/f flow events.

Both share one global timeline; rank 1's clock is behind rank 0's by TRUE_OFFSET_NS
(rank0_ns = rank1_ns + TRUE_OFFSET_NS), so alignment has a known answer. Run: python3 this.py
"""
import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))
TRUE_OFFSET_NS = {0: 0, 1: 1_234_567}
LOOM_ESTIMATE_NS = {0: 0, 1: 1_234_000}  # what the tracer's ping-pong would have measured
STEPS = (5, 6)
STEP_NS = 10_000_000


def us(ns):
    """ns -> µs text with three decimals (exact)."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%03d" % (sign, ns // 1000, ns % 1000)


def timeline(rank, base):
    """Global-time events for one rank: (kind, name, start_ns, dur_ns, extra)."""
    ev = []
    for i, step in enumerate(STEPS):
        k0 = base + i * STEP_NS
        ev.append(("step", "ProfilerStep#%d" % step, k0, 9_000_000, {}))
        ev.append(("fw", "forward", k0 + 100_000, 1_900_000, {}))
        ev.append(("bw", "backward", k0 + 2_100_000, 2_900_000, {}))
        arrive = k0 + 5_100_000 + (0 if rank == 0 else 200_000)
        start_all = k0 + 5_300_000
        end = start_all + 300_000 + 3_000 * rank
        ev.append(("coll", "allreduce", arrive, end - arrive,
                   {"seq": 2 * i, "bytes": 4096}))
        for ring_step in (0, 1):
            s0 = start_all + ring_step * 120_000
            ev.append(("send", "allreduce", s0, 50_000,
                       {"seq": 2 * i, "ring_step": ring_step, "peer": 1 - rank, "bytes": 2048}))
            ev.append(("recv", "allreduce", s0 + 2_000, 60_000,
                       {"seq": 2 * i, "ring_step": ring_step, "peer": 1 - rank, "bytes": 2048}))
        small = k0 + 5_700_000 + 4_000 * rank
        ev.append(("coll", "allreduce", small, 25_000 - 4_000 * rank, {"seq": 2 * i + 1, "bytes": 4}))
        ev.append(("opt", "sgd", k0 + 5_800_000, 700_000, {}))
    return ev


def flow_id(seq, ring_step, src, dst):
    return 1 + seq * 1000 + ring_step * 10 + src * 3 + dst


def write_loom(rank):
    local0 = 5_000_000_000_000  # steady clock ns
    base = local0 + 1_000_000
    events = []
    for kind, name, t, dur, x in timeline(rank, base):
        local = t - TRUE_OFFSET_NS[rank]
        cat = {"step": "user_annotation", "coll": "comm", "send": "comm", "recv": "comm"}.get(
            kind, "cpu_op")
        lc = {"step": "step", "fw": "forward", "bw": "backward", "coll": "collective",
              "send": "send", "recv": "recv", "opt": "optimizer"}[kind]
        step = STEPS[(t - base) // STEP_NS]
        args = '"step":%d,"loom_category":"%s"' % (step, lc)
        tid = 1 if kind in ("coll", "send", "recv") else 0
        ename = name
        if kind == "step":
            ename = name
        elif kind == "coll":
            args += (',"Collective name":"%s","In msg nelems":%d,"Out msg nelems":%d,'
                     '"dtype":"Float","Group size":2,"Process Group Name":"default",'
                     '"Process Group Ranks":"[0, 1]","seq":%d,"bytes":%d') % (
                         name, x["bytes"] // 4, x["bytes"] // 4, x["seq"], x["bytes"])
        elif kind in ("send", "recv"):
            src, dst = (rank, x["peer"]) if kind == "send" else (x["peer"], rank)
            fid = flow_id(x["seq"], x["ring_step"], src, dst)
            ename = "%s.%s.%d~>%d_0" % (kind.upper(), name, x["seq"], x["ring_step"])
            args += (',"Collective name":"%s","seq":%d,"ring_step":%d,"chunk":0,"src":%d,'
                     '"dst":%d,"flow_id":%d,"bytes":%d') % (name, x["seq"], x["ring_step"], src,
                                                            dst, fid, x["bytes"])
        events.append((local, dur, '{"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,'
                       '"ts":%s,"dur":%s,"args":{%s}}' % (cat, ename, rank, tid, us(local),
                                                          us(dur), args)))
        if kind in ("send", "recv"):
            src, dst = (rank, x["peer"]) if kind == "send" else (x["peer"], rank)
            fid = flow_id(x["seq"], x["ring_step"], src, dst)
            events.append((local + dur // 2, -1,
                           '{"ph":"%s","cat":"comm_flow","name":"SEND->RECV","id":%d,"pid":%d,'
                           '"tid":%d,"ts":%s%s}' % ("s" if kind == "send" else "f", fid, rank, tid,
                                                    us(local + dur // 2),
                                                    ',"bp":"e"' if kind == "recv" else "")))
    events.sort(key=lambda e: (e[0], -e[1]))
    head = ('{\n"schemaVersion": 1,\n"traceName": "loom rank %d",\n"displayTimeUnit": "ms",\n'
            '"baseTimeNanoseconds": 1700000000000000000,\n"distributedInfo": {"backend": "loom", '
            '"rank": %d, "world_size": 2, "pg_count": 1},\n"deviceProperties": [],\n'
            '"loom": {"clock_offset_ns": %d, "rtt_ns": 1200, "clock_rounds": 32, "clock": '
            '"steady", "records": %d, "dropped": 0, "lanes": 2, "steps": [5, 6, 1]},\n'
            '"traceEvents": [\n') % (rank, rank, LOOM_ESTIMATE_NS[rank], len(events))
    meta = ['{"ph":"M","name":"process_name","pid":%d,"tid":0,"args":{"name":"rank %d"}}' % (
        rank, rank),
            '{"ph":"M","name":"thread_name","pid":%d,"tid":0,"args":{"name":"main"}}' % rank,
            '{"ph":"M","name":"thread_name","pid":%d,"tid":1,"args":{"name":"comm"}}' % rank]
    with open(os.path.join(OUT, "loom_rank%d.json" % rank), "w") as f:
        f.write(head + ",\n".join(meta + [e[2] for e in events]) + "\n]\n}\n")


def write_kineto(rank):
    epoch_us = 1_700_000_000_000_000  # µs since 1970
    base = epoch_us * 1000 + 123  # ns; the 123 ns checks exact float conversion
    events = []
    for kind, name, t, dur, x in timeline(rank, base):
        if kind in ("send", "recv"):
            continue  # torch traces have no per-chunk events
        local = t - TRUE_OFFSET_NS[rank]
        step = STEPS[(t - base) // STEP_NS]
        if kind == "step":
            events.append((local, dur, "user_annotation", name, 1, {}))
        elif kind == "fw":
            events.append((local, dur, "cpu_op", "aten::mm", 1,
                           {"External id": 10 * step, "Sequence number": 77}))
        elif kind == "bw":
            events.append((local, dur, "cpu_op",
                           "autograd::engine::evaluate_function: MmBackward0", 1,
                           {"Sequence number": 77}))
        elif kind == "opt":
            events.append((local, dur, "cpu_op", "Optimizer.step#SGD.step", 1, {}))
        elif kind == "coll":
            n = x["bytes"] // 4
            events.append((local - 20_000, 15_000, "cpu_op", "record_param_comms", 1,
                           {"Collective name": "allreduce", "In msg nelems": n,
                            "Out msg nelems": n, "dtype": "Float", "Group size": 2,
                            "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
                            "Sequence number": 5}))
            events.append((local, dur, "user_annotation", "gloo:all_reduce", 2,
                           {"Input Dims": [[n]], "Input type": ["float"]}))
    events.sort(key=lambda e: (e[0], -e[1]))
    lines = ['{"ph":"M","name":"thread_name","pid":%d,"tid":1,"args":{"name":"python"}}' % rank]
    for local, dur, cat, name, tid, args in events:
        lines.append('{"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%s,"dur":%s,'
                     '"args":%s}' % (cat, name, rank, tid, us(local), us(dur),
                                     json.dumps(args, separators=(",", ":"))))
    lines.append('{"ph":"s","cat":"ac2g","name":"launch","id":7,"pid":%d,"tid":1,"ts":%s}' % (
        rank, us(events[0][0])))
    doc = ('{\n"schemaVersion": 1,\n"deviceProperties": [{"id": 0, "name": "cpu"}],\n'
           '"distributedInfo": {"backend": "gloo", "rank": %d, "world_size": 2, "pg_count": 1, '
           '"pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": '
           '"cpu:gloo", "pg_size": 2, "ranks": [0, 1]}]},\n"traceEvents": [\n%s\n],\n'
           '"traceName": "kineto_rank%d.json",\n"displayTimeUnit": "ms",\n'
           '"baseTimeNanoseconds": 1700000000000000000\n}\n') % (rank, ",\n".join(lines), rank)
    with open(os.path.join(OUT, "kineto_rank%d.json" % rank), "w") as f:
        f.write(doc)


if __name__ == "__main__":
    for r in (0, 1):
        write_loom(r)
        write_kineto(r)
