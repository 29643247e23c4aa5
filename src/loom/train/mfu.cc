#include "loom/train/mfu.h"

#include <algorithm>

namespace loom::train {

double FlopsPerToken(const nn::GptConfig& c, int64_t seq_len) {
  int64_t s = c.sliding_window > 0 ? std::min(seq_len, c.sliding_window) : seq_len;
  return 6.0 * static_cast<double>(c.NonEmbeddingParams()) +
         12.0 * static_cast<double>(c.n_layers) * static_cast<double>(c.d_model) *
             static_cast<double>(s);
}

double Mfu(double tokens_per_s, double flops_per_token, int ranks, double peak_flops_per_rank) {
  if (peak_flops_per_rank <= 0 || ranks <= 0) return 0;
  return tokens_per_s * flops_per_token / (ranks * peak_flops_per_rank);
}

std::string MfuConvention() {
  return "MFU = tokens/s x (6N + 12*L*h*s) / (ranks x measured GEMM peak per rank); N = "
         "non-embedding params, full attention counted, no recompute";
}

}  // namespace loom::train
