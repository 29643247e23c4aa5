// Scoring rules of the simulated-fleet evaluation (spec fault_detection.md §8.2): which alarms
// are true or false, which faults were found, time to detect, false alarms per machine-day, and
// precision / recall / F1 with bootstrap confidence intervals.
//
//   std::vector<AlarmEvent> alarms = MergeAlerts(per_second_alerts, /*merge_gap_s=*/60);
//   JobScore js = ScoreAlarms(job.faults, job.series.machines, job.series.seconds, alarms, {});
//   Totals tot; tot.Add(js);  PrfWithCi prf = BootstrapPrf(tot, 1000, /*seed=*/1);
//
// Rules. A must_alarm fault is detected (TP, counted once) by the first alarm naming its machine
// or a member of its group at a time in [onset, onset + detect_window_s]; TTD = that time - onset.
// An alarm is a false alarm (FP) unless it detects a fault or names a machine of a must_alarm
// fault while that fault is active (up to end + grace_s; later alarms about a still-faulty
// machine are neither). Alarms on transients (must_alarm = false) are false alarms. Faults not
// detected are FN. Precision = TP / (TP + FP), recall = TP / (TP + FN).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/monitor/fleet/fleet_series.h"

namespace loom::monitor {

struct AlarmEvent {
  int64_t t = 0;
  int machine = -1;
  std::string metric;
  double score = 0;
};

struct ScoringOptions {
  int64_t detect_window_s = 900;  // alarm must come within 15 min of onset
  int64_t grace_s = 120;          // alarms on a faulty machine shortly after the fault ends
};

struct FaultOutcome {
  std::string type;
  bool detected = false;
  bool by_group_member = false;  // detected through a group member, not the root machine
  int64_t ttd_s = -1;
};

struct JobScore {
  std::vector<FaultOutcome> faults;  // must_alarm faults only
  std::vector<AlarmEvent> false_alarms;
  double machine_days = 0;
};

// Per-second alerts (sorted by t) -> alarm events: alerts naming the same machine with gaps of
// at most merge_gap_s seconds form one event, stamped with its first second.
std::vector<AlarmEvent> MergeAlerts(const std::vector<AlarmEvent>& alerts, int64_t merge_gap_s);

JobScore ScoreAlarms(const std::vector<FaultLabel>& faults, int machines, int64_t seconds,
                     const std::vector<AlarmEvent>& alarms, const ScoringOptions& options);

// `js` restricted to its must-alarm faults k with keep[k] != 0 (e.g. the observable ones,
// sim/observability.h); false alarms and machine-days stay, so an alarm that found a dropped
// fault counts as neither. keep must have one entry per js.faults.
JobScore KeepFaults(const JobScore& js, const std::vector<uint8_t>& keep);

struct Totals {
  std::vector<FaultOutcome> faults;
  int64_t false_alarms = 0;
  double machine_days = 0;
  void Add(const JobScore& js);
  int64_t tp() const;
  double precision() const;
  double recall() const;
  double f1() const;
  double false_alarms_per_machine_day() const;
  // TTD percentile (0..100) over detected faults of `type` ("" = all); NaN if none.
  double TtdPercentile(double pct, const std::string& type = "") const;
  std::map<std::string, double> RecallByType() const;
};

struct Interval {
  double lo = 0, hi = 0;
};
struct PrfWithCi {
  double precision = 0, recall = 0, f1 = 0;
  Interval precision_ci, recall_ci, f1_ci;
};

// 95% percentile-bootstrap intervals. Units resampled with replacement: each must_alarm fault
// (TP or FN) and each false alarm.
PrfWithCi BootstrapPrf(const Totals& totals, int reps, uint64_t seed);

}  // namespace loom::monitor
