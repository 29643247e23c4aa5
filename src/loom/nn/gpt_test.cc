#include "loom/nn/gpt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/nn/gpt_generate.h"
#include "loom/nn/gpt_init.h"

namespace loom::nn {
namespace {

GptConfig Tiny() {
  GptConfig c;
  c.vocab_size = 32;
  c.context_length = 16;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  return c;
}

std::vector<float> InitMaster(const Gpt& m, uint64_t seed) {
  std::vector<float> w(m.layout().total_elements());
  InitGptWeights(m.config(), m.layout(), seed, w.data());
  return w;
}

at::Tensor RandomTokens(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(V, {B, T}, at::kLong);
}

TEST(GptTest, InitialLossIsNearUniform) {
  Gpt m(Tiny(), at::kFloat);
  auto w = InitMaster(m, 1);
  m.LoadWeights(w.data());
  at::Tensor x = RandomTokens(4, 16, 32, 1), y = RandomTokens(4, 16, 32, 2);
  float loss = m.Loss(x, y).item<float>();
  EXPECT_NEAR(loss, std::log(32.0f), 0.1f);
  EXPECT_EQ(m.Forward(x).sizes(), (std::vector<int64_t>{4, 16, 32}));
}

TEST(GptTest, FutureTokensDoNotChangePastLogits) {
  for (bool parallel : {false, true}) {
    GptConfig c = Tiny();
    c.parallel_block = parallel;
    Gpt m(c, at::kFloat);
    auto w = InitMaster(m, 3);
    m.LoadWeights(w.data());
    at::Tensor x = RandomTokens(1, 16, 32, 3);
    at::Tensor a = m.Forward(x);
    at::Tensor x2 = x.clone();
    x2[0][10] = (x2[0][10].item<int64_t>() + 1) % 32;
    at::Tensor b = m.Forward(x2);
    EXPECT_TRUE(at::allclose(a.narrow(1, 0, 10), b.narrow(1, 0, 10), 0, 0)) << parallel;
    EXPECT_FALSE(at::allclose(a.narrow(1, 10, 1), b.narrow(1, 10, 1))) << parallel;
  }
}

TEST(GptTest, SlidingWindowLimitsTheReceptiveField) {
  GptConfig c = Tiny();
  c.n_layers = 1;
  c.sliding_window = 4;
  Gpt m(c, at::kFloat);
  auto w = InitMaster(m, 4);
  m.LoadWeights(w.data());
  at::Tensor x = RandomTokens(1, 16, 32, 4);
  at::Tensor x2 = x.clone();
  x2[0][5] = (x2[0][5].item<int64_t>() + 1) % 32;
  at::Tensor a = m.Forward(x), b = m.Forward(x2);
  // With one layer and window 4, position 5 is seen by positions 5..8 only.
  EXPECT_FALSE(at::allclose(a.select(1, 8), b.select(1, 8)));
  EXPECT_TRUE(at::allclose(a.narrow(1, 9, 7), b.narrow(1, 9, 7), 0, 0));
}

TEST(GptTest, GradientsLandInTheFlatBufferAndMatchFiniteDifferences) {
  Gpt m(Tiny(), at::kFloat);
  auto w = InitMaster(m, 5);
  m.LoadWeights(w.data());
  at::Tensor x = RandomTokens(2, 16, 32, 5), y = RandomTokens(2, 16, 32, 6);
  m.ZeroGrads();
  m.Loss(x, y).backward();
  const char* gbase = static_cast<const char*>(m.grads().data_ptr());
  for (const at::Tensor& p : m.params()) {
    const char* g = static_cast<const char*>(p.grad().data_ptr());
    EXPECT_GE(g, gbase);
    EXPECT_LT(g, gbase + m.grads().nbytes());
  }
  EXPECT_GT(m.grads().abs().sum().item<float>(), 0.0f);
  // Central differences on a few weights of the first block's QKV projection.
  const ParamSlot& qkv = m.layout().slots()[4];
  ASSERT_EQ(qkv.spec.name, "blocks.0.attn.qkv.weight");
  for (int64_t k : {int64_t{0}, int64_t{100}, int64_t{2000}}) {
    int64_t e = qkv.offset + k;
    float analytic = m.grads()[e].item<float>();
    const float h = 1e-2f;
    std::vector<float> wp = w, wm = w;
    wp[e] += h;
    wm[e] -= h;
    at::NoGradGuard ng;
    m.LoadWeights(wp.data());
    double lp = m.Loss(x, y).item<double>();
    m.LoadWeights(wm.data());
    double lm = m.Loss(x, y).item<double>();
    double numeric = (lp - lm) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 2e-3 + 0.05 * std::fabs(numeric)) << "element " << k;
  }
}

TEST(GptTest, GradientAccumulatesInPlaceAcrossBackwardPasses) {
  Gpt m(Tiny(), at::kFloat);
  auto w = InitMaster(m, 6);
  m.LoadWeights(w.data());
  at::Tensor x = RandomTokens(2, 16, 32, 7), y = RandomTokens(2, 16, 32, 8);
  m.ZeroGrads();
  m.Loss(x, y).backward();
  at::Tensor once = m.grads().clone();
  m.Loss(x, y).backward();
  EXPECT_TRUE(at::allclose(m.grads(), 2 * once, 1e-5, 1e-7));
}

TEST(GptTest, CachedDecodingMatchesFullForward) {
  Gpt m(Tiny(), at::kFloat);
  auto w = InitMaster(m, 9);
  m.LoadWeights(w.data());
  at::Tensor x = RandomTokens(1, 12, 32, 9);
  at::NoGradGuard ng;
  at::Tensor full = m.Forward(x);
  KvCache cache;
  at::Tensor first = m.ForwardCached(x.narrow(1, 0, 7), &cache);
  EXPECT_TRUE(at::allclose(first, full.narrow(1, 0, 7), 1e-4, 1e-5));
  for (int64_t t = 7; t < 12; ++t) {
    at::Tensor step = m.ForwardCached(x.narrow(1, t, 1), &cache);
    EXPECT_TRUE(at::allclose(step.select(1, 0), full.select(1, t), 1e-4, 1e-5)) << t;
  }
  auto gen = Generate(m, {1, 2, 3}, {.max_new_tokens = 20, .temperature = 0.8, .seed = 1});
  EXPECT_EQ(gen.size(), 14u);  // 16 positions: 3 prompt + 13 fed back, each yields one token
  auto again = Generate(m, {1, 2, 3}, {.max_new_tokens = 20, .temperature = 0.8, .seed = 1});
  EXPECT_EQ(gen, again);
}

TEST(GptTest, Bf16ForwardTracksFp32) {
  Gpt f(Tiny(), at::kFloat), h(Tiny(), at::kBFloat16);
  auto w = InitMaster(f, 10);
  f.LoadWeights(w.data());
  h.LoadWeights(w.data());
  at::Tensor x = RandomTokens(4, 16, 32, 11), y = RandomTokens(4, 16, 32, 12);
  float lf = f.Loss(x, y).item<float>(), lh = h.Loss(x, y).item<float>();
  EXPECT_NEAR(lf, lh, 0.02f);
  EXPECT_EQ(h.Forward(x).scalar_type(), at::kBFloat16);
}

TEST(GptTest, OverfitsOneBatch) {
  Gpt m(Tiny(), at::kFloat);
  auto w = InitMaster(m, 12);
  at::Tensor x = RandomTokens(2, 16, 32, 13), y = RandomTokens(2, 16, 32, 14);
  float first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    m.LoadWeights(w.data());
    m.ZeroGrads();
    at::Tensor loss = m.Loss(x, y);
    loss.backward();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    const float* g = m.grads().data_ptr<float>();
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * g[i];
  }
  EXPECT_LT(last, 0.5f * first) << first << " -> " << last;
}

}  // namespace
}  // namespace loom::nn
