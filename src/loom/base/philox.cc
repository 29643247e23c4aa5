#include "loom/base/philox.h"

#include <cmath>
#include <numbers>

namespace loom {
namespace {
constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;
constexpr uint32_t kW1 = 0xBB67AE85u;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}
}  // namespace

PhiloxCounter Philox4x32(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kM0, c[0], &hi0, &lo0);
    MulHiLo(kM1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

PhiloxStream::PhiloxStream(uint64_t seed, uint64_t stream, uint64_t position)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
      stream_(stream),
      block_(position) {}

void PhiloxStream::Seek(uint64_t block) {
  block_ = block;
  used_ = 4;
}

uint32_t PhiloxStream::NextU32() {
  if (used_ == 4) {
    PhiloxCounter ctr = {static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                         static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)};
    buf_ = Philox4x32(ctr, key_);
    ++block_;
    used_ = 0;
  }
  return buf_[used_++];
}

uint64_t PhiloxStream::NextU64() {
  uint64_t hi = NextU32();
  return (hi << 32) | NextU32();
}

float PhiloxStream::NextUniform() { return static_cast<float>(NextU32() >> 8) * 0x1.0p-24f; }

float PhiloxStream::NextNormal() {
  // u1 in (0, 1] so that log() is finite.
  float u1 = static_cast<float>((NextU32() >> 8) + 1) * 0x1.0p-24f;
  float u2 = NextUniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

uint64_t PhiloxStream::NextBelow(uint64_t n) {
  // Multiply-high of a 64-bit uniform: bias at most n / 2^64.
  unsigned __int128 p = static_cast<unsigned __int128>(NextU64()) * n;
  return static_cast<uint64_t>(p >> 64);
}

}  // namespace loom
