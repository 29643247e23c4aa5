#include "loom/monitor/fleet/eval/eval_report_html.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace loom::monitor {
namespace {

using json = nlohmann::json;

json SmallReport() {
  json r;
  r["config"] = {{"machines", 64}, {"seconds", 10800}, {"jobs", {2, 13, 8}},
                 {"fa_budget_per_machine_day", 0.01}, {"streaming_tc_s", 30}, {"window", 18},
                 {"batch", {{"tc_s", 240}}}};
  r["detectors"] = json::array(
      {{{"detector", "minder"}, {"mode", "streaming"}, {"precision", 0.99},
        {"precision_ci", {0.97, 1.0}}, {"recall", 0.84}, {"recall_ci", {0.78, 0.9}}, {"f1", 0.909},
        {"f1_ci", {0.87, 0.94}}, {"fa_per_machine_day", 0.0156}, {"ttd_p50_s", 49},
        {"ttd_p95_s", 167}, {"recall_by_type", {{"stall", 1.0}, {"fail_slow", 0.53}}},
        {"ttd_p50_by_type_s", {{"stall", 48}, {"fail_slow", 58}}}},
       {{"detector", "<b>odd</b>"}, {"mode", "batch"}, {"f1", 0.5}}});
  r["tc_sweep"] = json::array({{{"continuity_s", 10}, {"f1", 0.8}, {"recall", 0.7},
                                {"precision", 0.95}, {"ttd_p50_s", 20}},
                               {{"continuity_s", 30}, {"f1", 0.9}, {"recall", 0.85},
                                {"precision", 0.99}, {"ttd_p50_s", 50}}});
  r["timing"] = json::array({{{"machines", 16}, {"minder_l2_ms", 0.2}, {"minder_l2sq_ms", 0.2},
                              {"mahalanobis_ms", 0.1}},
                             {{"machines", 1024}, {"minder_l2_ms", 52.0},
                              {"minder_l2sq_ms", 18.0}, {"mahalanobis_ms", 20.0}}});
  r["summary"] = {{"minder_f1", 0.909}, {"mahalanobis_f1", 0.432},
                  {"false_alarms_per_machine_day", 0.0156}, {"ttd_p50_straggler_s", 58.0},
                  {"ttd_p50_hang_s", 48.0}, {"ttd_p50_crash_s_with_heartbeat", 2.0},
                  {"per_call_ms_1024", 52.0}};
  return r;
}

TEST(EvalReportHtmlTest, TargetsAreCheckedAgainstTheSummary) {
  std::vector<EvalTarget> t = EvalTargets(SmallReport());
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t[0].value, "0.909");
  EXPECT_EQ(t[0].met, 0);  // F1 < 0.95
  EXPECT_EQ(t[1].value, "0.477");
  EXPECT_EQ(t[1].met, 1);  // 0.477 above Mahalanobis
  EXPECT_EQ(t[2].met, 0);  // 0.0156 > 0.01 false alarms per machine-day
  EXPECT_EQ(t[3].value, "58 s");
  EXPECT_EQ(t[3].met, 0);
  EXPECT_EQ(t[4].met, 0);
  EXPECT_EQ(t[5].met, -1);  // hang with heartbeat: not in this summary
  EXPECT_EQ(t[5].value, "-");
  EXPECT_EQ(t[6].met, 1);  // 2 s crash
  EXPECT_EQ(t[7].value, "52.0 ms");
  EXPECT_EQ(t[7].met, 1);
}

TEST(EvalReportHtmlTest, PageHasTheTablesAndChartsAndEscapesNames) {
  Result<std::string> html = EvalReportHtml(SmallReport());
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string& h = *html;
  EXPECT_NE(h.find("64 machines x 10800 s per job; train / validation / test jobs 2 / 13 / 8"),
            std::string::npos);
  EXPECT_NE(h.find("0.909 [0.87, 0.94]"), std::string::npos);
  EXPECT_NE(h.find("&lt;b&gt;odd&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<b>odd"), std::string::npos);
  EXPECT_NE(h.find("<td>fail_slow</td><td>0.53</td><td>58</td>"), std::string::npos);
  // T_c sweep (three charts) and timing: four SVG charts.
  size_t charts = 0;
  for (size_t p = h.find("<svg"); p != std::string::npos; p = h.find("<svg", p + 1)) ++charts;
  EXPECT_EQ(charts, 4u);
  EXPECT_EQ(h.find("nan"), std::string::npos);
  EXPECT_NE(h.find("class=\"miss\">not met"), std::string::npos);
  EXPECT_NE(h.find("not in this report"), std::string::npos);
}

TEST(EvalReportHtmlTest, MissingSectionsSaySoAndANonReportIsAnError) {
  json r = SmallReport();
  r.erase("tc_sweep");
  r.erase("timing");
  Result<std::string> html = EvalReportHtml(r);
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->find("<svg"), std::string::npos);
  EXPECT_NE(html->find("no data in this report"), std::string::npos);
  Result<std::string> bad = EvalReportHtml(json{{"rows", 1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace loom::monitor
