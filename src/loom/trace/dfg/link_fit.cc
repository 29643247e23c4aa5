#include "loom/trace/dfg/link_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "loom/trace/dfg/token_bucket.h"

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
  std::string out = buf;
  if (token_bucket) {
    std::snprintf(buf, sizeof(buf),
                  ", token bucket burst %.1f KiB, line %.2f GB/s, %.0f%% of bytes shaped, "
                  "arrival error %.3f ms (alpha-beta %.3f ms)",
                  burst_bytes / 1024, line_ns_per_byte > 0 ? 1 / line_ns_per_byte : 0,
                  100 * shaped_fraction, tb_error_ns / 1e6, alpha_beta_error_ns / 1e6);
    out += buf;
  } else if (alpha_beta_error_ns > 0) {
    std::snprintf(buf, sizeof(buf),
                  ", not shaped (token bucket: %.0f%% of bytes shaped, arrival error %.3f ms vs "
                  "alpha-beta %.3f ms)",
                  100 * shaped_fraction, tb_error_ns / 1e6, alpha_beta_error_ns / 1e6);
    out += buf;
  }
  return out;
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

namespace {

// One link's transfers in post order (only those with post and arrival times), split by step,
// and the training loop's period (median over traced steps of first-post distance / steps).
struct LinkSequence {
  std::vector<std::vector<const LinkSample*>> steps;
  double period_ns = 0;  // 0: unknown (one step, or no step labels): each step from full
};

std::vector<LinkSequence> ByLink(const std::vector<LinkSample>& all) {
  std::map<int, std::vector<const LinkSample*>> m;
  for (const LinkSample& s : all) {
    if (s.post_ns >= 0 && s.arrival_ns >= 0) m[s.link].push_back(&s);
  }
  std::vector<LinkSequence> out;
  for (auto& [link, v] : m) {
    std::stable_sort(v.begin(), v.end(), [](const LinkSample* a, const LinkSample* b) {
      return a->post_ns < b->post_ns;
    });
    LinkSequence seq;
    for (const LinkSample* s : v) {
      if (seq.steps.empty() || s->step != seq.steps.back().front()->step || s->step < 0) {
        if (s->step >= 0 || seq.steps.empty()) seq.steps.emplace_back();
      }
      seq.steps.back().push_back(s);
    }
    std::vector<double> periods;
    for (size_t i = 1; i < seq.steps.size(); ++i) {
      const LinkSample* a = seq.steps[i - 1].front();
      const LinkSample* b = seq.steps[i].front();
      if (a->step >= 0 && b->step > a->step) {
        periods.push_back((b->post_ns - a->post_ns) / static_cast<double>(b->step - a->step));
      }
    }
    if (!periods.empty()) {
      std::sort(periods.begin(), periods.end());
      seq.period_ns = periods[periods.size() / 2];
    }
    out.push_back(std::move(seq));
  }
  return out;
}

struct BucketParams {
  double alpha_ns = 0, ns_per_byte = 0, burst_bytes = 0, line_ns_per_byte = 0;
};

// Mean |predicted − measured arrival| over the timed transfers. Each step starts from the bucket
// state it leaves itself one period earlier (the replay's periodic steady state; up to 8 warm
// passes until the tokens repeat), or from a full bucket when the period is unknown.
// `shaped_fraction`: of all bytes, the fraction that waited for tokens.
double MeanArrivalError(const std::vector<LinkSequence>& links, const BucketParams& p,
                        double* shaped_fraction = nullptr) {
  double sum = 0, shaped = 0, total = 0;
  int64_t n = 0;
  for (const LinkSequence& seq : links) {
    for (const auto& step : seq.steps) {
      TokenBucket tb(p.ns_per_byte, p.burst_bytes, p.line_ns_per_byte);
      tb.Reset(step.front()->post_ns);
      // A stalled step lasts longer than the loop's period: its own span bounds its period.
      double last_arrival = 0;
      for (const LinkSample* s : step) last_arrival = std::max(last_arrival, s->arrival_ns);
      const double period = std::max(seq.period_ns, last_arrival - step.front()->post_ns);
      const double t0 = step.front()->post_ns;
      for (int pass = 0; seq.period_ns > 0 && pass < 8; ++pass) {
        const double before = tb.TokensAt(t0);
        for (const LinkSample* s : step) tb.Send(s->post_ns, s->bytes * s->concurrency);
        tb.StartNextPeriod(period);
        if (std::abs(tb.TokensAt(t0) - before) < 1 && tb.drained_ns() <= t0) break;
      }
      for (const LinkSample* s : step) {
        const double bytes = s->bytes * s->concurrency;
        const TokenBucket::Transfer x = tb.Send(s->post_ns, bytes);
        const double pred = x.drained_ns + p.alpha_ns * s->segments;
        shaped += x.shaped_bytes;
        total += bytes;
        if (s->timed) {
          sum += std::abs(pred - s->arrival_ns);
          ++n;
        }
      }
    }
  }
  if (shaped_fraction != nullptr) *shaped_fraction = total > 0 ? shaped / total : 0;
  return n > 0 ? sum / static_cast<double>(n) : 0;
}

}  // namespace

Result<LinkFit> FitTokenBucket(const std::vector<LinkSample>& all, const LinkFit& ab,
                               double min_gain, double min_shaped_fraction) {
  const std::vector<LinkSequence> links = ByLink(all);
  int64_t timed = 0;
  for (const LinkSequence& seq : links) {
    for (const auto& step : seq.steps) {
      for (const LinkSample* s : step) timed += s->timed ? 1 : 0;
    }
  }
  if (timed == 0) {
    return InvalidArgumentError(
        "token-bucket link fit: no timed transfers with post/arrival times");
  }
  LinkFit f = ab;
  if (!ab.beta_identified || !(ab.ns_per_byte > 0)) return f;
  // Line rate: the fastest large transfers (they left a full bucket).
  std::vector<double> fast, small;
  for (const LinkSequence& seq : links) {
    for (const auto& step : seq.steps) {
      for (const LinkSample* s : step) {
        const double bytes = s->bytes * s->concurrency;
        if (bytes >= 16384)
          fast.push_back(std::max(0.0, s->ns - ab.alpha_ns * s->segments) / bytes);
        if (bytes <= 1024) small.push_back(s->ns / s->segments);
      }
    }
  }
  // Line-rate candidates: 0 and the fastest large transfer's time per byte (an upper bound of
  // the line rate: a transfer out of a full bucket takes exactly that) x 2^-j.
  std::vector<double> lines = {0};
  if (!fast.empty()) {
    const double top = *std::min_element(fast.begin(), fast.end());
    for (int j = 0; j <= 6 && top > 0; ++j) lines.push_back(top * std::exp2(-j));
  }
  double line = 0;
  // α: the lower quartile of the small transfers (<= 1 KiB: latency-bound whatever the bucket
  // holds) when there are >= 3, else the α-β fit's (whose α a bursty link can push to 0).
  double alpha = ab.alpha_ns;
  if (small.size() >= 3) {
    std::sort(small.begin(), small.end());
    alpha = small[(small.size() - 1) / 4];
  }
  BucketParams best{ab.alpha_ns, ab.ns_per_byte, 0, 0};
  f.alpha_beta_error_ns = MeanArrivalError(links, best);
  double best_err = f.alpha_beta_error_ns;
  best.alpha_ns = alpha;
  // Rate tau0·2^(k·rate_step), k in [rate_lo, rate_hi]; burst burst0·2^(j·burst_step).
  auto search = [&](double tau0, double rate_step, int rate_lo, int rate_hi, double burst0,
                    double burst_step, int burst_lo, int burst_hi, bool with_zero_burst) {
    const BucketParams at = best;
    for (int k = rate_lo; k <= rate_hi; ++k) {
      const double tau = tau0 * std::exp2(k * rate_step);
      for (int j = burst_lo - (with_zero_burst ? 1 : 0); j <= burst_hi; ++j) {
        const double burst = j < burst_lo ? 0 : burst0 * std::exp2(j * burst_step);
        const BucketParams p{at.alpha_ns, tau, burst, line};
        const double err = MeanArrivalError(links, p);
        if (err < best_err) {
          best_err = err;
          best = p;
        }
      }
    }
  };
  // The line rate on the coarse grid only (it matters for the few transfers out of tokens).
  double best_line = 0;
  for (double l : lines) {
    line = l;
    const double before = best_err;
    search(ab.ns_per_byte, 0.125, -24, 48, 1024, 0.25, 0, 52, true);
    if (best_err < before) best_line = l;
  }
  line = best_line;
  for (int round = 0; round < 2; ++round) {
    if (best.burst_bytes > 0) {
      search(best.ns_per_byte, 1.0 / 64, -8, 8, best.burst_bytes, 1.0 / 32, -16, 16, false);
    } else {
      search(best.ns_per_byte, 1.0 / 64, -8, 8, 1024, 1, 0, -1, true);
    }
  }
  f.tb_error_ns = best_err;
  MeanArrivalError(links, best, &f.shaped_fraction);
  if (best.burst_bytes >= 4096 && best_err < min_gain * f.alpha_beta_error_ns &&
      f.shaped_fraction >= min_shaped_fraction) {
    f.token_bucket = true;
    f.alpha_ns = best.alpha_ns;
    f.ns_per_byte = best.ns_per_byte;
    f.burst_bytes = best.burst_bytes;
    f.line_ns_per_byte = best.line_ns_per_byte;
  }
  return f;
}

}  // namespace loom::trace::dfg
