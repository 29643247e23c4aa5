#include "loom/ckpt/tools.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/base/file_util.h"
#include "loom/ckpt/checkpointer.h"
#include "loom/ckpt/safetensors.h"
#include "loom/ckpt/testing/test_util.h"

namespace loom::ckpt {
namespace {

std::string Golden() { return std::string(LOOM_SOURCE_DIR) + "/tests/data/ckpt/golden.safetensors"; }

TEST(Tools, ImportTurnsSafetensorsIntoACheckpointWithChecksums) {
  testing::ScratchDir dir;
  auto storage = NewPosixStorage();
  auto src = OpenSafetensors(*storage, Golden());
  ASSERT_TRUE(src.ok());
  auto step = ImportAsCheckpoint(*storage, *src, dir.path() + "/ck", 3);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(*step, dir.path() + "/ck/step_00000003");
  auto ck = OpenCheckpoint(*storage, dir.path() + "/ck");
  ASSERT_TRUE(ck.ok()) << ck.status();
  EXPECT_EQ(ck->meta.step, 3);
  EXPECT_EQ(*VerifyChecksums(*storage, *ck), 3);
  auto diffs = CompareCheckpoints(*storage, *src, *ck, 0);
  ASSERT_TRUE(diffs.ok());
  ASSERT_EQ(diffs->size(), 3u);
  for (const TensorDiff& d : *diffs) EXPECT_EQ(d.problem, "") << d.name;
}

TEST(Tools, CompareFindsValueShapeAndNameDifferences) {
  auto storage = NewMemoryStorage();
  std::vector<float> a = {1, 2, 3, 4}, b = {1, 2, 3.5f, -0.0f}, c = {0, 0};
  std::vector<float> z = {0, 0, 0, 0};
  {
    Checkpointer x(storage.get(), "/x", nullptr);
    StateDict d;
    d.AddFull("w", DType::kF32, {4}, a.data(), false);
    d.AddFull("only_x", DType::kF32, {2}, c.data(), false);
    d.AddFull("z", DType::kF32, {4}, z.data(), false);
    ASSERT_TRUE(x.Save(1, d, {.async = false}).ok());
    Checkpointer y(storage.get(), "/y", nullptr);
    StateDict e;
    e.AddFull("w", DType::kF32, {4}, b.data(), false);
    e.AddFull("z", DType::kF32, {2, 2}, z.data(), false);
    ASSERT_TRUE(y.Save(1, e, {.async = false}).ok());
  }
  auto diffs = CompareCheckpoints(*storage, *OpenCheckpoint(*storage, "/x"),
                                  *OpenCheckpoint(*storage, "/y"), 0);
  ASSERT_TRUE(diffs.ok()) << diffs.status();
  std::map<std::string, TensorDiff> by;
  for (const TensorDiff& d : *diffs) by[d.name] = d;
  EXPECT_EQ(by["only_x"].problem, "only in A");
  EXPECT_NE(by["z"].problem.find("shape"), std::string::npos);
  EXPECT_EQ(by["w"].problem, "values");
  EXPECT_EQ(by["w"].differing, 2);  // 3 vs 3.5, and 4 vs -0
  EXPECT_DOUBLE_EQ(by["w"].max_abs_diff, 4.0);
  // With a tolerance of 0.6 only the 4 vs -0 element still differs.
  auto loose = CompareCheckpoints(*storage, *OpenCheckpoint(*storage, "/x"),
                                  *OpenCheckpoint(*storage, "/y"), 0.6);
  for (const TensorDiff& d : *loose) {
    if (d.name == "w") {
      EXPECT_EQ(d.differing, 1);
    }
  }
}

TEST(Tools, TelemetrySummaryFlagsTheSlowRank) {
  testing::ScratchDir dir;
  const std::string tel = dir.path() + "/telemetry";
  ASSERT_TRUE(MakeDirs(tel).ok());
  for (int r = 0; r < 4; ++r) {
    const double write = r == 2 ? 1.0 : 0.2 + 0.01 * r;  // rank 2 is 5x slower
    const std::string line = "{\"step\": 10, \"rank\": " + std::to_string(r) +
                             ", \"stage\": \"write\", \"t_start\": 100.0, \"t_end\": " +
                             std::to_string(100.0 + write) + ", \"bytes\": 1000}";
    ASSERT_TRUE(AppendLine(tel + "/r" + std::to_string(r) + ".jsonl", line).ok());
  }
  ASSERT_TRUE(AppendLine(tel + "/r0.jsonl", "{\"step\": 10, \"rank\"").ok());  // cut by a crash
  auto rows = SummarizeTelemetry(dir.path());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  const StageSummary& s = (*rows)[0];
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.bytes, 4000);
  EXPECT_NEAR(s.max_s, 1.0, 1e-9);
  EXPECT_EQ(s.slow_ranks, std::vector<int>{2});
  EXPECT_EQ(SummarizeTelemetry(dir.path() + "/nothing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace loom::ckpt
