#include "loom/monitor/fleet/eval/scoring.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace loom::monitor {

std::vector<AlarmEvent> MergeAlerts(const std::vector<AlarmEvent>& alerts, int64_t merge_gap_s) {
  std::vector<AlarmEvent> out;
  std::map<int, int64_t> last_seen;  // machine -> last alert second
  for (const AlarmEvent& a : alerts) {
    auto it = last_seen.find(a.machine);
    if (it == last_seen.end() || a.t - it->second > merge_gap_s) out.push_back(a);
    last_seen[a.machine] = a.t;
  }
  return out;
}

JobScore ScoreAlarms(const std::vector<FaultLabel>& faults, int machines, int64_t seconds,
                     const std::vector<AlarmEvent>& alarms, const ScoringOptions& options) {
  JobScore js;
  js.machine_days = static_cast<double>(machines) * static_cast<double>(seconds) / 86400.0;
  auto member = [](const FaultLabel& f, int machine) {
    return f.machine == machine ||
           std::find(f.group.begin(), f.group.end(), machine) != f.group.end();
  };
  std::vector<uint8_t> explained(alarms.size(), 0);
  for (const FaultLabel& f : faults) {
    if (!f.must_alarm) continue;
    FaultOutcome o;
    o.type = f.type;
    for (size_t k = 0; k < alarms.size(); ++k) {
      const AlarmEvent& a = alarms[k];
      if (!member(f, a.machine)) continue;
      if (a.t >= f.onset_s && a.t <= f.onset_s + options.detect_window_s) {
        explained[k] = 1;
        if (!o.detected) {
          o.detected = true;
          o.ttd_s = a.t - f.onset_s;
          o.by_group_member = a.machine != f.machine;
        }
      } else if (a.t >= f.onset_s && a.t < f.end_s + options.grace_s) {
        explained[k] = 1;  // still-faulty machine: neither TP nor FP
      }
    }
    js.faults.push_back(o);
  }
  for (size_t k = 0; k < alarms.size(); ++k) {
    if (!explained[k]) js.false_alarms.push_back(alarms[k]);
  }
  return js;
}

JobScore KeepFaults(const JobScore& js, const std::vector<uint8_t>& keep) {
  JobScore out;
  out.false_alarms = js.false_alarms;
  out.machine_days = js.machine_days;
  for (size_t k = 0; k < js.faults.size() && k < keep.size(); ++k) {
    if (keep[k]) out.faults.push_back(js.faults[k]);
  }
  return out;
}

void Totals::Add(const JobScore& js) {
  faults.insert(faults.end(), js.faults.begin(), js.faults.end());
  false_alarms += static_cast<int64_t>(js.false_alarms.size());
  machine_days += js.machine_days;
}

int64_t Totals::tp() const {
  return std::count_if(faults.begin(), faults.end(), [](const FaultOutcome& o) {
    return o.detected;
  });
}

namespace {

double Prec(double tp, double fp) { return tp + fp > 0 ? tp / (tp + fp) : 0.0; }
double Rec(double tp, double n) { return n > 0 ? tp / n : 0.0; }
double F1(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0.0; }

}  // namespace

double Totals::precision() const { return Prec(tp(), false_alarms); }
double Totals::recall() const { return Rec(tp(), faults.size()); }
double Totals::f1() const { return F1(precision(), recall()); }
double Totals::false_alarms_per_machine_day() const {
  return machine_days > 0 ? false_alarms / machine_days : 0.0;
}

double Totals::TtdPercentile(double pct, const std::string& type) const {
  std::vector<double> v;
  for (const FaultOutcome& o : faults) {
    if (o.detected && (type.empty() || o.type == type)) v.push_back(static_cast<double>(o.ttd_s));
  }
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  // Nearest-rank percentile.
  const size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * v.size()));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

std::map<std::string, double> Totals::RecallByType() const {
  std::map<std::string, std::pair<int, int>> c;
  for (const FaultOutcome& o : faults) {
    c[o.type].first += o.detected;
    ++c[o.type].second;
  }
  std::map<std::string, double> out;
  for (const auto& [type, hn] : c) out[type] = static_cast<double>(hn.first) / hn.second;
  return out;
}

PrfWithCi BootstrapPrf(const Totals& totals, int reps, uint64_t seed) {
  PrfWithCi r;
  r.precision = totals.precision();
  r.recall = totals.recall();
  r.f1 = totals.f1();
  // Units: 0 = missed fault, 1 = detected fault, 2 = false alarm.
  std::vector<uint8_t> units;
  for (const FaultOutcome& o : totals.faults) units.push_back(o.detected ? 1 : 0);
  units.insert(units.end(), static_cast<size_t>(totals.false_alarms), 2);
  if (units.empty() || reps < 1) {
    r.precision_ci = {r.precision, r.precision};
    r.recall_ci = {r.recall, r.recall};
    r.f1_ci = {r.f1, r.f1};
    return r;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, units.size() - 1);
  std::vector<double> ps, rs, fs;
  for (int k = 0; k < reps; ++k) {
    double tp = 0, fn = 0, fp = 0;
    for (size_t j = 0; j < units.size(); ++j) {
      const uint8_t u = units[pick(rng)];
      tp += u == 1;
      fn += u == 0;
      fp += u == 2;
    }
    const double p = Prec(tp, fp), rc = Rec(tp, tp + fn);
    ps.push_back(p);
    rs.push_back(rc);
    fs.push_back(F1(p, rc));
  }
  auto ci = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    const size_t lo = static_cast<size_t>(0.025 * (v.size() - 1));
    const size_t hi = static_cast<size_t>(std::ceil(0.975 * (v.size() - 1)));
    return Interval{v[lo], v[hi]};
  };
  r.precision_ci = ci(ps);
  r.recall_ci = ci(rs);
  r.f1_ci = ci(fs);
  return r;
}

}  // namespace loom::monitor
