// Model FLOPs utilisation, PaLM-appendix-B / MegaScale convention:
//   MFU = tokens_per_s * (6 N + 12 L h s) / (ranks * peak_flops_per_rank)
// N = non-embedding parameters, L layers, h = d_model, s = attended sequence length (the
// sliding window when smaller); forward + backward = 3 x forward; full attention counted (not
// halved for the causal mask); recomputation excluded. Peak = the measured dense GEMM rate of
// one rank's threads in the compute dtype.
#pragma once

#include <cstdint>
#include <string>

#include "loom/nn/gpt_config.h"

namespace loom::train {

double FlopsPerToken(const nn::GptConfig& c, int64_t seq_len);
double Mfu(double tokens_per_s, double flops_per_token, int ranks, double peak_flops_per_rank);
// One line stating the convention, for logs and reports.
std::string MfuConvention();

}  // namespace loom::train
