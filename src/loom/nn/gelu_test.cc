#include "loom/nn/gelu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "loom/nn/gelu_kernels.h"

namespace loom::nn {
namespace {

TEST(GeluKernelsTest, MatchLibmDefinition) {
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.0173f) x.push_back(v);
  std::vector<float> y(x.size()), dx(x.size()), ones(x.size(), 1.0f);
  kernels::GeluForwardF32(x.data(), y.data(), x.size());
  kernels::GeluBackwardF32(x.data(), ones.data(), dx.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double ref = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    double dref = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    ASSERT_NEAR(y[i], ref, 4e-7 * std::max(1.0, std::fabs(v))) << v;
    ASSERT_NEAR(dx[i], dref, 1e-6 * std::max(1.0, std::fabs(v))) << v;
  }
}

TEST(GeluTest, AutogradMatchesTorchGelu) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    at::manual_seed(1);
    at::Tensor base = at::randn({3, 37, 129}) * 3;
    at::Tensor dy = at::randn({3, 37, 129});
    at::Tensor a = base.to(dtype).detach().requires_grad_(true);
    at::Tensor b = base.to(dtype).detach().requires_grad_(true);
    at::Tensor ya = Gelu(a), yb = at::gelu(b.to(at::kFloat));
    (ya.to(at::kFloat) * dy).sum().backward();
    (yb * dy).sum().backward();
    const double tol = dtype == at::kFloat ? 1e-5 : 4e-2;
    EXPECT_LT((ya.to(at::kFloat) - yb).abs().max().item<double>(), tol);
    EXPECT_LT((a.grad().to(at::kFloat) - b.grad().to(at::kFloat)).abs().max().item<double>(), tol);
    EXPECT_EQ(ya.scalar_type(), dtype);
  }
}

}  // namespace
}  // namespace loom::nn
