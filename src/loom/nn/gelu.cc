#include "loom/nn/gelu.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "loom/base/check.h"
#include "loom/nn/gelu_kernels.h"

namespace loom::nn {
namespace {

constexpr int64_t kGrain = 1 << 16;

class GeluFunction : public torch::autograd::Function<GeluFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x_in) {
    at::Tensor x = x_in.contiguous();
    at::Tensor y = at::empty_like(x);
    const int64_t n = x.numel();
    if (x.scalar_type() == at::kBFloat16) {
      auto* xp = reinterpret_cast<const uint16_t*>(x.data_ptr());
      auto* yp = reinterpret_cast<uint16_t*>(y.data_ptr());
      at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        kernels::GeluForwardBF16(xp + b, yp + b, e - b);
      });
    } else {
      LOOM_CHECK(x.scalar_type() == at::kFloat) << "Gelu: fp32 or bf16 only";
      const float* xp = x.data_ptr<float>();
      float* yp = y.data_ptr<float>();
      at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        kernels::GeluForwardF32(xp + b, yp + b, e - b);
      });
    }
    ctx->save_for_backward({x});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    at::Tensor x = ctx->get_saved_variables()[0];
    at::Tensor dy = grads[0].to(x.scalar_type()).contiguous();
    at::Tensor dx = at::empty_like(x);
    const int64_t n = x.numel();
    if (x.scalar_type() == at::kBFloat16) {
      auto* xp = reinterpret_cast<const uint16_t*>(x.data_ptr());
      auto* gp = reinterpret_cast<const uint16_t*>(dy.data_ptr());
      auto* dp = reinterpret_cast<uint16_t*>(dx.data_ptr());
      at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        kernels::GeluBackwardBF16(xp + b, gp + b, dp + b, e - b);
      });
    } else {
      const float* xp = x.data_ptr<float>();
      const float* gp = dy.data_ptr<float>();
      float* dp = dx.data_ptr<float>();
      at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        kernels::GeluBackwardF32(xp + b, gp + b, dp + b, e - b);
      });
    }
    return {dx};
  }
};

}  // namespace

at::Tensor Gelu(const at::Tensor& x) { return GeluFunction::apply(x); }

}  // namespace loom::nn
