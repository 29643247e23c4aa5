// Gpt: loom's reference decoder-only transformer in libtorch (see GptConfig for the shape).
//
// All parameters live in one flat buffer of the compute dtype (weights()), and every parameter's
// gradient is a view into one flat gradient buffer (grads()), so the trainer reduces, shards and
// checkpoints byte ranges. Parameters are leaves that share storage with weights(), so autograd
// accumulates each one in place into grads() and per-parameter "gradient ready" hooks fire as
// backward reaches them (see train/grad_ready_hooks_torch.h).
//
// Attention (libtorch 1.13 has no SDPA) is loom's fused kernel (causal_attention.h) for full
// sequences and plain tensor ops against the KV cache when decoding; the GELU is gelu.h. With
// compute dtype bf16 every GEMM runs in bf16 while the residual stream, LayerNorm and the loss
// stay in fp32, and the trainer keeps fp32 master weights and reduces gradients in fp32.
//
//   Gpt model(config, at::kBFloat16);
//   model.LoadWeights(master_fp32);
//   at::Tensor loss = model.Loss(tokens, targets);   // tokens, targets: [B, T] int64
//   loss.backward();                                 // gradients land in model.grads()
//
// Thread-safety: not thread-safe; one training thread (libtorch's intra-op threads inside).
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "loom/nn/gpt_config.h"
#include "loom/nn/param_layout.h"

namespace loom::nn {

// Keys and values of past positions, per layer, for incremental decoding.
struct KvCache {
  std::vector<at::Tensor> k;  // per layer [B, H, T_past, Dh]
  std::vector<at::Tensor> v;
  int64_t length() const { return k.empty() || !k[0].defined() ? 0 : k[0].size(2); }
};

class Gpt {
 public:
  Gpt(GptConfig config, at::ScalarType compute_dtype, LayoutOptions layout_options = {});

  const GptConfig& config() const { return config_; }
  const FlatLayout& layout() const { return layout_; }
  at::ScalarType compute_dtype() const { return dtype_; }

  // Flat buffers of layout().total_elements() elements in the compute dtype.
  const at::Tensor& weights() const { return weights_; }
  const at::Tensor& grads() const { return grads_; }
  // Forward order (layout().slots()[i] <-> params()[i]); leaves sharing weights()' storage.
  const std::vector<at::Tensor>& params() const { return params_; }

  // Copies fp32 master weights (layout().total_elements() floats) into weights(), converting to
  // the compute dtype. A no-op copy when `master` is weights() itself.
  void LoadWeights(const float* master);
  void ZeroGrads();

  // tokens [B, T] int64, T <= context_length -> logits [B, T, vocab] in the compute dtype.
  at::Tensor Forward(const at::Tensor& tokens) const;
  // Mean next-token cross-entropy (fp32 scalar) of targets [B, T] under Forward(tokens).
  at::Tensor Loss(const at::Tensor& tokens, const at::Tensor& targets) const;
  // Forward for `tokens` [B, T_new] continuing the sequence held in `cache` (appended to it).
  // Returns logits [B, T_new, vocab]. Run under at::NoGradGuard.
  at::Tensor ForwardCached(const at::Tensor& tokens, KvCache* cache) const;

 private:
  struct Block {
    at::Tensor ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
  };
  at::Tensor Run(const at::Tensor& tokens, KvCache* cache) const;
  at::Tensor Attention(const Block& b, const at::Tensor& x, int64_t layer, KvCache* cache,
                       int64_t past) const;
  at::Tensor Mlp(const Block& b, const at::Tensor& x) const;
  // Additive mask (0 / -inf) of queries at positions past.. over keys 0..t_k-1 (decoding path).
  at::Tensor MaskBias(int64_t t_q, int64_t t_k, int64_t past) const;

  GptConfig config_;
  FlatLayout layout_;
  at::ScalarType dtype_;
  at::Tensor weights_;
  at::Tensor grads_;
  std::vector<at::Tensor> params_;
  at::Tensor wte_, wpe_, lnf_w_, lnf_b_;
  std::vector<Block> blocks_;
};

}  // namespace loom::nn
