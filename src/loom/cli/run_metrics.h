// ReadRunMetrics: the curves `loom train` wrote to <run_dir>/metrics.jsonl, for the benchmarks
// that run the trainer (bench train, bench convergence).
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::cli {

struct RunMetrics {
  std::vector<double> step_tps;        // tokens/s of logged rows after step 3
  std::map<int64_t, double> loss;      // step -> mean train loss of the logged window
  std::map<int64_t, double> eval_loss; // step -> validation loss, where evaluated
};

Result<RunMetrics> ReadRunMetrics(const std::string& path);

}  // namespace loom::cli
