#include "loom/nn/gpt_config.h"

#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"
#include "loom/nn/param_layout.h"

namespace loom::nn {

Status GptConfig::Validate() const {
  auto bad = [](const std::string& m) { return InvalidArgumentError("model." + m); };
  if (vocab_size < 2) return bad("vocab_size must be >= 2");
  if (context_length < 1) return bad("context_length must be >= 1");
  if (d_model < 1 || n_layers < 1 || n_heads < 1 || mlp_ratio < 1) {
    return bad("d_model, n_layers, n_heads and mlp_ratio must be >= 1");
  }
  if (d_model % n_heads != 0) {
    return bad("d_model (" + std::to_string(d_model) + ") must be divisible by n_heads (" +
               std::to_string(n_heads) + ")");
  }
  if (sliding_window < 0) return bad("sliding_window must be >= 0 (0 = full attention)");
  if (!(init_std > 0)) return bad("init_std must be > 0");
  if (!(layer_norm_eps > 0)) return bad("layer_norm_eps must be > 0");
  return OkStatus();
}

int64_t GptConfig::NonEmbeddingParams() const {
  int64_t total = 0;
  for (const ParamSpec& p : GptParamSpecs(*this)) {
    if (!p.is_embedding) total += p.numel();
  }
  return total;
}

int64_t GptConfig::TotalParams() const {
  int64_t total = 0;
  for (const ParamSpec& p : GptParamSpecs(*this)) total += p.numel();
  return total;
}

nlohmann::json GptConfigToJson(const GptConfig& c) {
  return {{"vocab_size", c.vocab_size},         {"context_length", c.context_length},
          {"d_model", c.d_model},               {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},               {"mlp_ratio", c.mlp_ratio},
          {"parallel_block", c.parallel_block}, {"sliding_window", c.sliding_window},
          {"init_std", c.init_std},             {"layer_norm_eps", c.layer_norm_eps}};
}

nlohmann::json GptConfigDefaults() { return GptConfigToJson(GptConfig{}); }

Result<GptConfig> GptConfigFromJson(const nlohmann::json& j) {
  nlohmann::json merged = GptConfigDefaults();
  LOOM_RETURN_IF_ERROR(MergeStrict(&merged, j, "model"));
  GptConfig c;
  c.vocab_size = merged["vocab_size"];
  c.context_length = merged["context_length"];
  c.d_model = merged["d_model"];
  c.n_layers = merged["n_layers"];
  c.n_heads = merged["n_heads"];
  c.mlp_ratio = merged["mlp_ratio"];
  c.parallel_block = merged["parallel_block"];
  c.sliding_window = merged["sliding_window"];
  c.init_std = merged["init_std"];
  c.layer_norm_eps = merged["layer_norm_eps"];
  LOOM_RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace loom::nn
