#include "loom/monitor/fleet/eval/fleet_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "loom/monitor/fleet/denoise/lstm_vae.h"
#include "loom/monitor/fleet/detect/cart.h"
#include "loom/monitor/fleet/eval/channel_scaling.h"
#include "loom/monitor/fleet/eval/miss_diagnosis.h"
#include "loom/monitor/fleet/eval/score_trace.h"
#include "loom/monitor/fleet/eval/scoring.h"
#include "loom/monitor/fleet/sim/fleet_simulator.h"
#include "loom/monitor/fleet/sim/observability.h"

namespace loom::monitor {
namespace {

using nlohmann::json;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Long-window ("metric@Ls") and level-shift ("metric~Ls") channels of Minder's traces.
bool IsLongChannel(const std::string& name) { return name.find('@') != std::string::npos; }
bool IsShiftChannel(const std::string& name) { return name.find('~') != std::string::npos; }

// One row of the table: a detector spec (without gate fields) plus how its gate is set.
struct DetectorPlan {
  std::string name;
  std::string trace_key;  // detectors with equal keys share score traces
  json spec;
  bool gate_free = false;  // continuity 1 in both modes
  bool minder_gate = false;  // streaming gate: FleetEvalOptions::fast_confirm_s (Minder rows)
  bool adaptive = false;     // streaming gate: FleetEvalOptions::adaptive_row_* (ablation row)
  bool drop_long = false;  // replay without the long-window channels ("metric@Ls")
  bool heartbeat = false;  // replay with the heartbeat channel first (minder+heartbeat)
  bool drop_shift = false;  // replay without the level-shift channels ("metric~Ls")
};

std::vector<DetectorPlan> Plans(const FleetEvalOptions& o) {
  json minder = {{"type", "minder"}, {"denoiser", o.denoiser}};
  if (!o.model_dir.empty()) minder["model_dir"] = o.model_dir;
  if (o.long_window_s > 0) minder["long_window_s"] = o.long_window_s;
  json raw = {{"type", "minder"}, {"denoiser", "identity"}};
  if (o.long_window_s > 0) raw["long_window_s"] = o.long_window_s;
  if (o.shift_window_s > 0) {
    for (json* spec : {&minder, &raw}) {
      (*spec)["shift_window_s"] = o.shift_window_s;
      (*spec)["shift_block_s"] = o.shift_block_s;
      (*spec)["shift_ref_s"] = o.shift_ref_s;
      (*spec)["shift_freeze_z"] = o.shift_freeze_z;
    }
  }
  const bool has_long = o.long_window_s > 0 || o.shift_window_s > 0;
  std::vector<DetectorPlan> plans = {
      {"minder", "minder", minder, false, true},
      {"minder+heartbeat", "minder", minder, false, true, false, false, true},
      {"minder_adaptive", "minder", minder, false, true, true},
      {"minder_1hz", "minder", minder, false, true, false, true},
      {"minder_nocont", "minder", minder, true},
      {"minder_raw", "minder_raw", raw, false, true},
      {"minder_integrated", "minder_integrated",
       {{"type", "minder"}, {"denoiser", o.denoiser}, {"integrated", true}}, false},
      {"minder_corr2", "minder_corr2",
       {{"type", "minder"}, {"denoiser", o.denoiser}, {"corroborate", 2}}, false},
      {"mahalanobis", "mahalanobis", {{"type", "mahalanobis"}}, false},
      {"peer_z", "peer_z", {{"type", "peer_z"}}, false},
      {"iforest", "iforest", {{"type", "iforest"}}, false},
      {"nvrx", "nvrx", {{"type", "nvrx"}}, false},
      {"bocd", "bocd", {{"type", "bocd"}}, false},
      {"heartbeat", "heartbeat", {{"type", "heartbeat"}}, true},
  };
  for (DetectorPlan& p : plans) p.drop_shift = p.drop_long;  // minder_1hz: 1 Hz channels only
  if (!has_long) {  // minder_1hz is minder itself then (no long-window or level-shift channels)
    plans.erase(std::remove_if(plans.begin(), plans.end(),
                               [](const DetectorPlan& p) { return p.drop_long; }),
                plans.end());
  }
  for (DetectorPlan& p : plans) {
    if (p.spec.value("denoiser", "") == o.denoiser && !o.model_dir.empty()) {
      p.spec["model_dir"] = o.model_dir;
    }
  }
  for (DetectorPlan& p : plans) {
    const std::string type = p.spec["type"];
    if (type == "minder" || type == "mahalanobis" || type == "iforest") p.spec["window"] = o.window;
  }
  if (o.detectors.empty()) return plans;
  std::vector<DetectorPlan> out;
  for (const DetectorPlan& p : plans) {
    if (std::find(o.detectors.begin(), o.detectors.end(), p.name) != o.detectors.end()) {
      out.push_back(p);
    }
  }
  return out;
}

struct Split {
  std::string name;
  std::vector<LabelledJob> jobs;
  // Per job, per must-alarm fault (JobScore::faults order): observable (sim/observability.h).
  std::vector<std::vector<uint8_t>> observable;
  json faults = json::array();  // per must-alarm fault: job, type, running fraction, observable
};

// Simulates the split's jobs and records, from each job's plan, the running fraction of every
// must-alarm fault and whether it is observable; observable_only drops the others first.
void SimulateSplit(const SimConfig& cfg, uint64_t seed, int count, bool observable_only,
                   Split* split) {
  const int64_t window = ScoringOptions{}.detect_window_s;
  for (int k = 0; k < count; ++k) {
    SimPlan plan = PlanJob(cfg, seed + k);
    if (observable_only) DropUnobservableFaults(cfg, window, &plan);
    const std::vector<double> run = RunningFractions(cfg, plan, window);
    const std::vector<uint8_t> seen = ObservableFaults(plan, run);
    std::vector<uint8_t> mask;
    for (size_t i = 0; i < plan.faults.size(); ++i) {
      const FaultLabel& l = plan.faults[i].label;
      if (!l.must_alarm) continue;
      mask.push_back(seen[i]);
      split->faults.push_back({{"job", k}, {"type", l.type}, {"machine", l.machine},
                               {"onset_s", l.onset_s}, {"duration_s", l.end_s - l.onset_s},
                               {"running_fraction", run[i]}, {"observable", seen[i] != 0}});
    }
    split->observable.push_back(std::move(mask));
    split->jobs.push_back(RenderJob(cfg, seed + k, plan));
  }
}

// {"all": n, "observable": n, "unobservable_by_type": {type: n}} of a split.
json ObservableCounts(const Split& split) {
  int all = 0, seen = 0;
  std::map<std::string, int> unseen;
  for (const json& f : split.faults) {
    ++all;
    if (f["observable"].get<bool>()) {
      ++seen;
    } else {
      ++unseen[f["type"].get<std::string>()];
    }
  }
  return {{"all", all}, {"observable", seen}, {"unobservable_by_type", unseen}};
}

double MachineDays(const std::vector<LabelledJob>& jobs) {
  double d = 0;
  for (const LabelledJob& j : jobs) d += j.series.machines * static_cast<double>(j.series.seconds) / 86400;
  return d;
}

enum class Mode { kStreaming, kBatch };

struct Schedule {
  Mode mode;
  GateOptions gate;
  int64_t every_s = 480, lookback_s = 900;
  int64_t exclude_flagged_s = 0;  // streaming only: concurrency exclusion (score_trace.h)
  bool any_channel = false;       // streaming only: machine-level continuity (score_trace.h)
};

std::vector<AlarmEvent> Replay(const ScoreTrace& tr, const Schedule& sch,
                               const std::vector<int>& order) {
  return sch.mode == Mode::kStreaming
             ? ReplayStreaming(tr, sch.gate, order, 60, sch.exclude_flagged_s, sch.any_channel)
             : ReplayBatch(tr, sch.gate, order, sch.every_s, sch.lookback_s);
}

// Totals over all must-alarm faults; with `observable`, also those over the split's observable
// faults (same alarms).
Totals ScoreSplit(const std::vector<LabelledJob>& jobs, const std::vector<ScoreTrace>& traces,
                  const Schedule& sch, const std::vector<int>& order,
                  const std::vector<std::vector<uint8_t>>* masks = nullptr,
                  Totals* observable = nullptr) {
  Totals tot;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const JobScore js = ScoreAlarms(jobs[k].faults, jobs[k].series.machines,
                                    jobs[k].series.seconds, Replay(traces[k], sch, order),
                                    ScoringOptions{});
    tot.Add(js);
    if (masks && observable) observable->Add(KeepFaults(js, (*masks)[k]));
  }
  return tot;
}

// Smallest threshold (from a grid of observed validation scores) whose false-alarm rate on
// validation is within budget; binary search assumes false alarms fall as the threshold rises.
double Calibrate(const std::vector<LabelledJob>& val, const std::vector<ScoreTrace>& traces,
                 Schedule sch, const std::vector<int>& order, double budget) {
  std::vector<float> scores;
  for (const ScoreTrace& tr : traces) {
    const size_t stride = std::max<size_t>(1, tr.score.size() / 50000);
    for (size_t k = 0; k < tr.score.size(); k += stride) {
      if (std::isfinite(tr.score[k])) scores.push_back(tr.score[k]);
    }
  }
  if (scores.empty()) return sch.gate.threshold;
  std::sort(scores.begin(), scores.end());
  std::vector<double> grid;
  for (int q = 0; q <= 400; ++q) {
    const double f = q / 400.0;
    grid.push_back(scores[std::min(scores.size() - 1, static_cast<size_t>(f * (scores.size() - 1)))]);
  }
  // The tail between the 99th percentile and the maximum, where the threshold usually lands,
  // gets its own fine grid (quantiles alone jump from the bulk straight to the maximum).
  const double q99 = scores[static_cast<size_t>(0.99 * (scores.size() - 1))];
  const double top = scores.back();
  for (int k = 1; k < 200; ++k) {
    const double f = k / 200.0;
    grid.push_back(q99 > 0 && top > q99 ? q99 * std::pow(top / q99, f) : q99 + f * (top - q99));
  }
  grid.push_back(top * (top > 0 ? 1.01 : 0.99) + 1e-6);
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  auto ok = [&](double thr) {
    sch.gate.threshold = thr;
    return ScoreSplit(val, traces, sch, order).false_alarms_per_machine_day() <= budget;
  };
  size_t lo = 0, hi = grid.size() - 1;
  if (!ok(grid[hi])) return grid[hi];  // budget unreachable (e.g. missing-data alarms)
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (ok(grid[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return grid[lo];
}

double Finite(double v) { return std::isfinite(v) ? v : -1; }

// Why the schedule misses validation faults (miss_diagnosis.h), summed over the split.
json DiagnoseSplit(const std::vector<LabelledJob>& jobs, const std::vector<ScoreTrace>& traces,
                   const Schedule& sch, const std::vector<int>& order) {
  const int64_t tc = std::max<int64_t>(1, sch.gate.continuity_s);
  const int64_t need = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(std::clamp(sch.gate.min_fraction, 0.0, 1.0) * tc - 1e-9)));
  std::vector<MissDiagnosis> all;
  std::vector<size_t> job_of;  // validation job of each entry of `all`
  json false_alarms = json::array();
  for (size_t k = 0; k < jobs.size(); ++k) {
    const JobScore js = ScoreAlarms(jobs[k].faults, jobs[k].series.machines,
                                    jobs[k].series.seconds, Replay(traces[k], sch, order),
                                    ScoringOptions{});
    for (const AlarmEvent& a : js.false_alarms) {
      const FalseAlarmContext c = DescribeFalseAlarm(jobs[k].faults, a);
      false_alarms.push_back({{"job", k}, {"t", c.t}, {"machine", c.machine},
                              {"metric", c.metric}, {"score", Finite(c.score)},
                              {"nearest_fault", c.nearest_type},
                              {"nearest_machine", c.nearest_machine},
                              {"nearest_gap_s", c.nearest_gap_s}, {"same_group", c.same_group}});
    }
    for (MissDiagnosis& m : DiagnoseMisses(jobs[k].faults, traces[k], order, sch.gate.threshold,
                                           need, js)) {
      all.push_back(std::move(m));
      job_of.push_back(k);
    }
  }
  json out = SummariseMisses(all, sch.gate.threshold);
  out["need_s"] = need;
  json list = json::array();
  for (size_t i = 0; i < all.size(); ++i) {
    const MissDiagnosis& m = all[i];
    list.push_back({{"job", job_of[i]}, {"type", m.type}, {"machine", m.machine},
                    {"onset_s", m.onset_s},
                    {"window_s", m.window_s}, {"top_s", m.top_s}, {"masked_s", m.masked_s},
                    {"best_score_p50", Finite(m.best_score_p50)},
                    {"best_score_p90", Finite(m.best_score_p90)},
                    {"overlapped", m.overlapped}, {"cause", m.cause}});
  }
  out["faults"] = list;
  out["false_alarms"] = false_alarms;
  return out;
}

// P/R/F1 with CIs over the observable test faults (same alarms as the headline row).
// Precision, recall and F1 of the test faults with their bootstrap CIs (seed 17).
json PrfJson(const Totals& test, int bootstrap) {
  const PrfWithCi prf = BootstrapPrf(test, bootstrap, 17);
  return {{"precision", prf.precision},
          {"precision_ci", {prf.precision_ci.lo, prf.precision_ci.hi}},
          {"recall", prf.recall},
          {"recall_ci", {prf.recall_ci.lo, prf.recall_ci.hi}},
          {"f1", prf.f1},
          {"f1_ci", {prf.f1_ci.lo, prf.f1_ci.hi}}};
}

json ObservableJson(const Totals& test, const Totals& val, int bootstrap) {
  json j = {{"faults", test.faults.size()},
            {"tp", test.tp()},
            {"fn", static_cast<int64_t>(test.faults.size()) - test.tp()},
            {"fp", test.false_alarms},
            {"recall_by_type", test.RecallByType()},
            {"val_faults", val.faults.size()},
            {"val_recall", val.recall()},
            {"val_f1", val.f1()}};
  j.update(PrfJson(test, bootstrap));
  return j;
}

// Adds each missed fault's running fraction and observability (from the split's plan) to
// DiagnoseSplit's "faults", and counts the unobservable misses ("missed_unobservable").
void JoinObservability(const Split& split, json* diagnosis) {
  int unobservable = 0;
  for (json& m : (*diagnosis)["faults"]) {
    for (const json& f : split.faults) {
      if (f["job"] != m["job"] || f["machine"] != m["machine"] || f["onset_s"] != m["onset_s"]) {
        continue;
      }
      m["running_fraction"] = f["running_fraction"];
      m["observable"] = f["observable"];
      unobservable += !f["observable"].get<bool>();
      break;
    }
  }
  (*diagnosis)["missed_unobservable"] = unobservable;
}

json RowJson(const std::string& name, const std::string& mode, const Schedule& sch,
             const Totals& test, const Totals& val, int bootstrap) {
  const double val_fa = val.false_alarms_per_machine_day();
  json row = {{"detector", name},
              {"mode", mode},
              {"threshold", sch.gate.threshold},
              {"continuity_s", sch.gate.continuity_s},
              {"tp", test.tp()},
              {"fn", static_cast<int64_t>(test.faults.size()) - test.tp()},
              {"fp", test.false_alarms},
              {"fa_per_machine_day", test.false_alarms_per_machine_day()},
              {"val_fa_per_machine_day", val_fa},
              {"ttd_p50_s", Finite(test.TtdPercentile(50))},
              {"ttd_p95_s", Finite(test.TtdPercentile(95))},
              {"recall_by_type", test.RecallByType()}};
  json ttd_by_type = json::object();
  for (const auto& [type, r] : test.RecallByType()) {
    ttd_by_type[type] = Finite(test.TtdPercentile(50, type));
  }
  row["ttd_p50_by_type_s"] = ttd_by_type;
  row.update(PrfJson(test, bootstrap));
  row["fast_confirm_s"] = sch.gate.fast_confirm_s;
  row["fast_min_channels"] = sch.gate.fast_min_channels;
  row["missing_confirm_s"] = sch.gate.missing_confirm_s;
  row["val_precision"] = val.precision();
  row["val_recall"] = val.recall();
  row["val_f1"] = val.f1();
  row["val_ttd_p50_s"] = Finite(val.TtdPercentile(50));
  return row;
}

// CART on train: features = each channel's max-over-machines score per second (missing = 20),
// label = a must_alarm fault is active. Returns channel indices, most informative first.
Result<std::vector<int>> TrainPriority(const std::vector<LabelledJob>& train,
                                       const std::vector<ScoreTrace>& traces, json* report) {
  std::vector<std::vector<double>> x;
  std::vector<int> y;
  for (size_t k = 0; k < train.size(); ++k) {
    const ScoreTrace& tr = traces[k];
    const size_t c = tr.channels.size();
    for (int64_t t = 8; t < tr.seconds; t += 5) {
      std::vector<double> f(c);
      for (size_t j = 0; j < c; ++j) {
        const size_t i = static_cast<size_t>(t) * c + j;
        const double s = tr.missing[i] ? 20.0 : tr.score[i];
        f[j] = std::isfinite(s) ? std::clamp(s, -20.0, 50.0) : 0.0;
      }
      int label = 0;
      for (const FaultLabel& fl : train[k].faults) {
        if (fl.must_alarm && t >= fl.onset_s + 8 && t < fl.end_s) label = 1;
      }
      x.push_back(std::move(f));
      y.push_back(label);
    }
  }
  LOOM_ASSIGN_OR_RETURN(DecisionTree tree, DecisionTree::Fit(x, y, CartOptions{4, 20}));
  const std::vector<int> order = tree.FeaturePriority();
  json pr = json::array();
  for (int c : order) {
    pr.push_back({{"metric", traces[0].channels[c]}, {"importance", tree.importance()[c]}});
  }
  (*report)["priority"] = pr;
  (*report)["priority_windows"] = x.size();
  return order;
}

Result<json> Timing(const FleetEvalOptions& o, const std::vector<std::string>& priority,
                    std::FILE* progress) {
  json rows = json::array();
  for (const int n : o.timing_machines) {
    SimConfig cfg;
    cfg.machines = n;
    cfg.seconds = o.timing_seconds;
    cfg.group_size = std::min(8, n);
    cfg.rack_size = std::min(4, n);
    LOOM_RETURN_IF_ERROR(ValidateSimConfig(cfg));
    const LabelledJob job = SimulateJob(cfg, 99);
    json row = {{"machines", n}};
    std::vector<std::string> metric_priority;  // long-window channels follow their metrics
    for (const std::string& c : priority) {
      if (!IsLongChannel(c) && !IsShiftChannel(c)) metric_priority.push_back(c);
    }
    json minder = {{"type", "minder"}, {"denoiser", o.denoiser}, {"priority", metric_priority},
                   {"window", o.window}};
    if (!o.model_dir.empty()) minder["model_dir"] = o.model_dir;
    if (o.long_window_s > 0) minder["long_window_s"] = o.long_window_s;
    if (o.shift_window_s > 0) {
      minder["shift_window_s"] = o.shift_window_s;
      minder["shift_block_s"] = o.shift_block_s;
      minder["shift_ref_s"] = o.shift_ref_s;
      minder["shift_freeze_z"] = o.shift_freeze_z;
    }
    json minder_sq = minder;
    minder_sq["distance"] = "l2sq";
    for (const auto& [label, spec] : std::vector<std::pair<std::string, json>>{
             {"minder_l2_ms", minder},
             {"minder_l2sq_ms", minder_sq},
             {"mahalanobis_ms", {{"type", "mahalanobis"}, {"window", o.window}}}}) {
      LOOM_ASSIGN_OR_RETURN(auto d, MakeDetector(spec, o.loader));
      std::vector<double> ms;
      const int64_t t0 = std::max<int64_t>(8, job.series.seconds - o.timing_calls);
      for (int64_t t = t0; t < job.series.seconds; ++t) {
        const double start = Now();
        LOOM_ASSIGN_OR_RETURN(Verdict v, d->Evaluate(job.series, t));
        ms.push_back(1e3 * (Now() - start));
        (void)v;
      }
      std::sort(ms.begin(), ms.end());
      row[label] = ms[ms.size() / 2];
    }
    if (progress) {
      std::fprintf(progress, "  timing N=%d: minder %.3f ms (l2sq %.3f ms), mahalanobis %.3f ms\n",
                   n, row["minder_l2_ms"].get<double>(), row["minder_l2sq_ms"].get<double>(),
                   row["mahalanobis_ms"].get<double>());
    }
    rows.push_back(row);
  }
  return rows;
}

// The gate's span for continuity T_c: a windowed score keeps an excursion visible for `smear`
// (w - 1) more seconds, so the candidate must be held for T_c + smear seconds; with a relaxed
// gate (min_fraction f < 1) the span is stretched to ceil((T_c + smear) / f) so that the
// required count f x span is still >= T_c + smear. Otherwise a transient shorter than T_c,
// visible for < T_c + smear seconds, could pass a gate that counts only f of them.
int64_t GateSpan(int64_t tc, int64_t smear, double min_fraction) {
  const double hold = static_cast<double>(tc + smear);
  if (!(min_fraction > 0) || min_fraction >= 1) return tc + smear;
  return static_cast<int64_t>(std::ceil(hold / min_fraction - 1e-9));
}

// Channel order a plan replays: Minder's CART order (all channels when empty), without the
// long-window channels (drop_long) and the level-shift channels (drop_shift) when asked,
// behind the heartbeat channel (index 0 of a
// fused trace) when asked.
std::vector<int> PlanOrder(const DetectorPlan& p, const std::vector<std::string>& channels,
                           const std::vector<int>& cart) {
  std::vector<int> ord = cart;
  if (ord.empty() && (p.drop_long || p.drop_shift || p.heartbeat)) {
    for (size_t c = 0; c < channels.size(); ++c) ord.push_back(static_cast<int>(c));
  }
  if (p.drop_long) {
    ord.erase(std::remove_if(ord.begin(), ord.end(),
                             [&](int c) { return IsLongChannel(channels[c]); }),
              ord.end());
  }
  if (p.drop_shift) {
    ord.erase(std::remove_if(ord.begin(), ord.end(),
                             [&](int c) { return IsShiftChannel(channels[c]); }),
              ord.end());
  }
  if (p.heartbeat) {
    for (int& c : ord) ++c;
    ord.insert(ord.begin(), 0);
  }
  return ord;
}

// Per split (val, test): the base traces with the heartbeat channel prepended.
Result<std::vector<std::vector<ScoreTrace>>> FuseHeartbeat(
    const std::vector<std::vector<ScoreTrace>>& heartbeat,
    const std::vector<std::vector<ScoreTrace>>& base, double timeout_s) {
  std::vector<std::vector<ScoreTrace>> out(base.size());
  for (size_t s = 1; s < base.size(); ++s) {
    for (size_t k = 0; k < base[s].size(); ++k) {
      LOOM_ASSIGN_OR_RETURN(ScoreTrace tr,
                            PrependHeartbeatChannel(heartbeat[s][k], base[s][k], timeout_s));
      out[s].push_back(std::move(tr));
    }
  }
  return out;
}

// The streaming gate of a plan under the evaluation's options.
GateOptions StreamingGate(const FleetEvalOptions& o, const DetectorPlan& p, GateOptions gate) {
  if (p.minder_gate) {
    gate.fast_confirm_s = o.fast_confirm_s;
    gate.fast_min_channels = o.fast_min_channels;
  }
  if (p.adaptive) {
    gate.fast_confirm_s = o.adaptive_row_fast_confirm_s;
    gate.fast_min_channels = o.adaptive_row_min_channels;
  }
  if (p.heartbeat) gate.missing_confirm_s = 1;
  return gate;
}

json StudyRow(const std::vector<LabelledJob>& val, const std::vector<ScoreTrace>& traces,
              const Schedule& sch, const std::vector<int>& order, double budget) {
  Schedule cal = sch;
  cal.gate.threshold = Calibrate(val, traces, sch, order, budget);
  const Totals t = ScoreSplit(val, traces, cal, order);
  json ttd = json::object();
  for (const auto& [type, r] : t.RecallByType()) ttd[type] = Finite(t.TtdPercentile(50, type));
  return {{"threshold", cal.gate.threshold},
          {"fast_confirm_s", sch.gate.fast_confirm_s},
          {"fast_min_channels", sch.gate.fast_min_channels},
          {"val_fa_per_machine_day", t.false_alarms_per_machine_day()},
          {"val_precision", t.precision()},
          {"val_recall", t.recall()},
          {"val_f1", t.f1()},
          {"val_ttd_p50_s", Finite(t.TtdPercentile(50))},
          {"val_recall_by_type", t.RecallByType()},
          {"val_ttd_p50_by_type_s", ttd}};
}

// Validation-only sweep of Minder's streaming gate: adaptive confirmation (fast_confirm_s x
// fast_min_channels), with and without the long-window channels, and heartbeat timeouts.
Result<json> GateStudy(const FleetEvalOptions& o, const std::vector<LabelledJob>& val,
                       const std::vector<ScoreTrace>& minder,
                       const std::vector<ScoreTrace>* heartbeat, const std::vector<int>& cart,
                       Schedule base, std::FILE* progress) {
  json rows = json::array();
  const bool has_long = o.long_window_s > 0;
  auto report = [&](json row) {
    if (progress) {
      std::fprintf(progress, "  study %-40s thr %7.3f val FA/md %.4f P %.3f R %.3f F1 %.3f "
                   "TTD50 %.0f\n", row["variant"].get<std::string>().c_str(),
                   row["threshold"].get<double>(), row["val_fa_per_machine_day"].get<double>(),
                   row["val_precision"].get<double>(), row["val_recall"].get<double>(),
                   row["val_f1"].get<double>(), row["val_ttd_p50_s"].get<double>());
    }
    rows.push_back(std::move(row));
  };
  for (const bool drop_long : has_long ? std::vector<bool>{false, true} : std::vector<bool>{true}) {
    DetectorPlan p;
    p.drop_long = drop_long && has_long;
    p.drop_shift = true;  // the gate study predates the level-shift channels
    const std::vector<int> ord = PlanOrder(p, minder[0].channels, cart);
    for (const int64_t fast : {0, 3, 5, 10, 20}) {
      for (const int fmc : {1, 2, 3}) {
        if (fast == 0 && fmc > 1) continue;
        Schedule sch = base;
        sch.gate.fast_confirm_s = fast;
        sch.gate.fast_min_channels = fmc;
        json row = StudyRow(val, minder, sch, ord, o.fa_budget);
        row["long_window_s"] = drop_long ? 0 : o.long_window_s;
        row["variant"] = "long=" + std::to_string(drop_long ? 0 : o.long_window_s) +
                         " fast=" + std::to_string(fast) + " fmc=" + std::to_string(fmc);
        report(std::move(row));
      }
    }
  }
  if (heartbeat) {
    for (const double timeout : {1.0, 2.0, 3.0, 5.0}) {
      std::vector<ScoreTrace> fused;
      for (size_t k = 0; k < minder.size(); ++k) {
        LOOM_ASSIGN_OR_RETURN(ScoreTrace tr,
                              PrependHeartbeatChannel((*heartbeat)[k], minder[k], timeout));
        fused.push_back(std::move(tr));
      }
      DetectorPlan p;
      p.heartbeat = true;
      p.minder_gate = true;
      const std::vector<int> ord = PlanOrder(p, minder[0].channels, cart);
      Schedule sch = base;
      sch.gate = StreamingGate(o, p, sch.gate);
      json row = StudyRow(val, fused, sch, ord, o.fa_budget);
      row["heartbeat_timeout_s"] = timeout;
      row["variant"] = "heartbeat timeout=" + std::to_string(static_cast<int>(timeout)) +
                       " + options' gate";
      report(std::move(row));
    }
  }
  return rows;
}

// What Minder with MinderOptions::long_weight = weight records: the long-window channels
// ("metric@Ls") scaled by `weight`.
std::vector<ScoreTrace> ScaleLongChannels(const std::vector<ScoreTrace>& traces, double weight) {
  if (traces.empty()) return traces;
  std::vector<double> factor;
  for (const std::string& name : traces[0].channels) {
    factor.push_back(IsLongChannel(name) ? weight : 1.0);
  }
  return ScaleChannels(traces, factor);
}

// The same for the level-shift channels ("metric~Ls", MinderOptions::shift.weight).
std::vector<ScoreTrace> ScaleShiftChannels(const std::vector<ScoreTrace>& traces, double weight) {
  if (traces.empty()) return traces;
  std::vector<double> factor;
  for (const std::string& name : traces[0].channels) {
    factor.push_back(IsShiftChannel(name) ? weight : 1.0);
  }
  return ScaleChannels(traces, factor);
}

// Picks a channel family's weight on validation: the candidate (0 = channels off) with the
// best validation F1 under Minder's streaming gate, each recalibrated. `order_for(weight)` is
// the channel order a candidate runs with, `scale(traces, weight)` applies it; rows (tagged
// `key` = weight) go to `study`.
template <typename OrderFor, typename Scale>
double ChooseChannelWeight(const char* family, const char* key, std::vector<double> candidates,
                           const std::vector<LabelledJob>& val,
                           const std::vector<ScoreTrace>& minder, const Schedule& base,
                           const FleetEvalOptions& o, OrderFor order_for, Scale scale,
                           json* study, std::FILE* progress) {
  candidates.insert(candidates.begin(), 0);
  double best = 0, best_f1 = -1;
  for (const double weight : candidates) {
    const std::vector<int> ord = order_for(weight);
    json row = weight <= 0 ? StudyRow(val, minder, base, ord, o.fa_budget)
                           : StudyRow(val, scale(minder, weight), base, ord, o.fa_budget);
    row[key] = weight;
    row["variant"] = weight <= 0 ? std::string(family) + " channels off"
                                 : std::string(family) + " weight " +
                                       std::to_string(weight).substr(0, 4);
    if (progress) {
      std::fprintf(progress, "  %s weight %-5.2f thr %7.3f val FA/md %.4f R %.3f F1 %.3f\n",
                   family, weight, row["threshold"].get<double>(),
                   row["val_fa_per_machine_day"].get<double>(), row["val_recall"].get<double>(),
                   row["val_f1"].get<double>());
    }
    if (row["val_f1"].get<double>() > best_f1 + 1e-12) {
      best_f1 = row["val_f1"].get<double>();
      best = weight;
    }
    study->push_back(std::move(row));
  }
  return best;
}

// The level-shift channels' weight, on traces whose long-window weight is already applied (or
// dropped: long_off).
double ChooseShiftWeight(const FleetEvalOptions& o, const std::vector<LabelledJob>& val,
                         const std::vector<ScoreTrace>& minder, const std::vector<int>& cart,
                         const Schedule& base, bool long_off, json* study, std::FILE* progress) {
  if (o.shift_window_s <= 0 || minder.empty()) return 0;
  auto order_for = [&](double weight) {
    std::vector<int> ord = cart;
    ord.erase(std::remove_if(ord.begin(), ord.end(),
                             [&](int c) {
                               const std::string& n = minder[0].channels[c];
                               return (long_off && IsLongChannel(n)) ||
                                      (weight <= 0 && IsShiftChannel(n));
                             }),
              ord.end());
    return ord;
  };
  return ChooseChannelWeight("level-shift", "shift_weight", o.shift_weights, val, minder, base, o,
                             order_for, ScaleShiftChannels, study, progress);
}

// The long-window channels' weight (the level-shift weight is chosen after this one).
double ChooseLongWeight(const FleetEvalOptions& o, const std::vector<LabelledJob>& val,
                        const std::vector<ScoreTrace>& minder, const std::vector<int>& cart,
                        const Schedule& base, json* study, std::FILE* progress) {
  if (o.long_window_s <= 0 || minder.empty()) return 0;
  auto order_for = [&](double weight) {
    DetectorPlan p;
    p.drop_long = weight <= 0;
    p.drop_shift = true;
    return PlanOrder(p, minder[0].channels, cart);
  };
  return ChooseChannelWeight("long-window", "long_weight", o.long_weights, val, minder, base, o,
                             order_for, ScaleLongChannels, study, progress);
}

// Rows of ReplayStudy for one set of (already normalised) validation traces.
Status ExclusionRows(const FleetEvalOptions& o, const std::vector<LabelledJob>& val,
                     const std::vector<ScoreTrace>& minder, const std::vector<int>& cart,
                     double long_weight, double norm_q, double min_fraction, json* rows,
                     std::FILE* progress) {
  DetectorPlan p;
  p.drop_long = long_weight <= 0;
  const std::vector<int> ord = PlanOrder(p, minder[0].channels, cart);
  Schedule sch{Mode::kStreaming,
               GateOptions{3.5, GateSpan(o.streaming_tc_s, o.window - 1, min_fraction),
                           min_fraction, o.min_channels}};
  std::vector<int64_t> values = {0};
  values.insert(values.end(), o.exclusion_study_s.begin(), o.exclusion_study_s.end());
  if (!rows->is_array()) *rows = json::array();
  for (const int64_t ex : values) {
    sch.exclude_flagged_s = ex;
    json row = StudyRow(val, minder, sch, ord, o.fa_budget);
    row["exclude_flagged_s"] = ex;
    row["long_weight"] = long_weight;
    row["channel_norm_quantile"] = norm_q;
    row["min_fraction"] = min_fraction;
    row["variant"] = "exclude=" + std::to_string(ex) + " s, norm q=" +
                     (norm_q > 0 ? std::to_string(norm_q).substr(0, 6) : std::string("off")) +
                     ", min_fraction " + std::to_string(min_fraction).substr(0, 4) +
                     ", long w " + std::to_string(long_weight).substr(0, 4);
    if (progress) {
      std::fprintf(progress, "  study %-40s thr %7.3f val FA/md %.4f P %.3f R %.3f F1 %.3f\n",
                   row["variant"].get<std::string>().c_str(), row["threshold"].get<double>(),
                   row["val_fa_per_machine_day"].get<double>(), row["val_precision"].get<double>(),
                   row["val_recall"].get<double>(), row["val_f1"].get<double>());
    }
    rows->push_back(std::move(row));
  }
  return Status();
}

// Validation-only sweep of the replay-stage settings under Minder's fixed streaming gate with
// the chosen long-window weight (0 = channels off): per-channel normalisation (off and
// o.channel_norm_study, fit on train) x concurrency exclusion (off and o.exclusion_study_s),
// then the gate's min_fraction (o.min_fraction_study, no normalisation) x exclusion.
// Rows are appended to `rows`.
Status ReplayStudy(const FleetEvalOptions& o, const std::vector<LabelledJob>& train,
                   const std::vector<ScoreTrace>& train_traces,
                   const std::vector<LabelledJob>& val, const std::vector<ScoreTrace>& val_traces,
                   const std::vector<int>& cart, double long_weight, json* rows,
                   std::FILE* progress) {
  if (val_traces.empty()) return Status();
  std::vector<double> norms = {0};
  norms.insert(norms.end(), o.channel_norm_study.begin(), o.channel_norm_study.end());
  for (const double q : norms) {
    const std::vector<ScoreTrace> minder =
        q > 0 ? ScaleChannels(val_traces, ChannelNormFactors(train, train_traces, q))
              : val_traces;
    LOOM_RETURN_IF_ERROR(
        ExclusionRows(o, val, minder, cart, long_weight, q, o.min_fraction, rows, progress));
  }
  for (const double mf : o.min_fraction_study) {
    LOOM_RETURN_IF_ERROR(
        ExclusionRows(o, val, val_traces, cart, long_weight, 0, mf, rows, progress));
  }
  // Machine-level continuity (any channel), with and without the long-window channels.
  for (const double lw : {long_weight, 0.0}) {
    for (const double mf : {o.min_fraction, 0.7, 1.0}) {
      DetectorPlan p;
      p.drop_long = lw <= 0;
      const std::vector<int> ord = PlanOrder(p, val_traces[0].channels, cart);
      Schedule sch{Mode::kStreaming,
                   GateOptions{3.5, GateSpan(o.streaming_tc_s, o.window - 1, mf), mf,
                               o.min_channels}};
      sch.any_channel = true;
      json row = StudyRow(val, val_traces, sch, ord, o.fa_budget);
      row["any_channel"] = true;
      row["min_fraction"] = mf;
      row["long_weight"] = lw;
      row["variant"] = "any-channel gate, min_fraction " + std::to_string(mf).substr(0, 4) +
                       ", long w " + std::to_string(lw).substr(0, 4);
      if (progress) {
        std::fprintf(progress, "  study %-40s thr %7.3f val FA/md %.4f P %.3f R %.3f F1 %.3f\n",
                     row["variant"].get<std::string>().c_str(), row["threshold"].get<double>(),
                     row["val_fa_per_machine_day"].get<double>(),
                     row["val_precision"].get<double>(), row["val_recall"].get<double>(),
                     row["val_f1"].get<double>());
      }
      rows->push_back(std::move(row));
    }
  }
  return Status();
}

}  // namespace

FleetEvalOptions FleetEvalOptions::Quick() {
  FleetEvalOptions o;
  o.machines = 32;
  o.seconds = 2 * 3600;
  o.train_jobs = o.val_jobs = o.test_jobs = 2;
  o.faults_per_machine_day = 4.0;
  o.timing_seconds = 660;
  o.timing_calls = 5;
  o.bootstrap = 200;
  return o;
}

DenoiserLoader LstmVaeLoader() {
  return [](const std::string& type, const std::string& model_dir, const std::string& metric,
            int window) -> Result<std::unique_ptr<Denoiser>> {
    if (type != "lstm_vae") {
      return InvalidArgumentError("unknown denoiser '" + type +
                                  "' (identity, moving_median, lstm_vae)");
    }
    if (model_dir.empty()) {
      return InvalidArgumentError("denoiser lstm_vae needs a model directory (--vae-dir)");
    }
    return LoadLstmVae(model_dir, metric, window);
  };
}

const std::vector<std::string>& DetectorNames() {
  static const std::vector<std::string> names = {
      "minder", "minder+heartbeat", "minder_adaptive", "minder_1hz", "minder_nocont",
      "minder_raw", "minder_integrated", "minder_corr2",
      "mahalanobis", "peer_z", "iforest", "nvrx", "bocd", "heartbeat"};
  return names;
}

Result<json> RunFleetEval(const FleetEvalOptions& options, std::FILE* progress) {
  const double t_start = Now();
  FleetEvalOptions o = options;
  if (!o.loader) o.loader = LstmVaeLoader();
  SimConfig cfg;
  cfg.machines = o.machines;
  cfg.seconds = o.seconds;
  cfg.faults_per_machine_day = o.faults_per_machine_day;
  cfg.continuity_s = o.streaming_tc_s;
  // A must-alarm fault must outlast the streaming gate of the windowed detectors (T_c + w - 1 s)
  // to be detectable at all; shorter events are the simulator's labelled transients (< T_c).
  cfg.min_fault_s = std::max<int64_t>(cfg.min_fault_s, o.streaming_tc_s + o.window);
  if (o.min_fault_s > 0) {
    if (o.min_fault_s < cfg.min_fault_s) {
      return InvalidArgumentError("min_fault_s (" + std::to_string(o.min_fault_s) +
                                  ") must be >= T_c + w = " + std::to_string(cfg.min_fault_s));
    }
    cfg.min_fault_s = o.min_fault_s;
  }
  if (!(o.channel_norm_quantile >= 0 && o.channel_norm_quantile < 1)) {
    return InvalidArgumentError("channel_norm_quantile must be in [0, 1), got " +
                                std::to_string(o.channel_norm_quantile));
  }
  if (o.exclude_flagged_s < 0) {
    return InvalidArgumentError("exclude_flagged_s must be >= 0, got " +
                                std::to_string(o.exclude_flagged_s));
  }
  // Detection only counts within 15 min of onset (scoring.h), and a job-halting stall would be
  // acted on long before 2 h: at the elevated evaluation fault rate, hour-long faults add
  // nothing to detection but mask the faults that arrive under them (a stall halts the job).
  if (o.max_fault_s < cfg.min_fault_s) {
    return InvalidArgumentError("max_fault_s (" + std::to_string(o.max_fault_s) +
                                ") must be >= T_c + w = " + std::to_string(cfg.min_fault_s));
  }
  cfg.max_fault_s = o.max_fault_s;
  LOOM_RETURN_IF_ERROR(ValidateSimConfig(cfg));
  for (const std::string& d : o.detectors) {
    if (std::find(DetectorNames().begin(), DetectorNames().end(), d) == DetectorNames().end()) {
      return InvalidArgumentError("unknown detector '" + d + "' in --detectors");
    }
  }
  std::vector<Split> splits(3);
  splits[0].name = "train";
  splits[1].name = "val";
  splits[2].name = "test";
  const int counts[3] = {o.train_jobs, o.val_jobs, o.test_jobs};
  const uint64_t seeds[3] = {o.train_seed, o.val_seed, o.test_seed};
  for (int s = 0; s < 3; ++s) {
    SimulateSplit(cfg, seeds[s], counts[s], o.observable_only, &splits[s]);
  }
  json report;
  int faults[3] = {0, 0, 0};
  for (int s = 0; s < 3; ++s) {
    for (const LabelledJob& j : splits[s].jobs) {
      for (const FaultLabel& f : j.faults) faults[s] += f.must_alarm;
    }
  }
  report["config"] = {{"machines", o.machines},
                      {"seconds", o.seconds},
                      {"jobs", {o.train_jobs, o.val_jobs, o.test_jobs}},
                      {"seeds", {o.train_seed, o.val_seed, o.test_seed}},
                      {"faults_per_machine_day", o.faults_per_machine_day},
                      {"min_fault_s", cfg.min_fault_s},
                      {"max_fault_s", cfg.max_fault_s},
                      {"must_alarm_faults", {faults[0], faults[1], faults[2]}},
                      {"machine_days", {MachineDays(splits[0].jobs), MachineDays(splits[1].jobs),
                                        MachineDays(splits[2].jobs)}},
                      {"fa_budget_per_machine_day", o.fa_budget},
                      {"streaming_tc_s", o.streaming_tc_s},
                      {"batch", {{"tc_s", o.batch_tc_s}, {"every_s", o.batch_every_s},
                                 {"lookback_s", o.batch_lookback_s}}},
                      {"denoiser", o.denoiser},
                      {"window", o.window},
                      {"exclude_flagged_s", o.exclude_flagged_s},
                      {"channel_norm_quantile", o.channel_norm_quantile},
                      {"any_channel", o.any_channel},
                      {"shift", {{"window_s", o.shift_window_s}, {"block_s", o.shift_block_s},
                                 {"ref_s", o.shift_ref_s}, {"freeze_z", o.shift_freeze_z}}},
                      {"gate", {{"min_fraction", o.min_fraction}, {"min_channels", o.min_channels}}}};
  report["config"]["observable_only"] = o.observable_only;
  report["config"]["observability_rule"] =
      "fail_slow and link_drop are observable when the job runs (no eval/checkpoint pause, no "
      "other machine's stall halting it) for >= 50% of [onset, min(end, onset + 900 s)); every "
      "other type always is (sim/observability.h)";
  report["config"]["observable_faults"] = {ObservableCounts(splits[0]),
                                           ObservableCounts(splits[1]),
                                           ObservableCounts(splits[2])};
  report["fault_observability"] = {{"val", splits[1].faults}, {"test", splits[2].faults}};
  if (progress) {
    std::fprintf(progress, "simulated %d+%d+%d jobs of %d machines x %lld s (%.1f s); "
                 "must-alarm faults train/val/test = %d/%d/%d\n", o.train_jobs, o.val_jobs,
                 o.test_jobs, o.machines, static_cast<long long>(o.seconds), Now() - t_start,
                 faults[0], faults[1], faults[2]);
  }
  // Score traces, one per (trace key, split, job).
  std::map<std::string, std::vector<std::vector<ScoreTrace>>> traces;
  std::vector<DetectorPlan> plans = Plans(o);
  const bool wants_heartbeat =
      o.gate_study || std::any_of(plans.begin(), plans.end(),
                                  [](const DetectorPlan& p) { return p.heartbeat; });
  const bool has_heartbeat_row = std::any_of(
      plans.begin(), plans.end(), [](const DetectorPlan& p) { return p.name == "heartbeat"; });
  if (wants_heartbeat && !has_heartbeat_row) {  // traced, not reported on its own
    plans.push_back({"heartbeat", "heartbeat", {{"type", "heartbeat"}}, true});
  }
  std::vector<int> order;  // Minder channel priority (CART)
  std::vector<std::string> priority_names;
  for (const DetectorPlan& p : plans) {
    if (traces.count(p.trace_key)) continue;
    LOOM_ASSIGN_OR_RETURN(auto det, MakeScoredDetector(p.spec, o.loader));
    auto& per_split = traces[p.trace_key];
    per_split.resize(3);
    const double t0 = Now();
    double calls = 0;
    const bool needs_train = p.trace_key == "minder";
    for (int s = needs_train ? 0 : 1; s < 3; ++s) {
      for (const LabelledJob& j : splits[s].jobs) {
        LOOM_ASSIGN_OR_RETURN(ScoreTrace tr, RecordTrace(*det, j.series));
        per_split[s].push_back(std::move(tr));
        calls += static_cast<double>(j.series.seconds);
      }
    }
    if (progress) {
      std::fprintf(progress, "  scored %-18s %8.0f calls in %6.1f s (%.3f ms/call)\n",
                   p.trace_key.c_str(), calls, Now() - t0, 1e3 * (Now() - t0) / calls);
    }
    if (needs_train) {
      LOOM_ASSIGN_OR_RETURN(order, TrainPriority(splits[0].jobs, per_split[0], &report));
      for (int c : order) priority_names.push_back(per_split[0][0].channels[c]);
    }
  }
  // Calibrate on validation, report on test.
  json rows = json::array();
  std::map<std::string, json> best;  // detector/mode -> row
  if (o.gate_study && traces.count("minder")) {
    Schedule sch{Mode::kStreaming,
                 GateOptions{3.5, GateSpan(o.streaming_tc_s, o.window - 1, o.min_fraction),
                             o.min_fraction, o.min_channels}};
    LOOM_ASSIGN_OR_RETURN(report["gate_study"],
                          GateStudy(o, splits[1].jobs, traces["minder"][1],
                                    traces.count("heartbeat") ? &traces["heartbeat"][1] : nullptr,
                                    order, sch, progress));
  }
  // Long-window channel weight, chosen on validation (0 = channels off), applied to every
  // per-metric Minder trace from here on.
  double long_weight = 0, shift_weight = 0;
  if (traces.count("minder")) {
    Schedule sch{Mode::kStreaming,
                 GateOptions{3.5, GateSpan(o.streaming_tc_s, o.window - 1, o.min_fraction),
                             o.min_fraction, o.min_channels}};
    sch.gate.fast_confirm_s = o.fast_confirm_s;
    sch.gate.fast_min_channels = o.fast_min_channels;
    sch.exclude_flagged_s = o.exclude_flagged_s;
    sch.any_channel = o.any_channel;
    json study = json::array();
    long_weight = ChooseLongWeight(o, splits[1].jobs, traces["minder"][1], order, sch, &study,
                                   progress);
    report["long_weight_study"] = study;
    report["config"]["long_weight_chosen"] = long_weight;
    if (long_weight > 0) {
      for (const char* key : {"minder", "minder_raw"}) {
        if (!traces.count(key)) continue;
        for (auto& split : traces[key]) split = ScaleLongChannels(split, long_weight);
      }
    }
    // Level-shift channel weight, chosen on validation given the long-window weight.
    if (o.shift_window_s > 0) {
      json shift_study = json::array();
      shift_weight = ChooseShiftWeight(o, splits[1].jobs, traces["minder"][1], order, sch,
                                       long_weight <= 0, &shift_study, progress);
      report["shift_weight_study"] = shift_study;
      report["config"]["shift_weight_chosen"] = shift_weight;
      if (shift_weight > 0) {
        for (const char* key : {"minder", "minder_raw"}) {
          if (!traces.count(key)) continue;
          for (auto& split : traces[key]) split = ScaleShiftChannels(split, shift_weight);
        }
      }
    }
  }
  if (o.gate_study && traces.count("minder")) {
    LOOM_RETURN_IF_ERROR(ReplayStudy(o, splits[0].jobs, traces["minder"][0], splits[1].jobs,
                                     traces["minder"][1], order, long_weight,
                                     &report["gate_study"], progress));
  }
  // Per-channel normalisation (fit on train) of the per-metric Minder traces.
  if (o.channel_norm_quantile > 0 && traces.count("minder")) {
    const std::vector<double> factor =
        ChannelNormFactors(splits[0].jobs, traces["minder"][0], o.channel_norm_quantile);
    for (auto& split : traces["minder"]) split = ScaleChannels(split, factor);
    report["config"]["channel_norm_factors"] = factor;
  }
  for (const DetectorPlan& p0 : plans) {
    if (p0.name == "heartbeat" && !has_heartbeat_row) continue;
    DetectorPlan p = p0;
    const bool per_metric_minder =
        p.trace_key == "minder" || p.trace_key == "minder_raw";
    if (per_metric_minder && long_weight <= 0) p.drop_long = true;
    if (per_metric_minder && long_weight > 0) p.spec["long_weight"] = long_weight;
    if (per_metric_minder && shift_weight <= 0) p.drop_shift = true;
    if (per_metric_minder && shift_weight > 0) p.spec["shift_weight"] = shift_weight;
    std::vector<std::vector<ScoreTrace>> fused;
    if (p.heartbeat) {
      LOOM_ASSIGN_OR_RETURN(fused, FuseHeartbeat(traces["heartbeat"], traces[p.trace_key],
                                                 o.heartbeat_timeout_s));
    }
    const auto& tr = p.heartbeat ? fused : traces[p.trace_key];
    const std::vector<int> ord =
        per_metric_minder ? PlanOrder(p, traces[p.trace_key][1][0].channels, order)
                          : std::vector<int>{};
    LOOM_ASSIGN_OR_RETURN(auto det, MakeScoredDetector(p.spec, o.loader));
    for (const Mode mode : {Mode::kStreaming, Mode::kBatch}) {
      Schedule sch{mode, det->gate_options(), o.batch_every_s, o.batch_lookback_s};
      // A window of w samples keeps a short excursion in the scores for w - 1 more seconds, so
      // windowed detectors need T_c + w - 1 consecutive windows to see T_c seconds of fault.
      const int64_t smear = p.spec.contains("window") ? p.spec["window"].get<int64_t>() - 1 : 0;
      sch.gate.continuity_s =
          p.gate_free ? 1
                      : GateSpan(mode == Mode::kStreaming ? o.streaming_tc_s : o.batch_tc_s, smear,
                                 o.min_fraction);
      sch.gate.min_fraction = p.gate_free ? 1.0 : o.min_fraction;
      sch.gate.min_channels = p.gate_free ? 1 : o.min_channels;
      if (mode == Mode::kStreaming) {
        sch.gate = StreamingGate(o, p, sch.gate);
        if (p.minder_gate) {
          sch.exclude_flagged_s = o.exclude_flagged_s;
          sch.any_channel = o.any_channel;
        }
      }
      sch.gate.threshold = Calibrate(splits[1].jobs, tr[1], sch, ord, o.fa_budget);
      Totals val_seen, test_seen;
      const Totals val =
          ScoreSplit(splits[1].jobs, tr[1], sch, ord, &splits[1].observable, &val_seen);
      if (p.name == "minder" && mode == Mode::kStreaming) {
        report["val_miss_diagnosis"] = DiagnoseSplit(splits[1].jobs, tr[1], sch, ord);
        JoinObservability(splits[1], &report["val_miss_diagnosis"]);
      }
      const Totals test =
          ScoreSplit(splits[2].jobs, tr[2], sch, ord, &splits[2].observable, &test_seen);
      const std::string mode_name = mode == Mode::kStreaming ? "streaming" : "batch";
      json row = RowJson(p.name, mode_name, sch, test, val, o.bootstrap);
      row["observable"] = ObservableJson(test_seen, val_seen, o.bootstrap);
      best[p.name + "/" + mode_name] = row;
      rows.push_back(row);
    }
  }
  report["detectors"] = rows;
  // Sensitivity of Minder (streaming) to T_c, each point recalibrated on validation.
  if (traces.count("minder")) {
    DetectorPlan minder_plan;
    minder_plan.drop_long = long_weight <= 0;
    minder_plan.drop_shift = shift_weight <= 0;
    const std::vector<int> minder_order =
        PlanOrder(minder_plan, traces["minder"][1][0].channels, order);
    json sweep = json::array();
    for (const int64_t tc : {1, 10, 30, 60, 120, 240}) {
      Schedule sch{Mode::kStreaming,
                   GateOptions{3.5, tc == 1 ? 1 : GateSpan(tc, o.window - 1, o.min_fraction),
                               o.min_fraction, o.min_channels}};
      sch.exclude_flagged_s = o.exclude_flagged_s;
      sch.any_channel = o.any_channel;
      sch.gate.threshold =
          Calibrate(splits[1].jobs, traces["minder"][1], sch, minder_order, o.fa_budget);
      const Totals test = ScoreSplit(splits[2].jobs, traces["minder"][2], sch, minder_order);
      sweep.push_back({{"continuity_s", tc}, {"threshold", sch.gate.threshold},
                       {"precision", test.precision()}, {"recall", test.recall()},
                       {"f1", test.f1()}, {"ttd_p50_s", Finite(test.TtdPercentile(50))},
                       {"fa_per_machine_day", test.false_alarms_per_machine_day()}});
    }
    report["tc_sweep"] = sweep;
  }
  LOOM_ASSIGN_OR_RETURN(json timing, Timing(o, priority_names, progress));
  report["timing"] = timing;
  auto get = [&](const std::string& key, const char* field) -> json {
    auto it = best.find(key);
    return it == best.end() ? json(nullptr) : it->second[field];
  };
  auto by_type = [&](const std::string& key, const char* type) -> json {
    auto it = best.find(key);
    if (it == best.end() || !it->second["ttd_p50_by_type_s"].contains(type)) return nullptr;
    return it->second["ttd_p50_by_type_s"][type];
  };
  json per_call = nullptr;
  for (const json& r : timing) {
    if (r["machines"] == 1024) per_call = r["minder_l2_ms"];
  }
  auto get_seen = [&](const std::string& key) -> json {
    auto it = best.find(key);
    return it == best.end() ? json(nullptr) : it->second["observable"]["f1"];
  };
  report["summary"] = {{"minder_f1", get("minder/streaming", "f1")},
                       {"minder_f1_observable", get_seen("minder/streaming")},
                       {"mahalanobis_f1_observable", get_seen("mahalanobis/streaming")},
                       {"mahalanobis_f1", get("mahalanobis/streaming", "f1")},
                       {"minder_batch_f1", get("minder/batch", "f1")},
                       {"false_alarms_per_machine_day", get("minder/streaming", "fa_per_machine_day")},
                       {"ttd_p50_straggler_s", by_type("minder/streaming", "fail_slow")},
                       {"ttd_p50_hang_s", by_type("minder/streaming", "stall")},
                       {"ttd_p50_crash_s", by_type("minder/streaming", "unreachable")},
                       {"minder_heartbeat_f1", get("minder+heartbeat/streaming", "f1")},
                       {"ttd_p50_hang_s_with_heartbeat", by_type("minder+heartbeat/streaming", "stall")},
                       {"ttd_p50_crash_s_with_heartbeat",
                        by_type("minder+heartbeat/streaming", "unreachable")},
                       {"per_call_ms_1024", per_call}};
  report["wall_s"] = Now() - t_start;
  return report;
}

std::string FormatEvalTable(const json& report) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-18s %-9s %9s %4s  %-19s %-19s %-19s %8s %6s %6s %4s %4s %4s %6s\n",
                "detector", "mode", "threshold", "T_c", "precision [95% CI]", "recall [95% CI]",
                "F1 [95% CI]", "FA/m-day", "TTD50", "TTD95", "TP", "FN", "FP", "valF1");
  out += line;
  auto ci = [](const json& row, const char* v, const char* c) {
    char b[64];
    std::snprintf(b, sizeof(b), "%.3f [%.2f,%.2f]", row[v].get<double>(), row[c][0].get<double>(),
                  row[c][1].get<double>());
    return std::string(b);
  };
  for (const json& r : report["detectors"]) {
    std::snprintf(line, sizeof(line), "%-18s %-9s %9.4g %4lld  %-19s %-19s %-19s %8.4f %6.0f %6.0f %4lld %4lld %4lld %6.3f\n",
                  r["detector"].get<std::string>().c_str(), r["mode"].get<std::string>().c_str(),
                  r["threshold"].get<double>(), static_cast<long long>(r["continuity_s"].get<int64_t>()),
                  ci(r, "precision", "precision_ci").c_str(), ci(r, "recall", "recall_ci").c_str(),
                  ci(r, "f1", "f1_ci").c_str(), r["fa_per_machine_day"].get<double>(),
                  r["ttd_p50_s"].get<double>(), r["ttd_p95_s"].get<double>(),
                  static_cast<long long>(r["tp"].get<int64_t>()),
                  static_cast<long long>(r["fn"].get<int64_t>()),
                  static_cast<long long>(r["fp"].get<int64_t>()), r.value("val_f1", -1.0));
    out += line;
  }
  if (report["config"].contains("observable_faults")) {
    const json& n = report["config"]["observable_faults"][2];
    std::snprintf(line, sizeof(line),
                  "\nover observable test faults only (%d of %d; rule: "
                  "config.observability_rule):\n"
                  "%-18s %-9s %-19s %-19s %-19s %4s %4s %4s %8s\n",
                  n["observable"].get<int>(), n["all"].get<int>(), "detector", "mode",
                  "precision [95% CI]", "recall [95% CI]", "F1 [95% CI]", "TP", "FN", "FP",
                  "valF1obs");
    out += line;
    for (const json& r : report["detectors"]) {
      if (!r.contains("observable")) continue;
      const json& v = r["observable"];
      std::snprintf(line, sizeof(line), "%-18s %-9s %-19s %-19s %-19s %4lld %4lld %4lld %8.3f\n",
                    r["detector"].get<std::string>().c_str(), r["mode"].get<std::string>().c_str(),
                    ci(v, "precision", "precision_ci").c_str(),
                    ci(v, "recall", "recall_ci").c_str(),
                    ci(v, "f1", "f1_ci").c_str(), static_cast<long long>(v["tp"].get<int64_t>()),
                    static_cast<long long>(v["fn"].get<int64_t>()),
                    static_cast<long long>(v["fp"].get<int64_t>()), v["val_f1"].get<double>());
      out += line;
    }
  }
  if (report.contains("gate_study")) {
    out += "\ngate study (validation only):\n";
    for (const json& r : report["gate_study"]) {
      std::snprintf(line, sizeof(line), "  %-40s thr %8.3f FA/m-day %.4f P %.3f R %.3f F1 %.3f TTD50 %.0f s\n",
                    r["variant"].get<std::string>().c_str(), r["threshold"].get<double>(),
                    r["val_fa_per_machine_day"].get<double>(), r["val_precision"].get<double>(),
                    r["val_recall"].get<double>(), r["val_f1"].get<double>(),
                    r["val_ttd_p50_s"].get<double>());
      out += line;
      if (r.contains("val_recall_by_type")) {
        std::string types = "    by type:";
        for (const auto& [type, v] : r["val_recall_by_type"].items()) {
          std::snprintf(line, sizeof(line), " %s=%.2f", type.c_str(), v.get<double>());
          types += line;
        }
        out += types + "\n";
      }
    }
  }
  if (report.contains("val_miss_diagnosis")) {
    const json& d = report["val_miss_diagnosis"];
    std::snprintf(line, sizeof(line),
                  "\nminder streaming misses on validation (threshold %.3f, need %lld s):\n",
                  d["threshold"].get<double>(), static_cast<long long>(d["need_s"].get<int64_t>()));
    out += line;
    for (const auto& [type, v] : d["by_type"].items()) {
      std::snprintf(line, sizeof(line),
                    "  %-12s missed %3d: weak %3d masked %3d flicker %3d overlapped %3d "
                    "best-score p90 (median) %.2f\n",
                    type.c_str(), v["missed"].get<int>(), v["weak"].get<int>(),
                    v["masked"].get<int>(), v["flicker"].get<int>(), v["overlapped"].get<int>(),
                    v["best_score_p90_median"].get<double>());
      out += line;
    }
  }
  out += "\nper-type recall (streaming):\n";
  for (const json& r : report["detectors"]) {
    if (r["mode"] != "streaming") continue;
    std::string s = "  " + r["detector"].get<std::string>() + ":";
    for (const auto& [type, v] : r["recall_by_type"].items()) {
      std::snprintf(line, sizeof(line), " %s=%.2f", type.c_str(), v.get<double>());
      s += line;
    }
    out += s + "\n";
  }
  if (report.contains("tc_sweep")) {
    out += "\nminder streaming vs T_c (recalibrated each):\n";
    for (const json& r : report["tc_sweep"]) {
      std::snprintf(line, sizeof(line), "  T_c=%4lld s  P=%.3f R=%.3f F1=%.3f TTD50=%.0f s FA/m-day=%.4f\n",
                    static_cast<long long>(r["continuity_s"].get<int64_t>()),
                    r["precision"].get<double>(), r["recall"].get<double>(), r["f1"].get<double>(),
                    r["ttd_p50_s"].get<double>(), r["fa_per_machine_day"].get<double>());
      out += line;
    }
  }
  out += "\nper-call processing time (median, ms) vs N:\n";
  for (const json& r : report["timing"]) {
    std::snprintf(line, sizeof(line), "  N=%5d  minder(L2) %8.3f  minder(L2^2 fast) %8.3f  mahalanobis %8.3f\n",
                  r["machines"].get<int>(), r["minder_l2_ms"].get<double>(),
                  r["minder_l2sq_ms"].get<double>(), r["mahalanobis_ms"].get<double>());
    out += line;
  }
  out += "\nsummary: " + report["summary"].dump() + "\n";
  return out;
}

}  // namespace loom::monitor
