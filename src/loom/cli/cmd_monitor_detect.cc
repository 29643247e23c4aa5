// `loom monitor detect` and `loom monitor eval`: run one faulty-machine detector over a saved job,
// and the simulated-fleet evaluation of Minder against every baseline.
//
//   loom monitor simulate --machines 64 --hours 4 --seed 7 --out /tmp/job7
//   loom monitor detect --job /tmp/job7 --detector minder [--mode streaming|batch]
//   loom monitor eval --quick --json /tmp/eval.json
//
// detect prints one line per alarm (time, machine, metric, score) and, when the job has fault
// labels, its TP/FN/FP under the evaluation's scoring rules. Exit codes: 0 ok, 1 failure (bad job
// directory, detector error), 2 bad flags.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/cli/commands.h"
#include "loom/monitor/fleet/detect/detector.h"
#include "loom/monitor/fleet/eval/eval_report_html.h"
#include "loom/monitor/fleet/eval/fleet_eval.h"
#include "loom/monitor/fleet/eval/score_trace.h"
#include "loom/monitor/fleet/eval/scoring.h"
#include "loom/monitor/fleet/sim/fleet_io.h"

namespace loom::cli {
namespace {

struct DetectArgs {
  std::string job;
  std::string detector = "minder";
  std::string mode = "streaming";
  double threshold = NAN;
  int64_t continuity_s = -1;
  std::string vae_dir;
  std::string json;
};

// A detector name ("minder", "mahalanobis", ...) or a JSON spec ("{"type": ...}").
Result<nlohmann::json> DetectorSpec(const DetectArgs& a) {
  nlohmann::json spec;
  if (!a.detector.empty() && a.detector[0] == '{') {
    spec = nlohmann::json::parse(a.detector, nullptr, /*allow_exceptions=*/false);
    if (spec.is_discarded()) return InvalidArgumentError("--detector: invalid JSON");
  } else if (a.detector == "minder_raw") {
    spec = {{"type", "minder"}, {"denoiser", "identity"}};
  } else if (a.detector == "minder_integrated") {
    spec = {{"type", "minder"}, {"integrated", true}};
  } else if (a.detector == "minder_nocont") {
    spec = {{"type", "minder"}, {"continuity_s", 1}};
  } else {
    spec = {{"type", a.detector}};
  }
  if (!a.vae_dir.empty()) {
    spec["denoiser"] = "lstm_vae";
    spec["model_dir"] = a.vae_dir;
  }
  if (!std::isnan(a.threshold)) spec["threshold"] = a.threshold;
  if (a.continuity_s >= 0) {
    spec["continuity_s"] = a.continuity_s;
  } else if (a.mode == "batch" && spec.value("type", "") != "heartbeat" &&
             !spec.contains("continuity_s")) {
    spec["continuity_s"] = 240;  // Minder's 4-min gate
  }
  return spec;
}

int RunDetect(const DetectArgs& a) {
  auto fail = [](const Status& s, int code) {
    std::fprintf(stderr, "loom monitor detect: %s\n", s.ToString().c_str());
    return code;
  };
  if (a.mode != "streaming" && a.mode != "batch") {
    return fail(InvalidArgumentError("--mode must be streaming or batch"), kExitUsage);
  }
  Result<nlohmann::json> spec = DetectorSpec(a);
  if (!spec.ok()) return fail(spec.status(), kExitUsage);
  auto det = monitor::MakeScoredDetector(*spec, monitor::LstmVaeLoader());
  if (!det.ok()) return fail(det.status(), kExitUsage);
  Result<monitor::LabelledJob> job = monitor::LoadJob(a.job);
  if (!job.ok()) return fail(job.status(), kExitFailure);
  const monitor::FleetSeries& s = job->series;
  std::printf("# job %s: %d machines x %lld s, %zu metrics; detector %s, mode %s, spec %s\n",
              a.job.c_str(), s.machines, static_cast<long long>(s.seconds), s.metric_names.size(),
              (*det)->name().c_str(), a.mode.c_str(), spec->dump().c_str());
  std::vector<monitor::AlarmEvent> alarms;
  if (a.mode == "streaming") {
    std::vector<monitor::AlarmEvent> per_second;
    for (int64_t t = 0; t < s.seconds; ++t) {
      Result<monitor::Verdict> v = (*det)->Evaluate(s, t);
      if (!v.ok()) return fail(v.status(), kExitFailure);
      if (v->alert) {
        per_second.push_back({t, v->machine, v->metric + (v->missing ? "(missing)" : ""),
                              v->score});
      }
    }
    alarms = monitor::MergeAlerts(per_second, 60);
  } else {
    Result<monitor::ScoreTrace> tr = monitor::RecordTrace(**det, s);
    if (!tr.ok()) return fail(tr.status(), kExitFailure);
    alarms = monitor::ReplayBatch(*tr, (*det)->gate_options(), {}, 480, 900);
  }
  std::printf("%10s %8s %-22s %10s\n", "time_s", "machine", "metric", "score");
  nlohmann::json out = nlohmann::json::array();
  for (const monitor::AlarmEvent& e : alarms) {
    std::printf("%10lld %8d %-22s %10.3f\n", static_cast<long long>(e.t), e.machine,
                e.metric.c_str(), e.score);
    out.push_back({{"t", e.t}, {"machine", e.machine}, {"metric", e.metric}, {"score", e.score}});
  }
  nlohmann::json report = {{"job", a.job}, {"detector", (*det)->name()}, {"mode", a.mode},
                           {"alarms", out}};
  if (!job->faults.empty()) {
    const monitor::JobScore js =
        monitor::ScoreAlarms(job->faults, s.machines, s.seconds, alarms, {});
    monitor::Totals tot;
    tot.Add(js);
    std::printf("# vs labels: %zu must-alarm faults, TP %lld, FN %lld, FP %zu (%.3f per "
                "machine-day), TTD p50 %.0f s\n",
                js.faults.size(), static_cast<long long>(tot.tp()),
                static_cast<long long>(js.faults.size() - tot.tp()), js.false_alarms.size(),
                tot.false_alarms_per_machine_day(), tot.TtdPercentile(50));
    report["tp"] = tot.tp();
    report["fp"] = js.false_alarms.size();
    report["faults"] = js.faults.size();
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << report.dump(2) << "\n";
    if (!f) return fail(UnavailableError("cannot write " + a.json), kExitFailure);
  }
  return 0;
}

struct EvalArgs {
  bool quick = false;
  std::string json;
  std::string html;
  int machines = 0;
  double hours = 0;
  std::vector<int> jobs;
  std::vector<std::string> detectors;
  std::vector<int> timing_machines;
  std::string vae_dir;
  double fa_budget = 0.01;
  int64_t streaming_tc_s = 30;
  int64_t max_fault_s = 900;
  double min_fraction = -1;
  int min_channels = 0;
  int window = 0;
  int64_t fast_confirm_s = -1;
  int fast_min_channels = 0;
  int64_t long_window_s = -1;
  int64_t shift_window_s = -1;
  int64_t shift_ref_s = -1;
  double shift_freeze_z = -1;
  bool observable_only = false;
  double heartbeat_timeout_s = -1;
  bool gate_study = false;
  int64_t exclude_flagged_s = -1;
  int64_t min_fault_s = 0;
  double channel_norm_q = -1;
  bool any_channel = false;
};

int RunEval(const EvalArgs& a) {
  monitor::FleetEvalOptions o = a.quick ? monitor::FleetEvalOptions::Quick()
                                        : monitor::FleetEvalOptions{};
  if (a.machines > 0) o.machines = a.machines;
  if (a.hours > 0) o.seconds = static_cast<int64_t>(a.hours * 3600);
  if (!a.jobs.empty()) {
    if (a.jobs.size() != 3) {
      std::fprintf(stderr, "loom monitor eval: --jobs takes train,val,test counts\n");
      return kExitUsage;
    }
    o.train_jobs = a.jobs[0];
    o.val_jobs = a.jobs[1];
    o.test_jobs = a.jobs[2];
  }
  if (!a.timing_machines.empty()) o.timing_machines = a.timing_machines;
  o.detectors = a.detectors;
  o.fa_budget = a.fa_budget;
  o.streaming_tc_s = a.streaming_tc_s;
  o.max_fault_s = a.max_fault_s;
  if (a.min_fraction > 0) o.min_fraction = a.min_fraction;
  if (a.min_channels > 0) o.min_channels = a.min_channels;
  if (a.window > 0) o.window = a.window;
  if (a.fast_confirm_s >= 0) o.fast_confirm_s = a.fast_confirm_s;
  if (a.fast_min_channels > 0) o.fast_min_channels = a.fast_min_channels;
  if (a.long_window_s >= 0) o.long_window_s = a.long_window_s;
  if (a.shift_window_s >= 0) o.shift_window_s = a.shift_window_s;
  if (a.shift_ref_s >= 0) o.shift_ref_s = a.shift_ref_s;
  if (a.shift_freeze_z >= 0) o.shift_freeze_z = a.shift_freeze_z;
  o.observable_only = a.observable_only;
  if (a.heartbeat_timeout_s > 0) o.heartbeat_timeout_s = a.heartbeat_timeout_s;
  o.gate_study = a.gate_study;
  if (a.exclude_flagged_s >= 0) o.exclude_flagged_s = a.exclude_flagged_s;
  if (a.min_fault_s > 0) o.min_fault_s = a.min_fault_s;
  if (a.channel_norm_q >= 0) o.channel_norm_quantile = a.channel_norm_q;
  if (a.any_channel) o.any_channel = true;
  if (!a.vae_dir.empty()) {
    o.denoiser = "lstm_vae";
    o.model_dir = a.vae_dir;
  }
  Result<nlohmann::json> report = monitor::RunFleetEval(o, stderr);
  if (!report.ok()) {
    std::fprintf(stderr, "loom monitor eval: %s\n", report.status().ToString().c_str());
    return report.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  std::printf("%s", monitor::FormatEvalTable(*report).c_str());
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << report->dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "loom monitor eval: cannot write %s\n", a.json.c_str());
      return kExitFailure;
    }
  }
  // After the JSON: a failing page must not cost the (long) evaluation's numbers.
  if (!a.html.empty()) {
    Status st = monitor::WriteEvalReportHtml(*report, a.html);
    if (!st.ok()) {
      std::fprintf(stderr, "loom monitor eval: %s\n", st.ToString().c_str());
      return kExitFailure;
    }
    std::printf("report: %s\n", a.html.c_str());
  }
  return 0;
}

}  // namespace

void RegisterMonitorDetect(CLI::App& monitor, CliContext* ctx) {
  auto da = std::make_shared<DetectArgs>();
  CLI::App* d = monitor.add_subcommand("detect", "run a faulty-machine detector over a saved job");
  d->add_option("--job", da->job, "job directory (loom monitor simulate --out)")->required();
  d->add_option("--detector", da->detector,
                "minder, minder_raw, minder_integrated, minder_nocont, mahalanobis, peer_z, "
                "iforest, nvrx, bocd, heartbeat, or a JSON spec {\"type\": ...}");
  d->add_option("--mode", da->mode, "streaming (every second) or batch (every 8 min over 15 min)");
  d->add_option("--threshold", da->threshold, "candidate threshold (detector default if unset)");
  d->add_option("--continuity-s", da->continuity_s,
                "continuity window T_c in seconds (default 30 streaming, 240 batch)");
  d->add_option("--vae-dir", da->vae_dir, "use LSTM-VAE denoisers from this directory");
  d->add_option("--json", da->json, "write the alarms as JSON");
  d->callback([da, ctx] { ctx->exit_code = RunDetect(*da); });

  auto ea = std::make_shared<EvalArgs>();
  CLI::App* e = monitor.add_subcommand(
      "eval", "simulated-fleet evaluation: Minder, ablations and baselines (P/R/F1, FA, TTD)");
  e->add_flag("--quick", ea->quick, "small smoke run (< 60 s on one core)");
  e->add_option("--json", ea->json, "write the full report as JSON");
  e->add_option("--html", ea->html,
                "write the report as one HTML page with charts (also: loom monitor report)");
  e->add_option("--machines", ea->machines, "machines per simulated job (default 64; quick 32)");
  e->add_option("--hours", ea->hours, "hours per simulated job (default 3; quick 2)");
  e->add_option("--jobs", ea->jobs, "train,val,test job counts (default 2,13,8; quick 2,2,2)")
      ->delimiter(',');
  e->add_option("--detectors", ea->detectors, "subset of detectors to run")->delimiter(',');
  e->add_option("--timing-machines", ea->timing_machines,
                "fleet sizes for the per-call timing (default 16,64,256,1024)")
      ->delimiter(',');
  e->add_option("--vae-dir", ea->vae_dir, "Minder uses the LSTM-VAE denoisers in this directory");
  e->add_option("--fa-budget", ea->fa_budget, "false alarms per machine-day allowed on validation");
  e->add_option("--streaming-tc-s", ea->streaming_tc_s, "continuity window in streaming mode");
  e->add_option("--max-fault-s", ea->max_fault_s,
                "longest simulated fault (default 900 = the 15-min detection horizon)");
  e->add_option("--min-fraction", ea->min_fraction,
                "gate: fraction of T_c the candidate must hold (default 0.8; 1 = Minder's strict rule)");
  e->add_option("--min-channels", ea->min_channels,
                "gate: metrics that must name the same machine (1 = Minder)");
  e->add_option("--fast-confirm-s", ea->fast_confirm_s,
                "Minder's score-adaptive gate: fewest seconds to confirm "
                "(default 0 = fixed gate)");
  e->add_option("--fast-min-channels", ea->fast_min_channels,
                "channels that must name the machine for the fast path (default 2)");
  e->add_option("--long-window-s", ea->long_window_s,
                "Minder's long-window channels, seconds (0 = off; default 120; their "
                "weight is picked on validation)");
  e->add_option("--shift-window-s", ea->shift_window_s,
                "Minder's level-shift channels, seconds (default 0 = off; 99 was measured; "
                "their weight is picked on validation)");
  e->add_option("--shift-ref-s", ea->shift_ref_s,
                "reference span of the level-shift channels, seconds (default 1800)");
  e->add_option("--shift-freeze-z", ea->shift_freeze_z,
                "level-shift channels: keep a machine's reference while its |z| is >= this "
                "(default 0 = off)");
  e->add_flag("--observable-only", ea->observable_only,
              "simulate without the fail_slow / link_drop faults that run < 50% of their "
              "window (halted or paused job); default: all faults, observable ones also "
              "scored apart");
  e->add_option("--heartbeat-timeout-s", ea->heartbeat_timeout_s,
                "minder+heartbeat: seconds without data that confirm a crash (default 3)");
  e->add_flag("--gate-study", ea->gate_study,
              "also sweep the gate settings on validation (use --jobs N,M,0 to leave test alone)");
  e->add_option("--window", ea->window, "window length w of the windowed detectors (default 18; Minder: 8)");
  e->add_option("--exclude-flagged-s", ea->exclude_flagged_s,
                "Minder streaming: seconds a machine the gate alerted on is left out of the "
                "candidates (concurrency exclusion; default 300; 0 = off = Minder)");
  e->add_flag("--any-channel", ea->any_channel,
              "Minder streaming: machine-level continuity (a second counts when any channel "
              "names the machine) instead of per-channel");
  e->add_option("--channel-norm-q", ea->channel_norm_q,
                "Minder: divide each channel's scores by their q-quantile over fault-free "
                "training seconds (0 = off)");
  e->add_option("--min-fault-s", ea->min_fault_s,
                "shortest must-alarm simulated fault (default T_c + window; fix it to compare "
                "windows on the same jobs)");
  e->callback([ea, ctx] { ctx->exit_code = RunEval(*ea); });
}

}  // namespace loom::cli
