// Built when the optimize module is not part of the build (see strategy_ranking.h).
#include "loom/trace/evaluation/strategy_ranking.h"

namespace loom::trace::evaluation {

Result<std::vector<double>> PredictGridStrategies(const dfg::ModelSpec&,
                                                  const std::vector<EvalConfig>&, const EvalConfig&,
                                                  const BandwidthModel&, const std::string&) {
  return UnimplementedError("the optimize module (trace/optimize) is not in this build");
}

}  // namespace loom::trace::evaluation
