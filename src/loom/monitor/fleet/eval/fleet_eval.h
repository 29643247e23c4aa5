// The simulated-fleet evaluation behind `loom monitor eval` (spec fault_detection.md §8.2):
// train / validation / test jobs from disjoint simulator seeds; Minder's metric priority (CART)
// trained on train; every detector's threshold calibrated on validation to at most `fa_budget`
// false alarms per machine-day (separately for streaming and batch mode); precision, recall, F1
// (bootstrap 95% CIs), false alarms per machine-day, time to detect and per-type recall on test
// only; per-call processing time vs fleet size.
//
//   FleetEvalOptions o = FleetEvalOptions::Quick();
//   LOOM_ASSIGN_OR_RETURN(nlohmann::json report, RunFleetEval(o, stderr));
//   std::puts(FormatEvalTable(report).c_str());
//
// test_jobs = 0 skips the test split (rows then carry validation numbers only: for tuning).
// Report keys: config (incl. observable_faults per split), priority, detectors[] (one row per
// detector and mode, with val_* fields measured on validation and "observable": the same
// alarms scored over the observable faults only), fault_observability {val, test},
// gate_study[] (when asked), timing[], tc_sweep[], summary
// {minder_f1, minder_f1_observable, mahalanobis_f1, false_alarms_per_machine_day,
// ttd_p50_straggler_s, ttd_p50_hang_s, per_call_ms_1024}. Thread-safety: single-threaded.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"
#include "loom/monitor/fleet/detect/detector.h"

namespace loom::monitor {

struct FleetEvalOptions {
  int machines = 64;                 // fleet size of the train/val/test jobs
  int64_t seconds = 3 * 3600;        // length of each job
  // Validation holds >= 100 machine-days (13 x 64 x 3 h = 104) so the 0.01 false alarms per
  // machine-day budget allows one alarm; test stays separate (own seeds).
  int train_jobs = 2, val_jobs = 13, test_jobs = 8;
  double faults_per_machine_day = 3.0;  // elevated so the test set holds ~150 faults
  int64_t max_fault_s = 900;         // fault durations up to the 15-min detection horizon
  uint64_t train_seed = 1000, val_seed = 2000, test_seed = 3000;  // job k uses seed + k
  double fa_budget = 0.01;           // false alarms per machine-day allowed on validation
  int64_t streaming_tc_s = 30;       // continuity window, streaming mode (issue: TTD <= 30 s)
  int64_t batch_tc_s = 240;          // Minder's 4-min gate, batch mode
  int64_t batch_every_s = 480, batch_lookback_s = 900;  // call every 8 min over 15 min
  // Gate relaxation applied to every gated detector (GateOptions; 1.0 = Minder's strict rule):
  // the candidate must hold for 80% of T_c (candidates of real faults flicker).
  double min_fraction = 0.8;
  int min_channels = 1;
  // w of the windowed detectors (Minder: 8). 18 s = two step periods of the simulated job; the
  // gates of windowed detectors need T_c + w - 1 candidate seconds (span stretched to
  // (T_c + w - 1) / min_fraction) so a transient shorter than T_c cannot alert; must-alarm
  // faults last at least T_c + w seconds (shorter events are the simulator's transients).
  int window = 18;
  // Minder's streaming gate and extra channels (see the README for the validation study):
  // score-adaptive confirmation (GateOptions::fast_confirm_s / fast_min_channels; 0 = the fixed
  // gate, chosen: every adaptive setting lost F1 on validation), reported on its own row
  // "minder_adaptive" with adaptive_row_*; long-window channels (MinderOptions::long_window_s;
  // 0 = off) whose weight (MinderOptions::long_weight) the evaluation picks on validation from
  // long_weights, or turns them off, by validation F1. The "minder+heartbeat" row adds a
  // heartbeat channel: a machine silent for heartbeat_timeout_s seconds is confirmed at once
  // (GateOptions::missing_confirm_s = 1).
  int64_t fast_confirm_s = 0;
  int fast_min_channels = 2;
  int64_t adaptive_row_fast_confirm_s = 20;
  int adaptive_row_min_channels = 3;
  int64_t long_window_s = 120;
  std::vector<double> long_weights = {1.0, 0.75, 0.5, 0.35, 0.25};
  double heartbeat_timeout_s = 3;
  // Level-shift channels of Minder (MinderOptions::shift, level_shift.h; 0 = off): window,
  // block and reference spans; their weight is picked on validation from shift_weights (or
  // off), by validation F1, after the long-window weight. Default off: 99 s (11 blocks of 9 s)
  // raised validation F1 0.946 -> 0.952, but on the held-out test it added 19 false alarms
  // (F1 0.909 -> 0.880; README, round 4).
  int64_t shift_window_s = 0;
  int64_t shift_block_s = 9;
  int64_t shift_ref_s = 1800;
  // Freeze a deviating machine's level-shift reference (LevelShiftOptions::freeze_z; 0 = off).
  // With shift_window_s 99 and freeze 5 (README, round 5): held-out F1 0.937 and 2 false alarms
  // (round 4 without it: 0.880, 19), vs round 3's 0.909 and 1; off by default, as the rule
  // "no more false alarms than round 3" asks.
  double shift_freeze_z = 0;
  std::vector<double> shift_weights = {1.5, 1.25, 1.0, 0.75, 0.5};
  // Concurrency exclusion of Minder's streaming rows (ReplayStreaming's exclude_flagged_s):
  // a machine the gate alerted on is left out of the candidates for this many seconds, so a
  // second fault it outscores can be confirmed. 0 = off (Minder). Default 300: validation F1
  // 0.946 (long weight re-chosen 0.35) vs 0.909 off (README). The gate study sweeps
  // exclusion_study_s on validation.
  int64_t exclude_flagged_s = 300;
  std::vector<int64_t> exclusion_study_s = {60, 300, 900};
  // Machine-level continuity for Minder's streaming rows (ReplayStreaming's any_channel): a
  // second counts for a machine when any channel names it. false = Minder's per-channel rule.
  bool any_channel = false;
  // Per-channel score normalisation of Minder's per-metric rows (0 = off): each channel's
  // scores are divided by their q-quantile over fault-free seconds of the training jobs, so
  // the one threshold stands for the same healthy-noise level on every channel. The gate
  // study sweeps channel_norm_study (x exclusion_study_s) on validation.
  double channel_norm_quantile = 0;
  std::vector<double> channel_norm_study = {0.99, 0.999, 0.9999};
  std::vector<double> min_fraction_study = {0.6, 0.7, 0.9, 1.0};  // gate study: min_fraction
  // Shortest must-alarm fault of the simulated jobs; 0 = T_c + window. Fix it (e.g. 48) to
  // compare windows on the same jobs; it must be >= T_c + window.
  int64_t min_fault_s = 0;
  // Leave out of every split the must-alarm faults that no detector can see (sim/observability.h:
  // fail_slow / link_drop while the job runs < 50% of the detection window). false = the
  // simulator's full fault set (the headline); every report also scores the observable subset.
  bool observable_only = false;
  // Validation-only sweep of the gate settings (report["gate_study"]; test is not touched).
  bool gate_study = false;
  std::vector<int> timing_machines = {16, 64, 256, 1024};
  int64_t timing_seconds = 900;      // job length for the timing runs
  int timing_calls = 20;             // Evaluate() calls timed per N (median reported)
  int bootstrap = 1000;
  std::vector<std::string> detectors;  // names to run (empty = all), see DetectorNames()
  std::string denoiser = "moving_median";  // Minder's denoiser; "lstm_vae" needs a loader
  std::string model_dir;
  DenoiserLoader loader;  // default: LstmVaeLoader()
  static FleetEvalOptions Quick();   // < 60 s on one core: 32 machines, 2 h, 2/2/2 jobs
};

// Loads "lstm_vae" denoisers with fleet/denoise's LoadLstmVae (MODEL_DIR/<metric>.json).
DenoiserLoader LstmVaeLoader();

// Detector names of the evaluation, in table order.
const std::vector<std::string>& DetectorNames();

Result<nlohmann::json> RunFleetEval(const FleetEvalOptions& options, std::FILE* progress);
std::string FormatEvalTable(const nlohmann::json& report);

}  // namespace loom::monitor
