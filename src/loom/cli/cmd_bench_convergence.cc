// `loom bench convergence`: does compressed communication change what the model learns?
//
// Trains the same model on the same data with each compression arm, for several seeds, on N
// ranks, and compares each run's final validation loss with the uncompressed run of the same
// seed. Pairing by seed (same initial weights, same batches) leaves compression as the only
// difference, so the paired delta is far less noisy than comparing means; the fp32 seed-to-seed
// spread is printed beside it as the scale of "noise". Runs are interleaved (seed-major) and
// each arm's mean train-loss curve goes into an SVG chart.

#include <cmath>
#include <cstdio>
#include <map>

#include "loom/base/clock.h"
#include "loom/base/file_util.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/cli/run_metrics.h"
#include "loom/comm/launcher.h"
#include "loom/base/svg_chart.h"
#include "loom/train/train_compression.h"
#include "loom/train/train_config.h"

namespace loom::cli {
namespace {

struct ConvergenceArgs {
  std::string arms = "all";
  int seeds = 3;
  int64_t steps = 150;
  int nproc = 2;
  std::string work_dir;
  std::string json;
  std::string svg;
  std::vector<std::string> overrides;
};

struct Arm {
  const char* name;
  const char* what;
  std::vector<std::string> overrides;
};

// The arms of issue #3's convergence table that loom can run today. With one rank per node (the
// default here), SDP4Bit's two-level 8/4 gradient scheme reduces to its 4-bit inter-node stage,
// so TLq-HS is int4 + Hadamard.
const std::vector<Arm>& Catalogue() {
  static const std::vector<Arm> arms = {
      {"fp32", "uncompressed collectives", {}},
      {"fp16", "gradients fp16", {"compress.grad=fp16"}},
      {"int8", "gradients int8, groups of 128", {"compress.grad=int8:g128"}},
      {"ulq4", "gradients int4 (ULq)", {"compress.grad=int4:g128"}},
      {"tlq_hs4", "gradients int4 + Hadamard (TLq-HS)", {"compress.grad=int4:g128:hadamard"}},
      {"qw4", "weights int4 (qW)", {"compress.weights=int4:g2048"}},
      {"qwd4", "weight differences int4 (qWD)", {"compress.weights=qwd4:g2048"}},
      {"sdp4bit", "TLq-HS gradients + qWD weights",
       {"compress.grad=int4:g128:hadamard", "compress.weights=qwd4:g2048"}},
      {"int2_nearest", "gradients int2, nearest (biased)", {"compress.grad=int2:g128:nearest"}},
      {"int2_nearest_ef", "int2 nearest + error feedback",
       {"compress.grad=int2:g128:nearest", "compress.error_feedback=true"}},
      {"sign", "gradients 1-bit sign, scale mean|x|", {"compress.grad=sign:g128"}},
      {"sign_ef", "sign + error feedback",
       {"compress.grad=sign:g128", "compress.error_feedback=true"}},
      {"topk1", "gradients top-1%", {"compress.grad=topk:0.01"}},
      {"topk1_ef", "top-1% + error feedback",
       {"compress.grad=topk:0.01", "compress.error_feedback=true"}},
      {"powersgd1", "PowerSGD rank 1", {"compress.grad=powersgd:r1"}},
      {"powersgd4", "PowerSGD rank 4", {"compress.grad=powersgd:r4"}},
  };
  return arms;
}

// Small enough for 30 runs in minutes on 2 cores; every key can be overridden.
const std::vector<std::string> kModelDefaults = {
    "model.n_layers=4", "model.d_model=256", "model.n_heads=4", "model.context_length=128",
    "batch.global=16", "batch.micro=8"};

struct MeanStd {
  double mean = 0;
  double std = 0;  // sample standard deviation (n - 1)
};

MeanStd Moments(const std::vector<double>& v) {
  MeanStd m;
  if (v.empty()) return m;
  for (double x : v) m.mean += x / v.size();
  if (v.size() > 1) {
    for (double x : v) m.std += (x - m.mean) * (x - m.mean) / (v.size() - 1);
    m.std = std::sqrt(m.std);
  }
  return m;
}

Result<std::vector<const Arm*>> SelectArms(const std::string& list) {
  std::vector<const Arm*> out;
  if (list == "all") {
    for (const Arm& a : Catalogue()) out.push_back(&a);
    return out;
  }
  std::vector<std::string> names = Split(list);
  if (std::find(names.begin(), names.end(), "fp32") == names.end()) {
    names.insert(names.begin(), "fp32");  // the reference every delta is taken against
  }
  for (const std::string& n : names) {
    const Arm* found = nullptr;
    for (const Arm& a : Catalogue()) {
      if (n == a.name) found = &a;
    }
    if (found == nullptr) {
      std::string known;
      for (const Arm& a : Catalogue()) known += (known.empty() ? "" : ", ") + std::string(a.name);
      return InvalidArgumentError("unknown arm '" + n + "' (known: " + known + ")");
    }
    out.push_back(found);
  }
  return out;
}

// Bits per element on the wire of the arm's gradient and weight codecs (32 when uncompressed:
// gradients are reduced in fp32; the uncompressed parameter gather is bf16 under bf16 compute).
std::pair<double, double> ArmBits(const std::vector<std::string>& overrides, int nproc) {
  auto cfg = train::ResolveTrainConfig(nullptr, overrides, nproc);
  if (!cfg.ok()) return {32, 32};
  auto tc = train::TrainCompression::FromConfig(cfg->compress);
  if (!tc.ok()) return {32, 32};
  const int64_t n = 1 << 20;
  return {tc->grad ? tc->grad->BitsPerElement(n) : 32.0,
          tc->weights ? tc->weights->BitsPerElement(n) : 32.0};
}

int Run(const ConvergenceArgs& a) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench convergence: %s\n", s.ToString().c_str());
    return kExitFailure;
  };
  auto arms = SelectArms(a.arms);
  if (!arms.ok()) return fail(arms.status());
  std::vector<std::string> base = kModelDefaults;
  base.insert(base.end(), a.overrides.begin(), a.overrides.end());
  for (const Arm* arm : *arms) {  // every arm's settings must resolve before anything runs
    std::vector<std::string> o = base;
    o.insert(o.end(), arm->overrides.begin(), arm->overrides.end());
    if (auto c = train::ResolveTrainConfig(nullptr, o, a.nproc); !c.ok()) {
      return fail(c.status().WithContext(std::string("arm ") + arm->name));
    }
  }
  auto bench_dir = MakeTrainBenchDir("convergence", a.work_dir);
  if (!bench_dir.ok()) return fail(bench_dir.status());
  const std::string& work = bench_dir->dir;
  const std::string& corpus_path = bench_dir->corpus_path;

  nlohmann::json config = {{"arms", a.arms}, {"seeds", a.seeds}, {"steps", a.steps},
                           {"nproc", a.nproc}, {"overrides", base}, {"work_dir", work},
                           {"metric", "final validation loss (eval.batches=16), paired by seed"}};
  PrintBenchHeader("convergence", config);

  std::map<std::string, std::vector<double>> final_eval;            // arm -> per seed
  std::map<std::string, std::map<int64_t, double>> curve;           // arm -> step -> mean loss
  const int total = static_cast<int>(arms->size()) * a.seeds;
  int done = 0;
  for (int seed = 1; seed <= a.seeds; ++seed) {
    for (const Arm* arm : *arms) {
      const std::string dir = work + "/" + arm->name + "/seed" + std::to_string(seed);
      if (Status s = MakeDirs(work + "/" + arm->name); !s.ok()) return fail(s);
      comm::LaunchOptions lo;
      lo.nproc = a.nproc;
      lo.env = {{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}};
      lo.argv = {SelfExe(), "train", "seed=" + std::to_string(seed),
                 "steps=" + std::to_string(a.steps), "threads=1", "data.source=file",
                 "data.path=" + corpus_path, "run_dir=" + dir, "log.every=5",
                 "eval.every=" + std::to_string(a.steps), "eval.batches=16", "sample.tokens=0"};
      lo.argv.insert(lo.argv.end(), base.begin(), base.end());
      lo.argv.insert(lo.argv.end(), arm->overrides.begin(), arm->overrides.end());
      Stopwatch sw;
      if (Status s = RunArm(arm->name, lo, dir + ".log"); !s.ok()) return fail(s);
      auto m = ReadRunMetrics(dir + "/metrics.jsonl");
      if (!m.ok()) return fail(m.status());
      if (m->eval_loss.empty()) return fail(DataLossError(dir + ": no validation loss logged"));
      final_eval[arm->name].push_back(m->eval_loss.rbegin()->second);
      for (auto [step, loss] : m->loss) curve[arm->name][step] += loss / a.seeds;
      std::printf("[%d/%d] %-16s seed %d: final eval loss %.4f (%.0f s)\n", ++done, total,
                  arm->name, seed, final_eval[arm->name].back(), sw.Seconds());
      std::fflush(stdout);
    }
  }

  const MeanStd ref = Moments(final_eval["fp32"]);
  std::printf("\nfinal validation loss after %lld steps, %d seeds, %d ranks; delta = arm - fp32 "
              "of the same seed\n", static_cast<long long>(a.steps), a.seeds, a.nproc);
  std::printf("%-16s %-38s %9s %9s %19s %10s %10s\n", "arm", "what", "grad bits", "wt bits",
              "eval loss", "delta", "delta std");
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json deltas = nlohmann::json::object();
  for (const Arm* arm : *arms) {
    std::vector<double> d;
    for (int k = 0; k < a.seeds; ++k) d.push_back(final_eval[arm->name][k] - final_eval["fp32"][k]);
    const MeanStd e = Moments(final_eval[arm->name]), dm = Moments(d);
    std::vector<std::string> o = base;
    o.insert(o.end(), arm->overrides.begin(), arm->overrides.end());
    auto [gbits, wbits] = ArmBits(o, a.nproc);
    std::printf("%-16s %-38s %9.2f %9.2f %10.4f ± %.4f %+10.4f %10.4f\n", arm->name, arm->what,
                gbits, wbits, e.mean, e.std, dm.mean, dm.std);
    deltas[arm->name] = dm.mean;
    results.push_back({{"arm", arm->name}, {"what", arm->what}, {"overrides", arm->overrides},
                       {"grad_bits", gbits}, {"weight_bits", wbits},
                       {"final_eval_loss", final_eval[arm->name]},
                       {"final_eval_loss_mean", e.mean}, {"final_eval_loss_std", e.std},
                       {"delta_vs_fp32_mean", dm.mean}, {"delta_vs_fp32_std", dm.std},
                       {"train_loss_curve_mean", curve[arm->name]}});
  }
  nlohmann::json summary = {{"fp32_seed_std", ref.std}, {"delta_vs_fp32", deltas}};
  std::printf("\nfp32 seed-to-seed std of the final loss: %.4f\n", ref.std);
  if (deltas.contains("sdp4bit") && a.seeds > 1) {
    const double d = deltas["sdp4bit"];
    summary["sdp4bit_delta"] = d;
    summary["sdp4bit_within_fp32_std"] = std::fabs(d) <= ref.std;
    std::printf("SDP4Bit (qWD + TLq-HS) delta %+.4f: %s the fp32 seed-to-seed std\n", d,
                std::fabs(d) <= ref.std ? "within" : "OUTSIDE");
  }
  // The orderings the papers report; each is checked only when both arms ran.
  for (auto [key, worse, better] :
       {std::tuple{"qw_worse_than_qwd", "qw4", "qwd4"},
        std::tuple{"ulq_worse_than_tlq_hs", "ulq4", "tlq_hs4"},
        std::tuple{"no_ef_worse_than_ef", "int2_nearest", "int2_nearest_ef"},
        std::tuple{"sign_no_ef_worse_than_ef", "sign", "sign_ef"},
        std::tuple{"topk_no_ef_worse_than_ef", "topk1", "topk1_ef"},
        std::tuple{"powersgd_r1_worse_than_r4", "powersgd1", "powersgd4"}}) {
    if (!deltas.contains(worse) || !deltas.contains(better)) continue;
    const bool holds = deltas[worse].get<double>() > deltas[better].get<double>();
    summary[key] = holds;
    std::printf("%-24s %s (%+.4f vs %+.4f)\n", key, holds ? "holds" : "does NOT hold",
                deltas[worse].get<double>(), deltas[better].get<double>());
  }

  std::vector<ChartSeries> series;
  const char* colors[] = {"#000000", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                          "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22", "#393b79",
                          "#ad494a", "#637939", "#7b4173", "#e7ba52"};
  for (size_t i = 0; i < arms->size(); ++i) {
    ChartSeries s{(*arms)[i]->name, colors[i % 16], {}, false};
    for (auto [step, loss] : curve[(*arms)[i]->name]) s.points.push_back({double(step), loss});
    series.push_back(std::move(s));
  }
  const std::string svg = a.svg.empty() ? work + "/convergence.svg" : a.svg;
  const std::string chart = SvgLineChart("train loss, mean of " + std::to_string(a.seeds) +
                                                    " seeds", "step", "loss", series, 800, 400);
  if (Status s = WriteFileAtomic(svg, chart); !s.ok()) return fail(s);
  std::printf("loss curves: %s\n", svg.c_str());
  if (!a.json.empty()) {
    if (Status s = WriteBenchJson(a.json, "convergence", config, summary, results); !s.ok()) {
      return fail(s);
    }
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace

void RegisterBenchConvergence(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand(
      "convergence", "final loss of compressed-communication arms vs fp32, paired by seed");
  auto a = std::make_shared<ConvergenceArgs>();
  cmd->add_option("--arms", a->arms,
                  "comma-separated arms or 'all' (fp32 is always included as the reference)");
  cmd->add_option("--seeds", a->seeds, "seeds per arm")->check(CLI::Range(1, 100));
  cmd->add_option("--steps", a->steps, "optimizer steps per run")->check(CLI::Range(1, 1000000));
  cmd->add_option("--nproc", a->nproc, "ranks per run")->check(CLI::Range(1, 64));
  cmd->add_option("--work-dir", a->work_dir, "where runs and logs go (default /tmp/...)");
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->add_option("--svg", a->svg, "loss-curve chart (default <work-dir>/convergence.svg)");
  cmd->add_option("overrides", a->overrides, "loom train key=value settings for every arm");
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a); });
}

}  // namespace loom::cli
