// Test helper (not library API): a synthetic costmodel Dataset with a known latency formula,
// latency = 2 x roofline + 1 us (x 1.5 for the strided JKI GEMM order), on two devices (scalar
// 10 GFLOP/s / 10 GB/s and AVX2 40 / 20). No timing, so tests on it are deterministic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

#include "loom/trace/costmodel/collect.h"

namespace loom::trace::costmodel::testing {

inline Dataset SyntheticDataset(int kernels, uint64_t seed) {
  Dataset ds;
  DeviceInfo a, b;
  a.device = Device{Isa::kScalar, 1};
  a.peak_gflops = 10;
  a.mem_gbps = 10;
  b.device = Device{Isa::kAvx2, 1};
  b.peak_gflops = 40;
  b.mem_gbps = 20;
  ds.devices = {a, b};
  std::mt19937_64 rng(seed);
  CollectOptions co;
  for (int i = 0; i < kernels; ++i) {
    const KernelSpec spec = SampleKernelSpec(rng, co);
    for (const DeviceInfo& d : ds.devices) {
      const double roof = std::max(spec.Flops() / (d.peak_gflops * 1e9),
                                   spec.CompulsoryBytes() / (d.mem_gbps * 1e9));
      double t = 2 * roof + 1e-6;
      if (spec.kind == KernelKind::kGemm && spec.gemm.order == LoopOrder::kJKI) t *= 1.5;
      ds.samples.push_back(
          MakeSample(static_cast<int64_t>(ds.samples.size()), spec, d,
                     Timing{.median_s = t, .cv = 0, .iqr_rel = 0.01, .min_s = t, .runs = 20}));
    }
  }
  return ds;
}

}  // namespace loom::trace::costmodel::testing
