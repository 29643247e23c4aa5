#include "loom/train/grad_ready_hooks_torch.h"

#include <gtest/gtest.h>

#include "loom/nn/gpt.h"
#include "loom/nn/gpt_init.h"

namespace loom::train {
namespace {

TEST(GradReadyHooksTest, FireOncePerParameterAfterItsGradientIsAccumulated) {
  nn::GptConfig c;
  c.vocab_size = 32;
  c.context_length = 8;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  nn::Gpt m(c, at::kFloat);
  std::vector<float> w(m.layout().total_elements());
  nn::InitGptWeights(c, m.layout(), 1, w.data());
  m.LoadWeights(w.data());
  std::vector<int> order;
  std::vector<float> grad_at_fire(m.params().size());
  GradReadyHooks hooks(m.params(), [&](int i) {
    order.push_back(i);
    grad_at_fire[i] = m.params()[i].grad().abs().sum().item<float>();
  });
  at::Tensor x = at::randint(32, {2, 8}, at::kLong);
  for (int pass = 0; pass < 2; ++pass) {
    order.clear();
    m.ZeroGrads();
    m.Loss(x, x).backward();
    ASSERT_EQ(order.size(), m.params().size());
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], static_cast<int>(i));
    // The final LayerNorm is ready before the token embedding (used first and last).
    auto pos = [&](int p) { return std::find(order.begin(), order.end(), p) - order.begin(); };
    EXPECT_LT(pos(static_cast<int>(m.params().size()) - 1), pos(0));
    // The gradient was already in place when the hook ran.
    for (size_t i = 0; i < m.params().size(); ++i) {
      EXPECT_FLOAT_EQ(grad_at_fire[i], m.params()[i].grad().abs().sum().item<float>());
    }
  }
}

}  // namespace
}  // namespace loom::train
