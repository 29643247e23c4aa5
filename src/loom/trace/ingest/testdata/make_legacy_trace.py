#!/usr/bin/python3
"""Writes legacy_gloo_rank{0,1}.json: a real 2-rank DDP/gloo profile from Debian's torch 1.13.

torch 1.13 without Kineto exports the legacy chrome-trace format (a bare JSON array, pid
"CPU functions", ts in microseconds from profiler start, no "cat"). Run from this folder:
    /usr/bin/python3 make_legacy_trace.py
Both ranks run as processes on localhost (gloo over TCP, FileStore rendezvous).
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

OUT_DIR = os.path.dirname(os.path.abspath(__file__))


def worker(rank, world, store_path):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(16, 32)
    y = torch.randn(16, 8)
    path = os.path.join(OUT_DIR, "legacy_gloo_rank%d.json" % rank)

    def ready(prof):
        prof.export_chrome_trace(path)

    sched = torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=sched, on_trace_ready=ready) as prof:
        for _ in range(6):
            opt.zero_grad()
            loss = nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def main():
    world = 2
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(world, os.path.join(d, "store")), nprocs=world, join=True)
    for r in range(world):
        p = os.path.join(OUT_DIR, "legacy_gloo_rank%d.json" % r)
        print(p, os.path.getsize(p), "bytes")


if __name__ == "__main__":
    sys.exit(main())
