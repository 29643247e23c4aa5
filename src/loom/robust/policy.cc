#include "loom/robust/policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace loom::robust {
namespace {

std::string Fmt(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}

}  // namespace

std::string_view TriggerName(TriggerKind kind) {
  switch (kind) {
    case TriggerKind::kExit: return "exit";
    case TriggerKind::kStopped: return "stopped";
    case TriggerKind::kMissedHeartbeat: return "missed-heartbeat";
    case TriggerKind::kNoProgress: return "no-progress";
    case TriggerKind::kDetectorAlert: return "detector-alert";
  }
  return "?";
}

void Policy::StartAttempt(const std::vector<std::string>& machines, double now_s) {
  views_.clear();
  for (const auto& m : machines) views_[m].last.machine = m;
  attempt_start_s_ = now_s;
  max_step_ = -1;
  last_progress_s_ = now_s;
  step_times_.clear();
  suspects_.clear();
  reported_ = false;
}

void Policy::OnHeartbeat(const Heartbeat& hb, double now_s) {
  auto it = views_.find(hb.machine);
  if (it == views_.end()) return;  // a standby or evicted machine: not part of this attempt
  MachineView& v = it->second;
  const int64_t prev_step = v.last.step;
  v.last = hb;
  v.last_heartbeat_s = now_s;
  Clear("missed:" + hb.machine);
  if (hb.state == 'T' || hb.state == 't') {
    if (v.stopped_since_s < 0) {
      v.stopped_since_s = now_s;
      Suspect("stopped:" + hb.machine, "SUSPECT " + hb.machine + ": rank " +
                                           std::to_string(hb.rank) + " is stopped (state T)",
              now_s);
    }
  } else if (v.stopped_since_s >= 0) {
    v.stopped_since_s = -1;
    Clear("stopped:" + hb.machine);
    notes_.push_back("CLEARED " + hb.machine + ": rank runs again (state " +
                     std::string(1, hb.state) + ")");
  }
  if (hb.step > prev_step && hb.step_time_s > 0) {
    step_times_.push_back(hb.step_time_s);
    if (step_times_.size() > 256) step_times_.erase(step_times_.begin());
  }
  if (hb.step > max_step_) {
    max_step_ = hb.step;
    last_progress_s_ = now_s;
  }
}

void Policy::OnExit(const std::string& machine, int shell_code, const std::string& text,
                    double exit_at_s) {
  auto it = views_.find(machine);
  if (it == views_.end()) return;
  it->second.exited = true;
  it->second.exit_code = shell_code;
  it->second.exit_text = text;
  it->second.exit_at_s = exit_at_s;
  it->second.last.state = '-';
}

void Policy::OnAlert(const std::string& machine, const std::string& metric, double now_s) {
  auto it = views_.find(machine);
  if (it == views_.end()) return;
  MachineView& v = it->second;
  if (metric.empty()) {
    if (!v.alert_metric.empty()) notes_.push_back("CLEARED " + machine + ": detector alert");
    v.alert_metric.clear();
    v.alert_since_s = -1;
    Clear("alert:" + machine);
    return;
  }
  if (v.alert_metric.empty()) {
    v.alert_since_s = now_s;
    Suspect("alert:" + machine, "SUSPECT " + machine + ": detector alert on " + metric, now_s);
  }
  v.alert_metric = metric;
}

double Policy::StepTimeP99() const {
  if (step_times_.empty()) return 0;
  std::vector<double> s = step_times_;
  size_t k = std::min(s.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(s.size())));
  std::nth_element(s.begin(), s.begin() + static_cast<ptrdiff_t>(k), s.end());
  return s[k];
}

bool Policy::AllExitedOk() const {
  if (views_.empty()) return false;
  for (const auto& [m, v] : views_) {
    if (!v.exited || v.exit_code != 0) return false;
  }
  return true;
}

void Policy::Suspect(const std::string& key, const std::string& note, double now_s) {
  if (suspects_.emplace(key, now_s).second) notes_.push_back(note);
}

void Policy::Clear(const std::string& key) { suspects_.erase(key); }

std::vector<std::string> Policy::TakeNotes() {
  std::vector<std::string> out;
  out.swap(notes_);
  return out;
}

std::optional<Incident> Policy::Evaluate(double now_s) {
  if (reported_) return std::nullopt;
  std::optional<Incident> inc;
  const MachineView* first = nullptr;
  for (const auto& [m, v] : views_) {
    if (!v.exited || v.exit_code == 0) continue;
    const bool signal = v.exit_code > 128, first_signal = first && first->exit_code > 128;
    if (!first || (signal && !first_signal) ||
        (signal == first_signal && v.exit_at_s < first->exit_at_s)) {
      first = &v;
    }
  }
  if (first && first->exit_code <= 128 && now_s - first->exit_at_s < options_.exit_settle_s) {
    return std::nullopt;  // let a signal death that caused it arrive
  }
  if (first) {
    inc = Incident{TriggerKind::kExit, {first->last.machine},
                   "rank " + std::to_string(first->last.rank) + " " + first->exit_text, now_s,
                   first->exit_at_s};
  }
  for (const auto& [m, v] : views_) {
    if (inc) break;
    if (v.exited) continue;
    const std::string rank = "rank " + std::to_string(v.last.rank);
    if (v.stopped_since_s >= 0 && now_s - v.stopped_since_s >= options_.confirm_s) {
      inc = Incident{TriggerKind::kStopped, {m},
                     rank + " (pid " + std::to_string(v.last.pid) + ") stopped (state T)" +
                         Fmt(" for %.1f s; its last step %.0f, last collective seq %.0f",
                             now_s - v.stopped_since_s, static_cast<double>(v.last.step),
                             static_cast<double>(v.last.last_coll_seq)),
                     now_s, v.stopped_since_s};
    } else {
      const double seen = v.last_heartbeat_s >= 0 ? v.last_heartbeat_s : attempt_start_s_;
      if (now_s - seen >= options_.missed_heartbeat_s) {
        inc = Incident{TriggerKind::kMissedHeartbeat, {m},
                       Fmt("no heartbeat for %.1f s (limit %.1f s)", now_s - seen,
                           options_.missed_heartbeat_s),
                       now_s, seen};
      } else if (v.alert_since_s >= 0 && now_s - v.alert_since_s >= options_.alert_confirm_s) {
        inc = Incident{TriggerKind::kDetectorAlert, {m},
                       "detector alert on " + v.alert_metric +
                           Fmt(" held for %.1f s", now_s - v.alert_since_s),
                       now_s, v.alert_since_s};
      }
    }
  }
  if (!inc) inc = CheckNoProgress(now_s);
  if (inc) reported_ = true;
  return inc;
}

std::optional<Incident> Policy::CheckNoProgress(double now_s) {
  const double p99 = StepTimeP99();
  const double limit = max_step_ < 0 ? options_.startup_timeout_s
                                     : std::max(options_.progress_floor_s,
                                                options_.progress_factor * p99);
  if (now_s - last_progress_s_ < limit) return std::nullopt;
  // MegaScale's localisation: the rank that lags in collective sequence numbers, or that stopped
  // reporting while the others still report, is the culprit; otherwise nobody is named.
  std::string detail;
  std::string lagging;
  int64_t min_seq = INT64_MAX;
  int at_min = 0;
  for (const auto& [m, v] : views_) {
    if (v.exited) continue;
    detail += " " + m + "=" + std::to_string(v.last.last_coll_seq) +
              (v.last.last_coll_op.empty() ? "" : "(" + v.last.last_coll_op + ")");
    if (v.last.last_coll_seq < min_seq) {
      min_seq = v.last.last_coll_seq;
      lagging = m;
      at_min = 1;
    } else if (v.last.last_coll_seq == min_seq) {
      ++at_min;
    }
  }
  Incident inc{TriggerKind::kNoProgress, {},
               Fmt("no step completed for %.1f s (limit %.1f s = max(%.0f s, ", now_s - last_progress_s_,
                   limit, options_.progress_floor_s) +
                   Fmt("%.0f x p99 step time %.2f s)); last collective seq per machine:",
                       options_.progress_factor, p99) +
                   detail,
               now_s, last_progress_s_};
  if (at_min == 1 && views_.size() > 1) {
    inc.machines = {lagging};
    inc.evidence += "; " + lagging + " lags";
  } else {
    inc.evidence += "; no single rank lags";
  }
  return inc;
}

}  // namespace loom::robust
