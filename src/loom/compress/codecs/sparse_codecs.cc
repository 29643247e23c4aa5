#include "loom/compress/codecs/sparse_codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "loom/base/philox.h"

namespace loom::compress {
namespace {

Status CheckEncodable(const float* x, int64_t n) {
  if (n >= (int64_t{1} << 32)) {
    return InvalidArgumentError("sparse codecs index with 32 bits: " + std::to_string(n) +
                                " elements is too many (split the bucket)");
  }
  if (int64_t bad = FirstNonFinite(x, n); bad >= 0) {
    return InvalidArgumentError("non-finite value " + std::to_string(x[bad]) + " at element " +
                                std::to_string(bad) + " of " + std::to_string(n));
  }
  return OkStatus();
}

// The systematic sample of k out of n under `key` (strictly ascending, distinct as n / k >= 1).
template <typename Fn>
void ForEachSampled(uint64_t key, int64_t n, int64_t k, Fn fn) {
  PhiloxStream rng(key, 0x52414E444Bull);  // "RANDK"
  const double u = rng.NextUniform(), step = static_cast<double>(n) / static_cast<double>(k);
  for (int64_t j = 0; j < k; ++j) {
    fn(j, std::min<int64_t>(n - 1, static_cast<int64_t>((static_cast<double>(j) + u) * step)));
  }
}

}  // namespace

int64_t KeptCount(float fraction, int64_t n) {
  if (n == 0) return 0;
  // The fraction was parsed into a float: 0.2f * 100 is 20.0000003; treat products within float
  // precision of an integer as that integer rather than rounding them up.
  const double kd = static_cast<double>(fraction) * static_cast<double>(n);
  const double nearest = std::round(kd);
  const double k = std::fabs(kd - nearest) <= 1e-6 * std::max(1.0, kd) ? nearest : std::ceil(kd);
  return std::clamp<int64_t>(static_cast<int64_t>(k), 1, n);
}

int64_t TopKCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + 8 * KeptCount(spec().fraction, n);
}

Result<int64_t> TopKCodec::Encode(const float* x, int64_t n, char* out,
                                  const StepContext& ctx) const {
  LOOM_RETURN_IF_ERROR(CheckEncodable(x, n));
  const int64_t k = KeptCount(spec().fraction, n);
  WriteHeader(out, n, 8 * k);
  thread_local std::vector<uint32_t> idx;
  idx.resize(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  auto larger = [x](uint32_t a, uint32_t b) {
    const float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
    return fa > fb || (fa == fb && a < b);
  };
  std::nth_element(idx.begin(), idx.begin() + k - (k > 0), idx.end(), larger);
  std::sort(idx.begin(), idx.begin() + k);
  char* p = out + kHeaderBytes;
  std::memcpy(p, idx.data(), static_cast<size_t>(4 * k));
  for (int64_t j = 0; j < k; ++j) std::memcpy(p + 4 * k + 4 * j, x + idx[j], 4);
  return kHeaderBytes + 8 * k;
}

Status TopKCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                             bool add) const {
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const int64_t k = KeptCount(spec().fraction, n);
  if (body != 8 * k) {
    return DataLossError("top-k buffer payload is " + std::to_string(body) + " bytes, expected " +
                         std::to_string(8 * k));
  }
  const char* p = in + kHeaderBytes;
  if (!add) std::fill(y, y + n, 0.0f);
  int64_t prev = -1;
  for (int64_t j = 0; j < k; ++j) {
    uint32_t i;
    float v;
    std::memcpy(&i, p + 4 * j, 4);
    std::memcpy(&v, p + 4 * k + 4 * j, 4);
    if (static_cast<int64_t>(i) >= n || static_cast<int64_t>(i) <= prev) {
      return DataLossError("top-k buffer index " + std::to_string(i) + " at position " +
                           std::to_string(j) + " is out of range or not ascending (corrupt)");
    }
    prev = i;
    y[i] += v;
  }
  return OkStatus();
}

int64_t RandKCodec::MaxEncodedBytes(int64_t n) const {
  return kHeaderBytes + 8 + 4 * KeptCount(spec().fraction, n);
}

Result<int64_t> RandKCodec::Encode(const float* x, int64_t n, char* out,
                                   const StepContext& ctx) const {
  LOOM_RETURN_IF_ERROR(CheckEncodable(x, n));
  const int64_t k = KeptCount(spec().fraction, n);
  WriteHeader(out, n, 8 + 4 * k);
  const uint64_t key = PhiloxStream(ctx.seed, StreamOf(ctx)).NextU64();
  char* p = out + kHeaderBytes;
  std::memcpy(p, &key, 8);
  const float scale = spec().unbiased && k > 0 ? static_cast<float>(n) / k : 1.0f;
  ForEachSampled(key, n, k, [&](int64_t j, int64_t i) {
    const float v = x[i] * scale;
    std::memcpy(p + 8 + 4 * j, &v, 4);
  });
  return kHeaderBytes + 8 + 4 * k;
}

Status RandKCodec::DecodeInto(const char* in, int64_t bytes, int64_t n, float* y,
                              bool add) const {
  LOOM_ASSIGN_OR_RETURN(int64_t body, CheckHeader(in, bytes, n));
  const int64_t k = KeptCount(spec().fraction, n);
  if (body != 8 + 4 * k) {
    return DataLossError("random-k buffer payload is " + std::to_string(body) +
                         " bytes, expected " + std::to_string(8 + 4 * k));
  }
  const char* p = in + kHeaderBytes;
  uint64_t key;
  std::memcpy(&key, p, 8);
  if (!add) std::fill(y, y + n, 0.0f);
  ForEachSampled(key, n, k, [&](int64_t j, int64_t i) {
    float v;
    std::memcpy(&v, p + 8 + 4 * j, 4);
    y[i] += v;
  });
  return OkStatus();
}

}  // namespace loom::compress
