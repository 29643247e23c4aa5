// Fixtures shared by the planner tests: hand-sized cost models and seeded random instances.
// Test-only. Thread-safety: none needed.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loom/compress/planner/cost_model.h"
#include "loom/compress/planner/timeline.h"

namespace loom::compress::planner::testing {

// The simulator for a profile and model that must be valid (fails the test otherwise).
inline TimelineSimulator Sim(const BackwardProfile& p, const CostModel& m) {
  Result<TimelineSimulator> s = TimelineSimulator::Create(p, m);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// A deterministic generator independent of the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {  // splitmix64
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53;
  }
  double LogUniform(double lo, double hi) { return std::exp(Uniform(std::log(lo), std::log(hi))); }

 private:
  uint64_t s_;
};

inline CodecCost Codec(std::string spec, double bits, bool summable, LinearCost enc,
                       LinearCost dec) {
  CodecCost c;
  c.spec = std::move(spec);
  c.bits_per_element = bits;
  c.summable = summable;
  c.encode = enc;
  c.decode = dec;
  return c;
}

// Costs in the range loom's scalar codecs measure on one core (compress/README.md): fp16 about
// 2 GB/s of fp32 input, int8/int4 encode about 0.6 GB/s and decode about 10 GB/s, top-k slower.
inline CostModel RealisticModel(double beta_s_per_byte, int world_size = 4) {
  CostModel m;
  m.world_size = world_size;
  m.links = {LinkModel{"dp", 50e-6, beta_s_per_byte}};
  m.codecs = {Codec("none", 32, true, {}, {}),
              Codec("fp16", 16, true, {5e-6, 2.0e-9}, {5e-6, 2.0e-9}),
              Codec("int8:g128", 8.25, false, {10e-6, 7e-9}, {5e-6, 0.4e-9}),
              Codec("int4:g128", 4.25, false, {10e-6, 7e-9}, {5e-6, 0.4e-9}),
              Codec("topk:0.01", 0.64, false, {20e-6, 12e-9}, {5e-6, 0.1e-9})};
  return m;
}

// A backward pass of `n` tensors with sizes 10^3..10^7 elements and compute gaps of 0.1-5 ms.
inline BackwardProfile RandomProfile(Rng& rng, int n) {
  BackwardProfile p;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += rng.Uniform(1e-4, 5e-3);
    std::string name = "t";  // (not "t" + ...: g++ 12 warns -Wrestrict on that falsely)
    name += std::to_string(i);
    p.tensors.push_back({name, static_cast<int64_t>(rng.LogUniform(1e3, 1e7)), t});
  }
  p.compute_end_s = t + rng.Uniform(0, 2e-3);
  return p;
}

}  // namespace loom::compress::planner::testing
