#include "loom/monitor/agent/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/monitor/agent/testing/promtool.h"

namespace loom::monitor {
namespace {

TEST(PrometheusTextTest, RendersFamiliesOnceWithCommonLabelsFirst) {
  std::vector<MetricPoint> pts = {
      Gauge("host_cpu_busy_ratio", "CPU busy", 0.25),
      Counter("app_collective_bytes_total", "Bytes", 4096, {{"rank", "0"}}),
      Counter("app_collective_bytes_total", "Bytes", 1e6, {{"rank", "1"}}),
      Gauge("app_step_time_seconds", "Step time", NAN, {{"rank", "1"}}),
  };
  Result<std::string> text = RenderPrometheusText(pts, {{"machine", "m0"}});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "# HELP loom_host_cpu_busy_ratio CPU busy\n"
            "# TYPE loom_host_cpu_busy_ratio gauge\n"
            "loom_host_cpu_busy_ratio{machine=\"m0\"} 0.25\n"
            "# HELP loom_app_collective_bytes_total Bytes\n"
            "# TYPE loom_app_collective_bytes_total counter\n"
            "loom_app_collective_bytes_total{machine=\"m0\",rank=\"0\"} 4096\n"
            "loom_app_collective_bytes_total{machine=\"m0\",rank=\"1\"} 1000000\n"
            "# HELP loom_app_step_time_seconds Step time\n"
            "# TYPE loom_app_step_time_seconds gauge\n"
            "loom_app_step_time_seconds{machine=\"m0\",rank=\"1\"} NaN\n");
  testing::PromtoolResult check = testing::PromtoolCheckMetrics(*text);
  ASSERT_TRUE(check.found) << check.output;
  EXPECT_TRUE(check.ok) << check.output;
}

TEST(PrometheusTextTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeHelp("x\\y\nz\""), "x\\\\y\\nz\"");
  std::vector<MetricPoint> pts = {Gauge("x_ratio", "line1\nline2", 1, {{"device", "we\"ird"}})};
  Result<std::string> text = RenderPrometheusText(pts, {});
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("loom_x_ratio{device=\"we\\\"ird\"} 1\n"), std::string::npos);
  testing::PromtoolResult check = testing::PromtoolCheckMetrics(*text);
  ASSERT_TRUE(check.found) << check.output;
  EXPECT_TRUE(check.ok) << check.output;
}

TEST(PrometheusTextTest, RejectsInconsistentFamiliesAndBadNames) {
  Result<std::string> mixed = RenderPrometheusText(
      {Gauge("a_seconds", "h", 1), Counter("a_seconds", "h", 2)}, {});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("a_seconds"), std::string::npos);
  EXPECT_FALSE(RenderPrometheusText({Gauge("9lives", "h", 1)}, {}).ok());
  EXPECT_FALSE(RenderPrometheusText({Gauge("a:b", "h", 1)}, {}).ok());
  EXPECT_FALSE(RenderPrometheusText({Gauge("ok", "h", 1, {{"__x", "y"}})}, {}).ok());
}

// promtool itself catches what the renderer would let through (a lint problem): the check can
// fail, so the passing checks above mean something.
TEST(PrometheusTextTest, PromtoolRejectsACounterWithoutTotal) {
  Result<std::string> text = RenderPrometheusText({Counter("requests", "h", 1)}, {});
  ASSERT_TRUE(text.ok());
  testing::PromtoolResult check = testing::PromtoolCheckMetrics(*text);
  ASSERT_TRUE(check.found) << check.output;
  EXPECT_FALSE(check.ok);
  EXPECT_NE(check.output.find("_total"), std::string::npos) << check.output;
}

}  // namespace
}  // namespace loom::monitor
