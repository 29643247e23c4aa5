#!/usr/bin/python3
"""Python torch.distributed peer of `loom bench overlap` (issue 7): async-TP's decomposition.

impl `torch_decomposed`, two ranks over the gloo backend, torch.mm on one thread per rank:

  ag_gemm  C[W*M_s, N] = all_gather(A_shard) @ B. The shard's rows are cut into S chunks; chunk c
           is all-gathered with async_op=True while the GEMM of the chunk before it (own shard
           first, as async-TP does) runs; each gathered chunk is multiplied as soon as its
           all_gather completes.
  gemm_rs  out[M_s, N] = sum over ranks of (A[W*M_s, K_local] @ B)[own rows]. For chunk c the
           partial rows of chunk c of every segment are computed, then exchanged with an async
           all_to_all_single while the next chunk's GEMM runs; the owner sums its received rows
           in rank order at the end. (torch 1.13's ProcessGroupGloo has no reduce_scatter; an
           all_to_all moves the same (W-1)/W of the partial as a reduce-scatter would.)

Per trial, like `loom bench overlap-peer`: t_comm = the whole collective alone (all_gather /
all_to_all_single of the full tensors), t_comp = the whole GEMM alone, t_x = the decomposed op;
each the slower rank's. The op's output is checked once against a local float32 reference
(max |got - ref| / max |ref| <= 1e-4, else exit 1). Rank 0 writes the JSON (schema of the C++
peers: op, impl, transport, shape, rate_mbps, per_trial, t_*_s quartiles, efficiency, verify).

Run by scripts/bench/overlap_peers.sh (--impl torch_decomposed) in its two network namespaces
(env RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME). Without RANK in the
environment it starts two local ranks over loopback itself:

    /usr/bin/python3 scripts/bench/overlap_torch_peer.py --op gemm_rs --m-shard 37 --k 19 --n 23 \
        --chunks 3 --trials 2 --warmup 1 --json /tmp/x.json

Only ag_gemm and gemm_rs (no MoE); other `overlap-peer` flags are accepted and ignored.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

TOLERANCE = 1e-4


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", choices=["ag_gemm", "gemm_rs"], default="ag_gemm")
    p.add_argument("--impl", choices=["torch_decomposed"], default="torch_decomposed")
    p.add_argument("--m-shard", type=int, default=512)
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--chunks", type=int, default=4, help="S: chunks per shard (default 4)")
    p.add_argument("--trials", type=int, default=11)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate-mbps", type=float, default=0, help="recorded only (not applied)")
    p.add_argument("--json", default="")
    args, ignored = p.parse_known_args(argv)
    for name in ("m_shard", "k", "n", "chunks", "trials"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    args.ignored = ignored
    return args


def inputs(torch, seed, tensor, rank, shape):
    """Deterministic values in [-0.5, 0.5): any rank can rebuild any other rank's inputs."""
    g = torch.Generator().manual_seed(seed * 1000003 + tensor * 1009 + rank)
    return torch.rand(shape, generator=g) - 0.5


def row_chunks(rows, chunks):
    """[(start, length)] of `chunks` near-equal row chunks (empty ones when rows < chunks)."""
    base, extra = divmod(rows, chunks)
    out, start = [], 0
    for c in range(chunks):
        n = base + (1 if c < extra else 0)
        out.append((start, n))
        start += n
    return out


class AgGemm:
    def __init__(self, torch, dist, a, rank, world):
        self.t, self.d, self.a, self.r, self.w = torch, dist, a, rank, world
        self.shard = inputs(torch, a.seed, 1, rank, (a.m_shard, a.k))
        self.b = inputs(torch, a.seed, 2, rank, (a.k, a.n))
        self.full = torch.empty(world * a.m_shard, a.k)
        self.out = torch.empty(world * a.m_shard, a.n)
        self.chunks = row_chunks(a.m_shard, a.chunks)
        # Per chunk: one receive buffer per rank (all_gather's output list).
        self.bufs = [[torch.empty(n, a.k) for _ in range(world)] for _, n in self.chunks]

    def comm(self):
        parts = list(self.full.split(self.a.m_shard))
        self.d.all_gather(parts, self.shard)

    def comp(self):
        self.t.mm(self.full, self.b, out=self.out)

    def decomposed(self):
        ms, t = self.a.m_shard, self.t
        self.out.fill_(float("nan"))

        def launch(c):
            s, n = self.chunks[c]
            return self.d.all_gather(self.bufs[c], self.shard[s:s + n], async_op=True)

        works = [launch(0)]
        t.mm(self.shard, self.b, out=self.out[self.r * ms:(self.r + 1) * ms])  # own shard first
        for c, (s, n) in enumerate(self.chunks):
            if c + 1 < len(self.chunks):
                works.append(launch(c + 1))  # next chunk in flight during this chunk's GEMMs
            works[c].wait()
            for p in range(1, self.w):
                src = (self.r + p) % self.w
                row = src * ms + s
                t.mm(self.bufs[c][src], self.b, out=self.out[row:row + n])

    def reference(self):
        full = self.t.cat([inputs(self.t, self.a.seed, 1, p, (self.a.m_shard, self.a.k))
                           for p in range(self.w)])
        return self.t.mm(full, self.b)

    def comm_bytes(self):
        return (self.w - 1) * self.a.m_shard * self.a.k * 4


class GemmRs:
    def __init__(self, torch, dist, a, rank, world):
        self.t, self.d, self.a, self.r, self.w = torch, dist, a, rank, world
        self.a_in = inputs(torch, a.seed, 3, rank, (world * a.m_shard, a.k))
        self.b = inputs(torch, a.seed, 4, rank, (a.k, a.n))
        self.part = torch.empty(world * a.m_shard, a.n)
        self.recv = torch.empty(world * a.m_shard, a.n)
        self.out = torch.empty(a.m_shard, a.n)
        self.chunks = row_chunks(a.m_shard, a.chunks)
        # Per chunk: send/receive staging laid out by segment (all_to_all_single's split).
        self.send = [torch.empty(world * n, a.n) for _, n in self.chunks]
        self.got = [torch.empty(world * n, a.n) for _, n in self.chunks]

    def comm(self):
        self.d.all_to_all_single(self.recv, self.part)

    def comp(self):
        self.t.mm(self.a_in, self.b, out=self.part)

    def decomposed(self):
        ms, t = self.a.m_shard, self.t
        self.out.fill_(float("nan"))
        works = []
        for c, (s, n) in enumerate(self.chunks):
            for p in range(1, self.w + 1):  # rank + 1 first, own segment last
                seg = (self.r + p) % self.w
                rows = self.a_in[seg * ms + s:seg * ms + s + n]
                t.mm(rows, self.b, out=self.send[c][seg * n:(seg + 1) * n])
            works.append(self.d.all_to_all_single(self.got[c], self.send[c], async_op=True))
        for c, (s, n) in enumerate(self.chunks):
            works[c].wait()
            acc = self.got[c][0:n].clone()
            for src in range(1, self.w):
                acc += self.got[c][src * n:(src + 1) * n]
            self.out[s:s + n] = acc

    def reference(self):
        ms, ref = self.a.m_shard, None
        for p in range(self.w):
            a = inputs(self.t, self.a.seed, 3, p, (self.w * ms, self.a.k))
            b = inputs(self.t, self.a.seed, 4, p, (self.a.k, self.a.n))
            part = self.t.mm(a[self.r * ms:(self.r + 1) * ms], b)
            ref = part if ref is None else ref + part
        return ref

    def comm_bytes(self):
        return (self.w - 1) * self.a.m_shard * self.a.n * 4


def quartiles(v):
    s = sorted(v)

    def q(f):
        pos = f * (len(s) - 1)
        i = int(pos)
        frac = pos - i
        return s[i] * (1 - frac) + s[i + 1] * frac if i + 1 < len(s) else s[i]

    return {"median": q(0.5), "p25": q(0.25), "p75": q(0.75), "iqr": q(0.75) - q(0.25)}


def run_rank(a):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ.get("WORLD_SIZE", "2"))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            init_method=f"tcp://{os.environ['MASTER_ADDR']}:"
                                        f"{os.environ['MASTER_PORT']}")
    op = (AgGemm if a.op == "ag_gemm" else GemmRs)(torch, dist, a, rank, world)
    tc, tp, tx = [], [], []
    err = None
    for it in range(a.warmup + a.trials):
        times = []
        for fn in (op.comm, op.comp, op.decomposed):
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        if err is None:  # once: the decomposed op's output against the local reference
            ref = op.reference()
            e = ((op.out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
            if e != e:  # NaN: a row was never written
                e = float("inf")
            e_all = torch.tensor([e], dtype=torch.float64)
            dist.all_reduce(e_all, op=dist.ReduceOp.MAX)
            err = e_all.item()
            if not err <= TOLERANCE:
                print(f"overlap_torch_peer {a.op}: result differs from the local reference "
                      f"(max relative error {err:.3g} > {TOLERANCE}, rank {rank} saw {e:.3g})",
                      file=sys.stderr)
                dist.destroy_process_group()
                return 1
        if it >= a.warmup:
            tc.append(times[0])
            tp.append(times[1])
            tx.append(times[2])
    # Each trial's time is the slower rank's.
    all_t = torch.tensor(tc + tp + tx, dtype=torch.float64)
    dist.all_reduce(all_t, op=dist.ReduceOp.MAX)
    n = a.trials
    tc, tp, tx = all_t[:n].tolist(), all_t[n:2 * n].tolist(), all_t[2 * n:].tolist()
    dist.destroy_process_group()
    if rank != 0:
        return 0
    eff = [(p + c - x) / min(p, c) for c, p, x in zip(tc, tp, tx)]
    sc, sp, sx = quartiles(tc), quartiles(tp), quartiles(tx)
    bytes_ = op.comm_bytes()
    doc = {
        "op": a.op, "impl": a.impl,
        "transport": f"torch.distributed gloo (torch {torch.__version__}, Python)",
        "notes": "PyTorch async-TP decomposition with async_op=True collectives per row chunk; "
                 + ("chunked all_gather" if a.op == "ag_gemm" else
                    "chunked all_to_all_single + owner's sum (ProcessGroupGloo in torch 1.13 "
                    "has no reduce_scatter)"),
        "shape": {"world": world, "m_shard": a.m_shard, "k": a.k, "n_local": a.n},
        "rate_mbps": a.rate_mbps if a.rate_mbps > 0 else None,
        "trials": n, "warmup": a.warmup, "seed": a.seed,
        "compute": "torch.mm (float32), torch.set_num_threads(1)",
        "per_trial": {"t_comm_s": tc, "t_comp_s": tp, "t_x_s": tx, "efficiency": eff,
                      "exposed_comm_s": [x - p for p, x in zip(tp, tx)]},
        "t_comm_s": sc, "t_comp_s": sp, "t_x_s": sx, "efficiency": quartiles(eff),
        "R_comm_over_comp": sc["median"] / sp["median"],
        "comm_bytes_per_rank": bytes_,
        "comm_mbit_per_s": bytes_ * 8 / sc["median"] / 1e6,
        "comp_gflop_per_s": 2.0 * world * a.m_shard * a.k * a.n / sp["median"] / 1e9,
        "verify": {"max_rel_err": err, "tolerance": TOLERANCE, "ok": True},
        "decomposed": {"chunks": a.chunks, "async_op": True,
                       "schedule": "own shard first, chunk c+1's all_gather in flight during "
                                   "chunk c's GEMMs" if a.op == "ag_gemm" else
                                   "chunk c's all_to_all in flight during chunk c+1's GEMMs; "
                                   "sums at the end"},
        "ignored_flags": a.ignored,
    }
    print(f"overlap-peer {a.op:7s} {a.impl:16s} t_comm {sc['median']*1e3:8.2f} ms  t_comp "
          f"{sp['median']*1e3:8.2f} ms  t_x {sx['median']*1e3:8.2f} ms  E "
          f"{quartiles(eff)['median']:5.2f}  err {err:.1e}")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, a.json)
    return 0


def run_local(argv):
    """Two ranks on this host over loopback (no shaping)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv, env=env))
    rcs = [p.wait() for p in procs]
    return max(rcs)


def main():
    a = parse_args(sys.argv[1:])
    if "RANK" not in os.environ:
        return run_local(sys.argv[1:])
    return run_rank(a)


if __name__ == "__main__":
    sys.exit(main())
