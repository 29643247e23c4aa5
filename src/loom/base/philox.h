// Philox4x32-10: a counter-based RNG (Salmon et al., SC'11; the generator behind cuRAND and
// PyTorch's CUDA RNG). Output is a pure function of (key, counter), so any rank can regenerate
// any element of any stream without state: stochastic rounding keyed by (step, rank, chunk),
// data-loader sampling keyed by (seed, step, rank), weight init keyed by (seed, tensor).
//
//   PhiloxStream rng(/*seed=*/1234, /*stream=*/rank);
//   float u = rng.NextUniform();   // [0, 1)
//   float z = rng.NextNormal();    // N(0, 1)
//
// Thread-safety: Philox4x32 is pure; a PhiloxStream is a small value with a position, one per
// thread.
#pragma once

#include <array>
#include <cstdint>

namespace loom {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of Philox4x32 on `counter` under `key`.
PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key);

class PhiloxStream {
 public:
  // key = seed; counter = (position, stream), so distinct streams never overlap.
  PhiloxStream(uint64_t seed, uint64_t stream, uint64_t position = 0);

  uint32_t NextU32();
  uint64_t NextU64();
  // Uniform in [0, 1) with 24 random bits.
  float NextUniform();
  // Standard normal (Box-Muller on two uniforms).
  float NextNormal();
  // Uniform integer in [0, n) (n > 0), bias below 2^-32.
  uint64_t NextBelow(uint64_t n);

  // Jumps to the `block`-th 128-bit block of the stream.
  void Seek(uint64_t block);

 private:
  PhiloxKey key_;
  uint64_t stream_;
  uint64_t block_;
  PhiloxCounter buf_{};
  int used_ = 4;  // words of buf_ consumed
};

}  // namespace loom
