// The metrics of `loom bench overlap` (spec §9) as pure functions, so they are unit-tested with
// values: order statistics (median, quartiles, IQR), overlap efficiency, exposed communication,
// fraction of the closed-form ideal, and each variant's closed-form ideal time.
//
//   double e = OverlapEfficiency(/*t_comp=*/1.0, /*t_comm=*/1.0, /*t_x=*/1.1);  // 0.9
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

#include "loom/overlap/bench/bench_config.h"
#include "loom/overlap/ops/overlap_mode.h"

namespace loom::overlap {

// Quartiles by linear interpolation between order statistics (numpy's default): the median of
// {1, 2, 3, 4} is 2.5, p25 1.75, p75 3.25. NaN fields when `v` is empty.
struct Quartiles {
  double median = 0;
  double p25 = 0;
  double p75 = 0;
  double iqr = 0;  // p75 − p25
  size_t n = 0;
};
Quartiles ComputeQuartiles(std::vector<double> v);
// Quantile q in [0, 1] of `v` (same interpolation); NaN when empty.
double Quantile(std::vector<double> v, double q);

// E = (t_comp + t_comm − t_x) / min(t_comp, t_comm): 1 = the shorter of the two is fully hidden,
// 0 = no overlap (t_x = t_comp + t_comm), negative = slower than running them back to back.
// NaN when min(t_comp, t_comm) ≤ 0.
double OverlapEfficiency(double t_comp, double t_comm, double t_x);
// FLUX-style exposed communication: t_x − t_comp.
double ExposedComm(double t_x, double t_comp);
// max(t_comp, t_comm) / t_x: 1 = perfect overlap with no overhead. NaN when t_x ≤ 0.
double FractionOfIdeal(double t_comp, double t_comm, double t_x);

// The closed-form ideal time of `mode` (spec §7, sim/closed_form.h) for one op from t_c = t_comp,
// t_m = t_comm (no reduction term). MoE (layer 0 + layer 1) uses the AG+GEMM formulas (its
// dispatch gates the GEMM like an all-gather; an approximation). kAuto is not a mode here: pass
// the mode auto resolved to. NaN for kAuto.
double VariantIdealSeconds(BenchOp op, OverlapMode mode, int splits, double t_comp, double t_comm,
                           int world);

// Element-wise a[i] / b[i] (NaN where b[i] ≤ 0); sizes must match.
std::vector<double> Ratios(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace loom::overlap
