#include "loom/cli/run_metrics.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom::cli {

Result<RunMetrics> ReadRunMetrics(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  RunMetrics run;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step") || !j.contains("loss")) {
      return DataLossError(path + ": malformed line: " + line);
    }
    const int64_t step = j["step"];
    run.loss[step] = j["loss"];
    if (j.contains("eval_loss")) run.eval_loss[step] = j["eval_loss"];
    if (step > 3 && j.contains("tokens_per_s")) run.step_tps.push_back(j["tokens_per_s"]);
  }
  if (run.loss.empty()) return DataLossError(path + " has no rows");
  return run;
}

}  // namespace loom::cli
