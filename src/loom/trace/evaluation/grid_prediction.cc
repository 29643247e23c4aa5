#include "loom/trace/evaluation/grid_prediction.h"

#include "loom/trace/whatif/whatif.h"

namespace loom::trace::evaluation {

Result<std::vector<GridPrediction>> PredictGrid(const dfg::ModelSpec& base_spec,
                                                const std::vector<EvalConfig>& grid,
                                                const EvalConfig& base, const BandwidthModel& bw,
                                                const std::string& codecs_json) {
  std::vector<GridPrediction> out;
  for (const EvalConfig& c : grid) {
    auto w = ToWhatIf(c, base, bw, codecs_json);
    if (!w.ok()) return w.status().WithContext("configuration " + c.Name());
    auto r = whatif::RunWhatIf(base_spec, *w);
    if (!r.ok()) return r.status().WithContext("what-if for configuration " + c.Name());
    GridPrediction p;
    p.config = c;
    p.whatif = w->Describe();
    LOOM_ASSIGN_OR_RETURN(p.bandwidth_scale, BandwidthScale(c, base, bw));
    p.whatif_ns = r->predicted.iteration_ns;
    p.sum_ns = r->analytical.sum_ns;
    p.overlap_ns = r->analytical.overlap_ns;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<double> WhatIfTimes(const std::vector<GridPrediction>& p) {
  std::vector<double> v;
  for (const GridPrediction& g : p) v.push_back(g.whatif_ns);
  return v;
}
std::vector<double> SumBaselineTimes(const std::vector<GridPrediction>& p) {
  std::vector<double> v;
  for (const GridPrediction& g : p) v.push_back(g.sum_ns);
  return v;
}
std::vector<double> OverlapBaselineTimes(const std::vector<GridPrediction>& p) {
  std::vector<double> v;
  for (const GridPrediction& g : p) v.push_back(g.overlap_ns);
  return v;
}

Result<PredictorScore> ScorePredictor(const std::vector<double>& predicted,
                                      const std::vector<double>& measured, size_t base_index) {
  if (predicted.size() != measured.size() || predicted.size() < 3) {
    return InvalidArgumentError("predictor score: need >= 3 paired configurations (got " +
                                std::to_string(predicted.size()) + " predictions, " +
                                std::to_string(measured.size()) + " measurements)");
  }
  if (base_index >= predicted.size()) {
    return InvalidArgumentError("predictor score: base index out of range");
  }
  std::vector<double> p, m;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (i == base_index) continue;
    p.push_back(predicted[i]);
    m.push_back(measured[i]);
  }
  PredictorScore s;
  LOOM_ASSIGN_OR_RETURN(std::vector<double> e, AbsRelativeErrors(p, m));
  LOOM_ASSIGN_OR_RETURN(s.errors, SummarizeErrors(e));
  LOOM_ASSIGN_OR_RETURN(s.kendall_tau, KendallTau(predicted, measured));
  LOOM_ASSIGN_OR_RETURN(s.regret, OptimizerRegret(predicted, measured));
  LOOM_ASSIGN_OR_RETURN(s.picked, ArgMin(predicted));
  return s;
}

}  // namespace loom::trace::evaluation
