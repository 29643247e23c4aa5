#include "loom/monitor/fleet/eval/eval_report_html.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/base/svg_chart.h"

namespace loom::monitor {
namespace {

using json = nlohmann::json;

bool IsNum(const json& j, const char* key) { return j.contains(key) && j[key].is_number(); }

std::string Fmt(const json& j, const char* key, const char* format) {
  if (!IsNum(j, key)) return "-";
  char b[64];
  std::snprintf(b, sizeof(b), format, j[key].get<double>());
  return b;
}

// "0.909 [0.87, 0.94]" from row[v] and row[c] = [lo, hi].
std::string WithCi(const json& row, const char* v, const char* c) {
  std::string s = Fmt(row, v, "%.3f");
  if (row.contains(c) && row[c].is_array() && row[c].size() == 2 && row[c][0].is_number()) {
    char b[64];
    std::snprintf(b, sizeof(b), " [%.2f, %.2f]", row[c][0].get<double>(), row[c][1].get<double>());
    s += b;
  }
  return s;
}

std::string Cell(const std::string& s) { return "<td>" + HtmlEscape(s) + "</td>"; }

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string t = "<table>\n<tr>";
  for (const std::string& h : header) t += "<th>" + HtmlEscape(h) + "</th>";
  t += "</tr>\n";
  for (const auto& r : rows) {
    t += "<tr>";
    for (const std::string& c : r) t += Cell(c);
    t += "</tr>\n";
  }
  return t + "</table>\n";
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

// One series from rows of an array: x = row[xk], y = scale * row[yk] (rows lacking either skip).
ChartSeries Series(const json& rows, const char* name, const char* xk, const char* yk, int color,
                   double scale = 1.0) {
  ChartSeries s{name, kColors[color % 6], {}, true};
  for (const json& r : rows) {
    if (IsNum(r, xk) && IsNum(r, yk)) {
      s.points.push_back({r[xk].get<double>(), scale * r[yk].get<double>()});
    }
  }
  return s;
}

std::string ChartOrNote(const std::string& title, const std::string& x, const std::string& y,
                        const std::vector<ChartSeries>& series) {
  for (const ChartSeries& s : series) {
    if (!s.points.empty()) return SvgLineChart(title, x, y, series);
  }
  return "<p><i>" + HtmlEscape(title) + ": no data in this report.</i></p>\n";
}

EvalTarget Target(std::string what, const json& summary, const char* key, const char* goal,
                  bool at_most, double bound, const char* format) {
  EvalTarget t{std::move(what), Fmt(summary, key, format), goal, -1};
  if (IsNum(summary, key)) {
    const double v = summary[key].get<double>();
    t.met = at_most ? v <= bound : v >= bound;
  }
  return t;
}

}  // namespace

std::vector<EvalTarget> EvalTargets(const json& report) {
  const json s = report.value("summary", json::object());
  std::vector<EvalTarget> t;
  t.push_back(Target("Minder F1, held-out simulated jobs (streaming)", s, "minder_f1", ">= 0.95",
                     false, 0.95, "%.3f"));
  EvalTarget gap{"Minder F1 minus Mahalanobis F1", "-", ">= 0.10", -1};
  if (IsNum(s, "minder_f1") && IsNum(s, "mahalanobis_f1")) {
    const double d = s["minder_f1"].get<double>() - s["mahalanobis_f1"].get<double>();
    char b[32];
    std::snprintf(b, sizeof(b), "%.3f", d);
    gap.value = b;
    gap.met = d >= 0.1;
  }
  t.push_back(gap);
  t.push_back(Target("False alarms per machine-day, test (thresholds set on validation)", s,
                     "false_alarms_per_machine_day", "<= 0.01", true, 0.01, "%.4f"));
  t.push_back(Target("Streaming TTD p50, stragglers (fail_slow), Minder", s, "ttd_p50_straggler_s",
                     "<= 30 s", true, 30, "%.0f s"));
  t.push_back(Target("Streaming TTD p50, hangs (stall), Minder", s, "ttd_p50_hang_s", "<= 10 s",
                     true, 10, "%.0f s"));
  t.push_back(Target("Streaming TTD p50, hangs (stall), Minder + heartbeat", s,
                     "ttd_p50_hang_s_with_heartbeat", "<= 10 s", true, 10, "%.0f s"));
  t.push_back(Target("Streaming TTD p50, crashes (unreachable), Minder + heartbeat", s,
                     "ttd_p50_crash_s_with_heartbeat", "<= 10 s", true, 10, "%.0f s"));
  t.push_back(Target("Per-call processing time at 1024 machines", s, "per_call_ms_1024",
                     "<= 100 ms", true, 100, "%.1f ms"));
  return t;
}

Result<std::string> EvalReportHtml(const json& report) {
  if (!report.contains("detectors") || !report["detectors"].is_array()) {
    return InvalidArgumentError("not a `loom monitor eval` report: no \"detectors\" array");
  }
  const json config = report.value("config", json::object());
  std::string h =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>loom monitor eval</title>\n"
      "<style>body{font-family:sans-serif;max-width:980px;margin:24px auto;color:#222}"
      "table{border-collapse:collapse;margin:8px 0 16px}td,th{padding:2px 10px;text-align:left;"
      "border-bottom:1px solid #ddd;font-size:13px}.met{color:#2ca02c}.miss{color:#d62728}"
      "</style></head><body>\n<h1>Faulty-machine detection on simulated fleets</h1>\n<p>";
  const json jobs = config.value("jobs", json::array());
  auto job = [&](size_t i) {
    return jobs.size() == 3 && jobs[i].is_number() ? std::to_string(jobs[i].get<int>())
                                                   : std::string("-");
  };
  const json batch = config.value("batch", json::object());
  char b[512];
  std::snprintf(b, sizeof(b),
                "%s machines x %s s per job; train / validation / test jobs %s / %s / %s (disjoint "
                "seeds); thresholds calibrated per detector on validation to &lt;= %s false alarms "
                "per machine-day; streaming T_c %s s, window %s; batch T_c %s s.",
                Fmt(config, "machines", "%.0f").c_str(), Fmt(config, "seconds", "%.0f").c_str(),
                job(0).c_str(), job(1).c_str(), job(2).c_str(),
                Fmt(config, "fa_budget_per_machine_day", "%g").c_str(),
                Fmt(config, "streaming_tc_s", "%.0f").c_str(), Fmt(config, "window", "%.0f").c_str(),
                Fmt(batch, "tc_s", "%.0f").c_str());
  h += b;
  h += "</p>\n<h2>Targets</h2>\n<table>\n<tr><th>target</th><th>value</th><th>goal</th>"
       "<th></th></tr>\n";
  for (const EvalTarget& t : EvalTargets(report)) {
    const char* cls = t.met == 1 ? "met" : t.met == 0 ? "miss" : "";
    const char* word = t.met == 1 ? "met" : t.met == 0 ? "not met" : "not in this report";
    h += "<tr>" + Cell(t.what) + Cell(t.value) + Cell(t.goal) + "<td class=\"" + cls + "\">" +
         word + "</td></tr>\n";
  }
  h += "</table>\n";

  std::vector<std::vector<std::string>> rows, types;
  for (const json& r : report["detectors"]) {
    const std::string name = r.value("detector", "?"), mode = r.value("mode", "?");
    rows.push_back({name, mode, WithCi(r, "precision", "precision_ci"),
                    WithCi(r, "recall", "recall_ci"), WithCi(r, "f1", "f1_ci"),
                    Fmt(r, "fa_per_machine_day", "%.4f"), Fmt(r, "ttd_p50_s", "%.0f"),
                    Fmt(r, "ttd_p95_s", "%.0f"), Fmt(r, "val_f1", "%.3f")});
    if (mode != "streaming" || !r.contains("recall_by_type")) continue;
    for (const auto& [type, v] : r["recall_by_type"].items()) {
      const json ttd = r.value("ttd_p50_by_type_s", json::object());
      types.push_back({name, type, v.is_number() ? Fmt(r["recall_by_type"], type.c_str(), "%.2f")
                                                 : "-",
                       Fmt(ttd, type.c_str(), "%.0f")});
    }
  }
  h += "<h2>Detectors on the held-out test jobs</h2>\n" +
       Table({"detector", "mode", "precision [95% CI]", "recall [95% CI]", "F1 [95% CI]",
              "FA / machine-day", "TTD p50 (s)", "TTD p95 (s)", "validation F1"},
             rows) +
       "<h2>Per fault type (streaming)</h2>\n" +
       Table({"detector", "fault type", "recall", "TTD p50 (s)"}, types);

  const json sweep = report.value("tc_sweep", json::array());
  h += "<h2>Continuity window T_c (Minder, streaming, recalibrated at every point)</h2>\n" +
       ChartOrNote("F1 and recall vs T_c", "T_c (s)", "",
                   {Series(sweep, "F1", "continuity_s", "f1", 0),
                    Series(sweep, "recall", "continuity_s", "recall", 1),
                    Series(sweep, "precision", "continuity_s", "precision", 2)}) +
       ChartOrNote("time to detect (p50) vs T_c", "T_c (s)", "seconds",
                   {Series(sweep, "TTD p50", "continuity_s", "ttd_p50_s", 3)}) +
       ChartOrNote("precision vs time to detect (the TTD-precision curve)", "TTD p50 (s)",
                   "precision", {Series(sweep, "precision", "ttd_p50_s", "precision", 2)});
  const json timing = report.value("timing", json::array());
  h += "<h2>Per-call processing time vs fleet size (median)</h2>\n" +
       ChartOrNote("milliseconds per Evaluate() call", "machines", "ms",
                   {Series(timing, "Minder, L2", "machines", "minder_l2_ms", 0),
                    Series(timing, "Minder, L2 squared (O(N w))", "machines", "minder_l2sq_ms", 2),
                    Series(timing, "Mahalanobis", "machines", "mahalanobis_ms", 1)});
  h += "<p>Full numbers: the JSON report (<code>loom monitor eval --json</code>); how they were "
       "made: <code>src/loom/monitor/README.md</code>.</p>\n</body></html>\n";
  return h;
}

Status WriteEvalReportHtml(const json& report, const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string html, EvalReportHtml(report));
  return WriteFileAtomic(path, html);
}

}  // namespace loom::monitor
