// Deterministic GPT initialisation into an fp32 flat buffer, independent of torch, thread count
// and layout: parameter i is filled from Philox stream (seed, i). Linear weights and embeddings
// ~ N(0, init_std); residual output projections ~ N(0, init_std / sqrt(2 * n_layers)) (GPT-2);
// biases 0; LayerNorm weights 1. Padding between parameters is zeroed.
#pragma once

#include <cstdint>

#include "loom/nn/param_layout.h"

namespace loom::nn {

void InitGptWeights(const GptConfig& config, const FlatLayout& layout, uint64_t seed, float* flat);

}  // namespace loom::nn
