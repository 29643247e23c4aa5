#include "loom/train/grad_reducer.h"

#include <algorithm>
#include <cmath>

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

// compress.mode=ps: compressed buckets go through PushPull; every rank ends bit-identical, within
// int8's error of the exact average, and the traffic is counted.
TEST(GradReducerTest, PushPullModeReducesCompressedBucketsIdenticallyOnEveryRank) {
  const int world = 3;
  nn::GptConfig c;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 3;
  nn::FlatLayout layout(nn::GptParamSpecs(c), {.bucket_elems = 4000, .pad = world * 32});
  const int64_t n = layout.total_elements();
  auto codec = compress::MakeCodec(*compress::ParseCodecSpec("int8:g32"));
  ASSERT_TRUE(codec.ok()) << codec.status();
  auto comms = comm::MakeInProcCommunicators(world);
  std::vector<std::vector<float>> grads(world, std::vector<float>(n));
  std::vector<compress::CollectiveStats> stats(world);
  comm::testing::RunRanks(world, [&](int r) {
    for (int64_t i = 0; i < n; ++i) grads[r][i] = static_cast<float>(r + 1) * (i % 7);
    GradReducer red(comms[r].get(), &layout, grads[r].data(), nullptr,
                    {.mode = DpMode::kAllReduce, .codec = codec->get(), .push_pull = true});
    red.BeginMicroStep(true);
    for (int p = static_cast<int>(layout.slots().size()) - 1; p >= 0; --p) red.OnParamReady(p);
    Status s = red.FinishStep();
    ASSERT_TRUE(s.ok()) << s;
    stats[r] = red.compress_stats();
  });
  for (int r = 1; r < world; ++r) EXPECT_EQ(grads[r], grads[0]);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(grads[0][i] - 2.0 * (i % 7)));
  EXPECT_GT(worst, 0.0);   // quantized
  // Two pushed sources with int8 steps <= 18 / 127 (averaged over 3), plus the server's step of
  // the average (<= 12 / 127): < 0.19.
  EXPECT_LT(worst, 0.19);
  EXPECT_EQ(stats[0].calls, static_cast<int64_t>(layout.buckets().size()));
  EXPECT_LT(stats[0].wire_bytes_sent * 2, stats[0].fp32_bytes);
}

// compress.node_size=2 routes compressed buckets through the two-level collective, and
// compress.min_elements sends the small ones uncompressed (exact) and counts them.
TEST(GradReducerTest, TwoLevelRouteAndSmallBucketBypass) {
  const int world = 4;
  nn::GptConfig cfg;
  cfg.d_model = 32;
  cfg.n_heads = 2;
  cfg.n_layers = 3;
  // Shards of whole int groups (32).
  nn::FlatLayout layout(nn::GptParamSpecs(cfg), {.bucket_elems = 4000, .pad = world * 32});
  const int64_t n = layout.total_elements();
  int64_t smallest = n, largest = 0;
  for (const nn::Bucket& b : layout.buckets()) {
    smallest = std::min(smallest, b.size());
    largest = std::max(largest, b.size());
  }
  ASSERT_LT(smallest, largest);
  const int64_t threshold = smallest + 1;
  int64_t small_buckets = 0;
  for (const nn::Bucket& b : layout.buckets()) small_buckets += b.size() < threshold;
  auto inter = compress::MakeCodec(*compress::ParseCodecSpec("int4:g32"));
  auto intra = compress::MakeCodec(*compress::ParseCodecSpec("int8:g32"));
  auto comms = comm::MakeInProcCommunicators(world);
  std::vector<std::vector<float>> grads(world, std::vector<float>(n));
  std::vector<compress::BypassCounts> counts(world);
  std::vector<compress::CollectiveStats> stats(world);
  comm::testing::RunRanks(world, [&](int r) {
    for (int64_t i = 0; i < n; ++i) grads[r][i] = static_cast<float>(r + 1) * (i % 7);
    GradReducer red(comms[r].get(), &layout, grads[r].data(), nullptr,
                    {.mode = DpMode::kZero1,
                     .codec = inter->get(),
                     .min_compress_elements = threshold,
                     .node_size = 2,
                     .intra_codec = intra->get()});
    red.BeginMicroStep(true);
    for (int p = static_cast<int>(layout.slots().size()) - 1; p >= 0; --p) red.OnParamReady(p);
    Status s = red.FinishStep();
    ASSERT_TRUE(s.ok()) << s;
    counts[r] = red.bypass().counts();
    stats[r] = red.compress_stats();
  });
  EXPECT_EQ(counts[0].bypassed, small_buckets);
  EXPECT_EQ(counts[0].compressed, static_cast<int64_t>(layout.buckets().size()) - small_buckets);
  EXPECT_GT(stats[0].calls, 0);
  // Average of (r + 1) * (i % 7) over 4 ranks: 2.5 * (i % 7), exact in bypassed buckets.
  double worst_compressed = 0;
  for (int r = 0; r < world; ++r) {
    for (const nn::Bucket& b : layout.buckets()) {
      const int64_t shard = b.size() / world, lo = b.begin + shard * r;
      for (int64_t i = lo; i < lo + shard; ++i) {
        const double err = std::fabs(grads[r][i] - 2.5 * (i % 7));
        if (b.size() < threshold) {
          ASSERT_EQ(grads[r][i], 2.5f * (i % 7)) << i;
        } else {
          worst_compressed = std::max(worst_compressed, err);
        }
      }
    }
  }
  EXPECT_GT(worst_compressed, 0.0);
  // One int8 step of the node peer (<= 24 / 127) and one int4 step of the other node's sum
  // (<= 42 / 7), averaged over 4 ranks: < 1.6.
  EXPECT_LT(worst_compressed, 1.6);
}

}  // namespace
}  // namespace loom::train
