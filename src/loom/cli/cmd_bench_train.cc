// `loom bench train`: loom's trainer against PyTorch DDP (bench/ddp_peer.py) on the same model,
// data, batches, initial weights, seed and ranks, in fp32 and bf16, arms interleaved.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "loom/base/file_util.h"
#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/cli/run_metrics.h"
#include "loom/comm/launcher.h"
#include "loom/train/gemm_peak_torch.h"
#include "loom/train/mfu.h"
#include "loom/train/train_config.h"

namespace loom::cli {
namespace {

struct BenchTrainArgs {
  int64_t steps = 40;
  int reps = 2;
  std::string precisions = "fp32,bf16";
  int nproc = 2;
  int threads = 1;
  std::string python = "/usr/bin/python3";
  std::string peer = std::string(LOOM_SOURCE_DIR) + "/bench/ddp_peer.py";
  std::string work_dir;
  std::string json;
  bool sched_ablation = false;  // + loom with sched=normal, + the DDP peer under SCHED_BATCH
  std::vector<std::string> overrides;
};

int Run(const BenchTrainArgs& a, const CliContext& ctx) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench train: %s\n", s.ToString().c_str());
    return kExitFailure;
  };
  // Validate the loom side once with the overrides the arms will use.
  auto cfg = train::ResolveTrainConfig(nullptr, a.overrides, a.nproc);
  if (!cfg.ok()) return fail(cfg.status());
  if (!PathExists(a.peer)) return fail(NotFoundError("peer script " + a.peer + " (use --peer)"));
  auto bench_dir = MakeTrainBenchDir("train", a.work_dir);
  if (!bench_dir.ok()) return fail(bench_dir.status());
  const std::string& work = bench_dir->dir;
  const std::string& corpus_path = bench_dir->corpus_path;

  nlohmann::json config = {{"steps", a.steps},     {"reps", a.reps},
                           {"precisions", a.precisions}, {"nproc", a.nproc},
                           {"threads_per_rank", a.threads}, {"overrides", a.overrides},
                           {"loom_sched", cfg->sched}, {"sched_ablation", a.sched_ablation},
                           {"model", nn::GptConfigToJson(cfg->model)},
                           {"global_batch", cfg->global_batch}, {"micro_batch", cfg->micro_batch},
                           {"peer", "PyTorch DDP (gloo), " + a.peer}, {"work_dir", work}};
  PrintBenchHeader("train", config);
  const double flops_per_token = train::FlopsPerToken(cfg->model, cfg->model.context_length);
  std::map<std::string, std::string> env = {{"OMP_NUM_THREADS", std::to_string(a.threads)},
                                            {"OPENBLAS_NUM_THREADS", std::to_string(a.threads)}};

  nlohmann::json results = nlohmann::json::array();
  nlohmann::json by_precision = nlohmann::json::object();
  std::printf("\n%-9s %-11s %12s %10s %10s %7s %10s\n", "precision", "impl", "tokens/s", "p10",
              "p90", "MFU", "loss@K");
  for (const std::string& prec : Split(a.precisions)) {
    auto peak = train::MeasureGemmPeak(prec == "bf16" ? at::kBFloat16 : at::kFloat, a.threads);
    if (!peak.ok()) return fail(peak.status());
    std::map<std::string, std::vector<double>> tps;
    std::map<std::string, std::map<int64_t, double>> loss;
    for (int rep = 0; rep < a.reps; ++rep) {
      const std::string tag = prec + "-" + std::to_string(rep);
      const std::string loom_dir = work + "/loom-" + tag;
      const std::string init = work + "/init.safetensors";
      // One arm's launch: loom writing its run to `run_dir` (and its initial weights to
      // `init_export`, + `extra` keys after the user's), or the DDP peer (started from loom's
      // config and weights, writing to `out`; `prefix` runs before python, e.g. chrt).
      auto loom_arm = [&](const std::string& run_dir, const std::string& init_export,
                          const std::vector<std::string>& extra) {
        comm::LaunchOptions lo;
        lo.nproc = a.nproc;
        lo.env = env;
        lo.argv = {SelfExe(), "train", "steps=" + std::to_string(a.steps), "precision=" + prec,
                   "threads=" + std::to_string(a.threads), "data.source=file",
                   "data.path=" + corpus_path, "run_dir=" + run_dir, "log.every=1",
                   "eval.every=0", "sample.tokens=0", "init.export=" + init_export};
        lo.argv.insert(lo.argv.end(), a.overrides.begin(), a.overrides.end());
        lo.argv.insert(lo.argv.end(), extra.begin(), extra.end());
        return lo;
      };
      auto peer_arm = [&](const std::string& out, const std::vector<std::string>& prefix) {
        comm::LaunchOptions po;
        po.nproc = a.nproc;
        po.env = env;
        po.torch_env = true;
        po.argv = prefix;
        po.argv.insert(po.argv.end(),
                       {a.python, a.peer, "--config", loom_dir + "/config.json", "--init", init,
                        "--data", corpus_path, "--out", out, "--precision", prec});
        return po;
      };
      if (Status s = RunArm("loom", loom_arm(loom_dir, init, {}), loom_dir + ".log"); !s.ok()) {
        return fail(s);
      }
      const std::string ddp_dir = work + "/ddp-" + tag;
      if (Status s = RunArm("ddp peer", peer_arm(ddp_dir, {}), ddp_dir + ".log"); !s.ok()) {
        return fail(s);
      }
      std::vector<std::pair<std::string, std::string>> runs = {{"loom", loom_dir},
                                                               {"ddp", ddp_dir}};
      if (a.sched_ablation) {
        // The scheduling policy apart from the implementation: loom under the default policy,
        // and the peer with every thread under SCHED_BATCH as `loom train sched=batch` runs.
        const std::string normal_dir = work + "/loom_normal-" + tag;
        Status s = RunArm("loom sched=normal",
                          loom_arm(normal_dir, work + "/init2.safetensors", {"sched=normal"}),
                          normal_dir + ".log");
        if (!s.ok()) return fail(s);
        const std::string batch_dir = work + "/ddp_batch-" + tag;
        s = RunArm("ddp peer (batch)", peer_arm(batch_dir, {"chrt", "--batch", "0"}),
                   batch_dir + ".log");
        if (!s.ok()) return fail(s);
        runs.push_back({"loom_normal", normal_dir});
        runs.push_back({"ddp_batch", batch_dir});
      }
      for (const auto& [impl, dir] : runs) {
        auto m = ReadRunMetrics(dir + "/metrics.jsonl");
        if (!m.ok()) return fail(m.status());
        tps[impl].insert(tps[impl].end(), m->step_tps.begin(), m->step_tps.end());
        for (auto [s, l] : m->loss) loss[impl][s] += l / a.reps;
      }
    }
    nlohmann::json entry;
    for (const auto& [impl, unused] : tps) {
      Stats st = Summarize(tps[impl]);
      double mfu = train::Mfu(st.median, flops_per_token, a.nproc, peak->flops);
      double lk = loss[impl].rbegin()->second;
      std::printf("%-9s %-11s %12.0f %10.0f %10.0f %6.1f%% %10.4f\n", prec.c_str(), impl.c_str(),
                  st.median,
                  st.p10, st.p90, 100 * mfu, lk);
      entry[impl] = {{"tokens_per_s_median", st.median}, {"tokens_per_s_p10", st.p10},
                     {"tokens_per_s_p90", st.p90},       {"steps_measured", st.n},
                     {"mfu", mfu},                       {"loss_at_k", lk},
                     {"loss_curve", loss[impl]}};
    }
    double ratio = entry["loom"]["tokens_per_s_median"].get<double>() /
                   entry["ddp"]["tokens_per_s_median"].get<double>();
    double max_delta = 0;
    for (auto [s, l] : loss["loom"]) {
      if (loss["ddp"].count(s)) max_delta = std::max(max_delta, std::fabs(l - loss["ddp"][s]));
    }
    double delta_k = std::fabs(entry["loom"]["loss_at_k"].get<double>() -
                               entry["ddp"]["loss_at_k"].get<double>());
    std::printf("%-9s %-11s %11.2fx %32s %10.4f  (max |loss delta| over steps %.4f)\n",
                prec.c_str(),
                "ratio", ratio, "loss delta at K:", delta_k, max_delta);
    std::fflush(stdout);
    entry["tokens_per_s_ratio"] = ratio;
    entry["loss_delta_at_k"] = delta_k;
    entry["max_loss_delta"] = max_delta;
    entry["gemm_peak_flops_per_rank"] = peak->flops;
    by_precision[prec] = entry;
    results.push_back({{"precision", prec}, {"result", entry}});
  }
  // Headline: the precision `loom train` uses by default on this machine, if it was measured.
  std::string headline = train::CpuHasFastBf16() ? "bf16" : "fp32";
  if (!by_precision.contains(headline)) headline = by_precision.begin().key();
  const auto& h = by_precision[headline];
  nlohmann::json summary = {{"precision", headline},
                            {"tokens_per_s_ratio", h["tokens_per_s_ratio"]},
                            {"mfu_loom", h["loom"]["mfu"]},
                            {"mfu_ddp", h["ddp"]["mfu"]},
                            {"loss_delta_at_k", h["loss_delta_at_k"]},
                            {"k", a.steps}};
  summary["by_precision"] = nlohmann::json::object();
  for (auto it = by_precision.begin(); it != by_precision.end(); ++it) {
    summary["by_precision"][it.key()] = {{"tokens_per_s_ratio", it.value()["tokens_per_s_ratio"]},
                                         {"mfu_loom", it.value()["loom"]["mfu"]},
                                         {"mfu_ddp", it.value()["ddp"]["mfu"]},
                                         {"loss_delta_at_k", it.value()["loss_delta_at_k"]}};
  }
  std::printf("\nMFU convention: %s\n", train::MfuConvention().c_str());
  if (!a.json.empty()) {
    if (Status s = WriteBenchJson(a.json, "train", config, summary, results); !s.ok()) return fail(s);
    std::printf("wrote %s\n", a.json.c_str());
  }
  (void)ctx;
  return 0;
}

}  // namespace

void RegisterBenchTrain(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand("train", "loom train vs PyTorch DDP: tokens/s, MFU, loss");
  auto a = std::make_shared<BenchTrainArgs>();
  cmd->add_option("--steps", a->steps, "optimizer steps per run (K)");
  cmd->add_option("--reps", a->reps, "runs per arm and precision (arms interleaved)");
  cmd->add_option("--precisions", a->precisions, "comma-separated: fp32,bf16");
  cmd->add_option("--nproc", a->nproc, "ranks per run");
  cmd->add_option("--threads", a->threads, "compute threads per rank (both arms)");
  cmd->add_option("--python", a->python, "Python with torch (Debian's /usr/bin/python3)");
  cmd->add_option("--peer", a->peer, "the DDP peer script");
  cmd->add_option("--work-dir", a->work_dir, "where runs and logs go (default /tmp/...)");
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->add_flag("--sched-ablation", a->sched_ablation,
                "also run loom with sched=normal and the DDP peer under SCHED_BATCH (chrt)");
  cmd->add_option("overrides", a->overrides, "loom train key=value settings for both arms");
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a, *ctx); });
}

}  // namespace loom::cli
