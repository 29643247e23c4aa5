#include "loom/train/run_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "loom/base/file_util.h"

namespace loom::train {
namespace {

TEST(RunReportTest, MetricsRowsAndReport) {
  std::string dir = ::testing::TempDir() + "/run_report_" + std::to_string(::getpid());
  auto w = RunWriter::Open(dir);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int s = 1; s <= 3; ++s) {
    MetricRow r;
    r.step = s * 10;
    r.loss = 3.0 - 0.5 * s;
    r.tokens_per_s = 1000 + s;
    r.mfu = 0.4;
    if (s == 3) r.eval_loss = 1.6;
    ASSERT_TRUE(w->Append(r).ok());
  }
  ASSERT_TRUE(w->WriteReport("test <run>", {{"model", "tiny & fast"}}, "In the <beginning>").ok());
  std::istringstream lines(*ReadFileToString(dir + "/metrics.jsonl"));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* k : {"step", "loss", "tokens_per_s", "mfu"}) EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_EQ(j["step"], 10 * (n + 1));
    EXPECT_EQ(j.contains("eval_loss"), n == 2);
    ++n;
  }
  EXPECT_EQ(n, 3);
  std::string html = *ReadFileToString(dir + "/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("test &lt;run&gt;"), std::string::npos);
  EXPECT_NE(html.find("tiny &amp; fast"), std::string::npos);
  EXPECT_NE(html.find("In the &lt;beginning&gt;"), std::string::npos);
  EXPECT_EQ(html.find("NaN"), std::string::npos);
}

MetricRow Row(int64_t step, double loss) {
  MetricRow r;
  r.step = step;
  r.loss = loss;
  r.elapsed_s = 0.1 * step;
  return r;
}

void AppendRaw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::app) << bytes;
}

std::vector<int64_t> StepsInFile(const std::string& path) {
  std::istringstream lines(*ReadFileToString(path));
  std::vector<int64_t> steps;
  std::string line;
  while (std::getline(lines, line)) steps.push_back(nlohmann::json::parse(line)["step"]);
  return steps;
}

TEST(RunReportTest, AResumedRunAppendsAndSeedsTheReportWithTheRestoredLineage) {
  std::string dir = ::testing::TempDir() + "/run_resume_" + std::to_string(::getpid());
  {
    auto w = RunWriter::Open(dir);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int s : {10, 20, 30, 40}) ASSERT_TRUE(w->Append(Row(s, 5.0 - 0.1 * s)).ok());
  }
  // The first attempt died after step 40; the checkpoint of step 20 is restored.
  auto w = RunWriter::Open(dir, /*resumed_from_step=*/20);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->rows().size(), 2u);
  EXPECT_EQ(w->rows()[1].step, 20);
  EXPECT_DOUBLE_EQ(w->rows()[1].loss, 3.0);
  EXPECT_DOUBLE_EQ(w->rows()[1].elapsed_s, 2.0);
  ASSERT_TRUE(w->Append(Row(30, 1.5)).ok());
  // Every attempt's rows stay in the file, in the order they were logged.
  EXPECT_EQ(StepsInFile(dir + "/metrics.jsonl"), (std::vector<int64_t>{10, 20, 30, 40, 30}));
  // Resuming the second attempt at 30 keeps its lineage (10, 20, its own 30), not the first's 30.
  auto again = RunWriter::Open(dir, 30);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->rows().size(), 3u);
  EXPECT_DOUBLE_EQ(again->rows()[2].loss, 1.5);
  // A fresh run (no checkpoint) starts a fresh file.
  auto fresh = RunWriter::Open(dir);
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(fresh->rows().empty());
  EXPECT_FALSE(ReadFileToString(dir + "/metrics.jsonl").ok());
}

TEST(RunReportTest, ATornLastLineIsCutAndAGarbledRowIsAnError) {
  std::string dir = ::testing::TempDir() + "/run_torn_" + std::to_string(::getpid());
  {
    auto w = RunWriter::Open(dir);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Append(Row(10, 2.0)).ok());
  }
  AppendRaw(dir + "/metrics.jsonl", "{\"step\":20,\"lo");  // killed mid-write
  auto w = RunWriter::Open(dir, 10);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->rows().size(), 1u);
  ASSERT_TRUE(w->Append(Row(20, 1.0)).ok());
  EXPECT_EQ(StepsInFile(dir + "/metrics.jsonl"), (std::vector<int64_t>{10, 20}));
  // A diverged step (NaN loss, written as null) still resumes, as NaN.
  MetricRow diverged = Row(30, std::nan(""));
  ASSERT_TRUE(w->Append(diverged).ok());
  auto resumed = RunWriter::Open(dir, 30);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  ASSERT_EQ(resumed->rows().size(), 3u);
  EXPECT_TRUE(std::isnan(resumed->rows()[2].loss));
  // A complete line that is not a row is reported with its line number.
  AppendRaw(dir + "/metrics.jsonl", "{\"loss\":1}\n");
  auto bad = RunWriter::Open(dir, 20);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("metrics.jsonl:4"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace loom::train
