#include "loom/train/grad_reducer.h"

#include <gtest/gtest.h>

#include "loom/base/dtype.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"

namespace loom::train {
namespace {

nn::FlatLayout Layout(int world) {
  nn::GptConfig c;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 3;
  return nn::FlatLayout(nn::GptParamSpecs(c), {.bucket_elems = 4000, .pad = world * 16});
}

TEST(GradReducerTest, BucketsLaunchDuringBackwardInOrderAndReduce) {
  const int world = 3;
  nn::FlatLayout layout = Layout(world);
  ASSERT_GT(layout.buckets().size(), 3u);
  const int64_t n = layout.total_elements();
  auto comms = comm::MakeInProcCommunicators(world);
  for (DpMode mode : {DpMode::kAllReduce, DpMode::kZero1}) {
    std::vector<std::vector<float>> grads(world, std::vector<float>(n));
    comm::testing::RunRanks(world, [&](int r) {
      for (int64_t i = 0; i < n; ++i) grads[r][i] = static_cast<float>(r + 1) * (i % 7);
      GradReducer red(comms[r].get(), &layout, grads[r].data(), nullptr, {.mode = mode});
      red.BeginMicroStep(true);
      // Backward order: the last parameters of the forward pass first.
      for (int p = static_cast<int>(layout.slots().size()) - 1; p >= 0; --p) red.OnParamReady(p);
      ASSERT_TRUE(red.FinishStep().ok());
      EXPECT_EQ(red.buckets_launched_during_backward(),
                static_cast<int64_t>(layout.buckets().size()));
    });
    // Average of (r+1) * (i % 7) over r = 1..3 is 2 * (i % 7).
    for (int r = 0; r < world; ++r) {
      for (const nn::Bucket& b : layout.buckets()) {
        int64_t shard = b.size() / world;
        int64_t lo = mode == DpMode::kZero1 ? b.begin + shard * r : b.begin;
        int64_t hi = mode == DpMode::kZero1 ? lo + shard : b.end;
        for (int64_t i = lo; i < hi; ++i) ASSERT_FLOAT_EQ(grads[r][i], 2.0f * (i % 7)) << i;
      }
    }
  }
}

TEST(GradReducerTest, EarlierMicroStepsDoNotReduceAndBf16IsAccumulatedInFp32) {
  const int world = 2;
  nn::FlatLayout layout = Layout(world);
  const int64_t n = layout.total_elements();
  auto comms = comm::MakeInProcCommunicators(world);
  std::vector<std::vector<float>> grads(world, std::vector<float>(n, 0.5f));
  comm::testing::RunRanks(world, [&](int r) {
    std::vector<uint16_t> bf16(n, FloatToBF16(static_cast<float>(r + 1)));
    GradReducer red(comms[r].get(), &layout, grads[r].data(), bf16.data(),
                    {.mode = DpMode::kAllReduce});
    red.BeginMicroStep(false);
    for (int p = 0; p < static_cast<int>(layout.slots().size()); ++p) red.OnParamReady(p);
    EXPECT_EQ(red.buckets_launched_during_backward(), 0);
    red.BeginMicroStep(true);
    for (int p = static_cast<int>(layout.slots().size()) - 1; p >= 0; --p) red.OnParamReady(p);
    ASSERT_TRUE(red.FinishStep().ok());
  });
  // fp32 0.5 + bf16 (r + 1), averaged over ranks: 0.5 + 1.5 = 2.
  for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(grads[0][i], 2.0f);
}

TEST(GradReducerTest, PeerFailureSurfacesAsAnError) {
  const int world = 2;
  nn::FlatLayout layout = Layout(world);
  std::shared_ptr<comm::InProcHub> hub;
  auto comms = comm::MakeInProcCommunicators(
      world, {.default_timeout = std::chrono::milliseconds(2000)}, &hub);
  std::vector<float> g(layout.total_elements(), 1.0f);
  hub->KillRank(1);
  GradReducer red(comms[0].get(), &layout, g.data(), nullptr, {.mode = DpMode::kZero1});
  red.BeginMicroStep(true);
  for (int p = static_cast<int>(layout.slots().size()) - 1; p >= 0; --p) red.OnParamReady(p);
  Status s = red.FinishStep();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace loom::train
