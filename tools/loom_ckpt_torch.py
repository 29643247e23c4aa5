#!/usr/bin/python3
"""Convert between loom checkpoints and PyTorch, and read safetensors, with Debian's torch.

Run with /usr/bin/python3 (Debian's python3-torch). Only the standard library and torch are used
(bookworm has no python3-safetensors).

  loom_ckpt_torch.py to-torch CKPT OUT.pt [--select model. --strip model.]
      Assembles every tensor of a loom checkpoint (root or step directory) from its chunks and
      torch.save()s the state dict {name: tensor}.
  loom_ckpt_torch.py from-torch IN.pt ROOT [--step N]
      Writes a torch.load()ed state dict of tensors as a loom checkpoint ROOT/step_<N> (one rank,
      each tensor one chunk, xxh64 omitted) and points ROOT/latest at it.
  loom_ckpt_torch.py load-safetensors FILE.safetensors OUT.pt
      Reads a safetensors file into torch tensors and saves them with torch.save (checks that
      `loom ckpt export --safetensors` output is readable by torch).

The loom format is documented in docs/checkpoint_format.md.
"""
import argparse
import json
import os
import struct
import sys

import torch

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}
ALIGN = 4096


def resolve(path):
    if os.path.exists(os.path.join(path, ".metadata.json")):
        step_dir = path
    elif os.path.exists(os.path.join(path, "latest")):
        with open(os.path.join(path, "latest")) as f:
            step_dir = os.path.join(path, f.read().strip())
    else:
        sys.exit(f"{path}: not a loom checkpoint (no .metadata.json or latest)")
    if not os.path.exists(os.path.join(step_dir, "COMMITTED")):
        sys.exit(f"{step_dir}: not committed")
    return step_dir


def read_tensor(step_dir, meta, name):
    t = meta["tensors"][name]
    dtype = DTYPES[t["dtype"]]
    out = torch.empty(t["shape"], dtype=dtype)
    for c in t["chunks"]:
        path = os.path.join(step_dir, meta["files"][c["file"]]["path"])
        with open(path, "rb") as f:
            f.seek(c["byte_off"])
            raw = bytearray(f.read(c["byte_len"]))
        if len(raw) != c["byte_len"]:
            sys.exit(f"{path}: truncated (tensor {name})")
        piece = torch.frombuffer(raw, dtype=dtype).reshape(c["len"]) if raw else \
            torch.empty(c["len"], dtype=dtype)
        index = tuple(slice(o, o + n) for o, n in zip(c["off"], c["len"]))
        out[index] = piece
    return out


def to_torch(args):
    step_dir = resolve(args.ckpt)
    with open(os.path.join(step_dir, ".metadata.json")) as f:
        meta = json.load(f)
    state = {}
    for name in sorted(meta["tensors"]):
        if not name.startswith(args.select):
            continue
        key = name[len(args.strip):] if args.strip and name.startswith(args.strip) else name
        state[key] = read_tensor(step_dir, meta, name)
    torch.save(state, args.out)
    print(f"wrote {args.out}: {len(state)} tensors from {step_dir} (step {meta['step']})")


def from_torch(args):
    state = torch.load(args.input, map_location="cpu")
    step_name = f"step_{args.step:08d}"
    tmp = os.path.join(args.root, step_name + ".tmp")
    os.makedirs(os.path.join(tmp, "data"), exist_ok=True)
    tensors, off = {}, 0
    with open(os.path.join(tmp, "data", "r0.bin"), "wb") as f:
        for name in sorted(state):
            t = state[name]
            if not isinstance(t, torch.Tensor):
                sys.exit(f"{args.input}: entry {name} is not a tensor")
            t = t.detach().contiguous().cpu()
            raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
            f.seek(off)
            f.write(raw)
            tensors[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "chunks": [{
                "off": [0] * t.dim(), "len": list(t.shape), "file": 0,
                "byte_off": off, "byte_len": len(raw)}]}
            off = (off + len(raw) + ALIGN - 1) // ALIGN * ALIGN
        f.truncate(off)
        os.fsync(f.fileno())
    meta = {"format": "loom-ckpt", "version": 1, "world_size": 1, "step": args.step,
            "producer": "loom_ckpt_torch.py", "files": [{"path": "data/r0.bin", "bytes": off}],
            "tensors": tensors, "objects": {}, "user": {}}
    with open(os.path.join(tmp, ".metadata.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(tmp, "COMMITTED"), "w") as f:
        f.write(f"step {args.step}\n")
    final = os.path.join(args.root, step_name)
    os.rename(tmp, final)
    with open(os.path.join(args.root, "latest.tmp"), "w") as f:
        f.write(step_name + "\n")
    os.rename(os.path.join(args.root, "latest.tmp"), os.path.join(args.root, "latest"))
    print(f"wrote {final}: {len(tensors)} tensors")


def load_safetensors(args):
    with open(args.file, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = bytearray(f.read())
    state = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        dtype = DTYPES[t["dtype"]]
        state[name] = torch.frombuffer(data[b:e], dtype=dtype).reshape(t["shape"]).clone() \
            if e > b else torch.empty(t["shape"], dtype=dtype)
    torch.save(state, args.out)
    print(f"wrote {args.out}: {len(state)} tensors from {args.file}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("to-torch")
    a.add_argument("ckpt")
    a.add_argument("out")
    a.add_argument("--select", default="")
    a.add_argument("--strip", default="")
    a.set_defaults(fn=to_torch)
    b = sub.add_parser("from-torch")
    b.add_argument("input")
    b.add_argument("root")
    b.add_argument("--step", type=int, default=0)
    b.set_defaults(fn=from_torch)
    c = sub.add_parser("load-safetensors")
    c.add_argument("file")
    c.add_argument("out")
    c.set_defaults(fn=load_safetensors)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
