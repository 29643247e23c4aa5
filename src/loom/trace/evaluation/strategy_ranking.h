// The optimizer's view of the replay grid: every configuration as an optimize::Strategy
// (buckets by size, one codec for all buckets, overlap on/off) on the base model with the
// configuration's bandwidth, priced by optimize::PredictStrategy. `loom bench replay` takes the
// predicted best configuration from these times for its optimizer regret.
//
//   LOOM_ASSIGN_OR_RETURN(std::vector<double> ns, PredictGridStrategies(spec, grid, base, bw));
//
// Without the optimize module in the build (strategy_ranking_absent.cc) this returns
// kUnimplemented and the caller ranks the grid with the what-if predictions instead.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/evaluation/config_grid.h"

namespace loom::trace::evaluation {

// Predicted iteration times (ns), one per grid entry. Errors name the configuration.
Result<std::vector<double>> PredictGridStrategies(const dfg::ModelSpec& base_spec,
                                                  const std::vector<EvalConfig>& grid,
                                                  const EvalConfig& base, const BandwidthModel& bw,
                                                  const std::string& codecs_json = "");

}  // namespace loom::trace::evaluation
