#include "loom/trace/evaluation/strategy_ranking.h"

#include <cmath>

#include "loom/trace/optimize/optimizer.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::trace::evaluation {

Result<std::vector<double>> PredictGridStrategies(const dfg::ModelSpec& base_spec,
                                                  const std::vector<EvalConfig>& grid,
                                                  const EvalConfig& base, const BandwidthModel& bw,
                                                  const std::string& codecs_json) {
  if (base.codec != "none") {
    return UnimplementedError("strategy ranking from a compressed base is not supported");
  }
  std::vector<double> out;
  for (const EvalConfig& c : grid) {
    Status s = [&]() -> Status {
      dfg::ModelSpec spec = base_spec;
      LOOM_ASSIGN_OR_RETURN(whatif::WhatIf w, ToWhatIf(c, base, bw, codecs_json));
      LOOM_RETURN_IF_ERROR(whatif::ApplyLinkWhatIf(&spec, w));
      optimize::Strategy st = optimize::Strategy::FromSpec(spec);
      if (c.bucket_mb != base.bucket_mb) {
        st.bucket_begin = dfg::BucketsByBytes(
            spec.grads, static_cast<int64_t>(std::llround(c.bucket_mb * 1048576.0)));
      }
      st.codecs.assign(st.bucket_begin.size(), c.codec);
      st.overlap = c.overlap;
      LOOM_ASSIGN_OR_RETURN(optimize::CodecTable table,
                            optimize::CodecTable::Load({c.codec}, codecs_json));
      LOOM_ASSIGN_OR_RETURN(double ns, optimize::PredictStrategy(spec, st, table));
      out.push_back(ns);
      return OkStatus();
    }();
    if (!s.ok()) return s.WithContext("strategy for configuration " + c.Name());
  }
  return out;
}

}  // namespace loom::trace::evaluation
