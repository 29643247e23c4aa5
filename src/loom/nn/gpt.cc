#include "loom/nn/gpt.h"

#include <cmath>
#include <limits>

#include "loom/base/check.h"
#include "loom/nn/causal_attention.h"
#include "loom/nn/gelu.h"

namespace loom::nn {

Gpt::Gpt(GptConfig config, at::ScalarType compute_dtype, LayoutOptions layout_options)
    : config_(config), layout_(GptParamSpecs(config), layout_options), dtype_(compute_dtype) {
  LOOM_CHECK_OK(config_.Validate());
  LOOM_CHECK(dtype_ == at::kFloat || dtype_ == at::kBFloat16) << "compute dtype " << dtype_;
  auto opts = at::TensorOptions().dtype(dtype_);
  weights_ = at::zeros({layout_.total_elements()}, opts);
  grads_ = at::zeros({layout_.total_elements()}, opts);
  for (const ParamSlot& s : layout_.slots()) {
    const int64_t n = s.spec.numel();
    // A leaf that shares storage with the flat buffer; its .grad() is a view of grads_, so
    // AccumulateGrad adds into the flat gradient buffer in place.
    at::Tensor p = weights_.narrow(0, s.offset, n).view(s.spec.shape).detach();
    p.requires_grad_(true);
    p.mutable_grad() = grads_.narrow(0, s.offset, n).view(s.spec.shape).detach();
    params_.push_back(p);
  }
  size_t i = 0;
  wte_ = params_[i++];
  wpe_ = params_[i++];
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    Block b;
    b.ln1_w = params_[i++];
    b.ln1_b = params_[i++];
    b.qkv_w = params_[i++];
    b.qkv_b = params_[i++];
    b.proj_w = params_[i++];
    b.proj_b = params_[i++];
    if (!config_.parallel_block) {
      b.ln2_w = params_[i++];
      b.ln2_b = params_[i++];
    }
    b.fc_w = params_[i++];
    b.fc_b = params_[i++];
    b.fc2_w = params_[i++];
    b.fc2_b = params_[i++];
    blocks_.push_back(b);
  }
  lnf_w_ = params_[i++];
  lnf_b_ = params_[i++];
  LOOM_CHECK(i == params_.size());
}

void Gpt::LoadWeights(const float* master) {
  at::NoGradGuard no_grad;
  if (dtype_ == at::kFloat && master == weights_.data_ptr<float>()) return;
  at::Tensor src = at::from_blob(const_cast<float*>(master), {layout_.total_elements()},
                                 at::TensorOptions().dtype(at::kFloat));
  weights_.copy_(src);
}

void Gpt::ZeroGrads() {
  at::NoGradGuard no_grad;
  grads_.zero_();
}

at::Tensor Gpt::MaskBias(int64_t t_q, int64_t t_k, int64_t past) const {
  // Query i (absolute position past + i) may attend to key j when j <= past + i and, with a
  // sliding window w, j > past + i - w.
  at::Tensor qi = at::arange(t_q, at::kLong).unsqueeze(1) + past;
  at::Tensor kj = at::arange(t_k, at::kLong).unsqueeze(0);
  at::Tensor blocked = kj > qi;
  if (config_.sliding_window > 0) blocked = blocked.logical_or(kj <= qi - config_.sliding_window);
  at::Tensor bias = at::zeros({t_q, t_k}, at::TensorOptions().dtype(dtype_));
  bias.masked_fill_(blocked, -std::numeric_limits<float>::infinity());
  return bias;
}

at::Tensor Gpt::Attention(const Block& b, const at::Tensor& x, int64_t layer, KvCache* cache,
                          int64_t past) const {
  const int64_t B = x.size(0), T = x.size(1), H = config_.n_heads, Dh = config_.head_dim();
  const int64_t d = config_.d_model;
  if (cache == nullptr) {
    // Training and full-sequence forward: the fused kernel (no transposes, causal blocks only).
    at::Tensor y = CausalAttention(at::linear(x, b.qkv_w, b.qkv_b), H, config_.sliding_window);
    return at::linear(y, b.proj_w, b.proj_b);
  }
  // Incremental decoding: queries at positions past.. attend to the cached keys.
  at::Tensor qkv = at::linear(x, b.qkv_w, b.qkv_b).view({B, T, 3, H, Dh}).permute({2, 0, 3, 1, 4});
  at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, H, T, Dh]
  if (cache->k[layer].defined()) {
    k = at::cat({cache->k[layer], k}, 2);
    v = at::cat({cache->v[layer], v}, 2);
  }
  cache->k[layer] = k;
  cache->v[layer] = v;
  const int64_t Tk = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  at::Tensor q3 = q.reshape({B * H, T, Dh});
  at::Tensor kt3 = k.reshape({B * H, Tk, Dh}).transpose(1, 2);
  // scores = mask + scale * q k^T in one batched GEMM.
  at::Tensor scores = at::baddbmm(MaskBias(T, Tk, past), q3, kt3, /*beta=*/1.0, /*alpha=*/scale);
  at::Tensor att = at::softmax(scores, -1);
  at::Tensor y = at::bmm(att, v.reshape({B * H, Tk, Dh}));  // [B*H, T, Dh]
  y = y.view({B, H, T, Dh}).transpose(1, 2).reshape({B, T, d});
  return at::linear(y, b.proj_w, b.proj_b);
}

at::Tensor Gpt::Mlp(const Block& b, const at::Tensor& x) const {
  return at::linear(Gelu(at::linear(x, b.fc_w, b.fc_b)), b.fc2_w, b.fc2_b);
}

at::Tensor Gpt::Run(const at::Tensor& tokens, KvCache* cache) const {
  LOOM_CHECK(tokens.dim() == 2) << "tokens must be [B, T]";
  const int64_t T = tokens.size(1);
  const int64_t past = cache ? cache->length() : 0;
  LOOM_CHECK(past + T <= config_.context_length)
      << "sequence of " << past + T << " exceeds context_length " << config_.context_length;
  const double eps = config_.layer_norm_eps;
  const std::vector<int64_t> norm_shape = {config_.d_model};
  // The residual stream stays in fp32 (as in Megatron's fp32 residual connection); LayerNorm runs
  // in fp32 and only GEMM inputs are cast to the compute dtype. This is both more accurate and,
  // with libtorch 1.13's slow bf16 LayerNorm, faster than a bf16 stream.
  auto norm = [&](const at::Tensor& x32, const at::Tensor& w, const at::Tensor& b) {
    return at::layer_norm(x32, norm_shape, w.to(at::kFloat), b.to(at::kFloat), eps).to(dtype_);
  };
  at::Tensor x = (at::embedding(wte_, tokens) + wpe_.narrow(0, past, T)).to(at::kFloat);
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    const Block& b = blocks_[l];
    at::Tensor h = norm(x, b.ln1_w, b.ln1_b);
    if (config_.parallel_block) {
      x = x + Attention(b, h, l, cache, past) + Mlp(b, h);
    } else {
      x = x + Attention(b, h, l, cache, past);
      x = x + Mlp(b, norm(x, b.ln2_w, b.ln2_b));
    }
  }
  return at::linear(norm(x, lnf_w_, lnf_b_), wte_);  // tied output head
}

at::Tensor Gpt::Forward(const at::Tensor& tokens) const { return Run(tokens, nullptr); }

at::Tensor Gpt::ForwardCached(const at::Tensor& tokens, KvCache* cache) const {
  if (cache->k.empty()) {
    cache->k.resize(config_.n_layers);
    cache->v.resize(config_.n_layers);
  }
  return Run(tokens, cache);
}

at::Tensor Gpt::Loss(const at::Tensor& tokens, const at::Tensor& targets) const {
  at::Tensor logits = Forward(tokens);
  return at::cross_entropy_loss(logits.reshape({-1, config_.vocab_size}).to(at::kFloat),
                                targets.reshape({-1}));
}

}  // namespace loom::nn
