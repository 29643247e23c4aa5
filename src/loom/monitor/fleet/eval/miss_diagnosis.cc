#include "loom/monitor/fleet/eval/miss_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

namespace loom::monitor {
namespace {

double Percentile(std::vector<double> v, double pct) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::floor(pct / 100.0 * (v.size() - 1) + 0.5));
  return v[std::min(k, v.size() - 1)];
}

bool Member(const FaultLabel& f, int machine) {
  return machine >= 0 && (f.machine == machine ||
                          std::find(f.group.begin(), f.group.end(), machine) != f.group.end());
}

MissDiagnosis Diagnose(const std::vector<FaultLabel>& faults, const FaultLabel& f,
                       const ScoreTrace& tr, const std::vector<int>& channels, double threshold,
                       int64_t need, int64_t detect_window_s) {
  MissDiagnosis d;
  d.type = f.type;
  d.machine = f.machine;
  d.onset_s = f.onset_s;
  const int64_t end = std::min({f.end_s, f.onset_s + detect_window_s, tr.seconds});
  d.window_s = std::max<int64_t>(0, end - f.onset_s);
  const size_t nc = tr.channels.size();
  constexpr size_t r = ChannelScore::kRunnersUp;
  const bool runners = tr.runner_machine.size() == tr.machine.size() * r;
  std::vector<double> best;
  for (int64_t t = f.onset_s; t < end; ++t) {
    bool top = false, masked = false;
    double b = -INFINITY;
    for (size_t k = 0; k < channels.size(); ++k) {
      const size_t cell = static_cast<size_t>(t) * nc + channels[k];
      const bool is_top = Member(f, tr.machine[cell]);
      const bool top_hit = is_top && (tr.missing[cell] || tr.score[cell] >= threshold);
      if (is_top) b = std::max(b, static_cast<double>(tr.score[cell]));
      top |= top_hit;
      for (size_t j = 0; runners && j < r; ++j) {
        if (!Member(f, tr.runner_machine[cell * r + j])) continue;
        const double s = tr.runner_score[cell * r + j];
        b = std::max(b, s);
        masked |= s >= threshold;
      }
    }
    d.top_s += top;
    d.masked_s += !top && masked;
    best.push_back(b);
  }
  d.best_score_p50 = Percentile(best, 50);
  d.best_score_p90 = Percentile(best, 90);
  for (const FaultLabel& o : faults) {
    if (&o == &f || o.machine == f.machine) continue;
    d.overlapped |= o.onset_s < end && o.end_s > f.onset_s;
  }
  if (d.top_s + d.masked_s < need) {
    d.cause = "weak";
  } else if (d.top_s < need) {
    d.cause = "masked";
  } else {
    d.cause = "flicker";
  }
  return d;
}

}  // namespace

std::vector<MissDiagnosis> DiagnoseMisses(const std::vector<FaultLabel>& faults,
                                          const ScoreTrace& trace, const std::vector<int>& order,
                                          double threshold, int64_t need, const JobScore& js,
                                          int64_t detect_window_s) {
  std::vector<int> channels = order;
  if (channels.empty()) {
    for (size_t c = 0; c < trace.channels.size(); ++c) channels.push_back(static_cast<int>(c));
  }
  std::vector<MissDiagnosis> out;
  size_t k = 0;
  for (const FaultLabel& f : faults) {
    if (!f.must_alarm) continue;
    const bool detected = k < js.faults.size() && js.faults[k].detected;
    ++k;
    if (!detected) {
      out.push_back(Diagnose(faults, f, trace, channels, threshold, need, detect_window_s));
    }
  }
  return out;
}

FalseAlarmContext DescribeFalseAlarm(const std::vector<FaultLabel>& faults, const AlarmEvent& a) {
  FalseAlarmContext c;
  c.t = a.t;
  c.machine = a.machine;
  c.metric = a.metric;
  c.score = a.score;
  for (const FaultLabel& f : faults) {
    const int64_t gap = a.t < f.onset_s ? f.onset_s - a.t : (a.t >= f.end_s ? a.t - f.end_s + 1 : 0);
    if (c.nearest_gap_s >= 0 && gap >= c.nearest_gap_s) continue;
    c.nearest_gap_s = gap;
    c.nearest_type = f.type;
    c.nearest_machine = f.machine;
    c.same_group = Member(f, a.machine);
  }
  return c;
}

nlohmann::json SummariseMisses(const std::vector<MissDiagnosis>& misses, double threshold) {
  std::map<std::string, std::vector<const MissDiagnosis*>> by_type;
  for (const MissDiagnosis& m : misses) by_type[m.type].push_back(&m);
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [type, list] : by_type) {
    int weak = 0, masked = 0, flicker = 0, overlapped = 0;
    std::vector<double> p90;
    for (const MissDiagnosis* m : list) {
      weak += m->cause == "weak";
      masked += m->cause == "masked";
      flicker += m->cause == "flicker";
      overlapped += m->overlapped;
      p90.push_back(m->best_score_p90);
    }
    const double med = Percentile(p90, 50);
    types[type] = {{"missed", list.size()}, {"weak", weak}, {"masked", masked},
                   {"flicker", flicker}, {"overlapped", overlapped},
                   {"best_score_p90_median", std::isfinite(med) ? med : -1.0}};
  }
  return {{"threshold", threshold}, {"missed", misses.size()}, {"by_type", types}};
}

}  // namespace loom::monitor
