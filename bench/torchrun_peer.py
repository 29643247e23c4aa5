"""torchrun peer for scripts/bench/robust_faults.sh: a tiny DDP (gloo, CPU) training job that
checkpoints every N steps with torch.save and resumes from the latest checkpoint on restart, so
that torchrun's own restart (--max_restarts) is the recovery being measured.

Every event goes as one JSON line (with ts_ms, unix milliseconds) to --log: "start" per worker
(rank, pid, restart count, resumed step), "step" per completed step (rank 0), "ckpt", "done".

    /usr/bin/python3 bench/torchrun_shim.py --nproc_per_node 2 --max_restarts 3 \
        bench/torchrun_peer.py --steps 150 --ckpt-every 10 --dir /tmp/run --log /tmp/run/ev.jsonl
    # tuned: --pg-timeout 30 --file-timer 10 (needs TORCHELASTIC_ENABLE_FILE_TIMER=1 for torchrun)

--pg-timeout S: init_process_group(timeout=S s) (default: torch's 30 min). --file-timer S: wrap
each step in torch.distributed.elastic.timer.expires(after=S) (FileTimerClient on the agent's
TORCHELASTIC_TIMER_FILE): the agent's FileTimerServer SIGKILLs a worker whose step overruns.
"""
import argparse
import contextlib
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def now_ms():
    return int(time.time() * 1000)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--dir", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--pg-timeout", type=float, default=0)
    p.add_argument("--file-timer", type=float, default=0)
    p.add_argument("--width", type=int, default=256)
    a = p.parse_args()

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    kwargs = {}
    if a.pg_timeout > 0:
        kwargs["timeout"] = datetime.timedelta(seconds=a.pg_timeout)
    dist.init_process_group("gloo", **kwargs)
    logf = open(a.log, "a", buffering=1)

    def log(event, **kw):
        kw.update(event=event, ts_ms=now_ms(), rank=rank, restart=restart)
        logf.write(json.dumps(kw) + "\n")

    timer = contextlib.nullcontext
    if a.file_timer > 0:
        from torch.distributed.elastic import timer as et
        et.configure(et.FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
        timer = lambda: et.expires(after=a.file_timer)  # noqa: E731

    torch.manual_seed(0)
    w = a.width
    model = torch.nn.Sequential(torch.nn.Linear(w, 4 * w), torch.nn.GELU(),
                                torch.nn.Linear(4 * w, w))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ckpt_dir = os.path.join(a.dir, "ckpt")
    os.makedirs(ckpt_dir, exist_ok=True)
    start = 0
    latest = os.path.join(ckpt_dir, "latest")
    if os.path.exists(latest):
        state = torch.load(os.path.join(ckpt_dir, open(latest).read().strip()))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    ddp = DDP(model)
    log("start", pid=os.getpid(), resumed_step=start)
    gen = torch.Generator().manual_seed(1000 + rank)
    for step in range(start + 1, a.steps + 1):
        with timer():
            x = torch.randn(64, w, generator=gen)
            loss = (ddp(x) - x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            log("step", step=step, loss=float(loss))
            if step % a.ckpt_every == 0:
                name = "step_%08d.pt" % step
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                           os.path.join(ckpt_dir, name + ".tmp"))
                os.replace(os.path.join(ckpt_dir, name + ".tmp"), os.path.join(ckpt_dir, name))
                with open(latest + ".tmp", "w") as f:
                    f.write(name)
                os.replace(latest + ".tmp", latest)
                log("ckpt", step=step)
    dist.barrier()
    log("done", step=a.steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
