// `loom bench replay`: how well the trace replayer and its what-ifs predict real runs (issue 6,
// "Measurement"). Two ranks of the trainer, one per network namespace (scripts/testbed/
// netns_2host.sh: veth pair, `tc tbf` on both ends), run a grid of configurations (link rate ×
// bucket size × overlap × compression, loom/trace/evaluation/config_grid.h):
//   1. profile the base configuration with trace.steps (every other step traced, so the same
//      run also gives the tracer's overhead),
//   2. measure the unshaped veth pair's payload rate (loom's reduce-scatter and all-gather of
//      the profile's gradient size, no tbf; trace/evaluation/link_probe.h) unless
//      --unshaped-gbit gives it, then predict every configuration from the one profile with the
//      what-if replay and the two analytical baselines,
//   3. run every configuration for real, --reps times, interleaved (repetition r runs the grid
//      in an order rotated by r); the base configuration is traced in every repetition, which
//      gives the replay error on the profiled configuration,
//   4. print the predicted-vs-measured table and the summary (what-if error on the unseen
//      configurations, Kendall τ, optimizer regret, clock-offset recovery on synthetic skews)
//      and write --json.
// Optimizer regret: the predicted best is the fastest configuration of the grid as priced by the
// optimizer (optimize::PredictStrategy on each configuration's strategy,
// loom/trace/evaluation/strategy_ranking.h; without the optimize module, the what-if replay's
// own ranking); its measured time over the best measured time, minus 1.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/base/file_util.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/cli/parse_bytes.h"
#include "loom/trace/evaluation/accuracy.h"
#include "loom/trace/evaluation/clock_recovery.h"
#include "loom/trace/evaluation/config_grid.h"
#include "loom/trace/evaluation/grid_prediction.h"
#include "loom/trace/evaluation/link_probe.h"
#include "loom/trace/evaluation/profile.h"
#include "loom/trace/evaluation/strategy_ranking.h"
#include "loom/trace/replay/replayer.h"
#include "loom/train/train_config.h"

#ifndef LOOM_SOURCE_DIR
#define LOOM_SOURCE_DIR "."
#endif

namespace loom::cli {
namespace {

namespace ev = trace::evaluation;
using nlohmann::json;

constexpr int64_t kWarmupSteps = 3;  // steps 1..3 are not measured (startup, allocator)

struct ReplayBenchArgs {
  bool quick = false;
  int reps = 3;
  int steps = 0;  // 0: 14 (quick: 8)
  std::string json_out;
  std::string dir;
  std::string loom;     // default: this binary
  std::string testbed;  // default: <source>/scripts/testbed/netns_2host.sh
  std::string codecs_json;
  std::string link_model = "auto";  // --link-model (dfg::ParseLinkModel)
  double unshaped_gbit = 0;  // 0: probe the veth pair (ProbeUnshapedLink)
  // The testbed's tbf burst (netns_2host.sh: `burst 256kb`, tc's 1024-byte kb); 0: predict other
  // rates by scaling the profile's fitted links instead (ev::TargetLinkShape).
  std::string tbf_burst = "256K";
  bool keep = false;
  std::vector<std::string> train_keys;  // extra `loom train` keys (after --)
};

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string SelfPath() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("loom") : p.string();
}

// The exit status of `sh -c cmd` (128 + signal when killed); the testbed exits kExitSkip (77)
// when it cannot create network namespaces.
constexpr int kExitSkip = 77;
int RunShell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
Status TestbedUnavailable() {
  return UnavailableError("SKIP: the testbed cannot create network namespaces");
}

// One `loom train` run of a configuration in the testbed.
struct RunResult {
  std::string run_dir;
  std::vector<double> step_ms;  // per step from 1 (index 0 = step 1)
};

// Step times from metrics.jsonl (differences of elapsed_s; rank 0 writes it).
Result<std::vector<double>> ReadStepTimes(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  std::ifstream in(path);
  if (!in) return NotFoundError("no metrics.jsonl in run directory '" + run_dir + "'");
  std::vector<double> ms;
  double prev = 0;
  std::string line;
  int64_t expect = 1;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("elapsed_s") || !j.contains("step")) {
      return DataLossError(path + ": line " + std::to_string(expect) + " is not a metrics record");
    }
    if (j["step"].get<int64_t>() != expect) {
      return DataLossError(path + ": expected step " + std::to_string(expect) + ", got " +
                           j["step"].dump() + " (log.every must be 1)");
    }
    const double t = j["elapsed_s"].get<double>();
    ms.push_back((t - prev) * 1e3);
    prev = t;
    ++expect;
  }
  if (ms.empty()) return DataLossError(path + " has no steps");
  return ms;
}

class Testbed {
 public:
  Testbed(const ReplayBenchArgs& a, std::vector<std::string> common, std::string scratch)
      : a_(a), common_(std::move(common)), scratch_(std::move(scratch)) {}

  // Runs `c` (traced: every other step from kWarmupSteps on). kUnavailable with code 77 in the
  // message when namespaces cannot be created.
  Result<RunResult> Run(const ev::EvalConfig& c, const std::string& name, bool traced) {
    RunResult r;
    r.run_dir = scratch_ + "/" + name;
    std::error_code ec;
    std::filesystem::remove_all(r.run_dir, ec);
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> keys, ev::TrainKeys(c));
    std::string cmd = "exec " + ShellQuote(a_.testbed);
    if (c.rate != "unshaped") cmd += " --rate " + ShellQuote(c.rate);
    cmd += " -- " + ShellQuote(a_.loom) + " train";
    for (const std::string& k : common_) cmd += " " + ShellQuote(k);
    for (const std::string& k : keys) cmd += " " + ShellQuote(k);
    cmd += " " + ShellQuote("run_dir=" + r.run_dir);
    if (traced) {
      cmd += " " +
             ShellQuote("trace.steps=" + std::to_string(kWarmupSteps) + "-" +
                        std::to_string(steps())) +
             " trace.every=2";
    }
    const std::string log = scratch_ + "/" + name + ".log";
    cmd += " > " + ShellQuote(log) + " 2>&1";
    const int rc = RunShell(cmd);
    if (rc == kExitSkip) return TestbedUnavailable();
    if (rc != 0) {
      return InternalError("run " + name + " (" + c.Name() + ") failed with status " +
                           std::to_string(rc) + "; see " + log);
    }
    LOOM_ASSIGN_OR_RETURN(r.step_ms, ReadStepTimes(r.run_dir));
    return r;
  }

  int steps() const { return a_.steps; }

 private:
  const ReplayBenchArgs& a_;
  std::vector<std::string> common_;
  std::string scratch_;
};

// Step times of the measured steps: after the warm-up and before the last step (which also
// holds the final evaluation); `parity` 0: all, 1: odd steps only (the traced ones), 2: even
// steps only (untraced).
std::vector<double> MeasuredSteps(const std::vector<double>& step_ms, int parity) {
  std::vector<double> v;
  for (size_t i = kWarmupSteps; i + 1 < step_ms.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    if (parity == 1 && step % 2 == 0) continue;
    if (parity == 2 && step % 2 == 1) continue;
    v.push_back(step_ms[i]);
  }
  return v;
}

// Replay of a traced base run: its own measured iteration vs the replay of its own model.
struct BaseReplay {
  double measured_ms = 0, predicted_ms = 0, error = 0;
  double tracer_overhead = 0;  // median traced step / median untraced step − 1
  // Per traced step with untraced neighbours on both sides (inside the measured window):
  // traced / mean(neighbours) − 1. Pooled over runs, their median is the summary's overhead
  // (a slow drift of the host cancels; the per-run medians of 4 + 4 steps do not).
  std::vector<double> overhead_triples;
};

// See BaseReplay::overhead_triples. Steps are 1-based; traced steps are the odd ones.
std::vector<double> OverheadTriples(const std::vector<double>& step_ms) {
  std::vector<double> out;
  for (size_t i = kWarmupSteps + 1; i + 2 < step_ms.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    if (step % 2 == 0) continue;
    const double neighbours = (step_ms[i - 1] + step_ms[i + 1]) / 2;
    if (neighbours > 0) out.push_back(step_ms[i] / neighbours - 1);
  }
  return out;
}

Result<BaseReplay> ReplayBaseRun(const RunResult& run, const trace::dfg::TraceModelOptions& o) {
  LOOM_ASSIGN_OR_RETURN(ev::ProfiledRun p, ev::LoadProfile(run.run_dir + "/trace", o));
  LOOM_ASSIGN_OR_RETURN(trace::dfg::Graph g, trace::dfg::BuildGraph(p.model.spec));
  LOOM_ASSIGN_OR_RETURN(trace::replay::ReplayResult r, trace::replay::Replay(g));
  BaseReplay b;
  b.measured_ms = p.model.measured_iteration_ns / 1e6;
  b.predicted_ms = r.iteration_ns / 1e6;
  b.error = ev::RelativeError(b.predicted_ms, b.measured_ms);
  const Stats traced = Summarize(MeasuredSteps(run.step_ms, 1));
  const Stats untraced = Summarize(MeasuredSteps(run.step_ms, 2));
  b.tracer_overhead = untraced.median > 0 ? traced.median / untraced.median - 1 : 0;
  b.overhead_triples = OverheadTriples(run.step_ms);
  return b;
}

double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return Summarize(std::move(v)).median;
}

json ScoreJson(const ev::PredictorScore& s, const std::vector<ev::EvalConfig>& grid) {
  return {{"mean_error", s.errors.mean},
          {"median_error", s.errors.median},
          {"p90_error", s.errors.p90},
          {"max_error", s.errors.max},
          {"kendall_tau", s.kendall_tau},
          {"optimizer_regret", s.regret},
          {"predicted_best", grid[s.picked].Name()}};
}

// The unshaped veth pair's latency and payload rate: `loom bench collectives` (reduce-scatter and
// all-gather, loom's arm) of `small` and `bytes` (bytes = small x a power of two) between the two
// namespaces without tbf, under the scheduling policy the runs train with (the `sched` their keys
// resolve to; loom train's default is batch).
Result<ev::LinkProbe> ProbeUnshapedLink(const ReplayBenchArgs& a, const std::string& scratch,
                                        int64_t small, int64_t bytes) {
  const std::string out = scratch + "/link_probe.json", log = scratch + "/link_probe.log";
  const std::string sizes = "-b " + std::to_string(small) + " -e " + std::to_string(bytes) +
                            (bytes > small ? " -f " + std::to_string(bytes / small) : "");
  // As `loom train` resolves the user's keys (defaults, then the keys in order).
  LOOM_ASSIGN_OR_RETURN(train::TrainConfig cfg, train::ResolveTrainConfig(nullptr, a.train_keys, 2));
  const std::string sched = cfg.sched;
  const std::string cmd = "exec " + ShellQuote(a.testbed) + " -- " + ShellQuote(a.loom) +
                          " bench collectives --mpi off --ops reduce_scatter,allgather " +
                          sizes + " -n 30 -w 5 --reps 5 --sched " +
                          ShellQuote(sched) + " --json " + ShellQuote(out) + " > " +
                          ShellQuote(log) + " 2>&1";
  const int rc = RunShell(cmd);
  if (rc == kExitSkip) return TestbedUnavailable();
  if (rc != 0) {
    return InternalError("the unshaped link probe failed with status " + std::to_string(rc) +
                         "; see " + log + " (or pass --unshaped-gbit)");
  }
  return ev::ReadLinkProbe(out);
}

const char* Met(bool ok) { return ok ? "met" : "NOT met"; }

Status RunBenchReplay(ReplayBenchArgs a) {
  if (a.reps < 1) return InvalidArgumentError("--reps must be >= 1");
  if (a.steps == 0) a.steps = a.quick ? 8 : 14;
  if (a.steps < kWarmupSteps + 4) {
    return InvalidArgumentError("--steps must be >= " + std::to_string(kWarmupSteps + 4));
  }
  if (a.loom.empty()) a.loom = SelfPath();
  if (a.testbed.empty())
    a.testbed = std::string(LOOM_SOURCE_DIR) + "/scripts/testbed/netns_2host.sh";
  if (!std::filesystem::exists(a.testbed)) {
    return NotFoundError("testbed script '" + a.testbed + "' not found (pass --testbed)");
  }
  const std::vector<ev::EvalConfig> grid = ev::ReplayGrid(a.quick);
  const ev::EvalConfig base = grid[0];
  LOOM_ASSIGN_OR_RETURN(TrainBenchDir dir, MakeTrainBenchDir("replay", a.dir));
  // The default scratch directory goes on every exit path (a --dir is the user's to keep).
  struct ScratchGuard {
    std::string dir;
    ~ScratchGuard() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } guard{a.dir.empty() && !a.keep ? dir.dir : ""};
  std::vector<std::string> common = {
      "steps=" + std::to_string(a.steps), "log.every=1", "eval.every=0", "sample.tokens=0",
      "precision=fp32", "threads=1", "data.source=file", "data.path=" + dir.corpus_path,
      // ~1 MiB of fp32 gradients: enough bytes for the link's β to show in the trace at
      // 200 Mbit (the TINY model's 0.27 MiB is latency-bound there).
      "model.n_layers=2", "model.d_model=96", "model.n_heads=2", "model.context_length=64",
      "batch.global=4", "batch.micro=2"};
  for (const std::string& k : a.train_keys) common.push_back(k);
  json config = {{"quick", a.quick},
                 {"reps", a.reps},
                 {"steps", a.steps},
                 {"warmup_steps", kWarmupSteps},
                 {"configs", grid.size()},
                 {"base", base.Name()},
                 {"train_keys", common},
                 {"testbed", a.testbed},
                 {"loom", a.loom},
                 {"unshaped_gbit", a.unshaped_gbit},
                 {"tbf_burst", a.tbf_burst},
                 {"codecs_json", a.codecs_json},
                 {"link_model", a.link_model}};
  LOOM_ASSIGN_OR_RETURN(const auto link_model, trace::dfg::ParseLinkModel(a.link_model));
  double tbf_burst_bytes = 0;
  if (a.tbf_burst != "0") {
    LOOM_ASSIGN_OR_RETURN(int64_t b, ParseBytes(a.tbf_burst));
    tbf_burst_bytes = static_cast<double>(b);
  }
  PrintBenchHeader("replay", config);
  Testbed bed(a, common, dir.dir);

  // 1. Profile the base configuration.
  std::printf("# profiling the base configuration %s\n", base.Name().c_str());
  std::fflush(stdout);
  LOOM_ASSIGN_OR_RETURN(RunResult profile_run, bed.Run(base, "profile", /*traced=*/true));
  trace::dfg::TraceModelOptions mo;
  mo.split_bytes = 256 << 10;  // the grid's smallest bucket
  mo.link_model = link_model;
  LOOM_ASSIGN_OR_RETURN(ev::ProfiledRun profile,
                        ev::LoadProfile(profile_run.run_dir + "/trace", mo));
  const trace::dfg::TraceModel& model = profile.model;
  std::printf("# profile: %d buckets, %.2f MiB gradients, link %s, %s\n", model.spec.num_buckets(),
              model.spec.TotalGradBytes() / 1048576.0, model.link.ToString().c_str(),
              model.kappa.ToString().c_str());
  for (const std::string& n : model.notes) std::printf("# note: %s\n", n.c_str());
  if (!profile.alignment_note.empty()) std::printf("# note: %s\n", profile.alignment_note.c_str());

  // 2. Predict every configuration from the profile.
  ev::BandwidthModel bw;
  bw.unshaped_bits_per_s = a.unshaped_gbit * 1e9;
  bw.tbf_burst_bytes = tbf_burst_bytes;
  json probe_json = {{"assumed_gbit", a.unshaped_gbit}};
  // Ablation: the probed veth rate net of the profile's α, and that α on the veth (the mapping
  // before the two-size probe). Equal to `bw` when the veth is assumed (--unshaped-gbit).
  ev::BandwidthModel profile_alpha_bw = bw;
  if (!(a.unshaped_gbit > 0)) {
    int64_t bytes = 4096;  // the power of two at or above the gradient bytes
    while (bytes < model.spec.TotalGradBytes()) bytes *= 2;
    const int64_t small = std::max<int64_t>(4096, bytes / 16);  // a second size for α
    std::printf("# probing the unshaped veth pair (reduce-scatter + all-gather of %lld and %lld B)\n",
                static_cast<long long>(small), static_cast<long long>(bytes));
    std::fflush(stdout);
    LOOM_ASSIGN_OR_RETURN(ev::LinkProbe probe, ProbeUnshapedLink(a, dir.dir, small, bytes));
    const ev::VethLinkFit veth = ev::FitVethLink(probe, model.spec);
    bw.unshaped_bits_per_s = 8 * veth.bytes_per_s;
    bw.unshaped_alpha_ns = veth.alpha_ns;
    profile_alpha_bw.unshaped_bits_per_s = 8 * ev::ModelVethRate(probe, model.spec);
    probe_json = {{"bytes", bytes},
                  {"small_bytes", small},
                  {"goodput_MBps", probe.goodput_bytes_per_s / 1e6},
                  {"model_rate_MBps", veth.bytes_per_s / 1e6},
                  {"alpha_us", veth.alpha_ns >= 0 ? veth.alpha_ns / 1e3 : -1.0},
                  {"profile_alpha_us", model.spec.alpha_ns / 1e3},
                  {"sizes", veth.sizes}};
    for (const ev::LinkProbeOp& op : probe.all_ops) {
      const std::string key = op.bytes == bytes ? op.op : op.op + "_" + std::to_string(op.bytes);
      probe_json[key] = {{"time_us", op.time_us}, {"wire_bytes_per_rank", op.wire_bytes_per_rank}};
    }
    std::printf("# unshaped link: %.1f MB/s of payload; fitted %.1f MB/s and %.1f us per segment "
                "(the profile's link: %.1f us) (%s)\n",
                probe.goodput_bytes_per_s / 1e6, veth.bytes_per_s / 1e6,
                veth.alpha_ns >= 0 ? veth.alpha_ns / 1e3 : model.spec.alpha_ns / 1e3,
                model.spec.alpha_ns / 1e3, probe_json.dump().c_str());
  }
  bw.base_fitted_bytes_per_s = model.link.beta_identified ? 1e9 * model.link.GBps() : 0;
  profile_alpha_bw.base_fitted_bytes_per_s = bw.base_fitted_bytes_per_s;
  LOOM_ASSIGN_OR_RETURN(std::vector<ev::GridPrediction> preds,
                        ev::PredictGrid(model.spec, grid, base, bw, a.codecs_json));
  LOOM_ASSIGN_OR_RETURN(
      std::vector<ev::GridPrediction> profile_alpha_preds,
      ev::PredictGrid(model.spec, grid, base, profile_alpha_bw, a.codecs_json));
  // Ablation in the same run: the previous mapping (the profile's fits scaled to each rate, the
  // veth assumed at 10 Gbit/s), so the testbed-link model is judged on the same measurements.
  ev::BandwidthModel scaled_bw;
  scaled_bw.base_fitted_bytes_per_s = bw.base_fitted_bytes_per_s;
  LOOM_ASSIGN_OR_RETURN(std::vector<ev::GridPrediction> scaled_preds,
                        ev::PredictGrid(model.spec, grid, base, scaled_bw, a.codecs_json));
  std::string optimizer = "optimize::PredictStrategy over the grid";
  std::vector<double> strategy_ns;
  if (auto st = ev::PredictGridStrategies(model.spec, grid, base, bw, a.codecs_json); st.ok()) {
    strategy_ns = std::move(st).value();
  } else if (st.status().code() == StatusCode::kUnimplemented) {
    optimizer = "what-if replay ranks the grid (" + st.status().message() + ")";
    strategy_ns = ev::WhatIfTimes(preds);
  } else {
    return st.status();
  }
  LOOM_ASSIGN_OR_RETURN(ev::ClockRecovery clock,
                        ev::MeasureClockRecovery(profile.raw, ev::DefaultClockSkews()));

  // 3. Run every configuration for real, interleaved.
  std::vector<std::vector<double>> samples(grid.size());  // measured step times, all reps
  std::vector<BaseReplay> base_replays;
  // The tracer-overhead estimator applied to untraced runs at the base rate, where tracing
  // cannot be the cause: its spread is the estimator's noise floor (per configuration, pooled).
  std::map<size_t, std::vector<double>> placebo;
  LOOM_ASSIGN_OR_RETURN(BaseReplay first, ReplayBaseRun(profile_run, mo));
  base_replays.push_back(first);
  for (int rep = 0; rep < a.reps; ++rep) {
    for (size_t k = 0; k < grid.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(rep)) % grid.size();
      const bool traced = i == 0;
      const std::string name = "rep" + std::to_string(rep) + "-c" + std::to_string(i);
      LOOM_ASSIGN_OR_RETURN(RunResult run, bed.Run(grid[i], name, traced));
      const std::vector<double> v = MeasuredSteps(run.step_ms, traced ? 2 : 0);
      samples[i].insert(samples[i].end(), v.begin(), v.end());
      if (traced) {
        LOOM_ASSIGN_OR_RETURN(BaseReplay b, ReplayBaseRun(run, mo));
        base_replays.push_back(b);
      } else if (grid[i].rate == grid[0].rate) {
        const std::vector<double> t = OverheadTriples(run.step_ms);
        placebo[i].insert(placebo[i].end(), t.begin(), t.end());
      }
      std::printf("# rep %d/%d  %-24s median %.2f ms\n", rep + 1, a.reps, grid[i].Name().c_str(),
                  Median(v));
      std::fflush(stdout);
      if (!a.keep) {
        std::error_code ec;
        if (!traced) std::filesystem::remove_all(run.run_dir, ec);
      }
    }
  }

  // 4. Table and summary.
  std::vector<double> measured;
  json results = json::array();
  std::printf("\n%-24s %7s %10s %9s %9s %8s %9s %8s %9s %8s\n", "config", "bw x", "measured",
              "p10-p90", "what-if", "err", "sum", "err", "overlap", "err");
  for (size_t i = 0; i < grid.size(); ++i) {
    const Stats s = Summarize(samples[i]);
    measured.push_back(s.median);
    const ev::GridPrediction& p = preds[i];
    const double w = p.whatif_ns / 1e6, su = p.sum_ns / 1e6, ov = p.overlap_ns / 1e6;
    std::printf(
        "%-24s %7.3g %8.2fms %4.1f-%-4.1f %7.2fms %+7.1f%% %7.2fms %+7.1f%% %7.2fms %+7.1f%%%s\n",
        grid[i].Name().c_str(), p.bandwidth_scale, s.median, s.p10, s.p90, w,
        100 * ev::RelativeError(w, s.median), su, 100 * ev::RelativeError(su, s.median), ov,
        100 * ev::RelativeError(ov, s.median), i == 0 ? "  (base, profiled)" : "");
    results.push_back({{"config", grid[i].Name()},
                       {"rate", grid[i].rate},
                       {"bucket_mb", grid[i].bucket_mb},
                       {"overlap", grid[i].overlap},
                       {"codec", grid[i].codec},
                       {"whatif", p.whatif},
                       {"bandwidth_scale", p.bandwidth_scale},
                       {"measured_ms", s.median},
                       {"measured_p10_ms", s.p10},
                       {"measured_p90_ms", s.p90},
                       {"measured_steps", s.n},
                       {"whatif_ms", w},
                       {"whatif_scaled_fits_ms", scaled_preds[i].whatif_ns / 1e6},
                       {"whatif_profile_alpha_ms", profile_alpha_preds[i].whatif_ns / 1e6},
                       {"baseline_sum_ms", su},
                       {"baseline_overlap_ms", ov},
                       {"optimizer_ms", strategy_ns[i] / 1e6}});
  }
  std::vector<double> measured_ns;
  for (double m : measured) measured_ns.push_back(m * 1e6);
  LOOM_ASSIGN_OR_RETURN(ev::PredictorScore wi,
                        ev::ScorePredictor(ev::WhatIfTimes(preds), measured_ns, 0));
  LOOM_ASSIGN_OR_RETURN(ev::PredictorScore scaled,
                        ev::ScorePredictor(ev::WhatIfTimes(scaled_preds), measured_ns, 0));
  LOOM_ASSIGN_OR_RETURN(
      ev::PredictorScore profile_alpha,
      ev::ScorePredictor(ev::WhatIfTimes(profile_alpha_preds), measured_ns, 0));
  LOOM_ASSIGN_OR_RETURN(ev::PredictorScore sum,
                        ev::ScorePredictor(ev::SumBaselineTimes(preds), measured_ns, 0));
  LOOM_ASSIGN_OR_RETURN(ev::PredictorScore ovl,
                        ev::ScorePredictor(ev::OverlapBaselineTimes(preds), measured_ns, 0));
  LOOM_ASSIGN_OR_RETURN(size_t best, ev::ArgMin(measured_ns));
  LOOM_ASSIGN_OR_RETURN(ev::PredictorScore opt, ev::ScorePredictor(strategy_ns, measured_ns, 0));
  std::vector<double> replay_errors, overheads, triples;
  json base_runs = json::array();
  for (const BaseReplay& b : base_replays) {
    replay_errors.push_back(std::abs(b.error));
    overheads.push_back(b.tracer_overhead);
    triples.insert(triples.end(), b.overhead_triples.begin(), b.overhead_triples.end());
    base_runs.push_back({{"measured_ms", b.measured_ms},
                         {"predicted_ms", b.predicted_ms},
                         {"replay_error", b.error},
                         {"tracer_overhead", b.tracer_overhead}});
  }
  const double replay_median = Median(replay_errors);
  // Pooled neighbour-paired estimate; the median of per-run medians when no step has two
  // untraced neighbours (short runs).
  const double overhead = triples.empty() ? Median(overheads) : Median(triples);
  const double overhead_per_run_median = Median(overheads);
  std::vector<double> placebo_pooled, placebo_per_config;
  for (const auto& [i, t] : placebo) {
    if (t.empty()) continue;
    placebo_pooled.insert(placebo_pooled.end(), t.begin(), t.end());
    placebo_per_config.push_back(Median(t));
  }
  const double placebo_median = placebo_pooled.empty() ? 0.0 : Median(placebo_pooled);
  const double placebo_lo = placebo_per_config.empty()
                                ? 0
                                : *std::min_element(placebo_per_config.begin(),
                                                    placebo_per_config.end());
  const double placebo_hi = placebo_per_config.empty()
                                ? 0
                                : *std::max_element(placebo_per_config.begin(),
                                                    placebo_per_config.end());
  const double clock_us = clock.max_abs_error_ns / 1e3;

  std::printf(
      "\npredictor                     median   p90     mean    max     tau    regret  picks\n");
  auto row = [&](const char* name, const ev::PredictorScore& s) {
    std::printf("%-28s %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.3f %6.1f%%  %s\n", name,
                100 * s.errors.median, 100 * s.errors.p90, 100 * s.errors.mean, 100 * s.errors.max,
                s.kendall_tau, 100 * s.regret, grid[s.picked].Name().c_str());
  };
  row("what-if replay", wi);
  row("what-if, profile's alpha", profile_alpha);
  row("what-if, scaled fits (prev.)", scaled);
  row("baseline compute+comm", sum);
  row("baseline compute+max(0,..)", ovl);
  row("optimizer (PredictStrategy)", opt);
  std::printf("optimizer: %s\n", optimizer.c_str());
  std::printf("measured best: %s (%.2f ms)\n", grid[best].Name().c_str(), measured[best]);
  std::printf("replay error on the profiled config: median |error| %.1f %% over %zu traced runs\n",
              100 * replay_median, replay_errors.size());
  std::printf(
      "tracer overhead (each traced step vs its two untraced neighbours, %zu steps of %zu runs): "
      "%+.2f %% (median of per-run medians %+.2f %%)\n",
      triples.size(), base_replays.size(), 100 * overhead, 100 * overhead_per_run_median);
  if (!placebo_pooled.empty()) {
    std::printf(
        "tracer overhead placebo (the same estimator on %zu untraced runs' steps at %s, %zu "
        "configs): pooled %+.2f %%, per config %+.2f ... %+.2f %%: the traced estimate is %s\n",
        placebo_pooled.size(), grid[0].rate.c_str(), placebo_per_config.size(),
        100 * placebo_median, 100 * placebo_lo, 100 * placebo_hi,
        overhead >= placebo_lo && overhead <= placebo_hi ? "inside that range (noise)"
                                                         : "outside that range");
  }
  std::printf("clock-offset recovery (%zu synthetic skews, 0 to +-1 s): max error %.1f us\n",
              clock.cases.size(), clock_us);
  std::printf(
      "targets: replay <= 5%% %s; what-if median <= 10%% %s; p90 <= 20%% %s; regret <= 5%% "
      "%s; tracer <= 2%% %s; clock <= 50 us %s\n",
      Met(replay_median <= 0.05), Met(wi.errors.median <= 0.10), Met(wi.errors.p90 <= 0.20),
      Met(opt.regret <= 0.05), Met(overhead <= 0.02), Met(clock_us <= 50));

  json summary = {{"replay_median_error", replay_median},
                  {"whatif_median_error", wi.errors.median},
                  {"whatif_p90_error", wi.errors.p90},
                  {"whatif_mean_error", wi.errors.mean},
                  {"whatif_max_error", wi.errors.max},
                  {"optimizer_regret", opt.regret},
                  {"whatif_regret", wi.regret},
                  {"tracer_overhead", overhead},
                  {"tracer_overhead_steps", triples.size()},
                  {"tracer_overhead_per_run_median", overhead_per_run_median},
                  {"tracer_overhead_placebo", placebo_median},
                  {"tracer_overhead_placebo_range", {placebo_lo, placebo_hi}},
                  {"tracer_overhead_placebo_steps", placebo_pooled.size()},
                  {"kendall_tau", wi.kendall_tau},
                  {"clock_offset_max_error_us", clock_us},
                  {"predicted_best", grid[opt.picked].Name()},
                  {"measured_best", grid[best].Name()},
                  {"optimizer", optimizer},
                  {"optimizer_score", ScoreJson(opt, grid)},
                  {"whatif", ScoreJson(wi, grid)},
                  {"whatif_profile_alpha", ScoreJson(profile_alpha, grid)},
                  {"whatif_scaled_fits", ScoreJson(scaled, grid)},
                  {"baseline_sum", ScoreJson(sum, grid)},
                  {"baseline_overlap", ScoreJson(ovl, grid)}};
  json clock_cases = json::array();
  for (const ev::ClockRecoveryCase& c : clock.cases) {
    clock_cases.push_back({{"rank", c.rank},
                           {"injected_us", c.injected_ns / 1e3},
                           {"error_us", c.error_ns / 1e3},
                           {"interval_us", c.interval_ns / 1e3}});
  }
  json profile_json = {{"buckets", model.spec.num_buckets()},
                       {"gradient_bytes", model.spec.TotalGradBytes()},
                       {"link_alpha_us", model.link.alpha_ns / 1e3},
                       {"link_gbps", model.link.GBps()},
                       {"beta_identified", model.link.beta_identified},
                       {"kappa", model.kappa.kappa},
                       {"notes", model.notes}};
  if (!a.json_out.empty()) {
    json all = {{"configs", results},
                {"base_runs", base_runs},
                {"clock_recovery", clock_cases},
                {"profile", profile_json},
                {"unshaped_link", probe_json}};
    LOOM_RETURN_IF_ERROR(WriteBenchJson(a.json_out, "replay", config, summary, all));
    std::printf("wrote %s\n", a.json_out.c_str());
  }
  if (guard.dir.empty()) std::printf("runs kept in %s\n", dir.dir.c_str());
  return OkStatus();
}

}  // namespace

void RegisterBenchReplay(CLI::App& bench, CliContext* ctx) {
  auto a = std::make_shared<ReplayBenchArgs>();
  auto* cmd = bench.add_subcommand(
      "replay", "trace replay / what-if predictions vs real runs over a netns+tbf config grid");
  cmd->add_flag("--quick", a->quick, "smoke run: 4 configurations, 8 steps");
  cmd->add_option("--reps", a->reps, "real runs per configuration, interleaved (default 3)");
  cmd->add_option("--steps", a->steps, "training steps per run (default 14; quick 8)");
  cmd->add_option("--json", a->json_out, "write results and summary as JSON");
  cmd->add_option("--dir", a->dir, "scratch directory (kept; default a removed /tmp dir)");
  cmd->add_option("--loom", a->loom, "loom binary to run (default: this one)");
  cmd->add_option("--testbed", a->testbed, "two-namespace testbed script (netns_2host.sh)");
  cmd->add_option("--codecs-json", a->codecs_json, "`loom bench codecs --json` for codec costs");
  cmd->add_option("--link-model", a->link_model,
                  "profile's links: auto (token buckets when shaped; default), alpha-beta, "
                  "token-bucket");
  cmd->add_option("--unshaped-gbit", a->unshaped_gbit,
                  "veth payload rate assumed for unshaped what-ifs (default: measured by a "
                  "reduce-scatter/all-gather probe before the grid)");
  cmd->add_option("--tbf-burst", a->tbf_burst,
                  "the testbed's tbf burst: other rates are predicted on links rebuilt as "
                  "tbf(rate, burst) over the unshaped veth (default 256K, as netns_2host.sh; 0: "
                  "scale the profile's fitted links)");
  cmd->add_flag("--keep", a->keep, "keep the run directories");
  cmd->add_option("train_keys", a->train_keys, "extra `loom train` keys (after --)");
  cmd->callback([a, ctx] {
    Status s = RunBenchReplay(*a);
    if (s.ok()) {
      ctx->exit_code = 0;
      return;
    }
    std::fprintf(stderr, "loom bench replay: %s\n", s.ToString().c_str());
    if (s.code() == StatusCode::kUnavailable) {
      ctx->exit_code = 77;
    } else {
      ctx->exit_code = s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
  });
}

}  // namespace loom::cli
