// Sampling from a Gpt with a KV cache: temperature and top-k, deterministic for a given seed.
// Thread-safety: as Gpt.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/nn/gpt.h"

namespace loom::nn {

struct SampleOptions {
  int64_t max_new_tokens = 200;
  double temperature = 0.8;  // 0: greedy
  int64_t top_k = 40;        // 0: no top-k filtering
  uint64_t seed = 0;
};

// Continues `prompt` (token ids; at least one) and returns only the new tokens. Stops early when
// the context is full.
std::vector<int32_t> Generate(const Gpt& model, const std::vector<int32_t>& prompt,
                              const SampleOptions& options);

}  // namespace loom::nn
