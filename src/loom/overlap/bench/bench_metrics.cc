#include "loom/overlap/bench/bench_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/base/check.h"
#include "loom/overlap/sim/closed_form.h"

namespace loom::overlap {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

Quartiles ComputeQuartiles(std::vector<double> v) {
  Quartiles s;
  s.n = v.size();
  s.median = Quantile(v, 0.5);
  s.p25 = Quantile(v, 0.25);
  s.p75 = Quantile(v, 0.75);
  s.iqr = s.p75 - s.p25;
  return s;
}

double OverlapEfficiency(double t_comp, double t_comm, double t_x) {
  const double m = std::min(t_comp, t_comm);
  if (!(m > 0)) return kNaN;
  return (t_comp + t_comm - t_x) / m;
}

double ExposedComm(double t_x, double t_comp) { return t_x - t_comp; }

double FractionOfIdeal(double t_comp, double t_comm, double t_x) {
  if (!(t_x > 0)) return kNaN;
  return std::max(t_comp, t_comm) / t_x;
}

double VariantIdealSeconds(BenchOp op, OverlapMode mode, int splits, double t_comp, double t_comm,
                           int world) {
  const bool rs = op == BenchOp::kGemmRs;
  switch (mode) {
    case OverlapMode::kSequential:
      return rs ? GemmRsSequentialIdeal(t_comp, t_comm, 0) : AgGemmSequentialIdeal(t_comp, t_comm);
    case OverlapMode::kDecomposed:
      return rs ? GemmRsDecomposedIdeal(t_comp, t_comm, world, 0)
                : AgGemmDecomposedIdeal(t_comp, t_comm, world);
    case OverlapMode::kFused:
      return rs ? GemmRsFusedIdeal(t_comp, t_comm, world, std::max(1, splits), 0)
                : AgGemmFusedIdeal(t_comp, t_comm, world, std::max(1, splits));
    case OverlapMode::kAuto:
      return kNaN;
  }
  return kNaN;
}

std::vector<double> Ratios(const std::vector<double>& a, const std::vector<double>& b) {
  LOOM_CHECK(a.size() == b.size()) << "Ratios: sizes " << a.size() << " vs " << b.size();
  std::vector<double> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = b[i] > 0 ? a[i] / b[i] : kNaN;
  return r;
}

}  // namespace loom::overlap
