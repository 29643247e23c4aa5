// The report of `loom monitor eval` as one self-contained HTML page (inline SVG, no scripts, no
// network): the targets against the summary, the detector comparison table with 95%
// CIs, per-fault-type recall and TTD, and charts of the T_c sweep (F1 / recall and time to
// detect against T_c, the TTD-vs-precision curve) and of the per-call time against fleet size.
//
//   Result<nlohmann::json> report = RunFleetEval(options, stderr);
//   std::string html = EvalReportHtml(*report);              // or from a saved --json file
//
// Works on reports of older builds too: a field that is missing prints as "-" and a chart whose
// data is absent says so instead of drawing an empty plot.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"

namespace loom::monitor {

// One target of the issue checked against report["summary"] (see EvalTargets()).
struct EvalTarget {
  std::string what;       // "Minder F1 (held-out, streaming)"
  std::string value;      // formatted value, "-" when the summary lacks it
  std::string goal;       // ">= 0.95"
  int met = -1;           // 1 met, 0 not met, -1 unknown (missing field)
};

std::vector<EvalTarget> EvalTargets(const nlohmann::json& report);

// The whole page. Fails (InvalidArgument) only when `report` has no "detectors" array.
Result<std::string> EvalReportHtml(const nlohmann::json& report);
// EvalReportHtml written atomically to `path`.
Status WriteEvalReportHtml(const nlohmann::json& report, const std::string& path);

}  // namespace loom::monitor
