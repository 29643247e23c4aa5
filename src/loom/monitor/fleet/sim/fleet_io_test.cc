#include "loom/monitor/fleet/sim/fleet_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "loom/base/file_util.h"
#include "loom/monitor/fleet/sim/fleet_simulator.h"

namespace loom::monitor {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const std::string dir = testing::TempDir() + "/loom_fleet_io_" + name;
  fs::remove_all(dir);
  return dir;
}

LabelledJob SmallJob() {
  SimConfig c;
  c.machines = 8;
  c.seconds = 900;
  c.warmup_s = 60;
  c.faults_per_machine_day = 60;
  SimPlan plan = PlanJob(c, 21);
  plan.faults.push_back(MakeFault(c, "unreachable", 2, 100, 130));  // NaNs in the file
  return RenderJob(c, 21, plan);
}

TEST(FleetIoTest, SaveLoadRoundTrip) {
  const LabelledJob job = SmallJob();
  ASSERT_GT(job.faults.size(), 2u);
  const std::string dir = FreshDir("roundtrip");
  ASSERT_TRUE(SaveJob(job, dir).ok());
  EXPECT_EQ(fs::file_size(dir + "/series.f32"), job.series.values.size() * 4);
  Result<LabelledJob> back = LoadJob(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->seed, job.seed);
  EXPECT_EQ(back->series.metric_names, job.series.metric_names);
  EXPECT_EQ(back->series.machines, job.series.machines);
  EXPECT_EQ(back->series.seconds, job.series.seconds);
  ASSERT_EQ(back->series.values.size(), job.series.values.size());
  EXPECT_EQ(0, std::memcmp(back->series.values.data(), job.series.values.data(),
                           job.series.values.size() * sizeof(float)));
  EXPECT_TRUE(std::isnan(back->series.at(0, 2, 110)));
  ASSERT_EQ(back->faults.size(), job.faults.size());
  for (size_t i = 0; i < job.faults.size(); ++i) {
    const FaultLabel &a = job.faults[i], &b = back->faults[i];
    EXPECT_EQ(a.machine, b.machine);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.onset_s, b.onset_s);
    EXPECT_EQ(a.end_s, b.end_s);
    EXPECT_EQ(a.group, b.group);
    EXPECT_EQ(a.must_alarm, b.must_alarm);
  }
  EXPECT_EQ(back->regime_changes_s, job.regime_changes_s);
}

TEST(FleetIoTest, MissingDirectoryNamesMetaJson) {
  Result<LabelledJob> r = LoadJob(FreshDir("missing"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("meta.json"), std::string::npos) << r.status();
}

TEST(FleetIoTest, TruncatedSeriesIsDataLoss) {
  const std::string dir = FreshDir("truncated");
  const LabelledJob job = SmallJob();
  ASSERT_TRUE(SaveJob(job, dir).ok());
  fs::resize_file(dir + "/series.f32", job.series.values.size() * 4 - 6);
  Result<LabelledJob> r = LoadJob(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("series.f32"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status();
}

TEST(FleetIoTest, MissingSeriesNamesTheFile) {
  const std::string dir = FreshDir("noseries");
  ASSERT_TRUE(SaveJob(SmallJob(), dir).ok());
  fs::remove(dir + "/series.f32");
  Result<LabelledJob> r = LoadJob(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("series.f32"), std::string::npos) << r.status();
}

// Replaces the first `from` in meta.json by `to`.
void EditMeta(const std::string& dir, const std::string& from, const std::string& to) {
  Result<std::string> text = ReadFileToString(dir + "/meta.json");
  ASSERT_TRUE(text.ok());
  const size_t at = text->find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text->replace(at, from.size(), to);
  ASSERT_TRUE(WriteFileAtomic(dir + "/meta.json", *text).ok());
}

TEST(FleetIoTest, WrongMachineCountInMetaIsAnError) {
  const std::string dir = FreshDir("wrongcount");
  ASSERT_TRUE(SaveJob(SmallJob(), dir).ok());
  EditMeta(dir, "\"machines\": 8", "\"machines\": 9");
  Result<LabelledJob> r = LoadJob(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("series.f32"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("9 machines"), std::string::npos) << r.status();
}

TEST(FleetIoTest, FaultOutsideTheJobIsAnError) {
  const std::string dir = FreshDir("badfault");
  ASSERT_TRUE(SaveJob(SmallJob(), dir).ok());
  EditMeta(dir, "\"machine\": ", "\"machine\": 1");  // e.g. 3 -> 13: not one of 8 machines
  Result<LabelledJob> r = LoadJob(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("faults[0]"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("meta.json"), std::string::npos) << r.status();
}

TEST(FleetIoTest, WrongFormatIsAnError) {
  const std::string dir = FreshDir("format");
  ASSERT_TRUE(SaveJob(SmallJob(), dir).ok());
  EditMeta(dir, "loom.fleet_job.v1", "loom.fleet_job.v0");
  Result<LabelledJob> r = LoadJob(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace loom::monitor
