// Policy: the robust driver's trigger logic (MegaScale's driver, with the confirmation window,
// hang localisation and evidence operators ask for). It folds heartbeats, rank exits and detector
// alerts into one view per machine and, when a trigger has held for its confirmation time,
// returns an Incident naming the machine(s) and the evidence. It never acts: the driver does
// (or only logs, in observe-only mode). Time is passed in explicitly (seconds on any monotonic
// clock), so tests run in virtual time.
//
//   Policy p(opts);
//   p.StartAttempt({"m0", "m1"}, now);
//   p.OnHeartbeat(hb, now);
//   if (auto inc = p.Evaluate(now)) driver.Handle(*inc);
//   for (auto& note : p.TakeNotes()) log(note);   // SUSPECT / CLEARED transitions
//
// Triggers: a rank exits non-zero (immediate; a signal death before an error exit, then the
// earliest); a rank is stopped (state T) for `confirm_s`;
// heartbeats missing for `missed_heartbeat_s`; no job progress for max(floor, k x p99 step
// time) (culprit: the rank that lags in collective sequence numbers or stopped reporting —
// MegaScale's trick — else none is named); a detector alert held for `alert_confirm_s`.
// Thread-safety: not thread-safe; one driver thread owns it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/robust/heartbeat.h"

namespace loom::robust {

struct PolicyOptions {
  double confirm_s = 3;             // SUSPECT -> incident when a stop held this long
  double alert_confirm_s = 10;      // ... and a detector alert (stragglers) this long
  double missed_heartbeat_s = 3;    // no heartbeat for this long: the machine is lost
  double progress_factor = 5;       // no progress for k x p99 step time (NVRx's safety factor)
  double progress_floor_s = 15;     // ... but never less than this
  double startup_timeout_s = 300;   // no first step within this long after launch
  // An error exit (not a signal) waits this long for a signal death elsewhere: a killed rank's
  // peers fail on the broken connection and may be reported first.
  double exit_settle_s = 1.5;
};

enum class TriggerKind { kExit, kStopped, kMissedHeartbeat, kNoProgress, kDetectorAlert };
std::string_view TriggerName(TriggerKind kind);

struct Incident {
  TriggerKind kind = TriggerKind::kExit;
  std::vector<std::string> machines;  // named culprits; empty when the trigger names nobody
  std::string evidence;               // one line: what was seen, for how long
  double at_s = 0;                    // when it was raised
  double onset_s = 0;                 // when the condition was first seen
};

// What the driver knows about one machine during the current attempt.
struct MachineView {
  Heartbeat last;                 // last heartbeat (machine name always set)
  double last_heartbeat_s = -1;   // -1: none this attempt
  double stopped_since_s = -1;    // first heartbeat with state T in the current stop
  bool exited = false;
  int exit_code = 0;              // shell convention (128 + signal)
  std::string exit_text;
  double exit_at_s = 0;           // when it exited (executor clock, seconds)
  std::string alert_metric;       // detector alert currently raised ("" = none)
  double alert_since_s = -1;
};

class Policy {
 public:
  explicit Policy(PolicyOptions options) : options_(options) {}

  // A new launch on `machines`; forgets the previous attempt's views.
  void StartAttempt(const std::vector<std::string>& machines, double now_s);
  void OnHeartbeat(const Heartbeat& hb, double now_s);
  // `exit_at_s`: when the executor saw the exit. When several ranks failed, the incident names
  // the one killed by a signal (the cause; peers then fail on broken connections), else the
  // earliest.
  void OnExit(const std::string& machine, int shell_code, const std::string& text,
              double exit_at_s);
  // A detector's verdict for a machine: `metric` non-empty while it alerts, empty to clear.
  void OnAlert(const std::string& machine, const std::string& metric, double now_s);

  // The first confirmed incident, if any. An incident is reported once per attempt.
  std::optional<Incident> Evaluate(double now_s);
  // Notes on state changes since the last call ("SUSPECT m2: stopped (state T)", ...).
  std::vector<std::string> TakeNotes();

  // Highest step any rank completed in this attempt (-1: none).
  int64_t max_step() const { return max_step_; }
  // True when every rank of the attempt exited with code 0.
  bool AllExitedOk() const;
  const std::map<std::string, MachineView>& views() const { return views_; }
  // p99 of the step times seen this attempt (0 when none).
  double StepTimeP99() const;

 private:
  std::optional<Incident> CheckNoProgress(double now_s);
  void Suspect(const std::string& key, const std::string& note, double now_s);
  void Clear(const std::string& key);

  PolicyOptions options_;
  std::map<std::string, MachineView> views_;
  double attempt_start_s_ = 0;
  int64_t max_step_ = -1;
  double last_progress_s_ = 0;
  std::vector<double> step_times_;
  std::map<std::string, double> suspects_;  // "kind:machine" -> since
  std::vector<std::string> notes_;
  bool reported_ = false;
};

}  // namespace loom::robust
