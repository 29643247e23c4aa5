#include "loom/overlap/gemm/gemm_efficiency.h"

#include <gtest/gtest.h>

namespace loom::overlap {
namespace {

TEST(GemmEfficiencyTest, SmallShapeReportsEveryArm) {
  GemmEfficiencyOptions o;
  o.m = 70;  // 70 / 16 leaves a ragged last tile
  o.k = 300;
  o.n = 40;
  o.tile_rows = 16;
  o.trials = 3;
  Result<GemmEfficiency> r = MeasureGemmEfficiency(o);
  ASSERT_TRUE(r.ok()) << r.status();
  const size_t isas = DetectGemmIsa() == GemmIsa::kAvx512 ? 2 : 1;
  ASSERT_EQ(r->arms.size(), 2 + isas);
  EXPECT_EQ(r->arms[0].name, "openblas_one_call");
  EXPECT_EQ(r->arms[1].name, "openblas_tiles");
  EXPECT_EQ(r->arms.back().name, "tile_gemm_" + std::string(GemmIsaName(DetectGemmIsa())));
  EXPECT_EQ(r->ratio_isa, DetectGemmIsa());
  for (const GemmArmStats& arm : r->arms) {
    ASSERT_EQ(arm.gflops.size(), 3u) << arm.name;
    EXPECT_GT(arm.median_gflops, 0) << arm.name;
    EXPECT_LE(arm.p25_gflops, arm.median_gflops) << arm.name;
    EXPECT_LE(arm.median_gflops, arm.p75_gflops) << arm.name;
  }
  EXPECT_DOUBLE_EQ(r->arms[0].median_ratio_vs_one_call, 1.0);
  EXPECT_DOUBLE_EQ(r->ratio, r->arms.back().median_ratio_vs_one_call);
  EXPECT_LT(r->max_rel_error, 1e-5);
}

TEST(GemmEfficiencyTest, ShorthandTimesTheDetectedIsa) {
  Result<GemmEfficiency> r = MeasureTileGemmVsOpenBlas(32, 64, 48, 8, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->arms.size(), 3u);
  EXPECT_GT(r->ratio, 0);
}

TEST(GemmEfficiencyTest, RejectsBadOptions) {
  EXPECT_EQ(MeasureTileGemmVsOpenBlas(0, 64, 64, 8, 3).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureTileGemmVsOpenBlas(64, 64, 64, 0, 3).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MeasureTileGemmVsOpenBlas(64, 64, 64, 8, 0).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace loom::overlap
