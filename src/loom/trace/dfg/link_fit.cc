#include "loom/trace/dfg/link_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace loom::trace::dfg {

std::string LinkFit::ToString() const {
  char buf[240];
  const std::string how =
      steps > 0 ? ", beta from " + std::to_string(steps) + " step totals" : std::string();
  if (!beta_identified) {
    std::snprintf(buf, sizeof(buf),
                  "alpha %.1f us, beta not identifiable (transfer times do not grow with bytes), "
                  "R^2 %.3f, %lld samples",
                  alpha_ns / 1e3, r2, static_cast<long long>(samples));
    return buf;
  }
  std::snprintf(buf, sizeof(buf),
                "alpha %.1f us%s, beta %.3f GB/s (%.4f ns/B), R^2 %.3f, %lld samples%s",
                alpha_ns / 1e3, alpha_identified ? "" : " (fixed: one message size)", GBps(),
                ns_per_byte, r2, static_cast<long long>(samples), how.c_str());
  return buf;
}

namespace {

// One representative per (segments, concurrency, log2 size) group: median time, median bytes.
std::vector<LinkSample> LowerEnvelope(const std::vector<LinkSample>& samples) {
  std::map<std::tuple<double, double, int>, std::vector<const LinkSample*>> groups;
  for (const LinkSample& s : samples) {
    const int bin = s.bytes > 0 ? static_cast<int>(std::floor(std::log2(s.bytes))) : -1;
    groups[{s.segments, s.concurrency, bin}].push_back(&s);
  }
  std::vector<LinkSample> out;
  for (auto& [key, g] : groups) {
    std::vector<double> t, b;
    for (const LinkSample* s : g) {
      t.push_back(s->ns);
      b.push_back(s->bytes);
    }
    std::sort(t.begin(), t.end());
    std::sort(b.begin(), b.end());
    LinkSample rep = *g[0];
    rep.ns = t[t.size() / 2];
    rep.bytes = b[b.size() / 2];
    out.push_back(rep);
  }
  return out;
}

// R² and RMSE of `f` on `points`.
void SetResiduals(const std::vector<LinkSample>& points, LinkFit* f) {
  double mean_t = 0;
  for (const LinkSample& s : points) mean_t += s.ns;
  mean_t /= static_cast<double>(points.size());
  double ss_res = 0, ss_tot = 0;
  for (const LinkSample& s : points) {
    const double pred = f->alpha_ns * s.segments + f->ns_per_byte * s.bytes * s.concurrency;
    ss_res += (s.ns - pred) * (s.ns - pred);
    ss_tot += (s.ns - mean_t) * (s.ns - mean_t);
  }
  f->rmse_ns = std::sqrt(ss_res / static_cast<double>(points.size()));
  f->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res == 0 ? 1 : 0);
}

}  // namespace

Result<LinkFit> FitLink(const std::vector<LinkSample>& all, bool robust) {
  if (all.empty()) return InvalidArgumentError("link fit: no SEND/RECV chunk samples");
  for (const LinkSample& s : all) {
    if (!std::isfinite(s.bytes) || !std::isfinite(s.ns) || s.bytes < 0 || s.ns < 0 ||
        !(s.segments >= 1) || !(s.concurrency >= 1)) {
      return InvalidArgumentError("link fit: sample with bytes " + std::to_string(s.bytes) + ", " +
                                  std::to_string(s.ns) + " ns is not valid");
    }
  }
  const std::vector<LinkSample> samples = robust ? LowerEnvelope(all) : all;
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
  for (const LinkSample& s : samples) {
    const double x1 = s.segments, x2 = s.bytes * s.concurrency;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    t1 += x1 * s.ns;
    t2 += x2 * s.ns;
  }
  LinkFit f;
  f.samples = static_cast<int64_t>(all.size());
  const double det = s11 * s22 - s12 * s12;
  if (det > 1e-9 * s11 * s22) {
    f.alpha_ns = (t1 * s22 - t2 * s12) / det;
    f.ns_per_byte = (s11 * t2 - s12 * t1) / det;
  } else {
    f.alpha_identified = false;
    f.ns_per_byte = s22 > 0 ? t2 / s22 : 0;
  }
  if (f.alpha_ns < 0) {
    f.alpha_ns = 0;
    f.ns_per_byte = s22 > 0 ? t2 / s22 : 0;
  }
  if (f.ns_per_byte <= 0) {
    f.ns_per_byte = 0;
    f.beta_identified = false;
    f.alpha_ns = s11 > 0 ? t1 / s11 : 0;
  }
  SetResiduals(samples, &f);
  return f;
}

Result<LinkFit> FitLinkStepTotals(const std::vector<LinkSample>& all) {
  LOOM_ASSIGN_OR_RETURN(LinkFit f, FitLink(all));
  if (!f.beta_identified) return f;
  // α: lower quartile of the latency-bound transfers, capped by the per-transfer fit's α.
  std::vector<double> small;
  for (const LinkSample& s : all) {
    const double t = f.alpha_ns * s.segments + f.ns_per_byte * s.bytes * s.concurrency;
    if (f.ns_per_byte * s.bytes * s.concurrency < 0.1 * t) small.push_back(s.ns / s.segments);
  }
  double alpha = f.alpha_ns;
  if (small.size() >= 3) {
    std::sort(small.begin(), small.end());
    alpha = std::min(alpha, small[(small.size() - 1) / 4]);
  }
  // β⁻¹: median over steps of the step's bytes-weighted time per byte.
  std::map<int64_t, std::pair<double, double>> per_step;  // step -> (Σ t − α·segs, Σ bytes)
  for (const LinkSample& s : all) {
    if (s.step < 0) continue;
    auto& [t, b] = per_step[s.step];
    t += s.ns - alpha * s.segments;
    b += s.bytes * s.concurrency;
  }
  std::vector<double> rates;
  for (const auto& [step, tb] : per_step) {
    if (tb.second > 0) rates.push_back(std::max(0.0, tb.first) / tb.second);
  }
  if (rates.size() < 2) return f;
  std::sort(rates.begin(), rates.end());
  const size_t n = rates.size();
  const double ns_per_byte = n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2;
  if (!(ns_per_byte > 0)) return f;
  f.alpha_ns = alpha;
  f.ns_per_byte = ns_per_byte;
  f.steps = static_cast<int64_t>(n);
  SetResiduals(all, &f);
  return f;
}

}  // namespace loom::trace::dfg
