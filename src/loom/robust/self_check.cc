#include "loom/robust/self_check.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "loom/base/clock.h"

namespace loom::robust {
namespace {

constexpr int kN = 192;

// C += A * B, row-major, i-k-j order (the inner loop vectorises).
void Gemm(const float* a, const float* b, float* c) {
  for (int i = 0; i < kN; ++i) {
    for (int k = 0; k < kN; ++k) {
      const float aik = a[i * kN + k];
      const float* brow = b + k * kN;
      float* crow = c + i * kN;
      for (int j = 0; j < kN; ++j) crow[j] += aik * brow[j];
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

SelfCheckResult RunSelfCheck(double budget_s) {
  Stopwatch total;
  SelfCheckResult r;
  std::vector<float> a(kN * kN), b(kN * kN), c(kN * kN, 0.f);
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  const double flops = 2.0 * kN * kN * kN;
  while (total.Seconds() < budget_s / 2) {
    Stopwatch t;
    Gemm(a.data(), b.data(), c.data());
    r.gemm_gflops = std::max(r.gemm_gflops, flops / t.Seconds() / 1e9);
  }
  volatile float sink = c[kN + 1];
  (void)sink;
  const size_t bytes = 64 << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  Stopwatch membw;
  do {
    Stopwatch t;
    std::memcpy(dst.data(), src.data(), bytes);
    r.membw_gbps = std::max(r.membw_gbps, 2.0 * static_cast<double>(bytes) / t.Seconds() / 1e9);
    src[dst[bytes / 2] & 1] ^= 1;  // keep the copy observable
  } while (membw.Seconds() < budget_s / 2);
  r.seconds = total.Seconds();
  return r;
}

std::vector<std::string> FailingSelfChecks(const std::map<std::string, SelfCheckResult>& results,
                                           double fraction, std::vector<std::string>* evidence) {
  std::vector<double> gemm, bw;
  for (const auto& [m, r] : results) {
    gemm.push_back(r.gemm_gflops);
    bw.push_back(r.membw_gbps);
  }
  const double gemm_med = Median(gemm), bw_med = Median(bw);
  std::vector<std::string> failing;
  for (const auto& [m, r] : results) {
    const bool slow_gemm = r.gemm_gflops < fraction * gemm_med;
    const bool slow_bw = r.membw_gbps < fraction * bw_med;
    if (!slow_gemm && !slow_bw) continue;
    failing.push_back(m);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "%s self-check: GEMM %.2f GFLOP/s (%.2fx fleet median %.2f), memory %.2f GB/s "
                  "(%.2fx median %.2f); threshold %.2fx",
                  m.c_str(), r.gemm_gflops, r.gemm_gflops / gemm_med, gemm_med, r.membw_gbps,
                  r.membw_gbps / bw_med, bw_med, fraction);
    evidence->push_back(line);
  }
  return failing;
}

}  // namespace loom::robust
