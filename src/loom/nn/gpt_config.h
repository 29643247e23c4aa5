// GptConfig: the shape of loom's reference GPT, read from JSON (the `model` section of a config).
//
// Pre-LN decoder: token + learned position embeddings, n_layers blocks of causal multi-head
// attention and a GELU MLP (d_ff = mlp_ratio * d_model), final LayerNorm, output head tied to the
// token embedding. Options: MegaScale's parallel block (x + Attn(LN x) + MLP(LN x), one LayerNorm
// per block) and sliding-window attention (each token sees the last `sliding_window` tokens).
// Thread-safety: value type.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"

namespace loom::nn {

struct GptConfig {
  int64_t vocab_size = 256;      // byte-level tokenizer
  int64_t context_length = 256;  // positions (max sequence length)
  int64_t d_model = 384;
  int64_t n_layers = 6;
  int64_t n_heads = 6;
  int64_t mlp_ratio = 4;
  bool parallel_block = false;
  int64_t sliding_window = 0;  // 0: full causal attention
  double init_std = 0.02;
  double layer_norm_eps = 1e-5;

  Status Validate() const;
  int64_t head_dim() const { return d_model / n_heads; }
  int64_t d_ff() const { return mlp_ratio * d_model; }
  // Parameters outside the embeddings (the N of MFU's 6N), and all parameters.
  int64_t NonEmbeddingParams() const;
  int64_t TotalParams() const;
};

// Every key with its default; configs are merged into this strictly.
nlohmann::json GptConfigDefaults();
Result<GptConfig> GptConfigFromJson(const nlohmann::json& j);
nlohmann::json GptConfigToJson(const GptConfig& c);

}  // namespace loom::nn
