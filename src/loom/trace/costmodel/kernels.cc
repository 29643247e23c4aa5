#include "loom/trace/costmodel/kernels.h"

#include <algorithm>
#include <cmath>
#include <latch>
#include <random>

#include "loom/trace/costmodel/internal/kernels_isa.h"

namespace loom::trace::costmodel {
namespace {

const internal::IsaKernels& KernelsFor(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return internal::ScalarKernels();
    case Isa::kAvx2:
      return internal::Avx2Kernels();
    case Isa::kAvx512:
      return internal::Avx512Kernels();
  }
  return internal::ScalarKernels();
}

// Splits [0, units) at a multiple of `align` and runs fn(begin, end) on the caller and helper.
template <typename Fn>
void Split(int64_t units, int64_t align, int threads, Executor* helper, Fn fn) {
  if (threads < 2 || helper == nullptr || units <= align) {
    fn(0, units);
    return;
  }
  int64_t tiles = (units + align - 1) / align;
  int64_t mid = std::min(units, ((tiles + 1) / 2) * align);
  std::latch done(1);
  helper->Schedule([&] {
    fn(mid, units);
    done.count_down();
  });
  fn(0, mid);
  done.wait();
}

Status CheckPositive(const KernelSpec& s) {
  auto bad = [&](const char* what) {
    return InvalidArgumentError("costmodel: kernel " + s.ShapeKey() + ": " + what +
                                " must be positive");
  };
  auto check_gemm = [&](const GemmParams& g) -> Status {
    if (g.mt <= 0 || g.nt <= 0 || g.kt <= 0) return bad("GEMM tile");
    if (g.unroll != 1 && g.unroll != 2 && g.unroll != 4 && g.unroll != 8) {
      return InvalidArgumentError("costmodel: unroll must be 1, 2, 4 or 8");
    }
    return OkStatus();
  };
  switch (s.kind) {
    case KernelKind::kGemm:
      if (s.gemm.m <= 0 || s.gemm.n <= 0 || s.gemm.k <= 0) return bad("GEMM dimension");
      return check_gemm(s.gemm);
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col: {
      const ConvParams& c = s.conv;
      if (c.batch <= 0 || c.cin <= 0 || c.h <= 0 || c.w <= 0 || c.cout <= 0 || c.r <= 0 ||
          c.s <= 0 || c.stride <= 0 || c.pad < 0 || c.tile_co <= 0 || c.tile_ow <= 0) {
        return bad("conv dimension/tile");
      }
      if (c.OutH() <= 0 || c.OutW() <= 0) return bad("conv output size");
      return check_gemm(c.gemm);
    }
    case KernelKind::kElementwise:
      return s.elt.size > 0 ? OkStatus() : bad("elementwise size");
    case KernelKind::kReduction:
      return s.reduce.rows > 0 && s.reduce.cols > 0 ? OkStatus() : bad("reduction rows/cols");
  }
  return OkStatus();
}

void Fill(std::vector<float>* v, std::mt19937_64* rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& x : *v) x = u(*rng);
}

}  // namespace

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
  }
  return false;
}

Result<KernelInstance> KernelInstance::Create(const KernelSpec& spec, uint64_t seed,
                                              int64_t max_bytes) {
  LOOM_RETURN_IF_ERROR(CheckPositive(spec));
  if (spec.CompulsoryBytes() > static_cast<double>(max_bytes)) {
    return ResourceExhaustedError("costmodel: kernel " + spec.ShapeKey() + " needs " +
                                  std::to_string(static_cast<int64_t>(spec.CompulsoryBytes())) +
                                  " bytes of buffers, limit " + std::to_string(max_bytes));
  }
  KernelInstance k(spec);
  std::mt19937_64 rng(seed);
  switch (spec.kind) {
    case KernelKind::kGemm:
      k.a_.resize(spec.gemm.m * spec.gemm.k);
      k.b_.resize(spec.gemm.k * spec.gemm.n);
      k.out_.resize(spec.gemm.m * spec.gemm.n);
      break;
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col: {
      const ConvParams& c = spec.conv;
      const int64_t hp = c.h + 2 * c.pad, wp = c.w + 2 * c.pad;
      k.a_.assign(c.batch * c.cin * hp * wp, 0.f);
      // Random interior, zero border: the pre-padded input.
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t p = 0; p < c.batch * c.cin; ++p) {
        for (int64_t y = 0; y < c.h; ++y) {
          for (int64_t x = 0; x < c.w; ++x) k.a_[(p * hp + y + c.pad) * wp + x + c.pad] = u(rng);
        }
      }
      k.b_.resize(c.cout * c.cin * c.r * c.s);
      k.out_.resize(c.batch * c.cout * c.OutH() * c.OutW());
      if (spec.kind == KernelKind::kConvIm2col)
        k.col_.resize(c.cin * c.r * c.s * c.OutH() * c.OutW());
      Fill(&k.b_, &rng);
      k.ResetOutput();
      return k;
    }
    case KernelKind::kElementwise:
      k.a_.resize(spec.elt.size);
      k.b_.resize(spec.elt.size);
      k.out_.resize(spec.elt.size);
      break;
    case KernelKind::kReduction:
      k.a_.resize(spec.reduce.rows * spec.reduce.cols);
      k.out_.resize(spec.reduce.op == ReduceOp::kSoftmax ? spec.reduce.rows * spec.reduce.cols
                                                         : spec.reduce.rows);
      break;
  }
  Fill(&k.a_, &rng);
  Fill(&k.b_, &rng);
  k.ResetOutput();
  return k;
}

int64_t KernelInstance::BufferBytes() const {
  return 4 * static_cast<int64_t>(a_.size() + b_.size() + out_.size() + col_.size());
}

void KernelInstance::ResetOutput() { std::fill(out_.begin(), out_.end(), 0.f); }

void KernelInstance::Run(const Device& device, Executor* helper) {
  const internal::IsaKernels& kern = KernelsFor(device.isa);
  const int t = device.threads;
  switch (spec_.kind) {
    case KernelKind::kGemm: {
      const GemmParams& g = spec_.gemm;
      Split(g.m, g.mt, t, helper, [&](int64_t b, int64_t e) {
        kern.gemm(g, g.m, g.n, g.k, a_.data(), b_.data(), out_.data(), b, e);
      });
      break;
    }
    case KernelKind::kConvDirect:
      Split(spec_.conv.cout, spec_.conv.tile_co, t, helper, [&](int64_t b, int64_t e) {
        kern.conv_direct(spec_.conv, a_.data(), b_.data(), out_.data(), b, e);
      });
      break;
    case KernelKind::kConvIm2col: {
      const ConvParams& c = spec_.conv;
      const int64_t crs = c.cin * c.r * c.s, ohw = c.OutH() * c.OutW();
      const int64_t image = c.cin * (c.h + 2 * c.pad) * (c.w + 2 * c.pad);
      for (int64_t b = 0; b < c.batch; ++b) {
        Split(crs, 1, t, helper, [&](int64_t lo, int64_t hi) {
          kern.im2col(c, a_.data() + b * image, col_.data(), lo, hi);
        });
        float* out_b = out_.data() + b * c.cout * ohw;
        Split(c.cout, c.gemm.mt, t, helper, [&](int64_t lo, int64_t hi) {
          kern.gemm(c.gemm, c.cout, ohw, crs, b_.data(), col_.data(), out_b, lo, hi);
        });
      }
      break;
    }
    case KernelKind::kElementwise:
      Split(spec_.elt.size, 64, t, helper, [&](int64_t lo, int64_t hi) {
        kern.eltwise(spec_.elt.op, a_.data(), b_.data(), out_.data(), lo, hi);
      });
      break;
    case KernelKind::kReduction:
      Split(spec_.reduce.rows, 1, t, helper, [&](int64_t lo, int64_t hi) {
        kern.reduce(spec_.reduce, a_.data(), out_.data(), lo, hi);
      });
      break;
  }
}

void KernelInstance::RunReference() {
  ref_.assign(out_.size(), 0.f);
  switch (spec_.kind) {
    case KernelKind::kGemm: {
      const GemmParams& g = spec_.gemm;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double s = 0;
          for (int64_t k = 0; k < g.k; ++k) s += double(a_[i * g.k + k]) * b_[k * g.n + j];
          ref_[i * g.n + j] = static_cast<float>(s);
        }
      }
      break;
    }
    case KernelKind::kConvDirect:
    case KernelKind::kConvIm2col: {
      const ConvParams& c = spec_.conv;
      const int64_t oh = c.OutH(), ow = c.OutW(), hp = c.h + 2 * c.pad, wp = c.w + 2 * c.pad;
      for (int64_t b = 0; b < c.batch; ++b) {
        for (int64_t co = 0; co < c.cout; ++co) {
          for (int64_t y = 0; y < oh; ++y) {
            for (int64_t x = 0; x < ow; ++x) {
              double s = 0;
              for (int64_t ci = 0; ci < c.cin; ++ci) {
                for (int64_t r = 0; r < c.r; ++r) {
                  for (int64_t q = 0; q < c.s; ++q) {
                    s += double(a_[((b * c.cin + ci) * hp + y * c.stride + r) * wp + x * c.stride +
                                   q]) *
                         b_[((co * c.cin + ci) * c.r + r) * c.s + q];
                  }
                }
              }
              ref_[((b * c.cout + co) * oh + y) * ow + x] = static_cast<float>(s);
            }
          }
        }
      }
      break;
    }
    case KernelKind::kElementwise:
      for (size_t i = 0; i < ref_.size(); ++i) {
        const double v = a_[i];
        switch (spec_.elt.op) {
          case EltOp::kAdd:
            ref_[i] = a_[i] + b_[i];
            break;
          case EltOp::kMul:
            ref_[i] = a_[i] * b_[i];
            break;
          case EltOp::kRelu:
            ref_[i] = v > 0 ? a_[i] : 0.f;
            break;
          case EltOp::kGelu:
            ref_[i] = static_cast<float>(
                0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v))));
            break;
        }
      }
      break;
    case KernelKind::kReduction: {
      const ReduceParams& p = spec_.reduce;
      for (int64_t r = 0; r < p.rows; ++r) {
        const float* x = a_.data() + r * p.cols;
        double s = 0, m = -1e300;
        for (int64_t c = 0; c < p.cols; ++c) {
          s += x[c];
          m = std::max(m, double(x[c]));
        }
        if (p.op == ReduceOp::kSum) ref_[r] = static_cast<float>(s);
        if (p.op == ReduceOp::kMax) ref_[r] = static_cast<float>(m);
        if (p.op == ReduceOp::kSoftmax) {
          double z = 0;
          for (int64_t c = 0; c < p.cols; ++c) z += std::exp(x[c] - m);
          for (int64_t c = 0; c < p.cols; ++c) {
            ref_[r * p.cols + c] = static_cast<float>(std::exp(x[c] - m) / z);
          }
        }
      }
      break;
    }
  }
}

}  // namespace loom::trace::costmodel
