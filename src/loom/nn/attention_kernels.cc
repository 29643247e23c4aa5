#include "loom/nn/attention_kernels.h"

#include <dnnl.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "loom/base/convert.h"
#include "loom/nn/internal/fast_exp.h"

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

// Reductions keep kLanes independent partial results so that they vectorise without
// reassociating floating-point sums (no -ffast-math).
constexpr int kLanes = 16;

LOOM_CLONES void SoftmaxRow(float* __restrict s, int64_t cols, int64_t lo, int64_t hi,
                            float scale) {
  float mx[kLanes];
  for (int l = 0; l < kLanes; ++l) mx[l] = -INFINITY;
  int64_t j = lo;
  for (; j + kLanes <= hi; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) mx[l] = s[j + l] > mx[l] ? s[j + l] : mx[l];
  }
  float m = -INFINITY;
  for (int l = 0; l < kLanes; ++l) m = mx[l] > m ? mx[l] : m;
  for (; j < hi; ++j) m = s[j] > m ? s[j] : m;
  const float shift = m * scale;
  float acc[kLanes] = {};
  for (j = lo; j + kLanes <= hi; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      float e = ExpCore(s[j + l] * scale - shift);
      s[j + l] = e;
      acc[l] += e;
    }
  }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; j < hi; ++j) {
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
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= cols; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += p[j + l] * dp[j + l];
  }
  float dot = 0;
  for (int l = 0; l < kLanes; ++l) dot += acc[l];
  for (; j < cols; ++j) dot += p[j] * dp[j];
  for (j = 0; j < cols; ++j) dp[j] = scale * p[j] * (dp[j] - dot);
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
  dnnl_status_t s = dnnl_gemm_bf16bf16f32(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda,
                                          b, ldb, beta, c, ldc);
  if (s != dnnl_unimplemented) return FromDnnl(s, "dnnl_gemm_bf16bf16f32");
  // CPUs without AVX-512 have no native bf16 GEMM in oneDNN.
  return GemmBF16Widened(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

Status GemmBF16Widened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  // Only the elements the matrices span: (rows - 1) * ld + cols (strided views end mid-row).
  const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
  std::vector<float> a32((a_rows - 1) * lda + a_cols), b32((b_rows - 1) * ldb + b_cols);
  ConvertBF16ToF32(a, a32.data(), static_cast<int64_t>(a32.size()));
  ConvertBF16ToF32(b, b32.data(), static_cast<int64_t>(b32.size()));
  return GemmF32(ta, tb, m, n, k, alpha, a32.data(), lda, b32.data(), ldb, beta, c, ldc);
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
