#!/usr/bin/env python3
"""Writes golden.safetensors for loom's ckpt tests with the standard library only (bookworm has
no python3-safetensors). Contents: "a" F32 [2, 3] = 0..5, "b" BF16 [4] = 1..4, "c" I64 [] = 7,
__metadata__ {"format": "pt"}. Run from this directory: python3 make_golden.py"""
import json
import struct

a = struct.pack("<6f", *range(6))
b = b"".join(struct.pack("<f", float(v))[2:] for v in (1, 2, 3, 4))  # bf16 = top half of f32
c = struct.pack("<q", 7)
header = {
    "__metadata__": {"format": "pt"},
    "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
    "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
    "c": {"dtype": "I64", "shape": [], "data_offsets": [32, 40]},
}
text = json.dumps(header, separators=(",", ":")).encode()
with open("golden.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + a + b + c)
