#!/usr/bin/env python3
"""PyTorch DDP peer of `loom train`, run by `loom bench train` (or by hand) as N ranks:

  loom launch --torch-env -n 2 -- /usr/bin/python3 bench/ddp_peer.py \
      --config RUN_DIR/config.json --init init.safetensors --data corpus.txt --out OUT_DIR

It trains the same GPT (bench/gpt_peer_model.py) on the same batches as loom: it reads loom's
resolved config, starts from loom's initial weights (safetensors written with init.export=...),
and draws batch offsets with the same Philox4x32-10 rule as src/loom/train/text_dataset.cc. What
differs is what a PyTorch user would run: DDP over Gloo (default 25 MB buckets), torch.optim.AdamW,
clip_grad_norm_, and torch.autocast(bf16) for mixed precision.

Debian traps handled here: torchrun fails on Python 3.11 (ranks come from RANK/WORLD_SIZE/
MASTER_ADDR/MASTER_PORT set by `loom launch --torch-env`), and Gloo cannot broadcast bool
buffers (the attention mask is a plain attribute, not a buffer).

Writes OUT_DIR/metrics.jsonl (one row per step: step, loss, tokens_per_s, step_s) on rank 0.
Use Debian's /usr/bin/python3 (the python3 first on PATH has no torch).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_peer_model import Gpt  # noqa: E402

MASK32 = 0xFFFFFFFF


def philox4x32(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        hi0, lo0 = p0 >> 32, p0 & MASK32
        hi1, lo1 = p1 >> 32, p1 & MASK32
        c0, c1, c2, c3 = (hi1 ^ c1 ^ k0) & MASK32, lo1, (hi0 ^ c3 ^ k1) & MASK32, lo0
        k0 = (k0 + 0x9E3779B9) & MASK32
        k1 = (k1 + 0xBB67AE85) & MASK32
    return [c0, c1, c2, c3]


class PhiloxStream:
    """Mirror of loom::PhiloxStream (src/loom/base/philox.cc)."""

    def __init__(self, seed, stream):
        self.key = (seed & MASK32, (seed >> 32) & MASK32)
        self.stream = stream
        self.block = 0
        self.buf = []

    def next_u32(self):
        if not self.buf:
            ctr = (self.block & MASK32, (self.block >> 32) & MASK32,
                   self.stream & MASK32, (self.stream >> 32) & MASK32)
            self.buf = philox4x32(ctr, self.key)
            self.block += 1
        return self.buf.pop(0)

    def next_below(self, n):
        hi = self.next_u32()
        lo = self.next_u32()
        return (((hi << 32) | lo) * n) >> 64


def lr_at(step, total, warmup, lr, min_lr):
    if step < warmup:
        return lr * (step + 1) / warmup
    decay = max(1, total - warmup - 1)
    progress = min(1.0, (step - warmup) / decay)
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", name
        b, end = e["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[b:end]), dtype=torch.float32).view(e["shape"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True, help="loom's resolved config.json")
    ap.add_argument("--init", required=True, help="initial weights (safetensors from loom)")
    ap.add_argument("--data", required=True, help="corpus file (bytes)")
    ap.add_argument("--out", required=True, help="output directory (rank 0 writes metrics.jsonl)")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default=None)
    ap.add_argument("--comm-hook", default="none",
                    help="none | fp16 (fp16_compress_hook) | powersgd:R (powerSGD_hook, rank R, "
                         "error feedback and warm start, from --hook-start)")
    ap.add_argument("--hook-start", type=int, default=2,
                    help="first step PowerSGD compresses (its start_powerSGD_iter)")
    args = ap.parse_args()

    cfg = json.load(open(args.config))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    precision = args.precision or cfg["precision"]
    if precision == "auto":
        precision = "bf16"
    mcfg = cfg["model"]
    T = mcfg["context_length"]
    micro = cfg["batch"]["micro"]
    accum = cfg["batch"]["global"] // (micro * world)
    seed = cfg["seed"]
    steps = cfg["steps"]
    oc = cfg["optim"]

    text = open(args.data, "rb").read()
    n_val = int(len(text) * cfg["data"]["val_fraction"])
    train = torch.frombuffer(bytearray(text[: len(text) - n_val]), dtype=torch.uint8)

    model = Gpt(mcfg)
    state = load_safetensors(args.init)
    missing = model.load_state_dict(state, strict=True)
    del missing
    ddp = DDP(model)
    register_comm_hook(ddp, args.comm_hook, args.hook_start)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": oc["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=oc["lr"], betas=(oc["beta1"], oc["beta2"]), eps=oc["eps"])

    def batch(step, m):
        rng = PhiloxStream(seed, (step * world + rank) * accum + m)
        span = len(train) - T
        idx = torch.tensor([rng.next_below(span) for _ in range(micro)])
        offs = idx.unsqueeze(1) + torch.arange(T + 1).unsqueeze(0)
        w = train[offs].long()
        return w[:, :-1], w[:, 1:]

    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        out = open(os.path.join(args.out, "metrics.jsonl"), "w")
    tokens_per_step = cfg["batch"]["global"] * T
    for step in range(steps):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, oc["warmup_steps"], oc["lr"], oc["min_lr"])
        opt.zero_grad(set_to_none=True)
        step_loss = 0.0
        for m in range(accum):
            x, y = batch(step, m)
            ctx = ddp.no_sync() if m < accum - 1 else _null()
            with ctx:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                    loss = ddp(x, y)
                (loss / accum).backward()
            step_loss += loss.item() / accum
        if oc["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), oc["grad_clip"])
        opt.step()
        dt = time.perf_counter() - t0
        lt = torch.tensor([step_loss])
        dist.all_reduce(lt)
        if rank == 0:
            row = {"step": step + 1, "loss": lt.item() / world,
                   "tokens_per_s": tokens_per_step / dt, "step_s": dt}
            out.write(json.dumps(row) + "\n")
            out.flush()
    dist.barrier()
    dist.destroy_process_group()


def register_comm_hook(ddp, hook, start):
    """PyTorch's own gradient compression for DDP, the peer of loom's compress.grad."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    if hook == "none":
        return
    if hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook.startswith("powersgd:"):
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=int(hook.split(":")[1]),
            start_powerSGD_iter=max(start, 1), use_error_feedback=True, warm_start=True)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    else:
        raise SystemExit(f"--comm-hook {hook!r}: expected none, fp16 or powersgd:R")


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main()
