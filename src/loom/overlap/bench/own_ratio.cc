#include "loom/overlap/bench/own_ratio.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "loom/overlap/bench/bench_metrics.h"
#include "loom/overlap/bench/json_fields.h"

namespace loom::overlap {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool Positive(double v) { return std::isfinite(v) && v > 0; }

json NumArray(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(JsonNumber(x));
  return a;
}
json QuartilesOf(const std::vector<double>& v) {
  std::vector<double> finite;
  for (double x : v) {
    if (std::isfinite(x)) finite.push_back(x);
  }
  Quartiles q = ComputeQuartiles(finite);
  return {{"median", JsonNumber(q.median)},
          {"p25", JsonNumber(q.p25)},
          {"p75", JsonNumber(q.p75)},
          {"iqr", JsonNumber(q.iqr)},
          {"n", q.n}};
}
double MedianFinite(const std::vector<double>& v) {
  std::vector<double> finite;
  for (double x : v) {
    if (std::isfinite(x)) finite.push_back(x);
  }
  return Quantile(finite, 0.5);
}

}  // namespace

double ClosedFormFusedSpeedup(BenchOp op, int splits, double r, int world) {
  if (!Positive(r)) return kNaN;
  const double dec = VariantIdealSeconds(op, OverlapMode::kDecomposed, 1, 1.0, r, world);
  const double fused = VariantIdealSeconds(op, OverlapMode::kFused, splits, 1.0, r, world);
  return dec / fused;
}

double RoundComputeSeconds(const std::vector<double>& compute_times) {
  std::vector<double> pos;
  for (double t : compute_times) {
    if (Positive(t)) pos.push_back(t);
  }
  return Quantile(pos, 0.5);
}

PairAtOwnRatio EvaluatePair(BenchOp op, int splits, int world, double t_comm, double c_dec,
                            double c_fused, double t_dec, double t_fused) {
  PairAtOwnRatio p;
  const bool ok = Positive(t_comm) && Positive(c_dec) && Positive(c_fused);
  p.r = ok ? t_comm / (0.5 * (c_dec + c_fused)) : kNaN;
  p.r_dec = ok ? t_comm / c_dec : kNaN;
  p.r_fused = ok ? t_comm / c_fused : kNaN;
  p.measured = Positive(t_dec) && Positive(t_fused) ? t_dec / t_fused : kNaN;
  p.closed_form = ClosedFormFusedSpeedup(op, splits, p.r, world);
  p.vs_closed_form = p.measured / p.closed_form;
  p.closed_form_own_tc =
      ok ? VariantIdealSeconds(op, OverlapMode::kDecomposed, 1, c_dec, t_comm, world) /
               VariantIdealSeconds(op, OverlapMode::kFused, splits, c_fused, t_comm, world)
         : kNaN;
  p.vs_closed_form_own_tc = p.measured / p.closed_form_own_tc;
  return p;
}

json AnalyzeOwnRatio(const json& trials, const std::vector<size_t>& keep, BenchOp op, int world,
                     const std::vector<std::string>& variants, RatioBand band) {
  std::vector<double> r_trial, t_round, spread;
  for (size_t i : keep) {
    const json& tr = trials.at(i);
    std::vector<double> c = {JsonDouble(tr, "t_comp_s")};
    for (const std::string& v : variants) {
      if (v != "auto" && tr["x"].contains(v)) c.push_back(JsonDouble(tr["x"][v], "compute_s"));
    }
    const double t = RoundComputeSeconds(c);
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (double x : c) {
      if (Positive(x)) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    t_round.push_back(t);
    r_trial.push_back(Positive(t) ? JsonDouble(tr, "t_comm_s") / t : kNaN);
    spread.push_back(hi > 0 ? hi / lo : kNaN);
  }
  json out = {{"r_trial", NumArray(r_trial)},
              {"t_comp_round_s", NumArray(t_round)},
              {"r_trial_stats", QuartilesOf(r_trial)},
              {"round_compute_spread", QuartilesOf(spread)},
              {"band", {band.lo, band.hi}},
              {"pairs", json::object()}};
  for (const std::string& v : variants) {
    if (v.rfind("fused_s", 0) != 0) continue;
    const int splits = std::max(1, std::atoi(v.c_str() + 7));
    std::vector<double> r, r_dec, r_fus, meas, cf, vs, cf_own, vs_own;
    std::vector<double> in_meas, in_cf, in_vs, in_vs_own;
    json flags = json::array();
    for (size_t k = 0; k < keep.size(); ++k) {
      const json& x = trials.at(keep[k])["x"];
      if (!x.contains(v) || !x.contains("decomposed")) continue;
      const json& d = x["decomposed"];
      const json& f = x[v];
      // Without per-variant compute times (old results) the pair runs at the round's t_comp.
      double c_dec = JsonDouble(d, "compute_s"), c_fus = JsonDouble(f, "compute_s");
      if (!Positive(c_dec) || !Positive(c_fus)) c_dec = c_fus = t_round[k];
      const PairAtOwnRatio p = EvaluatePair(op, splits, world, JsonDouble(trials.at(keep[k]), "t_comm_s"),
                                            c_dec, c_fus, JsonDouble(d, "wall_s"), JsonDouble(f, "wall_s"));
      r.push_back(p.r);
      r_dec.push_back(p.r_dec);
      r_fus.push_back(p.r_fused);
      meas.push_back(p.measured);
      cf.push_back(p.closed_form);
      vs.push_back(p.vs_closed_form);
      cf_own.push_back(p.closed_form_own_tc);
      vs_own.push_back(p.vs_closed_form_own_tc);
      const bool in = p.InBand(band.lo, band.hi);
      flags.push_back(in);
      if (in) {
        in_meas.push_back(p.measured);
        in_cf.push_back(p.closed_form);
        in_vs.push_back(p.vs_closed_form);
        in_vs_own.push_back(p.vs_closed_form_own_tc);
      }
    }
    out["pairs"][v] = {{"r_pair", NumArray(r)},
                       {"r_dec", NumArray(r_dec)},
                       {"r_fused", NumArray(r_fus)},
                       {"in_band_flags", flags},
                       {"measured", NumArray(meas)},
                       {"closed_form", NumArray(cf)},
                       {"vs_closed_form", NumArray(vs)},
                       {"closed_form_own_tc", NumArray(cf_own)},
                       {"vs_closed_form_own_tc", NumArray(vs_own)},
                       {"r_pair_stats", QuartilesOf(r)},
                       {"measured_median", JsonNumber(MedianFinite(meas))},
                       {"closed_form_median", JsonNumber(MedianFinite(cf))},
                       {"vs_closed_form_median", JsonNumber(MedianFinite(vs))},
                       {"vs_closed_form_own_tc_median", JsonNumber(MedianFinite(vs_own))},
                       {"in_band",
                        {{"n", in_meas.size()},
                         {"measured_median", JsonNumber(MedianFinite(in_meas))},
                         {"closed_form_median", JsonNumber(MedianFinite(in_cf))},
                         {"vs_closed_form_median", JsonNumber(MedianFinite(in_vs))},
                         {"vs_closed_form_own_tc_median", JsonNumber(MedianFinite(in_vs_own))}}}};
  }
  return out;
}

}  // namespace loom::overlap
