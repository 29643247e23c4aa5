// Test fixtures of the MoE ops (moe_test.cc, moe_pair_test.cc; not part of the library API):
// a small shape, thread-mode worlds with one started LinkProxy per rank, a global problem
// (every rank's routing, tokens and expert weights) with its single-process reference.
// Thread-safety: RunRanks runs `fn` on one thread per rank; the rest are plain functions.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loom/base/check.h"
#include "loom/base/philox.h"
#include "loom/overlap/link/link_proxy.h"
#include "loom/overlap/ops/moe_routing.h"
#include "loom/overlap/runtime/runtime.h"

namespace loom::overlap::moe_testing {

inline MoeOpShape SmallShape(int world) {
  return {.world = world,
          .num_experts = world == 3 ? 6 : 8,
          .top_k = 2,
          .tokens_per_rank = 37,
          .hidden = 24,
          .ffn = 40};
}

inline std::vector<float> RandomVector(int64_t n, uint64_t seed, float scale) {
  PhiloxStream rng(seed, 0);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.NextNormal() * scale;
  return v;
}

// Runs fn(rank, runtime, proxy) on `world` threads over thread-mode runtimes and started proxies.
inline std::vector<Status> RunRanks(
    int world, LinkOptions link, const std::function<Status(int, Runtime*, LinkProxy*)>& fn,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  RuntimeOptions ro;
  ro.heap_bytes = 8 << 20;
  ro.timeout = timeout;
  auto rts = CreateThreadRuntimes(world, ro);
  LOOM_CHECK_OK(rts.status());
  std::vector<std::unique_ptr<LinkProxy>> proxies;
  for (int r = 0; r < world; ++r) {
    proxies.push_back(std::make_unique<LinkProxy>((*rts)[r].get(), link));
    LOOM_CHECK_OK(proxies.back()->Start());
  }
  std::vector<Status> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { out[r] = fn(r, (*rts)[r].get(), proxies[r].get()); });
  }
  for (auto& t : threads) t.join();
  for (auto& p : proxies) p->Stop();
  return out;
}

inline LinkOptions PoisonLink() {
  return {.bytes_per_second = 50e6, .latency_s = 0, .mode = LinkMode::kPoison};
}

// Global problem: routings, tokens and expert weights of every rank, and the reference.
struct Problem {
  MoeOpShape shape;
  std::vector<Routing> routings;
  std::vector<std::vector<float>> x, w1, w2;
  MoeReference ref;

  // Local experts' weights of `rank`, contiguous.
  std::vector<float> Local(const std::vector<std::vector<float>>& w, int rank) const {
    std::vector<float> out;
    for (int le = 0; le < shape.experts_per_rank(); ++le) {
      const auto& e = w[rank * shape.experts_per_rank() + le];
      out.insert(out.end(), e.begin(), e.end());
    }
    return out;
  }
};

inline Problem MakeProblem(const MoeOpShape& shape, const RoutingOptions& ro) {
  Problem p;
  p.shape = shape;
  for (int r = 0; r < shape.world; ++r) {
    auto routing = GenerateRouting(shape, r, ro);
    LOOM_CHECK_OK(routing.status());
    p.routings.push_back(*routing);
    p.x.push_back(RandomVector(shape.tokens_per_rank * shape.hidden, 100 + r, 1.f));
  }
  for (int e = 0; e < shape.num_experts; ++e) {
    p.w1.push_back(RandomVector(shape.hidden * shape.ffn, 200 + e, 1.f / std::sqrt(24.f)));
    p.w2.push_back(RandomVector(shape.ffn * shape.hidden, 300 + e, 1.f / std::sqrt(40.f)));
  }
  p.ref = ComputeMoeReference(shape, p.routings, p.x, p.w1, p.w2);
  return p;
}

inline bool Near(float got, float want) {
  return std::fabs(got - want) <= 2e-4f + 2e-4f * std::fabs(want);
}

// Two problems of `shape` with the routing options `routing` and its seed + 11 (two calls with
// different routings exercise the epochs).
inline std::vector<Problem> TwoProblems(const MoeOpShape& shape, const RoutingOptions& routing) {
  std::vector<Problem> problems;
  for (uint64_t seed : {routing.seed, routing.seed + 11}) {
    RoutingOptions ro = routing;
    ro.seed = seed;
    problems.push_back(MakeProblem(shape, ro));
  }
  return problems;
}

// The routings the value tests sweep: uniform, Zipf(1.5), and uniform with expert 2 unused.
inline std::vector<RoutingOptions> StandardRoutings() {
  return {RoutingOptions{.seed = 3},
          RoutingOptions{.kind = RoutingKind::kZipf, .zipf_s = 1.5, .seed = 5},
          RoutingOptions{.seed = 9, .excluded_expert = 2}};
}

// "" when every valid row of layer 0's output `h` (rows of `layout`) matches the reference, else
// the first bad row and column.
inline std::string CheckH(const Problem& p, const RecvLayout& layout, const std::vector<float>& h) {
  const MoeOpShape& shape = p.shape;
  for (int64_t r = 0; r < layout.total_rows; ++r) {
    const RowRef& ref = layout.rows[r];
    if (ref.src < 0) continue;
    const float* want = &p.ref.h[ref.src][(ref.token * shape.top_k + ref.slot) * shape.ffn];
    for (int64_t j = 0; j < shape.ffn; ++j) {
      if (!Near(h[r * shape.ffn + j], want[j])) {
        return "h row " + std::to_string(r) + " col " + std::to_string(j) + ": " +
               std::to_string(h[r * shape.ffn + j]) + " vs " + std::to_string(want[j]) + "; ";
      }
    }
  }
  return "";
}

// "" when rank `rank`'s output `y` matches the reference, else the first bad element.
inline std::string CheckY(const Problem& p, int rank, const std::vector<float>& y) {
  for (int64_t i = 0; i < p.shape.tokens_per_rank * p.shape.hidden; ++i) {
    if (!Near(y[i], p.ref.y[rank][i])) {
      return "y[" + std::to_string(i) + "] " + std::to_string(y[i]) + " vs " +
             std::to_string(p.ref.y[rank][i]) + "; ";
    }
  }
  return "";
}

// Every rank's status is OK and its failure text empty.
inline void ExpectRanksPassed(const std::vector<Status>& statuses,
                              const std::vector<std::string>& failures) {
  for (size_t r = 0; r < statuses.size(); ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
    if (r < failures.size()) {
      EXPECT_EQ(failures[r], "") << "rank " << r;
    }
  }
}

}  // namespace loom::overlap::moe_testing
