// `loom monitor report EVAL.json --html OUT.html`: the HTML report of a saved
// `loom monitor eval --json` result (targets, comparison table, charts), without rerunning it.

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/cli/commands.h"
#include "loom/monitor/fleet/eval/eval_report_html.h"

namespace loom::cli {
namespace {

struct ReportArgs {
  std::string input;
  std::string html;
};

int RunReport(const ReportArgs& a) {
  Result<std::string> text = ReadFileToString(a.input);
  if (!text.ok()) {
    std::fprintf(stderr, "loom monitor report: %s\n", text.status().ToString().c_str());
    return kExitUsage;
  }
  const nlohmann::json report = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded()) {
    std::fprintf(stderr, "loom monitor report: %s is not JSON\n", a.input.c_str());
    return kExitUsage;
  }
  Result<std::string> html = monitor::EvalReportHtml(report);
  if (!html.ok()) {
    std::fprintf(stderr, "loom monitor report: %s: %s\n", a.input.c_str(),
                 html.status().ToString().c_str());
    return kExitUsage;
  }
  for (const monitor::EvalTarget& t : monitor::EvalTargets(report)) {
    std::printf("%-66s %10s  goal %-9s %s\n", t.what.c_str(), t.value.c_str(), t.goal.c_str(),
                t.met == 1 ? "met" : t.met == 0 ? "NOT MET" : "-");
  }
  Status st = WriteFileAtomic(a.html, *html);
  if (!st.ok()) {
    std::fprintf(stderr, "loom monitor report: %s\n", st.ToString().c_str());
    return kExitFailure;
  }
  std::printf("report: %s\n", a.html.c_str());
  return 0;
}

}  // namespace

void RegisterMonitorReport(CLI::App& monitor, CliContext* ctx) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* r = monitor.add_subcommand(
      "report", "HTML report (targets, comparison table, charts) of a saved loom monitor eval --json");
  r->add_option("eval_json", a->input, "report written by loom monitor eval --json")->required();
  r->add_option("--html", a->html, "output HTML file")->required();
  r->callback([a, ctx] { ctx->exit_code = RunReport(*a); });
}

}  // namespace loom::cli
