// Kernels behind CausalAttention (causal_attention.h), on raw row-major buffers, no torch:
// GEMMs through oneDNN's BLAS-like API (fp32, and bf16 x bf16 -> fp32 on CPUs with AVX512-BF16 or
// AMX, emulated elsewhere by oneDNN), a masked row softmax and its backward in fp32, and bf16
// conversions. The softmax uses its own vectorisable exp (relative error < 2e-7 on the range
// softmax uses), compiled for AVX-512, AVX2 and baseline x86-64; the tests compare it with the
// scalar reference.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>

#include "loom/base/status.h"

namespace loom::nn::kernels {

// C[M x N] = alpha * op(A) * op(B) + beta * C, all row-major; op(X) = X^T when tX.
Status GemmF32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
Status GemmBF16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The fallback GemmBF16 uses where oneDNN has no bf16 GEMM: operands widened to fp32, sgemm.
Status GemmBF16Widened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                       float* c, int64_t ldc);

// exp(x) for x <= 0 down to -87 (underflows to 0 below); the softmax's only use.
float ExpNonPositive(float x);

// Row i of s (length `cols`, stride ld): softmax(scale * s[lo_i, hi_i)) in place, 0 outside.
// lo/hi are per-row column bounds relative to the block (hi exclusive, lo < hi).
void MaskedSoftmaxRows(float* s, int64_t rows, int64_t cols, int64_t ld, const int64_t* lo,
                       const int64_t* hi, float scale);
// Softmax backward in place: dp <- scale * p * (dp - sum_j p_j dp_j), row by row.
void SoftmaxBackwardRows(const float* p, int64_t ldp, float* dp, int64_t lddp, int64_t rows,
                         int64_t cols, float scale);

// Strided 2-D conversions: rows x cols, leading dimensions in elements.
void F32ToBF16(const float* src, int64_t ld_src, uint16_t* dst, int64_t ld_dst, int64_t rows,
               int64_t cols);
void BF16ToF32(const uint16_t* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
               int64_t cols);
void CopyF32(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows,
             int64_t cols);

}  // namespace loom::nn::kernels
