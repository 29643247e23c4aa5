// Predicting every configuration of the replay grid from one profiled base configuration, and
// scoring a predictor against measured iteration times.
//
//   LOOM_ASSIGN_OR_RETURN(auto preds, PredictGrid(profile.model.spec, grid, grid[0], bw, ""));
//   std::vector<double> measured = ...;                  // one per configuration, same order
//   LOOM_ASSIGN_OR_RETURN(PredictorScore s, ScorePredictor(WhatIfTimes(preds), measured, 0));
//
// Three predictors per configuration: the what-if replay (whatif::RunWhatIf) and the two
// analytical baselines of replay/baselines.h on the same rewritten model (compute + comm, and
// compute + max(0, comm − overlappable)).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/dfg/model_spec.h"
#include "loom/trace/evaluation/accuracy.h"
#include "loom/trace/evaluation/config_grid.h"

namespace loom::trace::evaluation {

struct GridPrediction {
  EvalConfig config;
  std::string whatif;  // whatif::WhatIf::Describe()
  double bandwidth_scale = 1;
  double whatif_ns = 0;   // the replay's predicted iteration
  double sum_ns = 0;      // baseline compute + comm
  double overlap_ns = 0;  // baseline compute + max(0, comm − overlappable)
};

// One prediction per grid entry (same order). Errors name the configuration.
Result<std::vector<GridPrediction>> PredictGrid(const dfg::ModelSpec& base_spec,
                                                const std::vector<EvalConfig>& grid,
                                                const EvalConfig& base, const BandwidthModel& bw,
                                                const std::string& codecs_json = "");

std::vector<double> WhatIfTimes(const std::vector<GridPrediction>& p);
std::vector<double> SumBaselineTimes(const std::vector<GridPrediction>& p);
std::vector<double> OverlapBaselineTimes(const std::vector<GridPrediction>& p);

struct PredictorScore {
  ErrorStats errors;       // |relative error| over the configurations other than `base_index`
  double kendall_tau = 0;  // over all configurations
  double regret = 0;       // over all configurations
  size_t picked = 0;       // index of the predicted best
};
// kInvalidArgument when sizes differ, fewer than 3 configurations, or base_index out of range.
Result<PredictorScore> ScorePredictor(const std::vector<double>& predicted,
                                      const std::vector<double>& measured, size_t base_index);

}  // namespace loom::trace::evaluation
