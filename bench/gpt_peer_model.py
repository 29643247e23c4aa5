"""The PyTorch peer of loom's reference GPT (src/loom/nn/gpt.cc): same shapes, parameter names
and initialisation, written the way a PyTorch user would (nanoGPT style: nn.Modules, a fused
QKV projection, masked_fill + softmax attention since torch 1.13 has no SDPA)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.n_heads = cfg["n_heads"]
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        t = cfg["context_length"]
        w = cfg.get("sliding_window", 0)
        i = torch.arange(t).unsqueeze(1)
        j = torch.arange(t).unsqueeze(0)
        allowed = j <= i
        if w > 0:
            allowed &= j > i - w
        # A plain attribute, not a buffer: DDP would try to broadcast a bool buffer and Gloo
        # rejects bool tensors ("Invalid scalar type").
        self.allowed = allowed

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        k = k.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        v = v.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.allowed[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.fc = nn.Linear(d, cfg["mlp_ratio"] * d)
        self.proj = nn.Linear(cfg["mlp_ratio"] * d, d)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        eps = cfg["layer_norm_eps"]
        self.parallel = cfg["parallel_block"]
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.attn = Attention(cfg)
        if not self.parallel:
            self.ln2 = nn.LayerNorm(d, eps=eps)
        self.mlp = Mlp(cfg)

    def forward(self, x):
        h = self.ln1(x)
        if self.parallel:
            return x + self.attn(h) + self.mlp(h)
        x = x + self.attn(h)
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["d_model"]
        self.wte = nn.Parameter(torch.zeros(cfg["vocab_size"], d))
        self.wpe = nn.Parameter(torch.zeros(cfg["context_length"], d))
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layers"])])
        self.ln_f = nn.LayerNorm(d, eps=cfg["layer_norm_eps"])

    def forward(self, idx, targets):
        B, T = idx.shape
        x = F.embedding(idx, self.wte) + self.wpe[:T]
        for b in self.blocks:
            x = b(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))
