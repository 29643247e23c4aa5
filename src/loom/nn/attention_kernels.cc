#include "loom/nn/attention_kernels.h"

#include <dnnl.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "loom/base/convert.h"

// oneDNN exports its bf16 GEMM (row-major, bf16 inputs, fp32 accumulation and output) from
// libdnnl since 1.x but does not declare it in the public header; oneDNN's own gemm tests declare
// it exactly like this. The bf16 type is a 16-bit struct, passed here as uint16_t.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M,
                                               dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                               const uint16_t* A, dnnl_dim_t lda,
                                               const uint16_t* B, dnnl_dim_t ldb, float beta,
                                               float* C, dnnl_dim_t ldc);

namespace loom::nn::kernels {
namespace {

#define LOOM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

Status FromDnnl(dnnl_status_t s, const char* what) {
  if (s == dnnl_success) return OkStatus();
  return InternalError(std::string(what) + " failed with oneDNN status " + std::to_string(s));
}

// exp(x) = 2^n * exp(r), x = n ln2 + r, |r| <= ln2/2; Cephes' degree-6 polynomial for exp(r).
inline float ExpCore(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float n = __builtin_roundevenf(x * 1.44269504088896341f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

LOOM_CLONES void SoftmaxRow(float* __restrict s, int64_t cols, int64_t lo, int64_t hi,
                            float scale) {
  float m = -INFINITY;
  for (int64_t j = lo; j < hi; ++j) m = s[j] > m ? s[j] : m;
  const float shift = m * scale;
  float sum = 0;
  for (int64_t j = lo; j < hi; ++j) {
    float e = ExpCore(s[j] * scale - shift);
    s[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int64_t j = lo; j < hi; ++j) s[j] *= inv;
  for (int64_t j = 0; j < lo; ++j) s[j] = 0;
  for (int64_t j = hi; j < cols; ++j) s[j] = 0;
}

LOOM_CLONES void SoftmaxBackwardRow(const float* __restrict p, float* __restrict dp, int64_t cols,
                                    float scale) {
  float dot = 0;
  for (int64_t j = 0; j < cols; ++j) dot += p[j] * dp[j];
  for (int64_t j = 0; j < cols; ++j) dp[j] = scale * p[j] * (dp[j] - dot);
}

}  // namespace

Status GemmF32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return FromDnnl(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                             c, ldc),
                  "dnnl_sgemm");
}

Status GemmBF16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return FromDnnl(dnnl_gemm_bf16bf16f32(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                        ldb, beta, c, ldc),
                  "dnnl_gemm_bf16bf16f32");
}

float ExpNonPositive(float x) { return ExpCore(x); }

void MaskedSoftmaxRows(float* s, int64_t rows, int64_t cols, int64_t ld, const int64_t* lo,
                       const int64_t* hi, float scale) {
  for (int64_t i = 0; i < rows; ++i) SoftmaxRow(s + i * ld, cols, lo[i], hi[i], scale);
}

void SoftmaxBackwardRows(const float* p, int64_t ldp, float* dp, int64_t lddp, int64_t rows,
                         int64_t cols, float scale) {
  for (int64_t i = 0; i < rows; ++i) SoftmaxBackwardRow(p + i * ldp, dp + i * lddp, cols, scale);
}

void F32ToBF16(const float* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst, int64_t rows,
               int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) ConvertF32ToBF16(src + i * ld_src, dst + i * ld_dst, cols);
}

void BF16ToF32(const uint16_t* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
               int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) ConvertBF16ToF32(src + i * ld_src, dst + i * ld_dst, cols);
}

void CopyF32(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
             int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) std::memcpy(dst + i * ld_dst, src + i * ld_src, cols * 4);
}

}  // namespace loom::nn::kernels
