#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "loom/trace/optimize/optimizer.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::trace::optimize {
namespace {

// 2 ranks, 4 gradients of 1000 B each, buckets of 2000 B: [0, 2), [2, 4).
dfg::ModelSpec Spec() {
  dfg::ModelSpec s = dfg::SyntheticSpec(2, {100}, {50, 50, 50, 50}, {1000, 1000, 1000, 1000}, 10,
                                        2000);
  s.alpha_ns = 100;
  s.ns_per_byte = 1;
  return s;
}

TEST(StrategyTest, FromSpecAndDescribe) {
  dfg::ModelSpec s = Spec();
  Strategy st = Strategy::FromSpec(s);
  EXPECT_EQ(st.bucket_begin, (std::vector<int>{0, 2}));
  EXPECT_EQ(st.codecs, (std::vector<std::string>{"none", "none"}));
  EXPECT_TRUE(st.overlap);
  st.codecs[1] = "int4";
  st.overlap = false;
  EXPECT_EQ(st.Describe(s), "2 buckets [1.95 KiB, 1.95 KiB], codecs [none, int4], overlap off");
  EXPECT_EQ(st.BucketBytes(s), (std::vector<int64_t>{2000, 2000}));
  EXPECT_EQ(Strategy::FromSpec(s).Describe(s),
            "2 buckets [1.95 KiB, 1.95 KiB], codec none, overlap on");
  // 13 buckets: the middle of each list is elided.
  dfg::ModelSpec many = dfg::SyntheticSpec(2, {1}, std::vector<double>(13, 1.0),
                                           std::vector<int64_t>(13, 100), 1, 100);
  Strategy m = Strategy::FromSpec(many);
  m.codecs[12] = "fp16";
  EXPECT_EQ(m.Describe(many),
            "13 buckets [100 B, 100 B, 100 B, 100 B, 100 B, 100 B, ... 4 more, 100 B, 100 B, "
            "100 B], codecs [none, none, none, none, none, none, ... 4 more, none, none, fp16], "
            "overlap on");
}

TEST(StrategyTest, BaseStrategyPredictsTheBaseReplay) {
  dfg::ModelSpec s = Spec();
  s.ranks[0].bucket_sync_ns = {300, 400};  // measured per-bucket Sync survives unchanged buckets
  s.ranks[1].bucket_sync_ns = {300, 400};
  auto g = dfg::BuildGraph(s);
  ASSERT_TRUE(g.ok());
  auto r = replay::Replay(*g);
  ASSERT_TRUE(r.ok());
  auto p = PredictStrategy(s, Strategy::FromSpec(s));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(*p, r->iteration_ns);
  auto applied = ApplyStrategy(s, Strategy::FromSpec(s));
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->ranks[0].bucket_sync_ns, (std::vector<double>{300, 400}));
  // Splitting bucket 1 keeps bucket 0's measured Sync, new buckets get the spec's sync_ns.
  Strategy split{{0, 2, 3}, {"none", "none", "none"}, true};
  applied = ApplyStrategy(s, split);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->ranks[1].bucket_sync_ns, (std::vector<double>{300, s.sync_ns, s.sync_ns}));
}

TEST(StrategyTest, MatchesWhatIfRegroupAndCompression) {
  dfg::ModelSpec s = Spec();
  whatif::WhatIf w;
  w.bucket_bytes = 1000;
  w.compression = *whatif::DefaultCodec("int8");
  auto want = whatif::RunWhatIf(s, w);
  ASSERT_TRUE(want.ok()) << want.status();
  Strategy st{{0, 1, 2, 3}, {"int8", "int8", "int8", "int8"}, true};
  auto got = PredictStrategy(s, st);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_DOUBLE_EQ(*got, want->predicted.iteration_ns);
  // Overlap off as a strategy = the what-if pass.
  whatif::WhatIf off;
  off.overlap = false;
  want = whatif::RunWhatIf(s, off);
  ASSERT_TRUE(want.ok());
  Strategy st_off = Strategy::FromSpec(s);
  st_off.overlap = false;
  EXPECT_DOUBLE_EQ(*PredictStrategy(s, st_off), want->predicted.iteration_ns);
}

// With ZeRO-1's per-bucket parameter all-gathers in the profile, a strategy that regroups the
// buckets prices the same gathers as the bucket what-if, and the base strategy keeps them as
// measured.
TEST(StrategyTest, RegroupsPerBucketGathersAsTheWhatIfDoes) {
  dfg::ModelSpec s = Spec();
  s.update_collectives = {{8, dfg::CollectiveKind::kAllReduce},
                          {2000, dfg::CollectiveKind::kAllGather},
                          {2000, dfg::CollectiveKind::kAllGather}};
  for (dfg::RankModel& m : s.ranks) m.update_sync_ns = {5, 30, 50};
  whatif::WhatIf w;
  w.bucket_bytes = int64_t{1} << 20;  // one bucket
  auto want = whatif::RunWhatIf(s, w);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->spec.update_collectives.size(), 2u);
  auto applied = ApplyStrategy(s, Strategy{{0}, {"none"}, true});
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(applied->update_collectives.size(), 2u);
  EXPECT_EQ(applied->update_collectives[1].bytes, 4000);
  EXPECT_EQ(applied->ranks[0].update_sync_ns, (std::vector<double>{5, 40}));
  auto got = PredictStrategy(s, Strategy{{0}, {"none"}, true});
  ASSERT_TRUE(got.ok());
  EXPECT_DOUBLE_EQ(*got, want->predicted.iteration_ns);
  auto same = ApplyStrategy(s, Strategy::FromSpec(s));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->update_collectives.size(), 3u);
  EXPECT_EQ(same->ranks[0].update_sync_ns, (std::vector<double>{5, 30, 50}));
}

TEST(StrategyTest, CodecTableOverridesDefaults) {
  dfg::ModelSpec s = Spec();
  CodecTable t;
  t.models.push_back({"int4", 0.5, 0, 0, 0, 0});  // free codec, half the bytes
  Strategy st{{0, 2}, {"int4", "int4"}, true};
  auto spec = ApplyStrategy(s, st, t);
  ASSERT_TRUE(spec.ok());
  EXPECT_DOUBLE_EQ(spec->bucket_codec[0].ratio, 0.5);
  spec = ApplyStrategy(s, st);
  ASSERT_TRUE(spec.ok());
  EXPECT_DOUBLE_EQ(spec->bucket_codec[0].ratio, 4.25 / 32);
}

TEST(StrategyTest, BadStrategiesNameTheProblem) {
  dfg::ModelSpec s = Spec();
  auto r = ApplyStrategy(s, Strategy{{0, 4}, {"none", "none"}, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bucket 1 starts at gradient 4"), std::string::npos);
  r = ApplyStrategy(s, Strategy{{1}, {"none"}, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("start at gradient 0"), std::string::npos);
  r = ApplyStrategy(s, Strategy{{0, 2}, {"none"}, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 codecs for 2 buckets"), std::string::npos);
  r = ApplyStrategy(s, Strategy{{0, 2}, {"none", "zstd"}, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("zstd"), std::string::npos);
  auto t = CodecTable::Load({"none", "fp17"});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("fp17"), std::string::npos);
  t = CodecTable::Load({"none", "fp16", "int4"});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->models.size(), 2u);
  ASSERT_NE(t->Find("int4"), nullptr);
  EXPECT_EQ(t->Find("none"), nullptr);
}

TEST(StrategyTest, CodecTableFitsBenchRowsAndFallsBackToDefaults) {
  const std::string path = ::testing::TempDir() + "optimize_codecs.json";
  {
    std::ofstream f(path);
    // int4 at 4 GB/s encode and 8 GB/s decode: 1 ns / 0.5 ns per element, no fixed cost.
    f << R"({"results": [
      {"codec": "int4:g128", "elements": 1000, "encode_gbs": 4, "decode_gbs": 8,
       "bits_per_element": 4.25},
      {"codec": "int4:g128", "elements": 100000, "encode_gbs": 4, "decode_gbs": 8,
       "bits_per_element": 4.25}]})";
  }
  auto t = CodecTable::Load({"none", "int4", "fp16"}, path);
  ASSERT_TRUE(t.ok()) << t.status();
  const dfg::CodecModel* int4 = t->Find("int4");
  ASSERT_NE(int4, nullptr);
  EXPECT_NEAR(int4->encode_ns_per_elem, 1.0, 1e-9);
  EXPECT_NEAR(int4->decode_ns_per_elem, 0.5, 1e-9);
  EXPECT_NEAR(int4->ratio, 4.25 / 32, 1e-12);
  const dfg::CodecModel* fp16 = t->Find("fp16");  // no rows: the assumed default
  ASSERT_NE(fp16, nullptr);
  EXPECT_DOUBLE_EQ(fp16->ratio, 0.5);
  EXPECT_DOUBLE_EQ(fp16->encode_a_ns, 1000);
  auto bad = CodecTable::Load({"int4"}, path + ".missing");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(".missing"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace loom::trace::optimize
