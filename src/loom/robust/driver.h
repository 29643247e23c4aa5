// Driver: `loom robust [--observe-only] -- loom train ...`, MegaScale's robust-training driver.
// It starts one executor per machine (plus warm standbys), launches the training command as one
// rank per machine, watches heartbeats through the Policy, and on an incident walks
//   RUNNING -> SUSPECT (policy confirmation) -> SUSPENDED -> DUMP (stacks + last collective of
//   every rank) -> DIAGNOSE (self-checks vs the fleet median) -> EVICT (persistent blocklist,
//   replacement from the standby pool, or shrink if allowed) -> RESTORE (newest checkpoint whose
//   checksums verify) -> RUNNING,
// with at most `max_restarts_without_progress` restarts that make no progress before it stops
// and reports. Every decision is printed and appended, with its evidence, to
// <run_dir>/robust/decisions.jsonl. Observe-only mode logs what it would do and never acts.
//
//   DriverOptions o;  o.command = {"loom", "train", "ckpt.every=20"};  o.machines = 4;
//   LOOM_ASSIGN_OR_RETURN(DriverReport r, RunDriver(o));
//
// Thread-safety: RunDriver blocks the calling thread; one per process.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/robust/policy.h"
#include "loom/robust/straggler_score.h"

namespace loom::robust {

struct DriverOptions {
  std::vector<std::string> command;  // the training command; "loom" means `self_exe`
  std::string self_exe = "loom";     // the loom binary (executors run `self_exe robust executor`)
  int machines = 2;                  // active machines = ranks
  int standby = 1;                   // warm standbys started with them
  // Spawn executors here (one process per machine). false: wait for `machines + standby`
  // executors started elsewhere (`loom robust executor --driver HOST:PORT`, e.g. by srun).
  bool local_executors = true;
  std::string listen = "127.0.0.1:0";
  std::string run_dir;               // robust state goes to <run_dir>/robust; empty: runs/robust-<time>
  bool observe_only = false;
  bool allow_shrink = false;         // continue with fewer machines when no standby is left
  int max_restarts_without_progress = 3;
  std::chrono::milliseconds heartbeat{1000};
  double selfcheck_fraction = 0.75;  // DIAGNOSE: fail below this x the fleet median
  PolicyOptions policy;
  // Straggler trigger (NVRx score on compute time per step, below 0.75 for `alert_confirm_s`);
  // threshold 0 turns it off. With the trainer under sched=batch it evicted nobody in 60 min
  // under load and caught 10/10 quota stragglers on a quiet host (README).
  StragglerOptions straggler{.threshold = 0.75};
  // A monitor/fleet detector run every second on the heartbeats' metrics (live_fleet.h), as JSON
  // (`{"type": "minder", "threshold": 3.5}`) or a bare type name; empty: none. Its alerts go to
  // the policy (`alert_confirm_s`). Needs >= 3 machines (peer comparison).
  std::string detector;
};

struct IncidentRecord {
  Incident incident;
  std::vector<std::string> evicted;
  std::string restored_from;   // step directory ("" = fresh start)
  double detect_s = 0;         // onset -> incident
  double recover_s = -1;       // incident -> first step of the next attempt (-1: none)
};

struct DriverReport {
  int exit_code = 0;           // 0: the job finished; 1: stopped (escalated); else the job's code
  int attempts = 0;
  std::vector<IncidentRecord> incidents;
  std::vector<std::string> evicted;
  double wall_s = 0;
  std::string message;
};

Result<DriverReport> RunDriver(const DriverOptions& options);

}  // namespace loom::robust
