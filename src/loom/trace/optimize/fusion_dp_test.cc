#include "loom/trace/optimize/fusion_dp.h"

#include <gtest/gtest.h>

#include <limits>

#include "loom/trace/optimize/optimizer.h"
#include "loom/trace/optimize/testing/random_specs.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::trace::optimize {
namespace {

using testing::RandomFusionSpec;

struct Brute {
  double best_objective = std::numeric_limits<double>::infinity();
  double best_replay = std::numeric_limits<double>::infinity();
  double worst_replay = 0;
};

// Every contiguous partition: 2^(n-1) of them.
Brute BruteForce(const dfg::ModelSpec& s) {
  const int n = static_cast<int>(s.grads.size());
  const std::string codec = s.bucket_codec.empty() ? "none" : s.bucket_codec[0].name;
  Brute b;
  for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
    Strategy st;
    st.overlap = s.overlap;
    for (int i = 1; i < n; ++i) {
      if (mask & (1u << (i - 1))) st.bucket_begin.push_back(i);
    }
    st.codecs.assign(st.num_buckets(), codec);
    auto obj = FusionObjective(s, st.bucket_begin);
    auto rep = PredictStrategy(s, st);
    EXPECT_TRUE(obj.ok() && rep.ok());
    if (!obj.ok() || !rep.ok()) return b;
    b.best_objective = std::min(b.best_objective, *obj);
    b.best_replay = std::min(b.best_replay, *rep);
    b.worst_replay = std::max(b.worst_replay, *rep);
  }
  return b;
}

void ExpectDpIsExact(const dfg::ModelSpec& s) {
  auto plan = OptimalFusion(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int n = static_cast<int>(s.grads.size());
  EXPECT_EQ(plan->bucket_replays, n * (n + 1) / 2);
  EXPECT_TRUE(plan->exact) << plan->inexact_reason;
  const Brute b = BruteForce(s);
  EXPECT_NEAR(plan->objective_ns, b.best_objective, 1e-6 * b.best_objective);
  EXPECT_NEAR(plan->replayed_ns, b.best_replay, 1e-6 * b.best_replay);
  EXPECT_LT(b.best_replay, b.worst_replay);  // the instance is not trivial
  auto obj = FusionObjective(s, plan->bucket_begin);
  ASSERT_TRUE(obj.ok());
  EXPECT_DOUBLE_EQ(*obj, plan->objective_ns);
}

TEST(FusionDpTest, EqualsBruteForceOnRandomInstances) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ExpectDpIsExact(RandomFusionSpec(seed, 4 + static_cast<int>(seed)));
  }
}

TEST(FusionDpTest, EqualsBruteForceOnTwelveTensors) { ExpectDpIsExact(RandomFusionSpec(42, 12)); }

TEST(FusionDpTest, ExactWithSharedLinkSegmentsCodecAndMeasuredSyncs) {
  dfg::ModelSpec s = RandomFusionSpec(7, 8);
  s.topology = dfg::LinkTopology::kShared;
  s.segment_bytes = 1024;
  s.world_size = 3;
  s.ranks.assign(3, s.ranks[0]);
  s.bucket_codec.assign(s.num_buckets(), *whatif::DefaultCodec("int8"));
  for (auto& m : s.ranks) {  // measured per-bucket Sync / finish on the base buckets
    m.bucket_sync_ns.assign(s.num_buckets(), 900);
    m.bucket_finish_ns.assign(s.num_buckets(), 400);
  }
  ExpectDpIsExact(s);
  s.overlap = false;  // every bucket waits for the whole backward: one bucket wins
  auto plan = OptimalFusion(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bucket_begin, std::vector<int>{0});
  ExpectDpIsExact(s);
}

TEST(FusionDpTest, ReportsWhenItIsOnlyAHeuristic) {
  dfg::ModelSpec s = RandomFusionSpec(3, 6);
  s.kappa = 1.5;
  auto plan = OptimalFusion(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->exact);
  EXPECT_NE(plan->inexact_reason.find("kappa"), std::string::npos);
  // Without κ in the replay it is exact again.
  replay::ReplayOptions no_kappa;
  no_kappa.apply_kappa = false;
  plan = OptimalFusion(s, no_kappa);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->exact);

  // A straggler is still exact: the ring's first SEND waits for every rank's Sync, so every
  // rank's comm device frees at the same time.
  ExpectDpIsExact(RandomFusionSpec(3, 6, /*straggler=*/1.7));
  // A measured per-rank finish gap (rank 0 waits 5 µs for its sends) frees the ranks' comm
  // devices at different times.
  dfg::ModelSpec hetero = RandomFusionSpec(3, 6);
  hetero.ranks[0].bucket_finish_ns.assign(hetero.num_buckets(), 5000);
  plan = OptimalFusion(hetero);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->exact);
  EXPECT_NE(plan->inexact_reason.find("ranks differ"), std::string::npos);
  // Still never worse than the base buckets under its own objective, nor than brute force by
  // much on this instance.
  auto base_obj = FusionObjective(hetero, hetero.bucket_begin);
  ASSERT_TRUE(base_obj.ok());
  EXPECT_LE(plan->objective_ns, *base_obj);
  const Brute b = BruteForce(hetero);
  EXPECT_LE(plan->replayed_ns, 1.05 * b.best_replay);
}

TEST(FusionDpTest, BadInput) {
  dfg::ModelSpec s = RandomFusionSpec(1, 5);
  auto plan = OptimalFusion(s, {}, /*max_grads=*/4);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("5 gradients exceed"), std::string::npos);
  s.bucket_codec.assign(s.num_buckets(), dfg::CodecModel{});
  s.bucket_codec.back() = *whatif::DefaultCodec("int4");
  if (s.num_buckets() > 1) {
    plan = OptimalFusion(s);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.status().message().find("different codecs"), std::string::npos);
  }
  auto obj = FusionObjective(RandomFusionSpec(1, 5), {0, 7});
  EXPECT_FALSE(obj.ok());
}

}  // namespace
}  // namespace loom::trace::optimize
