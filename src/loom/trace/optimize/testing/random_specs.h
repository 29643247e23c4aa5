// Test helper: small random fusion instances for the optimizer tests. Header-only; tests only.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "loom/trace/dfg/model_spec.h"

namespace loom::trace::optimize::testing {

// n gradients of 0.5..4 KB, backward pieces of 100..2000 ns, 2 ranks (identical unless
// `straggler` > 1, which slows rank 1's compute), α = 2 µs per message at 1 ns/B, so fusing
// saves α but delays communication: the optimum is neither one bucket nor one per gradient.
inline dfg::ModelSpec RandomFusionSpec(uint32_t seed, int n, double straggler = 1) {
  std::mt19937 rng(seed);
  auto uni = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() % 10000) / 10000.0;
  };
  std::vector<double> bw;
  std::vector<int64_t> bytes;
  for (int i = 0; i < n; ++i) {
    bw.push_back(std::round(uni(100, 2000)));
    bytes.push_back(static_cast<int64_t>(uni(500, 4000)));
  }
  dfg::ModelSpec s = dfg::SyntheticSpec(2, {1000}, bw, bytes, 500, 4096);
  s.alpha_ns = 2000;
  s.ns_per_byte = 1;
  s.sync_ns = 300;
  s.step_gap_ns = 50;
  s.recv_ns = 100;
  s.recv_ns_per_byte = 0.05;
  s.ranks[1].compute_ratio = straggler;
  return s;
}

}  // namespace loom::trace::optimize::testing
