#!/usr/bin/python3
"""Checkpoint peer benchmark: PyTorch 1.13 distributed checkpointing and torch.save.

Measures the baselines loom's checkpoint module is compared against, on the workloads
`loom bench ckpt` uses; that command runs (needs Debian's python3 with torch 1.13):
  /usr/bin/python3 bench/ckpt_peer.py --peer dcp|torchsave|gather0 \
      --workload dense|flat --dir DIR --total-mib N [--hidden 1024] [--reps 3] [--world 2]
and reads the JSON object on the last stdout line (logs go to stderr; exit 1 on failure).
--world CPU processes are spawned (gloo over a FileStore, 1 thread each); checkpoints go
to DIR/ckpt. fp32 contents come from a torch.Generator seeded by each state's name.
  dense      GPT blocks, TP=world: qkv/fc1 split on dim 0, o/fc2 on dim 1, LN replicated;
             each param also has Adam exp_avg / exp_avg_sq. Layers = round(N MiB / layer).
  flat       the same states as one 1-D buffer per state kind, cut evenly over ranks at
             arbitrary element boundaries (ZeRO-1 style).
  dcp        torch.distributed._shard.checkpoint save/load_state_dict,
             FileSystemWriter(single_file_per_rank=True, sync_files=True).
  torchsave  each rank torch.save()s its local tensors to DIR/ckpt/rank{r}.pt + fsync.
  gather0    status quo: gather to rank 0, torch.save full tensors + fsync; load scatters.
Per rep (barrier..op..barrier, max over ranks): save_s (= stall_s: all are synchronous),
load_warm_s (page cache hot), load_cold_s (after POSIX_FADV_DONTNEED on every file) and,
for dcp+dense, reshard_load_s (one process loads full tensors, no_dist=True, cold).
Rep 0's loads are checked bit-exact against the saved data.
"""
import argparse, collections, dataclasses, json, os, resource, shutil, sys, tempfile, time, traceback, zlib

# torch 1.13's _shard metadata uses a dataclass instance as a field default, which
# Python 3.11 rejects ("mutable default ... use default_factory").  Make the default's
# class hashable when that happens, only while importing torch's _shard modules.
_orig_get_field = dataclasses._get_field


def _tolerant_get_field(cls, a_name, *rest):
    try:
        return _orig_get_field(cls, a_name, *rest)
    except ValueError as e:
        if "mutable default" not in str(e):
            raise
        default = getattr(cls, a_name)      # a Field (from field(default=...)) or the bare default
        if isinstance(default, dataclasses.Field):
            default = default.default
        type(default).__hash__ = object.__hash__
        return _orig_get_field(cls, a_name, *rest)


dataclasses._get_field = _tolerant_get_field
try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.distributed._shard import checkpoint as dcp
    from torch.distributed._shard.sharded_tensor import Shard, ShardMetadata, init_from_local_shards
finally:
    dataclasses._get_field = _orig_get_field

KINDS = ("param", "exp_avg", "exp_avg_sq")
# split: None (replicated), 0 / 1 (TP dim) or "flat"; members (flat only): [(state name, shape)] in buffer order
Entry = collections.namedtuple("Entry", "name shape split members", defaults=(None,))
numel = lambda shape: torch.Size(shape).numel()  # noqa: E731
state_name = lambda param, kind: param if kind == "param" else f"optim.{param}.{kind}"  # noqa: E731


def log(*a):
    print("[ckpt_peer]", *a, file=sys.stderr, flush=True)


def pad(t, m):  # gloo gather/scatter need equal sizes
    return t if t.numel() == m else torch.cat([t, t.new_zeros(m - t.numel())])


def narrow(t, offs, sizes):
    for d, (o, s) in enumerate(zip(offs, sizes)):
        t = t.narrow(d, o, s)
    return t


def gpt_params(layers, h):
    out = []
    for l in range(layers):
        p = f"layers.{l}."
        out += [(p + "qkv.weight", (3 * h, h), 0), (p + "o.weight", (h, h), 1),
                (p + "fc1.weight", (4 * h, h), 0), (p + "fc2.weight", (h, 4 * h), 1),
                (p + "ln1.weight", (h,), None), (p + "ln2.weight", (h,), None)]
    return out


def build_entries(workload, total_bytes, h):
    per_layer = sum(numel(s) for _, s, _ in gpt_params(1, h)) * 4 * len(KINDS)
    layers = max(1, round(total_bytes / per_layer))
    params = gpt_params(layers, h)
    if workload == "dense":
        return [Entry(state_name(n, k), s, sp) for n, s, sp in params for k in KINDS], layers
    members = {k: [(state_name(n, k), s) for n, s, _ in params] for k in KINDS}
    return [Entry(f"flat.{k}", (sum(numel(s) for _, s in m),), "flat", m) for k, m in members.items()], layers


def full_tensor(name, shape):
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    return torch.randn(shape, generator=g)


def piece(e, r, world):
    """(offsets, sizes) of rank r's part of entry e."""
    offs, sizes = [0] * len(e.shape), list(e.shape)
    if e.split == "flat":
        offs[0], sizes[0] = r * e.shape[0] // world, (r + 1) * e.shape[0] // world - r * e.shape[0] // world
    elif e.split is not None:
        sizes[e.split] = e.shape[e.split] // world     # main() checks hidden % world == 0
        offs[e.split] = r * sizes[e.split]
    return offs, sizes


def make_local(e, r, world):
    offs, sizes = piece(e, r, world)
    if e.split != "flat":
        return narrow(full_tensor(e.name, e.shape), offs, sizes).clone(memory_format=torch.contiguous_format)
    lo, hi = offs[0], offs[0] + sizes[0]
    buf, pos = torch.empty(sizes[0]), 0
    for name, shape in e.members:      # only generate members overlapping [lo, hi)
        n = numel(shape)
        a, b = max(lo, pos), min(hi, pos + n)
        if a < b:
            buf[a - lo:b - lo] = full_tensor(name, shape).view(-1)[a - pos:b - pos]
        pos += n
    return buf


def to_dcp(entries, local, rank, world):
    """Wrap split tensors as ShardedTensors (sharing storage); replicated stay plain."""
    out = {}
    for e in entries:
        if e.split is None:
            out[e.name] = local[e.name]
            continue
        offs, sizes = piece(e, rank, world)
        md = ShardMetadata(shard_offsets=offs, shard_sizes=sizes, placement=f"rank:{rank}/cpu")
        out[e.name] = init_from_local_shards([Shard(local[e.name], md)], *e.shape)
    return out


def fsync_save(obj, path):
    with open(path, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())


def ckpt_files(ckpt):
    return [os.path.join(d, f) for d, _, fs in os.walk(ckpt) for f in fs]


def drop_cache(ckpt):  # files are fsync'd (clean), so DONTNEED evicts them from the page cache
    for p in ckpt_files(ckpt):
        with open(p, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def gather0_save(entries, src, rank, world, path):
    out = {}
    for e in entries:
        loc = src[e.name]
        if e.split is None:                     # replicated: rank 0's copy suffices
            out[e.name] = loc
            continue
        ns = [numel(piece(e, r, world)[1]) for r in range(world)]
        m = max(ns)
        bufs = [torch.empty(m) for _ in range(world)] if rank == 0 else None
        dist.gather(pad(loc.view(-1), m), bufs, dst=0)
        if rank != 0:
            continue
        parts = [b[:n].view(piece(e, r, world)[1]) for r, (b, n) in enumerate(zip(bufs, ns))]
        full = torch.cat(parts, dim=0 if e.split == "flat" else e.split)
        if e.split != "flat":
            out[e.name] = full
            continue
        for (name, shape), chunk in zip(e.members, full.split([numel(s) for _, s in e.members])):
            out[name] = chunk.view(shape)           # the named full tensors, as views of one buffer
    if rank == 0:
        fsync_save(out, path)


def gather0_load(entries, dst, rank, world, path):
    d = torch.load(path, map_location="cpu") if rank == 0 else None
    for e in entries:
        loc = dst[e.name]
        if e.split is None:
            if rank == 0:
                loc.copy_(d[e.name])
            dist.broadcast(loc, src=0)
            continue
        m = max(numel(piece(e, r, world)[1]) for r in range(world))
        scatter = None
        if rank == 0:
            full = torch.cat([d[n].reshape(-1) for n, _ in e.members]) if e.split == "flat" else d[e.name]
            scatter = [pad(narrow(full, *piece(e, r, world)).contiguous().view(-1), m) for r in range(world)]
        recv = loc.view(-1) if loc.numel() == m else torch.empty(m)
        dist.scatter(recv, scatter, src=0)
        if recv.data_ptr() != loc.data_ptr():
            loc.view(-1).copy_(recv[:loc.numel()])


def timed(fn):
    dist.barrier()
    t0 = time.perf_counter()
    fn()
    dist.barrier()
    return allmax(time.perf_counter() - t0, torch.float64)


def allmax(x, dtype):  # the rank-0 view: max over ranks
    t = torch.tensor([x], dtype=dtype)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def verify(src, dst, what):
    for k, v in src.items():
        if not torch.equal(v, dst[k]):
            raise AssertionError(f"{what}: loaded {k} differs from saved")
    for t in dst.values():
        t.fill_(float("nan"))               # so the next load must write everything again


def worker(rank, args, store, queue):
    torch.set_num_threads(1)
    world = args.world
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    entries, _ = build_entries(args.workload, args.total_mib << 20, args.hidden)
    src = {e.name: make_local(e, rank, world) for e in entries}
    dst = {k: torch.full_like(v, float("nan")) for k, v in src.items()}  # pre-allocated, pages touched
    if args.peer == "dcp":
        src_sd, dst_sd = to_dcp(entries, src, rank, world), to_dcp(entries, dst, rank, world)
    ckpt = os.path.join(args.dir, "ckpt")
    my_file, full_file = os.path.join(ckpt, f"rank{rank}.pt"), os.path.join(ckpt, "full.pt")

    def save():
        if args.peer == "dcp":
            dcp.save_state_dict(src_sd, dcp.FileSystemWriter(ckpt, single_file_per_rank=True, sync_files=True))
        elif args.peer == "torchsave":
            fsync_save(src, my_file)
        else:
            gather0_save(entries, src, rank, world, full_file)

    def load():
        if args.peer == "dcp":
            dcp.load_state_dict(dst_sd, dcp.FileSystemReader(ckpt))
        elif args.peer == "torchsave":
            for k, v in torch.load(my_file, map_location="cpu").items():
                dst[k].copy_(v)
        else:
            gather0_load(entries, dst, rank, world, full_file)

    res = {k: [] for k in ("save_s", "stall_s", "load_warm_s", "load_cold_s")}
    files = disk = 0
    for rep in range(args.reps):
        if rank == 0:
            shutil.rmtree(ckpt, ignore_errors=True)
            os.makedirs(ckpt)
        s = timed(save)
        res["save_s"].append(s)
        res["stall_s"].append(s)            # synchronous peers: training is stalled for the whole save
        fl = ckpt_files(ckpt)
        files, disk = len(fl), sum(os.path.getsize(p) for p in fl)
        res["load_warm_s"].append(timed(load))
        if rep == 0:
            verify(src, dst, "warm load")
        if rank == 0:
            drop_cache(ckpt)
        res["load_cold_s"].append(timed(load))      # timed() starts with a barrier
        if rep == 0:
            verify(src, dst, "cold load")
        if rank == 0:
            log(f"rep {rep}: save {s:.3f}s warm {res['load_warm_s'][-1]:.3f}s cold {res['load_cold_s'][-1]:.3f}s")
    rss = allmax(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, torch.int64)
    if rank == 0:
        res.update(files=files, bytes_on_disk=disk, peak_rss_kib=int(rss))
        queue.put(res)
    dist.destroy_process_group()


def reshard_load(entries, ckpt, reps):
    """Load the world-N dcp checkpoint into one process holding full tensors."""
    torch.set_num_threads(1)
    sd = {e.name: torch.zeros(e.shape) for e in entries}
    times = []
    for rep in range(reps):
        drop_cache(ckpt)
        t0 = time.perf_counter()
        dcp.load_state_dict(sd, dcp.FileSystemReader(ckpt), no_dist=True)
        times.append(time.perf_counter() - t0)
        for e in entries if rep == 0 else []:
            assert torch.equal(sd[e.name], full_tensor(e.name, e.shape)), f"reshard_load: {e.name} differs"
            sd[e.name].zero_()
        log(f"reshard rep {rep}: {times[-1]:.3f}s")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", required=True, choices=["dcp", "torchsave", "gather0"])
    ap.add_argument("--workload", required=True, choices=["dense", "flat"])
    ap.add_argument("--dir", required=True, help="checkpoints go to DIR/ckpt (removed when done)")
    for flag, default in (("--total-mib", None), ("--hidden", 1024), ("--reps", 3), ("--world", 2)):
        ap.add_argument(flag, type=int, default=default, required=default is None)
    args = ap.parse_args()
    if min(args.world, args.reps, args.total_mib, args.hidden) < 1:
        ap.error("--world, --reps, --total-mib and --hidden must be >= 1")
    if args.workload == "dense" and args.hidden % args.world:
        ap.error("dense (TP) needs --hidden divisible by --world")
    args.dir = os.path.abspath(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    entries, layers = build_entries(args.workload, args.total_mib << 20, args.hidden)
    nbytes = sum(numel(e.shape) * 4 for e in entries)
    log(f"{args.peer}/{args.workload}: {layers} layers, h={args.hidden}, {nbytes / 2**20:.1f} MiB, "
        f"world {args.world}, {args.reps} reps, dir {args.dir}/ckpt")

    tmp = tempfile.mkdtemp(prefix="ckpt_peer_store_")
    queue = mp.get_context("spawn").SimpleQueue()
    try:
        mp.spawn(worker, args=(args, os.path.join(tmp, "store"), queue), nprocs=args.world, join=True)
        if queue.empty():
            raise RuntimeError("workers exited without reporting results")
        res, reshard = queue.get(), []
        if args.peer == "dcp" and args.workload == "dense":
            reshard = reshard_load(entries, os.path.join(args.dir, "ckpt"), args.reps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(os.path.join(args.dir, "ckpt"), ignore_errors=True)

    notes = [f"CPU gloo, {args.world} procs x 1 thread, {layers} layers h={args.hidden}; files fsync'd (dir not); "
             "loads into pre-allocated tensors; rep 0 verified bit-exact", {
                 "dcp": "torch.distributed._shard.checkpoint (1.13 has no torch.distributed.checkpoint), "
                        "FileSystemWriter(single_file_per_rank=True, sync_files=True)",
                 "torchsave": "replicated tensors are saved by every rank",
                 "gather0": "dist.gather (padded) to rank 0, rank 0 rebuilds full tensors; load = rank 0 torch.load "
                            "+ dist.scatter/broadcast; times include the collectives"}[args.peer]]
    if args.peer == "dcp" and args.workload == "dense":
        notes.append("replicated LN weights are plain tensors, written by the coordinator (rank 0) only; reshard_load "
                     f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} KiB")
    elif args.peer == "dcp":
        notes.append("flat: each rank's range saved as a 1-D ShardedTensor of the flat buffer per state kind "
                     "(ByteCheckpoint FSDP-decomposed style); NOT resharding-capable to TP layouts")
    out = {"peer": args.peer, "workload": args.workload, "world": args.world, "bytes": nbytes,
           "files": res["files"], "reps": args.reps, "save_s": res["save_s"], "stall_s": res["stall_s"],
           "load_warm_s": res["load_warm_s"], "load_cold_s": res["load_cold_s"], "reshard_load_s": reshard,
           "peak_rss_kib": res["peak_rss_kib"], "bytes_on_disk": res["bytes_on_disk"],
           "torch_version": torch.__version__, "notes": "; ".join(notes)}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure (incl. worker tracebacks) clearly
        traceback.print_exc()               # includes the worker's traceback when a worker failed
        last = (str(e).strip().splitlines() or [""])[-1]
        print(f"ckpt_peer: FAILED: {type(e).__name__}: {last}", file=sys.stderr, flush=True)
        sys.exit(1)
