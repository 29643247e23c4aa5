// CausalAttention: fused multi-head causal (optionally sliding-window) attention for the GPT.
//
//   y = CausalAttention(qkv, n_heads, window);   // qkv [B, T, 3d] (q | k | v), y [B, T, d]
//
// Forward and backward are hand-written per (sequence, head) on the strided slices of qkv (no
// transposes or copies): scores for 64-row blocks only up to the block's last key (the causal
// upper triangle is never computed, ~37% of the attention FLOPs at T = 256), scale, mask and
// softmax in fp32 in one pass, and the probabilities kept in fp32 for backward. GEMMs go through
// oneDNN (fp32, or bf16 inputs with fp32 accumulation). Results match the plain-op reference
// (`ReferenceAttention`) within fp32 rounding; see causal_attention_test.cc.
// Thread-safety: as other torch ops; parallel over (sequence, head) with libtorch's threads.
#pragma once

#include <ATen/ATen.h>

namespace loom::nn {

at::Tensor CausalAttention(const at::Tensor& qkv, int64_t n_heads, int64_t window);

// The same function with plain tensor ops (the previous implementation), for tests.
at::Tensor ReferenceAttention(const at::Tensor& qkv, int64_t n_heads, int64_t window);

}  // namespace loom::nn
