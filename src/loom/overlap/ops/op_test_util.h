// Test helpers for the overlapped ops (not part of the library API): thread-mode worlds with one
// LinkProxy per rank, deterministic random matrices and comparisons.
// Thread-safety: RunRanks runs `fn` on one thread per rank; the rest are plain functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "loom/base/status.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/op_stats.h"
#include "loom/overlap/ops/overlap_mode.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap::testing {

// Uniform values in [-1, 1) from a 64-bit LCG seeded with `seed`.
inline std::vector<float> RandomMatrix(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 24)) * 2.0f -
        1.0f;
  }
  return v;
}

// Largest |a − b| (NaN counts as infinite).
inline double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

// Runs fn(rank, runtime, proxy) on `world` threads of a thread-mode world; each rank gets its
// own started LinkProxy with options link(rank). Returns the per-rank statuses.
inline std::vector<Status> RunRanks(int world, const RuntimeOptions& rt_options,
                                    const std::function<LinkOptions(int)>& link,
                                    const std::function<Status(int, Runtime&, LinkProxy&)>& fn) {
  std::vector<Status> out(static_cast<size_t>(world));
  auto rts = CreateThreadRuntimes(world, rt_options);
  if (!rts.ok()) {
    for (auto& s : out) s = rts.status();
    return out;
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Runtime& rt = *(*rts)[static_cast<size_t>(r)];
      LinkProxy proxy(&rt, link(r));
      Status s = proxy.Start();
      if (s.ok()) s = fn(r, rt, proxy);
      proxy.Stop();
      out[static_cast<size_t>(r)] = s;
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

inline RuntimeOptions SmallRuntimeOptions(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  RuntimeOptions o;
  o.heap_bytes = 8ll << 20;
  o.num_signals = 1024;
  o.timeout = timeout;
  return o;
}

// The mode sweep shared by the AllGather+GEMM and GEMM+ReduceScatter value tests:
// (world, mode, splits, link mode) over worlds 1-4, every mode, S in {1, 3} and the three
// checking link modes.
using ModeParam = std::tuple<int, OverlapMode, int, LinkMode>;

inline auto ModeParamValues() {
  return ::testing::Combine(::testing::Values(1, 2, 3, 4),
                            ::testing::Values(OverlapMode::kSequential, OverlapMode::kDecomposed,
                                              OverlapMode::kFused, OverlapMode::kAuto),
                            ::testing::Values(1, 3),
                            ::testing::Values(LinkMode::kPoison, LinkMode::kDelayOnly,
                                              LinkMode::kUnlimited));
}

// "W2_fused_S3_poison".
inline std::string ModeParamName(const ::testing::TestParamInfo<ModeParam>& info) {
  std::string name = "W";  // appended piecewise: GCC 12 warns (-Wrestrict) on "W" + string
  name += std::to_string(std::get<0>(info.param));
  name += "_";
  name += OverlapModeName(std::get<1>(info.param));
  name += "_S";
  name += std::to_string(std::get<2>(info.param));
  name += "_";
  name += LinkModeName(std::get<3>(info.param));
  return name;
}

// Applies a sweep point: 8-row tiles, 7-column edge tiles when S = 3, a fast modelled link (the
// value tests are about values, not timing).
inline void ApplyModeParam(const ModeParam& p, int* world, OpConfig* op, LinkOptions* link) {
  *world = std::get<0>(p);
  op->mode = std::get<1>(p);
  op->splits = std::get<2>(p);
  op->tile_rows = 8;
  op->tile_cols = op->splits == 3 ? 7 : 0;
  link->mode = std::get<3>(p);
  link->bytes_per_second = 2e9;
}

}  // namespace loom::overlap::testing
