#include "loom/train/run_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/base/file_util.h"
#include "loom/train/svg_chart.h"

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

TEST(SvgChartTest, PointsMapIntoThePlotArea) {
  std::string svg = SvgLineChart("t", "x", "y", {{"s", "red", {{0, 1}, {10, 2}}, false}}, 200, 100);
  // x from 64 (left margin) to 184 (200 - 16); the first point is at the left edge.
  EXPECT_NE(svg.find("points=\"64,"), std::string::npos) << svg;
  EXPECT_NE(svg.find("184,"), std::string::npos) << svg;
}

}  // namespace
}  // namespace loom::train
