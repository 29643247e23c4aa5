#include "loom/trace/optimize/optimizer.h"

#include <gtest/gtest.h>

#include "loom/trace/optimize/fusion_dp.h"
#include "loom/trace/optimize/testing/random_specs.h"

namespace loom::trace::optimize {
namespace {

using testing::RandomFusionSpec;

OptimizeOptions FusionOnly(uint64_t seed) {
  OptimizeOptions o;
  o.seed = seed;
  o.space.codecs = {"none"};
  o.space.try_overlap_off = false;
  o.max_replays = 300;
  return o;
}

TEST(OptimizerTest, AnnealingReachesTheFusionDpOptimum) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE("instance " + std::to_string(seed));
    const dfg::ModelSpec s = RandomFusionSpec(seed, 6 + 2 * static_cast<int>(seed % 4));
    auto dp = OptimalFusion(s);
    ASSERT_TRUE(dp.ok()) << dp.status();
    auto r = Optimize(s, FusionOnly(seed));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->predicted_ns, dp->replayed_ns * 1.01);
    EXPECT_GE(r->predicted_ns, dp->replayed_ns * (1 - 1e-9));  // the DP is exact here
    EXPECT_LE(r->predicted_ns, r->base_ns);
    EXPECT_GT(r->replays, 1);
    EXPECT_LE(r->replays, 300);
    EXPECT_TRUE(r->best.overlap);
    for (const std::string& c : r->best.codecs) EXPECT_EQ(c, "none");
    auto check = PredictStrategy(s, r->best);
    ASSERT_TRUE(check.ok());
    EXPECT_DOUBLE_EQ(*check, r->predicted_ns);
  }
}

TEST(OptimizerTest, DeterministicUnderASeed) {
  const dfg::ModelSpec s = RandomFusionSpec(9, 10);
  OptimizeOptions o = FusionOnly(123);
  o.space.codecs = {"none", "fp16", "int4"};
  o.space.try_overlap_off = true;
  auto a = Optimize(s, o), b = Optimize(s, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->best, b->best);
  EXPECT_EQ(a->replays, b->replays);
  ASSERT_EQ(a->accepted.size(), b->accepted.size());
  for (size_t i = 0; i < a->accepted.size(); ++i) {
    EXPECT_EQ(a->accepted[i].move, b->accepted[i].move);
    EXPECT_EQ(a->accepted[i].cost_ns, b->accepted[i].cost_ns);
  }
}

TEST(OptimizerTest, NeverWorseThanBase) {
  // Compute-bound: tiny gradients, so the base (one bucket each) may already be optimal; and a
  // budget of one replay: the base itself.
  dfg::ModelSpec s = dfg::SyntheticSpec(2, {1000}, {5000, 5000, 5000}, {10, 10, 10}, 100, 1);
  OptimizeOptions o;
  o.space.codecs = {"none", "int4"};
  auto r = Optimize(s, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->predicted_ns, r->base_ns);
  o.max_replays = 1;
  r = Optimize(s, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replays, 1);
  EXPECT_EQ(r->best, r->base);
  EXPECT_DOUBLE_EQ(r->predicted_ns, r->base_ns);
}

TEST(OptimizerTest, CompressesOnASlowLinkAndNotOnAFastOne) {
  // 4 MB of gradients over 0.1 GB/s (10 ns/B): comm-bound, int4 cuts the wire bytes ~7.5x.
  dfg::ModelSpec slow =
      dfg::SyntheticSpec(2, {100'000}, {50'000, 50'000, 50'000, 50'000},
                         {1'000'000, 1'000'000, 1'000'000, 1'000'000}, 10'000, 2'000'000);
  slow.ns_per_byte = 10;
  OptimizeOptions o;
  o.space.codecs = {"none", "fp16", "int4"};
  o.max_replays = 200;
  auto r = Optimize(slow, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(r->predicted_ns, 0.3 * r->base_ns) << r->best.Describe(slow);
  for (const std::string& c : r->best.codecs) EXPECT_EQ(c, "int4") << r->best.Describe(slow);
  // A free network (0.001 ns/B) with costly codecs: compression only adds encode/decode time.
  dfg::ModelSpec fast = slow;
  fast.ns_per_byte = 0.001;
  fast.alpha_ns = 0;
  o.codec_models.models = {{"fp16", 0.5, 1e6, 0, 1e6, 0}, {"int4", 0.13, 1e6, 0, 1e6, 0}};
  r = Optimize(fast, o);
  ASSERT_TRUE(r.ok());
  for (const std::string& c : r->best.codecs) EXPECT_EQ(c, "none") << r->best.Describe(fast);
  EXPECT_LE(r->predicted_ns, r->base_ns);
}

TEST(OptimizerTest, TurnsOverlapBackOn) {
  dfg::ModelSpec s = RandomFusionSpec(4, 8);
  s.overlap = false;
  OptimizeOptions o = FusionOnly(5);
  auto r = Optimize(s, o);  // try_overlap_off = false still allows switching overlap on
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->best.overlap);
  EXPECT_LT(r->predicted_ns, r->base_ns);
  bool saw = false;
  for (const AcceptedMove& m : r->accepted) saw |= m.move == "overlap on";
  EXPECT_TRUE(saw);
}

TEST(OptimizerTest, SeedingWithTheDpStartsAtItsOptimum) {
  const dfg::ModelSpec s = RandomFusionSpec(11, 10);
  auto dp = OptimalFusion(s);
  ASSERT_TRUE(dp.ok());
  OptimizeOptions o = FusionOnly(1);
  o.seed_with_fusion_dp = true;
  o.max_replays = 2;
  auto r = Optimize(s, o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->predicted_ns, std::min(r->base_ns, dp->replayed_ns));
}

TEST(OptimizerTest, BadOptions) {
  const dfg::ModelSpec s = RandomFusionSpec(1, 4);
  OptimizeOptions o;
  o.space.codecs = {"none", "int3"};
  auto r = Optimize(s, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("int3"), std::string::npos);
  o = {};
  o.max_replays = 0;
  EXPECT_FALSE(Optimize(s, o).ok());
  o = {};
  o.t_final = 1;
  EXPECT_FALSE(Optimize(s, o).ok());
}

}  // namespace
}  // namespace loom::trace::optimize
