// `loom train [--nproc N] [--config FILE] [key=value ...]`: the main job.
//
// Without a launcher, the command validates the configuration, checks the data, and starts N
// local ranks of itself (N = 1 runs in this process). Under `loom launch`, mpirun or srun it is
// one rank: it connects to the others through Gloo and trains.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "loom/base/json_util.h"
#include "loom/cli/commands.h"
#include "loom/cli/rank_setup.h"
#include "loom/train/text_dataset.h"
#include "loom/train/train_checkpointer.h"
#include "loom/train/trainer.h"

namespace loom::cli {
namespace {

struct TrainArgs {
  int nproc = 2;
  std::string config_file;
  bool print_config = false;
  std::vector<std::string> overrides;
};

// The checkpoint named by resume= (in the overrides or the config file), or "".
std::string ResumePath(const TrainArgs& a, const nlohmann::json& file) {
  std::string path;
  if (file.is_object() && file.contains("resume") && file["resume"].is_string()) {
    path = file["resume"].get<std::string>();
  }
  for (const std::string& o : a.overrides) {
    if (o.starts_with("resume=")) path = o.substr(7);
  }
  return path;
}

// Defaults <- the resumed checkpoint's config <- --config file <- key=value overrides.
Result<train::TrainConfig> LoadConfig(const TrainArgs& a, int world) {
  nlohmann::json file;
  if (!a.config_file.empty()) {
    LOOM_ASSIGN_OR_RETURN(file, ReadJsonFile(a.config_file));
  }
  std::string resume = ResumePath(a, file);
  if (resume == "auto") {  // the newest checkpoint in ckpt.dir / ckpt.persist_dir, if any
    LOOM_ASSIGN_OR_RETURN(train::TrainConfig plain,
                          train::ResolveTrainConfig(a.config_file.empty() ? nullptr : &file,
                                                    a.overrides, world));
    LOOM_ASSIGN_OR_RETURN(resume, train::FindResumeCheckpoint(plain, plain.run_dir));
    if (resume.empty()) return plain;
  }
  if (!resume.empty()) {
    LOOM_ASSIGN_OR_RETURN(nlohmann::json saved, train::SavedTrainConfig(resume));
    nlohmann::json base = train::TrainConfigDefaults();
    LOOM_RETURN_IF_ERROR(MergeStrict(&base, saved, "checkpoint config"));
    if (!a.config_file.empty()) LOOM_RETURN_IF_ERROR(MergeStrict(&base, file, "config file"));
    file = std::move(base);
    return train::ResolveTrainConfig(&file, a.overrides, world);
  }
  return train::ResolveTrainConfig(a.config_file.empty() ? nullptr : &file, a.overrides, world);
}

int RunRank(const TrainArgs& a) {
  auto ctx = ConnectRank("train");
  std::string who = "loom train";
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), ctx.status().ToString().c_str());
    return kExitFailure;
  }
  who += ": rank " + std::to_string(ctx->comm->rank());
  auto cfg = LoadConfig(a, ctx->comm->size());
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), cfg.status().ToString().c_str());
    return kExitUsage;
  }
  if (ctx->comm->rank() == 0) {
    std::cout << "loom train: " << ctx->comm->size() << " rank(s), launcher "
              << comm::LauncherName(ctx->world.launcher) << "\nresolved config: "
              << train::TrainConfigToJson(*cfg).dump() << "\n"
              << std::flush;
  }
  auto summary = train::RunTraining(*cfg, *ctx->comm, ctx->world, nullptr, std::cout);
  if (!summary.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), summary.status().ToString().c_str());
    return summary.status().code() == StatusCode::kInvalidArgument ||
                   summary.status().code() == StatusCode::kNotFound
               ? kExitUsage
               : kExitFailure;
  }
  return 0;
}

}  // namespace

void RegisterTrain(CLI::App& app, CliContext* ctx) {
  auto* cmd = app.add_subcommand("train", "train the reference GPT data-parallel (the main job)");
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--nproc", args->nproc, "local ranks to start when not under a launcher")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--config", args->config_file, "JSON config file (keys as in --print-config)");
  cmd->add_flag("--print-config", args->print_config, "print the resolved config and exit");
  cmd->add_option("overrides", args->overrides, "dotted key=value settings, e.g. steps=50");
  cmd->callback([args, ctx] {
    if (UnderLauncher()) {
      ctx->exit_code = RunRank(*args);
      return;
    }
    auto cfg = LoadConfig(*args, args->nproc);
    if (!cfg.ok()) {
      std::fprintf(stderr, "loom train: %s\n", cfg.status().ToString().c_str());
      ctx->exit_code = kExitUsage;
      return;
    }
    if (args->print_config) {
      std::cout << train::TrainConfigToJson(*cfg).dump(2) << "\n";
      ctx->exit_code = 0;
      return;
    }
    // Fail here, once, rather than in every rank.
    auto data = train::TextDataset::Load(cfg->data_source, cfg->data_path, cfg->val_fraction);
    if (!data.ok()) {
      std::fprintf(stderr, "loom train: %s\n", data.status().ToString().c_str());
      ctx->exit_code = kExitUsage;
      return;
    }
    if (args->nproc == 1) {
      ctx->exit_code = RunRank(*args);
      return;
    }
    std::vector<std::string> argv = ctx->argv;
    ctx->exit_code = RelaunchAsRanks(argv, args->nproc, "loom train");
  });
}

}  // namespace loom::cli
