#include "loom/nn/causal_attention.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "loom/base/check.h"
#include "loom/nn/attention_kernels.h"

namespace loom::nn {
namespace {

constexpr int64_t kBlock = 64;  // query rows per block

struct Shape {
  int64_t B, T, d, H, Dh, window;
  // First key column any row of the block starting at r0 may see.
  int64_t FirstCol(int64_t r0) const { return window > 0 ? std::max<int64_t>(0, r0 - window + 1) : 0; }
};

// Operand access: fp32 buffers are used in place; bf16 operands go to the bf16 GEMM.
struct Operands {
  bool bf16;
  void* base;  // qkv or dqkv data
  template <typename T>
  T* at(int64_t elem) const { return static_cast<T*>(base) + elem; }
};

void Check(const Status& s) { LOOM_CHECK(s.ok()) << s.ToString(); }

void Gemm(bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (bf16) {
    Check(kernels::GemmBF16(ta, tb, m, n, k, alpha, static_cast<const uint16_t*>(a), lda,
                            static_cast<const uint16_t*>(b), ldb, beta, c, ldc));
  } else {
    Check(kernels::GemmF32(ta, tb, m, n, k, alpha, static_cast<const float*>(a), lda,
                           static_cast<const float*>(b), ldb, beta, c, ldc));
  }
}

// Stores fp32 rows into the output (converting to bf16 when needed).
void StoreRows(bool bf16, const float* src, int64_t ld_src, void* dst, int64_t ld_dst,
               int64_t rows, int64_t cols) {
  if (bf16) {
    kernels::F32ToBF16(src, ld_src, static_cast<uint16_t*>(dst), ld_dst, rows, cols);
  } else {
    kernels::CopyF32(src, ld_src, static_cast<float*>(dst), ld_dst, rows, cols);
  }
}

// One (sequence, head) forward: writes probabilities into p [T, T] and y rows.
void ForwardHead(const Shape& s, bool bf16, const char* q, const char* k, const char* v,
                 float* p, char* y, size_t esize, std::vector<float>& tmp,
                 std::vector<uint16_t>& p16) {
  const int64_t ld = 3 * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
  int64_t lo[kBlock], hi[kBlock];
  for (int64_t r0 = 0; r0 < s.T; r0 += kBlock) {
    const int64_t rows = std::min(kBlock, s.T - r0), r1 = r0 + rows;
    const int64_t c0 = s.FirstCol(r0), cols = r1 - c0;
    float* sblk = p + r0 * s.T + c0;
    Gemm(bf16, false, true, rows, cols, s.Dh, 1.0f, q + r0 * ld * esize, ld, k + c0 * ld * esize,
         ld, 0.0f, sblk, s.T);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t row = r0 + i;
      lo[i] = (s.window > 0 ? std::max<int64_t>(0, row - s.window + 1) : 0) - c0;
      hi[i] = row + 1 - c0;
    }
    kernels::MaskedSoftmaxRows(sblk, rows, cols, s.T, lo, hi, scale);
    float* out = tmp.data();  // [rows, Dh]
    if (bf16) {
      kernels::F32ToBF16(sblk, s.T, p16.data(), cols, rows, cols);
      Gemm(true, false, false, rows, s.Dh, cols, 1.0f, p16.data(), cols, v + c0 * ld * esize, ld,
           0.0f, out, s.Dh);
    } else {
      Gemm(false, false, false, rows, s.Dh, cols, 1.0f, sblk, s.T, v + c0 * ld * esize, ld, 0.0f,
           out, s.Dh);
    }
    StoreRows(bf16, out, s.Dh, y + r0 * s.d * esize, s.d, rows, s.Dh);
  }
}

struct HeadScratch {
  std::vector<float> dk, dv, dp, dq;
  std::vector<uint16_t> p16, ds16;
  explicit HeadScratch(const Shape& s)
      : dk(s.T * s.Dh), dv(s.T * s.Dh), dp(kBlock * s.T), dq(kBlock * s.Dh),
        p16(kBlock * s.T), ds16(kBlock * s.T) {}
};

// One (sequence, head) backward: dy rows -> dq, dk, dv slices of dqkv.
void BackwardHead(const Shape& s, bool bf16, const char* q, const char* k, const char* v,
                  const float* p, const char* dy, char* dq, char* dk, char* dv, size_t esize,
                  HeadScratch& w) {
  const int64_t ld = 3 * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.Dh));
  std::fill(w.dk.begin(), w.dk.end(), 0.0f);
  std::fill(w.dv.begin(), w.dv.end(), 0.0f);
  for (int64_t r0 = 0; r0 < s.T; r0 += kBlock) {
    const int64_t rows = std::min(kBlock, s.T - r0), r1 = r0 + rows;
    const int64_t c0 = s.FirstCol(r0), cols = r1 - c0;
    const float* pblk = p + r0 * s.T + c0;
    const char* dyb = dy + r0 * s.d * esize;
    // dV[c0:r1] += P^T dY
    const void* pa = pblk;
    int64_t ldp = s.T;
    if (bf16) {
      kernels::F32ToBF16(pblk, s.T, w.p16.data(), cols, rows, cols);
      pa = w.p16.data();
      ldp = cols;
    }
    Gemm(bf16, true, false, cols, s.Dh, rows, 1.0f, pa, ldp, dyb, s.d, 1.0f, w.dv.data() + c0 * s.Dh,
         s.Dh);
    // dP = dY V^T, then dS = scale * P * (dP - rowsum(P * dP)) in place.
    Gemm(bf16, false, true, rows, cols, s.Dh, 1.0f, dyb, s.d, v + c0 * ld * esize, ld, 0.0f,
         w.dp.data(), cols);
    kernels::SoftmaxBackwardRows(pblk, s.T, w.dp.data(), cols, rows, cols, scale);
    const void* ds = w.dp.data();
    if (bf16) {
      kernels::F32ToBF16(w.dp.data(), cols, w.ds16.data(), cols, rows, cols);
      ds = w.ds16.data();
    }
    // dQ[r0:r1] = dS K[c0:r1];  dK[c0:r1] += dS^T Q[r0:r1]
    Gemm(bf16, false, false, rows, s.Dh, cols, 1.0f, ds, cols, k + c0 * ld * esize, ld, 0.0f,
         w.dq.data(), s.Dh);
    StoreRows(bf16, w.dq.data(), s.Dh, dq + r0 * ld * esize, ld, rows, s.Dh);
    Gemm(bf16, true, false, cols, s.Dh, rows, 1.0f, ds, cols, q + r0 * ld * esize, ld, 1.0f,
         w.dk.data() + c0 * s.Dh, s.Dh);
  }
  StoreRows(bf16, w.dk.data(), s.Dh, dk, ld, s.T, s.Dh);
  StoreRows(bf16, w.dv.data(), s.Dh, dv, ld, s.T, s.Dh);
}

Shape ShapeOf(const at::Tensor& qkv, int64_t n_heads, int64_t window) {
  LOOM_CHECK(qkv.dim() == 3 && qkv.size(2) % 3 == 0) << "qkv must be [B, T, 3d]";
  Shape s{qkv.size(0), qkv.size(1), qkv.size(2) / 3, n_heads, 0, window};
  LOOM_CHECK(s.d % n_heads == 0);
  s.Dh = s.d / n_heads;
  return s;
}

class CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv_in,
                            int64_t n_heads, int64_t window) {
    at::Tensor qkv = qkv_in.contiguous();
    const Shape s = ShapeOf(qkv, n_heads, window);
    const bool bf16 = qkv.scalar_type() == at::kBFloat16;
    LOOM_CHECK(bf16 || qkv.scalar_type() == at::kFloat) << "CausalAttention: fp32 or bf16 only";
    const size_t esize = qkv.element_size();
    at::Tensor y = at::empty({s.B, s.T, s.d}, qkv.options());
    at::Tensor p = at::empty({s.B, s.H, s.T, s.T}, qkv.options().dtype(at::kFloat));
    const char* base = static_cast<const char*>(qkv.data_ptr());
    char* ybase = static_cast<char*>(y.data_ptr());
    float* pbase = p.data_ptr<float>();
    at::parallel_for(0, s.B * s.H, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> tmp(kBlock * s.Dh);
      std::vector<uint16_t> p16(kBlock * s.T);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / s.H, h = bh % s.H;
        const char* q = base + (b * s.T * 3 * s.d + h * s.Dh) * esize;
        ForwardHead(s, bf16, q, q + s.d * esize, q + 2 * s.d * esize, pbase + bh * s.T * s.T,
                    ybase + (b * s.T * s.d + h * s.Dh) * esize, esize, tmp, p16);
      }
    });
    ctx->save_for_backward({qkv, p});
    ctx->saved_data["heads"] = n_heads;
    ctx->saved_data["window"] = window;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& qkv = saved[0];
    const at::Tensor& p = saved[1];
    const Shape s = ShapeOf(qkv, ctx->saved_data["heads"].toInt(), ctx->saved_data["window"].toInt());
    const bool bf16 = qkv.scalar_type() == at::kBFloat16;
    const size_t esize = qkv.element_size();
    at::Tensor dy = grads[0].to(qkv.scalar_type()).contiguous();
    at::Tensor dqkv = at::empty_like(qkv);
    const char* base = static_cast<const char*>(qkv.data_ptr());
    const char* dybase = static_cast<const char*>(dy.data_ptr());
    char* dbase = static_cast<char*>(dqkv.data_ptr());
    const float* pbase = p.data_ptr<float>();
    at::parallel_for(0, s.B * s.H, 1, [&](int64_t begin, int64_t end) {
      HeadScratch w(s);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / s.H, h = bh % s.H;
        const int64_t off = b * s.T * 3 * s.d + h * s.Dh;
        const char* q = base + off * esize;
        char* dq = dbase + off * esize;
        BackwardHead(s, bf16, q, q + s.d * esize, q + 2 * s.d * esize, pbase + bh * s.T * s.T,
                     dybase + (b * s.T * s.d + h * s.Dh) * esize, dq, dq + s.d * esize,
                     dq + 2 * s.d * esize, esize, w);
      }
    });
    return {dqkv, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor CausalAttention(const at::Tensor& qkv, int64_t n_heads, int64_t window) {
  return CausalAttentionFunction::apply(qkv, n_heads, window);
}

at::Tensor ReferenceAttention(const at::Tensor& qkv, int64_t n_heads, int64_t window) {
  const Shape s = ShapeOf(qkv, n_heads, window);
  at::Tensor x = qkv.view({s.B, s.T, 3, s.H, s.Dh}).permute({2, 0, 3, 1, 4});
  at::Tensor q = x[0].reshape({s.B * s.H, s.T, s.Dh});
  at::Tensor k = x[1].reshape({s.B * s.H, s.T, s.Dh});
  at::Tensor v = x[2].reshape({s.B * s.H, s.T, s.Dh});
  at::Tensor i = at::arange(s.T, at::kLong).unsqueeze(1), j = at::arange(s.T, at::kLong).unsqueeze(0);
  at::Tensor blocked = j > i;
  if (window > 0) blocked = blocked.logical_or(j <= i - window);
  at::Tensor bias = at::zeros({s.T, s.T}, qkv.options());
  bias.masked_fill_(blocked, -std::numeric_limits<float>::infinity());
  at::Tensor scores = at::baddbmm(bias, q, k.transpose(1, 2), 1.0, 1.0 / std::sqrt(double(s.Dh)));
  at::Tensor y = at::bmm(at::softmax(scores, -1), v);
  return y.view({s.B, s.H, s.T, s.Dh}).transpose(1, 2).reshape({s.B, s.T, s.d});
}

}  // namespace loom::nn
